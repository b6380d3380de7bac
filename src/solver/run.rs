//! One solve: runs the forward and backward passes for a board and a set of variants, and
//! records what they find through the store, resumably.
//!
//! Variants are grouped by [`ForwardClass`]; each class gets one forward pass and one backward
//! pass that values all its variants together. Progress is recorded after every finished age
//! (forward: the layers; backward: the outputs, then the state values the next age needs, then
//! the age's record), so a killed solve started again picks up after its last finished age and
//! writes the same bytes.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::backward::{
    AfterFigures, Afterstates, AgeOutput, AgeWriter, Backward, Holding, Layers, Level, Phase, Wants,
};
use super::budget::Budget;
use super::checkpoint::Checkpointer;
use super::dist::Exchange;
use super::forward::{self, AgeLayer, ForwardPlan, Start};
use super::output::{AgeFiles, Files};
use super::records::{FigureSums, StateRec};
use super::{Result, SolveError};
use crate::rules::board;
use crate::rules::{ForwardClass, Game, Group, Kind, Shape, Symmetry, Variant};
use crate::store::parquet::ages_parquet;
use crate::store::work::{BackwardProgress, ForwardProgress, ValuesWriter, WorkDir, WorkMeta};
use crate::store::{
    AgeStats, FileEntry, LayoutKind, Manifest, Storage, Store, StoreError, Timings, LAYOUT_VERSION,
};

/// What to solve.
#[derive(Clone, Debug)]
pub struct SolveConfig {
    pub shape: Shape,
    pub group: Group,
    pub variants: Vec<Variant>,
    /// Solve again even if the data directory already holds a complete solve.
    pub force: bool,
    /// Bytes to leave free on the data directory's file system: before each age is written,
    /// the solve checks that its files fit with this much to spare, and stops (resumably)
    /// otherwise.
    pub min_free: u64,
    /// How the solve is stored (the full layout by default).
    pub storage: StorageRequest,
    /// Bytes of finished ages the backward pass may hand over before they are written
    /// ([`DEFAULT_WRITE_AHEAD`]; one age of any size always goes): an age whose files fit
    /// within it is written off the pass, a bigger one as the pass values it; with 0, every
    /// age is. The files are the same bytes either way.
    pub write_ahead: u64,
    /// The memory budget in bytes (`solve --memory`; [`super::plan`]).
    pub memory: u64,
    /// Pack layers beyond this many ids and value every age streamed, whatever fits (the
    /// tests' way to run the budgeted paths on small boards; `solve --stream-cap`).
    pub stream_cap: Option<usize>,
    /// Report the process's peak resident memory at the end of every age of the forward pass
    /// and every phase of an age of the backward pass ([`Event::Memory`]; the peak is reset
    /// after each, see [`super::memory`]).
    pub trace_memory: bool,
    /// The fixed part the memory plan assumes instead of `plan::FIXED` (the tests' way to
    /// plan a small board's budget as a big one's; `solve --fixed-memory`).
    pub fixed_memory: Option<u64>,
    /// How often finished ages are recorded as done instead of [`CHECKPOINT`] (the tests'
    /// way to make the processes of a job record different ages; `solve --checkpoint-every`).
    pub checkpoint_every: Option<Duration>,
}

/// How to store a solve, as asked: the layout, and for the compact one the precision of its
/// values and the ages it also writes as Parquet. [`StorageRequest::for_variant`] gives the
/// [`Storage`] of each variant (the default precision depends on what the values are).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageRequest {
    pub layout: LayoutKind,
    pub precision: Precision,
    pub parquet_ages: Option<(u32, u32)>,
    /// Policy layout: keep the moves of the states optimal play reaches only
    /// ([`super::reach`]).
    pub reach: bool,
}

/// The precision of a compact solve's stored values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// [`DEFAULT_POINTS_FRACTION_BITS`] for points, [`DEFAULT_PROBABILITY_FRACTION_BITS`]
    /// for probabilities.
    #[default]
    Default,
    /// Every bit of the f64.
    F64,
    /// Fixed point at `2^-bits`.
    FractionBits(u8),
}

/// Fraction bits of points in the compact layout: Kaneko & Yamashita's 2^-16 (a 4x3 value
/// below 65,536 in 32 bits).
pub const DEFAULT_POINTS_FRACTION_BITS: u8 = 16;
/// Fraction bits of probabilities in the compact layout (33 bits a value: 1 is 2^32).
pub const DEFAULT_PROBABILITY_FRACTION_BITS: u8 = 32;

impl StorageRequest {
    /// The full layout.
    pub const FULL: StorageRequest = StorageRequest {
        layout: LayoutKind::Full,
        precision: Precision::Default,
        parquet_ages: None,
        reach: false,
    };

    /// The storage of variant `v`.
    pub fn for_variant(&self, v: &Variant) -> Storage {
        match self.layout {
            LayoutKind::Full => Storage::FULL,
            LayoutKind::Policy => Storage {
                layout: LayoutKind::Policy,
                value_fraction_bits: None,
                parquet_ages: None,
                reach: self.reach,
            },
            LayoutKind::Compact => Storage {
                layout: LayoutKind::Compact,
                value_fraction_bits: match self.precision {
                    Precision::F64 => None,
                    Precision::FractionBits(b) => Some(b),
                    Precision::Default if v.scored() => Some(DEFAULT_POINTS_FRACTION_BITS),
                    Precision::Default => Some(DEFAULT_PROBABILITY_FRACTION_BITS),
                },
                parquet_ages: self.parquet_ages,
                reach: false,
            },
        }
    }
}

/// The default of [`SolveConfig::min_free`]: 256 MiB.
pub const DEFAULT_MIN_FREE: u64 = 256 << 20;

/// Progress events, for a progress bar.
#[derive(Clone, Debug)]
pub enum Event {
    /// The forward pass finished an age.
    Forward {
        age: u32,
        states: usize,
        afterstates: usize,
    },
    /// The backward pass starts at `top` and will go down to `min_age`, valuing `boards`
    /// states and afterstates in all.
    BackwardStart { top: u32, min_age: u32, boards: u64 },
    /// The backward pass finished (and stored) an age of `boards` states and afterstates.
    Backward { age: u32, boards: u64 },
    /// How the backward pass will hold its tables and what the rest of the run will take on
    /// disk, before it starts.
    Plan { text: String },
    /// Resumed after a finished age.
    Resumed { pass: &'static str, age: u32 },
    /// A work file was missing or damaged: `redo` says what is done again.
    Damaged { problem: String, redo: String },
    /// The end of a phase of an age ([`SolveConfig::trace_memory`]): the process's peak
    /// resident bytes during the phase, and what is resident at its end. The forward pass has
    /// one phase an age (`made`: the age's afterstates and its children in the ages above),
    /// the backward pass five ([`super::backward::Phase`]).
    Memory {
        pass: &'static str,
        age: u32,
        states: usize,
        afterstates: usize,
        phase: &'static str,
        peak: u64,
        resident: u64,
    },
}

/// How often finished ages are made durable and recorded as done: often enough that a kill
/// loses little, rarely enough that syncing costs little.
pub const CHECKPOINT: Duration = Duration::from_millis(1000);

/// How many bytes of finished ages the backward pass may hand over before they are recorded,
/// unless told otherwise ([`SolveConfig::write_ahead`]): small ages are written after the
/// pass within this budget, bigger ones as the pass goes; on big boards the pass waits
/// rather than queueing ages of gigabytes.
pub const DEFAULT_WRITE_AHEAD: u64 = 512 << 20;

/// The state values of the ages finished since the last checkpoint (at most two): held
/// (`Some`) for a small age, already in `.work/` (`None`) for a big one.
type Recent = Vec<(u32, Option<Vec<f64>>)>;

/// From this many state values (64 MiB) on, an age's values go to `.work/` as soon as the
/// age is finished instead of waiting in memory for the next checkpoint.
const SAVE_AT_ONCE: usize = 8 << 20;

/// Ages whose state values are kept in `.work/` until the solve ends: the initial states' ages
/// (two spawns: 4, 6, 8), whose values [`initial_values`] reads.
const INITIAL_AGES: u32 = 8;

/// The writer of an age in the backward pass: its files ([`AgeFiles`]) and, for an age
/// written as the pass goes (a big one, unless `--write-ahead` says otherwise), its state
/// values saved to `.work/` (a resume reads them) while its level is built, when the pass
/// holds them anyway. Saved later on the writer thread, they stayed in memory until that
/// thread came to them, under a backlog of writes into the next age (4x3 `goal-256
/// --layout compact`: 140–190 MB more resident between its big ages; `reports/bench/memory.md`).
struct AgeWork<'a> {
    files: AgeFiles<'a>,
    work: &'a WorkDir,
    /// A streamed age's state values, written to `.work/` as the pass makes them.
    values: Option<ValuesWriter>,
}

