//! One solve: runs the forward and backward passes for a board and a set of variants, and
//! records what they find through the store, resumably.
//!
//! Variants are grouped by [`ForwardClass`]; each class gets one forward pass and one backward
//! pass that values all its variants together. Progress is recorded after every finished age
//! (forward: the layers; backward: the outputs, then the state values the next age needs, then
//! the age's record), so a killed solve started again picks up after its last finished age and
//! writes the same bytes. A class is solved in three stages, each in a module of its own:
//!
//! - [`forward`]: the forward pass resumed or run, its layers saved on a thread of their own;
//! - [`backward`]: the backward pass planned within the budget, resumed or run, its ages
//!   written and recorded on a writer thread;
//! - [`finish`]: the records of every age (of every process) merged, the values at the
//!   starts, the ages table and the manifests, then the work files removed.
//!
//! Over several processes every stage is the same code: the processes agree through the
//! [`Exchange`]'s named operations, which in one process move nothing.

mod backward;
mod finish;
mod forward;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::exchange::Exchange;
use super::forward::ForwardPlan;
use super::plan::{MemoryBudget, Plan};
use super::{Result, SolveError};
use crate::rules::{ForwardClass, Game, Group, Shape, Variant};
use crate::store::work::{WorkDir, WorkMeta};
use crate::store::{
    AgeStats, FileEntry, LayoutKind, Manifest, Storage, Store, StoreError, LAYOUT_VERSION,
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
    /// age is. Over several processes it is the job's: each process takes its share
    /// ([`crate::solver::plan::BackwardPlan::write_ahead`]). The files are the same bytes
    /// either way.
    pub write_ahead: u64,
    /// The memory budget (`solve --memory`, resolved once: [`MemoryBudget::resolve`]).
    pub budget: MemoryBudget,
    /// Pack layers beyond this many ids and value every age streamed, whatever fits (the
    /// tests' way to run the budgeted paths on small boards; `solve --stream-cap`).
    pub stream_cap: Option<usize>,
    /// Report the process's peak resident memory at the end of every age of the forward pass
    /// and every phase of an age of the backward pass ([`Event::Memory`]; the peak is reset
    /// after each, see [`super::memory`]).
    pub trace_memory: bool,
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
                    // A rigorous variant's grid, which holds its values exactly (u53's 54 bits
                    // a value would be f64 anyway).
                    Precision::Default if v.rigor().is_some() => v
                        .rigor()
                        .map(|r| r.grid.bits() as u8)
                        .filter(|&b| b <= DEFAULT_PROBABILITY_FRACTION_BITS),
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

/// Ages whose state values are kept in `.work/` until the solve ends: the initial states' ages
/// (two spawns: 4, 6, 8), whose values the values at the starts are read from ([`finish`]).
const INITIAL_AGES: u32 = 8;

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
/// (`store` is its part's: [`Store::with_part`]); the leader writes the manifests, which list
/// every part. Every process returns them.
pub fn solve_exchanged(
    store: &Store,
    cfg: &SolveConfig,
    ex: &Exchange,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Vec<Manifest>> {
    // The allocator keeps what one age frees for the next (`huge`), in proportion to this
    // process's share, unless the user gave a budget: then what is freed goes back at once.
    if cfg.budget.given {
        super::huge::hand_back();
    } else {
        super::huge::keep_freed(ex.processes());
    }
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
        manifests.extend(on_pool(ex, || {
            solve_class(
                store, &game, cfg.group, &class, &variants, cfg, ex, on_event,
            )
        })?);
    }
    let order = |m: &Manifest| cfg.variants.iter().position(|v| v.name() == m.variant);
    manifests.sort_by_key(order);
    Ok(manifests)
}

/// Runs `f`, the driver of a class's passes, on a worker of the global pool when it has more
/// than one and the solve is one process's: a parallel loop started from a worker is pushed on
/// its own queue and the driver takes part in it, where one started from outside the pool is
/// injected, wakes a sleeping worker and puts the caller to sleep until the last task ends. An
/// age of 3x3 runs about ten such loops of a few hundred microseconds each, so those
/// hand-overs were a share of the wall (`reports/bench/time.md`).
///
/// Otherwise the driver stays on the calling thread:
/// - with one worker, because it waits for the layer saver and the age writer, threads of
///   their own whose parallel loops need a worker, which a driver waiting on the only one
///   would never free (with two or more, a waiting driver runs their tasks itself:
///   [`wait_helping`]);
/// - over several processes, because only the thread that started MPI may call it
///   ([`Exchange`]).
fn on_pool<R: Send>(ex: &Exchange, f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_num_threads() > 1 && ex.is_single() {
        rayon::scope(|_| f())
    } else {
        f()
    }
}

/// Waits until `ready` gives something, on a worker of the pool; `None` at once elsewhere,
/// where the caller blocks as threads do. A driver [`on_pool`] put on a worker runs the
/// pool's pending tasks meanwhile (the writer's and the saver's parallel loops, injected from
/// their threads): blocked in a channel or on a lock it would hold its worker idle, and the
/// thread it waits for would have the other workers only for its loops (3x3's three variants
/// ran on 1.45 of two cores, the writer's loops on one). With no task to run it naps, 20 µs
/// at first and at most about a third of a millisecond, so that it is back soon after its
/// turn comes (an age of 3x3 takes about ten milliseconds).
fn wait_helping<T>(mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    rayon::current_thread_index()?;
    let mut nap = Duration::from_micros(20);
    loop {
        if let Some(t) = ready() {
            return Some(t);
        }
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            nap = Duration::from_micros(20);
        } else {
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_micros(320));
        }
    }
}

