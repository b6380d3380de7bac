//! The solve over several processes (`mpirun -np N age2048 solve`, feature `mpi`), run by the
//! real `mpirun`: the same dataset as one process's solve of the same board, variant and
//! layout (manifest figures and values at the starts, every age's counts and figures, state
//! and afterstate rows bit for bit, `best`'s answers), which `verify` passes; a job killed
//! mid-solve resumes to the same files; a resume with another number of processes is refused;
//! messages cut into many small rounds give the same files.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};

use super::common::{
    self, shared_compact_solve, shared_goal_solves, shared_policy_solve, shared_solves_of, Boards,
    Cell, Sample, BIN,
};

/// Open MPI's processes yield the CPU while they wait for a message, as they do when a host
/// holds more processes than cores: the test threads run several jobs and solves side by side
/// on two cores, where a process spinning in a wait took the core of the one it waited for
/// (a 2-process 3x3 `goal-64` solve took 4 to 5 times the CPU and the time). What the
/// processes compute and write is the same.
pub const YIELD_WHEN_IDLE: [&str; 3] = ["--mca", "mpi_yield_when_idle", "1"];

/// `mpirun -np N age2048 ARGS…`: as root too, more processes than cores allowed, no binding
/// to cores, waits yielding the CPU (the test threads share the machine).
pub fn mpirun(np: usize, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args([
            "-np",
            &np.to_string(),
            "--oversubscribe",
            "--bind-to",
            "none",
        ])
        .args(YIELD_WHEN_IDLE)
        .arg(BIN)
        .args(args);
    c
}

/// `solve --quiet` of `board` under `variant` over `np` processes into `data`.
fn solve_np(np: usize, data: &Path, board: &str, variant: &str, extra: &[&str]) -> Output {
    let mut args = vec!["solve", "--quiet", "--board", board, "--variant", variant];
    args.extend(["--data", data.to_str().unwrap(), "--threads", "1"]);
    args.extend_from_slice(extra);
    mpirun(np, &args).output().expect("mpirun runs")
}

/// `solve --quiet --threads 1` of `board` under `variant` over `np` processes on this machine
/// with the `extra` arguments, made once and shared: the files the tests of this subject and
/// of `hosts` compare with. Only readers may use it.
pub fn local_solve(np: usize, board: &str, variant: &str, extra: &[&str]) -> PathBuf {
    static SOLVES: OnceLock<Mutex<HashMap<String, Cell<PathBuf>>>> = OnceLock::new();
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let key: String = format!("{np}_{board}_{variant}_{}", extra.join("_"))
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let cell = common::cached(&SOLVES, key.clone(), || {
        let dir = ROOT
            .get_or_init(|| common::fresh_dir("mpi_local"))
            .join(&key);
        let o = solve_np(np, &dir, board, variant, extra);
        assert!(o.status.success(), "{key}: {}", common::stderr(&o));
        dir
    });
    cell.get().expect("made above").clone()
}

/// The manifest without what depends on how the solve ran (its files, timings, threads,
/// memory, parts, own digest) and its ages without their files' entries.
pub fn answer_of(m: &serde_json::Value) -> serde_json::Value {
    let mut m = m.clone();
    let o = m.as_object_mut().unwrap();
    for k in [
        "files",
        "timings",
        "threads",
        "peak_rss_bytes",
        "parts",
        "manifest_sha256",
    ] {
        o.remove(k);
    }
    for a in o["ages"].as_array_mut().unwrap() {
        let a = a.as_object_mut().unwrap();
        a.remove("index");
        a.remove("policy");
    }
    m
}

/// A digest of every row of the `states` and `afterstates` of a board and variant.
fn rows_digest(data: &Path, board: &str, variant: &str) -> String {
    let q = format!(
        "SELECT bit_xor(hash(id, value, terminal, moves, best, gap, empty)), count(*) FROM states \
         WHERE board = '{board}' AND variant = '{variant}'; \
         SELECT bit_xor(hash(id, value, empty)), count(*) FROM afterstates \
         WHERE board = '{board}' AND variant = '{variant}'"
    );
    let o = common::run(&[
        "sql",
        "--data",
        data.to_str().unwrap(),
        "--format",
        "csv",
        &q,
    ]);
    assert!(o.status.success(), "sql: {}", common::stderr(&o));
    common::stdout(&o)
}

