//! Backward pass: exact values, age by decreasing age.
//!
//! An afterstate of age `n` spawns into states of ages `n+2` and `n+4`; a state of age `n`
//! moves into afterstates of age `n`. Going down from the largest age, the pass therefore needs
//! only the state values of ages `n+2` and `n+4` and the afterstates of age `n` (Kaneko &
//! Yamashita 2025, §3.1): first the afterstate values of age `n` from the spawns (the variant's
//! rule), then the state values of age `n` as the best q-value of a move: reward plus
//! afterstate value, or for a discounted goal γ times the afterstate value
//! ([`Variant::q`]). Afterstate values are never discounted: an afterstate holding the goal
//! is worth 1, so the move that makes the goal is worth γ.
//!
//! Several variants of one [`ForwardClass`] are valued in the same pass: the spawn look-ups are
//! shared and each variant folds them with its own rule. Values of one board do not depend on
//! the thread that computed them (each sum runs over cells in a fixed order), so a run is
//! reproducible bit for bit.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::forward::absorbed;
use super::layer::{ValueTable, Values};
use super::records::{state_figures, FigureSums, StateFigures, StateRec, Summary, NO_MOVE};
use super::{Result, SolveError};
use crate::rules::board;
use crate::rules::{ForwardClass, Game, Kind, Variant};

/// Boards per rayon task: enough work to amortise scheduling, small enough to balance.
const CHUNK: usize = 1024;

/// States whose records exist at once when the pass folds an age into a [`Summary`]: many
/// chunks for the threads, a few megabytes of records.
const SEGMENT: usize = 1 << 18;

/// Boards whose look-ups are issued together (prefetched) within a chunk: enough to overlap
/// many cache misses, few enough that the block's ids stay in L1.
const BLOCK: usize = 16;

/// Cells of the largest board (4x4).
const MAX_CELLS: usize = 16;

/// No board: never an id (it would be a board of sixteen 32768 tiles).
const NONE: u64 = u64::MAX;

/// A layer of states with its values, kept while younger ages need it: only its
/// [`ValueTable`] (ids and values in one slot each), the ids and values as vectors go to the
/// writer or are dropped.
pub struct Level {
    pub age: u32,
    /// The values by id, for the look-ups of younger ages.
    table: ValueTable,
}

impl Level {
    /// The level of `ids` with `values[i * k + v]` (`k` variants).
    pub fn new(age: u32, ids: &[u64], values: &[f64]) -> Level {
        let k = values.len().checked_div(ids.len()).unwrap_or(0);
        debug_assert_eq!(values.len(), ids.len() * k);
        Level {
            age,
            table: ValueTable::new(ids, values, k),
        }
    }
    fn empty(age: u32) -> Level {
        Level::new(age, &[], &[])
    }
}

/// Everything the pass found at one age, for all variants (`k` of them, interleaved), handed
/// over (not copied) to whoever stores it.
pub struct AgeOutput {
    pub age: u32,
    pub states: Vec<u64>,
    pub afterstates: Vec<u64>,
    /// What the pass found of the states, `[i * k + v]`.
    pub state_results: StateResults,
    /// `after_values[i * k + v]`.
    pub after_values: Vec<f64>,
}

/// The states' side of an [`AgeOutput`]: their records where the sink asked for them (the
/// `states` Parquet stores them), else only their figures and values, which the pass folds as
/// it goes so that an age's records never exist at once.
#[derive(Clone, Debug, PartialEq)]
pub enum StateResults {
    /// `recs[i * k + v]`.
    Records(Vec<StateRec>),
    Summary(Summary),
}

impl AgeOutput {
    /// The bytes the age holds (its vectors' lengths; what it hands the writer).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        let states = match &self.state_results {
            StateResults::Records(r) => r.len() * size_of::<StateRec>(),
            StateResults::Summary(s) => s.values.len() * size_of::<f64>(),
        };
        self.states.len() * size_of::<u64>()
            + self.afterstates.len() * size_of::<u64>()
            + states
            + self.after_values.len() * size_of::<f64>()
    }

    /// The value of state `i` for variant `v` as `[i * k + v]` (unclamped).
    pub fn state_value(&self, j: usize) -> f64 {
        match &self.state_results {
            StateResults::Records(r) => r[j].value,
            StateResults::Summary(s) => s.values[j],
        }
    }

    /// The records, if the pass kept them.
    pub fn records(&self) -> Option<&[StateRec]> {
        match &self.state_results {
            StateResults::Records(r) => Some(r),
            StateResults::Summary(_) => None,
        }
    }

    /// The state figures of variant `vi` of `k`.
    pub fn figures(&self, k: usize, vi: usize, v: &Variant) -> StateFigures {
        match &self.state_results {
            StateResults::Records(r) => state_figures(r, self.states.len(), k, vi, v),
            StateResults::Summary(s) => s.figures[vi],
        }
    }

    /// The state values, `[i * k + v]` (taken out of a summary, copied out of records).
    pub fn take_state_values(&mut self) -> Vec<f64> {
        match &mut self.state_results {
            StateResults::Records(r) => r.iter().map(|r| r.value).collect(),
            StateResults::Summary(s) => std::mem::take(&mut s.values),
        }
    }
}

