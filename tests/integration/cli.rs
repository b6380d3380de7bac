//! Command-line tests: run the real binary in a temporary directory (ripgrep's way).
//! Every bad input gives one clear line, exit status 2, and leaves what was written intact.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{
    bin, kill_after_ages_with, manifest, manifest_path, run, stderr, stdout, wait_within,
};

fn solve(data: &Path, board: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "solve",
        "--board",
        board,
        "--data",
        data.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "solve {board} failed: {}", stderr(&o));
    o
}

/// `age2048 best --board 2x2 --data DATA ARGS…`
fn best_2x2(data: &Path, args: &[&str]) -> Output {
    let mut all = vec!["best", "--board", "2x2", "--data", data.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&all)
}

/// Starts `solve` with its progress lines on a pipe and kills it (SIGKILL) as soon as it has
/// reported `n` finished ages (forward and backward together); returns whether it was killed
/// before finishing.
fn kill_after_ages(data: &Path, board: &str, n: usize) -> bool {
    kill_after_ages_with(data, board, n, &[])
}

/// Every file under `dir` with its bytes, sorted by path, skipping nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

fn assert_clean_error(o: &Output, needle: &str) {
    assert_eq!(
        o.status.code(),
        Some(2),
        "expected exit 2; stderr: {}",
        stderr(o)
    );
    let e = stderr(o);
    assert!(e.contains(needle), "stderr should mention {needle:?}: {e}");
    assert!(!e.contains("panicked"), "panic: {e}");
    assert_eq!(e.trim().lines().count(), 1, "one line expected: {e}");
}

