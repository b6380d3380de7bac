//! What the integration tests share: running the real binary, and the real solves they read,
//! made once per build of the binary in the tests' folder ([`scratch`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

pub const BIN: &str = env!("CARGO_BIN_EXE_age2048");

/// The binary, to be given arguments (and spawned, for the tests that signal it).
pub fn bin() -> Command {
    Command::new(BIN)
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

/// Runs the binary with `input` on its standard input.
pub fn run_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Where the tests write their folders: `AGE2048_TEST_TMPDIR` where it is set (`make test`
/// points it at a tmpfs where there is one: the suite creates and deletes tens of thousands of
/// files, and ext4 spends seconds of system time a solve finding inodes for new files among
/// those deleted in the last 30 s), else cargo's `CARGO_TARGET_TMPDIR`.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| match std::env::var_os("AGE2048_TEST_TMPDIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            std::fs::create_dir_all(&d).expect("AGE2048_TEST_TMPDIR can be made");
            d
        }
        _ => PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    })
}

/// A fresh folder `<scratch>/<prefix>_<pid>` ([`scratch`]); folders left by earlier runs of the
/// test binary (`<prefix>_<pid>`, and files named `<prefix>_<pid>.<ext>` beside them) are
/// removed first, so the solves do not pile up. Only a process id may follow the prefix:
/// `serve_figures` leaves `serve_figures_other_<pid>` alone.
pub fn fresh_dir(prefix: &str) -> PathBuf {
    let tmp = scratch();
    if let Ok(rd) = std::fs::read_dir(tmp) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('_'))
                .map(|rest| rest.split('.').next().unwrap_or(""))
                .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
            // This process's folder, or one of a test process that has ended; not the folder
            // of another test process still running (nextest runs a process a test; two
            // checkouts may share a target directory).
            let earlier = pid.is_some_and(|pid| {
                pid.parse() == Ok(std::process::id()) || !Path::new("/proc").join(pid).exists()
            });
            if earlier {
                let _ =
                    std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path()));
            }
        }
    }
    tmp.join(format!("{prefix}_{}", std::process::id()))
}

/// Regression: `fresh_dir` removed the folders of every other process with the prefix, live
/// or not, so tests in processes of their own (nextest) lost each other's solves mid-test.
#[test]
fn a_fresh_dir_keeps_the_folders_of_live_processes_and_removes_ended_ones() {
    let tmp = scratch();
    let prefix = "fresh_dir_check";
    // Process 1 runs as long as the machine does; no process has a pid above pid_max.
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let live = tmp.join(format!("{prefix}_1"));
    let ended = tmp.join(format!("{prefix}_{}", pid_max + 1));
    let mine = tmp.join(format!("{prefix}_{}", std::process::id()));
    for d in [&live, &ended, &mine] {
        std::fs::create_dir_all(d).unwrap();
    }
    assert_eq!(fresh_dir(prefix), mine);
    assert!(live.exists(), "a live process's folder was removed");
    assert!(!ended.exists() && !mine.exists());
    std::fs::remove_dir_all(&live).unwrap();
}

/// A value made once per key and shared by the tests that ask for it.
pub type Cell<T> = Arc<OnceLock<T>>;

/// The value of `key` in `map`, made by `make` on first use. The map is locked only to find
/// the key's cell: a test asking for another key goes on while this one is made, and one
/// asking for the same key waits for it.
pub fn cached<T: Send + Sync + 'static>(
    map: &'static OnceLock<Mutex<HashMap<String, Cell<T>>>>,
    key: String,
    make: impl FnOnce() -> T,
) -> Cell<T> {
    let cell = map
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(key)
        .or_default()
        .clone();
    cell.get_or_init(make);
    cell
}

