//! `age2048 solve`: checked configuration, progress bar, summary.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::say;
use super::{set_threads, CliError};
use crate::index::MAX_FRACTION_BITS;
use crate::rules::variant::Given;
use crate::rules::{Group, Shape, Variant};
use crate::solver::dist::Exchange;
use crate::solver::run::solve_exchanged;
use crate::solver::{
    Event, Precision, SolveConfig, StorageRequest, DEFAULT_MIN_FREE, DEFAULT_WRITE_AHEAD,
};
use crate::store::lock::{lock_writer, Wait};
use crate::store::parts::Scheme;
use crate::store::verify::{check_variant, Depth};
use crate::store::{LayoutKind, Manifest, Store, StoreError};

#[derive(Args, Debug)]
pub struct SolveArgs {
    /// Board size RxC, e.g. 3x3 (R·C ≤ 16).
    #[arg(long)]
    pub board: String,
    /// Data directory.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Symmetry group identifying boards: full, flips or none.
    #[arg(long, default_value = "full")]
    pub symmetry: String,
    /// Variants, comma-separated: expectation, optimistic, pessimistic, goal-T, guaranteed-T.
    #[arg(long, default_value = "expectation")]
    pub variant: String,
    /// Probability of a 4 (default 0.1); recorded in the variant name.
    #[arg(long)]
    pub p4: Option<String>,
    /// Discount γ in (0, 1] of goal-T variants (default 1): each move multiplies the value by
    /// γ; recorded in the variant name (goal-32-discount=0.95).
    #[arg(long)]
    pub discount: Option<String>,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
    /// Solve again even if DIR already holds this solve (also under another symmetry group).
    #[arg(long)]
    pub force: bool,
    /// If another process is solving in DIR, wait for it instead of exiting with status 2.
    #[arg(long)]
    pub wait: bool,
    /// Check the SHA-256 of every file of a finished solve before reusing it (without it,
    /// only the files changed since their digests were last checked are hashed); a damaged
    /// solve is solved again either way.
    #[arg(long)]
    pub verify: bool,
    /// Disk space to leave free on DIR's file system, e.g. 500M or 20G (default 256M). Before
    /// each age the solve checks that the age's files fit with this much to spare; if not it
    /// stops with status 2, and the same command resumes once there is room.
    #[arg(long, value_name = "SIZE")]
    pub min_free: Option<String>,
    /// Memory the solve may spend on finished ages waiting to be written, e.g. 64M (default
    /// 512M): small ages are written beside the backward pass within it, bigger ones as the
    /// pass values them. Less holds less memory and keeps fewer cores busy on small ages; 0
    /// writes every age as it is valued. The files are the same bytes either way.
    #[arg(long, value_name = "SIZE")]
    pub write_ahead: Option<String>,
    /// How to store the solve: `full` (every state and afterstate in Parquet, indexes with
    /// state ids and f64 values) or `compact` for big boards (per age an index of the
    /// afterstate ids and their values, the `ages` table and the manifest; Parquet only for
    /// `--parquet-ages`; no state ids), or `policy` for a player (per age the optimal move of
    /// every live state in about 1.3 bits, the `ages` table and the manifest; no values, no
    /// ids).
    #[arg(long, default_value = "full", value_name = "LAYOUT")]
    pub layout: String,
    /// Policy layout: keep the optimal moves of the states optimal play reaches only (a
    /// forward pass from the starts after the values are known, following one optimal move
    /// of each state). A player that follows the stored moves never leaves them; any other
    /// board gets a move that is not an optimal one.
    #[arg(long)]
    pub reach: bool,
    /// Compact layout: fraction bits of the stored values (fixed point, within 2^-(BITS+1);
    /// default 16 for points, 32 for probabilities), or `f64` for every bit. An age whose
    /// largest value needs more than 53 bits at BITS is stored as f64 (exact).
    #[arg(long, value_name = "BITS")]
    pub precision: Option<String>,
    /// Compact layout: also write the `states` and `afterstates` Parquet of ages A to B
    /// (inclusive), e.g. 4-100.
    #[arg(long, value_name = "A-B")]
    pub parquet_ages: Option<String>,
    /// Memory the solve may hold at once, e.g. 20G (default: 80 % of the machine's, printed at
    /// the start; under `mpirun`, each process's, and the default is split between the
    /// processes on one machine). Within it the solve adapts rather than fails: a layer too big to hold is
    /// packed and streamed, ages are valued a chunk at a time from the work files, values are
    /// held in fixed point; it says before any file is written if the budget is below what any
    /// solve needs, and before the backward pass (before the forward pass if the board was
    /// solved before) if an age cannot be valued within it, naming the smallest budget that
    /// holds every age.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Pack layers beyond N ids and value every age a chunk at a time, whatever fits (for the
    /// tests of the budgeted paths on small boards).
    #[arg(long, value_name = "N", hide = true)]
    pub stream_cap: Option<usize>,
    /// Plan the memory budget with this fixed part instead of the process's (for the tests
    /// of the budget's refusals on small boards).
    #[arg(long, value_name = "SIZE", hide = true)]
    pub fixed_memory: Option<String>,
    /// Record finished ages as done every SECONDS instead of every second (for the tests of
    /// a resume after processes recorded different ages).
    #[arg(long, value_name = "SECONDS", hide = true)]
    pub checkpoint_every: Option<f64>,
    /// Write the process's peak resident memory phase by phase to FILE (tab-separated, one
    /// row an age of the forward pass, five an age of the backward; reports/bench/memory.md
    /// says what each phase holds), and the bytes it has sent the other processes so far.
    /// Under `mpirun`, process R writes FILE.R. Linux only.
    #[arg(long, value_name = "FILE")]
    pub trace_memory: Option<PathBuf>,
    /// Under `mpirun` (a build with the feature `mpi`): how the boards are split between the
    /// processes: `hash` (even parts), `sums` (by the board's line sums, which a move keeps
    /// along its direction) or `tiles` (by where the tiles of 8 and more stand, which a spawn
    /// keeps). Any split gives the same values and figures.
    #[arg(long, default_value = "tiles", value_name = "SCHEME")]
    pub parts: String,
}

