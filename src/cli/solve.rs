//! `age2048 solve`: checked configuration, progress bar, summary.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::output::say;
use super::progress::Progress;
use super::trace::MemoryTrace;
use super::{set_threads, CliError};
use crate::index::MAX_FRACTION_BITS;
use crate::rules::variant::Given;
use crate::rules::{Arithmetic, Group, Restriction, Shape, Variant};
use crate::solver::exchange::Exchange;
use crate::solver::plan::MemoryBudget;
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
    /// Restrict play (Slizkov): the largest tile each cell may hold, a grid row-major with rows
    /// split by `/` (`"256 128 64 / 64 64 64"`). A move whose result holds a tile above its
    /// cell's cap is not played unless it wins; a state with no other move is lost. Boards are
    /// identified only by the symmetries that keep the caps (and the requirement). Recorded in
    /// the variant name (`-caps=` one hexadecimal exponent a cell).
    #[arg(long, value_name = "GRID")]
    pub caps: Option<String>,
    /// With --caps: a configuration whose reaching wins, as a grid with `.` in a free cell
    /// (`"256 128 . / . . ."`): a board holding exactly these tiles in these cells is worth 1,
    /// as one holding the goal tile is. Goal and guaranteed variants only.
    #[arg(long, value_name = "GRID")]
    pub require: Option<String>,
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
    /// writes every age as it is valued. Over several processes it is the job's, split evenly
    /// between them. The files are the same bytes either way.
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

