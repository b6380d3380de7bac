//! `solve --memory` over several processes (`mpirun -np N`, feature `mpi`): each process keeps
//! to its own budget as one process does, its ages valued a chunk at a time from its work
//! files where they do not fit whole (the policy layout, parts by tiles). With every age
//! streamed (`--stream-cap`), 3x3 `goal-256` over 2 and 3 processes writes the files of the
//! unbudgeted solve over as many processes, bit for bit, and 4x4 `goal-16` over 2 and 3 the
//! values of the unbudgeted solve; each passes `verify` and no process peaks above its budget.
//! A budget too small is refused by every process naming the job's smallest, and that one
//! finishes.

use std::path::Path;
use std::process::{Command, Output};

use super::common::{self, shared_policy_solve};
use super::mpi::{answer_of, files_of, local_solve, mpirun};

/// `solve --layout policy --threads 1` of `board` under `variant` over `np` processes into
/// `data`, with the `extra` arguments.
fn solve_np(np: usize, data: &Path, board: &str, variant: &str, extra: &[&str]) -> Output {
    let mut args = vec!["solve", "--board", board, "--variant", variant];
    args.extend(["--layout", "policy", "--threads", "1"]);
    args.extend(["--data", data.to_str().unwrap()]);
    args.extend_from_slice(extra);
    mpirun(np, &args).output().expect("mpirun runs")
}