impl<'a> AgeWriter for AgeWork<'a> {
    /// The age's files, and whether its state values were saved.
    type Written = (Files<'a>, bool);

    fn wants(&self) -> Wants {
        self.files.wants()
    }

    fn states(&mut self, ids: &[u64], recs: &mut Vec<StateRec>) -> Result<()> {
        self.files.states(ids, recs)
    }

    fn afterstates(&mut self, a: Afterstates<'_>) -> Result<bool> {
        self.files.afterstates(a)
    }

    fn afterstate_figures(&mut self, fig: &AfterFigures) -> Result<()> {
        self.files.afterstate_figures(fig)
    }

    fn state_values(&mut self, values: &[f64]) -> Result<()> {
        match &mut self.values {
            Some(w) => Ok(w.push(values)?),
            None => Ok(()),
        }
    }

    fn finish(self, out: &AgeOutput) -> Result<Self::Written> {
        if let Some(values) = self.values {
            // A streamed age: its values are in `.work/` once the writer is finished.
            values.finish()?;
            return Ok((self.files.finish(out)?, true));
        }
        let values = &out.summary.values;
        // The initial states' ages are kept to the end: the writer thread saves them.
        let save = out.age > INITIAL_AGES && !self.files.deferred();
        let work = self.work;
        let (files, saved) = rayon::join(
            || self.files.finish(out),
            || -> Result<bool> {
                if save {
                    work.save_values(out.age, values)?;
                }
                Ok(save)
            },
        );
        Ok((files?, saved?))
    }
}

/// A finished age on its way to being recorded as done: its files written, or to be written
/// first ([`Files::Deferred`]).
struct Finished<'a> {
    files: Files<'a>,
    /// Whether its state values are in `.work/` already ([`AgeWork`]).
    saved: bool,
    /// The age itself where its files are still to be written, else only its state values
    /// (`summary.values`, `[i * k + v]`: a resume starts from those of the last finished ages).
    out: AgeOutput,
}

impl Finished<'_> {
    /// The bytes it holds.
    fn bytes(&self) -> usize {
        self.out.bytes()
            + match &self.files {
                Files::Deferred(f) => f.bytes(),
                Files::Written(_) => 0,
            }
    }
}

/// The record of one finished age, for all variants of the pass.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct AgeRecord {
    /// Per variant, in the order of the pass.
    stats: Vec<AgeStats>,
    /// Per variant, the files written for this age.
    files: Vec<Vec<FileEntry>>,
}

