//! The solve over two hosts (feature `mpi`), as a cluster runs it: `scripts/hosts.sh` makes
//! each host a network and a UTS namespace (its own addresses and hostname) joined to the
//! other by a veth pair, and Open MPI starts the second host's processes through an agent that
//! enters its namespaces as ssh would, the processes talking TCP over the veth only. The
//! processes see their own host's name and count their own host's processes for the default
//! budget; every layout of 3x3 `goal-256` and 4x4 `goal-16` ends with the files of the same
//! solve over processes of one machine (which `mpi` checks against one process) and `verify`
//! passes; a process killed on the second host mid-solve, the same command resumes to the
//! same files. The hosts need root (CI runs as root): without it a test says so in one line
//! and fails. Each test makes hosts of its own name and removes them when it ends, failed or
//! not.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use super::common::{self, BIN};
use super::mpi::{files_of, local_solve, COMPACT, POLICY_BY_HASH, YIELD_WHEN_IDLE};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/hosts.sh");

/// Two hosts, `PREFIX-a` and `PREFIX-b`, removed (with whatever still runs on them) when
/// dropped, a test's panic included.
struct Hosts {
    prefix: String,
}

impl Hosts {
    /// Two new hosts named after this test process and a count, so that tests running side by
    /// side (and test runs of other checkouts) never share a namespace.
    fn up() -> Hosts {
        static MADE: AtomicU32 = AtomicU32::new(0);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(remove_orphans);
        let hosts = Hosts {
            prefix: format!(
                "a2h{}-{}",
                std::process::id(),
                MADE.fetch_add(1, Ordering::Relaxed)
            ),
        };
        // Made after the guard: a half-made pair is removed too.
        let o = Command::new(SCRIPT)
            .args(["up", &hosts.prefix])
            .output()
            .expect("scripts/hosts.sh runs");
        if !o.status.success() {
            panic!(
                "two hosts could not be made (run the tests as root): {}",
                common::stderr(&o).trim()
            );
        }
        hosts
    }

    fn a(&self) -> String {
        format!("{}-a", self.prefix)
    }

    fn b(&self) -> String {
        format!("{}-b", self.prefix)
    }

    /// `mpirun` on the first host with `on_a` processes there and `on_b` on the second, of
    /// `age2048 ARGS…`, waits yielding the CPU ([`YIELD_WHEN_IDLE`]).
    fn mpirun(&self, on_a: usize, on_b: usize, args: &[&str]) -> Command {
        let mut c = Command::new(SCRIPT);
        c.args(["mpirun", &self.prefix, "-np", &(on_a + on_b).to_string()])
            .args(YIELD_WHEN_IDLE)
            .args([
                "--host",
                &format!("{}:{on_a},{}:{on_b}", self.a(), self.b()),
            ])
            .arg(BIN)
            .args(args);
        c
    }

    /// `solve --quiet --threads 1` of `board` under `variant` into `data` over `on_a` + `on_b`
    /// processes (`on`), with the `extra` arguments.
    fn solve(
        &self,
        (on_a, on_b): (usize, usize),
        data: &Path,
        board: &str,
        variant: &str,
        extra: &[&str],
    ) -> Output {
        let mut args = vec!["solve", "--quiet", "--board", board, "--variant", variant];
        args.extend(["--data", data.to_str().unwrap(), "--threads", "1"]);
        args.extend_from_slice(extra);
        self.mpirun(on_a, on_b, &args)
            .output()
            .expect("scripts/hosts.sh runs")
    }

    /// The processes of the solve binary on `host`.
    fn solvers_on(&self, host: &str) -> Vec<u32> {
        let o = Command::new("ip")
            .args(["netns", "pids", host])
            .output()
            .expect("ip runs");
        let bin = std::fs::canonicalize(BIN).unwrap();
        common::stdout(&o)
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .filter(|p| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == bin))
            .collect()
    }
}

/// Removes the hosts of test processes that no longer run (killed before their guards
/// could), once a test run.
fn remove_orphans() {
    let Ok(names) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for name in names.flatten() {
        let name = name.file_name().to_string_lossy().into_owned();
        let Some(prefix) = name.strip_suffix("-a").filter(|p| p.starts_with("a2h")) else {
            continue;
        };
        let pid = prefix[3..].split('-').next().unwrap_or("");
        let orphan = !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && !Path::new(&format!("/proc/{pid}")).exists();
        if orphan {
            let _ = Command::new(SCRIPT).args(["down", prefix]).status();
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).args(["down", &self.prefix]).status();
    }
}

/// The solve over the hosts into `data` ended with the files of `local` (the same solve over
/// processes of one machine), and `verify` passes.
fn same_files(o: &Output, data: &Path, local: &Path, board: &str, variant: &str) {
    assert!(
        o.status.success(),
        "{board} {variant}: {}",
        common::stderr(o)
    );
    assert_eq!(
        files_of(data, board, variant),
        files_of(local, board, variant),
        "{board} {variant}"
    );
    let v = common::run(&["verify", "--data", data.to_str().unwrap()]);
    assert!(v.status.success(), "verify: {}", common::stdout(&v));
}