/// The plan line's count of ages valued a chunk at a time and of ages
/// ("backward plan: tables f64, 12 of 12 ages valued a chunk at a time; …").
fn streamed_ages(err: &str) -> (u32, u32) {
    let line = err
        .lines()
        .find(|l| l.starts_with("backward plan: "))
        .unwrap_or_else(|| panic!("no plan line: {err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let of = words.iter().position(|w| *w == "of").unwrap();
    (
        words[of - 1].parse().unwrap(),
        words[of + 1].parse().unwrap(),
    )
}

/// The arguments of a budgeted solve with every age streamed (`--stream-cap`, layers packed
/// beyond `cap` ids), planned with a fixed part of 128 MiB and given the least budget it
/// allows (half as much again), which the plan names as the smallest.
fn streamed(cap: &str) -> Vec<&str> {
    vec![
        "--fixed-memory",
        "128M",
        "--memory",
        "192M",
        "--stream-cap",
        cap,
    ]
}

/// The job of a budgeted solve with every age streamed over `np` processes, its progress on
/// its standard error, finished ages recorded at once (`--checkpoint-every 0`).
fn streamed_job(np: usize, data: &Path, board: &str, variant: &str, cap: &str) -> Command {
    let mut args = vec!["solve", "--board", board, "--variant", variant];
    args.extend(["--layout", "policy", "--threads", "1"]);
    args.extend(["--data", data.to_str().unwrap(), "--checkpoint-every", "0"]);
    args.extend(streamed(cap));
    mpirun(np, &args)
}

/// A budgeted solve with every age streamed over `np` processes, checked: it succeeded, valued
/// every age a chunk at a time, named the budget it was given as the smallest, and no process
/// peaked above it. Returns what it said.
fn streamed_solve(
    np: usize,
    data: &Path,
    board: &str,
    variant: &str,
    cap: &str,
    env: &[(&str, &str)],
) -> String {
    let mut job = streamed_job(np, data, board, variant, cap);
    job.envs(env.iter().copied());
    let job = job
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (peak, o) = peak_of(job);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    let (streamed, ages) = streamed_ages(&err);
    assert!(ages > 10 && streamed == ages, "{board} over {np}: {err}");
    assert!(
        err.contains("(the smallest that holds every age: --memory 192M)"),
        "{err}"
    );
    assert!(peak > 0, "no process's peak was read");
    assert!(
        peak <= 192 << 20,
        "{board} over {np}: a process peaked at {} KiB, over 192 MiB",
        peak >> 10
    );
    err
}

/// With every age streamed, 3x3 `goal-256` over 2 and 3 processes writes the unbudgeted
/// solve's files over as many processes (every part's policy file, byte for byte), with one
/// process's figures and values at the starts, and passes `verify`; over two processes its
/// messages are cut into rounds of at most 1000 elements (`AGE2048_MPI_MESSAGE_LIMIT`), so
/// that a streamed age merges the afterstates it asks for a round at a time.
#[test]
fn streamed_3x3_over_two_and_three_processes_writes_the_unbudgeted_files() {
    let dir = common::fresh_dir("mpi_budget_3x3");
    let (board, variant) = ("3x3", "goal-256");
    let single = answer_of(&common::manifest(shared_policy_solve(), board, variant));
    for (np, env) in [
        (2, &[("AGE2048_MPI_MESSAGE_LIMIT", "1000")][..]),
        (3, &[][..]),
    ] {
        let plain = local_solve(np, board, variant, POLICY);
        let budgeted = dir.join(format!("{np}-budgeted"));
        streamed_solve(np, &budgeted, board, variant, "2000", env);
        assert_eq!(
            files_of(&budgeted, board, variant),
            files_of(&plain, board, variant),
            "{board} over {np}"
        );
        let m = common::manifest(&budgeted, board, variant);
        assert_eq!(m["parts"]["count"], np as u64);
        assert_eq!(answer_of(&m), single, "{board} over {np}");
        let o = common::run(&["verify", "--data", budgeted.to_str().unwrap()]);
        assert!(o.status.success(), "verify: {}", common::stdout(&o));
        assert!(!budgeted.join(".work").exists(), "work files left behind");
    }
}

/// A budgeted solve with every age streamed over two processes, one of them killed in the
/// forward pass and again in the backward pass, resumes each time (the backward pass from the
/// levels of streamed ages, rebuilt from their work files) and ends with the files of the
/// unbudgeted solve.
#[test]
fn a_killed_streamed_solve_resumes_to_the_unbudgeted_files() {
    let dir = common::fresh_dir("mpi_budget_resume");
    let (board, variant) = ("3x3", "goal-256");
    let data = dir.join("killed");
    for (pass, after) in [("forward: age", 150), ("backward: age", 150)] {
        let mut job = streamed_job(2, &data, board, variant, "2000")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let killed = super::mpi::kill_second_after(&mut job, pass, after);
        let status = job.wait().unwrap();
        assert!(
            killed && !status.success(),
            "{pass}: the job was killed: {status}"
        );
    }
    let err = streamed_solve(2, &data, board, variant, "2000", &[]);
    assert!(
        err.contains("resuming the backward pass after age"),
        "{err}"
    );
    assert!(!err.contains("starting the backward pass over"), "{err}");
    let plain = local_solve(2, board, variant, POLICY);
    assert_eq!(
        files_of(&data, board, variant),
        files_of(&plain, board, variant)
    );
    assert!(!data.join(".work").exists(), "work files left behind");
}

/// The policy layout (parts by tiles, the default).
const POLICY: &[&str] = &["--layout", "policy"];

/// 4x4 `goal-16` with every age streamed over `np` processes: the values of the unbudgeted
/// solve over two processes (`mpi`'s, itself the one process's), every age's figures bit for
/// bit, and `verify` passes.
fn streamed_4x4(np: usize) {
    let dir = common::fresh_dir(&format!("mpi_budget_4x4_{np}"));
    let (board, variant) = ("4x4", "goal-16");
    let data = dir.join("budgeted");
    streamed_solve(np, &data, board, variant, "20000", &[]);
    let whole = local_solve(2, board, variant, &[]);
    // The same answer whatever the layout: the storage and the files aside.
    let answer = |data: &Path| {
        let mut m = answer_of(&common::manifest(data, board, variant));
        m.as_object_mut().unwrap().remove("storage");
        for a in m["ages"].as_array_mut().unwrap() {
            a.as_object_mut().unwrap().remove("index");
        }
        m
    };
    assert_eq!(answer(&data), answer(&whole), "{board} over {np}");
    let o = common::run(&["verify", "--data", data.to_str().unwrap()]);
    assert!(o.status.success(), "verify: {}", common::stdout(&o));
}

#[test]
fn streamed_4x4_goal_16_over_two_processes_has_the_unbudgeted_values() {
    streamed_4x4(2);
}

#[test]
fn streamed_4x4_goal_16_over_three_processes_has_the_unbudgeted_values() {
    streamed_4x4(3);
}

/// The largest peak resident bytes (`VmHWM`) of the processes `mpirun` runs for `job`, read
/// from `/proc` while it runs, and its output once it ends.
fn peak_of(mut job: std::process::Child) -> (u64, Output) {
    use std::io::Read;
    let (mut out, mut err) = (job.stdout.take().unwrap(), job.stderr.take().unwrap());
    let read_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let read_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).unwrap();
        v
    });
    let mut peak = 0u64;
    let status = loop {
        if let Some(s) = job.try_wait().unwrap() {
            break s;
        }
        for pid in super::mpi::children(job.id()) {
            let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                continue;
            };
            // Only the solve's processes (the launcher's helpers are not age2048).
            if !text.lines().any(|l| l == "Name:\tage2048") {
                continue;
            }
            peak = peak.max(common::vm_hwm(&text));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let output = Output {
        status,
        stdout: read_out.join().unwrap(),
        stderr: read_err.join().unwrap(),
    };
    (peak, output)
}

