//! `solve --memory`: a budget below what any solve needs is refused in one line before any
//! file is written, and the budgeted paths — layers packed and read back as streams, ages
//! valued a chunk at a time from their work files, afterstates made again from the states —
//! write what the unbudgeted solve writes: the same counts, values at the starts, per-age
//! figures and policy files, byte for byte (`--stream-cap` takes those paths on boards that
//! would fit any budget).

use std::path::Path;

use crate::common::{self, kill_after_ages_with, manifest, run, shared_policy_solve, stderr};
use serde_json::Value;

/// A solve in the policy layout (what `budget` compares: its policy files and manifest).
fn solve(data: &Path, board: &str, variant: &str, extra: &[&str]) {
    let mut args = vec!["--layout", "policy"];
    args.extend_from_slice(extra);
    common::solve(data, board, variant, &args);
}

/// What a solve wrote, without what differs from run to run (times, peak memory, the
/// manifest's own digest, which covers those).
fn written(m: &Value) -> Value {
    let mut m = m.clone();
    let o = m.as_object_mut().unwrap();
    for k in ["timings", "peak_rss_bytes", "manifest_sha256", "threads"] {
        o.remove(k);
    }
    m
}

#[test]
fn a_budget_below_any_solve_is_one_line_before_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let o = run(&[
        "solve",
        "--board",
        "2x2",
        "--memory",
        "100M",
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--memory 100 MiB"), "{err}");
    assert!(!data.exists(), "a refused solve wrote {}", data.display());
    let o = run(&["solve", "--board", "2x2", "--memory", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--memory lots: not a size"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn budgeted_solves_write_what_unbudgeted_ones_write() {
    let dir = tempfile::tempdir().unwrap();
    // The boards at once: a budgeted solve of small ages leaves a core idle much of the time.
    let root = dir.path();
    std::thread::scope(|scope| {
        // Boards of all eight symmetries, layers packed in runs of a few thousand ids and
        // fewer: 3x3 `goal-256` (285 ages, 6.1 M states) and 4x4 `goal-8`, a board of 16
        // cells (every nibble of an id a cell; 84,660 states). A scored variant streamed is
        // 2x4 `expectation` below, killed and resumed; ages of several segments streamed are
        // the unit tests' business (`streamed_ages_are_valued_as_whole_ones`, seven states a
        // segment).
        for (board, variant, cap) in [("3x3", "goal-256", "2000"), ("4x4", "goal-8", "500")] {
            scope.spawn(move || {
                // 3x3's unbudgeted solve is the policy layout's shared one.
                let plain = if board == "3x3" {
                    shared_policy_solve().to_path_buf()
                } else {
                    let plain = root.join(format!("plain-{board}"));
                    solve(&plain, board, variant, &[]);
                    plain
                };
                let budgeted = root.join(format!("budgeted-{board}"));
                solve(
                    &budgeted,
                    board,
                    variant,
                    &["--memory", "2G", "--stream-cap", cap],
                );
                let (a, b) = (
                    manifest(&plain, board, variant),
                    manifest(&budgeted, board, variant),
                );
                assert_eq!(written(&a), written(&b), "{board} {variant}");
                assert!(a["n_states"].as_u64().unwrap() > 1000);
            });
        }
    });
}

#[test]
fn a_killed_budgeted_solve_resumes_to_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    // The unbudgeted solve is the policy layout's shared one.
    let plain = shared_policy_solve();
    let b = dir.path().join("budgeted");
    let extra = ["--memory", "2G", "--stream-cap", "300"];
    let mut kills = 0;
    for n in [5, 9, 4, 12, 6, 3] {
        let args = ["--layout", "policy", extra[0], extra[1], extra[2], extra[3]];
        kills += usize::from(kill_after_ages_with(&b, "2x4", n, &args));
    }
    assert!(
        kills >= 4,
        "the solve was not killed mid-way ({kills} kills)"
    );
    solve(&b, "2x4", "expectation", &extra);
    assert_eq!(
        written(&manifest(plain, "2x4", "expectation")),
        written(&manifest(&b, "2x4", "expectation")),
    );
}

/// A budget too small for the backward pass is refused when the forward pass ends, in one
/// line naming the smallest budget that holds every age; the same command with that budget
/// resumes (the forward pass kept) and finishes with what a solve given that budget from the
/// start writes. Once a solve of the board has given its counts, a variant of the same forward
/// class is refused before any forward work. (Planned with no fixed part, so that 3x3's ages
/// are what a budget must hold.)
#[test]
fn a_refused_budget_names_the_smallest_and_that_one_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let (data, fresh) = (dir.path().join("data"), dir.path().join("fresh"));
    let solve = |data: &Path, variant: &str, memory: &str| {
        run(&[
            "solve",
            "--quiet",
            "--board",
            "3x3",
            "--variant",
            variant,
            "--layout",
            "policy",
            "--memory",
            memory,
            "--fixed-memory",
            "0",
            "--data",
            data.to_str().unwrap(),
        ])
    };
    let refused = |o: &std::process::Output| -> String {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
        let err = stderr(o);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--memory 100 KiB: age "), "{err}");
        let named = err
            .trim()
            .rsplit_once("the smallest budget that holds every age is --memory ");
        named.expect(&err).1.to_string()
    };
    let smallest = refused(&solve(&data, "goal-256", "100K"));
    assert!(smallest.ends_with('M'), "{smallest}");
    let o = solve(&data, "goal-256", &smallest);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = solve(&fresh, "goal-256", &smallest);
    assert!(o.status.success(), "{}", stderr(&o));
    let (resumed, whole) = (
        manifest(&data, "3x3", "goal-256"),
        manifest(&fresh, "3x3", "goal-256"),
    );
    assert_eq!(written(&resumed), written(&whole));
    // Fixed point at 2^-31: the values at the starts are the unbudgeted solve's within it.
    let plain = manifest(shared_policy_solve(), "3x3", "goal-256");
    for key in ["value_two_2_tiles", "value_initial"] {
        let (a, b) = (plain[key].as_f64().unwrap(), resumed[key].as_f64().unwrap());
        assert!((a - b).abs() < 1e-8, "{key}: {a} against {b}");
    }
    assert_eq!(plain["n_states"], resumed["n_states"]);
    // The counts are known now: refused before the forward pass, which leaves no work files.
    let again = refused(&solve(&data, "goal-256-discount=0.9", "100K"));
    assert_eq!(again, smallest);
    assert!(!data.join(".work").join("board=3x3").exists());
}

/// The peak resident memory of a solve given the smallest budget its plan names stays under
/// that budget, read by this test from `/proc/PID/status` while the solve runs (and by the
/// solve itself, in its manifest). 3x3 `goal-256` with its layers packed and every age valued
/// streamed: its ages are small beside the process itself (about 34 MB for a 2x2 solve), so
/// the plan is given a fixed part of 40 MiB, and the smallest budget is the least one, half
/// as much again. What a big board's ages take beside the fixed part is `benches/budget.sh`'s to
/// measure (`reports/bench/budget.md`).
#[test]
fn a_solve_given_the_smallest_budget_peaks_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut child = common::bin()
        .args(["solve", "--board", "3x3", "--variant", "goal-256"])
        .args([
            "--layout",
            "policy",
            "--fixed-memory",
            "40M",
            "--stream-cap",
            "5000",
        ])
        .args(["--memory", "60M", "--data", data.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The solve's progress on its standard error, read beside it (the pipe must not fill).
    let mut err = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut err, &mut text).unwrap();
        text
    });
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Ok(text) = std::fs::read_to_string(&status) {
            peak = peak.max(common::vm_hwm(&text));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let said = said.join().unwrap();
    assert!(code.success(), "{said}");
    // 60 MiB is the smallest budget the plan names for this solve.
    assert!(
        said.contains("(the smallest that holds every age: --memory 60M)"),
        "{said}"
    );
    assert!(peak > 0, "the solve's peak was never read");
    let recorded = manifest(&data, "3x3", "goal-256")["peak_rss_bytes"]
        .as_u64()
        .unwrap();
    for (what, bytes) in [("read from /proc", peak), ("recorded", recorded)] {
        assert!(
            bytes <= 60 << 20,
            "peak {what}: {} KiB, over 60 MiB",
            bytes >> 10
        );
    }
}
