//! What the integration tests share: running the real binary, and the real solves they read,
//! made once per test process in `CARGO_TARGET_TMPDIR`.
#![allow(dead_code)] // each test crate uses its own part

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

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
/// test binary (`<prefix>_*`) are removed first, so the solves do not pile up.
pub fn fresh_dir(prefix: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    if let Ok(rd) = std::fs::read_dir(tmp) {
        for e in rd.flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{prefix}_"))
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    tmp.join(format!("{prefix}_{}", std::process::id()))
}

/// Solves each `(board, variants)` into a fresh folder named by `prefix`; returns the folder.
pub fn solve_all(prefix: &str, solves: &[(&str, &str)]) -> PathBuf {
    let dir = fresh_dir(prefix);
    for (board, variants) in solves {
        let o = run(&[
            "solve",
            "--board",
            board,
            "--variant",
            variants,
            "--quiet",
            "--data",
            dir.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "solve {board} {variants}: {}",
            stderr(&o)
        );
    }
    dir
}

/// The solves several test binaries read (`serve`, `policy`, and the browser tests after
/// them): 2x3 expectation and goal-128 and 3x3 expectation in the full layout, 2x3 pessimistic
/// in the compact one, in one fixed folder of `CARGO_TARGET_TMPDIR`. The first binary that asks
/// solves them; the others' `solve` finds them finished and reuses them once their files check
/// out (`--wait` takes turns with a binary solving them at the same time), so one `make test`
/// solves 3x3 once for them all. Only readers may use it: a test that damages data makes its own.
pub fn shared_solves() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shared_data");
        for args in [
            &["--board", "2x3", "--variant", "expectation,goal-128"][..],
            &["--board", "3x3", "--variant", "expectation"],
            &[
                "--board",
                "2x3",
                "--variant",
                "pessimistic",
                "--layout",
                "compact",
            ],
        ] {
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