/// A checked `solve` configuration.
pub fn config(a: &SolveArgs) -> Result<SolveConfig, CliError> {
    let shape = Shape::parse(&a.board)?;
    let group = Group::parse(&a.symmetry)?;
    let given = Given::from_args(a.p4.as_deref(), a.discount.as_deref())?;
    let variants = Variant::parse_list(&a.variant, given)?;
    Ok(SolveConfig {
        shape,
        group,
        variants,
        force: a.force,
        min_free: match &a.min_free {
            Some(t) => parse_size("--min-free", t)?,
            None => DEFAULT_MIN_FREE,
        },
        write_ahead: match &a.write_ahead {
            Some(t) => parse_size("--write-ahead", t)?,
            None => DEFAULT_WRITE_AHEAD,
        },
        storage: storage(a)?,
        memory: memory(a)?,
        stream_cap: a.stream_cap,
        trace_memory: a.trace_memory.is_some(),
        fixed_memory: fixed_memory(a)?,
        checkpoint_every: match a.checkpoint_every {
            Some(t) if t.is_finite() && t >= 0.0 => Some(std::time::Duration::from_secs_f64(t)),
            Some(t) => {
                return Err(CliError::Usage(format!(
                    "bad --checkpoint-every {t}: seconds, 0 or more"
                )))
            }
            None => None,
        },
    })
}

/// The checked `--memory` (its default: a share of the machine's), refused below what any
/// solve needs.
fn memory(a: &SolveArgs) -> Result<u64, CliError> {
    let bytes = match &a.memory {
        Some(t) => parse_size("--memory", t)?,
        None => crate::solver::plan::default_budget(),
    };
    let fixed = fixed_memory(a)?.unwrap_or(crate::solver::plan::FIXED);
    crate::solver::plan::Plan::with_fixed(bytes, fixed)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(bytes)
}