#[test]
fn solve_2x2_matches_published_figures_and_best_answers() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    let flips = dir.path().join("flips");
    solve(&full, "2x2", &[]);
    solve(&flips, "2x2", &["--symmetry", "flips"]);
    let m = manifest(&full, "2x2", "expectation");
    assert_eq!(m["n_states"], 110);
    assert_eq!(manifest(&flips, "2x2", "expectation")["n_states"], 176);
    let v = m["value_two_2_tiles"].as_f64().unwrap();
    assert!((v - 67.696).abs() < 5e-4, "2x2 value from two 2-tiles {v}");
    // The layout: every age has its partitions and index.
    for a in m["ages"].as_array().unwrap() {
        let age = a["age"].as_u64().unwrap();
        for t in ["states", "afterstates"] {
            let p = full.join(format!(
                "{t}/board=2x2/variant=expectation/age={age}/part-0.parquet"
            ));
            assert!(p.is_file(), "{} missing", p.display());
        }
        assert!(full
            .join(format!("index/board=2x2/variant=expectation/age={age}.a2i"))
            .is_file());
    }
    assert!(full
        .join("ages/board=2x2/variant=expectation/part-0.parquet")
        .is_file());
    assert!(
        !full.join(".work").join("board=2x2").exists(),
        "work files are removed after a solve"
    );

    // best: two 2-tiles in a row; L and R are equivalent by symmetry, U and D too.
    let o = best_2x2(&full, &["--format", "csv", "2 2/. .", "2 ./. 2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "board,L,R,U,D,value,best");
    assert_eq!(lines.len(), 3);
    let f: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(f[0], "2 2/. .");
    let q: Vec<Option<f64>> = f[1..5].iter().map(|x| x.parse().ok()).collect();
    assert!(
        q[0].is_some() && q[0] == q[1],
        "L and R merge the pair and mirror each other: {q:?}"
    );
    assert_eq!(q[2], None, "U changes nothing on a top row");
    let d = q[3].expect("D is valid");
    let value: f64 = f[5].parse().unwrap();
    assert_eq!(value, q[0].unwrap().max(d));
    // Merging earns 4 now; the afterstate is a lone 4 tile, the same afterstate whichever way.
    assert!(q[0].unwrap() > 4.0);

    // json and table formats
    let o = best_2x2(&full, &["--format", "json", "2 2/. ."]);
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j[0]["board"], "2 2/. .");
    let o = best_2x2(&full, &["2 4/. ."]);
    assert!(stdout(&o).contains("best"), "{}", stdout(&o));

    // a terminal board: no move, value 0
    let o = best_2x2(&full, &["--format", "csv", "2 4/4 2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().nth(1).unwrap(), "2 4/4 2,,,,,0,");

    // --input from a file and from stdin
    let input = dir.path().join("boards.txt");
    fs::write(&input, "# a comment\n2 2/. .\n\n. ./2 2\n").unwrap();
    let o = best_2x2(
        &full,
        &["--format", "csv", "--input", input.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 3);
}

#[test]
fn bad_inputs_give_one_line_and_exit_2_without_damage() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    solve(&data, "2x2", &[]);
    let before = snapshot(&data);
    let d = data.to_str().unwrap();
    let best = |board: &str| run(&["best", "--board", "2x2", "--data", d, board]);

    assert_clean_error(&best("2 2 2/. ."), "row 1 has 3 cells");
    assert_clean_error(&best("2 2/. . /2 2"), "expected 2 rows");
    assert_clean_error(&best("2 3/. ."), "3 is not a power of two");
    assert_clean_error(&best("2 x/. ."), "'x' is not a tile");
    assert_clean_error(&best("1024 1024/1024 1024"), "not a reachable");
    assert_clean_error(&best("2 ./. ."), "not a reachable");
    assert_clean_error(
        &run(&["best", "--board", "5x5", "--data", d, "2"]),
        "bad board size '5x5'",
    );
    assert_clean_error(
        &run(&["best", "--board", "3x3", "--data", d, "2 . ./. . ./. . 2"]),
        "no solved data for board 3x3",
    );
    assert_clean_error(
        &run(&[
            "best",
            "--board",
            "2x2",
            "--data",
            "/nonexistent/dir",
            "2 2/. .",
        ]),
        "does not exist",
    );
    assert_clean_error(
        &run(&[
            "best",
            "--board",
            "2x2",
            "--data",
            d,
            "--variant",
            "optimistic",
            "2 2/. .",
        ]),
        "no solved data",
    );
    assert_clean_error(
        &run(&["best", "--board", "2x2", "--data", d]),
        "no board given",
    );
    assert_clean_error(
        &run(&[
            "best",
            "--board",
            "2x2",
            "--data",
            d,
            "--input",
            "/nonexistent/boards",
        ]),
        "/nonexistent/boards",
    );
    assert_clean_error(
        &run(&["solve", "--board", "2x9", "--data", d]),
        "bad board size",
    );
    assert_clean_error(
        &run(&["solve", "--board", "2x2", "--data", d, "--symmetry", "rot"]),
        "unknown symmetry group 'rot'",
    );
    assert_clean_error(
        &run(&[
            "solve",
            "--board",
            "2x2",
            "--data",
            d,
            "--variant",
            "goal-100",
        ]),
        "power of two",
    );
    assert_clean_error(
        &run(&["solve", "--board", "2x2", "--data", d, "--variant", "lucky"]),
        "unknown variant 'lucky'",
    );
    assert_clean_error(
        &run(&["solve", "--board", "2x2", "--data", d, "--p4", "1.5"]),
        "--p4",
    );
    assert_eq!(
        run(&["solve"]).status.code(),
        Some(2),
        "clap usage errors exit 2"
    );
    assert_eq!(
        snapshot(&data),
        before,
        "a failed command changed the data directory"
    );

    // A damaged index is reported as damaged, never a panic.
    let idx = data.join("index/board=2x2/variant=expectation/age=4.a2i");
    let mut bytes = fs::read(&idx).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x55;
    fs::write(&idx, &bytes).unwrap();
    assert_clean_error(&best("2 2/. ."), "damaged");
    fs::write(&idx, &bytes[..n / 2]).unwrap();
    assert_clean_error(&best("2 2/. ."), "damaged");
    fs::write(&idx, b"").unwrap();
    assert_clean_error(&best("2 2/. ."), "damaged");

    // A damaged manifest too.
    let m = manifest_path(&data, "2x2", "expectation");
    fs::write(&m, b"{ not json").unwrap();
    assert_clean_error(&best("2 . /. 2"), "damaged");
}

#[test]
fn a_killed_solve_resumes_and_ends_with_the_same_digests() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    solve(&a, "2x3", &[]);
    let reference = manifest(&a, "2x3", "expectation");

    // Kill a solve of the same board after a few finished ages, again and again (in the
    // forward pass, then in the backward pass), then let it finish.
    let data = b.to_str().unwrap();
    let ages = reference["ages"].as_array().unwrap().len();
    let mut kills = 0;
    for n in [3, 5, ages, 7, ages / 2, 2] {
        if kill_after_ages(&b, "2x3", n) {
            kills += 1;
        }
    }
    assert!(
        kills >= 5,
        "the solve was not killed mid-way ({kills} kills)"
    );
    // And a real kill at an arbitrary moment.
    let mut child = bin()
        .args(["solve", "--board", "2x3", "--data", data, "--quiet"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let _ = child.kill();
    let _ = child.wait();
    solve(&b, "2x3", &[]);
    // Solving a finished board again is a no-op that leaves every file as it is.
    let finished = snapshot(&b);
    solve(&b, "2x3", &[]);
    assert_eq!(snapshot(&b), finished);
    let resumed = manifest(&b, "2x3", "expectation");
    assert_eq!(
        resumed["files"], reference["files"],
        "digests differ after resuming"
    );
    assert_eq!(resumed["n_states"], reference["n_states"]);
    assert_eq!(snapshot_without_manifest(&a), snapshot_without_manifest(&b));
}

/// The same in the compact layout (fixed-point values, some ages in Parquet): killed in
/// either pass, resumed, it ends with the digests of an uninterrupted compact solve.
#[test]
fn a_killed_compact_solve_resumes_and_ends_with_the_same_digests() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let compact = ["--layout", "compact", "--parquet-ages", "20-40"];
    solve(&a, "2x3", &compact);
    let reference = manifest(&a, "2x3", "expectation");
    assert_eq!(reference["storage"]["layout"], "compact");
    let ages = reference["ages"].as_array().unwrap().len();
    let mut kills = 0;
    for n in [4, ages + 3, ages / 3] {
        kills += usize::from(kill_after_ages_with(&b, "2x3", n, &compact));
    }
    assert_eq!(kills, 3, "the solve was not killed mid-way every time");
    // A resume asked for in the full layout would start the backward pass over; the same
    // command resumes.
    solve(&b, "2x3", &compact);
    assert_eq!(
        manifest(&b, "2x3", "expectation")["files"],
        reference["files"]
    );
    assert_eq!(snapshot_without_manifest(&a), snapshot_without_manifest(&b));
}

/// An age written as the backward pass values it (each age of a big board; `--write-ahead 0`
/// makes every age one) is the same bytes as one handed whole to the writer thread, in both
/// layouts and with several variants; killed and resumed, such a solve ends with them too.
#[test]
fn ages_written_by_the_pass_are_the_bytes_of_ages_written_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let both = ["--variant", "expectation,goal-128"];
    let compact = ["--layout", "compact", "--parquet-ages", "20-40"];
    // The layouts at once, each in folders of its own. The full layout's solve beside it is
    // the one several subjects read (the same command): it also holds other boards, so the
    // files compared are this solve's, each against the same path there.
    let (root, both, compact) = (dir.path(), &both, &compact);
    std::thread::scope(|scope| {
        for (name, layout) in [("full", &[][..]), ("compact", &compact[..])] {
            scope.spawn(move || {
                let b = root.join(format!("{name}-0"));
                let args: Vec<&str> = both.iter().chain(layout).copied().collect();
                let a = if name == "full" {
                    // All of them, though it reads 2x4: the first subject in name order to
                    // ask for the whole folder, it starts its 3x3 expectation early in a run,
                    // beside the other subjects (asked for by `serve` alone, it was the run's
                    // tail).
                    crate::common::shared_solves().to_path_buf()
                } else {
                    let a = root.join(name);
                    solve(&a, "2x4", &args);
                    a
                };
                let streamed: Vec<&str> =
                    args.iter().copied().chain(["--write-ahead", "0"]).collect();
                if name == "compact" {
                    for n in [9, 40] {
                        assert!(kill_after_ages_with(&b, "2x4", n, &streamed), "not killed");
                    }
                }
                solve(&b, "2x4", &streamed);
                for v in ["expectation", "goal-128"] {
                    let files = &manifest(&b, "2x4", v)["files"];
                    assert_eq!(files, &manifest(&a, "2x4", v)["files"], "{name} {v}");
                    for f in files.as_array().unwrap() {
                        let path = f["path"].as_str().unwrap();
                        assert!(b.join(path).is_file(), "{name} {v}: no {path}");
                    }
                }
                // And every file of `b` is the file at its path in `a`: `b` holds the files
                // its manifests list, and no other.
                for (path, bytes) in snapshot_without_manifest(&b) {
                    let there = fs::read(a.join(&path)).ok();
                    assert!(there == Some(bytes), "{name}: {} differs", path.display());
                }
            });
        }
    });
    let bad = dir.path().join("bad");
    let o = run(&[
        "solve",
        "--board",
        "2x2",
        "--data",
        bad.to_str().unwrap(),
        "--write-ahead",
        "lots",
    ]);
    assert_clean_error(&o, "--write-ahead lots");
}

/// The data files of a directory: not the manifests (they hold timings), nor the seals (they
/// hold each file's inode and times in this directory).
fn snapshot_without_manifest(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot(dir)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("manifest") && !p.starts_with(".seals"))
        .collect()
}

