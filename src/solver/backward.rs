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

use super::dist::{answer_from, Exchange};
use super::forward::absorbed;
use super::records::{FigureSums, StateRec, Summary, NO_MOVE};
use super::table::{Coding, TableBuilder, ValueTable, Values};
use super::{Result, SolveError};
use crate::rules::board;
use crate::rules::{ForwardClass, Game, Kind, Variant};

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
///
/// Interleaving two blocks' steps was tried and not kept: within a block the misses already
/// overlap enough (`reports/bench/profile.md`).
const BLOCK: usize = 16;

/// Cells of the largest board (4x4).
const MAX_CELLS: usize = 16;

/// No board ([`super::layer::NO_ID`]): a move that is invalid, a cell not spawned on.
const NONE: u64 = super::layer::NO_ID;

/// The refusal of an age valued a chunk at a time over several processes.
fn chunked(age: u32) -> SolveError {
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
fn push_merged(table: &mut TableBuilder, a: (&[u64], &[f64]), b: (&[u64], &[f64]), k: usize) {
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

/// A layer of states with its values, kept while younger ages need it: only its
/// [`ValueTable`] (ids and values in one slot each), the ids and values as vectors go to the
/// writer or are dropped.
pub struct Level {
    pub age: u32,
    /// The values by id, for the look-ups of younger ages.
    table: ValueTable,
    /// In a solve over several processes, until its table is built: the layer this process
    /// owns, with its values (`[i * k + v]`). The table is built once, when the first younger
    /// age looks the level up, from this layer and the values fetched of the boards other
    /// processes own that both younger ages look up ([`Backward::ghost_level`]); `table` is
    /// empty until then.
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

/// Everything the pass found at one age, for all variants (`k` of them, interleaved), handed
/// over (not copied) to whoever stores it. The states' records went to the age's
/// [`AgeWriter`] a segment at a time; what is left of them is their figures and values.
pub struct AgeOutput {
    pub age: u32,
    /// States and afterstates of the age (the vectors below may have been let go).
    pub boards: u64,
    pub states: Vec<u64>,
    /// Empty if the age's writer wrote their files before the states were valued
    /// ([`AgeWriter::afterstates`]).
    pub afterstates: Vec<u64>,
    /// The states' figures per variant and values `[i * k + v]`.
    pub summary: Summary,
    /// `after_values[i * k + v]`; empty with the afterstates.
    pub after_values: Vec<f64>,
}

/// An age's afterstates, valued, and its states' ids (not yet valued): what the age's
/// afterstate files are made of.
#[derive(Clone, Copy)]
pub struct Afterstates<'a> {
    pub age: u32,
    pub states: &'a [u64],
    pub ids: &'a [u64],
    /// `values[i * k + v]`.
    pub values: &'a [f64],
}

impl AgeOutput {
    /// Its afterstates and the ids of its states.
    pub fn afterstates(&self) -> Afterstates<'_> {
        Afterstates {
            age: self.age,
            states: &self.states,
            ids: &self.afterstates,
            values: &self.after_values,
        }
    }

    /// The bytes the age holds (its vectors' lengths).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        (self.states.len() + self.afterstates.len()) * size_of::<u64>()
            + (self.summary.values.len() + self.after_values.len()) * size_of::<f64>()
    }

    /// The value of state `i` for variant `v` as `[i * k + v]` (unclamped).
    pub fn state_value(&self, j: usize) -> f64 {
        self.summary.values[j]
    }
}

/// Where an age's states go as the pass values them (the `states` Parquet of the variants
/// that keep the age), and the age once valued.
pub trait AgeWriter: Send {
    /// What the age's files came to.
    type Written: Send;
    /// What the writer needs of the states' records.
    fn wants(&self) -> Wants;
    /// The age's afterstates, valued, before its states are: a writer that writes their
    /// files now says `true`, and the pass lets go of them (their ids and values, 16 bytes
    /// each) before it values the states. By default (`false`) they are kept for
    /// [`AgeWriter::finish`] and whoever receives the age.
    fn afterstates(&mut self, _: Afterstates<'_>) -> Result<bool> {
        Ok(false)
    }
    /// A streamed age's afterstate figures, in place of [`AgeWriter::afterstates`] (the ids
    /// and values never exist whole): only a writer of the policy layout can take them.
    fn afterstate_figures(&mut self, _: &AfterFigures) -> Result<()> {
        Err(SolveError::Internal(
            "this writer needs the afterstates whole (a streamed age writes the policy layout only)"
                .into(),
        ))
    }
    /// A streamed age's state values (`[i * k + v]`), the next in row order: they exist no
    /// longer than a segment, so a writer that keeps them (for a resume) takes them here.
    fn state_values(&mut self, _: &[f64]) -> Result<()> {
        Ok(())
    }
    /// The records of the next states of the age, `ids` in row order: `recs[i * k + v]` for
    /// `i < ids.len()` (the vector may be longer). The writer may take the vector.
    fn states(&mut self, ids: &[u64], recs: &mut Vec<StateRec>) -> Result<()>;
    /// The valued age (the pass builds its level table meanwhile).
    fn finish(self, out: &AgeOutput) -> Result<Self::Written>;
}