/// The checked hidden `--fixed-memory`.
fn fixed_memory(a: &SolveArgs) -> Result<Option<u64>, CliError> {
    a.fixed_memory
        .as_deref()
        .map(|t| parse_size("--fixed-memory", t))
        .transpose()
}

/// The checked `--layout`, `--precision` and `--parquet-ages`.
fn storage(a: &SolveArgs) -> Result<StorageRequest, CliError> {
    let layout = match a.layout.as_str() {
        "full" => LayoutKind::Full,
        "compact" => LayoutKind::Compact,
        "policy" => LayoutKind::Policy,
        other => {
            return Err(CliError::Usage(format!(
                "--layout {other}: not a layout (full, compact or policy)"
            )))
        }
    };
    let why = match layout {
        LayoutKind::Full => Some("the full layout stores every value as f64, every age in Parquet"),
        LayoutKind::Policy => Some("the policy layout stores the optimal moves only"),
        LayoutKind::Compact => None,
    };
    if let Some(why) = why {
        for (flag, given) in [
            ("--precision", a.precision.is_some()),
            ("--parquet-ages", a.parquet_ages.is_some()),
        ] {
            if given {
                return Err(CliError::Usage(format!(
                    "{flag} applies to --layout compact only ({why})"
                )));
            }
        }
    }
    let precision = match a.precision.as_deref() {
        None => Precision::Default,
        Some("f64") => Precision::F64,
        Some(t) => match t.parse::<u8>() {
            Ok(b) if b <= MAX_FRACTION_BITS => Precision::FractionBits(b),
            _ => {
                return Err(CliError::Usage(format!(
                    "--precision {t}: not a number of fraction bits from 0 to {MAX_FRACTION_BITS}, or f64"
                )))
            }
        },
    };
    let parquet_ages = match a.parquet_ages.as_deref() {
        None => None,
        Some(t) => {
            let bad = || {
                CliError::Usage(format!(
                    "--parquet-ages {t}: not a range of ages A-B with A ≤ B (e.g. 4-100)"
                ))
            };
            let (lo, hi) = t.split_once('-').ok_or_else(bad)?;
            let lo: u32 = lo.trim().parse().map_err(|_| bad())?;
            let hi: u32 = hi.trim().parse().map_err(|_| bad())?;
            if lo > hi {
                return Err(bad());
            }
            Some((lo, hi))
        }
    };
    if a.reach && layout != LayoutKind::Policy {
        return Err(CliError::Usage(
            "--reach applies to --layout policy only (it keeps the moves of the states optimal play reaches)"
                .into(),
        ));
    }
    Ok(StorageRequest {
        layout,
        precision,
        parquet_ages,
        reach: a.reach,
    })
}

/// The checked `--parts`.
fn scheme(a: &SolveArgs) -> Result<Scheme, CliError> {
    Scheme::parse(&a.parts).ok_or_else(|| {
        CliError::Usage(format!(
            "--parts {}: not a way to split boards (hash, sums or tiles)",
            a.parts
        ))
    })
}

/// Runs `age2048 solve`: one writer per data directory (the lock is held until the solve is
/// done), one symmetry group per board, then the solve. Started by an MPI launcher (a build
/// with the feature `mpi`), this process is one of the solve's processes ([`run_mpi`]).
pub fn run(a: &SolveArgs) -> Result<(), CliError> {
    scheme(a)?;
    #[cfg(feature = "mpi")]
    if crate::solver::dist::mpi::launched() {
        return run_mpi(a);
    }
    let single = Exchange::single(Shape::parse(&a.board)?);
    run_with(a, &single)
}