#[test]
fn variants_solve_together_and_guaranteed_reports_forced_tiles() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    solve(
        &data,
        "2x3",
        &[
            "--variant",
            "expectation,optimistic,pessimistic,goal-64,guaranteed-16",
        ],
    );
    let v = |name: &str| {
        manifest(&data, "2x3", name)["value_initial"]
            .as_f64()
            .unwrap()
    };
    assert!(v("optimistic") > v("expectation") && v("expectation") > v("pessimistic"));
    assert!((0.0..=1.0).contains(&v("goal-64")));
    assert_eq!(v("guaranteed-16"), 1.0);
    // p4 is part of the variant's name.
    solve(&data, "2x3", &["--p4", "0.2"]);
    assert!(manifest_path(&data, "2x3", "expectation-p4=0.2").is_file());

    let o = run(&["guaranteed", "--board", "1x1,2x2,2x3", "--format", "csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "board,from_empty,two_tile_min\n1x1,2,\n2x2,8,8\n2x3,16,16\n"
    );
    assert_clean_error(
        &run(&["guaranteed", "--board", "2x2,7x7"]),
        "bad board size '7x7'",
    );
}

/// Regression: a row of 16 cells made `Rules::new` shift a u64 by 64 (a panic in the
/// overflow-checked build), so `solve --board 1x16` died before its first age.
#[test]
fn a_board_sixteen_cells_wide_solves() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for board in ["1x16", "2x8"] {
        solve(&data, board, &["--variant", "goal-4"]);
        let v = manifest(&data, board, "goal-4")["value_initial"]
            .as_f64()
            .unwrap();
        assert!(v > 0.0 && v <= 1.0, "{board}: P(4) = {v}");
    }
}

