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
//!
//! - this module: [`Backward`], the pass over the ages, an age valued whole;
//! - [`writer`]: what the pass hands over, an age at a time ([`AgeWriter`], [`AgeOutput`]);
//! - `values`: the look-up kernels, afterstates from their spawns and states from their moves;
//! - `streamed`: an age valued a chunk at a time from its work file (the memory budget);
//! - `ghosts`: over several processes, the boards others own that a table must hold.

mod ghosts;
mod streamed;
#[cfg(test)]
mod tests;
mod values;
pub mod writer;

use rayon::prelude::*;

use super::exchange::Exchange;
use super::table::{Coding, TableBuilder, ValueTable};
use super::{Result, SolveError};
use crate::rules::{ForwardClass, Game, Variant};
pub use writer::{AfterFigures, Afterstates, AgeOutput, AgeWriter, NoFiles, Wants};

/// Boards per rayon task: enough work to amortise scheduling, small enough to balance.
const CHUNK: usize = 1024;

/// `f` over `ids` and their `k` slots each of `out`, [`CHUNK`] ids at a time in parallel; a
/// single chunk runs on the calling thread, without a round trip through the pool (which,
/// for the small segments of small ages, costs more than the work).
fn in_chunks<T: Send>(ids: &[u64], out: &mut [T], k: usize, f: impl Fn(&[u64], &mut [T]) + Sync) {
    if ids.len() <= CHUNK {
        f(ids, out);
    } else {
        out.par_chunks_mut(k * CHUNK)
            .zip(ids.par_chunks(CHUNK))
            .for_each(|(o, i)| f(i, o));
    }
}

/// States whose records exist at once when the pass folds an age into a [`Summary`]: many
/// chunks for the threads, a few megabytes of records.
const SEGMENT: usize = 1 << 18;

/// Boards whose look-ups are issued together (prefetched) within a chunk: enough to overlap
/// many cache misses, few enough that the block's ids stay in L1.
const BLOCK: usize = 16;

/// Cells of the largest board (4x4).
const MAX_CELLS: usize = 16;

/// No board ([`super::layer::NO_ID`]): a move that is invalid, a cell not spawned on.
const NONE: u64 = super::layer::NO_ID;

/// A layer of states with its values, kept while younger ages need it: only its
/// [`ValueTable`] (ids and values in one slot each), the ids and values as vectors go to the
/// writer or are dropped.
pub struct Level {
    pub age: u32,
    /// The values by id, for the look-ups of younger ages.
    table: ValueTable,
    /// In a solve over several processes whose levels hold others' boards (parts under which
    /// spawns leave home), until its table is built: the layer this process owns, with its
    /// values (`[i * k + v]`). The table is built once, when the first younger age looks the
    /// level up, from this layer and the values fetched of the boards other processes own
    /// that both younger ages look up ([`Backward::ghost_level`]); `table` is empty until
    /// then. Under parts whose spawns stay home the table is built at the level's own age, as
    /// in one process.
    owned: Option<(Vec<u64>, Vec<f64>)>,
}

impl Level {
    /// The level of `ids` with `values[i * k + v]` (`k` variants).
    pub fn new(age: u32, ids: &[u64], values: &[f64]) -> Level {
        let k = values.len().checked_div(ids.len()).unwrap_or(0);
        debug_assert_eq!(values.len(), ids.len() * k);
        Level {
            age,
            table: ValueTable::new(ids, values, k),
            owned: None,
        }
    }
    /// The level of a table already built.
    pub fn from_table(age: u32, table: ValueTable) -> Level {
        Level {
            age,
            table,
            owned: None,
        }
    }
    fn empty(age: u32) -> Level {
        Level::new(age, &[], &[])
    }
}

/// An age's layers as the pass reads them: whole, or its work file to stream them from (the
/// afterstates made again from the states where it keeps none).
pub enum Layers {
    Whole(Vec<u64>, Vec<u64>),
    Streamed {
        file: crate::store::idcodec::LayerFile,
        afterstates: usize,
    },
}