/// One process of `mpirun -np N age2048 solve`: the processes solve together, each its part;
/// an error in any of them is printed by it in one line and ends the whole job with its
/// status (`MPI_Abort`), so that no process waits for one that stopped.
#[cfg(feature = "mpi")]
fn run_mpi(a: &SolveArgs) -> Result<(), CliError> {
    use crate::error::ErrorKind;
    use crate::solver::dist::mpi::Mpi;
    use crate::solver::dist::Transport;
    let mpi = Mpi::init()?;
    // A panic in any thread ends the process at once (after its message), and the launcher
    // then ends the job: the others must not wait in a collective for it.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
    if mpi.ranks() == 1 {
        let single = Exchange::single(Shape::parse(&a.board)?);
        return run_with(a, &single);
    }
    // The default budget is the machine's share split between the processes on it.
    crate::solver::plan::share_machine(mpi.on_this_machine()?);
    let parts = crate::store::parts::Parts {
        count: mpi.ranks(),
        scheme: scheme(a)?,
    };
    let result = Exchange::new(&mpi, parts, Shape::parse(&a.board)?)
        .map_err(CliError::from)
        .and_then(|ex| run_with(a, &ex));
    if let Err(e) = &result {
        if !e.is_broken_pipe() {
            let _ = writeln!(
                std::io::stderr().lock(),
                "age2048: error: process {} of {}: {}",
                mpi.rank(),
                mpi.ranks(),
                super::one_line(e)
            );
            mpi.abort(i32::from(e.kind().exit_code()));
        }
    }
    result
}

/// [`run`] as one of the processes of `ex` (the only one in a single-process solve): process
/// 0 holds the lock and checks the directory before any process starts.
fn run_with(a: &SolveArgs, ex: &Exchange) -> Result<(), CliError> {
    let cfg = config(a)?;
    let rank = ex.rank();
    let store = Store::new(&a.data).with_part(rank, ex.parts());
    set_threads(a.threads)?;
    let wait = if a.wait { Wait::Yes } else { Wait::No };
    let dir = a.data.display().to_string();
    let _lock = if rank == 0 {
        Some(lock_writer(store.layout(), wait, &|pid| {
            let who = pid.map_or_else(|| "another process".to_string(), |p| format!("process {p}"));
            say(&format!("{dir} is being solved by {who}: waiting for it"));
        })?)
    } else {
        None
    };
    if !cfg.force && rank == 0 {
        one_group_per_board(&store, &cfg)?;
        let depth = if a.verify {
            Depth::Digests
        } else {
            Depth::Changed
        };
        clear_damaged(&store, &cfg, depth)?;
    }
    // The others start once process 0 holds the directory and has checked it.
    ex.all_max(0)?;
    let quiet = a.quiet || rank != 0;
    let trace = match &a.trace_memory {
        Some(path) if ex.is_single() => Some(MemoryTrace::create(path)?),
        // One file a process: FILE.R.
        Some(path) => {
            let mut own = path.clone().into_os_string();
            own.push(format!(".{rank}"));
            Some(MemoryTrace::create(std::path::Path::new(&own))?)
        }
        None => None,
    };
    // The process's allocator keeps what one age frees for the next (`solver::huge`), unless
    // the user gave a budget: then what is freed goes back at once.
    if a.memory.is_some() {
        crate::solver::hand_back_memory();
    } else {
        crate::solver::keep_freed_memory();
    }
    if !quiet {
        let sharers = crate::solver::plan::machine_sharers();
        let given = if a.memory.is_some() {
            "--memory".to_string()
        } else if sharers > 1 {
            format!(
                "80 % of this machine's over the solve's {sharers} processes on it; --memory \
                 sets each one's"
            )
        } else {
            "80 % of this machine's; --memory sets it".to_string()
        };
        say(&format!(
            "memory budget {} ({given})",
            crate::solver::plan::human(cfg.memory)
        ));
    }
    let t = Instant::now();
    let progress = Progress::new(quiet);
    let on_event = |e: Event| {
        if let Some(trace) = &trace {
            let (forward, backward) = ex.sent();
            trace.record(&e, forward + backward);
        }
        progress.event(cfg.shape, e)
    };
    let manifests = solve_exchanged(&store, &cfg, ex, &on_event)?;
    progress.finish();
    if rank == 0 {
        for m in &manifests {
            say(&summary(m));
        }
        say(&format!("solved in {:.1} s", t.elapsed().as_secs_f64()));
    }
    if !ex.is_single() {
        // What this process sent the others (benches/mpi.sh reads it).
        let (forward, backward) = ex.sent();
        say(&format!(
            "process {rank} of {}: sent {forward} bytes in the forward pass, {backward} in the \
             backward pass",
            ex.parts().count
        ));
    }
    Ok(())
}