/// A streamed age's afterstates as figures, summed as their chunks are valued: the ages
/// table's columns about them and what the manifest's largest tile comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterFigures {
    pub states: u64,
    pub afterstates: u64,
    /// Empty cells over all afterstates (an integer: its mean is the bits of the whole age's).
    pub empty_cells: u64,
    /// Per variant, the largest afterstate value as stored (clamped).
    pub best: Vec<Option<f64>>,
    /// The largest exponent of any cell of the age's states and afterstates.
    pub max_exponent: u8,
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

/// Ids of a streamed age's chunks (read from its work file, valued, pushed to the tables):
/// their ids, values and records are part of the budget's fixed part (`plan::FIXED`).
const STREAM_CHUNK: usize = 1 << 20;

/// What an [`AgeWriter`] needs of an age's records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wants {
    /// Only the figures and values the pass folds from them.
    Figures,
    /// Every record, in segments of this many states: the pass makes an age's records a
    /// segment at a time and hands each over while it makes the next, so that the records of
    /// a whole age never exist at once. It folds the figures as they go.
    Segments(usize),
    /// The age's records in one piece, their figures unfolded (the writer sums them:
    /// [`Summary::figures`] is left empty).
    Whole,
}

/// A writer that writes nothing: for solves held in memory.
pub struct NoFiles;