/// Solves every variant of `cfg` into `store`; returns one manifest per variant, in the
/// order given.
pub fn solve(
    store: &Store,
    cfg: &SolveConfig,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Vec<Manifest>> {
    let single = Exchange::single(cfg.shape);
    solve_exchanged(store, cfg, &single, on_event)
}

/// [`solve`] as one of the processes of `ex` (`mpirun -np N age2048 solve`): each process
/// solves the boards it owns, keeps its own work files, writes its own part of every age
/// (`store` is its part's: [`Store::with_part`]); process 0 writes the manifests, which list
/// every part. Every process returns them.
pub fn solve_exchanged(
    store: &Store,
    cfg: &SolveConfig,
    ex: &Exchange,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Vec<Manifest>> {
    let game = Game::new(cfg.shape, cfg.group);
    let mut classes: BTreeMap<ForwardClass, Vec<Variant>> = BTreeMap::new();
    for v in &cfg.variants {
        classes.entry(v.forward_class()).or_default().push(*v);
    }
    let mut manifests = Vec::new();
    for (class, variants) in classes {
        if !cfg.force {
            if let Some(done) = already_solved(store, cfg, &variants) {
                manifests.extend(done);
                continue;
            }
        }
        manifests.extend(solve_class(
            store, &game, cfg.group, &class, &variants, cfg, ex, on_event,
        )?);
    }
    let order = |m: &Manifest| cfg.variants.iter().position(|v| v.name() == m.variant);
    manifests.sort_by_key(order);
    Ok(manifests)
}

/// The manifests of a finished solve of these variants (same group, layout and storage, and the
/// store's cheap check clean: the manifest matches the layout, every listed file is there with
/// its size, no unlisted file lies in its partitions), so that solving again is a no-op;
/// `None` otherwise, and the class is solved again. Digests are not computed here (that reads
/// every byte): `solve --verify` checks them first and clears a damaged solve.
fn already_solved(store: &Store, cfg: &SolveConfig, variants: &[Variant]) -> Option<Vec<Manifest>> {
    let (shape, group) = (cfg.shape, cfg.group);
    let mut out = Vec::new();
    for v in variants {
        let name = v.name();
        let m = store.read_manifest(shape, &name).ok()?;
        if m.symmetry != group.name()
            || m.layout_version != LAYOUT_VERSION
            || m.storage != cfg.storage.for_variant(v)
        {
            return None;
        }
        let problems = crate::store::verify::check_manifest(
            store,
            shape,
            &name,
            &m,
            crate::store::verify::Depth::Sizes,
        );
        if !problems.is_empty() {
            return None;
        }
        out.push(m);
    }
    Some(out)
}

#[allow(clippy::too_many_arguments)]
fn solve_class(
    store: &Store,
    game: &Game,
    group: Group,
    class: &ForwardClass,
    variants: &[Variant],
    cfg: &SolveConfig,
    ex: &Exchange,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Vec<Manifest>> {
    let t0 = Instant::now();
    let fixed = cfg.fixed_memory.unwrap_or(super::plan::FIXED);
    let mut plan = super::plan::Plan::with_fixed(cfg.memory, fixed)?;
    if let Some(cap) = cfg.stream_cap {
        plan = plan.streaming(cap);
    }
    let min_free = cfg.min_free;
    let storages: Vec<Storage> = variants
        .iter()
        .map(|v| cfg.storage.for_variant(v))
        .collect();
    let shape = game.shape();
    let processes = ex.parts().count;
    // Work files of an unfinished solve over another number of processes are not this one's
    // to resume from, nor to remove.
    if let Some(&other) = store
        .layout()
        .work_process_counts(shape, &class.key())
        .iter()
        .find(|&&c| c != processes)
    {
        let run = |n: u32| {
            if n == 1 {
                "one process (without mpirun)".to_string()
            } else {
                format!("{n} processes (mpirun -np {n})")
            }
        };
        return Err(SolveError::Processes(format!(
            "{}: the unfinished solve of board {shape} there was run by {}, this one by {}: \
             run it again by {}, or remove that folder to start over",
            store.layout().work_dir(shape, &class.key()).display(),
            run(other),
            run(processes),
            run(other),
        )));
    }
    // Ages are valued a chunk at a time only in the policy layout of a one-process solve (a
    // solve over several processes values every age whole).
    let can_stream = ex.is_single() && !storages.iter().any(Storage::has_index);
    if !ex.is_single() && storages.iter().any(|s| s.reach) {
        return Err(SolveError::Processes(
            "--reach: the pass over the reached states reads every policy file of an age in one \
             process; solve it without mpirun, or without --reach"
                .to_string(),
        ));
    }
    // Where an earlier solve of this board gives the counts, a budget too small for the
    // backward pass is refused now, before any work file is touched.
    if let Some(counts) = known_counts(store, shape, group, class) {
        if ex.is_single() {
            plan.backward(&counts, variants, can_stream)?;
        }
    }
    let work = if ex.is_single() {
        WorkDir::new(store.layout(), shape, &class.key())
    } else {
        WorkDir::of_part(store.layout(), shape, &class.key(), ex.rank(), processes)
    };
    let meta = WorkMeta {
        version: env!("CARGO_PKG_VERSION").to_string(),
        board: shape.to_string(),
        symmetry: group.name().to_string(),
        class: class.key(),
    };
    let damaged = |e: &StoreError, redo: &str| {
        on_event(Event::Damaged {
            problem: e.to_string(),
            redo: redo.to_string(),
        })
    };
    match work.read_json::<WorkMeta>("meta.json") {
        Ok(Some(m)) if m == meta => {}
        other => {
            if let Err(e) = &other {
                damaged(e, "starting the solve over");
            }
            // Work files of another group or tool version (or none): not ours to resume from.
            work.remove()?;
            work.write_json("meta.json", &meta)?;
        }
    }

    // ---- forward: one layer file per finished age; `forward.json` says which are durable.
    // Every layer it lists is checked; the pass resumes after the last age whose layers (and
    // all before it) are intact, and then the backward pass starts over.
    let mut fwd: ForwardProgress = match work.read_json("forward.json") {
        Ok(f) => f.unwrap_or_default(),
        Err(e) => {
            damaged(&e, "starting the forward pass over");
            ForwardProgress::default()
        }
    };
    let mut redo_backward = false;
    // A backward pass under way has let go of the layers of the ages above the last it
    // recorded as done but two (`retire_layers`): only the rest are checked.
    let retired_above = match work.read_json::<BackwardProgress>("backward.json") {
        Ok(Some(b)) if fwd.complete => b.done_age.map(|d| (d + 2).max(INITIAL_AGES)),
        _ => None,
    };
    let needed = |a: u32| retired_above.is_none_or(|top| a <= top);
    if fwd.done_age.is_some() {
        let bad = fwd
            .ages
            .iter()
            .filter(|&&a| needed(a))
            .find_map(|&a| work.check_layers(a).err());
        if let Some(e) = bad.or_else(|| {
            fwd.ages
                .is_empty()
                .then(|| StoreError::corrupt(work.path().join("forward.json"), "lists no layer"))
        }) {
            let intact: Vec<u32> = fwd
                .ages
                .iter()
                .copied()
                .take_while(|&a| !needed(a) || work.check_layers(a).is_ok())
                .collect();
            let redo = match intact.last() {
                Some(a) => format!("redoing the forward pass after age {a}"),
                None => "starting the forward pass over".to_string(),
            };
            damaged(&e, &redo);
            fwd = ForwardProgress {
                done_age: intact.last().copied(),
                min_age: intact.first().copied(),
                counts: fwd
                    .counts
                    .iter()
                    .copied()
                    .filter(|c| intact.contains(&c.0))
                    .collect(),
                ages: intact,
                complete: false,
                seconds: fwd.seconds,
            };
            redo_backward = true;
        }
    }
    if !ex.is_single() {
        // Every process resumes its forward pass after the same age: the last one all of
        // them finished (what was made beyond it is made again).
        let complete = ex.all_min(u64::from(fwd.complete))? == 1;
        let done = ex.all_min(fwd.done_age.map_or(0, |a| u64::from(a) + 1))?;
        if !complete {
            let keep = |a: u32| u64::from(a) < done;
            fwd.ages.retain(|&a| keep(a));
            fwd.counts.retain(|c| keep(c.0));
            fwd.done_age = fwd.ages.last().copied();
            fwd.min_age = fwd.ages.first().copied();
            fwd.complete = false;
            redo_backward = true;
        }
    }
    if !fwd.complete {
        let t = Instant::now();
        let base_seconds = fwd.seconds;
        let start = match fwd.done_age {
            Some(age) => {
                on_event(Event::Resumed {
                    pass: "forward",
                    age,
                });
                // Over several processes, the afterstates this process owns (its files keep
                // them whole: no age is streamed).
                let after = |a: u32| match ex.is_single() {
                    true => stored_afterstates(game, class, &work, a, plan.forward),
                    false => match work.open_layers(a)? {
                        Some(file) => Ok(layers_of(&file, &work, a)?.1),
                        None => Ok(Vec::new()),
                    },
                };
                Start::After {
                    age,
                    afterstates: after(age)?,
                    afterstates_prev: after(age.saturating_sub(2))?,
                }
            }
            None => Start::Fresh,
        };
        // Layers are saved on their own thread while the pass goes on to the next age.
        let (tx, rx) = std::sync::mpsc::sync_channel::<AgeLayer>(2);
        let progress = &mut fwd;
        let work = &work;
        let (last, saved) = std::thread::scope(|scope| {
            let saver = scope.spawn(move || -> Result<()> {
                std::thread::scope(|inner| -> Result<()> {
                    // The layers so far reach the disk before the progress that vouches for
                    // them, on the checkpoint thread while this one saves the next ages.
                    let mut cp = Checkpointer::start(inner, |snapshot: ForwardProgress| {
                        store.sync()?;
                        Ok(work.write_json("forward.json", &snapshot)?)
                    });
                    let mut checkpoint = Instant::now();
                    let every = cfg.checkpoint_every.unwrap_or(CHECKPOINT);
                    for layer in rx {
                        // Encoded first, so that the check asks for the bytes the file takes
                        // (a streamed age comes encoded).
                        let bytes = match layer.encoded {
                            Some(bytes) => bytes,
                            None => {
                                WorkDir::encode_layers(layer.age, &layer.states, &layer.afterstates)
                            }
                        };
                        // Over several processes, the afterstates asked of others too.
                        let asked = (!layer.asked.is_empty())
                            .then(|| WorkDir::encode_layers(layer.age, &layer.asked, &[]));
                        store.ensure_free(
                            &format!("the forward layers of age {}", layer.age),
                            (bytes.len() + asked.as_ref().map_or(0, Vec::len)) as u64,
                            min_free,
                        )?;
                        work.write_layers(layer.age, &bytes)?;
                        drop(bytes);
                        if let Some(asked) = asked {
                            work.write_asked(layer.age, &asked)?;
                        }
                        progress.ages.push(layer.age);
                        progress.counts.push((
                            layer.age,
                            layer.n_states as u64,
                            layer.n_afterstates as u64,
                        ));
                        progress.min_age =
                            Some(progress.min_age.map_or(layer.age, |m| m.min(layer.age)));
                        progress.done_age = Some(layer.age);
                        if checkpoint.elapsed() >= every && cp.idle() {
                            progress.seconds = base_seconds + t.elapsed().as_secs_f64();
                            if !cp.submit(progress.clone()) {
                                break;
                            }
                            checkpoint = Instant::now();
                        }
                        on_event(Event::Forward {
                            age: layer.age,
                            states: layer.n_states,
                            afterstates: layer.n_afterstates,
                        });
                    }
                    // The last checkpoint ends before the caller records the pass as done.
                    cp.finish()
                })
            });
            let last =
                forward::run_exchanged(game, class, start, plan.forward, ex, |layer: AgeLayer| {
                    if cfg.trace_memory {
                        phase_memory(
                            on_event,
                            "forward",
                            "made",
                            layer.age,
                            (layer.n_states, layer.n_afterstates),
                        );
                    }
                    tx.send(layer)
                        .map_err(|_| SolveError::Internal("the layer saver stopped".into()))
                });
            drop(tx);
            let saved = saver
                .join()
                .unwrap_or_else(|_| Err(SolveError::Internal("the layer saver panicked".into())));
            (last, saved)
        });
        // The saver's own error says more than the pass's "the saver stopped".
        saved?;
        let last = last?;
        fwd.done_age = Some(last);
        fwd.complete = true;
        fwd.seconds = base_seconds + t.elapsed().as_secs_f64();
        store.sync()?;
        work.write_json("forward.json", &fwd)?;
    }
    let (Some(max_age), Some(min_age)) = (fwd.done_age, fwd.min_age) else {
        return Err(SolveError::NoState {
            board: shape.to_string(),
        });
    };

    // ---- backward
    super::huge::trim();
    let names: Vec<String> = variants.iter().map(Variant::name).collect();
    let mut bwd: BackwardProgress = match work.read_json("backward.json") {
        Ok(b) => b.unwrap_or_default(),
        Err(e) => {
            damaged(&e, "starting the backward pass over");
            BackwardProgress::default()
        }
    };
    let k = variants.len();
    // What the pass holds: from the forward pass's counts (or, for work files of an older
    // version, the layer files' headers).
    let counts: Vec<(u32, u64, u64)> = if fwd.counts.len() == fwd.ages.len() {
        fwd.counts.clone()
    } else {
        fwd.ages
            .iter()
            .map(|&a| {
                let boards = work
                    .open_layers(a)?
                    .map_or((0, 0), |f| (f.states(), f.afterstates()));
                Ok((a, boards.0, boards.1))
            })
            .collect::<Result<_>>()?
    };
    let mut bplan = plan.backward(&counts, variants, can_stream)?;
    // The writer's queue of finished ages takes what the budget leaves it.
    let write_ahead = cfg.write_ahead.min(bplan.write_ahead_limit);
    let streamed_ages: BTreeSet<u32> = bplan.streamed.iter().copied().collect();
    // The rest of the run on disk, checked before the pass starts: its output, and the state
    // values of three ages at once (two for a resume, one being written); the work files
    // shrink as it goes (`retire_layers`).
    let rest = Store::run_bytes_estimate(&counts, &storages);
    let work_now = work.bytes();
    on_event(Event::Plan {
        text: format!(
            "backward plan: tables {}, {} of {} ages valued a chunk at a time; budget {} (the \
             smallest that holds every age: --memory {}); disk: work {:.1} GB now, at most \
             {:.1} GB more (output and values)",
            bplan.coding.name(),
            bplan.streamed.len(),
            counts.len(),
            super::plan::human(plan.budget),
            super::plan::size_arg(plan.smallest(&counts, variants, can_stream)),
            work_now as f64 / 1e9,
            rest as f64 / 1e9,
        ),
    });
    store.ensure_free("the rest of the solve (projected)", rest, min_free)?;
    let same_pass = bwd.variants == names
        && bwd.top == max_age
        && bwd.storage == storages
        && (bwd.done_age.is_none() || bwd.tables == bplan.coding.name());
    if same_pass && bwd.done_age.is_some() {
        // A resume keeps the tables' coding its finished ages were valued with.
        bplan.coding = super::table::Coding::parse(&bwd.tables).unwrap_or(bplan.coding);
    }
    if !redo_backward && same_pass {
        if let Some(done) = bwd.done_age {
            if let Err(e) = check_backward(&work, &fwd.ages, done, max_age, k) {
                damaged(&e, "starting the backward pass over");
                redo_backward = true;
            }
        }
    }
    if !ex.is_single() {
        // Every process resumes its backward pass after the same age: the last one every
        // process finished, the oldest of their last recorded ones (each keeps the files to
        // resume from any age down to its own: see `floor` below). If one process cannot
        // (it redoes its pass, recorded none, or lacks a file), every one starts it over.
        let mine = if redo_backward || !same_pass {
            u64::MAX
        } else {
            bwd.done_age.map_or(u64::MAX - 1, u64::from)
        };
        let all = ex.all_max(mine)?;
        let mut can = all < u64::MAX - 1;
        if can && all != mine {
            let done = all as u32;
            match check_backward(&work, &fwd.ages, done, max_age, k) {
                Ok(()) => bwd.done_age = Some(done),
                Err(e) => {
                    damaged(&e, "starting the backward pass over");
                    can = false;
                }
            }
        }
        if ex.all_max(u64::from(!can))? == 1 {
            redo_backward = true;
        }
    }
    let restart =
        (redo_backward || !same_pass) && fwd.ages.iter().any(|&a| work.check_layers(a).is_err());
    if ex.all_max(u64::from(restart))? == 1 {
        // Starting the backward pass over needs every layer, and a pass under way let go of
        // some: the forward pass is made again.
        damaged(
            &StoreError::corrupt(
                work.path().join("layers"),
                "let go by an earlier backward pass",
            ),
            "starting the solve over",
        );
        work.remove()?;
        return solve_class(store, game, group, class, variants, cfg, ex, on_event);
    }
    if redo_backward || !same_pass {
        bwd = BackwardProgress {
            variants: names.clone(),
            storage: storages.clone(),
            tables: bplan.coding.name(),
            top: max_age,
            done_age: None,
            seconds: 0.0,
        };
        work.write_json("backward.json", &bwd)?;
        work.clear_backward()?;
        if ex.rank() == 0 {
            for n in &names {
                store.clear_variant(shape, n)?;
            }
        }
    }
    // No process writes an age's files before process 0 cleared the old ones.
    ex.all_max(0)?;
    let phases = |age: u32, phase: Phase, states: usize, afterstates: usize| {
        phase_memory(
            on_event,
            "backward",
            phase.name(),
            age,
            (states, afterstates),
        );
    };
    let mut backward = Backward::new(game, variants)?
        .with_holding(Holding {
            coding: bplan.coding,
            cap: plan.forward.cap,
        })
        .with_exchange(ex);
    let asked = |age| work.load_asked(age);
    if !ex.is_single() {
        backward = backward.with_asked(&asked);
    }
    if cfg.trace_memory {
        backward = backward.with_phases(&phases);
    }
    if bwd.done_age != Some(min_age) {
        let t = Instant::now();
        let base_seconds = bwd.seconds;
        let (top, next) = match bwd.done_age {
            Some(done) => {
                on_event(Event::Resumed {
                    pass: "backward",
                    age: done,
                });
                let level = |age: u32| -> Result<Level> {
                    if streamed_ages.contains(&age) {
                        return streamed_level(&work, age, k, &backward);
                    }
                    let ids = work.load_layers(age)?.0;
                    let values = work.load_values(age)?.unwrap_or_default();
                    if values.len() != ids.len() * k {
                        return Err(crate::store::StoreError::corrupt(
                            work.values_path_of(age),
                            format!(
                                "{} values for {} states × {k} variants",
                                values.len(),
                                ids.len()
                            ),
                        )
                        .into());
                    }
                    Ok(backward.level(age, &ids, &values))
                };
                (done - 2, Some((level(done)?, level(done + 2)?)))
            }
            None => (max_age, None),
        };
        on_event(Event::BackwardStart {
            top,
            min_age,
            // From the forward pass's counts: a streamed age's file keeps no afterstates.
            boards: counts
                .iter()
                .filter(|c| c.0 >= min_age && c.0 <= top)
                .map(|c| c.1 + c.2)
                .sum(),
        });
        // The pass writes a big age's files as it values it (`AgeFiles`); writing a small one,
        // and recording an age as done (its record, then a checkpoint), runs on a thread of
        // its own, after its files, while the pass values the next ages.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Finished>(2);
        // … and its queue is bounded in bytes too (the state values it carries; budget.rs).
        let budget = Budget::new(usize::try_from(write_ahead).unwrap_or(usize::MAX));
        let budget = &budget;
        // Over several processes: the last age this process recorded as done (its checkpoint
        // on disk), and the oldest such age of every process as this one last heard (`NONE`
        // while one has recorded none). A process keeps the state values and layers of every
        // age down to that floor, so that a resume after the age every process finished finds
        // them; the floor is asked of every process once an age, and only ever falls.
        const NONE: u64 = u64::MAX;
        let durable = AtomicU64::new(bwd.done_age.map_or(NONE, u64::from));
        let floor = AtomicU64::new(durable.load(Ordering::Relaxed));
        let (durable, floor) = (&durable, &floor);
        let single = ex.is_single();
        let bwd = &mut bwd;
        let work = &work;
        let (run, written) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| -> Result<()> {
                let _closer = budget.closer();
                std::thread::scope(|inner| -> Result<()> {
                    // Ages above 8 whose state values are on disk and not yet known to be
                    // unneeded (the checkpoint thread's own).
                    let mut values_kept: BTreeSet<u32> = BTreeSet::new();
                    // A checkpoint: the state values it was handed, then everything written so
                    // far reaches the disk, then the progress that vouches for it; only then may
                    // values older ages no longer need go. It runs on its own thread while this
                    // one writes the next ages.
                    let mut cp = Checkpointer::start(
                        inner,
                        move |(snapshot, recent): (BackwardProgress, Recent)| -> Result<()> {
                            for (age, values) in recent {
                                if let Some(values) = values {
                                    work.save_values(age, &values)?;
                                }
                                values_kept.insert(age);
                            }
                            store.sync()?;
                            work.write_json("backward.json", &snapshot)?;
                            if let Some(done) = snapshot.done_age {
                                durable.store(u64::from(done), Ordering::Relaxed);
                                // Over several processes, another may resume after an older
                                // age than this one's: nothing is let go above the floor
                                // yet (nothing at all while a process has recorded none).
                                let done = if single {
                                    done
                                } else {
                                    match floor.load(Ordering::Relaxed) {
                                        NONE => return Ok(()),
                                        f => done.max(f as u32),
                                    }
                                };
                                // The layers above done + 2 are read by no later step, nor by
                                // a resume (it rebuilds the levels of done and done + 2), but
                                // for the initial states' ages (the values at the starts).
                                work.retire_layers((done + 2).max(INITIAL_AGES))?;
                                // Resuming needs the values of the last two finished ages; the
                                // initial states' ages are kept for the values there.
                                let stale: Vec<u32> = values_kept
                                    .iter()
                                    .copied()
                                    .filter(|&a| a > done + 2 && a > INITIAL_AGES)
                                    .collect();
                                for a in stale {
                                    work.remove_values(a)?;
                                    values_kept.remove(&a);
                                }
                            }
                            Ok(())
                        },
                    );
                    let mut checkpoint = Instant::now();
                    let every = cfg.checkpoint_every.unwrap_or(CHECKPOINT);
                    // The state values of the last two finished ages since the last checkpoint:
                    // a resume needs them only for the ages a checkpoint records, so a small
                    // age's are held (`Some`) and written then (values of other small ages
                    // never reach the disk); a big age's are written at once (`None`: by the
                    // pass itself if it wrote the age, see `AgeWork`) rather than held (4x4
                    // `goal-32`: 0.5 GB an age), and removed if no checkpoint comes to need
                    // them.
                    let mut recent: Recent = Vec::new();
                    let mut pending = false;
                    for job in rx {
                        // What the pass acquired for this job, released once it is recorded.
                        let bytes = job.bytes();
                        let Finished {
                            files,
                            saved,
                            mut out,
                        } = job;
                        let (age, boards) = (out.age, out.boards);
                        let written = match files {
                            Files::Written(w) => w,
                            Files::Deferred(f) => f.write(&out)?,
                        };
                        let values = std::mem::take(&mut out.summary.values);
                        drop(out);
                        if age <= INITIAL_AGES {
                            // Kept for the values at the initial states (never removed).
                            if !saved {
                                work.save_values(age, &values)?;
                            }
                        } else {
                            if recent.len() == 2 && single {
                                // Finished after the last checkpoint, older than what any
                                // later one records: no resume reads it.
                                if let (old, None) = recent.remove(0) {
                                    work.remove_values(old)?;
                                }
                            }
                            if saved {
                                recent.push((age, None));
                            } else if values.len() >= SAVE_AT_ONCE || !single {
                                // Over several processes every age's values are saved: a
                                // resume may start after any age another process recorded.
                                work.save_values(age, &values)?;
                                recent.push((age, None));
                            } else {
                                recent.push((age, Some(values)));
                            }
                        }
                        let (stats, files) = written.into_iter().unzip();
                        work.save_record(age, &AgeRecord { stats, files })?;
                        bwd.done_age = Some(age);
                        pending = true;
                        if checkpoint.elapsed() >= every && cp.idle() {
                            bwd.seconds = base_seconds + t.elapsed().as_secs_f64();
                            if !cp.submit((bwd.clone(), std::mem::take(&mut recent))) {
                                break;
                            }
                            pending = false;
                            checkpoint = Instant::now();
                        }
                        on_event(Event::Backward { age, boards });
                        budget.release(bytes);
                    }
                    if pending {
                        bwd.seconds = base_seconds + t.elapsed().as_secs_f64();
                        let _ = cp.submit((bwd.clone(), std::mem::take(&mut recent)));
                    }
                    // The last checkpoint ends before the writer does.
                    cp.finish()
                })
            });
            let run = backward.run(
                top,
                min_age,
                next,
                |age, n_states, boards, streamed| {
                    store.ensure_free(
                        &format!("age {age}"),
                        Store::age_bytes_estimate(boards, &storages, age),
                        min_free,
                    )?;
                    // Written after the pass if what the writer would hold fits its budget
                    // (a streamed age holds nothing whole to hand over).
                    let defer = !streamed && AgeFiles::deferred_bytes(boards, k) <= write_ahead;
                    Ok(AgeWork {
                        files: AgeFiles::new(
                            store, game, age, variants, &storages, defer, n_states,
                        )?,
                        work,
                        values: if streamed {
                            Some(work.values_writer(age, n_states * k)?)
                        } else {
                            None
                        },
                    })
                },
                |age| {
                    let file = || {
                        work.open_layers(age)?.ok_or_else(|| {
                            SolveError::from(StoreError::corrupt(
                                work.layer_path_of(age),
                                "missing",
                            ))
                        })
                    };
                    if !fwd.ages.contains(&age) {
                        // An age without states has no file.
                        return Ok(Layers::Whole(Vec::new(), Vec::new()));
                    }
                    if streamed_ages.contains(&age) {
                        let afterstates = counts
                            .iter()
                            .find(|c| c.0 == age)
                            .map_or(0, |c| c.2 as usize);
                        return Ok(Layers::Streamed {
                            file: file()?,
                            afterstates,
                        });
                    }
                    // A layer the forward pass wrote must be there (read once, checked whole).
                    let (states, afterstates) = match work.open_layers(age)? {
                        Some(file) => layers_of(&file, work, age)?,
                        None => {
                            return Err(
                                StoreError::corrupt(work.layer_path_of(age), "missing").into()
                            )
                        }
                    };
                    // A file without afterstates keeps a streamed age's states only: they are
                    // made again. Over several processes every age is whole, and a process
                    // may own states of an age but none of its afterstates.
                    let afterstates =
                        if afterstates.is_empty() && !states.is_empty() && ex.is_single() {
                            stored_afterstates(game, class, work, age, plan.forward)?
                        } else {
                            afterstates
                        };
                    Ok(Layers::Whole(states, afterstates))
                },
                |mut out: AgeOutput, (files, saved)| {
                    let stopped = || SolveError::Internal("the writer stopped".into());
                    if !single {
                        // Every process is here once an age (the pass's own thread).
                        let oldest = ex.all_max(durable.load(Ordering::Relaxed))?;
                        floor.store(oldest, Ordering::Relaxed);
                    }
                    let streamed = matches!(files, Files::Written(_));
                    if streamed {
                        // Only the state values are still needed (the pass let go of the
                        // afterstates once their files were written).
                        out.states = Vec::new();
                    }
                    if saved {
                        // … nor those, once in `.work/`.
                        out.summary.values = Vec::new();
                    }
                    let job = Finished { files, saved, out };
                    if !budget.acquire(job.bytes()) {
                        return Err(stopped());
                    }
                    tx.send(job).map_err(|_| stopped())?;
                    if streamed {
                        // What a big age's work freed goes back to the kernel before the next
                        // age allocates its own (small ages are not worth the call).
                        super::huge::trim();
                    }
                    Ok(())
                },
            );
            drop(tx);
            let written = writer
                .join()
                .unwrap_or_else(|_| Err(SolveError::Internal("the writer thread panicked".into())));
            (run, written)
        });
        // The writer's own error says more than the pass's "the writer stopped".
        written?;
        run?;
    }

    // ---- finish: ages table, manifests, then drop the work files
    let starts = initial_values(game, &work, variants, ex)?;
    let mut records: Vec<AgeRecord> = Vec::new();
    // One record per age of the pass, every one of them there (a missing one is damage).
    for age in (min_age..=max_age).step_by(2) {
        let rec: AgeRecord = work.load_record(age)?.ok_or_else(|| {
            crate::store::StoreError::corrupt(work.record_path_of(age), "missing")
        })?;
        if rec.stats.len() != k || rec.files.len() != k {
            return Err(crate::store::StoreError::corrupt(
                work.record_path_of(age),
                format!("{} variants recorded, {k} expected", rec.stats.len()),
            )
            .into());
        }
        records.push(rec);
    }
    // Over several processes: every process's records, merged age by age into the records
    // of the whole solve (their figures from the exact sums of each share).
    let records = merge_records(store, shape, variants, &storages, records, ex)?;
    if ex.rank() != 0 {
        // Process 0 writes the manifests; the others read them once it has.
        ex.all_max(0)?;
        let manifests = variants
            .iter()
            .map(|v| Ok(store.read_manifest(shape, &v.name())?))
            .collect::<Result<Vec<_>>>()?;
        work.remove()?;
        ex.all_max(0)?;
        return Ok(manifests);
    }
    // A policy solve kept over the reached states: the reach pass writes its files again.
    let mut records = records;
    for (vi, v) in variants.iter().enumerate() {
        if storages[vi].reach {
            let mut slots: Vec<super::reach::AgeSlot<'_>> = records
                .iter_mut()
                .map(|r| super::reach::AgeSlot {
                    stats: &mut r.stats[vi],
                    files: &mut r.files[vi],
                })
                .collect();
            super::reach::reach(store, game, v, &mut slots)?;
        }
    }
    let mut manifests = Vec::new();
    for (vi, v) in variants.iter().enumerate() {
        let name = v.name();
        let ages: Vec<AgeStats> = records
            .iter()
            .map(|r| AgeStats {
                state_sums: Vec::new(),
                ..r.stats[vi].clone()
            })
            .filter(|s| s.n_states > 0 || s.n_afterstates > 0)
            .collect();
        let mut files: Vec<FileEntry> = records
            .iter()
            .flat_map(|r| r.files[vi].iter().cloned())
            .collect();
        let ages_file = store.layout().ages_file(shape, &name);
        let bytes = ages_parquet(&ages_file, &ages)?;
        files.push(store.write_file(&ages_file, &bytes)?);
        let max_tile = ages
            .iter()
            .filter(|a| a.n_states > 0)
            .map(|a| a.index.base.saturating_sub(1))
            .max()
            .map_or(0, |e| 1u32 << e);
        let manifest = Manifest {
            tool: "age2048".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            layout_version: LAYOUT_VERSION,
            board: shape.to_string(),
            variant: name.clone(),
            symmetry: group.name().into(),
            p4: v.p4,
            discount: v.discount,
            threads: rayon::current_num_threads(),
            n_states: ages.iter().map(|a| a.n_states).sum(),
            n_afterstates: ages.iter().map(|a| a.n_afterstates).sum(),
            n_terminal_states: ages.iter().map(|a| a.n_terminal_states).sum(),
            min_age,
            max_age,
            max_tile,
            value_two_2_tiles: starts[vi].two_2_tiles,
            value_initial: starts[vi].initial,
            value_initial_distinct: starts[vi].distinct,
            timings: Timings {
                forward_s: fwd.seconds,
                backward_s: bwd.seconds,
                total_s: t0.elapsed().as_secs_f64(),
            },
            peak_rss_bytes: super::memory::peak_rss_bytes(),
            storage: storages[vi].clone(),
            parts: ex.parts(),
            ages,
            files,
            manifest_sha256: String::new(),
        };
        store.write_manifest(shape, &manifest)?;
        manifests.push(manifest);
    }
    if !ex.is_single() {
        ex.all_max(0)?;
    }
    work.remove()?;
    if !ex.is_single() {
        // Once every process removed its work files, the folders above them.
        ex.all_max(0)?;
        WorkDir::remove_empty_parents(store.layout(), shape, &class.key());
    }
    Ok(manifests)
}