/// How the pass holds its tables and which ages it streams ([`super::plan::BackwardPlan`]).
#[derive(Clone, Debug)]
pub struct Holding {
    pub coding: Coding,
    /// Ids held raw by the afterstates made again from a streamed age's states.
    pub cap: usize,
}

impl Default for Holding {
    fn default() -> Holding {
        Holding {
            coding: Coding::F64,
            cap: usize::MAX,
        }
    }
}

/// The phases of an age in the backward pass, in order: what a memory trace tells apart
/// ([`Backward::with_phases`]; `reports/bench/memory.md` says what each holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The age's state and afterstate ids read.
    Load,
    /// The afterstates valued (their spawn children looked up in ages n + 2 and n + 4).
    AfterstateValues,
    /// The afterstates' table built, and their files written if the writer writes them then.
    AfterstateTable,
    /// The states valued (their moves looked up in the afterstates' table).
    StatesValued,
    /// The rest of the age's files written while its own table (its level) is built, and
    /// the age handed on (what the pass does not keep let go).
    FilesAndLevel,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::AfterstateValues => "afterstate values",
            Phase::AfterstateTable => "afterstate table and files",
            Phase::StatesValued => "states valued",
            Phase::FilesAndLevel => "files and level",
        }
    }
}

/// Told the end of each phase of each age: the age, the phase, and the age's states and
/// afterstates.
pub type PhaseHook<'g> = &'g (dyn Fn(u32, Phase, usize, usize) + Sync);

/// The backward pass over ages `max_age, max_age - 2, …, min_age`.
pub struct Backward<'g> {
    game: &'g Game,
    class: ForwardClass,
    variants: Vec<Variant>,
    /// [`SEGMENT`], smaller in tests.
    segment: usize,
    /// [`super::table::PERFECT_FROM`]: ids from which the pass's own tables are perfect
    /// hashes (smaller in tests).
    perfect_from: usize,
    phases: Option<PhaseHook<'g>>,
    holding: Holding,
    /// The processes of a distributed solve ([`Exchange`]); `None` for one process.
    exchange: Option<&'g Exchange<'g>>,
    /// Over several processes, the afterstates the forward pass kept as asked of others.
    kept_asked: Option<KeptAsked<'g>>,
}