impl AgeWriter for NoFiles {
    type Written = ();
    fn wants(&self) -> Wants {
        Wants::Figures
    }
    fn states(&mut self, _: &[u64], _: &mut Vec<StateRec>) -> Result<()> {
        Ok(())
    }
    fn finish(self, _: &AgeOutput) -> Result<()> {
        Ok(())
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
    /// Over several processes: the afterstates of an age this process's states move to that
    /// others own, as the forward pass kept them (`None`: made again from the states).
    asked: Option<Asked<'g>>,
}

/// The afterstates of an age asked of other processes, as the forward pass kept them.
pub type Asked<'g> = &'g (dyn Fn(u32) -> Option<Vec<u64>> + Sync);

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
            asked: None,
        })
    }

    /// The pass as one of the processes of `ex`: each age's boards are the ones this process
    /// owns, and the values of the boards it looks up that others own are fetched from them
    /// before each look-up phase (nothing is, in one process).
    pub fn with_exchange(mut self, ex: &'g Exchange<'g>) -> Backward<'g> {
        self.exchange = Some(ex);
        self
    }

    /// Where the forward pass's afterstates asked of others are read from (instead of moving
    /// every state again and sorting what others own).
    pub fn with_asked(mut self, asked: Asked<'g>) -> Backward<'g> {
        self.asked = Some(asked);
        self
    }

    /// The exchange of a solve over several processes.
    fn distributed(&self) -> Option<&'g Exchange<'g>> {
        self.exchange.filter(|ex| !ex.is_single())
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
        if self.distributed().is_some() {
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
    /// `top + 2` and `top + 4` when resuming (empty levels otherwise). `open(age, boards)` gives
    /// the writer of an age of `boards` states and afterstates before its states are valued; `sink` receives each age with what its
    /// writer returned; the level of that age is then kept for younger ages.
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
            let (states, afterstates) = match layers {
                Layers::Whole(states, afterstates) => (states, afterstates),
                Layers::Streamed { file, afterstates } => {
                    if self.distributed().is_some() {
                        return Err(chunked(age));
                    }
                    let counts = (file.states() as usize, afterstates);
                    let boards = (counts.0 + counts.1) as u64;
                    let mut writer = open(age, counts.0, boards, true)?;
                    let hook = |p: Phase| {
                        if let Some(hook) = self.phases {
                            hook(age, p, counts.0, counts.1);
                        }
                    };
                    let (out, table) = self.streamed_age(
                        age,
                        &file,
                        afterstates,
                        &next2,
                        next4,
                        &mut writer,
                        &hook,
                    )?;
                    drop(file);
                    let written = writer.finish(&out)?;
                    sink(out, written)?;
                    hook(Phase::FilesAndLevel);
                    next4 = std::mem::replace(&mut next2, Level::from_table(age, table));
                    if age < 2 {
                        break;
                    }
                    age -= 2;
                    continue;
                }
            };
            let counts = (states.len(), afterstates.len());
            let phase = |p: Phase| {
                if let Some(hook) = self.phases {
                    hook(age, p, counts.0, counts.1);
                }
            };
            phase(Phase::Load);
            // Over several processes: each level's table is built once, with the values of the
            // boards others own that both its younger ages look up: age n + 2's, for this age's
            // 2-spawns and age n - 2's 4-spawns (read a step ahead); age n + 4's was built at
            // age n + 2 (or, on a resume, is built now for this age's 4-spawns alone).
            if let Some(ex) = self.distributed() {
                // Where spawns stay home no level holds others' boards: nothing to read ahead.
                let home = ex.parts().spawns_stay_home();
                let younger = if age >= min_age + 2 && !home {
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
                    next4 = self.ghost_level(ex, next4, &[(&afterstates, 1)])?;
                }
                next2 = self.ghost_level(ex, next2, &[(&afterstates, 0), (younger_after, 1)])?;
                ahead = younger;
            }
            let after_values = self.afterstate_values(age, &afterstates, &next2, &next4)?;
            // Each table goes as soon as nothing reads it, before the next is built, so that
            // at most two big tables exist at once: age n + 4's is read only by age n's
            // afterstates, the afterstates' only by age n's states.
            phase(Phase::AfterstateValues);
            drop(std::mem::replace(&mut next4, Level::empty(age + 4)));
            let boards = (states.len() + afterstates.len()) as u64;
            let mut writer = open(age, states.len(), boards, false)?;
            // Over several processes: the afterstates' table holds those of this process's
            // moves that others own too, with the values fetched from them.
            let ghosted = match self.distributed() {
                Some(ex) => {
                    Some(self.ghosted_afterstates(ex, age, &states, &afterstates, &after_values)?)
                }
                None => None,
            };
            // The afterstates' files now, if the writer writes them now, while their table is
            // built: then the afterstates' ids and values go before the states are valued and
            // the age's level is built (beside two state tables they made a big age's peak:
            // 4x3 `goal-128 --layout compact`, 1,033 MB at its largest age while the files
            // were written as the level was built, 905–965 MB since).
            let (after_table, written) = rayon::join(
                || match &ghosted {
                    // Its own afterstates and those asked of others, merged as they are pushed.
                    Some((asked, asked_values)) => {
                        let mut table = self.table_builder(afterstates.len() + asked.len());
                        push_merged(
                            &mut table,
                            (&afterstates, &after_values),
                            (asked, asked_values),
                            self.k(),
                        );
                        table.finish()
                    }
                    None => {
                        let value = |j| after_values[j];
                        let coding = self.holding.coding;
                        ValueTable::from_fn_coded(
                            &afterstates,
                            value,
                            self.k(),
                            self.perfect_from,
                            coding,
                        )
                    }
                },
                || {
                    writer.afterstates(Afterstates {
                        age,
                        states: &states,
                        ids: &afterstates,
                        values: &after_values,
                    })
                },
            );
            let written = written?;
            drop(ghosted);
            phase(Phase::AfterstateTable);
            let (afterstates, after_values) = if written {
                (Vec::new(), Vec::new())
            } else {
                (afterstates, after_values)
            };
            let summary =
                self.state_summary(age, &states, &after_table, &mut writer, &mut buffers)?;
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
            // The rest of the age's files while its level is built (over several processes,
            // each younger age builds its own from the layer this one owns).
            let distributed = self.distributed().is_some();
            let (written, table) = rayon::join(
                || writer.finish(&out),
                || {
                    if distributed {
                        return ValueTable::new(&[], &[], self.k());
                    }
                    let value = |j| out.state_value(j);
                    let coding = self.holding.coding;
                    ValueTable::from_fn_coded(
                        &out.states,
                        value,
                        self.k(),
                        self.perfect_from,
                        coding,
                    )
                },
            );
            let owned = distributed.then(|| (out.states.clone(), out.summary.values.clone()));
            sink(out, written?)?;
            // Marked once the sink has let go of the age (the peak came before): the next
            // age's load then starts from what the pass keeps.
            phase(Phase::FilesAndLevel);
            next4 = std::mem::replace(&mut next2, Level { age, table, owned });
            if age < 2 {
                break;
            }
            age -= 2;
        }
        Ok(())
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
        file: &crate::store::idcodec::LayerFile,
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
            .map(super::records::clamp_for)
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
            if file.afterstates() > 0 {
                for chunk in file.afterstate_chunks(STREAM_CHUNK) {
                    value_chunk(&chunk.map_err(damaged)?)?;
                }
            } else {
                let made = super::forward::afterstates_of(
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
        let mut recs: Vec<StateRec> = Vec::new();
        let mut values: Vec<f64> = Vec::new();
        for chunk in states() {
            let chunk = chunk?;
            fig.max_exponent = fig.max_exponent.max(max_exponent_of(&chunk));
            for ids in chunk.chunks(self.segment.max(1)) {
                let len = ids.len() * k;
                recs.resize(len, StateRec::default());
                self.records_into(age, ids, &after_table, &mut recs[..len])?;
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

    /// Over several processes: `level`'s table, of the boards this process owns and, fetched
    /// from their owners, the boards others own that the afterstates of `readers` look up
    /// (each with the tile it spawns: 0 for a 2, 1 for a 4). Collective.
    fn ghost_level(
        &self,
        ex: &Exchange,
        level: Level,
        readers: &[(&[u64], usize)],
    ) -> Result<Level> {
        let (game, class, k) = (self.game, self.class, self.k());
        let (ids, values) = level.owned.unwrap_or_default();
        if ex.parts().spawns_stay_home() {
            // Every child of this process's afterstates is its own: no ghosts, no fetch (every
            // process skips it alike).
            let mut table = self.table_builder(ids.len());
            table.push(&ids, &values);
            return Ok(Level::from_table(level.age, table.finish()));
        }
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
        let wanted = super::layer::sort_dedup_pieces(pieces);
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
    fn ghosted_afterstates(
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
    fn asked_again(&self, ex: &Exchange, states: &[u64]) -> Vec<u64> {
        let (game, class) = (self.game, self.class);
        let wanted: Vec<u64> = states
            .par_chunks(CHUNK)
            .flat_map_iter(|chunk| {
                let mut out = Vec::new();
                for &s in chunk {
                    if absorbed(&class, s) {
                        continue;
                    }
                    for (a, _) in game.rules.moves(s).into_iter().flatten() {
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
        super::layer::sort_dedup(wanted)
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
        in_chunks(afterstates, &mut out, k, |ids, vals| {
            self.afterstate_chunk(ids, vals, next2, next4, &missing)
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

    /// The figures and values of an age's states, their records made a segment at a time
    /// (the writer's, else [`SEGMENT`] states) and folded in row order (the bits of
    /// [`super::records::state_figures`] over all of them) and handed to `writer`. A segment
    /// is folded and written while the next one's records are made, so that no core waits for
    /// either.
    fn state_summary<W: AgeWriter>(
        &self,
        age: u32,
        states: &[u64],
        after_table: &ValueTable,
        writer: &mut W,
        buffers: &mut [Vec<StateRec>; 2],
    ) -> Result<Summary> {
        let k = self.k();
        let segment = match writer.wants() {
            Wants::Figures => self.segment,
            Wants::Segments(n) => n,
            Wants::Whole => {
                // Made at once, handed over whole; only the values are taken here.
                let [making, _] = buffers;
                let len = states.len() * k;
                if making.len() < len {
                    making.resize(len, StateRec::default());
                }
                self.records_into(age, states, after_table, &mut making[..len])?;
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
        let mut sums: Vec<FigureSums> = self.variants.iter().map(FigureSums::new).collect();
        let mut values = Vec::with_capacity(states.len() * k);
        // `recs` holds the records of `ids` first; the writer may take the vector.
        let mut fold = |ids: &[u64], recs: &mut Vec<StateRec>| -> Result<()> {
            for rec in recs[..ids.len() * k].chunks_exact(k) {
                for (sum, r) in sums.iter_mut().zip(rec) {
                    sum.add(r);
                    values.push(r.value);
                }
            }
            if wants && !ids.is_empty() {
                writer.states(ids, recs)?;
            }
            Ok(())
        };
        // The segment being made, and the one before it (`made_ids`), waiting to be folded;
        // their buffers are kept from age to age (fresh ones would be paged in every time).
        let [mut making, mut made] = std::mem::take(buffers);
        let mut made_ids: &[u64] = &[];
        for ids in states.chunks(segment) {
            let len = ids.len() * k;
            if making.len() < len {
                making.resize(len, StateRec::default());
            }
            let recs = &mut making[..len];
            let (done, folded) = if ids.len() <= CHUNK {
                // A small segment: both here, without a round trip through the pool's threads.
                (
                    self.records_into(age, ids, after_table, recs),
                    fold(made_ids, &mut made),
                )
            } else {
                rayon::join(
                    || self.records_into(age, ids, after_table, recs),
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
        in_chunks(states, out, k, |ids, recs| {
            self.state_chunk(ids, recs, after_table, &missing)
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
        // Per variant, the q of each move of the state at hand (valid moves only are read).
        let mut qs = vec![[f64::NEG_INFINITY; 4]; k];
        // Per state of the block and move: the canonical afterstate ([`NONE`] if the move is
        // invalid) and its reward.
        let mut after = [[NONE; 4]; BLOCK];
        let mut reward = [[0u32; 4]; BLOCK];
        // Where each afterstate's look-up found its part, and where each direction's last
        // one did (the moves of states in their order are close in the afterstates' order).
        let mut part = [[0u32; 4]; BLOCK];
        let mut hint = [0u32; 4];
        // Per state of the block: the goal tile is on it (asked once).
        let mut done = [false; BLOCK];
        // What an absorbed state's record is, whole: a reused buffer holds an earlier state's.
        let absorbed_rec = StateRec {
            value: 1.0,
            ..StateRec::default()
        };
        for (block, recs) in ids.chunks(BLOCK).zip(recs.chunks_mut(BLOCK * k)) {
            for (j, &s) in block.iter().enumerate() {
                after[j] = [NONE; 4];
                done[j] = absorbed(&class, s);
                if done[j] {
                    continue;
                }
                for (di, m) in game.rules.moves(s).into_iter().enumerate() {
                    if let Some((a, r)) = m {
                        let c = game.canon(a);
                        after_table.prefetch(c, &mut hint[di]);
                        after[j][di] = c;
                        part[j][di] = hint[di];
                        reward[j][di] = r;
                    }
                }
            }
            if after_table.two_step() {
                for (moves, at) in after.iter_mut().zip(&part).take(block.len()) {
                    for (a, &p) in moves.iter_mut().zip(at) {
                        if *a != NONE {
                            *a = after_table.locate(*a, p);
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
                    let Some(values) = after_table.at(after[j][di]) else {
                        missing.store(true, Ordering::Relaxed);
                        continue;
                    };
                    moves += 1;
                    for (vi, (b, var)) in best.iter_mut().zip(&self.variants).enumerate() {
                        // Reward plus afterstate value, or γ times it (discounted goal).
                        let q = var.q(reward[j][di], values.get(vi));
                        qs[vi][di] = q;
                        if q > b.0 {
                            *b = (q, b.0, di as u8);
                        } else if q > b.1 {
                            b.1 = q;
                        }
                    }
                }
                for ((x, b), q) in r.iter_mut().zip(&best).zip(&qs) {
                    *x = if moves == 0 {
                        StateRec::default()
                    } else {
                        StateRec {
                            value: b.0,
                            gap: if moves >= 2 { b.0 - b.1 } else { f64::NAN },
                            best: b.2,
                            moves,
                            terminal: false,
                            optimal: optimal_mask(&after[j], q, b.0),
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

/// The largest exponent of any cell of `ids`.
fn max_exponent_of(ids: &[u64]) -> u8 {
    crate::index::max_exponent(ids.iter().copied())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::rules::variant::Given;
    use crate::rules::{Group, Shape};
    use crate::solver::forward::{self, AgeLayer, Start};
    use crate::solver::records::StateFigures;
    use crate::solver::records::{state_figures, FigureSums};

    /// A writer that keeps every record it is handed, in segments of `segment` states.
    struct Recorder {
        k: usize,
        segment: Option<usize>,
        ids: Vec<u64>,
        recs: Vec<StateRec>,
        pushes: usize,
    }

    impl AgeWriter for Recorder {
        type Written = (Vec<u64>, Vec<StateRec>, usize);
        fn wants(&self) -> Wants {
            match self.segment {
                None => Wants::Figures,
                Some(usize::MAX) => Wants::Whole,
                Some(n) => Wants::Segments(n),
            }
        }
        fn states(&mut self, ids: &[u64], recs: &mut Vec<StateRec>) -> Result<()> {
            let seg = self.segment.expect("records only when asked for");
            assert!(ids.len() <= seg && !ids.is_empty());
            assert!(
                self.ids.len().is_multiple_of(seg),
                "every segment but the last is full"
            );
            self.ids.extend_from_slice(ids);
            if self.pushes % 2 == 1 {
                // Taken: the pass must make its next segment in a vector of its own.
                let mut taken = std::mem::take(recs);
                taken.truncate(ids.len() * self.k);
                self.recs.append(&mut taken);
            } else {
                self.recs.extend_from_slice(&recs[..ids.len() * self.k]);
            }
            self.pushes += 1;
            Ok(())
        }
        fn finish(self, _: &AgeOutput) -> Result<Self::Written> {
            Ok((self.ids, self.recs, self.pushes))
        }
    }

    /// A record's fields, its floats as bits (a gap may be NaN), to compare records exactly.
    fn rec_bits(r: &StateRec) -> (u64, u64, u8, u8, bool) {
        let (value, gap) = (r.value, r.gap);
        (value.to_bits(), gap.to_bits(), r.best, r.moves, r.terminal)
    }

    type Solved = Vec<(AgeOutput, (Vec<u64>, Vec<StateRec>, usize))>;

    /// States and afterstates by age.
    type Layered = BTreeMap<u32, (Vec<u64>, Vec<u64>)>;

    /// The forward pass's layers by age, its top and bottom ages.
    fn forward_layers(game: &Game, variants: &[Variant]) -> (Layered, u32, u32) {
        let class = variants[0].forward_class();
        let mut layers = BTreeMap::new();
        let top = forward::run(game, &class, Start::Fresh, |l: AgeLayer| {
            layers.insert(l.age, (l.states, l.afterstates));
            Ok(())
        })
        .unwrap();
        let bottom = *layers.keys().next().unwrap();
        (layers, top, bottom)
    }

    /// Every age of a solve, in memory, its records handed over in segments of `records`
    /// states (or not at all), folded in segments of `segment` otherwise.
    fn solve(game: &Game, variants: &[Variant], records: Option<usize>, segment: usize) -> Solved {
        solve_with(
            game,
            variants,
            records,
            segment,
            super::super::table::PERFECT_FROM,
        )
    }

    /// [`solve`] with the pass's tables perfect hashes from `perfect_from` ids on.
    fn solve_with(
        game: &Game,
        variants: &[Variant],
        records: Option<usize>,
        segment: usize,
        perfect_from: usize,
    ) -> Solved {
        let (mut layers, top, bottom) = forward_layers(game, variants);
        let mut pass = Backward::new(game, variants).unwrap();
        pass.segment = segment;
        pass.perfect_from = perfect_from;
        let mut out = Vec::new();
        pass.run(
            top,
            bottom,
            None,
            |_, _, _, _| {
                Ok(Recorder {
                    k: variants.len(),
                    segment: records,
                    ids: Vec::new(),
                    recs: Vec::new(),
                    pushes: 0,
                })
            },
            |age| {
                let (s, a) = layers.remove(&age).unwrap_or_default();
                Ok(Layers::Whole(s, a))
            },
            |o, written| {
                out.push((o, written));
                Ok(())
            },
        )
        .unwrap();
        out
    }

    /// A writer that keeps what a streamed age hands over: its state values and afterstate
    /// figures.
    #[derive(Default)]
    struct Kept {
        values: Vec<f64>,
        fig: Option<AfterFigures>,
    }

    impl AgeWriter for Kept {
        type Written = (Vec<f64>, Option<AfterFigures>);
        fn wants(&self) -> Wants {
            Wants::Figures
        }
        fn afterstate_figures(&mut self, fig: &AfterFigures) -> Result<()> {
            self.fig = Some(fig.clone());
            Ok(())
        }
        fn state_values(&mut self, values: &[f64]) -> Result<()> {
            self.values.extend_from_slice(values);
            Ok(())
        }
        fn states(&mut self, _: &[u64], _: &mut Vec<StateRec>) -> Result<()> {
            Ok(())
        }
        fn finish(self, _: &AgeOutput) -> Result<Self::Written> {
            Ok((self.values, self.fig))
        }
    }

    /// Per age: the state values (bits) and figures of a pass holding `holding`, every age
    /// whole or every age streamed from its encoded layer file (which keeps the afterstates at
    /// every other age, so both the read and the made-again afterstates are valued).
    fn values_of(
        game: &Game,
        variants: &[Variant],
        holding: Holding,
        streamed: bool,
    ) -> Vec<(u32, Vec<u64>, Vec<StateFigures>)> {
        let (mut layers, top, bottom) = forward_layers(game, variants);
        let mut pass = Backward::new(game, variants).unwrap().with_holding(holding);
        pass.segment = 7;
        pass.perfect_from = 64;
        let mut out = Vec::new();
        pass.run(
            top,
            bottom,
            None,
            |_, _, _, _| Ok(Kept::default()),
            |age| {
                let (s, a) = layers.remove(&age).unwrap_or_default();
                if !streamed || s.is_empty() {
                    return Ok(Layers::Whole(s, a));
                }
                let kept: &[u64] = if age % 4 == 0 { &a } else { &[] };
                let bytes = crate::store::idcodec::encode(age, &s, kept);
                Ok(Layers::Streamed {
                    file: crate::store::idcodec::LayerFile::open(bytes, age).unwrap(),
                    afterstates: a.len(),
                })
            },
            |o, (values, _)| {
                let values = if o.summary.values.is_empty() {
                    values
                } else {
                    o.summary.values.clone()
                };
                out.push((
                    o.age,
                    values.iter().map(|v| v.to_bits()).collect(),
                    o.summary.figures.iter().map(FigureSums::figures).collect(),
                ));
                Ok(())
            },
        )
        .unwrap();
        out
    }

    /// An age valued a chunk at a time (ids from its work file, afterstates read or made
    /// again within a cap that packs them, tables built as the values come) gets the bits of
    /// the same age valued whole, with f64 tables and with fixed-point ones; and fixed point
    /// at 2^-31 is within a few units of it of the f64 values.
    #[test]
    fn streamed_ages_are_valued_as_whole_ones() {
        for (shape, variant) in [((2, 4), "expectation"), ((3, 3), "goal-32")] {
            let game = Game::new(Shape::new(shape.0, shape.1).unwrap(), Group::Full);
            let variants = [Variant::parse(variant, Given::default()).unwrap()];
            let fixed = Coding::Fixed32 {
                fraction_bits: if variants[0].scored() { 16 } else { 31 },
            };
            let held = |coding, cap| Holding { coding, cap };
            // Whole and streamed under each coding, then fixed point streamed with no cap. The
            // cap bounds only the afterstates a streamed age makes again, so the whole f64
            // run is also the exact one the rounded values are held to.
            let runs = [
                (held(Coding::F64, 50), false),
                (held(Coding::F64, 50), true),
                (held(fixed, 50), false),
                (held(fixed, 50), true),
                (held(fixed, usize::MAX), true),
            ];
            // The runs at once: segments of seven states keep each mostly on one thread.
            let out: Vec<_> = std::thread::scope(|scope| {
                let runs: Vec<_> = runs
                    .iter()
                    .map(|(holding, streamed)| {
                        scope.spawn(|| values_of(&game, &variants, holding.clone(), *streamed))
                    })
                    .collect();
                runs.into_iter().map(|r| r.join().unwrap()).collect()
            });
            for (whole, streamed, coding) in [(0, 1, Coding::F64), (2, 3, fixed)] {
                let (whole, streamed) = (&out[whole], &out[streamed]);
                assert_eq!(whole.len(), streamed.len());
                for (w, s) in whole.iter().zip(streamed) {
                    assert_eq!(w, s, "{variant}, {coding:?}, age {}", w.0);
                }
            }
            let (exact, rounded) = (&out[0], &out[4]);
            assert_eq!(exact.len(), rounded.len());
            let tolerance = if variants[0].scored() { 1e-2 } else { 1e-7 };
            for (e, r) in exact.iter().zip(rounded) {
                for (&a, &b) in e.1.iter().zip(&r.1) {
                    let (a, b) = (f64::from_bits(a), f64::from_bits(b));
                    assert!((a - b).abs() <= tolerance, "age {}: {a} against {b}", e.0);
                }
            }
        }
    }

    /// A state holding the goal tile (a start holding a 4, under `goal-4`) is recorded whole
    /// as absorbed: its value 1, terminal, no move, whatever record its place in a buffer kept
    /// from an earlier segment or age held. Regression: only the value was written, so such a
    /// start kept the moves and best move of the state valued there before it, and 4x4
    /// `goal-4 --layout compact` counted 30 terminal states at age 6 where there are 33.
    #[test]
    fn absorbed_states_are_recorded_whole_in_reused_buffers() {
        let game = Game::new(Shape::new(4, 4).unwrap(), Group::Full);
        let variants = [Variant::parse("goal-4", Given::default()).unwrap()];
        let class = variants[0].forward_class();
        let absorbed_rec = StateRec {
            value: 1.0,
            ..StateRec::default()
        };
        let mut seen = 0;
        for (records, segment) in [(Some(5), SEGMENT), (None, 7), (None, SEGMENT)] {
            for (out, (ids, recs, _)) in solve(&game, &variants, records, segment) {
                // Terminal: the goal tile on the board, or no valid move.
                let terminal = out
                    .states
                    .iter()
                    .filter(|&&s| {
                        absorbed(&class, s) || game.rules.moves(s).iter().all(Option::is_none)
                    })
                    .count() as u64;
                assert_eq!(
                    out.summary.figures[0].figures().n_terminal_states,
                    terminal,
                    "age {}",
                    out.age
                );
                for (&s, r) in ids.iter().zip(&recs) {
                    if absorbed(&class, s) {
                        assert_eq!(
                            rec_bits(r),
                            rec_bits(&absorbed_rec),
                            "age {} state {s:x}",
                            out.age
                        );
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen > 0, "no start holds a 4");
    }

    /// The look-ups in perfect tables (whose parts are found from each stream's last: a spawn
    /// on a cell, a move in a direction) give every state's record the open tables give, bit
    /// for bit, over boards and variants of both tiles, one tile, and several at once.
    #[test]
    fn perfect_tables_give_the_records_of_open_ones() {
        for (shape, names) in [
            ((3, 3), &["goal-128"][..]),
            ((2, 4), &["expectation", "optimistic", "pessimistic"]),
            ((4, 4), &["goal-8"]),
            ((2, 3), &["goal-8-p4=0"]),
        ] {
            let game = Game::new(Shape::new(shape.0, shape.1).unwrap(), Group::Full);
            let variants: Vec<Variant> = names
                .iter()
                .map(|n| Variant::parse(n, Given::default()).unwrap())
                .collect();
            let open = solve_with(&game, &variants, Some(usize::MAX), SEGMENT, usize::MAX);
            let perfect = solve_with(&game, &variants, Some(usize::MAX), SEGMENT, 0);
            assert_eq!(open.len(), perfect.len());
            for ((o, (_, o_recs, _)), (p, (_, p_recs, _))) in open.iter().zip(&perfect) {
                let bits = |r: &[StateRec]| r.iter().map(rec_bits).collect::<Vec<_>>();
                assert_eq!(o.age, p.age);
                assert_eq!(bits(o_recs), bits(p_recs), "{shape:?} age {}", o.age);
            }
        }
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

    /// The records handed to the writer in segments are every state's, in row order; the
    /// figures and values folded from them (in segments of any length, records wanted or not)
    /// are those of [`state_figures`] over all of them at once.
    fn check_summaries(game: &Game, variants: &[Variant]) {
        let k = variants.len();
        let full = solve(game, variants, Some(1 << 20), SEGMENT);
        let cases = [
            (None, 1),
            (None, 7),
            (None, 64),
            (Some(5), SEGMENT),
            (Some(usize::MAX), 3),
        ];
        for (records, segment) in cases {
            let summed = solve(game, variants, records, segment);
            assert_eq!(full.len(), summed.len());
            let mut segmented = 0;
            for ((f, (ids, recs, _)), (s, (s_ids, s_recs, pushes))) in full.iter().zip(&summed) {
                assert_eq!(
                    (f.age, &f.states, &f.afterstates),
                    (s.age, &s.states, &s.afterstates)
                );
                assert_eq!(
                    ids, &f.states,
                    "age {}: every state's records, in order",
                    f.age
                );
                match records {
                    Some(n) => {
                        // Compared bit for bit (a gap may be NaN).
                        let keys = |r: &[StateRec]| r.iter().map(rec_bits).collect::<Vec<_>>();
                        assert_eq!((s_ids, keys(s_recs)), (ids, keys(recs)));
                        assert_eq!(*pushes, s.states.len().div_ceil(n));
                    }
                    None => assert!(s_recs.is_empty() && *pushes == 0),
                }
                let bits = |x: f64| x.to_bits();
                let want: Vec<u64> = recs.iter().map(|r| bits(r.value)).collect();
                assert_eq!(
                    s.summary
                        .values
                        .iter()
                        .copied()
                        .map(bits)
                        .collect::<Vec<_>>(),
                    want
                );
                if records == Some(usize::MAX) {
                    assert!(
                        s.summary.figures.is_empty(),
                        "the writer sums a whole age's"
                    );
                    continue;
                }
                for (vi, v) in variants.iter().enumerate() {
                    let want = state_figures(recs, f.states.len(), k, vi, v).figures();
                    let got = s.summary.figures[vi].figures();
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
                segmented +=
                    usize::from(s.states.len() > segment.min(records.unwrap_or(usize::MAX)));
            }
            if records != Some(usize::MAX) {
                assert!(segmented > 0, "no age of more than {segment} states");
            }
        }
    }
}