/// Sends `item`, running the pool's tasks while the channel is full ([`wait_helping`]).
fn send_helping<T>(
    tx: &std::sync::mpsc::SyncSender<T>,
    item: T,
) -> std::result::Result<(), std::sync::mpsc::SendError<T>> {
    use std::sync::mpsc::{SendError, TrySendError};
    let mut item = Some(item);
    let sent = wait_helping(
        || match tx.try_send(item.take().expect("an item to send")) {
            Ok(()) => Some(Ok(())),
            Err(TrySendError::Disconnected(t)) => Some(Err(SendError(t))),
            Err(TrySendError::Full(t)) => {
                item = Some(t);
                None
            }
        },
    );
    sent.unwrap_or_else(|| tx.send(item.take().expect("an item to send")))
}

/// Joins a thread of the solve, running the pool's tasks until it has ended
/// ([`wait_helping`]).
fn join_helping<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> std::thread::Result<T> {
    wait_helping(|| h.is_finished().then_some(()));
    h.join()
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

/// One forward class being solved: what every stage reads.
struct Class<'a> {
    store: &'a Store,
    game: &'a Game,
    group: Group,
    class: &'a ForwardClass,
    variants: &'a [Variant],
    /// How each variant is stored.
    storages: Vec<Storage>,
    cfg: &'a SolveConfig,
    ex: &'a Exchange<'a>,
    on_event: &'a (dyn Fn(Event) + Sync),
    /// The budget's plan before the forward pass.
    plan: Plan,
    /// Whether ages may be valued a chunk at a time: only in the policy layout, and over
    /// several processes only under parts whose spawns stay home (by tiles: no level holds
    /// others' boards; elsewhere every age is valued whole).
    can_stream: bool,
    /// This process's work files.
    work: WorkDir,
}