/// The solve over `np` processes into `multi` is the one-process solve in `single`: the
/// manifest's answer and every age's figures bit for bit, its parts, every row where the
/// layout keeps rows, `best`'s answers on boards sampled from `full` (a full solve of the
/// same board and variant), and `verify` passes.
fn same_solve(single: &Path, multi: &Path, full: &Path, np: u64, board: &str, variant: &str) {
    let (s, m) = (
        common::manifest(single, board, variant),
        common::manifest(multi, board, variant),
    );
    assert_eq!(m["parts"]["count"], np, "{board} {variant}");
    assert_eq!(answer_of(&s), answer_of(&m), "{board} {variant} over {np}");
    let ages = m["ages"].as_array().unwrap();
    assert!(ages.len() > 10);
    if s.get("storage").is_none() {
        assert_eq!(
            rows_digest(single, board, variant),
            rows_digest(multi, board, variant)
        );
    }
    let sample = Sample::Reservoir {
        rows: 200,
        seed: 11,
    };
    let boards = common::sample_boards(full, board, variant, sample).join("\n");
    assert!(boards.lines().count() > 100);
    let best = |data: &Path| {
        common::best_csv(data, board, Some(variant), &[], Boards::Stdin(&boards))
            .unwrap_or_else(|e| panic!("best: {e}"))
    };
    assert_eq!(best(single), best(multi));
    let o = common::run(&["verify", "--data", multi.to_str().unwrap()]);
    assert!(o.status.success(), "verify: {}", common::stdout(&o));
}

