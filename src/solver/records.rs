//! What the backward pass finds of a state ([`StateRec`]), and the figures of one age's states
//! (its terminal states, mean value, mean action gap and the share of gaps below 1: part of its
//! row of the `ages` table), summed exactly ([`ExactSum`]), so that they are the same bits
//! whether the records are summed at once, streamed through in pieces (as the backward pass
//! does at ages no variant keeps in Parquet), or summed by several processes, each over its
//! own states, and merged ([`FigureSums::merge`]).

use super::exact::ExactSum;
use crate::rules::Variant;

/// `best` when a state has no move to make.
pub const NO_MOVE: u8 = 4;

/// The solved record of one state for one variant.
///
/// Packed (21 bytes, not 24): an age's records are the largest thing the pass holds in the
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
    /// The smallest rank of an optimal move among the valid moves in the order the age's
    /// writer asked for ([`crate::solver::backward::AgeWriter::order`]): what a policy file
    /// stores, ranked from the moves the pass made anyway. 0 when no order was asked, or
    /// with fewer than two valid moves.
    pub rank: u8,
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
            rank: 0,
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
    /// Per variant, in the order of the pass: the sums behind its figures.
    pub figures: Vec<FigureSums>,
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

/// Running sums of [`StateFigures`] for one variant, fed records in any order.
///
/// The sums of values and gaps are exact ([`ExactSum`]) and rounded once, in
/// [`FigureSums::figures`]: any order of the records, any split into pieces summed apart and
/// merged, gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FigureSums {
    scored: bool,
    n: u64,
    terminal: u64,
    values: ExactSum,
    gaps: u64,
    gap_sum: ExactSum,
    gaps_lt_1: u64,
}

impl FigureSums {
    pub fn new(v: &Variant) -> FigureSums {
        FigureSums {
            scored: v.scored(),
            n: 0,
            terminal: 0,
            values: ExactSum::new(),
            gaps: 0,
            gap_sum: ExactSum::new(),
            gaps_lt_1: 0,
        }
    }

    /// Adds the sums of another share of the age's records (of the same variant).
    pub fn merge(&mut self, o: &FigureSums) {
        self.n += o.n;
        self.terminal += o.terminal;
        self.values.merge(&o.values);
        self.gaps += o.gaps;
        self.gap_sum.merge(&o.gap_sum);
        self.gaps_lt_1 += o.gaps_lt_1;
    }

    /// The sums as integers, to be sent to another process or saved
    /// ([`FigureSums::from_words`] reads them back).
    pub fn to_words(&self) -> Vec<i64> {
        let mut out = vec![
            i64::from(self.scored),
            self.n as i64,
            self.terminal as i64,
            self.gaps as i64,
            self.gaps_lt_1 as i64,
        ];
        out.extend(self.values.limbs());
        out.extend(self.gap_sum.limbs());
        out
    }

    /// The sums [`FigureSums::to_words`] gave `words`; `None` if they are not such words.
    pub fn from_words(words: &[i64]) -> Option<FigureSums> {
        let n = super::exact::LIMBS + 1;
        if words.len() != 5 + 2 * n || words[..5].iter().any(|&w| w < 0) {
            return None;
        }
        Some(FigureSums {
            scored: words[0] != 0,
            n: words[1] as u64,
            terminal: words[2] as u64,
            gaps: words[3] as u64,
            gaps_lt_1: words[4] as u64,
            values: ExactSum::from_limbs(&words[5..5 + n])?,
            gap_sum: ExactSum::from_limbs(&words[5 + n..])?,
        })
    }

    /// Adds the next record (in row order).
    #[inline]
    pub fn add(&mut self, r: &StateRec) {
        self.n += 1;
        self.terminal += u64::from(r.terminal);
        self.values.add(clamp(self.scored, r.value));
        if r.moves >= 2 {
            self.gaps += 1;
            self.gap_sum.add(r.gap);
            self.gaps_lt_1 += u64::from(r.gap < 1.0);
        }
    }

    pub fn figures(&self) -> StateFigures {
        let mut f = StateFigures {
            n_terminal_states: self.terminal,
            ..Default::default()
        };
        if self.n > 0 {
            f.mean_state_value = Some(self.values.value() / self.n as f64);
        }
        if self.gaps > 0 {
            f.mean_action_gap = Some(self.gap_sum.value() / self.gaps as f64);
            f.frac_gap_lt_1 = Some(self.gaps_lt_1 as f64 / self.gaps as f64);
        }
        f
    }
}

/// The sums of the state figures of variant `vi` of `k`, from `recs[i * k + vi]` (`n`
/// states) at once.
pub fn state_figures(recs: &[StateRec], n: usize, k: usize, vi: usize, v: &Variant) -> FigureSums {
    let mut sums = FigureSums::new(v);
    for i in 0..n {
        sums.add(&recs[i * k + vi]);
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Kind;

    /// One exact sum over all the terms at once.
    fn exact(xs: impl Iterator<Item = f64>) -> f64 {
        let mut s = ExactSum::new();
        xs.for_each(|x| s.add(x));
        s.value()
    }

    /// The figures summed apart: one exact sum per figure.
    fn naive(recs: &[StateRec], v: &Variant) -> StateFigures {
        let clamp = clamp_for(v);
        let mut f = StateFigures {
            n_terminal_states: recs.iter().filter(|r| r.terminal).count() as u64,
            ..Default::default()
        };
        if !recs.is_empty() {
            f.mean_state_value =
                Some(exact(recs.iter().map(|r| clamp(r.value))) / recs.len() as f64);
        }
        let gaps = || recs.iter().filter(|r| r.moves >= 2).map(|r| r.gap);
        let n = gaps().count();
        if n > 0 {
            f.mean_action_gap = Some(exact(gaps()) / n as f64);
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
                    rank: 0,
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
                assert_eq!(state_figures(&recs, recs.len(), 1, 0, v).figures(), want);
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
                assert_eq!(state_figures(&two, recs.len(), 2, 1, v).figures(), want);
                // Shares summed apart (as ranks do), sent as words and merged.
                let mut merged = FigureSums::new(v);
                for r in 0..3 {
                    let mut share = FigureSums::new(v);
                    recs.iter().skip(r).step_by(3).for_each(|x| share.add(x));
                    merged.merge(&FigureSums::from_words(&share.to_words()).unwrap());
                }
                let merged = merged.figures();
                assert_eq!(bits(merged.mean_state_value), bits(want.mean_state_value));
                assert_eq!(bits(merged.mean_action_gap), bits(want.mean_action_gap));
                assert_eq!(merged, want);
            }
        }
    }
}
