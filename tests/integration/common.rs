//! What the integration tests share: running the real binary, and the real solves they read,
//! made once per build of the binary in `CARGO_TARGET_TMPDIR`.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
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

/// A fresh folder `CARGO_TARGET_TMPDIR/<prefix>_<pid>`; folders left by earlier runs of the
/// test binary (`<prefix>_<pid>`, and files named `<prefix>_<pid>.<ext>` beside them) are
/// removed first, so the solves do not pile up. Only a process id may follow the prefix:
/// `serve_figures` leaves `serve_figures_other_<pid>` alone.
pub fn fresh_dir(prefix: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    if let Ok(rd) = std::fs::read_dir(tmp) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let earlier = name
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('_'))
                .map(|rest| rest.split('.').next().unwrap_or(""))
                .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
            if earlier {
                let _ =
                    std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path()));
            }
        }
    }
    tmp.join(format!("{prefix}_{}", std::process::id()))
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

/// Solves each `(board, variants)` into a fresh folder named by `prefix`; returns the folder.
pub fn solve_all(prefix: &str, solves: &[(&str, &str)]) -> PathBuf {
    let dir = fresh_dir(prefix);
    for (board, variants) in solves {
        solve(&dir, board, variants, &[]);
    }
    dir
}

/// A folder of `CARGO_TARGET_TMPDIR` for the solves `name` that several subjects read (and
/// the browser tests after them), keyed by the binary under test (its size and modification
/// time), so that a rebuilt solver solves them again instead of its tests reading an older
/// build's output; the folders of other builds are removed first. Each `args` is one `solve`
/// (`--quiet --wait --data DIR` added): a run whose folder is already there finds the solves
/// finished and reuses them once their files check out (`--wait` takes turns with another
/// test run solving them at the same time, as two checkouts sharing one target directory
/// may). Only readers may use them: a test that damages data makes its own.
fn shared(name: &str, solves: &[&[&str]]) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
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
    let dir = tmp.join(key);
    for args in solves {
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
    }
    dir
}

/// 2x3 and 2x4 expectation and goal-128 and 3x3 expectation in the full layout, 2x3
/// pessimistic in the compact one ([`shared`]): read by `serve`, `policy`, `compact`, `cli`,
/// `play`, `solve_3x3` and the browser tests, so that one `make test` solves each once for
/// them all.
pub fn shared_solves() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        shared(
            "shared_data",
            &[
                &["--board", "2x3", "--variant", "expectation,goal-128"],
                &["--board", "2x4", "--variant", "expectation,goal-128"],
                &["--board", "3x3", "--variant", "expectation"],
                &[
                    "--board",
                    "2x3",
                    "--variant",
                    "pessimistic",
                    "--layout",
                    "compact",
                ],
            ],
        )
    })
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