/// The records of the solve, age by age, from every process's (every process has a record of
/// every age of the pass): counts summed, figures from the merged exact sums, the largest
/// afterstate value and compaction base the largest of the shares, every share's files, and
/// over several processes the age's look-up entry naming the folder of its parts. In one
/// process the figures too are made again from the exact sums: the floats of a record read
/// back from its JSON may be an ulp off (serde_json's parser is not correctly rounded), its
/// integers are not.
fn merge_records(
    store: &Store,
    shape: Shape,
    variants: &[Variant],
    storages: &[Storage],
    mine: Vec<AgeRecord>,
    ex: &Exchange,
) -> Result<Vec<AgeRecord>> {
    let shares: Vec<Vec<AgeRecord>> = if ex.is_single() {
        vec![mine]
    } else {
        let bytes = serde_json::to_vec(&mine)
            .map_err(|e| SolveError::Internal(format!("encoding the age records: {e}")))?;
        ex.all_gather(bytes)?
            .iter()
            .map(|b| serde_json::from_slice(b))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| SolveError::Internal(format!("an age record from another process: {e}")))?
    };
    let mine = &shares[ex.rank() as usize];
    if shares.iter().any(|s| s.len() != mine.len()) {
        return Err(SolveError::Internal(
            "the processes recorded different ages".into(),
        ));
    }
    let layout = store.layout();
    let mut out = Vec::with_capacity(mine.len());
    for (i, _) in mine.iter().enumerate() {
        let mut rec = AgeRecord::default();
        for (vi, v) in variants.iter().enumerate() {
            let of = |s: &Vec<AgeRecord>| s[i].stats[vi].clone();
            let parts: Vec<AgeStats> = shares.iter().map(of).collect();
            let age = parts[0].age;
            let mut st = AgeStats {
                age,
                ..Default::default()
            };
            let mut sums = FigureSums::new(v);
            let mut empty_cells = 0u64;
            let mut weighted = (0.0, 0.0);
            for p in &parts {
                st.n_states += p.n_states;
                st.n_afterstates += p.n_afterstates;
                if !p.state_sums.is_empty() {
                    let share = FigureSums::from_words(&p.state_sums).ok_or_else(|| {
                        SolveError::Internal(format!("age {age}: damaged sums from a process"))
                    })?;
                    sums.merge(&share);
                }
                // The share's empty cells, an integer below 2^51 its mean was divided from:
                // its product with the count rounds back to it.
                if let Some(mean) = p.mean_empty_cells_afterstates {
                    empty_cells += (mean * p.n_afterstates as f64).round() as u64;
                }
                st.best_afterstate_value = match (st.best_afterstate_value, p.best_afterstate_value)
                {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                let ix = &p.index;
                st.index.base = st.index.base.max(ix.base);
                st.index.file_bytes += ix.file_bytes;
                st.index.state_id_bytes += ix.state_id_bytes;
                st.index.afterstate_id_bytes += ix.afterstate_id_bytes;
                weighted.0 += ix.bits_per_afterstate_id * p.n_afterstates as f64;
                weighted.1 += ix.bits_per_state_id * p.n_states as f64;
                st.policy.file_bytes += p.policy.file_bytes;
                st.policy.keys += p.policy.keys;
                st.policy.shards += p.policy.shards;
            }
            if st.n_afterstates > 0 {
                st.mean_empty_cells_afterstates =
                    Some(empty_cells as f64 / st.n_afterstates as f64);
                st.index.bits_per_afterstate_id = weighted.0 / st.n_afterstates as f64;
            }
            if st.n_states > 0 {
                st.index.bits_per_state_id = weighted.1 / st.n_states as f64;
            }
            // Records without sums: of work files an older build wrote, in one process.
            let exact = parts
                .iter()
                .all(|p| p.n_states == 0 || !p.state_sums.is_empty());
            if exact {
                let figures = sums.figures();
                st.n_terminal_states = figures.n_terminal_states;
                st.mean_state_value = figures.mean_state_value;
                st.mean_action_gap = figures.mean_action_gap;
                st.frac_gap_lt_1 = figures.frac_gap_lt_1;
            } else if ex.is_single() {
                let p = &parts[0];
                st.n_terminal_states = p.n_terminal_states;
                st.mean_state_value = p.mean_state_value;
                st.mean_action_gap = p.mean_action_gap;
                st.frac_gap_lt_1 = p.frac_gap_lt_1;
            } else {
                return Err(SolveError::Internal(format!(
                    "age {age}: a process recorded no sums of its states' figures"
                )));
            }
            let policy = !storages[vi].has_index();
            if ex.is_single() {
                st.index = parts[0].index.clone();
                st.policy = parts[0].policy.clone();
            } else {
                let dir = layout.relative(&layout.lookup_dir(shape, &v.name(), age, policy));
                if policy {
                    st.policy.file = dir;
                } else {
                    st.index.file = dir;
                }
            }
            rec.stats.push(st);
            rec.files
                .push(shares.iter().flat_map(|s| s[i].files[vi].clone()).collect());
        }
        out.push(rec);
    }
    Ok(out)
}