/// `solve --quiet` of `board` under `variants` into `data`, with the `extra` arguments; the
/// solve must succeed.
pub fn solve(data: &Path, board: &str, variants: &str, extra: &[&str]) {
    let mut args = vec!["solve", "--quiet", "--board", board, "--variant", variants];
    args.extend(["--data", data.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(
        o.status.success(),
        "solve {board} {variants} {extra:?}: {}",
        stderr(&o)
    );
}

/// Where `store::Layout` puts the manifest of `board` under `variant` in `data`.
pub fn manifest_path(data: &Path, board: &str, variant: &str) -> PathBuf {
    let shape = age2048::rules::Shape::parse(board).expect("a board size");
    age2048::store::Layout::new(data).manifest_file(shape, variant)
}

/// The manifest of `board` under `variant` in `data` ([`manifest_path`]).
pub fn manifest(data: &Path, board: &str, variant: &str) -> serde_json::Value {
    let path = manifest_path(data, board, variant);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// The manifest of `board` under `variant` in `data` as `store::manifest` reads it (its
/// values bit for bit).
pub fn store_manifest(data: &Path, board: &str, variant: &str) -> age2048::store::Manifest {
    let path = manifest_path(data, board, variant);
    age2048::store::manifest::read_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The manifests of every variant of `board` in `data`, by variant name: how a test finds a
/// solve whose name carries what it was given (caps, requirement, arithmetic, `p4`).
pub fn manifests_of(data: &Path, board: &str) -> Vec<age2048::store::Manifest> {
    // The folder `store::Layout` puts each variant's manifest of the board in.
    let dir = manifest_path(data, board, "expectation")
        .parent()
        .unwrap()
        .to_path_buf();
    let mut all: Vec<age2048::store::Manifest> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| {
            age2048::store::manifest::read_path(&e.path())
                .unwrap_or_else(|err| panic!("{}: {err}", e.path().display()))
        })
        .collect();
    all.sort_by(|a, b| a.variant.cmp(&b.variant));
    all
}

/// Solves each `(board, variants)` into a fresh folder named by `prefix`; returns the folder.
pub fn solve_all(prefix: &str, solves: &[(&str, &str)]) -> PathBuf {
    let dir = fresh_dir(prefix);
    for (board, variants) in solves {
        solve(&dir, board, variants, &[]);
    }
    dir
}

/// A folder of [`scratch`] for the solves `name` that several subjects read (and
/// the browser tests after them), keyed by the binary under test (its size and modification
/// time), so that a rebuilt solver solves them again instead of its tests reading an older
/// build's output; the folders of other builds are removed first, once a test run. Each
/// `args` is one `solve` (`--quiet --wait --data DIR` added), made once a test run
/// ([`shared_solve`]), in order: a run whose folder is already there finds the solves
/// finished and reuses them once their files check out (`--wait` takes turns with another
/// test run solving them at the same time, as two checkouts sharing one target directory
/// may). Only readers may use them: a test that damages data makes its own.
fn shared(name: &str, solves: &[&[&str]]) -> PathBuf {
    for args in solves {
        shared_solve(name, args);
    }
    shared_dir(name)
}

/// The folder of the shared solves `name` ([`shared`]).
fn shared_dir(name: &str) -> PathBuf {
    static DIRS: OnceLock<Mutex<HashMap<String, Cell<PathBuf>>>> = OnceLock::new();
    let cell = cached(&DIRS, name.to_string(), || {
        let tmp = scratch();
        let meta = std::fs::metadata(BIN).expect("the binary under test");
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let key = format!("{name}-{:x}-{modified:x}", meta.len());
        if let Ok(rd) = std::fs::read_dir(tmp) {
            for e in rd.flatten() {
                let file = e.file_name().to_string_lossy().into_owned();
                if file.starts_with(&format!("{name}-")) && file != key {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        tmp.join(key)
    });
    cell.get().expect("made above").clone()
}

/// One solve `args` of the shared folder `name` ([`shared`]), made once a test run, without
/// waiting for the folder's other solves: a test that reads one board's solves goes on while
/// another board is solved into the folder (readers see finished solves only). Returns the
/// folder.
fn shared_solve(name: &str, args: &[&str]) -> PathBuf {
    static MADE: OnceLock<Mutex<HashMap<String, Cell<PathBuf>>>> = OnceLock::new();
    let cell = cached(&MADE, format!("{name} {}", args.join(" ")), || {
        let dir = shared_dir(name);
        let mut all = vec![
            "solve",
            "--quiet",
            "--wait",
            "--data",
            dir.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let o = run(&all);
        assert!(o.status.success(), "solve {args:?}: {}", stderr(&o));
        dir
    });
    cell.get().expect("made above").clone()
}

/// The solves of [`shared_solves`], 3x3 last (the longest: the tests of the other boards go
/// on once theirs are made, [`shared_solves_of`]).
const SHARED_DATA: [&[&str]; 4] = [
    &["--board", "2x3", "--variant", "expectation,goal-128"],
    &[
        "--board",
        "2x3",
        "--variant",
        "pessimistic",
        "--layout",
        "compact",
    ],
    &["--board", "2x4", "--variant", "expectation,goal-128"],
    &["--board", "3x3", "--variant", "expectation"],
];

/// 2x3 and 2x4 expectation and goal-128 and 3x3 expectation in the full layout, 2x3
/// pessimistic in the compact one ([`shared`]): read by `serve`, `policy`, `compact`, `cli`,
/// `play`, `solve_3x3`, `brute`, `mpi` and the browser tests, so that one `make test` solves
/// each once for them all.
pub fn shared_solves() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| shared("shared_data", &SHARED_DATA))
}

/// The folder of [`shared_solves`] once the solves of `board` in it are made (another board
/// may still be solving into it): for the tests that read that board only (`best`, `sql`
/// and manifests of it; not `verify` or `report` of the whole folder).
pub fn shared_solves_of(board: &str) -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let mut any = false;
    for args in SHARED_DATA.iter().filter(|a| a[1] == board) {
        shared_solve("shared_data", args);
        any = true;
    }
    assert!(any, "no shared solve of {board}");
    DIR.get_or_init(|| shared_dir("shared_data"))
}

/// 3x3 `goal-256` and 2x4 `expectation` in the policy layout ([`shared`]), read by `policy`
/// (against the full layout's solves) and by `budget` (against budgeted solves).
pub fn shared_policy_solve() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        shared(
            "shared_policy",
            &[
                &[
                    "--board",
                    "3x3",
                    "--variant",
                    "goal-256",
                    "--layout",
                    "policy",
                ],
                &[
                    "--board",
                    "2x4",
                    "--variant",
                    "expectation",
                    "--layout",
                    "policy",
                ],
            ],
        )
    })
}

/// The papers' 3x3 goal table (goal-256, goal-512, goal-1024) and 2x3 under five variants
/// ([`shared`]), read by `goals`, `solve_3x3`, `compact` and `policy`.
pub fn shared_goal_solves() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        shared(
            "shared_goals",
            &[
                &["--board", "3x3", "--variant", "goal-256,goal-512,goal-1024"],
                &[
                    "--board",
                    "2x3",
                    "--variant",
                    "expectation,optimistic,pessimistic",
                ],
                &[
                    "--board",
                    "2x3",
                    "--variant",
                    "goal-32,goal-32-discount=0.9",
                ],
            ],
        )
    })
}