/// A solve on one thread ends, in every layout, with the files of the same solve on two. (A
/// driver of the passes run on the only worker of the pool waited there for the layer
/// saver and the age writer, whose own parallel loops needed that worker: every solve with
/// `--threads 1` hung.)
#[test]
fn a_solve_on_one_thread_ends_with_the_files_of_two() {
    let dir = tempfile::tempdir().unwrap();
    for layout in ["full", "compact", "policy"] {
        let files = |threads: &str| {
            let data = dir.path().join(format!("{layout}-{threads}"));
            let args = [
                "solve",
                "--quiet",
                "--board",
                "2x3",
                "--layout",
                layout,
                "--threads",
                threads,
                "--data",
                data.to_str().unwrap(),
            ];
            let mut child = bin()
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            // The solve takes well under a second.
            let limit = std::time::Duration::from_secs(300);
            let Some(status) = wait_within(&mut child, limit) else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{layout} on {threads} thread(s) did not end");
            };
            assert!(status.success(), "{layout} on {threads} thread(s)");
            let m = manifest(&data, "2x3", "expectation");
            assert_eq!(m["threads"], threads.parse::<u64>().unwrap());
            m["files"].clone()
        };
        let one = files("1");
        assert!(!one.as_array().unwrap().is_empty(), "{layout}");
        assert_eq!(one, files("2"), "{layout}");
    }
}

