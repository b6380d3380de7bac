//! The command line: raw arguments (clap) are checked into configs, then run.
//!
//! Every failure reaches `main` as an error whose message names the problem (board, file,
//! variant); `main` prints it on one line and exits with status 2.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use memmap2::Mmap;

use crate::best::{evaluate, Evaluation};
use crate::board::{self, Shape};
use crate::error::{Error, Result};
use crate::game::Game;
use crate::index::AgeIndex;
use crate::solve::{solve, Event, SolveConfig};
use crate::store::{Manifest, Store};
use crate::symmetry::Group;
use crate::variant::{parse_p4_arg, Variant};

#[derive(Parser, Debug)]
#[command(
    name = "age2048",
    version,
    about = "Strongly solves 2048 on small boards, age by age"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Enumerate every reachable state and compute exact values; write them under --data.
    Solve(SolveArgs),
    /// Print the q-value of each move and the state value of boards, from the solved index.
    Best(BestArgs),
    /// The largest tile the player can force whatever the spawns (the spawner picks cell and value).
    Guaranteed(GuaranteedArgs),
    #[cfg(feature = "report")]
    /// Run SQL (DuckDB) over the solved data: views states, afterstates, ages.
    Sql(crate::cli_report::SqlArgs),
    #[cfg(feature = "report")]
    /// Render every figure and table from the solved data.
    Report(crate::cli_report::ReportArgs),
    #[cfg(feature = "report")]
    /// Compare variants of a board: values at the starts, per-age differences, changed best moves.
    Compare(CompareArgs),
}

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
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
    /// Solve again even if DIR already holds this solve.
    #[arg(long)]
    pub force: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
}

#[derive(Args, Debug)]
pub struct BestArgs {
    /// Board size RxC.
    #[arg(long)]
    pub board: String,
    /// Data directory.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Variant to read.
    #[arg(long, default_value = "expectation")]
    pub variant: String,
    /// Probability of a 4 of the solved variant.
    #[arg(long)]
    pub p4: Option<String>,
    /// Read boards from a file, one per line ('-' for standard input).
    #[arg(long)]
    pub input: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Boards: rows separated by '/', cells by spaces, 0 or . for empty: "2 0 4/0 8 0/0 0 2".
    pub boards: Vec<String>,
}

#[cfg(feature = "report")]
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Board size RxC.
    #[arg(long)]
    pub board: String,
    /// Variants, comma-separated; the first is the base the others are compared with.
    #[arg(long)]
    pub variants: String,
    /// Data directory.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Where to write the figure and CSV files.
    #[arg(long, default_value = "reports/compare")]
    pub out: PathBuf,
}

#[cfg(feature = "report")]
impl CompareArgs {
    pub fn variant_list(&self) -> Vec<String> {
        self.variants
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect()
    }
}