/// The level of a streamed age for a resumed backward pass: its table built from its work
/// file's states a chunk at a time and its saved values.
fn streamed_level(work: &WorkDir, age: u32, k: usize, backward: &Backward) -> Result<Level> {
    let file = work
        .open_layers(age)?
        .ok_or_else(|| StoreError::corrupt(work.layer_path_of(age), "missing"))?;
    let n = file.states() as usize;
    let chunk = 1 << 22;
    let values = work.values_chunks(age, chunk * k)?;
    let count = values.as_ref().map_or(0, |v| v.total());
    if count != (n * k) as u64 {
        return Err(StoreError::corrupt(
            work.values_path_of(age),
            format!("{count} values for {n} states × {k} variants"),
        )
        .into());
    }
    let mut builder = backward.table_builder(n);
    // Chunks of ids and of values of the same states, side by side.
    for (ids, values) in file.state_chunks(chunk).zip(values.into_iter().flatten()) {
        let ids = ids.map_err(|e| StoreError::corrupt(work.layer_path_of(age), e.to_string()))?;
        let values = values?;
        if values.len() != ids.len() * k {
            return Err(StoreError::corrupt(work.values_path_of(age), "values out of step").into());
        }
        builder.push(&ids, &values);
    }
    Ok(Level::from_table(age, builder.finish()))
}