/// Refuses to solve a board under another symmetry group than its finished variants in the
/// directory (their ids could not be joined with the new ones).
fn one_group_per_board(store: &Store, cfg: &SolveConfig) -> Result<(), CliError> {
    let board = cfg.shape.to_string();
    for (p, m) in store.manifests() {
        if p.board != board {
            continue;
        }
        // An unreadable manifest is the reuse check's business (it solves that variant again).
        let Ok(m) = m else { continue };
        if m.symmetry != cfg.group.name() {
            return Err(StoreError::MixedSymmetry {
                dir: store.root().to_path_buf(),
                board,
                variant: p.variant,
                existing: m.symmetry,
                wanted: cfg.group.name(),
            }
            .into());
        }
    }
    Ok(())
}

/// Checks the finished solves this run would reuse (every byte with `--verify`, else the files
/// changed since they were sealed), and clears the damaged ones so that they are solved again.
fn clear_damaged(store: &Store, cfg: &SolveConfig, depth: Depth) -> Result<(), CliError> {
    for v in &cfg.variants {
        let name = v.name();
        if !store.layout().manifest_file(cfg.shape, &name).exists() {
            continue; // not solved, or unfinished: the solve resumes it
        }
        let problems = check_variant(store, cfg.shape, &name, depth);
        if problems.is_empty() {
            continue;
        }
        for p in &problems {
            say(&format!("verify: {p}"));
        }
        say(&format!(
            "{} {name}: {} problem{}, solving it again",
            cfg.shape,
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        ));
        store.clear_variant(cfg.shape, &name)?;
    }
    Ok(())
}

/// Progress of a solve: a bar on a terminal, a plain line per finished age otherwise (for
/// logs, and for tests that act at a given age), nothing with `--quiet`; each with the pass's
/// rate in boards (states and afterstates) per second, and the backward pass's time left from
/// the boards still to value (ages differ in size by orders of magnitude, so counting ages
/// would mislead).
struct Progress {
    mode: Mode,
    pass: Mutex<Pass>,
}

/// The pass under way.
struct Pass {
    started: Instant,
    done: u64,
    /// Boards in all (0 if unknown: the forward pass finds them as it goes).
    total: u64,
}

impl Pass {
    fn new(total: u64) -> Pass {
        Pass {
            started: Instant::now(),
            done: 0,
            total,
        }
    }
}