/// Each process says which host it runs on and how many of the solve's processes that host
/// holds: one on the first host, two on the second. The leader's default budget is its
/// host's whole share when it is alone there (as a one-process solve's), half of it with
/// two, whatever the job's other host holds.
#[test]
fn each_host_has_its_name_and_its_budget() {
    let hosts = Hosts::up();
    let dir = common::fresh_dir("hosts_names");
    let budget = |o: &Output| {
        assert!(o.status.success(), "{}", common::stderr(o));
        let err = common::stderr(o);
        err.lines()
            .find(|l| l.starts_with("memory budget"))
            .unwrap_or_else(|| panic!("no budget line: {err}"))
            .to_string()
    };
    let solve = |on_a: usize, on_b: usize, name: &str| {
        let data = dir.join(name);
        let args = ["solve", "--board", "2x2", "--threads", "1", "--data"];
        hosts
            .mpirun(on_a, on_b, &args)
            .arg(&data)
            .output()
            .expect("scripts/hosts.sh runs")
    };
    let one = common::run(&[
        "solve",
        "--board",
        "2x2",
        "--data",
        dir.join("one").to_str().unwrap(),
    ]);
    let one = budget(&one);
    assert!(
        one.ends_with("(80 % of this host's; --memory sets it)"),
        "{one}"
    );

    let o = solve(1, 2, "a1b2");
    let err = common::stderr(&o);
    let on = |rank: u32, host: &str, sharers: u32| {
        format!("process {rank} of 3 on host {host} ({sharers} of the solve's processes on it)")
    };
    for line in [
        on(0, &hosts.a(), 1),
        on(1, &hosts.b(), 2),
        on(2, &hosts.b(), 2),
    ] {
        assert!(err.lines().any(|l| l == line), "{line}: {err}");
    }
    assert_eq!(budget(&o), one, "alone on its host: the host's whole share");

    let o = solve(2, 1, "a2b1");
    let two = budget(&o);
    assert!(
        two.ends_with("over the solve's 2 processes on it; --memory sets each one's)"),
        "{two}"
    );
    // "memory budget 18.90 GiB (…" in MiB.
    let amount = |line: &str| -> f64 {
        let words: Vec<&str> = line.split_whitespace().collect();
        let unit = match words[3] {
            "GiB" => 1024.0,
            "MiB" => 1.0,
            other => panic!("unit {other} in {line}"),
        };
        words[2].parse::<f64>().unwrap() * unit
    };
    let (a, b) = (amount(&one), amount(&two));
    assert!((b * 2.0 - a).abs() <= a * 0.02, "{one} / {two}");
}

/// 3x3 `goal-256` in the full layout over three processes by line sums (one on the first
/// host) and in the compact layout over three by tiles (two on the first host): the files of
/// the same solves on one machine. (The policy layout crosses hosts in
/// [`a_process_killed_on_the_second_host_resumes`].)
#[test]
fn the_full_and_compact_3x3_over_two_hosts_are_the_one_machine_solves() {
    let hosts = Hosts::up();
    let dir = common::fresh_dir("hosts_layouts");
    let (board, variant) = ("3x3", "goal-256");
    for (on, name, extra) in [
        ((1, 2), "full", &["--parts", "sums"][..]),
        ((2, 1), "compact", COMPACT),
    ] {
        let data = dir.join(name);
        let o = hosts.solve(on, &data, board, variant, extra);
        let local = local_solve(on.0 + on.1, board, variant, extra);
        same_files(&o, &data, &local, board, variant);
    }
}

/// 4x4 `goal-16`, one process a host: the files of the same solve on one machine.
#[test]
fn a_4x4_goal_over_two_hosts_is_the_one_machine_solve() {
    let hosts = Hosts::up();
    let data = common::fresh_dir("hosts_4x4");
    let o = hosts.solve((1, 1), &data, "4x4", "goal-16", &[]);
    let local = local_solve(2, "4x4", "goal-16", &[]);
    same_files(&o, &data, &local, "4x4", "goal-16");
}

/// 3x3 `goal-256` in the policy layout by hash, one process a host: the process on the second
/// host killed mid-solve (its launcher ends the job), the same command resumes and ends with
/// the files of the same solve on one machine.
#[test]
fn a_process_killed_on_the_second_host_resumes() {
    let hosts = Hosts::up();
    let data = common::fresh_dir("hosts_resume");
    let (board, variant) = ("3x3", "goal-256");
    let d = data.to_str().unwrap();
    let mut args = vec!["solve", "--board", board, "--variant", variant];
    args.extend(["--data", d, "--threads", "1"]);
    args.extend_from_slice(POLICY_BY_HASH);
    let mut job = hosts
        .mpirun(1, 1, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = job.stderr.take().unwrap();
    let mut killed = Vec::new();
    let mut backward = 0;
    for line in BufReader::new(err).lines() {
        if line.unwrap().starts_with("backward: age") {
            backward += 1;
            if backward == 40 {
                killed = hosts.solvers_on(&hosts.b());
                assert_eq!(killed.len(), 1, "the process on {}: {killed:?}", hosts.b());
                let kill = Command::new("kill")
                    .args(["-KILL", &killed[0].to_string()])
                    .status()
                    .unwrap();
                assert!(kill.success());
                break;
            }
        }
    }
    let status = job.wait().unwrap();
    assert!(
        !killed.is_empty() && !status.success(),
        "the job was killed: {status}"
    );
    assert!(!common::manifest_path(&data, board, variant).exists());
    assert!(hosts.solvers_on(&hosts.a()).is_empty() && hosts.solvers_on(&hosts.b()).is_empty());

    let o = hosts.mpirun(1, 1, &args).output().unwrap();
    let whole = local_solve(2, board, variant, POLICY_BY_HASH);
    same_files(&o, &data, &whole, board, variant);
    assert!(!data.join(".work").exists(), "work files left behind");
}
