//! What the backward pass finds of a state ([`StateRec`]), and the figures of one age's states
//! (its terminal states, mean value, mean action gap and the share of gaps below 1: part of its
//! row of the `ages` table), summed record by record in row order, so that they are the same
//! bits whether the records are summed at once or streamed through in pieces (as the backward
//! pass does at ages no variant keeps in Parquet).

use crate::rules::Variant;

/// `best` when a state has no move to make.
pub const NO_MOVE: u8 = 4;

/// The solved record of one state for one variant.
///
/// Packed (20 bytes, not 24): an age's records are the largest thing the pass holds in the
/// full layout. Fields are read and written by value only (a reference to a field of a packed
/// struct may be unaligned, so the compiler refuses one).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, packed)]
pub struct StateRec {
    pub value: f64,
    /// Best q minus second-best q; NaN with fewer than two valid moves.
    pub gap: f64,
    /// Index into [`crate::rules::Dir::ALL`] of the best move (the first of equal ones), or [`NO_MOVE`].
    pub best: u8,
    /// Number of valid moves (0 for a terminal or absorbed state).
    pub moves: u8,
    /// The optimal moves: bit `d` for [`crate::rules::Dir::ALL`]`[d]` when its q equals the
    /// best q exactly (ties the policy layout may choose among); 0 without a move.
    pub optimal: u8,
    /// No decision left: no valid move, or (goal variants) the goal tile is on the board.
    pub terminal: bool,
}

impl Default for StateRec {
    fn default() -> Self {
        StateRec {
            value: 0.0,
            gap: f64::NAN,
            best: NO_MOVE,
            moves: 0,
            optimal: 0,
            terminal: true,
        }
    }
}

/// The figures of one age's states for one variant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StateFigures {
    pub n_terminal_states: u64,
    pub mean_state_value: Option<f64>,
    pub mean_action_gap: Option<f64>,
    pub frac_gap_lt_1: Option<f64>,
}

/// An age's states without their records: the figures per variant and the values, which is
/// all the writer needs of an age it writes no `states` Parquet for (8 bytes a state and
/// variant instead of a 20-byte record).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Per variant, in the order of the pass.
    pub figures: Vec<StateFigures>,
    /// `values[i * k + v]`, as the pass found them (unclamped).
    pub values: Vec<f64>,
}

/// Probabilities are stored in [0, 1], whatever the rounding of the sums behind them (the pass
/// itself keeps the unrounded sums).
pub fn clamp_for(v: &Variant) -> impl Fn(f64) -> f64 {
    let scored = v.scored();
    move |x: f64| clamp(scored, x)
}