/// The per-age counts `(age, states, afterstates)` of a finished solve of this board, group
/// and forward class in `store` (any variant of the class reaches the same boards), if there
/// is one whose manifest reads.
fn known_counts(
    store: &Store,
    shape: Shape,
    group: Group,
    class: &ForwardClass,
) -> Option<Vec<(u32, u64, u64)>> {
    let board = shape.to_string();
    store.manifests().into_iter().find_map(|(p, m)| {
        let m = m.ok()?;
        let v = Variant::parse(&m.variant, Default::default()).ok()?;
        (p.board == board && m.symmetry == group.name() && v.forward_class() == *class).then(|| {
            m.ages
                .iter()
                .map(|a| (a.age, a.n_states, a.n_afterstates))
                .collect()
        })
    })
}

/// The states and afterstates of a layer file already read, whole.
fn layers_of(
    file: &crate::store::idcodec::LayerFile,
    work: &WorkDir,
    age: u32,
) -> Result<(Vec<u64>, Vec<u64>)> {
    file.decode()
        .map_err(|e| StoreError::corrupt(work.layer_path_of(age), e.to_string()).into())
}

/// The afterstates of age `age` for a resumed forward pass: from its layer file, or made again
/// from its states where a streamed age's file keeps none (0 and none for an age without a
/// file).
fn stored_afterstates(
    game: &Game,
    class: &ForwardClass,
    work: &WorkDir,
    age: u32,
    plan: ForwardPlan,
) -> Result<Vec<u64>> {
    let Some(file) = work.open_layers(age)? else {
        return Ok(Vec::new());
    };
    if file.afterstates() > 0 || file.states() == 0 {
        return Ok(layers_of(&file, work, age)?.1);
    }
    let states = file
        .state_chunks(1 << 22)
        .map(|c| c.map_err(|e| StoreError::corrupt(work.layer_path_of(age), e.to_string()).into()));
    forward::afterstates_of(game, class, age, states, plan.cap)?.into_layer()
}