/// `best --format csv` of one 2x2 board: (q of L, R, U, D, value).
fn q_2x2(data: &Path, variant: &str, board: &str) -> ([Option<f64>; 4], f64) {
    let o = best_2x2(data, &["--variant", variant, "--format", "csv", board]);
    assert!(o.status.success(), "{variant} {board}: {}", stderr(&o));
    let out = stdout(&o);
    let f: Vec<String> = out
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let q = |i: usize| (!f[i].is_empty()).then(|| f[i].parse::<f64>().unwrap());
    ([q(1), q(2), q(3), q(4)], f[5].parse().unwrap())
}

/// Hand-worked spawn rules on one 2x2 position. From `2 . / . 4`, L gives the afterstate
/// `2 . / 4 .` with no merge (reward 0) and two empty cells; its children are `2 2/4 .` and
/// `2 ./4 2` (a 2 spawned) and `2 4/4 .`, `2 ./4 4` (a 4 spawned). So q(L) must be, with the
/// children's values V:
///   expectation: (0.9·V(2 2/4 .) + 0.1·V(2 4/4 .) + 0.9·V(2 ./4 2) + 0.1·V(2 ./4 4)) / 2
///   optimistic:  0.9·max(V(2 2/4 .), V(2 ./4 2)) + 0.1·max(V(2 4/4 .), V(2 ./4 4))
///   pessimistic: the same with min
///   guaranteed-8: the min over all four children (the spawner picks cell and value).
#[test]
fn spawn_rules_hand_worked_on_a_2x2_position() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    solve(
        &data,
        "2x2",
        &[
            "--variant",
            "expectation,optimistic,pessimistic,guaranteed-8",
        ],
    );
    let s = "2 ./. 4";
    let (c2a, c2b, c4a, c4b) = ("2 2/4 .", "2 ./4 2", "2 4/4 .", "2 ./4 4");
    for variant in ["expectation", "optimistic", "pessimistic", "guaranteed-8"] {
        let v = |b: &str| q_2x2(&data, variant, b).1;
        let (v2a, v2b, v4a, v4b) = (v(c2a), v(c2b), v(c4a), v(c4b));
        let want = match variant {
            "expectation" => (0.9 * v2a + 0.1 * v4a + 0.9 * v2b + 0.1 * v4b) / 2.0,
            "optimistic" => 0.9 * v2a.max(v2b) + 0.1 * v4a.max(v4b),
            "pessimistic" => 0.9 * v2a.min(v2b) + 0.1 * v4a.min(v4b),
            _ => v2a.min(v2b).min(v4a).min(v4b),
        };
        let (q, _) = q_2x2(&data, variant, s);
        let got = q[0].expect("L is a valid move");
        assert!(
            (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
            "{variant}: q(L) of {s} is {got}, the rule gives {want}"
        );
    }
    // The variants differ here, in the order the rules imply.
    let ql = |variant: &str| q_2x2(&data, variant, s).0[0].unwrap();
    assert!(ql("optimistic") > ql("expectation") && ql("expectation") > ql("pessimistic"));
    // guaranteed-8 by hand: `4 4/2 .` merges into an 8 whatever comes next.
    let (q, value) = q_2x2(&data, "guaranteed-8", "4 4/2 .");
    assert_eq!(value, 1.0);
    assert_eq!(q[0], Some(1.0), "L makes the 8");
    // A full board without a merge is terminal: value 0, no move, in every variant.
    for variant in ["expectation", "optimistic", "pessimistic", "guaranteed-8"] {
        assert_eq!(
            q_2x2(&data, variant, "2 4/4 2"),
            ([None; 4], 0.0),
            "{variant}"
        );
    }
}

