//! An age valued a chunk at a time from its work file, within the memory budget: no vector
//! of the age's ids or values exists, only the tables of ages n + 2 and n + 4, the
//! afterstates' and the age's own. Over several processes (parts by tiles) the afterstates'
//! table takes the process's ghosts too, the afterstates others own that its states move to:
//! their ids are held whole while their values are fetched and merged in a round at a time.

use rayon::prelude::*;

use super::ghosts::OwnBoards;
use super::{AfterFigures, AgeOutput, AgeWriter, Backward, Level, Phase, Wants};
use crate::rules::board;
use crate::solver::exchange::Exchange;
use crate::solver::records::{FigureSums, StateRec, Summary};
use crate::solver::spill::Spilled;
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
        // Over several processes: the afterstates others own that this process's states move
        // to, with their values fetched from their owners, merged in.
        let after_table = match self.distributed() {
            Some(ex) => self.streamed_ghosts(ex, age, file, after_table, n_after)?,
            None => after_table,
        };
        phase(Phase::AfterstateTable);

        let mut level = TableBuilder::new(n_states, k, self.perfect_from, coding);
        let mut sums: Vec<FigureSums> = self.variants.iter().map(FigureSums::new).collect();
        let wants = writer.wants() != Wants::Figures;
        let order = writer.order();
        let mut recs: Vec<StateRec> = Vec::new();
        let mut values: Vec<f64> = Vec::new();
        for chunk in states() {
            let chunk = chunk?;
            fig.max_exponent = fig.max_exponent.max(max_exponent_of(&chunk));
            for ids in chunk.chunks(self.segment.max(1)) {
                let len = ids.len() * k;
                recs.resize(len, StateRec::default());
                self.records_into(age, ids, &after_table, order, &mut recs[..len])?;
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

impl Backward<'_> {
    /// Over several processes, a streamed age's afterstates' table with the afterstates this
    /// process's states move to that others own (its ghosts, the forward pass's `asked`, or
    /// made again from the states): their values fetched from their owners a round at a time
    /// and merged in id order with this process's own, read again from the work `file` with
    /// their values from `own` (their table, of `n_own` ids), into a table of both. This
    /// process answers the others from `own` too: its values are those of the afterstates
    /// valued whole, as the table's coding reads them back, which a table of that coding
    /// stores as they are (so the asker's table holds the bits it would have held). Without
    /// ghosts `own` is the table. Collective.
    fn streamed_ghosts(
        &self,
        ex: &Exchange,
        age: u32,
        file: &LayerFile,
        own: ValueTable,
        n_own: usize,
    ) -> Result<ValueTable> {
        let k = self.k();
        let shape = self.game.shape();
        let damaged = |e: crate::store::idcodec::Damaged| {
            SolveError::Internal(format!("age {age}'s layer file, checked when read: {e}"))
        };
        let wanted = match self.asked.and_then(|asked| asked(age)) {
            Some(wanted) => wanted,
            None => {
                let mut made = Spilled::new(age, self.holding.cap);
                for chunk in file.state_chunks(STREAM_CHUNK) {
                    made.push(self.asked_again(ex, &chunk.map_err(damaged)?))?;
                }
                made.into_layer()?
            }
        };
        let values_of = |id: u64, out: &mut Vec<f64>| -> Result<()> {
            let v = own.get(id).ok_or_else(|| SolveError::Inconsistent {
                board: shape.to_string(),
                age,
                step: "look-up from another process",
            })?;
            out.extend((0..k).map(|vi| v.get(vi)));
            Ok(())
        };
        let answer = |ids: &[u64]| -> Result<Vec<f64>> {
            let mut out = Vec::with_capacity(ids.len() * k);
            for &id in ids {
                values_of(id, &mut out)?;
            }
            Ok(out)
        };
        if wanted.is_empty() {
            // Nothing to merge: this process only answers.
            ex.fetch_rounds(&[], k, &answer, &mut |_, _| Ok(()))?;
            return Ok(own);
        }
        let table = self.table_builder(n_own + wanted.len());
        let mine = OwnIds {
            chunks: Box::new(
                file.afterstate_chunks(STREAM_CHUNK)
                    .map(move |c| c.map_err(damaged)),
            ),
            ids: Vec::new(),
            at: 0,
            values_of: &values_of,
        };
        let table = self.merge_rounds(ex, wanted, &answer, mine, table)?;
        drop(own);
        Ok(table.finish())
    }
}

/// A process's afterstates read again from a streamed age's work file, an id at a time.
struct OwnIds<'a> {
    chunks: Box<dyn Iterator<Item = Result<Vec<u64>>> + 'a>,
    ids: Vec<u64>,
    at: usize,
    /// An id's values, from the own afterstates' table.
    values_of: &'a dyn Fn(u64, &mut Vec<f64>) -> Result<()>,
}

impl OwnBoards for OwnIds<'_> {
    fn peek(&mut self) -> Result<Option<u64>> {
        while self.at == self.ids.len() {
            match self.chunks.next() {
                None => return Ok(None),
                Some(chunk) => {
                    self.ids = chunk?;
                    self.at = 0;
                }
            }
        }
        Ok(Some(self.ids[self.at]))
    }

    fn take(&mut self, out: &mut Vec<f64>) -> Result<u64> {
        let id = self.ids[self.at];
        (self.values_of)(id, out)?;
        self.at += 1;
        Ok(id)
    }
}

/// The largest exponent of any cell of `ids`.
fn max_exponent_of(ids: &[u64]) -> u8 {
    crate::index::max_exponent(ids.iter().copied())
}
