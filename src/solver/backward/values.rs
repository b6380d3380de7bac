//! The backward pass's look-ups: the values of afterstates from their spawn children in the
//! levels of ages n + 2 and n + 4 (the variant's rule), and the records of states from their
//! moves' afterstates, a chunk at a time on all threads, in blocks whose look-ups are
//! prefetched together. A rigorous variant's spawn sums are integers
//! ([`crate::rules::rigorous`]).

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::{in_chunks, AgeWriter, Backward, Level, Wants, BLOCK, CHUNK, MAX_CELLS, NONE};
use crate::rules::board;
use crate::rules::order::{rank_among, MoveKeys};
use crate::rules::{Game, Kind, Order, Variant};
use crate::solver::exchange::{round_of, Exchange};
use crate::solver::forward::absorbed;
use crate::solver::records::{state_figures, FigureSums, StateRec, Summary, NO_MOVE};
use crate::solver::table::{ValueTable, Values};
use crate::solver::{Result, SolveError};

/// Where a state's moves' afterstates are looked up: this process's own table and, over
/// several processes, the table of the segment's ghosts (the afterstates others own, which
/// the exchange tells apart).
#[derive(Clone, Copy)]
pub(super) struct AfterTables<'a> {
    pub own: &'a ValueTable,
    pub ghosts: Option<(&'a ValueTable, &'a Exchange<'a>)>,
}

impl<'a> AfterTables<'a> {
    /// The canonical id of afterstate `a` and whether it is another process's, read from the
    /// ghosts' table ([`Exchange::canon_and_mine`]: the images made once for both).
    #[inline(always)]
    fn canon_and_ghost(&self, game: &Game, a: u64) -> (u64, bool) {
        match self.ghosts {
            None => (game.canon(a), false),
            Some((_, ex)) => {
                let (c, mine) = ex.canon_and_mine(game, a);
                (c, !mine)
            }
        }
    }

    /// Starts loading what a look-up of ghost `c` reads first ([`ValueTable::prefetch`]),
    /// so that a block's ghosts overlap their cache misses as its own afterstates do.
    #[inline(always)]
    fn prefetch_ghost(&self, c: u64, hint: &mut u32) {
        if let Some((t, _)) = self.ghosts {
            t.prefetch(c, hint);
        }
    }

    /// A ghost's values.
    #[inline]
    fn ghost(&self, c: u64) -> Option<Values<'a>> {
        self.ghosts.and_then(|(t, _)| t.get(c))
    }
}