/// Checks the work files a backward pass resumed after age `done` needs: the record of every
/// age it finished (`done..=top`), and the state values it resumes from (ages `done` and
/// `done + 2`) or that the values at the initial states need (ages 4, 6, 8).
fn check_backward(
    work: &WorkDir,
    layer_ages: &[u32],
    done: u32,
    top: u32,
    k: usize,
) -> std::result::Result<(), StoreError> {
    for age in (done..=top).step_by(2) {
        let rec: AgeRecord = work
            .load_record(age)?
            .ok_or_else(|| StoreError::corrupt(work.record_path_of(age), "missing"))?;
        if rec.stats.len() != k || rec.files.len() != k {
            return Err(StoreError::corrupt(
                work.record_path_of(age),
                format!("{} variants recorded, {k} expected", rec.stats.len()),
            ));
        }
    }
    for age in [done, done + 2, 4, 6, 8] {
        if age < done || age > top {
            continue;
        }
        let n = if layer_ages.contains(&age) {
            work.open_layers(age)?
                .ok_or_else(|| StoreError::corrupt(work.layer_path_of(age), "missing"))?
                .states() as usize
        } else {
            0
        };
        let values = work.values_chunks(age, 1)?.map_or(0, |v| v.total());
        if values != (n * k) as u64 {
            return Err(StoreError::corrupt(
                work.values_path_of(age),
                format!("{values} values for {n} states × {k} variants"),
            ));
        }
    }
    Ok(())
}

