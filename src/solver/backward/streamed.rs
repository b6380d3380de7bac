//! An age valued a chunk at a time from its work file, within the memory budget: no vector
//! of the age's ids or values exists, only the tables of ages n + 2 and n + 4, the
//! afterstates' and the age's own. Over several processes (parts by tiles) the afterstates'
//! table takes the process's ghosts too, the afterstates others own that its states move to:
//! their ids are held whole while their values are fetched and merged in a round at a time.

use rayon::prelude::*;

use super::values::AfterTables;
use super::{AfterFigures, AgeOutput, AgeWriter, Backward, Level, Phase, Wants};
use crate::rules::board;
use crate::solver::records::{FigureSums, StateRec, Summary};
use crate::solver::table::{TableBuilder, ValueTable};
use crate::solver::{Result, SolveError};
use crate::store::idcodec::LayerFile;

/// Ids of a streamed age's chunks (read from its work file, valued, pushed to the tables):
/// their ids, values and records are part of the budget's fixed part (`plan::FIXED`).
const STREAM_CHUNK: usize = 1 << 20;

impl Backward<'_> {
    /// Age `age` valued from its work `file` (of `n_after` afterstates) with the levels of
    /// ages n + 2 and n + 4, handed to its writer and to `sink`; returns its level.
    pub(super) fn streamed_step<W: AgeWriter>(
        &self,
        age: u32,
        (file, n_after): (LayerFile, usize),
        (next2, next4): (&Level, Level),
        open: &mut impl FnMut(u32, usize, u64, bool) -> Result<W>,
        sink: &mut impl FnMut(AgeOutput, W::Written) -> Result<()>,
    ) -> Result<Level> {
        let counts = (file.states() as usize, n_after);
        let boards = (counts.0 + counts.1) as u64;
        let mut writer = open(age, counts.0, boards, true)?;
        let hook = |p: Phase| self.phase(age, p, counts);
        let (out, table) =
            self.streamed_age(age, &file, n_after, next2, next4, &mut writer, &hook)?;
        drop(file);
        let written = writer.finish(&out)?;
        sink(out, written)?;
        hook(Phase::FilesAndLevel);
        Ok(Level::from_table(age, table))
    }

    /// One age valued from its work file a chunk at a time: the afterstates (read, or made
    /// again from the states) valued and pushed to their table as they come, then the states
    /// likewise into the age's own table, their records to the writer a segment at a time.
    /// No vector of the age's ids or values exists; the tables of ages n + 2 and n + 4, the
    /// afterstates' and the age's own are what it holds. Returns the age (its vectors empty)
    /// and its table.
    #[allow(clippy::too_many_arguments)]
    fn streamed_age<W: AgeWriter>(
        &self,
        age: u32,
        file: &LayerFile,
        n_after: usize,
        next2: &Level,
        next4: Level,
        writer: &mut W,
        phase: &dyn Fn(Phase),
    ) -> Result<(AgeOutput, ValueTable)> {
        let k = self.k();
        let coding = self.holding.coding;
        let damaged = |e: crate::store::idcodec::Damaged| {
            SolveError::Internal(format!("age {age}'s layer file, checked when read: {e}"))
        };
        let n_states = file.states() as usize;
        let states = || file.state_chunks(STREAM_CHUNK).map(|c| c.map_err(damaged));
        let cells = self.game.cells();
        let clamps: Vec<_> = self
            .variants
            .iter()
            .map(crate::solver::records::clamp_for)
            .collect();
        let mut fig = AfterFigures {
            states: n_states as u64,
            afterstates: 0,
            empty_cells: 0,
            best: vec![None; k],
            max_exponent: 0,
        };
        phase(Phase::Load);
        let mut after = TableBuilder::new(n_after, k, self.perfect_from, coding);
        {
            let mut value_chunk = |ids: &[u64]| -> Result<()> {
                let values = self.afterstate_values(age, ids, next2, &next4)?;
                fig.afterstates += ids.len() as u64;
                fig.empty_cells += ids
                    .par_iter()
                    .map(|&a| u64::from(board::count_empty(a, cells)))
                    .sum::<u64>();
                fig.max_exponent = fig.max_exponent.max(max_exponent_of(ids));
                for (vi, clamp) in clamps.iter().enumerate() {
                    let best = values
                        .iter()
                        .skip(vi)
                        .step_by(k)
                        .map(|&x| clamp(x))
                        .reduce(f64::max);
                    fig.best[vi] = match (fig.best[vi], best) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                }
                after.push(ids, &values);
                Ok(())
            };
            // Over several processes the file keeps this process's afterstates, if any.
            if file.afterstates() > 0 || self.distributed().is_some() {
                for chunk in file.afterstate_chunks(STREAM_CHUNK) {
                    value_chunk(&chunk.map_err(damaged)?)?;
                }
            } else {
                let made = crate::solver::forward::afterstates_of(
                    self.game,
                    &self.class,
                    age,
                    states(),
                    self.holding.cap,
                )?;
                for chunk in made.stream() {
                    value_chunk(&chunk?)?;
                }
            }
        }
        if fig.afterstates != n_after as u64 {
            return Err(SolveError::Inconsistent {
                board: self.game.shape().to_string(),
                age,
                step: "move",
            });
        }
        phase(Phase::AfterstateValues);
        drop(next4);
        let after_table = after.finish();
        phase(Phase::AfterstateTable);

        let mut level = TableBuilder::new(n_states, k, self.perfect_from, coding);
        let mut sums: Vec<FigureSums> = self.variants.iter().map(FigureSums::new).collect();
        let wants = writer.wants() != Wants::Figures;
        let order = writer.order();
        let mut recs: Vec<StateRec> = Vec::new();
        let mut values: Vec<f64> = Vec::new();
        // Over several processes the table holds this process's own afterstates only, and
        // each segment's ghosts (the afterstates others own that its states move to) are
        // fetched for it, as an age valued whole does: every process goes through as many
        // segments as the one with the most.
        let seg = self.segment.max(1);
        let ghosted = self.distributed();
        let mut rounds = match ghosted {
            Some(ex) => ex.agree_max(segments(n_states, seg) as u64)? as usize,
            None => 0,
        };
        for chunk in states() {
            let chunk = chunk?;
            fig.max_exponent = fig.max_exponent.max(max_exponent_of(&chunk));
            for ids in chunk.chunks(seg) {
                let ghosts = ghosted
                    .map(|ex| self.segment_ghosts(ex, age, ids, false, &after_table))
                    .transpose()?;
                rounds = rounds.saturating_sub(1);
                let tables = AfterTables {
                    own: &after_table,
                    ghosts: ghosts.as_ref().zip(ghosted),
                };
                let len = ids.len() * k;
                recs.resize(len, StateRec::default());
                self.records_into(age, ids, tables, order, &mut recs[..len])?;
                values.clear();
                for rec in recs[..len].chunks_exact(k) {
                    for (sum, r) in sums.iter_mut().zip(rec) {
                        sum.add(r);
                        values.push(r.value);
                    }
                }
                level.push(ids, &values);
                writer.state_values(&values)?;
                if wants {
                    writer.states(ids, &mut recs)?;
                }
            }
        }
        if let Some(ex) = ghosted {
            for _ in 0..rounds {
                self.segment_ghosts(ex, age, &[], false, &after_table)?;
            }
        }
        writer.afterstate_figures(&fig)?;
        phase(Phase::StatesValued);
        drop(after_table);
        let table = level.finish();
        let out = AgeOutput {
            age,
            boards: (n_states + n_after) as u64,
            states: Vec::new(),
            afterstates: Vec::new(),
            summary: Summary {
                figures: sums,
                values: Vec::new(),
            },
            after_values: Vec::new(),
        };
        Ok((out, table))
    }
}

/// The segments of `seg` ids that `n` ids read in chunks of [`STREAM_CHUNK`] are cut into.
fn segments(n: usize, seg: usize) -> usize {
    n / STREAM_CHUNK * STREAM_CHUNK.div_ceil(seg) + (n % STREAM_CHUNK).div_ceil(seg)
}

/// The largest exponent of any cell of `ids`.
fn max_exponent_of(ids: &[u64]) -> u8 {
    crate::index::max_exponent(ids.iter().copied())
}
