//! Over several processes: the boards others own that this process's look-ups need, its
//! ghosts. A level's table holds, beside the boards this process owns, those others own
//! that its younger ages' afterstates spawn into; the afterstates' table holds those its
//! states move to. Their values are fetched from their owners a round at a time
//! ([`Exchange::fetch_rounds`]), merged into the table as they come.

use rayon::prelude::*;

use super::{Backward, Layers, Level, CHUNK};
use crate::rules::board;
use crate::rules::{ForwardClass, Game};
use crate::solver::exchange::{answer_from, Answer, Exchange};
use crate::solver::forward::absorbed;
use crate::solver::table::{TableBuilder, ValueTable};
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

/// Ids merged before they are pushed into a table at once.
const RUN: usize = 1 << 16;

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
        let (game, class) = (self.game, self.class);
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
        let table = self.merge_fetched(ex, level.age, (&ids, &values), wanted)?;
        Ok(Level::from_table(level.age, table))
    }

    /// Over several processes, the table of the ghosts of a segment of an age's `states`:
    /// the afterstates they move to that others own, fetched from their owners a round at a
    /// time, while this process answers the others' asks from `own`, the table of its own
    /// afterstates. Where the segment is the whole age (`whole`) those are the ones the
    /// forward pass asked of others, read back if it kept them ([`Backward::with_kept_asked`])
    /// rather than made again. Collective: every process calls it once a segment, an empty
    /// one past its last.
    pub(super) fn segment_ghosts(
        &self,
        ex: &Exchange,
        age: u32,
        states: &[u64],
        whole: bool,
        own: &ValueTable,
    ) -> Result<ValueTable> {
        let kept = match self.kept_asked {
            Some(kept) if whole && !states.is_empty() => kept(age),
            _ => None,
        };
        let wanted = kept.unwrap_or_else(|| self.asked_again(ex, states));
        let (k, shape) = (self.k(), self.game.shape());
        let answer = |asked: &[u64]| answer_from_table(own, k, asked, age, shape);
        let table = self.table_builder(wanted.len());
        let none = Slices {
            ids: &[],
            values: &[],
            k,
            at: 0,
        };
        Ok(self
            .merge_rounds(ex, wanted, &answer, none, table)?
            .finish())
    }

    /// Over several processes, the table of the boards of age `age` this process owns
    /// (`own`: sorted ids and their values, `k` each) and of `wanted` (sorted, distinct, others'),
    /// whose values are fetched from their owners a round at a time and merged with its own
    /// in id order as they come ([`Backward::merge_rounds`]). This process answers the
    /// others from `own`. Collective: called on the thread that talks to the others.
    fn merge_fetched(
        &self,
        ex: &Exchange,
        age: u32,
        (own, own_values): (&[u64], &[f64]),
        wanted: Vec<u64>,
    ) -> Result<ValueTable> {
        let (k, shape) = (self.k(), self.game.shape());
        let answer = |asked: &[u64]| answer_from(own, own_values, k, asked, age, shape);
        let table = self.table_builder(own.len() + wanted.len());
        let mine = Slices {
            ids: own,
            values: own_values,
            k,
            at: 0,
        };
        Ok(self
            .merge_rounds(ex, wanted, &answer, mine, table)?
            .finish())
    }

    /// Merges this process's boards (`own`, in increasing id order) with `wanted` (sorted,
    /// distinct, others'), whose values are fetched from their owners a round at a time
    /// ([`Exchange::fetch_rounds`], this process answering with `answer`), into `table` in
    /// runs of [`RUN`] ids: the values of the whole wanted set are never held at once. Each
    /// round's ghosts go in with this process's boards below the round's last ghost (those
    /// above it come with later rounds, or at the end). Returns the table full, not finished
    /// (so that the caller may let go of its own boards first). Collective.
    pub(super) fn merge_rounds(
        &self,
        ex: &Exchange,
        wanted: Vec<u64>,
        answer: &Answer<'_>,
        mut own: impl OwnBoards,
        mut table: TableBuilder,
    ) -> Result<TableBuilder> {
        let k = self.k();
        let (mut ids, mut vals) = (Vec::with_capacity(RUN), Vec::with_capacity(RUN * k));
        let mut merge = |ghosts: &[u64], got: &[f64], below: Option<u64>| -> Result<()> {
            let mut j = 0;
            loop {
                let o = own.peek()?.filter(|&o| below.is_none_or(|b| o < b));
                let take_own = match (o, ghosts.get(j)) {
                    (None, None) => break,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (Some(o), Some(&g)) => o < g,
                };
                if take_own {
                    ids.push(own.take(&mut vals)?);
                } else {
                    ids.push(ghosts[j]);
                    vals.extend_from_slice(&got[j * k..(j + 1) * k]);
                    j += 1;
                }
                if ids.len() == RUN {
                    table.push(&ids, &vals);
                    ids.clear();
                    vals.clear();
                }
            }
            Ok(())
        };
        ex.fetch_rounds(&wanted, k, answer, &mut |ghosts, got| match ghosts.last() {
            Some(&last) => merge(ghosts, got, Some(last)),
            None => Ok(()),
        })?;
        drop(wanted);
        merge(&[], &[], None)?;
        table.push(&ids, &vals);
        Ok(table)
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
                        let (c, mine) = ex.canon_and_mine(game, a);
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

/// The values (`k` each) of `ids` read from `table`, a layer's: how a process answers
/// [`Exchange::fetch_rounds`] once its layer is a table. An id the table does not hold is an
/// inconsistency of the forward layers (a perfect table tells an id outside its layer apart
/// but for 1 in 2^16; the ids asked are the asker's moves, which the forward pass made
/// this process's).
fn answer_from_table(
    table: &ValueTable,
    k: usize,
    ids: &[u64],
    age: u32,
    board: crate::rules::Shape,
) -> Result<Vec<f64>> {
    let mut out = Vec::with_capacity(ids.len() * k);
    for &id in ids {
        let values = table.get(id).ok_or_else(|| SolveError::Inconsistent {
            board: board.to_string(),
            age,
            step: "look-up from another process",
        })?;
        out.extend((0..k).map(|v| values.get(v)));
    }
    Ok(out)
}

/// A process's own boards of an age in increasing id order, with their values: what
/// [`Backward::merge_rounds`] merges the fetched ghosts with.
pub(super) trait OwnBoards {
    /// The next id, not taken yet (`None` past the last).
    fn peek(&mut self) -> Result<Option<u64>>;
    /// Takes the next id (the one [`OwnBoards::peek`] gave), its values appended to `out`.
    fn take(&mut self, out: &mut Vec<f64>) -> Result<u64>;
}

/// Own boards held as sorted ids and their values (`k` each).
struct Slices<'a> {
    ids: &'a [u64],
    values: &'a [f64],
    k: usize,
    at: usize,
}

impl OwnBoards for Slices<'_> {
    fn peek(&mut self) -> Result<Option<u64>> {
        Ok(self.ids.get(self.at).copied())
    }

    fn take(&mut self, out: &mut Vec<f64>) -> Result<u64> {
        let (i, k) = (self.at, self.k);
        out.extend_from_slice(&self.values[i * k..(i + 1) * k]);
        self.at += 1;
        Ok(self.ids[i])
    }
}