impl Class<'_> {
    fn shape(&self) -> Shape {
        self.game.shape()
    }

    /// The number of variants.
    fn k(&self) -> usize {
        self.variants.len()
    }

    /// Tells that a work file was missing or damaged, and what is done again.
    fn damaged(&self, e: &StoreError, redo: &str) {
        (self.on_event)(Event::Damaged {
            problem: e.to_string(),
            redo: redo.to_string(),
        })
    }

    /// Reports the peak of a phase of an age of `(states, afterstates)` that ends now
    /// ([`SolveConfig::trace_memory`]).
    fn phase_memory(
        &self,
        pass: &'static str,
        phase: &'static str,
        age: u32,
        (states, afterstates): (usize, usize),
    ) {
        if let Some(r) = super::memory::phase_peak() {
            (self.on_event)(Event::Memory {
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
    let mut plan = cfg.budget.plan()?;
    if let Some(cap) = cfg.stream_cap {
        plan = plan.streaming(cap);
    }
    let storages: Vec<Storage> = variants
        .iter()
        .map(|v| cfg.storage.for_variant(v))
        .collect();
    let shape = game.shape();
    same_processes(store, shape, class, ex)?;
    let can_stream = ex.parts().spawns_stay_home() && !storages.iter().any(Storage::has_index);
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
        WorkDir::of_part(
            store.layout(),
            shape,
            &class.key(),
            ex.rank(),
            ex.processes(),
        )
    };
    let s = Class {
        store,
        game,
        group,
        class,
        variants,
        storages,
        cfg,
        ex,
        on_event,
        plan,
        can_stream,
        work,
    };
    s.own_work()?;
    let mut fwd = forward::run(&s)?;
    let Some(bwd) = backward::run(&s, &mut fwd)? else {
        // Starting the backward pass over needs every layer, and a pass under way let go of
        // some: the forward pass is made again.
        s.work.remove()?;
        return solve_class(store, game, group, class, variants, cfg, ex, on_event);
    };
    finish::run(&s, &fwd, &bwd, t0)
}

/// Refuses work files of an unfinished solve over another number of processes: they are not
/// this one's to resume from, nor to remove.
fn same_processes(store: &Store, shape: Shape, class: &ForwardClass, ex: &Exchange) -> Result<()> {
    let processes = ex.processes();
    let Some(&other) = store
        .layout()
        .work_process_counts(shape, &class.key())
        .iter()
        .find(|&&c| c != processes)
    else {
        return Ok(());
    };
    let run = |n: u32| {
        if n == 1 {
            "one process (without mpirun)".to_string()
        } else {
            format!("{n} processes (mpirun -np {n})")
        }
    };
    Err(SolveError::Processes(format!(
        "{}: the unfinished solve of board {shape} there was run by {}, this one by {}: \
         run it again by {}, or remove that folder to start over",
        store.layout().work_dir(shape, &class.key()).display(),
        run(other),
        run(processes),
        run(other),
    )))
}

impl Class<'_> {
    /// Makes the work folder this solve's: work files of another group or tool version (or
    /// none) are not ours to resume from, and are removed.
    fn own_work(&self) -> Result<()> {
        let meta = WorkMeta {
            version: env!("CARGO_PKG_VERSION").to_string(),
            board: self.shape().to_string(),
            symmetry: self.group.name().to_string(),
            class: self.class.key(),
        };
        match self.work.read_json::<WorkMeta>("meta.json") {
            Ok(Some(m)) if m == meta => {}
            other => {
                if let Err(e) = &other {
                    self.damaged(e, "starting the solve over");
                }
                self.work.remove()?;
                self.work.write_json("meta.json", &meta)?;
            }
        }
        Ok(())
    }
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
    super::forward::afterstates_of(game, class, age, states, plan.cap)?.into_layer()
}

/// The work record of `age` with the figures and files of each of the pass's `k` variants (a
/// missing or short record is damage): what the resume check and the finish both read.
fn checked_record(
    work: &WorkDir,
    age: u32,
    k: usize,
) -> std::result::Result<AgeRecord, StoreError> {
    let rec: AgeRecord = work
        .load_record(age)?
        .ok_or_else(|| StoreError::corrupt(work.record_path_of(age), "missing"))?;
    if rec.stats.len() != k || rec.files.len() != k {
        return Err(StoreError::corrupt(
            work.record_path_of(age),
            format!("{} variants recorded, {k} expected", rec.stats.len()),
        ));
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, sync_channel};

    /// Regression: a driver on a worker of the pool that waited for the writer blocked in the
    /// channel, its worker idle while the writer's loops had the other worker only. Here the
    /// other worker is held until the consumer has taken two items, so only a driver that
    /// runs the pool's tasks while it waits lets the consumer's loop run: one that blocks
    /// fails this test's deadline.
    #[test]
    fn a_driver_on_the_pool_runs_the_writers_loops_while_it_waits() {
        let pool = &rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (tx, rx) = sync_channel::<u32>(0);
        let (held_tx, held_rx) = channel::<()>();
        let (holding_tx, holding_rx) = channel::<()>();
        std::thread::scope(|s| {
            let consumer = s.spawn(|| {
                let mut got = Vec::new();
                for item in rx {
                    // The writer's loop, injected from outside the pool.
                    got.push(pool.install(|| {
                        use rayon::prelude::*;
                        (0..64u32).into_par_iter().map(|i| i + item).sum::<u32>()
                    }));
                    if got.len() == 2 {
                        let _ = held_tx.send(());
                    }
                }
                got
            });
            let driver = s.spawn(move || {
                pool.scope(move |scope| {
                    scope.spawn(move |_| {
                        let _ = holding_tx.send(());
                        let _ = held_rx.recv_timeout(Duration::from_secs(30));
                    });
                    // The driver's worker waits here, so the other one holds.
                    holding_rx.recv().unwrap();
                    for item in 0..3 {
                        send_helping(&tx, item).unwrap();
                    }
                });
            });
            let started = Instant::now();
            while !driver.is_finished() {
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "the driver waited without running the pool's tasks"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            driver.join().unwrap();
            assert_eq!(consumer.join().unwrap(), vec![2016, 2080, 2144]);
        });
    }
}