impl Backward<'_> {
    pub(super) fn afterstate_values(
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
        // A pass with no rigorous variant runs the kernel without its integer sums.
        let rigorous = self.variants.iter().any(|v| v.rigor().is_some());
        in_chunks(afterstates, &mut out, k, |ids, vals| {
            if rigorous {
                self.afterstate_chunk::<true>(ids, vals, next2, next4, &missing)
            } else {
                self.afterstate_chunk::<false>(ids, vals, next2, next4, &missing)
            }
        });
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
    /// (reproducible bits). `RIGOROUS`: some variant is rigorous (its terms summed in
    /// integers).
    #[inline(never)]
    pub(super) fn afterstate_chunk<const RIGOROUS: bool>(
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
        // Per-variant accumulators: sum (expectation) or extremes per tile value; a rigorous
        // variant's exact integer sum, and its integers.
        let mut acc = vec![[0.0f64; 2]; k];
        let mut exact = vec![0u128; k];
        let rigor: Vec<_> = self.variants.iter().map(|v| v.rigor()).collect();
        // Per afterstate of the block: the number of empty cells, and per empty cell (in
        // order) the ids of the children spawning a 2 and a 4.
        let mut empties = [0usize; BLOCK];
        let mut kid = [[[NONE; 2]; MAX_CELLS]; BLOCK];
        // Where each child's look-up found its part (the second step's input), and where
        // each stream's last one did: a stream is a spawn of one tile on one cell, whose
        // children over afterstates in their order are close in the next layers' order.
        let mut part = [[[0u32; 2]; MAX_CELLS]; BLOCK];
        let mut hint = [[0u32; 2]; MAX_CELLS];
        // Per afterstate of the block: the goal tile is on it (asked once).
        let mut done = [false; BLOCK];
        let tables = [&next2.table, &next4.table];
        let spawns = [class.spawn2, class.spawn4];
        for (block, vals) in ids.chunks(BLOCK).zip(vals.chunks_mut(BLOCK * k)) {
            for (j, &a) in block.iter().enumerate() {
                empties[j] = 0;
                done[j] = absorbed(&class, a);
                if done[j] {
                    continue;
                }
                let images = game.sym.images_of(a);
                let canon_child = |i: usize, e: u8| match &images {
                    Some(img) => game.sym.spawn_canon(img, i, e),
                    None => game.canon(board::place(a, i, e)),
                };
                let mut n = 0;
                for i in board::empty_cells(a, cells) {
                    for t in 0..2 {
                        if spawns[t] {
                            let c = canon_child(i, t as u8 + 1);
                            tables[t].prefetch(c, &mut hint[i][t]);
                            kid[j][n][t] = c;
                            part[j][n][t] = hint[i][t];
                        }
                    }
                    n += 1;
                }
                empties[j] = n;
            }
            // A perfect table's slot is known once its pilot (prefetched above) is read: ask
            // for every slot of the block before reading any.
            for t in 0..2 {
                if spawns[t] && tables[t].two_step() {
                    for (j, kids) in kid.iter_mut().enumerate().take(block.len()) {
                        for (kid, at) in kids[..empties[j]].iter_mut().zip(&part[j]) {
                            kid[t] = tables[t].locate(kid[t], at[t]);
                        }
                    }
                }
            }
            for j in 0..block.len() {
                let v = &mut vals[j * k..(j + 1) * k];
                if done[j] {
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
                if RIGOROUS {
                    exact.fill(0);
                }
                let empty = empties[j];
                debug_assert!(empty > 0, "a valid afterstate has an empty cell");
                for kid in &kid[j][..empty] {
                    let mut child: [Option<Values>; 2] = [None, None];
                    for t in 0..2 {
                        if spawns[t] {
                            child[t] = tables[t].at(kid[t]);
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
                            Kind::Goal(_) if RIGOROUS && rigor[vi].is_some() => {
                                exact[vi] += rigor[vi].as_ref().map_or(0, |r| r.terms(v2, v4));
                            }
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
                for (vi, ((out, x), var)) in v.iter_mut().zip(&acc).zip(&self.variants).enumerate()
                {
                    *out = match var.kind {
                        Kind::Goal(_) if RIGOROUS && rigor[vi].is_some() => {
                            rigor[vi].map_or(0.0, |r| r.grid.mean(exact[vi], empty as u64))
                        }
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

    /// The figures and values of an age's states, their records made a segment at a time
    /// (the writer's, else [`SEGMENT`] states) and folded in row order (the bits of
    /// [`crate::solver::records::state_figures`] over all of them) and handed to `writer`. A segment
    /// is folded and written while the next one's records are made, so that no core waits for
    /// either.
    ///
    /// Over several processes the afterstates' table holds this process's own only, and each
    /// segment's ghosts are fetched for it ([`Backward::segment_ghosts`], every process going
    /// through as many segments as the one with the most), so that no process holds the
    /// ghosts of a whole age.
    pub(super) fn state_summary<W: AgeWriter>(
        &self,
        age: u32,
        states: &[u64],
        after_table: &ValueTable,
        writer: &mut W,
        buffers: &mut [Vec<StateRec>; 2],
    ) -> Result<Summary> {
        let k = self.k();
        let order = writer.order();
        let ghosted = self.distributed();
        // The tables of segment `i` of `ids.len()`-state segments (collective over several
        // processes), and how many segments every process goes through.
        let fetch = |ids: &[u64]| -> Result<Option<ValueTable>> {
            let whole = ids.len() == states.len();
            ghosted
                .map(|ex| self.segment_ghosts(ex, age, ids, whole, after_table))
                .transpose()
        };
        let rounds = |n: usize| -> Result<usize> {
            match ghosted {
                Some(ex) => Ok(ex.agree_max(n as u64)? as usize),
                None => Ok(n),
            }
        };
        let segment = match writer.wants() {
            Wants::Figures => self.segment,
            Wants::Segments(n) => n,
            Wants::Whole => {
                // Made at once, handed over whole; only the values are taken here. Over
                // several processes, a segment's ghosts at a time.
                let [making, _] = buffers;
                let len = states.len() * k;
                if making.len() < len {
                    making.resize(len, StateRec::default());
                }
                let seg = match ghosted {
                    Some(_) => self.segment,
                    None => states.len(),
                }
                .max(1);
                for i in 0..rounds(states.len().div_ceil(seg))? {
                    let ids = round_of(states, i, seg);
                    let ghosts = fetch(ids)?;
                    let at = (i * seg * k).min(len);
                    let recs = &mut making[at..at + ids.len() * k];
                    let tables = AfterTables {
                        own: after_table,
                        ghosts: ghosts.as_ref().zip(ghosted),
                    };
                    self.records_into(age, ids, tables, order, recs)?;
                }
                let values = making[..len].par_iter().map(|r| r.value).collect();
                if !states.is_empty() {
                    writer.states(states, making)?;
                }
                return Ok(Summary {
                    figures: Vec::new(),
                    values,
                });
            }
        }
        .max(1);
        let wants = writer.wants() != Wants::Figures;
        let variants = &self.variants;
        let mut sums: Vec<FigureSums> = variants.iter().map(FigureSums::new).collect();
        let mut values = Vec::with_capacity(states.len() * k);
        // `recs` holds the records of `ids` first; the writer may take the vector.
        let mut fold = |ids: &[u64], recs: &mut Vec<StateRec>| -> Result<()> {
            fold_records(&recs[..ids.len() * k], variants, &mut sums, &mut values);
            if wants && !ids.is_empty() {
                writer.states(ids, recs)?;
            }
            Ok(())
        };
        // The segment being made, and the one before it (`made_ids`), waiting to be folded;
        // their buffers are kept from age to age (fresh ones would be paged in every time).
        let [mut making, mut made] = std::mem::take(buffers);
        let mut made_ids: &[u64] = &[];
        for i in 0..rounds(states.len().div_ceil(segment))? {
            let ids = round_of(states, i, segment);
            let ghosts = fetch(ids)?;
            let tables = AfterTables {
                own: after_table,
                ghosts: ghosts.as_ref().zip(ghosted),
            };
            let len = ids.len() * k;
            if making.len() < len {
                making.resize(len, StateRec::default());
            }
            let recs = &mut making[..len];
            let (done, folded) = if ids.len() <= CHUNK {
                // A small segment: both here, without a round trip through the pool's threads.
                (
                    self.records_into(age, ids, tables, order, recs),
                    fold(made_ids, &mut made),
                )
            } else {
                rayon::join(
                    || self.records_into(age, ids, tables, order, recs),
                    || fold(made_ids, &mut made),
                )
            };
            done?;
            folded?;
            made_ids = ids;
            std::mem::swap(&mut making, &mut made);
        }
        fold(made_ids, &mut made)?;
        *buffers = [making, made];
        debug_assert_eq!(values.len(), states.len() * k);
        Ok(Summary {
            figures: sums,
            values,
        })
    }

    /// The records of `states` into `out` (`[i * k + v]`), in parallel; with `order`, each
    /// record's [`StateRec::rank`] under it.
    pub(super) fn records_into(
        &self,
        age: u32,
        states: &[u64],
        tables: AfterTables<'_>,
        order: Option<Order>,
        out: &mut [StateRec],
    ) -> Result<()> {
        let k = self.k();
        debug_assert_eq!(out.len(), states.len() * k);
        let missing = AtomicBool::new(false);
        in_chunks(states, out, k, |ids, recs| {
            self.state_chunk(ids, recs, tables, order, &missing)
        });
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
    /// chosen. With `order`, the optimal moves are ranked from the same moves' afterstates
    /// (the class's moves: the unrestricted ones, as the policy layout refuses a restricted
    /// solve), their keys computed once for every variant.
    #[inline(never)]
    pub(super) fn state_chunk(
        &self,
        ids: &[u64],
        recs: &mut [StateRec],
        tables: AfterTables<'_>,
        order: Option<Order>,
        missing: &AtomicBool,
    ) {
        let after_table = tables.own;
        let k = self.k();
        let game = self.game;
        let shape = game.shape();
        let class = self.class;
        let mut best = vec![(f64::NEG_INFINITY, f64::NEG_INFINITY, NO_MOVE); k];
        let rigor: Vec<_> = self.variants.iter().map(|v| v.rigor()).collect();
        // Per variant, the q of each move of the state at hand (valid moves only are read).
        let mut qs = vec![[f64::NEG_INFINITY; 4]; k];
        // Per state of the block and move: the canonical afterstate ([`NONE`] if the move is
        // invalid) and its reward.
        let mut after = [[NONE; 4]; BLOCK];
        let mut reward = [[0u32; 4]; BLOCK];
        // Per state of the block, its moves as made (what the rank's keys are computed from).
        let mut made = [[None; 4]; BLOCK];
        // Where each afterstate's look-up found its part, and where each direction's last
        // one did (the moves of states in their order are close in the afterstates' order).
        let mut part = [[0u32; 4]; BLOCK];
        let mut hint = [0u32; 4];
        // The same for the ghosts' table, over several processes.
        let mut ghost_hint = [0u32; 4];
        // Per state of the block: the goal tile is on it (asked once).
        let mut done = [false; BLOCK];
        // Per state of the block: bit `d` where move `d`'s afterstate is another process's
        // (looked up in the segment's ghosts, in one step).
        let mut ghost = [0u8; BLOCK];
        // What an absorbed state's record is, whole: a reused buffer holds an earlier state's.
        let absorbed_rec = StateRec {
            value: 1.0,
            ..StateRec::default()
        };
        for (block, recs) in ids.chunks(BLOCK).zip(recs.chunks_mut(BLOCK * k)) {
            for (j, &s) in block.iter().enumerate() {
                after[j] = [NONE; 4];
                ghost[j] = 0;
                done[j] = absorbed(&class, s);
                if done[j] {
                    continue;
                }
                made[j] = class.moves(&game.rules, s);
                for (di, m) in made[j].into_iter().enumerate() {
                    if let Some((a, r)) = m {
                        let (c, is_ghost) = tables.canon_and_ghost(game, a);
                        if is_ghost {
                            ghost[j] |= 1 << di;
                            tables.prefetch_ghost(c, &mut ghost_hint[di]);
                        } else {
                            after_table.prefetch(c, &mut hint[di]);
                            part[j][di] = hint[di];
                        }
                        after[j][di] = c;
                        reward[j][di] = r;
                    }
                }
            }
            if after_table.two_step() {
                for j in 0..block.len() {
                    for di in 0..4 {
                        if after[j][di] != NONE && ghost[j] >> di & 1 == 0 {
                            after[j][di] = after_table.locate(after[j][di], part[j][di]);
                        }
                    }
                }
            }
            for j in 0..block.len() {
                let r = &mut recs[j * k..(j + 1) * k];
                if done[j] {
                    r.fill(absorbed_rec);
                    continue;
                }
                best.fill((f64::NEG_INFINITY, f64::NEG_INFINITY, NO_MOVE));
                let mut moves = 0u8;
                for di in 0..4 {
                    if after[j][di] == NONE {
                        continue;
                    }
                    let found = if ghost[j] >> di & 1 == 0 {
                        after_table.at(after[j][di])
                    } else {
                        tables.ghost(after[j][di])
                    };
                    let Some(values) = found else {
                        missing.store(true, Ordering::Relaxed);
                        continue;
                    };
                    moves += 1;
                    for (vi, (b, var)) in best.iter_mut().zip(&self.variants).enumerate() {
                        // Reward plus afterstate value, or γ times it (discounted goal).
                        let q = var.q_with(rigor[vi].as_ref(), reward[j][di], values.get(vi));
                        qs[vi][di] = q;
                        if q > b.0 {
                            *b = (q, b.0, di as u8);
                        } else if q > b.1 {
                            b.1 = q;
                        }
                    }
                }
                let keys = match order {
                    Some(order) if moves >= 2 => Some(MoveKeys::new(order, &made[j], shape)),
                    _ => None,
                };
                for ((x, b), q) in r.iter_mut().zip(&best).zip(&qs) {
                    let optimal = optimal_mask(&after[j], q, b.0);
                    *x = if moves == 0 {
                        StateRec::default()
                    } else {
                        StateRec {
                            value: b.0,
                            gap: if moves >= 2 { b.0 - b.1 } else { f64::NAN },
                            best: b.2,
                            moves,
                            terminal: false,
                            optimal,
                            rank: keys.map_or(0, |keys| rank_among(&keys, optimal)),
                        }
                    };
                }
            }
        }
    }
}

/// The moves among `after` (valid where not [`NONE`]) whose q in `q` equals `best` exactly.
#[inline]
fn optimal_mask(after: &[u64; 4], q: &[f64; 4], best: f64) -> u8 {
    (0..4)
        .filter(|&d| after[d] != NONE && q[d] == best)
        .fold(0u8, |m, d| m | 1 << d)
}

/// States a task of [`fold_records`] sums (each task's sums are merged after: 1.1 KB a
/// variant).
pub(super) const FOLD: usize = 8 * CHUNK;

/// Adds the figures of the records `recs` (`[i * k + v]`, `k` = `variants.len()`) to `sums`
/// and appends their values to `values`, on all threads for more than [`FOLD`] states. The
/// sums are exact ([`FigureSums`]), so any split of the records gives the same bits; the
/// values keep the records' order. (Folded on the pass's thread alone, an age of one
/// segment left the other core idle: the age's last step before its level is made.)
pub(super) fn fold_records(
    recs: &[StateRec],
    variants: &[Variant],
    sums: &mut [FigureSums],
    values: &mut Vec<f64>,
) {
    let k = variants.len();
    // Each variant's figures of a run of records.
    let figures = |recs: &[StateRec]| -> Vec<FigureSums> {
        let n = recs.len() / k;
        let sum = |(vi, v)| state_figures(recs, n, k, vi, v);
        variants.iter().enumerate().map(sum).collect()
    };
    let parts = if recs.len() <= FOLD * k {
        values.extend(recs.iter().map(|r| r.value));
        vec![figures(recs)]
    } else {
        let (parts, ()) = rayon::join(
            || recs.par_chunks(FOLD * k).map(figures).collect(),
            || values.par_extend(recs.par_iter().map(|r| r.value)),
        );
        parts
    };
    for part in parts {
        for (sum, p) in sums.iter_mut().zip(&part) {
            sum.merge(p);
        }
    }
}