/// The backward pass over ages `max_age, max_age - 2, …, min_age`.
pub struct Backward<'g> {
    game: &'g Game,
    class: ForwardClass,
    variants: Vec<Variant>,
    /// [`SEGMENT`], smaller in tests.
    segment: usize,
}

impl<'g> Backward<'g> {
    pub fn new(game: &'g Game, variants: &[Variant]) -> Result<Backward<'g>> {
        let class = variants
            .first()
            .ok_or_else(|| SolveError::Internal("no variant to solve".into()))?
            .forward_class();
        if variants.iter().any(|v| v.forward_class() != class) {
            return Err(SolveError::Internal(
                "variants solved in one backward pass must share their forward class".into(),
            ));
        }
        Ok(Backward {
            game,
            class,
            variants: variants.to_vec(),
            segment: SEGMENT,
        })
    }

    pub fn k(&self) -> usize {
        self.variants.len()
    }

    /// Runs from `top` down to `min_age` (inclusive, step 2). `load(age)` gives the state and
    /// afterstate layers of an age (empty if the age has none). `next` holds the levels of ages
    /// `top + 2` and `top + 4` when resuming (empty levels otherwise). `sink` receives each age
    /// and returns after storing it; the level of that age is then kept for younger ages.
    /// `records(age)` says whether the sink needs the age's state records, or only their
    /// figures and values ([`StateResults`]).
    pub fn run(
        &self,
        top: u32,
        min_age: u32,
        next: Option<(Level, Level)>,
        records: impl Fn(u32) -> bool,
        mut load: impl FnMut(u32) -> Result<(Vec<u64>, Vec<u64>)>,
        mut sink: impl FnMut(AgeOutput) -> Result<()>,
    ) -> Result<()> {
        let (mut next2, mut next4) =
            next.unwrap_or_else(|| (Level::empty(top + 2), Level::empty(top + 4)));
        let mut age = top;
        while age >= min_age {
            debug_assert_eq!(next2.age, age + 2);
            debug_assert_eq!(next4.age, age + 4);
            let (states, afterstates) = load(age)?;
            let after_values = self.afterstate_values(age, &afterstates, &next2, &next4)?;
            // Each table goes as soon as nothing reads it, before the next is built, so that
            // at most two big tables exist at once: age n + 4's is read only by age n's
            // afterstates, the afterstates' only by age n's states.
            drop(std::mem::replace(&mut next4, Level::empty(age + 4)));
            let after_table = ValueTable::new(&afterstates, &after_values, self.k());
            let state_results = if records(age) {
                StateResults::Records(self.state_records(age, &states, &after_table)?)
            } else {
                StateResults::Summary(self.state_summary(age, &states, &after_table)?)
            };
            drop(after_table);
            let out = AgeOutput {
                age,
                states,
                afterstates,
                state_results,
                after_values,
            };
            let level = Level {
                age,
                table: ValueTable::from_fn(&out.states, |j| out.state_value(j), self.k()),
            };
            sink(out)?;
            next4 = std::mem::replace(&mut next2, level);
            if age < 2 {
                break;
            }
            age -= 2;
        }
        Ok(())
    }

    fn afterstate_values(
        &self,
        age: u32,
        afterstates: &[u64],
        next2: &Level,
        next4: &Level,
    ) -> Result<Vec<f64>> {
        let k = self.k();
        let mut out = vec![0.0f64; afterstates.len() * k];
        let missing = AtomicBool::new(false);
        let game = self.game;
        out.par_chunks_mut(k * CHUNK)
            .zip(afterstates.par_chunks(CHUNK))
            .for_each(|(vals, ids)| self.afterstate_chunk(ids, vals, next2, next4, &missing));
        if missing.load(Ordering::Relaxed) {
            return Err(SolveError::Inconsistent {
                board: game.shape().to_string(),
                age,
                step: "spawn",
            });
        }
        Ok(out)
    }

    /// The afterstate values of one chunk of afterstates (named, so profiles can tell it apart).
    ///
    /// Afterstates go in blocks of [`BLOCK`]: first every spawn child of the block is
    /// normalised and its slot in the next levels' tables prefetched, and only then are the
    /// children looked up and their values folded — so the cache misses of a block overlap
    /// instead of queueing. The fold runs over cells in increasing order, as the sums must
    /// (reproducible bits).
    #[inline(never)]
    fn afterstate_chunk(
        &self,
        ids: &[u64],
        vals: &mut [f64],
        next2: &Level,
        next4: &Level,
        missing: &AtomicBool,
    ) {
        let k = self.k();
        let game = self.game;
        let class = self.class;
        let cells = game.cells();
        debug_assert!(cells <= MAX_CELLS);
        // Per-variant accumulators: sum (expectation) or extremes per tile value.
        let mut acc = vec![[0.0f64; 2]; k];
        // Per afterstate of the block: the number of empty cells, and per empty cell (in
        // order) the ids of the children spawning a 2 and a 4.
        let mut empties = [0usize; BLOCK];
        let mut kid = [[[NONE; 2]; MAX_CELLS]; BLOCK];
        let tables = [&next2.table, &next4.table];
        let spawns = [class.spawn2, class.spawn4];
        for (block, vals) in ids.chunks(BLOCK).zip(vals.chunks_mut(BLOCK * k)) {
            for (j, &a) in block.iter().enumerate() {
                empties[j] = 0;
                if absorbed(&class, a) {
                    continue;
                }
                let images = game.sym.images_of(a);
                let canon_child = |i: usize, e: u8| match &images {
                    Some(img) => game.sym.spawn_canon(img, i, e),
                    None => game.canon(board::place(a, i, e)),
                };
                let mut n = 0;
                for i in 0..cells {
                    if board::cell(a, i) != 0 {
                        continue;
                    }
                    for t in 0..2 {
                        if spawns[t] {
                            let c = canon_child(i, t as u8 + 1);
                            tables[t].prefetch(c);
                            kid[j][n][t] = c;
                        }
                    }
                    n += 1;
                }
                empties[j] = n;
            }
            for (j, &a) in block.iter().enumerate() {
                let v = &mut vals[j * k..(j + 1) * k];
                if absorbed(&class, a) {
                    v.fill(1.0);
                    continue;
                }
                for (x, var) in acc.iter_mut().zip(&self.variants) {
                    *x = match var.kind {
                        Kind::Expectation | Kind::Goal(_) => [0.0, 0.0],
                        Kind::Optimistic => [f64::NEG_INFINITY; 2],
                        Kind::Pessimistic | Kind::Guaranteed(_) => [f64::INFINITY; 2],
                    };
                }
                let empty = empties[j];
                debug_assert!(empty > 0, "a valid afterstate has an empty cell");
                for kid in &kid[j][..empty] {
                    let mut child: [Option<Values>; 2] = [None, None];
                    for t in 0..2 {
                        if spawns[t] {
                            child[t] = tables[t].get(kid[t]);
                        }
                    }
                    if (0..2).any(|t| spawns[t] && child[t].is_none()) {
                        missing.store(true, Ordering::Relaxed);
                        continue;
                    }
                    for (vi, (x, var)) in acc.iter_mut().zip(&self.variants).enumerate() {
                        let v2 = child[0].map(|c| c.get(vi));
                        let v4 = child[1].map(|c| c.get(vi));
                        match var.kind {
                            Kind::Expectation | Kind::Goal(_) => {
                                // Terms of probability 0 are skipped, not multiplied by 0:
                                // their boards are not in the layer at all.
                                if let Some(v2) = v2 {
                                    x[0] += var.p2() * v2;
                                }
                                if let Some(v4) = v4 {
                                    x[0] += var.p4 * v4;
                                }
                            }
                            Kind::Optimistic => {
                                if let Some(v2) = v2 {
                                    x[0] = x[0].max(v2);
                                }
                                if let Some(v4) = v4 {
                                    x[1] = x[1].max(v4);
                                }
                            }
                            Kind::Pessimistic => {
                                if let Some(v2) = v2 {
                                    x[0] = x[0].min(v2);
                                }
                                if let Some(v4) = v4 {
                                    x[1] = x[1].min(v4);
                                }
                            }
                            Kind::Guaranteed(_) => {
                                for c in [v2, v4].into_iter().flatten() {
                                    x[0] = x[0].min(c);
                                }
                            }
                        }
                    }
                }
                for ((out, x), var) in v.iter_mut().zip(&acc).zip(&self.variants) {
                    *out = match var.kind {
                        Kind::Expectation | Kind::Goal(_) => x[0] / empty as f64,
                        Kind::Optimistic | Kind::Pessimistic => {
                            let mut s = 0.0;
                            if class.spawn2 {
                                s += var.p2() * x[0];
                            }
                            if class.spawn4 {
                                s += var.p4 * x[1];
                            }
                            s
                        }
                        Kind::Guaranteed(_) => x[0],
                    };
                }
            }
        }
    }

    fn state_records(
        &self,
        age: u32,
        states: &[u64],
        after_table: &ValueTable,
    ) -> Result<Vec<StateRec>> {
        let mut out = vec![StateRec::default(); states.len() * self.k()];
        self.records_into(age, states, after_table, &mut out)?;
        Ok(out)
    }

    /// The figures and values of an age's states, their records made `segment` states at a
    /// time ([`SEGMENT`]) and folded in row order (the bits of [`state_figures`] over all of
    /// them). A segment is folded while the next one's records are made, so that no core waits
    /// for the fold.
    fn state_summary(&self, age: u32, states: &[u64], after_table: &ValueTable) -> Result<Summary> {
        let k = self.k();
        let mut sums: Vec<FigureSums> = self.variants.iter().map(FigureSums::new).collect();
        let mut values = Vec::with_capacity(states.len() * k);
        let fold = |sums: &mut [FigureSums], values: &mut Vec<f64>, recs: &[StateRec]| {
            for rec in recs.chunks_exact(k) {
                for (sum, r) in sums.iter_mut().zip(rec) {
                    sum.add(r);
                    values.push(r.value);
                }
            }
        };
        let len = states.len().min(self.segment) * k;
        // The segment being made, and the one before it, waiting to be folded.
        let (mut making, mut made) = (
            vec![StateRec::default(); len],
            vec![StateRec::default(); len],
        );
        let mut waiting = 0; // records in `made` not yet folded
        for segment in states.chunks(self.segment) {
            let recs = &mut making[..segment.len() * k];
            let (done, ()) = rayon::join(
                || self.records_into(age, segment, after_table, recs),
                || fold(&mut sums, &mut values, &made[..waiting]),
            );
            done?;
            waiting = segment.len() * k;
            std::mem::swap(&mut making, &mut made);
        }
        fold(&mut sums, &mut values, &made[..waiting]);
        debug_assert_eq!(values.len(), states.len() * k);
        Ok(Summary {
            figures: sums.iter().map(FigureSums::figures).collect(),
            values,
        })
    }

    /// The records of `states` into `out` (`[i * k + v]`), in parallel.
    fn records_into(
        &self,
        age: u32,
        states: &[u64],
        after_table: &ValueTable,
        out: &mut [StateRec],
    ) -> Result<()> {
        let k = self.k();
        debug_assert_eq!(out.len(), states.len() * k);
        let missing = AtomicBool::new(false);
        out.par_chunks_mut(k * CHUNK)
            .zip(states.par_chunks(CHUNK))
            .for_each(|(recs, ids)| self.state_chunk(ids, recs, after_table, &missing));
        if missing.load(Ordering::Relaxed) {
            return Err(SolveError::Inconsistent {
                board: self.game.shape().to_string(),
                age,
                step: "move",
            });
        }
        Ok(())
    }

    /// The records of one chunk of states (named, so profiles can tell it apart).
    ///
    /// In blocks of [`BLOCK`] states, like [`Self::afterstate_chunk`]: every move's
    /// afterstate is normalised and its slot prefetched, then looked up and the best move
    /// chosen.
    #[inline(never)]
    fn state_chunk(
        &self,
        ids: &[u64],
        recs: &mut [StateRec],
        after_table: &ValueTable,
        missing: &AtomicBool,
    ) {
        let k = self.k();
        let game = self.game;
        let class = self.class;
        let mut best = vec![(f64::NEG_INFINITY, f64::NEG_INFINITY, NO_MOVE); k];
        // Per state of the block and move: the canonical afterstate ([`NONE`] if the move is
        // invalid) and its reward.
        let mut after = [[NONE; 4]; BLOCK];
        let mut reward = [[0u32; 4]; BLOCK];
        for (block, recs) in ids.chunks(BLOCK).zip(recs.chunks_mut(BLOCK * k)) {
            for (j, &s) in block.iter().enumerate() {
                after[j] = [NONE; 4];
                if absorbed(&class, s) {
                    continue;
                }
                for (di, m) in game.rules.moves(s).into_iter().enumerate() {
                    if let Some((a, r)) = m {
                        let c = game.canon(a);
                        after_table.prefetch(c);
                        after[j][di] = c;
                        reward[j][di] = r;
                    }
                }
            }
            for (j, &s) in block.iter().enumerate() {
                let r = &mut recs[j * k..(j + 1) * k];
                if absorbed(&class, s) {
                    for x in r.iter_mut() {
                        x.value = 1.0;
                    }
                    continue;
                }
                best.fill((f64::NEG_INFINITY, f64::NEG_INFINITY, NO_MOVE));
                let mut moves = 0u8;
                for di in 0..4 {
                    if after[j][di] == NONE {
                        continue;
                    }
                    let Some(values) = after_table.get(after[j][di]) else {
                        missing.store(true, Ordering::Relaxed);
                        continue;
                    };
                    moves += 1;
                    for (vi, (b, var)) in best.iter_mut().zip(&self.variants).enumerate() {
                        // Reward plus afterstate value, or γ times it (discounted goal).
                        let q = var.q(reward[j][di], values.get(vi));
                        if q > b.0 {
                            *b = (q, b.0, di as u8);
                        } else if q > b.1 {
                            b.1 = q;
                        }
                    }
                }
                for (x, b) in r.iter_mut().zip(&best) {
                    *x = if moves == 0 {
                        StateRec::default()
                    } else {
                        StateRec {
                            value: b.0,
                            gap: if moves >= 2 { b.0 - b.1 } else { f64::NAN },
                            best: b.2,
                            moves,
                            terminal: false,
                        }
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::rules::variant::Given;
    use crate::rules::{Group, Shape};
    use crate::solver::forward::{self, AgeLayer, Start};

    /// Every age of a solve, in memory, with records everywhere or summaries everywhere.
    fn solve(game: &Game, variants: &[Variant], records: bool, segment: usize) -> Vec<AgeOutput> {
        let class = variants[0].forward_class();
        let mut layers: BTreeMap<u32, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
        let top = forward::run(game, &class, Start::Fresh, |l: AgeLayer| {
            layers.insert(l.age, (l.states, l.afterstates));
            Ok(())
        })
        .unwrap();
        let bottom = *layers.keys().next().unwrap();
        let mut pass = Backward::new(game, variants).unwrap();
        pass.segment = segment;
        let mut out = Vec::new();
        pass.run(
            top,
            bottom,
            None,
            |_| records,
            |age| Ok(layers.remove(&age).unwrap_or_default()),
            |o| {
                out.push(o);
                Ok(())
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn summaries_in_segments_are_the_records_figures_and_values() {
        let game = Game::new(Shape::new(2, 3).unwrap(), Group::Full);
        for names in [
            &["expectation", "optimistic", "pessimistic"][..],
            &["goal-64"],
        ] {
            let variants: Vec<Variant> = names
                .iter()
                .map(|n| Variant::parse(n, Given::default()).unwrap())
                .collect();
            check_summaries(&game, &variants);
        }
    }

    fn check_summaries(game: &Game, variants: &[Variant]) {
        let k = variants.len();
        let full = solve(game, variants, true, SEGMENT);
        for segment in [1, 7, 64] {
            let summed = solve(game, variants, false, segment);
            assert_eq!(full.len(), summed.len());
            let mut segmented = 0;
            for (f, s) in full.iter().zip(&summed) {
                assert_eq!(
                    (f.age, &f.states, &f.afterstates),
                    (s.age, &s.states, &s.afterstates)
                );
                let StateResults::Summary(sum) = &s.state_results else {
                    panic!("age {}: records where a summary was asked for", s.age);
                };
                let recs = f.records().expect("records where they were asked for");
                let bits = |x: f64| x.to_bits();
                let want: Vec<u64> = recs.iter().map(|r| bits(r.value)).collect();
                assert_eq!(
                    sum.values.iter().copied().map(bits).collect::<Vec<_>>(),
                    want
                );
                for (vi, v) in variants.iter().enumerate() {
                    let want = state_figures(recs, f.states.len(), k, vi, v);
                    let got = sum.figures[vi];
                    let b = |x: Option<f64>| x.map(f64::to_bits);
                    assert_eq!(got.n_terminal_states, want.n_terminal_states);
                    for (g, w) in [
                        (got.mean_state_value, want.mean_state_value),
                        (got.mean_action_gap, want.mean_action_gap),
                        (got.frac_gap_lt_1, want.frac_gap_lt_1),
                    ] {
                        assert_eq!(b(g), b(w), "age {} variant {}", s.age, v.name());
                    }
                }
                segmented += usize::from(s.states.len() > segment);
            }
            assert!(segmented > 0, "no age of more than {segment} states");
        }
    }
}