/// The values of one variant at the starts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct StartValues {
    /// From two 2-tiles, averaged over their placements (none if a 2 never spawns).
    two_2_tiles: Option<f64>,
    /// Over the real initial distribution (the worst start for `guaranteed-T`).
    initial: Option<f64>,
    /// The unweighted mean over the distinct initial states.
    distinct: Option<f64>,
}

/// Per variant, its values at the starts, from the state values of ages 4, 6 and 8 (over
/// several processes, every process's share of them).
fn initial_values(
    game: &Game,
    work: &WorkDir,
    variants: &[Variant],
    ex: &Exchange,
) -> Result<Vec<StartValues>> {
    let k = variants.len();
    let mut levels: BTreeMap<u32, (Vec<u64>, Vec<f64>)> = BTreeMap::new();
    for age in [4u32, 6, 8] {
        let ids = work.load_layers(age)?.0;
        let vals = work.load_values(age)?.unwrap_or_default();
        if vals.len() != ids.len() * k {
            return Err(crate::store::StoreError::corrupt(
                work.values_path_of(age),
                "values do not match the layer",
            )
            .into());
        }
        levels.insert(age, gather_level(ex, ids, vals, k)?);
    }
    let value = |b: u64, vi: usize| -> Option<f64> {
        let (ids, vals) = levels.get(&board::age(b))?;
        let r = ids.binary_search(&game.canon(b)).ok()?;
        Some(vals[r * k + vi])
    };
    // Distinct initial states: one board per orbit of the full group, whatever group the
    // solve identifies boards by, so that the mean does not depend on `--symmetry`.
    let full = Symmetry::new(game.shape(), Group::Full);
    let distinct_starts = |p4: f64| -> Vec<u64> {
        let set: BTreeSet<u64> = game
            .starts(p4)
            .into_iter()
            .map(|(b, _)| full.canon(b))
            .collect();
        set.into_iter().collect()
    };
    Ok(variants
        .iter()
        .enumerate()
        .map(|(vi, v)| {
            // Probabilities are recorded in [0, 1], as they are stored.
            let clamp = |x: f64| if v.scored() { x } else { x.clamp(0.0, 1.0) };
            let fold = |starts: Vec<(u64, f64)>| -> Option<f64> {
                if starts.is_empty() {
                    return None;
                }
                let vals: Option<Vec<(f64, f64)>> = starts
                    .iter()
                    .map(|&(b, p)| value(b, vi).map(|x| (x, p)))
                    .collect();
                let vals = vals?;
                let x = match v.kind {
                    Kind::Guaranteed(_) => vals.iter().map(|x| x.0).fold(f64::INFINITY, f64::min),
                    _ => vals.iter().map(|(x, p)| x * p).sum(),
                };
                Some(clamp(x))
            };
            let two = if v.p4 < 1.0 {
                fold(game.starts(0.0))
            } else {
                None
            };
            let distinct = {
                let boards = distinct_starts(v.p4);
                let vals: Option<Vec<f64>> = boards.iter().map(|&b| value(b, vi)).collect();
                // Summed in the order of the boards' ids: the same bits on every run.
                vals.filter(|x| !x.is_empty())
                    .map(|x| clamp(x.iter().sum::<f64>() / x.len() as f64))
            };
            StartValues {
                two_2_tiles: two,
                initial: fold(game.starts(v.p4)),
                distinct,
            }
        })
        .collect())
}

/// Every process's share of a small layer (`ids` sorted, `values[i * k + v]`), merged.
fn gather_level(
    ex: &Exchange,
    ids: Vec<u64>,
    values: Vec<f64>,
    k: usize,
) -> Result<(Vec<u64>, Vec<f64>)> {
    if ex.is_single() {
        return Ok((ids, values));
    }
    let mut bytes = Vec::with_capacity(ids.len() * 8 * (k + 1));
    for (i, id) in ids.iter().enumerate() {
        bytes.extend_from_slice(&id.to_le_bytes());
        for v in &values[i * k..(i + 1) * k] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut all: Vec<(u64, Vec<f64>)> = Vec::new();
    for share in ex.all_gather(bytes)? {
        let words: Vec<[u8; 8]> = share
            .chunks_exact(8)
            .map(|c| c.try_into().unwrap_or([0; 8]))
            .collect();
        for row in words.chunks_exact(k + 1) {
            let values = row[1..].iter().map(|&b| f64::from_le_bytes(b)).collect();
            all.push((u64::from_le_bytes(row[0]), values));
        }
    }
    all.sort_by_key(|r| r.0);
    let ids = all.iter().map(|r| r.0).collect();
    let values = all.into_iter().flat_map(|r| r.1).collect();
    Ok((ids, values))
}

/// Reports the peak of a phase of an age of `(states, afterstates)` that ends now
/// ([`SolveConfig::trace_memory`]).
fn phase_memory(
    on_event: &(dyn Fn(Event) + Sync),
    pass: &'static str,
    phase: &'static str,
    age: u32,
    (states, afterstates): (usize, usize),
) {
    if let Some(r) = super::memory::phase_peak() {
        on_event(Event::Memory {
            pass,
            age,
            states,
            afterstates,
            phase,
            peak: r.peak,
            resident: r.now,
        });
    }
}