/// A budget too small for a process's share of an age is refused by the processes when the
/// forward pass ends, each in one line naming the same smallest budget (the largest any
/// process needs); the same command given that budget resumes and writes the files of a solve
/// given it from the start, with the unbudgeted solve's values within the tables' fixed point.
/// (Planned with no fixed part, so that 3x3's ages are what a budget must hold.)
#[test]
fn a_refused_budget_names_the_smallest_and_that_one_finishes() {
    let dir = common::fresh_dir("mpi_budget_smallest");
    let (board, variant) = ("3x3", "goal-256");
    let (data, fresh) = (dir.join("data"), dir.join("fresh"));
    let solve = |data: &Path, memory: &str| {
        solve_np(
            2,
            data,
            board,
            variant,
            &["--quiet", "--fixed-memory", "0", "--memory", memory],
        )
    };
    let o = solve(&data, "100K");
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    let named: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("age2048: error: process "))
        .map(|l| {
            assert!(l.contains(": --memory 100 KiB: "), "{l}");
            l.rsplit_once("the smallest budget that holds every age is --memory ")
                .unwrap_or_else(|| panic!("{l}"))
                .1
        })
        .collect();
    assert!(!named.is_empty(), "{err}");
    assert!(named.iter().all(|n| *n == named[0]), "{err}");
    let smallest = named[0].to_string();
    assert!(smallest.ends_with('M'), "{smallest}");
    for data in [&data, &fresh] {
        let o = solve(data, &smallest);
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
    assert_eq!(
        files_of(&data, board, variant),
        files_of(&fresh, board, variant)
    );
    // Fixed point at 2^-31: the values at the starts are the unbudgeted solve's within it.
    let (plain, m) = (
        common::manifest(shared_policy_solve(), board, variant),
        common::manifest(&data, board, variant),
    );
    assert_eq!(plain["n_states"], m["n_states"]);
    for key in ["value_two_2_tiles", "value_initial"] {
        let (a, b) = (plain[key].as_f64().unwrap(), m[key].as_f64().unwrap());
        assert!((a - b).abs() < 1e-8, "{key}: {a} against {b}");
    }
    let o = common::run(&["verify", "--data", data.to_str().unwrap()]);
    assert!(o.status.success(), "verify: {}", common::stdout(&o));
}