/// A checked `solve` configuration, for a solve whose processes on this machine are
/// `sharers` (1 but under `mpirun`: the default budget is split between them).
pub fn config(a: &SolveArgs, sharers: u32) -> Result<SolveConfig, CliError> {
    let shape = Shape::parse(&a.board)?;
    let mut group = Group::parse(&a.symmetry)?;
    let given = Given::from_args(a.p4.as_deref(), a.discount.as_deref())?;
    let mut variants = Variant::parse_list(&a.variant, given)?;
    if let Some(r) = restriction(a, shape, &variants)? {
        group = r.group(group);
        variants = variants
            .into_iter()
            .map(|v| v.restricted(r.limits()))
            .collect::<Result<_, _>>()?;
    }
    let storage = storage(a)?;
    rigorous_precision(&storage, &variants)?;
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
        storage,
        budget: budget(a, sharers)?,
        stream_cap: a.stream_cap,
        trace_memory: a.trace_memory.is_some(),
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

/// The checked `--caps` and `--require` (`None` without `--caps`), for `variants`: a
/// requirement is a win, which only goal and guaranteed variants have; the policy layout's
/// readers rank the unrestricted moves, so it is refused.
fn restriction(
    a: &SolveArgs,
    shape: Shape,
    variants: &[Variant],
) -> Result<Option<Restriction>, CliError> {
    let Some(caps) = &a.caps else {
        if a.require.is_some() {
            return Err(CliError::Usage(
                "--require needs --caps (the requirement restricts a capped solve)".into(),
            ));
        }
        return Ok(None);
    };
    let r = Restriction::parse(shape, caps, a.require.as_deref())
        .map_err(|e| CliError::Usage(e.to_string()))?;
    if r.require_code().is_some() {
        if let Some(v) = variants.iter().find(|v| v.scored()) {
            return Err(CliError::Usage(format!(
                "--require: {} scores points, it has no win; a requirement applies to goal-T and guaranteed-T variants",
                v.name()
            )));
        }
    }
    if let Some(v) = variants.iter().find(|v| v.limits.is_some()) {
        return Err(CliError::Usage(format!(
            "--caps and the variant {} restricted by its name: give the restriction once",
            v.name()
        )));
    }
    Ok(Some(r))
}

/// Refuses a compact `--precision` coarser than a rigorous variant's grid: its values rounded
/// to nearest would no longer be lower bounds.
fn rigorous_precision(storage: &StorageRequest, variants: &[Variant]) -> Result<(), CliError> {
    let Precision::FractionBits(b) = storage.precision else {
        return Ok(());
    };
    for v in variants {
        if let Some(r) = v.rigor().filter(|r| r.grid.bits() > u32::from(b)) {
            let bits = r.grid.bits();
            let instead = if bits <= u32::from(MAX_FRACTION_BITS) {
                format!("--precision {bits} or more, or f64")
            } else {
                "--precision f64".into()
            };
            return Err(CliError::Usage(format!(
                "--precision {b}: the rigorous variant {} keeps its values at 2^-{bits}, which {b} fraction bits would round (up as often as down); give {instead}",
                v.name()
            )));
        }
    }
    Ok(())
}

/// The checked `--memory` and hidden `--fixed-memory`, resolved once (the default: a share
/// of the machine's over the solve's `sharers` processes on it), refused below what any solve
/// needs.
fn budget(a: &SolveArgs, sharers: u32) -> Result<MemoryBudget, CliError> {
    let size =
        |flag: &str, t: &Option<String>| t.as_deref().map(|t| parse_size(flag, t)).transpose();
    let given = size("--memory", &a.memory)?;
    let fixed = size("--fixed-memory", &a.fixed_memory)?;
    MemoryBudget::resolve(given, fixed, sharers).map_err(|e| CliError::Usage(e.to_string()))
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
/// with the feature `mpi`), this process is one of the solve's processes
/// ([`crate::solver::exchange::mpi::run_mpi`]).
pub fn run(a: &SolveArgs) -> Result<(), CliError> {
    let scheme = scheme(a)?;
    let shape = Shape::parse(&a.board)?;
    #[cfg(feature = "mpi")]
    if crate::solver::exchange::mpi::launched() {
        use crate::solver::exchange::mpi::run_mpi;
        return run_mpi(
            shape,
            scheme,
            |ex, sharers| run_with(a, ex, sharers),
            CliError::is_broken_pipe,
        );
    }
    // Checked all the same: a flag that means nothing here is still a valid one.
    let _ = scheme;
    run_with(a, &Exchange::single(shape), 1)
}

/// [`run`] as one of the processes of `ex` (the only one in a single-process solve), `sharers`
/// of them on this machine: the leader holds the lock and checks the directory before any
/// process starts.
fn run_with(a: &SolveArgs, ex: &Exchange, sharers: u32) -> Result<(), CliError> {
    let cfg = config(a, sharers)?;
    let rank = ex.rank();
    let store = Store::new(&a.data).with_part(rank, ex.parts());
    set_threads(a.threads)?;
    let wait = if a.wait { Wait::Yes } else { Wait::No };
    let dir = a.data.display().to_string();
    let _lock = if ex.is_leader() {
        Some(lock_writer(store.layout(), wait, &|pid| {
            let who = pid.map_or_else(|| "another process".to_string(), |p| format!("process {p}"));
            say(&format!("{dir} is being solved by {who}: waiting for it"));
        })?)
    } else {
        None
    };
    if !cfg.force && ex.is_leader() {
        one_group_per_board(&store, &cfg)?;
        let depth = if a.verify {
            Depth::Digests
        } else {
            Depth::Changed
        };
        clear_damaged(&store, &cfg, depth)?;
    }
    // The others start once the leader holds the directory and has checked it.
    ex.barrier()?;
    let quiet = a.quiet || !ex.is_leader();
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
    if !quiet {
        say(&cfg.budget.describe());
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
    if ex.is_leader() {
        for m in &manifests {
            say(&summary(m));
        }
        for line in rigorous_lines(&cfg.variants, &manifests) {
            say(&line);
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
        // A restricted solve's ids are joined with no other solve's: its group is the one
        // that keeps its caps, whatever the others'.
        let restricted = cfg.variants.iter().any(|v| v.limits.is_some());
        if restricted || m.caps.is_some() {
            continue;
        }
        if m.symmetry != cfg.group.name() {
            return Err(StoreError::MixedSymmetry {
                dir: store.root().to_path_buf(),
                board,
                variant: p.variant,
                existing: m.symmetry,
                wanted: cfg.group.name().into(),
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

/// For each rigorous variant, one line with its proved lower bounds at both starts, printed
/// rounded down, beside the values of its f64 twin if this run solved it too.
fn rigorous_lines(variants: &[Variant], manifests: &[Manifest]) -> Vec<String> {
    let mut lines = Vec::new();
    for (v, m) in variants.iter().zip(manifests) {
        let Some(grid) = v.rigor().map(|r| r.grid) else {
            continue;
        };
        let twin = Variant {
            arith: Arithmetic::F64,
            ..*v
        };
        let f64_twin = variants
            .iter()
            .zip(manifests)
            .find(|(t, _)| **t == twin)
            .map(|(_, t)| t);
        let bound = |x: Option<f64>| x.map_or("-".into(), |x| grid.floor_text(x, grid.digits()));
        let beside = |x: Option<Option<f64>>| match x {
            Some(Some(x)) => format!(" (f64 {x:.12})"),
            _ => String::new(),
        };
        lines.push(format!(
            "{} {}: proved lower bounds ({}): over the initial distribution {}{}, from the empty board {}{}",
            m.board,
            m.variant,
            v.arith.describe(),
            bound(m.value_initial),
            beside(f64_twin.map(|t| t.value_initial)),
            bound(m.value_empty),
            beside(f64_twin.map(|t| t.value_empty)),
        ));
    }
    lines
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
