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
use super::{Result, SolveError};
use crate::rules::board;
use crate::rules::{ForwardClass, Game, Kind, Variant};

/// Boards per rayon task: enough work to amortise scheduling, small enough to balance.
const CHUNK: usize = 1024;

/// Boards whose look-ups are issued together (prefetched) within a chunk: enough to overlap
/// many cache misses, few enough that the block's ids stay in L1.
const BLOCK: usize = 16;

/// Cells of the largest board (4x4).
const MAX_CELLS: usize = 16;

/// No board: never an id (it would be a board of sixteen 32768 tiles).
const NONE: u64 = u64::MAX;

/// `best` when a state has no move to make.
pub const NO_MOVE: u8 = 4;

/// The solved record of one state for one variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StateRec {
    pub value: f64,
    /// Best q minus second-best q; NaN with fewer than two valid moves.
    pub gap: f64,
    /// Index into [`crate::rules::Dir::ALL`] of the best move (the first of equal ones), or [`NO_MOVE`].
    pub best: u8,
    /// Number of valid moves (0 for a terminal or absorbed state).
    pub moves: u8,
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
            terminal: true,
        }
    }
}

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
    /// `state_recs[i * k + v]`.
    pub state_recs: Vec<StateRec>,
    /// `after_values[i * k + v]`.
    pub after_values: Vec<f64>,
}

impl AgeOutput {
    /// The bytes the age holds (its vectors' lengths; what it hands the writer).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.states.len() * size_of::<u64>()
            + self.afterstates.len() * size_of::<u64>()
            + self.state_recs.len() * size_of::<StateRec>()
            + self.after_values.len() * size_of::<f64>()
    }
}

/// The backward pass over ages `max_age, max_age - 2, …, min_age`.
pub struct Backward<'g> {
    game: &'g Game,
    class: ForwardClass,
    variants: Vec<Variant>,
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
        })
    }

    pub fn k(&self) -> usize {
        self.variants.len()
    }

    /// Runs from `top` down to `min_age` (inclusive, step 2). `load(age)` gives the state and
    /// afterstate layers of an age (empty if the age has none). `next` holds the levels of ages
    /// `top + 2` and `top + 4` when resuming (empty levels otherwise). `sink` receives each age
    /// and returns after storing it; the level of that age is then kept for younger ages.
    pub fn run(
        &self,
        top: u32,
        min_age: u32,
        next: Option<(Level, Level)>,
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
            let recs = self.state_records(age, &states, &after_table)?;
            drop(after_table);
            // The values straight from the records (a vector of them would hold 8 bytes a
            // state more at the pass's peak).
            let level = Level {
                age,
                table: ValueTable::from_fn(&states, |j| recs[j].value, self.k()),
            };
            sink(AgeOutput {
                age,
                states,
                afterstates,
                state_recs: recs,
                after_values,
            })?;
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
        let k = self.k();
        let mut out = vec![StateRec::default(); states.len() * k];
        let missing = AtomicBool::new(false);
        let game = self.game;
        out.par_chunks_mut(k * CHUNK)
            .zip(states.par_chunks(CHUNK))
            .for_each(|(recs, ids)| self.state_chunk(ids, recs, after_table, &missing));
        if missing.load(Ordering::Relaxed) {
            return Err(SolveError::Inconsistent {
                board: game.shape().to_string(),
                age,
                step: "move",
            });
        }
        Ok(out)
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