/// A stored value: points as they are, probabilities clamped to [0, 1].
#[inline]
fn clamp(scored: bool, x: f64) -> f64 {
    if scored {
        x
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// Running sums of [`StateFigures`] for one variant, fed records in row order.
///
/// Each sum is a left fold from the neutral element of `f64`'s `Sum`, as
/// `iter.sum::<f64>()` over the same records would be: streaming in pieces gives the bits of
/// one pass over all records.
#[derive(Clone, Copy, Debug)]
pub struct FigureSums {
    scored: bool,
    n: u64,
    terminal: u64,
    values: f64,
    gaps: u64,
    gap_sum: f64,
    gaps_lt_1: u64,
}

impl FigureSums {
    pub fn new(v: &Variant) -> FigureSums {
        let zero = std::iter::empty::<f64>().sum::<f64>();
        FigureSums {
            scored: v.scored(),
            n: 0,
            terminal: 0,
            values: zero,
            gaps: 0,
            gap_sum: zero,
            gaps_lt_1: 0,
        }
    }

    /// Adds the next record (in row order).
    #[inline]
    pub fn add(&mut self, r: &StateRec) {
        self.n += 1;
        self.terminal += u64::from(r.terminal);
        self.values += clamp(self.scored, r.value);
        if r.moves >= 2 {
            self.gaps += 1;
            self.gap_sum += r.gap;
            self.gaps_lt_1 += u64::from(r.gap < 1.0);
        }
    }

    pub fn figures(&self) -> StateFigures {
        let mut f = StateFigures {
            n_terminal_states: self.terminal,
            ..Default::default()
        };
        if self.n > 0 {
            f.mean_state_value = Some(self.values / self.n as f64);
        }
        if self.gaps > 0 {
            f.mean_action_gap = Some(self.gap_sum / self.gaps as f64);
            f.frac_gap_lt_1 = Some(self.gaps_lt_1 as f64 / self.gaps as f64);
        }
        f
    }
}

/// The state figures of variant `vi` of `k`, from `recs[i * k + vi]` (`n` states) at once.
pub fn state_figures(
    recs: &[StateRec],
    n: usize,
    k: usize,
    vi: usize,
    v: &Variant,
) -> StateFigures {
    let mut sums = FigureSums::new(v);
    for i in 0..n {
        sums.add(&recs[i * k + vi]);
    }
    sums.figures()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Kind;

    /// The figures as the writer summed them before streaming: one `sum` per figure.
    fn naive(recs: &[StateRec], v: &Variant) -> StateFigures {
        let clamp = clamp_for(v);
        let mut f = StateFigures {
            n_terminal_states: recs.iter().filter(|r| r.terminal).count() as u64,
            ..Default::default()
        };
        if !recs.is_empty() {
            f.mean_state_value =
                Some(recs.iter().map(|r| clamp(r.value)).sum::<f64>() / recs.len() as f64);
        }
        let gaps = || recs.iter().filter(|r| r.moves >= 2).map(|r| r.gap);
        let n = gaps().count();
        if n > 0 {
            f.mean_action_gap = Some(gaps().sum::<f64>() / n as f64);
            f.frac_gap_lt_1 = Some(gaps().filter(|&g| g < 1.0).count() as f64 / n as f64);
        }
        f
    }

    fn records(seed: u64, n: usize) -> Vec<StateRec> {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..n)
            .map(|_| {
                let moves = (next() % 5) as u8;
                let value = (next() % 1_000_000) as f64 / 997.0 - 3.0;
                StateRec {
                    value,
                    gap: if moves >= 2 {
                        (next() % 4000) as f64 / 1000.0
                    } else {
                        f64::NAN
                    },
                    best: if moves == 0 { 4 } else { (next() % 4) as u8 },
                    moves,
                    terminal: moves == 0,
                    optimal: if moves == 0 {
                        0
                    } else {
                        (next() % 15 + 1) as u8
                    },
                }
            })
            .collect()
    }

    #[test]
    fn streamed_figures_are_the_bits_of_one_sum() {
        let points = Variant::new(Kind::Expectation, 0.1);
        let goal = Variant::new(Kind::Goal(6), 0.1);
        for seed in 1..20u64 {
            let recs = records(seed, (seed as usize * 37) % 500);
            for v in [&points, &goal] {
                let want = naive(&recs, v);
                assert_eq!(state_figures(&recs, recs.len(), 1, 0, v), want);
                // In pieces of any length, and interleaved with another variant.
                let mut sums = FigureSums::new(v);
                for piece in recs.chunks(seed as usize) {
                    piece.iter().for_each(|r| sums.add(r));
                }
                let got = sums.figures();
                let bits = |f: Option<f64>| f.map(f64::to_bits);
                assert_eq!(got.n_terminal_states, want.n_terminal_states);
                assert_eq!(bits(got.mean_state_value), bits(want.mean_state_value));
                assert_eq!(bits(got.mean_action_gap), bits(want.mean_action_gap));
                assert_eq!(bits(got.frac_gap_lt_1), bits(want.frac_gap_lt_1));
                let two: Vec<StateRec> = recs
                    .iter()
                    .flat_map(|&r| [StateRec::default(), r])
                    .collect();
                assert_eq!(state_figures(&two, recs.len(), 2, 1, v), want);
            }
        }
    }
}