#[derive(Args, Debug)]
pub struct GuaranteedArgs {
    /// Board sizes RxC, comma-separated (e.g. 1x3,2x2,2x3).
    #[arg(long)]
    pub board: String,
    /// Probability of a 4: only 0 and 1 change what the spawner may put down.
    #[arg(long)]
    pub p4: Option<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

pub fn run_guaranteed(a: &GuaranteedArgs, out: &mut dyn Write) -> Result<()> {
    let shapes: Vec<Shape> = a
        .board
        .split(',')
        .map(|b| Shape::parse(b.trim()))
        .collect::<Result<_, _>>()?;
    let p4 =
        a.p4.as_deref()
            .map(parse_p4_arg)
            .transpose()?
            .unwrap_or(crate::variant::DEFAULT_P4);
    set_threads(a.threads)?;
    let mut rows = Vec::new();
    for shape in shapes {
        let g = crate::guaranteed::guaranteed(&Game::new(shape, Group::Full), p4)?;
        rows.push((shape, g));
    }
    let io = |e| Error::io("<stdout>", e);
    match a.format {
        Format::Csv => {
            writeln!(out, "board,from_empty,two_tile_min").map_err(io)?;
            for (s, g) in &rows {
                let two = g.two_tile_min.map_or(String::new(), |t| t.to_string());
                writeln!(out, "{s},{},{two}", g.from_empty).map_err(io)?;
            }
        }
        Format::Json => {
            let v: Vec<serde_json::Value> = rows
                .iter()
                .map(|(s, g)| serde_json::json!({"board": s.to_string(), "from_empty": g.from_empty, "two_tile_min": g.two_tile_min}))
                .collect();
            writeln!(out, "{}", serde_json::Value::Array(v)).map_err(io)?;
        }
        Format::Table => {
            writeln!(
                out,
                "{:<6} {:>10} {:>13}",
                "board", "from_empty", "two_tile_min"
            )
            .map_err(io)?;
            for (s, g) in &rows {
                let two = g.two_tile_min.map_or("-".to_string(), |t| t.to_string());
                writeln!(out, "{:<6} {:>10} {:>13}", s.to_string(), g.from_empty, two)
                    .map_err(io)?;
            }
        }
    }
    Ok(())
}

/// A checked `solve` configuration.
pub fn solve_config(a: &SolveArgs) -> Result<SolveConfig> {
    let shape = Shape::parse(&a.board)?;
    let group = Group::parse(&a.symmetry)?;
    let p4 = a.p4.as_deref().map(parse_p4_arg).transpose()?;
    let variants = Variant::parse_list(&a.variant, p4)?;
    Ok(SolveConfig {
        shape,
        group,
        variants,
        data: a.data.clone(),
        force: a.force,
    })
}

pub fn set_threads(threads: Option<usize>) -> Result<()> {
    if let Some(n) = threads {
        if n == 0 {
            return Err(Error::Invalid("--threads must be at least 1".into()));
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| Error::Invalid(format!("cannot start {n} threads: {e}")))?;
    }
    Ok(())
}

pub fn run_solve(a: &SolveArgs) -> Result<()> {
    let cfg = solve_config(a)?;
    set_threads(a.threads)?;
    let t = Instant::now();
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new_spinner()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}").expect("valid template"),
    );
    let on_event = |e: Event| match e {
        Event::Forward {
            age,
            states,
            afterstates,
        } => {
            bar.set_message(format!(
                "{} forward: age {age}, {states} states, {afterstates} afterstates",
                cfg.shape
            ));
            bar.tick();
        }
        Event::BackwardStart { top, min_age } => {
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} ages {elapsed_precise} eta {eta} {msg}",
                )
                .expect("valid template"),
            );
            bar.set_length(u64::from((top - min_age) / 2 + 1));
            bar.set_position(0);
        }
        Event::Backward { age } => {
            bar.set_message(format!("{} backward: age {age}", cfg.shape));
            bar.inc(1);
        }
        Event::Resumed { pass, age } => {
            bar.println(format!("resuming the {pass} pass after age {age}"));
        }
    };
    let manifests = solve(&cfg, &on_event)?;
    bar.finish_and_clear();
    for m in &manifests {
        eprintln!("{}", summary(m));
    }
    eprintln!("solved in {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}

fn summary(m: &Manifest) -> String {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
    format!(
        "{} {}: {} states, {} afterstates, {} terminal, ages {}..{}, largest tile {}; value from two 2-tiles {}, over the initial distribution {}; forward {:.1} s, backward {:.1} s, peak memory {:.0} MB",
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
        m.timings.forward_s,
        m.timings.backward_s,
        m.peak_rss_bytes as f64 / 1e6
    )
}

/// Boards as given on the command line or in the input file.
fn read_boards(a: &BestArgs) -> Result<Vec<String>> {
    let mut boards = a.boards.clone();
    if let Some(path) = &a.input {
        let lines: Vec<String> = if path.as_os_str() == "-" {
            io::stdin()
                .lock()
                .lines()
                .collect::<io::Result<_>>()
                .map_err(|e| Error::io("<stdin>", e))?
        } else {
            let f = File::open(path).map_err(|e| Error::io(path, e))?;
            io::BufReader::new(f)
                .lines()
                .collect::<io::Result<_>>()
                .map_err(|e| Error::io(path, e))?
        };
        boards.extend(
            lines
                .into_iter()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty() && !l.starts_with('#')),
        );
    }
    if boards.is_empty() {
        return Err(Error::Invalid(
            "no board given (pass boards as arguments or --input FILE)".into(),
        ));
    }
    Ok(boards)
}