/// Over several processes, the afterstates of age `n` that this process's states move to and
/// others own, sorted and distinct, as the forward pass kept them (`None` where it kept none,
/// or its file is damaged): what an age valued in one segment asks their owners for.
pub type KeptAsked<'g> = &'g (dyn Fn(u32) -> Option<Vec<u64>> + Sync);

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
            perfect_from: super::table::PERFECT_FROM,
            phases: None,
            holding: Holding::default(),
            exchange: None,
            kept_asked: None,
        })
    }

    /// The pass as one of the processes of `ex`: each age's boards are the ones this process
    /// owns, and the values of the boards it looks up that others own are fetched from them
    /// before each look-up phase (nothing is, in one process).
    ///
    /// Its tables take the kind one process's would for the whole layer: a perfect table
    /// from [`super::table::PERFECT_FROM`] ids of the layer on, so from that over the number
    /// of processes of its share. Chosen by the share, a process of eight held open tables
    /// (21 to 32 bytes an id, against 11.6) for layers whose share fell below the threshold
    /// where one process holds perfect ones, and so about twice one process's bytes a state
    /// at those ages. Either kind answers the same values.
    pub fn with_exchange(mut self, ex: &'g Exchange<'g>) -> Backward<'g> {
        self.exchange = Some(ex);
        self.perfect_from = (self.perfect_from / ex.processes().max(1) as usize).max(1);
        self
    }

    /// Over several processes, where an age is valued in one segment, its ghosts asked as the
    /// forward pass kept them (`kept`) instead of making its states' moves again.
    pub fn with_kept_asked(mut self, kept: KeptAsked<'g>) -> Backward<'g> {
        self.kept_asked = Some(kept);
        self
    }

    /// The exchange of a solve over several processes.
    fn distributed(&self) -> Option<&'g Exchange<'g>> {
        self.exchange.filter(|ex| !ex.is_single())
    }

    /// Whether a level's table waits for the values of the boards others own that its younger
    /// ages look up (over several processes, under parts whose spawns leave home), the level
    /// meanwhile keeping its layer ([`Level`]'s `owned`). Elsewhere it is built at its own
    /// age, from the age's ids and values, with no copy of them kept.
    fn levels_wait_for_ghosts(&self) -> bool {
        self.distributed()
            .is_some_and(|ex| !ex.parts().spawns_stay_home())
    }

    /// The pass, telling `hook` the end of each [`Phase`] of each age.
    pub fn with_phases(mut self, hook: PhaseHook<'g>) -> Backward<'g> {
        self.phases = Some(hook);
        self
    }

    /// The pass holding its tables in `holding`'s coding.
    pub fn with_holding(mut self, holding: Holding) -> Backward<'g> {
        self.holding = holding;
        self
    }

    /// The level of `ids` with `values[i * k + v]`, its table in the pass's coding.
    pub fn level(&self, age: u32, ids: &[u64], values: &[f64]) -> Level {
        let k = self.k();
        if self.levels_wait_for_ghosts() {
            return Level {
                age,
                table: ValueTable::new(&[], &[], k),
                owned: Some((ids.to_vec(), values.to_vec())),
            };
        }
        let table = ValueTable::from_fn_coded(
            ids,
            |j| values[j],
            k,
            self.perfect_from,
            self.holding.coding,
        );
        Level {
            age,
            table,
            owned: None,
        }
    }

    /// A builder of a table of `n` ids in the pass's coding.
    pub fn table_builder(&self, n: usize) -> TableBuilder {
        TableBuilder::new(n, self.k(), self.perfect_from, self.holding.coding)
    }

    pub fn k(&self) -> usize {
        self.variants.len()
    }

    /// Runs from `top` down to `min_age` (inclusive, step 2). `load(age)` gives the state and
    /// afterstate layers of an age (empty if the age has none). `next` holds the levels of ages
    /// `top + 2` and `top + 4` when resuming (empty levels otherwise). `open(age, states,
    /// boards, streamed)` gives the writer of an age of `boards` states and afterstates before
    /// its states are valued; `sink` receives each age with what its writer returned; the
    /// level of that age is then kept for younger ages.
    pub fn run<W: AgeWriter>(
        &self,
        top: u32,
        min_age: u32,
        next: Option<(Level, Level)>,
        mut open: impl FnMut(u32, usize, u64, bool) -> Result<W>,
        mut load: impl FnMut(u32) -> Result<Layers>,
        mut sink: impl FnMut(AgeOutput, W::Written) -> Result<()>,
    ) -> Result<()> {
        let (mut next2, mut next4) =
            next.unwrap_or_else(|| (Level::empty(top + 2), Level::empty(top + 4)));
        let mut age = top;
        let mut buffers = [Vec::new(), Vec::new()];
        // Over several processes: the layers of age n - 2, read a step ahead (their
        // afterstates' 4-spawns look up the level of age n + 2, built at age n).
        let mut ahead: Option<Layers> = None;
        while age >= min_age {
            debug_assert_eq!(next2.age, age + 2);
            debug_assert_eq!(next4.age, age + 4);
            let layers = match ahead.take() {
                Some(layers) => layers,
                None => load(age)?,
            };
            let level = match layers {
                Layers::Whole(states, afterstates) => {
                    let counts = (states.len(), afterstates.len());
                    self.phase(age, Phase::Load, counts);
                    if let Some(ex) = self.distributed() {
                        ahead = self.ghost_levels(
                            ex,
                            (age, min_age),
                            &afterstates,
                            (&mut next2, &mut next4),
                            &mut load,
                        )?;
                    }
                    let next4 = std::mem::replace(&mut next4, Level::empty(age + 4));
                    let layers = (states, afterstates);
                    let levels = (&next2, next4);
                    self.whole_age(age, layers, levels, &mut buffers, &mut open, &mut sink)?
                }
                Layers::Streamed { file, afterstates } => {
                    // Over several processes only where levels hold no others' boards (the
                    // afterstates' table alone takes ghosts, merged in as they are fetched).
                    if self.levels_wait_for_ghosts() {
                        return Err(ghosts::chunked(age));
                    }
                    let next4 = std::mem::replace(&mut next4, Level::empty(age + 4));
                    let levels = (&next2, next4);
                    self.streamed_step(age, (file, afterstates), levels, &mut open, &mut sink)?
                }
            };
            next4 = std::mem::replace(&mut next2, level);
            if age < 2 {
                break;
            }
            age -= 2;
        }
        Ok(())
    }

    /// Tells the phase hook the end of phase `p` of age `age` of `counts` states and
    /// afterstates.
    fn phase(&self, age: u32, p: Phase, (states, afterstates): (usize, usize)) {
        if let Some(hook) = self.phases {
            hook(age, p, states, afterstates);
        }
    }

    /// One age valued whole from its layers, the levels of ages n + 2 and n + 4 (the latter
    /// let go once read); returns its level.
    fn whole_age<W: AgeWriter>(
        &self,
        age: u32,
        (states, afterstates): (Vec<u64>, Vec<u64>),
        (next2, next4): (&Level, Level),
        buffers: &mut [Vec<super::records::StateRec>; 2],
        open: &mut impl FnMut(u32, usize, u64, bool) -> Result<W>,
        sink: &mut impl FnMut(AgeOutput, W::Written) -> Result<()>,
    ) -> Result<Level> {
        let counts = (states.len(), afterstates.len());
        let phase = |p: Phase| self.phase(age, p, counts);
        let after_values = self.afterstate_values(age, &afterstates, next2, &next4)?;
        // Each table goes as soon as nothing reads it, before the next is built, so that
        // at most two big tables exist at once: age n + 4's is read only by age n's
        // afterstates, the afterstates' only by age n's states.
        phase(Phase::AfterstateValues);
        drop(next4);
        let boards = (states.len() + afterstates.len()) as u64;
        let mut writer = open(age, states.len(), boards, false)?;
        // The afterstates' files now, if the writer writes them now, while their table is
        // built: then the afterstates' ids and values go before the states are valued and
        // the age's level is built (beside two state tables they made a big age's peak;
        // `reports/bench/profile.md`, "Figures moved out of the solver's comments").
        let write = || {
            writer.afterstates(Afterstates {
                age,
                states: &states,
                ids: &afterstates,
                values: &after_values,
            })
        };
        // Over several processes too the table holds this process's own afterstates only:
        // the states' look-ups of others' are fetched a segment at a time as they are valued
        // ([`Backward::state_summary`]).
        let (after_table, written) = rayon::join(
            || {
                let value = |j| after_values[j];
                let coding = self.holding.coding;
                ValueTable::from_fn_coded(&afterstates, value, self.k(), self.perfect_from, coding)
            },
            write,
        );
        let written = written?;
        phase(Phase::AfterstateTable);
        let (afterstates, after_values) = if written {
            (Vec::new(), Vec::new())
        } else {
            (afterstates, after_values)
        };
        let summary = self.state_summary(age, &states, &after_table, &mut writer, buffers)?;
        phase(Phase::StatesValued);
        drop(after_table);
        let out = AgeOutput {
            age,
            boards,
            states,
            afterstates,
            summary,
            after_values,
        };
        // The rest of the age's files while its level is built (where levels wait for their
        // ghosts, the first younger age builds it from the layer this one owns).
        let later = self.levels_wait_for_ghosts();
        let (written, table) = rayon::join(
            || writer.finish(&out),
            || {
                if later {
                    return ValueTable::new(&[], &[], self.k());
                }
                let value = |j| out.state_value(j);
                let coding = self.holding.coding;
                ValueTable::from_fn_coded(&out.states, value, self.k(), self.perfect_from, coding)
            },
        );
        let owned = later.then(|| (out.states.clone(), out.summary.values.clone()));
        sink(out, written?)?;
        // Marked once the sink has let go of the age (the peak came before): the next
        // age's load then starts from what the pass keeps.
        phase(Phase::FilesAndLevel);
        Ok(Level { age, table, owned })
    }
}
