//! Over several processes: the boards others own that this process's look-ups need, its
//! ghosts. A level's table holds, beside the boards this process owns, those others own
//! that its younger ages' afterstates spawn into; the afterstates' table holds those its
//! states move to. Their values are fetched from their owners ([`Exchange::fetch`]).

use rayon::prelude::*;

use super::{Backward, Layers, Level, CHUNK};
use crate::rules::board;
use crate::rules::{ForwardClass, Game};
use crate::solver::exchange::{answer_from, Exchange};
use crate::solver::forward::absorbed;
use crate::solver::table::TableBuilder;
use crate::solver::{Result, SolveError};

/// The refusal of an age valued a chunk at a time over several processes.
pub(super) fn chunked(age: u32) -> SolveError {
    SolveError::Budget(format!(
        "age {age} would be valued a chunk at a time, and a solve over several processes \
         values every age whole"
    ))
}

/// The children of `afterstates` spawning exponent `e` that `ex`'s other processes own.
fn spawn_children(
    game: &Game,
    class: &ForwardClass,
    afterstates: &[u64],
    e: u8,
    ex: &Exchange,
) -> Vec<u64> {
    let mut out = Vec::new();
    for &a in afterstates {
        if absorbed(class, a) {
            continue;
        }
        let images = game.sym.images_of(a);
        for i in board::empty_cells(a, game.cells()) {
            let c = match &images {
                Some(img) => game.sym.spawn_canon(img, i, e),
                None => game.canon(board::place(a, i, e)),
            };
            if !ex.mine(c) {
                out.push(c);
            }
        }
    }
    out
}

/// Two sorted, disjoint layers with their values (`k` each) pushed into `table` as one, in
/// id order, a run at a time (never merged whole).
pub(super) fn push_merged(
    table: &mut TableBuilder,
    a: (&[u64], &[f64]),
    b: (&[u64], &[f64]),
    k: usize,
) {
    const RUN: usize = 1 << 16;
    let (mut i, mut j) = (0, 0);
    let (mut ids, mut vals) = (Vec::with_capacity(RUN), Vec::with_capacity(RUN * k));
    while i < a.0.len() || j < b.0.len() {
        let (from, at) = if j == b.0.len() || (i < a.0.len() && a.0[i] < b.0[j]) {
            (&a, &mut i)
        } else {
            (&b, &mut j)
        };
        ids.push(from.0[*at]);
        vals.extend_from_slice(&from.1[*at * k..(*at + 1) * k]);
        *at += 1;
        if ids.len() == RUN {
            table.push(&ids, &vals);
            ids.clear();
            vals.clear();
        }
    }
    table.push(&ids, &vals);
}

impl Backward<'_> {
    /// Over several processes, before age `age` (of `afterstates`) is valued: each level's
    /// table is built once, with the values of the boards others own that both its younger
    /// ages look up: age n + 2's, for this age's 2-spawns and age n - 2's 4-spawns (read a step
    /// ahead through `load`, and returned); age n + 4's was built at age n + 2 (or, on a
    /// resume, is built now for this age's 4-spawns alone). Collective.
    pub(super) fn ghost_levels(
        &self,
        ex: &Exchange,
        (age, min_age): (u32, u32),
        afterstates: &[u64],
        (next2, next4): (&mut Level, &mut Level),
        load: &mut impl FnMut(u32) -> Result<Layers>,
    ) -> Result<Option<Layers>> {
        // Where spawns stay home no level holds others' boards: each level's table was built
        // at its own age, and nothing is read ahead.
        if ex.parts().spawns_stay_home() {
            return Ok(None);
        }
        let younger = if age >= min_age + 2 {
            Some(load(age - 2)?)
        } else {
            None
        };
        let younger_after: &[u64] = match &younger {
            None => &[],
            Some(Layers::Whole(_, a)) => a,
            Some(Layers::Streamed { .. }) => return Err(chunked(age - 2)),
        };
        if next4.owned.is_some() {
            let level = std::mem::replace(next4, Level::empty(age + 4));
            *next4 = self.ghost_level(ex, level, &[(afterstates, 1)])?;
        }
        let level = std::mem::replace(next2, Level::empty(age + 2));
        *next2 = self.ghost_level(ex, level, &[(afterstates, 0), (younger_after, 1)])?;
        Ok(younger)
    }

    /// Over several processes: `level`'s table, of the boards this process owns and, fetched
    /// from their owners, the boards others own that the afterstates of `readers` look up
    /// (each with the tile it spawns: 0 for a 2, 1 for a 4). Collective.
    pub(super) fn ghost_level(
        &self,
        ex: &Exchange,
        level: Level,
        readers: &[(&[u64], usize)],
    ) -> Result<Level> {
        let (game, class, k) = (self.game, self.class, self.k());
        let (ids, values) = level.owned.unwrap_or_default();
        let spawns = [class.spawn2, class.spawn4];
        let pieces: Vec<Vec<u64>> = readers
            .iter()
            .filter(|&&(_, tile)| spawns[tile])
            .flat_map(|&(afterstates, tile)| {
                afterstates
                    .par_chunks(CHUNK)
                    .map(|chunk| spawn_children(game, &class, chunk, tile as u8 + 1, ex))
                    .collect::<Vec<_>>()
            })
            .collect();
        let wanted = crate::solver::layer::sort_dedup_pieces(pieces);
        let shape = game.shape();
        let got = ex.fetch(&wanted, k, &|asked| {
            answer_from(&ids, &values, k, asked, level.age, shape)
        })?;
        let mut table = self.table_builder(ids.len() + wanted.len());
        push_merged(&mut table, (&ids, &values), (&wanted, &got), k);
        Ok(Level::from_table(level.age, table.finish()))
    }

    /// Over several processes: the afterstates of this process's states' moves that others
    /// own (sorted), with their values fetched from their owners, who answer from
    /// `afterstates` and `after_values` (this process's own). Collective.
    pub(super) fn ghosted_afterstates(
        &self,
        ex: &Exchange,
        age: u32,
        states: &[u64],
        afterstates: &[u64],
        after_values: &[f64],
    ) -> Result<(Vec<u64>, Vec<f64>)> {
        let (game, k) = (self.game, self.k());
        let kept = self.asked.and_then(|asked| asked(age));
        let wanted = match kept {
            Some(wanted) => wanted,
            None => self.asked_again(ex, states),
        };
        let shape = game.shape();
        let got = ex.fetch(&wanted, k, &|asked| {
            answer_from(afterstates, after_values, k, asked, age, shape)
        })?;
        Ok((wanted, got))
    }

    /// The afterstates `states` move to that others own, sorted and distinct: made again
    /// where the forward pass's are not kept.
    pub(super) fn asked_again(&self, ex: &Exchange, states: &[u64]) -> Vec<u64> {
        let (game, class) = (self.game, self.class);
        let wanted: Vec<u64> = states
            .par_chunks(CHUNK)
            .flat_map_iter(|chunk| {
                let mut out = Vec::new();
                for &s in chunk {
                    if absorbed(&class, s) {
                        continue;
                    }
                    for (a, _) in class.moves(&game.rules, s).into_iter().flatten() {
                        // The images once, for the id and for its owner.
                        let (c, mine) = match game.sym.images_of(a) {
                            Some(images) => (images.min(), ex.mine_images(&images)),
                            None => {
                                let c = game.canon(a);
                                (c, ex.mine(c))
                            }
                        };
                        if !mine {
                            out.push(c);
                        }
                    }
                }
                out
            })
            .collect();
        crate::solver::layer::sort_dedup(wanted)
    }
}