/// Memory-maps and validates the index of one age; `None` if the age has no index.
fn open_index(path: &Path) -> Result<Option<AgeIndex<Mmap>>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    // SAFETY: the map is read-only and the store never rewrites a file in place (it writes a
    // temporary file and renames it), so the mapped bytes do not change under us.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    AgeIndex::from_bytes(map)
        .map(Some)
        .map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            what: e.to_string(),
        })
}

pub fn run_best(a: &BestArgs, out: &mut dyn Write) -> Result<()> {
    let shape = Shape::parse(&a.board)?;
    let p4 = a.p4.as_deref().map(parse_p4_arg).transpose()?;
    let variant = Variant::parse(&a.variant, p4)?;
    let store = Store::new(&a.data);
    if !a.data.is_dir() {
        return Err(Error::Invalid(format!(
            "data directory {} does not exist",
            a.data.display()
        )));
    }
    let manifest = store.read_manifest(shape, &variant.name())?;
    let group = Group::parse(&manifest.symmetry)?;
    let game = Game::new(shape, group);
    let boards = read_boards(a)?;
    let mut indexes: HashMap<u32, Option<AgeIndex<Mmap>>> = HashMap::new();
    let mut rows: Vec<(String, Evaluation)> = Vec::with_capacity(boards.len());
    for text in boards {
        let code = board::parse_board(&text, shape)?;
        let age = board::age(code);
        let index = match indexes.entry(age) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(open_index(&store.index_file(shape, &variant.name(), age))?)
            }
        };
        let Some(index) = index.as_ref() else {
            return Err(Error::Unreachable {
                text,
                board: shape.to_string(),
                variant: variant.name(),
                age,
            });
        };
        let ev = evaluate(&game, &variant, index, code, &text)?;
        rows.push((text, ev));
    }
    write_evaluations(&rows, a.format, out).map_err(|e| Error::io("<stdout>", e))
}

fn num(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| v.to_string())
}

fn write_evaluations(
    rows: &[(String, Evaluation)],
    format: Format,
    out: &mut dyn Write,
) -> io::Result<()> {
    let best = |e: &Evaluation| e.best.map_or(String::new(), |d| d.letter().to_string());
    match format {
        Format::Csv => {
            writeln!(out, "board,L,R,U,D,value,best")?;
            for (text, e) in rows {
                writeln!(
                    out,
                    "{},{},{},{},{},{},{}",
                    csv_field(text),
                    num(e.q[0]),
                    num(e.q[1]),
                    num(e.q[2]),
                    num(e.q[3]),
                    e.value,
                    best(e)
                )?;
            }
        }
        Format::Json => {
            let v: Vec<serde_json::Value> = rows
                .iter()
                .map(|(text, e)| {
                    serde_json::json!({
                        "board": text, "L": e.q[0], "R": e.q[1], "U": e.q[2], "D": e.q[3],
                        "value": e.value, "best": e.best.map(|d| d.letter().to_string()),
                    })
                })
                .collect();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&v).map_err(io::Error::other)?
            )?;
        }
        Format::Table => {
            let fmt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
            let w = rows
                .iter()
                .map(|(t, _)| t.chars().count())
                .max()
                .unwrap_or(5)
                .max(5);
            writeln!(
                out,
                "{:<w$}  {:>12} {:>12} {:>12} {:>12} {:>12}  best",
                "board", "L", "R", "U", "D", "value"
            )?;
            for (text, e) in rows {
                writeln!(
                    out,
                    "{:<w$}  {:>12} {:>12} {:>12} {:>12} {:>12}  {}",
                    text,
                    fmt(e.q[0]),
                    fmt(e.q[1]),
                    fmt(e.q[2]),
                    fmt(e.q[3]),
                    format!("{:.4}", e.value),
                    best(e)
                )?;
            }
        }
    }
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