/// Discounted goals from the command line: bad discounts are one line and exit 2 before
/// anything is written; `--discount γ` and the name `goal-T-discount=γ` are the same variant
/// for `solve`, `best`, `verify`, `sql` and `compare`; q-values carry γ (hand-worked on 2x2).
#[test]
fn discounted_goals_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    solve(&data, "2x2", &["--variant", "goal-8"]);
    let before = snapshot(&data);
    for (args, needle) in [
        (vec!["--discount", "1.5"], "bad --discount value '1.5'"),
        (vec!["--discount", "0"], "(0, 1]"),
        (vec!["--discount", "nan"], "bad --discount value"),
        (
            vec!["--variant", "goal-8-discount=-1"],
            "bad --discount value",
        ),
        (
            vec!["--variant", "expectation", "--discount", "0.9"],
            "variant 'expectation' takes no discount (0.9)",
        ),
        (
            vec!["--variant", "guaranteed-8-discount=0.5"],
            "only goal-T variants are discounted",
        ),
        (
            vec!["--variant", "goal-8-discount=0.9", "--discount", "0.8"],
            "its discount differs from --discount 0.8",
        ),
    ] {
        let mut all = vec!["solve", "--board", "2x2", "--data", d];
        all.extend(args);
        assert_clean_error(&run(&all), needle);
    }
    assert_clean_error(
        &best_2x2(
            &data,
            &["--variant", "expectation", "--discount", "0.9", "2 2/. ."],
        ),
        "takes no discount",
    );
    assert_eq!(snapshot(&data), before, "a refused solve wrote something");

    let o = solve(&data, "2x2", &["--variant", "goal-8", "--discount", "0.5"]);
    let summary = stderr(&o);
    assert!(
        summary.contains("2x2 goal-8-discount=0.5: ")
            && summary.contains("mean over the distinct initial states 0."),
        "{summary}"
    );
    // γ = 1 is the plain goal: nothing new is solved or named.
    solve(&data, "2x2", &["--variant", "goal-8", "--discount", "1"]);
    let goal = manifest_path(&data, "2x2", "goal-8");
    let mut names: Vec<String> = fs::read_dir(goal.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["variant=goal-8-discount%3D0.5.json", "variant=goal-8.json"]
    );
    let m = manifest(&data, "2x2", "goal-8-discount=0.5");
    assert_eq!(m["discount"], 0.5);
    let plain = manifest(&data, "2x2", "goal-8");
    assert_eq!(plain["discount"], 1.0);
    for key in ["value_initial", "value_initial_distinct"] {
        let (x, p) = (m[key].as_f64().unwrap(), plain[key].as_f64().unwrap());
        assert!(0.0 < x && x < p && p <= 1.0, "{key}: {x} vs {p}");
    }

    // q-values carry γ: 4 4/2 . makes the 8 with L (γ·1); 2 4/4 2 is terminal (0).
    let named = "goal-8-discount=0.5";
    let (q, value) = q_2x2(&data, named, "4 4/2 .");
    assert_eq!((q[0], q[1], q[2], value), (Some(0.5), Some(0.5), None, 0.5));
    assert!(q[3].unwrap() < 0.5, "D does not make the 8: {q:?}");
    assert_eq!(q_2x2(&data, named, "2 4/4 2"), ([None; 4], 0.0));
    assert_eq!(q_2x2(&data, named, "8 2/. ."), ([None; 4], 1.0));
    // From 2 ./. 4, L gives 2 ./4 . (children as in the hand-worked spawn rules above):
    // q(L) = γ · (0.9·V(2 2/4 .) + 0.1·V(2 4/4 .) + 0.9·V(2 ./4 2) + 0.1·V(2 ./4 4)) / 2.
    let v = |b: &str| q_2x2(&data, named, b).1;
    let want = 0.5
        * (0.9 * v("2 2/4 .") + 0.1 * v("2 4/4 .") + 0.9 * v("2 ./4 2") + 0.1 * v("2 ./4 4"))
        / 2.0;
    let got = q_2x2(&data, named, "2 ./. 4").0[0].unwrap();
    assert!(
        (got - want).abs() <= 1e-12,
        "q(L) {got}, the rule gives {want}"
    );
    // The flag names the same variant as the suffix.
    let flag = best_2x2(
        &data,
        &[
            "--variant",
            "goal-8",
            "--discount",
            "0.5",
            "--format",
            "csv",
            "2 ./. 4",
        ],
    );
    let suffix = best_2x2(&data, &["--variant", named, "--format", "csv", "2 ./. 4"]);
    assert!(flag.status.success(), "{}", stderr(&flag));
    assert_eq!(stdout(&flag), stdout(&suffix));

    // The other readers take the name.
    let o = run(&[
        "verify",
        "--data",
        d,
        "--variant",
        "goal-8",
        "--discount",
        "0.5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "sql",
        "--data",
        d,
        "--format",
        "csv",
        "SELECT DISTINCT variant FROM states ORDER BY variant",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "variant\ngoal-8\ngoal-8-discount=0.5\n");
    let out = dir.path().join("compare");
    let o = run(&[
        "compare",
        "--board",
        "2x2",
        "--variants",
        &format!("goal-8,{named}"),
        "--data",
        d,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(named), "{}", stdout(&o));
}

#[test]
fn too_little_free_disk_stops_cleanly_and_the_same_command_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    solve(&a, "2x3", &[]);
    let reference = manifest(&a, "2x3", "expectation");
    let data = b.to_str().unwrap();
    let args = |extra: &[&'static str]| {
        let mut v = vec!["solve", "--board", "2x3", "--data", data, "--quiet"];
        v.extend_from_slice(extra);
        v
    };
    // No file system has 1000 TiB to spare: the first age does not fit.
    let o = run(&args(&["--min-free", "1000T"]));
    assert_clean_error(&o, "not enough free disk for the forward layers of age");
    assert!(stderr(&o).contains("run the same command again to resume"));
    assert!(!manifest_path(&b, "2x3", "expectation").exists());
    // Killed in the backward pass, then short of room for the rest of the run (projected
    // before the pass resumes, so before its next age): stops again, exit 2.
    let ages = reference["ages"].as_array().unwrap().len();
    assert!(kill_after_ages(&b, "2x3", ages + ages / 2));
    let before = snapshot_without_manifest(&b);
    let o = run(&args(&["--min-free", "1000T"]));
    assert_clean_error(
        &o,
        "not enough free disk for the rest of the solve (projected)",
    );
    assert!(!manifest_path(&b, "2x3", "expectation").exists());
    // Nothing the killed solve had finished was lost or changed: every file is still there
    // with its bytes (the lock file aside).
    let after = snapshot_without_manifest(&b);
    for (path, bytes) in &before {
        if path.ends_with(".lock") {
            continue;
        }
        let kept = after.iter().find(|(p, _)| p == path);
        assert_eq!(
            kept.map(|(_, b)| b),
            Some(bytes),
            "{} changed",
            path.display()
        );
    }
    // With room again the same command resumes and ends with the reference digests.
    solve(&b, "2x3", &[]);
    assert_eq!(
        manifest(&b, "2x3", "expectation")["files"],
        reference["files"]
    );
    assert_eq!(snapshot_without_manifest(&a), snapshot_without_manifest(&b));
    // A size that is not one is a usage error.
    let o = run(&args(&["--min-free", "lots"]));
    assert_clean_error(&o, "--min-free lots: not a size");
}