/// 3x3 `goal-256` in the compact layout ([`shared`]), read by `compact` (against the full
/// layout's solve) and by `mpi` (against the same solve over three processes).
pub fn shared_compact_solve() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        shared(
            "shared_compact",
            &[&[
                "--board",
                "3x3",
                "--variant",
                "goal-256",
                "--layout",
                "compact",
            ]],
        )
    })
}

/// Starts `solve` of `board` into `data` with the `extra` arguments and its progress lines on
/// a pipe, and kills it (SIGKILL) as soon as it has reported `n` finished ages (forward and
/// backward together); returns whether it was killed before finishing.
pub fn kill_after_ages_with(data: &Path, board: &str, n: usize, extra: &[&str]) -> bool {
    use std::io::{BufRead, BufReader};
    let mut child = bin()
        .args(["solve", "--board", board, "--data", data.to_str().unwrap()])
        .args(extra)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let mut seen = 0;
    let mut killed = false;
    for line in BufReader::new(err).lines() {
        let line = line.unwrap();
        if line.starts_with("forward: age") || line.starts_with("backward: age") {
            seen += 1;
            if seen == n {
                killed = child.kill().is_ok();
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    killed && !status.success()
}

/// Runs the binary with `args` (and `input` on its standard input if given): its standard
/// output, or the command and its error output if it failed.
pub fn run_ok(args: &[&str], input: Option<&str>) -> Result<String, String> {
    let mut child = bin()
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{BIN}: {e}"))?;
    if let Some(text) = input {
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "`age2048 {}` failed ({}):\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// `sql --format csv` of `query` over `data`: its standard output (the query must run).
pub fn sql_csv(data: &Path, query: &str) -> String {
    let o = run(&[
        "sql",
        "--data",
        data.to_str().unwrap(),
        "--format",
        "csv",
        query,
    ]);
    assert!(o.status.success(), "{query}: {}", stderr(&o));
    stdout(&o)
}

/// [`sql_csv`] as rows of fields, the header first ([`csv_rows`]).
pub fn sql_rows(data: &Path, query: &str) -> Vec<Vec<String>> {
    csv_rows(&sql_csv(data, query))
}

/// CSV text as rows of fields, split at commas (blank lines left out).
pub fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Which states [`sample_boards`] takes.
pub enum Sample {
    /// One in `n` by id, in id order (the same ones on every run).
    EveryNth(u64),
    /// `rows` states that are not terminal, by DuckDB's reservoir sampling with `seed` (only
    /// the subject `mpi` samples so).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Reservoir { rows: u64, seed: u64 },
}

/// Boards of the solve of `board` under `variant` in `data`, as `board_text` writes them.
pub fn sample_boards(data: &Path, board: &str, variant: &str, sample: Sample) -> Vec<String> {
    let q = match sample {
        Sample::EveryNth(n) => format!(
            "SELECT board_text(id, board) AS b FROM states WHERE board = '{board}' \
             AND variant = '{variant}' AND id % {n} = 0 ORDER BY id"
        ),
        Sample::Reservoir { rows, seed } => format!(
            "SELECT board_text(id, '{board}') FROM (SELECT id FROM states WHERE board = '{board}' \
             AND variant = '{variant}' AND NOT terminal) USING SAMPLE {rows} ROWS (reservoir, {seed})"
        ),
    };
    sql_csv(data, &q)
        .lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_matches('"').to_string())
        .collect()
}

/// Where `best` reads its boards.
pub enum Boards<'a> {
    /// As arguments.
    Args(&'a [&'a str]),
    /// From a file (`--input FILE`), one a line.
    File(&'a [String]),
    /// From standard input (`--input -`), this text.
    Stdin(&'a str),
}

/// `best --format csv` of `boards` of size `board` in `data`, under `variant` if given (the
/// default variant otherwise), with the `extra` arguments: its output, or why it failed.
pub fn best_csv(
    data: &Path,
    board: &str,
    variant: Option<&str>,
    extra: &[&str],
    boards: Boards,
) -> Result<String, String> {
    let mut args = vec!["best", "--board", board, "--data", data.to_str().unwrap()];
    if let Some(v) = variant {
        args.extend(["--variant", v]);
    }
    args.extend(["--format", "csv"]);
    args.extend_from_slice(extra);
    match boards {
        Boards::Args(texts) => {
            args.extend_from_slice(texts);
            run_ok(&args, None)
        }
        Boards::File(texts) => {
            let input = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
            std::fs::write(input.path(), texts.join("\n") + "\n").map_err(|e| e.to_string())?;
            let file = input.path().to_str().unwrap().to_string();
            args.extend(["--input", &file]);
            run_ok(&args, None)
        }
        Boards::Stdin(text) => {
            args.extend(["--input", "-"]);
            run_ok(&args, Some(text))
        }
    }
}

/// One row of `best --format csv`.
#[derive(Debug, Clone)]
pub struct BestRow {
    pub board: String,
    /// The values of the moves left, right, up and down (none where a move changes nothing).
    pub q: [Option<f64>; 4],
    pub value: f64,
    pub best: String,
}

/// [`best_csv`]'s rows, checked to be CSV as `best` writes it, one for each board.
pub fn best_rows(
    data: &Path,
    board: &str,
    variant: Option<&str>,
    extra: &[&str],
    boards: Boards,
) -> Result<Vec<BestRow>, String> {
    let n = match boards {
        Boards::Args(texts) => texts.len(),
        Boards::File(texts) => texts.len(),
        Boards::Stdin(text) => text.lines().filter(|l| !l.is_empty()).count(),
    };
    let out = best_csv(data, board, variant, extra, boards)?;
    let mut lines = out.lines();
    let header = lines.next().unwrap_or("");
    if header != "board,L,R,U,D,value,best" {
        return Err(format!("unexpected CSV header {header:?}"));
    }
    let float = |field: &str, what: &str| -> Result<Option<f64>, String> {
        if field.is_empty() {
            return Ok(None);
        }
        field
            .parse::<f64>()
            .map(Some)
            .map_err(|e| format!("{what}: {field:?}: {e}"))
    };
    let mut rows = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 7 {
            return Err(format!("CSV row with {} fields: {line:?}", f.len()));
        }
        let q = [
            float(f[1], "L")?,
            float(f[2], "R")?,
            float(f[3], "U")?,
            float(f[4], "D")?,
        ];
        let value = float(f[5], "value")?.ok_or_else(|| format!("empty value: {line:?}"))?;
        rows.push(BestRow {
            board: f[0].to_string(),
            q,
            value,
            best: f[6].to_string(),
        });
    }
    if rows.len() != n {
        return Err(format!("{n} boards in, {} CSV rows out", rows.len()));
    }
    Ok(rows)
}

/// The values of a full solve's states by id (read from the files its manifest `m` lists).
pub fn state_values(dir: &Path, m: &age2048::store::Manifest) -> HashMap<u64, f64> {
    let mut solved = HashMap::new();
    for f in m.files.iter().filter(|f| f.path.starts_with("states/")) {
        let c =
            age2048::store::parquet::read_columns(&dir.join(&f.path), &["id", "value"]).unwrap();
        let (age2048::store::ColumnData::U64(ids), age2048::store::ColumnData::F64(vals)) =
            (&c[0], &c[1])
        else {
            panic!("columns of {}", f.path)
        };
        for (id, v) in ids.iter().zip(vals) {
            solved.insert(id.unwrap(), v.unwrap());
        }
    }
    assert_eq!(solved.len() as u64, m.n_states);
    solved
}

/// The exit status of `child` once it ends, or `None` if it still runs after `limit`: a
/// liveness bound, not a timing (the caller kills what it started and fails).
pub fn wait_within(child: &mut Child, limit: std::time::Duration) -> Option<ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The peak resident bytes (`VmHWM`) a `/proc/PID/status` text gives (0 if none).
pub fn vm_hwm(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}