#[test]
fn two_and_three_processes_solve_what_one_does() {
    let goals = shared_goal_solves();
    let dir = common::fresh_dir("mpi_layouts");
    // 2x4 expectation, full layout, tiles parts (the default).
    let m = dir.join("2x4");
    let o = solve_np(2, &m, "2x4", "expectation", &[]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let full = shared_solves_of("2x4");
    same_solve(full, &m, full, 2, "2x4", "expectation");
    // 3x3 goal-256: full over 3 processes by line sums, policy over 2 by hash, compact over 3
    // by tiles (the solves `hosts` compares its own with).
    let shared = local_solve(3, "3x3", "goal-256", &["--parts", "sums"]);
    same_solve(goals, &shared, goals, 3, "3x3", "goal-256");
    // A damaged part (of a copy) is reported as damage, by its path.
    let m = dir.join("3x3_full");
    let cp = Command::new("cp")
        .arg("-r")
        .args([&shared, &m])
        .status()
        .unwrap();
    assert!(cp.success());
    let part = m.join("states/board=3x3/variant=goal-256/age=100/part-2.parquet");
    let bytes = std::fs::read(&part).unwrap();
    std::fs::write(&part, &bytes[..bytes.len() / 2]).unwrap();
    let o = common::run(&["verify", "--data", m.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::stdout(&o).contains("age=100/part-2.parquet"),
        "{}",
        common::stdout(&o)
    );
    let m = local_solve(2, "3x3", "goal-256", POLICY_BY_HASH);
    same_solve(shared_policy_solve(), &m, goals, 2, "3x3", "goal-256");
    let m = local_solve(3, "3x3", "goal-256", COMPACT);
    same_solve(shared_compact_solve(), &m, goals, 3, "3x3", "goal-256");
}

/// Processes of two threads each solve what one process does. (Their passes' driver, run on
/// a worker of the pool, called MPI from a thread other than the one that started it, and
/// every such job ended at its first exchange: the other tests run a thread a process.)
#[test]
fn processes_of_two_threads_solve_what_one_does() {
    let goals = shared_goal_solves();
    let m = common::fresh_dir("mpi_threads");
    let data = m.to_str().unwrap();
    let args = [
        "solve",
        "--quiet",
        "--board",
        "3x3",
        "--variant",
        "goal-256",
        "--data",
        data,
        "--threads",
        "2",
    ];
    let o = mpirun(2, &args).output().expect("mpirun runs");
    assert!(o.status.success(), "{}", common::stderr(&o));
    same_solve(goals, &m, goals, 2, "3x3", "goal-256");
}

#[test]
fn a_rigorous_solve_over_two_processes_is_the_one_process_solve() {
    // Integer sums: the same bits however the boards are split.
    let dir = common::fresh_dir("mpi_rigorous");
    let s = dir.join("one");
    let variant = "goal-32-p4=0.25-u32";
    common::solve(&s, "2x4", variant, &[]);
    let m = local_solve(2, "2x4", variant, &["--parts", "hash"]);
    same_solve(&s, &m, &s, 2, "2x4", variant);
}

/// The arguments of the policy and compact solves over several processes.
pub const POLICY_BY_HASH: &[&str] = &["--layout", "policy", "--parts", "hash"];
pub const COMPACT: &[&str] = &["--layout", "compact"];

#[test]
fn a_4x4_goal_over_two_processes_is_the_one_process_solve() {
    let dir = common::fresh_dir("mpi_4x4");
    let s = dir.join("one");
    common::solve(&s, "4x4", "goal-16", &[]);
    let m = local_solve(2, "4x4", "goal-16", &[]);
    same_solve(&s, &m, &s, 2, "4x4", "goal-16");
}

/// The one variant solved in `data` for `board` (a restricted variant's name carries its caps).
fn only_variant(data: &Path, board: &str) -> String {
    let dir = data.join(format!("manifest/board={board}"));
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one solve in {}", dir.display());
    let m = age2048::store::manifest::read_path(&files[0].path()).unwrap();
    m.variant
}

/// A policy solve kept over the reached states (`--reach`) and a restricted solve (caps and a
/// requirement) over two processes are the one-process solves: the reach pass reads and
/// writes every part's file, and the ghosts play by the caps.
#[test]
fn reach_and_restricted_solves_over_two_processes_are_the_one_process_solves() {
    let dir = common::fresh_dir("mpi_reach_caps");
    let reach = ["--layout", "policy", "--reach"];
    let one = dir.join("reach_one");
    common::solve(&one, "2x4", "expectation", &reach);
    let two = dir.join("reach_two");
    let o = solve_np(
        2,
        &two,
        "2x4",
        "expectation",
        &[&reach[..], &["--parts", "hash"]].concat(),
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (s, m) = (
        common::manifest(&one, "2x4", "expectation"),
        common::manifest(&two, "2x4", "expectation"),
    );
    assert_eq!(m["parts"]["count"], 2);
    assert_eq!(answer_of(&s), answer_of(&m));
    // The same states reached, each with the same stored move, every one optimal.
    let full = shared_solves_of("2x4");
    let walked = crate::policy::walk_reached(full, &two, "2x4", "expectation");
    assert!(walked.values().map(Vec::len).sum::<usize>() > 100);
    assert_eq!(
        crate::policy::walk_reached(full, &one, "2x4", "expectation"),
        walked
    );
    let o = common::run(&["verify", "--data", two.to_str().unwrap()]);
    assert!(o.status.success(), "verify: {}", common::stdout(&o));
    // 3x3 goal-64 under caps with a requirement, parts by tiles (the default).
    let caps = [
        "--caps",
        "32 32 16 / 32 16 16 / 16 16 8",
        "--require",
        "32 32 . / . . . / . . .",
    ];
    let one = dir.join("caps_one");
    common::solve(&one, "3x3", "goal-64", &caps);
    let name = only_variant(&one, "3x3");
    assert!(name.contains("caps="), "{name}");
    let two = dir.join("caps_two");
    let o = solve_np(2, &two, "3x3", "goal-64", &caps);
    assert!(o.status.success(), "{}", common::stderr(&o));
    same_solve(&one, &two, &one, 2, "3x3", &name);
}

/// Kills the second of a two-process job's processes when its stderr has said a line starting
/// with `prefix` `after` times; true if it was killed.
pub fn kill_second_after(job: &mut std::process::Child, prefix: &str, after: usize) -> bool {
    let err = job.stderr.take().expect("the job's stderr is piped");
    let mut seen = 0;
    for line in BufReader::new(err).lines() {
        if line.unwrap().starts_with(prefix) {
            seen += 1;
            if seen == after {
                let ranks = children(job.id());
                assert_eq!(ranks.len(), 2, "the processes of the job: {ranks:?}");
                return Command::new("kill")
                    .args(["-KILL", &ranks[1].to_string()])
                    .status()
                    .unwrap()
                    .success();
            }
        }
    }
    false
}

/// The processes `mpirun` started (its children).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    out
}

/// The files a manifest lists, with their digests.
pub fn files_of(data: &Path, board: &str, variant: &str) -> Vec<(String, String)> {
    let m = common::manifest(data, board, variant);
    let mut files: Vec<(String, String)> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_killed_process_resumes_and_another_count_is_refused() {
    use std::io::{BufRead, BufReader};
    let dir = common::fresh_dir("mpi_resume");
    let (board, variant) = ("3x3", "goal-256");
    let whole = local_solve(2, board, variant, &[]);
    let data = dir.join("killed");
    let d = data.to_str().unwrap();
    // Kill one process once the backward pass has finished some ages: the launcher ends the
    // job.
    let mut job = mpirun(
        2,
        &[
            "solve",
            "--board",
            board,
            "--variant",
            variant,
            "--data",
            d,
            "--threads",
            "1",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let err = job.stderr.take().unwrap();
    let mut killed = false;
    let mut backward = 0;
    for line in BufReader::new(err).lines() {
        let line = line.unwrap();
        if line.starts_with("backward: age") {
            backward += 1;
            if backward == 40 {
                let ranks = children(job.id());
                assert_eq!(ranks.len(), 2, "the processes of the job: {ranks:?}");
                let kill = Command::new("kill")
                    .args(["-KILL", &ranks[1].to_string()])
                    .status()
                    .unwrap();
                killed = kill.success();
                break;
            }
        }
    }
    let status = job.wait().unwrap();
    assert!(killed && !status.success(), "the job was killed: {status}");
    assert!(!common::manifest_path(&data, board, variant).exists());

    // Another number of processes, or one process, is refused in one line, and loses nothing.
    let o = solve_np(3, &data, board, variant, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.contains("run by 2 processes (mpirun -np 2), this one by 3"),
        "{err}"
    );
    let o = common::run(&[
        "solve",
        "--quiet",
        "--board",
        board,
        "--variant",
        variant,
        "--data",
        d,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("run by 2 processes"), "{err}");

    // The same command resumes and ends with the files of the solve that was not killed.
    let o = solve_np(2, &data, board, variant, &[]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(
        files_of(&data, board, variant),
        files_of(&whole, board, variant)
    );
    assert!(!data.join(".work").exists(), "work files left behind");
}

#[test]
fn a_process_out_of_disk_ends_the_job_with_its_line() {
    let dir = common::fresh_dir("mpi_disk");
    // No disk has a petabyte to spare: every process stops before its first layer file, says
    // why in one line, and the job ends (no process left waiting in a collective).
    let start = std::time::Instant::now();
    let o = solve_np(2, &dir, "3x3", "goal-256", &["--min-free", "1000000G"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    let ours: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("age2048: error: process "))
        .collect();
    assert!(!ours.is_empty(), "{err}");
    assert!(ours.iter().all(|l| l.contains("age 4")), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(120));
    assert!(!common::manifest_path(&dir, "3x3", "goal-256").exists());
}

/// The age each process of a killed job recorded as the last its backward pass finished
/// (its `backward.json` in its own work folder), by rank.
fn backward_done(data: &Path, np: usize) -> Vec<Option<u64>> {
    let mut out = vec![None; np];
    let mut dirs = vec![data.join(".work")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "backward.json") {
                let part = path
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy();
                let rank: usize = part
                    .strip_prefix("part-")
                    .and_then(|p| p.split('-').next())
                    .and_then(|r| r.parse().ok())
                    .unwrap_or_else(|| panic!("a process's work folder: {part}"));
                // The JSON after the work file's 24-byte header (magic, length, checksum).
                let bytes = std::fs::read(&path).unwrap();
                assert!(bytes.starts_with(b"A2048WKJ"), "{}", path.display());
                let json: serde_json::Value = serde_json::from_slice(&bytes[24..]).unwrap();
                out[rank] = json["done_age"].as_u64();
            }
        }
    }
    out
}

/// A job killed while its processes had recorded different ages of the backward pass as done
/// (each checkpoints on its own clock) resumes that pass after the oldest of them, the last
/// age every process finished, not from its top, and ends with the files of the job that was
/// not killed.
#[test]
fn processes_stopped_at_different_ages_resume_after_the_oldest() {
    let dir = common::fresh_dir("mpi_resume_ages");
    let (board, variant) = ("3x3", "goal-256");
    let whole = local_solve(2, board, variant, &[]);
    // Killed after a number of finished ages that grows each try, until the processes had
    // recorded different ones: process 0 records every age, process 1 every 50 ms (on a
    // clock of its own, as a process records every second in a real job), so they differ
    // unless process 1 had just recorded when it was killed.
    let mut found = None;
    for (attempt, after) in [60usize, 90, 120, 150, 180].into_iter().enumerate() {
        let data = dir.join(format!("killed-{attempt}"));
        let d = data.to_str().unwrap().to_string();
        let args = |every: &'static str| {
            [
                BIN,
                "solve",
                "--board",
                board,
                "--variant",
                variant,
                "--data",
                &d,
                "--threads",
                "1",
                "--checkpoint-every",
                every,
            ]
            .map(String::from)
        };
        // One program a process (MPI's "multiple programs" form: `-np 1 A : -np 1 B`).
        let mut job = Command::new("mpirun");
        job.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .args(["--oversubscribe", "--bind-to", "none"])
            .args(YIELD_WHEN_IDLE)
            .args(["-np", "1"])
            .args(args("0"))
            .args([":", "-np", "1"])
            .args(args("0.05"));
        let mut job = job
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let killed = kill_second_after(&mut job, "backward: age", after);
        let status = job.wait().unwrap();
        assert!(killed && !status.success(), "the job was killed: {status}");
        let done = backward_done(&data, 2);
        if let [Some(a), Some(b)] = done[..] {
            if a != b {
                found = Some((data, a.max(b)));
                break;
            }
        }
    }
    let (data, oldest) =
        found.expect("in five killed jobs, the processes always recorded the same age");
    let o = mpirun(
        2,
        &[
            "solve",
            "--board",
            board,
            "--variant",
            variant,
            "--data",
            data.to_str().unwrap(),
            "--threads",
            "1",
        ],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    let resumed: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("resuming the backward pass"))
        .collect();
    let want = format!("resuming the backward pass after age {oldest}");
    assert!(
        !resumed.is_empty() && resumed.iter().all(|&l| l == want),
        "{want}: {err}"
    );
    assert!(!err.contains("starting the backward pass over"), "{err}");
    assert_eq!(
        files_of(&data, board, variant),
        files_of(&whole, board, variant)
    );
    assert!(!data.join(".work").exists(), "work files left behind");
}

#[test]
fn the_default_budget_is_split_between_the_processes_of_a_machine() {
    let dir = common::fresh_dir("mpi_budget");
    let budget_line = |o: &Output| {
        let text = format!("{}{}", common::stdout(o), common::stderr(o));
        text.lines()
            .find(|l| l.contains("memory budget"))
            .unwrap_or_else(|| panic!("no budget line: {text}"))
            .to_string()
    };
    let one = common::run(&[
        "solve",
        "--board",
        "2x2",
        "--data",
        dir.join("one").to_str().unwrap(),
    ]);
    assert!(one.status.success(), "{}", common::stderr(&one));
    let two = mpirun(
        2,
        &[
            "solve",
            "--board",
            "2x2",
            "--data",
            dir.join("two").to_str().unwrap(),
            "--threads",
            "1",
        ],
    )
    .output()
    .expect("mpirun runs");
    assert!(two.status.success(), "{}", common::stderr(&two));
    let (one, two) = (budget_line(&one), budget_line(&two));
    assert!(
        one.contains("80 % of this host's; --memory sets it"),
        "{one}"
    );
    assert!(two.contains("over the solve's 2 processes on it"), "{two}");
    // Half the one process's budget, as printed ("memory budget 18.90 GiB (…"), in MiB.
    let amount = |line: &str| -> f64 {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "budget").unwrap();
        let unit = match words[at + 2] {
            "GiB" => 1024.0,
            "MiB" => 1.0,
            other => panic!("unit {other} in {line}"),
        };
        words[at + 1].parse::<f64>().unwrap() * unit
    };
    let (a, b) = (amount(&one), amount(&two));
    assert!((b * 2.0 - a).abs() <= a * 0.02, "{one} / {two}");
}

/// Messages cut into rounds of at most 1000 elements a process (`AGE2048_MPI_MESSAGE_LIMIT`:
/// 500 to each of two processes a round, where a 3x3 `goal-64` age moves thousands of ids)
/// give the files of the solve in whole messages; a limit that is no number of elements is
/// refused in one line by every process, before anything is written.
#[test]
fn small_messages_give_the_same_files() {
    let dir = common::fresh_dir("mpi_messages");
    let (board, variant) = ("3x3", "goal-64");
    let solve = |data: &Path, limit: Option<&str>| {
        let args = ["solve", "--quiet", "--board", board, "--variant", variant];
        let mut c = mpirun(2, &args);
        c.args(["--data", data.to_str().unwrap(), "--threads", "1"]);
        if let Some(limit) = limit {
            c.env("AGE2048_MPI_MESSAGE_LIMIT", limit);
        }
        c.output().expect("mpirun runs")
    };
    let (whole, small) = (dir.join("whole"), dir.join("small"));
    for (data, limit) in [(&whole, None), (&small, Some("1000"))] {
        let o = solve(data, limit);
        assert!(o.status.success(), "{limit:?}: {}", common::stderr(&o));
    }
    assert_eq!(
        files_of(&small, board, variant),
        files_of(&whole, board, variant)
    );
    for bad in ["0", "many", "16777217"] {
        let data = dir.join(format!("bad-{bad}"));
        let o = solve(&data, Some(bad));
        assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
        let err = common::stderr(&o);
        let ours: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("age2048: error: process "))
            .collect();
        assert!(!ours.is_empty(), "{err}");
        let want =
            format!("AGE2048_MPI_MESSAGE_LIMIT={bad}: not a number of elements from 1 to 16777216");
        assert!(ours.iter().all(|l| l.ends_with(&want)), "{err}");
        assert!(!data.exists(), "{bad}: {} written", data.display());
    }
}

/// Regression: a process that sends and receives nothing in a collective (2x2's first ages
/// over two processes) ran libnbc's in-place schedule, its empty send and receive buffers
/// sharing one dangling address, while the other did not, and the job hung at its first age.
/// The job now ends, within two minutes, with the one-process answer.
#[test]
fn a_process_with_nothing_to_exchange_does_not_hang_the_job() {
    let dir = common::fresh_dir("mpi_empty");
    let (board, variant) = ("2x2", "expectation");
    let (one, two) = (dir.join("one"), dir.join("two"));
    let (one_d, two_d) = (one.to_str().unwrap(), two.to_str().unwrap());
    let args = |d| {
        let solve = ["solve", "--quiet", "--board", board, "--variant", variant];
        [&solve[..], &["--threads", "1", "--data", d]].concat()
    };
    let mut job = mpirun(2, &args(two_d))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mpirun runs");
    let Some(status) = common::wait_within(&mut job, std::time::Duration::from_secs(120)) else {
        for p in children(job.id()) {
            let _ = Command::new("kill")
                .args(["-KILL", &p.to_string()])
                .status();
        }
        let _ = job.kill();
        let _ = job.wait();
        panic!("a 2x2 solve over two processes did not end within two minutes");
    };
    assert!(status.success(), "{status}");
    let o = common::run(&args(one_d));
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(
        answer_of(&common::manifest(&one, board, variant)),
        answer_of(&common::manifest(&two, board, variant))
    );
}