enum Mode {
    Bar(ProgressBar),
    Plain,
    Quiet,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .expect("valid template"),
            );
            Mode::Bar(bar)
        } else {
            Mode::Plain
        };
        Progress {
            mode,
            pass: Mutex::new(Pass::new(0)),
        }
    }

    /// Counts `boards` more done in the pass; returns the pass's rate and, if its total is
    /// known, the seconds left at that rate.
    fn advance(&self, boards: u64) -> (String, Option<f64>) {
        let mut p = self.pass.lock().unwrap_or_else(|e| e.into_inner());
        p.done += boards;
        let secs = p.started.elapsed().as_secs_f64();
        let per_s = if secs > 0.0 {
            p.done as f64 / secs
        } else {
            0.0
        };
        let left =
            (p.total > 0 && per_s > 0.0).then(|| p.total.saturating_sub(p.done) as f64 / per_s);
        let rate = if per_s >= 1e6 {
            format!("{:.2} M boards/s", per_s / 1e6)
        } else {
            format!("{:.1} k boards/s", per_s / 1e3)
        };
        (rate, left)
    }

    fn event(&self, shape: Shape, e: Event) {
        match e {
            Event::Damaged { problem, redo } => {
                // Damage is told even with --quiet: it explains a solve that takes longer.
                let line = format!("work file damaged: {problem}: {redo}");
                match &self.mode {
                    Mode::Bar(bar) => bar.println(line),
                    _ => say(&line),
                }
            }
            // `MemoryTrace`'s.
            Event::Memory { .. } => {}
            _ if matches!(self.mode, Mode::Quiet) => {}
            Event::Forward {
                age,
                states,
                afterstates,
            } => {
                let (rate, _) = self.advance((states + afterstates) as u64);
                let line = format!(
                    "forward: age {age}, {states} states, {afterstates} afterstates, {rate}"
                );
                match &self.mode {
                    Mode::Bar(bar) => {
                        bar.set_message(format!("{shape} {line}"));
                        bar.tick();
                    }
                    _ => say(&line),
                }
            }
            Event::BackwardStart {
                top,
                min_age,
                boards,
            } => {
                *self.pass.lock().unwrap_or_else(|e| e.into_inner()) = Pass::new(boards);
                match &self.mode {
                    Mode::Bar(bar) => {
                        bar.set_style(
                            ProgressStyle::with_template(
                                "{bar:40} {percent:>3}% {elapsed_precise} eta {eta} {msg}",
                            )
                            .expect("valid template"),
                        );
                        bar.set_length(boards.max(1));
                        bar.set_position(0);
                    }
                    _ => say(&format!(
                        "backward: from age {top} down to {min_age}, {boards} boards"
                    )),
                }
            }
            Event::Backward { age, boards } => {
                let (rate, left) = self.advance(boards);
                match &self.mode {
                    Mode::Bar(bar) => {
                        bar.set_message(format!("{shape} backward: age {age}, {rate}"));
                        bar.inc(boards);
                    }
                    _ => say(&format!(
                        "backward: age {age}, {boards} boards, {rate}{}",
                        left.map_or(String::new(), |s| format!(", {s:.0} s left"))
                    )),
                }
            }
            Event::Plan { text } => match &self.mode {
                Mode::Bar(bar) => bar.println(text),
                _ => say(&text),
            },
            Event::Resumed { pass, age } => {
                let line = format!("resuming the {pass} pass after age {age}");
                match &self.mode {
                    Mode::Bar(bar) => bar.println(line),
                    _ => say(&line),
                }
            }
        }
    }

    fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

/// The file of `--trace-memory`: a header, then a row an [`Event::Memory`], each written as
/// it comes (a killed solve keeps the rows so far).
struct MemoryTrace {
    path: PathBuf,
    /// `None` once a write failed (told once; the solve goes on untraced).
    file: Mutex<Option<std::fs::File>>,
    started: Instant,
}

impl MemoryTrace {
    /// The columns: the pass and age, the age's states and afterstates, the phase that
    /// ended, the peak resident bytes during it, the bytes resident at its end, seconds
    /// since the solve started, and the bytes this process has sent the others so far (0 in
    /// one process).
    const HEADER: &'static str =
        "pass\tage\tstates\tafterstates\tphase\tpeak_bytes\tresident_bytes\tseconds\tsent_bytes\n";