#[test]
fn plain_progress_gives_rates_and_the_time_left_from_the_boards_to_value() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Standard error is a pipe here, so the solve writes plain lines.
    let o = run(&["solve", "--board", "2x3", "--data", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let m = manifest(&data, "2x3", "expectation");
    let boards = m["n_states"].as_u64().unwrap() + m["n_afterstates"].as_u64().unwrap();
    let forward: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("forward: age"))
        .collect();
    assert!(!forward.is_empty() && forward.iter().all(|l| l.ends_with(" boards/s")));
    // The backward pass announces every board it will value, then counts them down.
    let start = format!("down to {}, {boards} boards", m["min_age"]);
    assert!(
        err.lines()
            .any(|l| l.starts_with("backward: from age") && l.ends_with(&start)),
        "no line ending {start:?}: {err}"
    );
    let backward: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("backward: age"))
        .collect();
    let counted: u64 = backward
        .iter()
        .map(|l| {
            l.split(", ")
                .nth(1)
                .unwrap()
                .trim_end_matches(" boards")
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(counted, boards);
    assert!(backward.iter().all(|l| l.ends_with(" s left")), "{err}");
}

#[test]
fn a_memory_trace_has_every_phase_of_every_age_and_the_solve_keeps_its_whole_peak() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let trace = dir.path().join("memory.tsv");
    solve(&data, "2x3", &["--trace-memory", trace.to_str().unwrap()]);
    let text = fs::read_to_string(&trace).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("pass\tage\tstates\tafterstates\tphase\tpeak_bytes\tresident_bytes\tseconds\tsent_bytes")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 9), "{text}");
    // One process sends nothing.
    assert!(rows.iter().all(|r| r[8] == "0"), "{text}");
    let num = |s: &str| s.parse::<u64>().unwrap();
    // Every row's peak is at least what is resident at its end, and both are known.
    for r in &rows {
        let (peak, resident) = (num(r[5]), num(r[6]));
        assert!(resident > 0 && peak >= resident, "{r:?}");
    }
    let m = manifest(&data, "2x3", "expectation");
    let ages = m["ages"].as_array().unwrap();
    // One forward row an age, with the age's counts, in increasing age.
    let forward: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "forward").collect();
    assert_eq!(forward.len(), ages.len());
    for (r, a) in forward.iter().zip(ages) {
        assert_eq!(num(r[1]), a["age"].as_u64().unwrap());
        assert_eq!(num(r[2]), a["n_states"].as_u64().unwrap());
        assert_eq!(num(r[3]), a["n_afterstates"].as_u64().unwrap());
        assert_eq!(r[4], "made");
    }
    // Five backward rows an age, in the pass's order of phases, from the top age down.
    let backward: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "backward").collect();
    assert_eq!(backward.len(), 5 * ages.len());
    let phases = [
        "load",
        "afterstate values",
        "afterstate table and files",
        "states valued",
        "files and level",
    ];
    for (five, a) in backward.chunks(5).zip(ages.iter().rev()) {
        for (r, phase) in five.iter().zip(phases) {
            assert_eq!(num(r[1]), a["age"].as_u64().unwrap(), "{r:?}");
            assert_eq!(num(r[2]), a["n_states"].as_u64().unwrap(), "{r:?}");
            assert_eq!(r[4], phase);
        }
    }
    // Each row's peak was reset after it; the solve's recorded peak is still the largest.
    let most = rows.iter().map(|r| num(r[5])).max().unwrap();
    assert!(m["peak_rss_bytes"].as_u64().unwrap() >= most);

    // A trace file that cannot be made: one line, nothing solved or lost.
    let before = snapshot(&data);
    let missing = dir.path().join("no such dir").join("memory.tsv");
    assert_clean_error(
        &run(&[
            "solve",
            "--board",
            "2x2",
            "--data",
            data.to_str().unwrap(),
            "--trace-memory",
            missing.to_str().unwrap(),
        ]),
        "--trace-memory",
    );
    assert_eq!(snapshot(&data), before);
}