    /// Checks that the system tells phases apart, then creates `path` (replacing it) with
    /// the header.
    fn create(path: &std::path::Path) -> Result<MemoryTrace, CliError> {
        let shown = path.display();
        if !crate::solver::can_trace_memory() {
            return Err(CliError::Usage(format!(
                "--trace-memory {shown}: this system does not let a process read and reset its peak memory (/proc/self/status, /proc/self/clear_refs)"
            )));
        }
        let file = std::fs::File::create(path)
            .and_then(|mut f| f.write_all(Self::HEADER.as_bytes()).map(|()| f))
            .map_err(|e| CliError::Usage(format!("--trace-memory {shown}: {e}")))?;
        Ok(MemoryTrace {
            path: path.to_path_buf(),
            file: Mutex::new(Some(file)),
            started: Instant::now(),
        })
    }

    fn record(&self, e: &Event, sent: u64) {
        let Event::Memory {
            pass,
            age,
            states,
            afterstates,
            phase,
            peak,
            resident,
        } = e
        else {
            return;
        };
        let row = format!(
            "{pass}\t{age}\t{states}\t{afterstates}\t{phase}\t{peak}\t{resident}\t{:.3}\t{sent}\n",
            self.started.elapsed().as_secs_f64()
        );
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = file.as_mut() {
            if let Err(err) = f.write_all(row.as_bytes()) {
                say(&format!(
                    "--trace-memory {}: {err}; the solve goes on without it",
                    self.path.display()
                ));
                *file = None;
            }
        }
    }
}

fn summary(m: &Manifest) -> String {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
    let storage = if m.storage.is_full() {
        String::new()
    } else if !m.storage.has_index() {
        // Every byte of the layout (policy files, ages table; not the manifest) a state.
        format!(
            "; {}, {:.1} MB, {:.2} bits a state",
            m.storage.describe(),
            m.total_bytes() as f64 / 1e6,
            m.total_bytes() as f64 * 8.0 / m.n_states.max(1) as f64
        )
    } else {
        format!(
            "; {}, {:.1} GB",
            m.storage.describe(),
            m.total_bytes() as f64 / 1e9
        )
    };
    format!(
        "{} {}: {} states, {} afterstates, {} terminal, ages {}..{}, largest tile {}; value from two 2-tiles {}, over the initial distribution {}, mean over the distinct initial states {}; forward {:.1} s, backward {:.1} s, peak memory {:.0} MB{storage}",
        m.board,
        m.variant,
        m.n_states,
        m.n_afterstates,
        m.n_terminal_states,
        m.min_age,
        m.max_age,
        m.max_tile,
        opt(m.value_two_2_tiles),
        opt(m.value_initial),
        opt(m.value_initial_distinct),
        m.timings.forward_s,
        m.timings.backward_s,
        m.peak_rss_bytes as f64 / 1e6
    )
}

/// A size as given on the command line to `flag`: bytes, or a number with K, M, G or T
/// (powers of 1024).
fn parse_size(flag: &str, text: &str) -> Result<u64, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "{flag} {text}: not a size (bytes, or a number with K, M, G or T, e.g. 500M)"
        ))
    };
    let t = text.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_uppercase()),
        _ => (t, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        _ => return Err(bad()),
    };
    let x: f64 = num.trim().parse().map_err(|_| bad())?;
    let bytes = x * (1u64 << shift) as f64;
    if !(0.0..u64::MAX as f64).contains(&bytes) {
        return Err(bad()); // negative, too large, or not a number
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("--min-free", "0").unwrap(), 0);
        assert_eq!(parse_size("--min-free", "4096").unwrap(), 4096);
        assert_eq!(parse_size("--min-free", "1k").unwrap(), 1024);
        assert_eq!(parse_size("--min-free", "500M").unwrap(), 500 << 20);
        assert_eq!(parse_size("--min-free", "1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("--min-free", "2T").unwrap(), 2 << 40);
        for bad in ["", "G", "-1G", "5X", "1e400", "nanG", "99999999999T"] {
            let e = parse_size("--write-ahead", bad).unwrap_err().to_string();
            assert!(e.starts_with("--write-ahead "), "{bad}: {e}");
        }
    }
}
