//! The compact layout (`solve --layout compact`) against the full one, through the real binary:
//! the same `best` answers (bit for bit with f64 values, within the stated precision in fixed
//! point), the same counts and start values, and `sql`, `compare` and `report` working on it
//! while saying what it lacks.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::common::{
    cached, fresh_dir, manifest, run, sample_boards, solve, stderr, stdout, Cell, Sample,
};

/// The full layout's solve of `board` that several subjects read: 3x3 `goal-256` is one of
/// the goal table's, 2x4 `expectation` and `goal-128` are in [`crate::common::shared_solves`]
/// (waited for alone, [`crate::common::shared_solves_of`]).
fn full_solve(board: &str) -> &'static Path {
    if board == "3x3" {
        crate::common::shared_goal_solves()
    } else {
        crate::common::shared_solves_of(board)
    }
}

/// The sampled boards of the shared full-layout solve (one in `every`) and their answers
/// there ([`answers`]), made once for the tests that compare a compact solve with them.
fn full_answers(board: &str, variant: &str, every: u64) -> Cell<(Vec<String>, Vec<String>)> {
    type Made = Mutex<HashMap<String, Cell<(Vec<String>, Vec<String>)>>>;
    static MADE: OnceLock<Made> = OnceLock::new();
    cached(&MADE, format!("{board} {variant} {every}"), || {
        let full = full_solve(board);
        let boards = sample_boards(full, board, variant, Sample::EveryNth(every));
        let want = answers(full, board, variant, &boards);
        (boards, want)
    })
}

/// `best` of `boards` as CSV rows `board,L,R,U,D,value,best`.
fn answers(data: &Path, board: &str, variant: &str, boards: &[String]) -> Vec<String> {
    // The list goes beside the test's own folders, never into a shared solve's.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let input =
        crate::common::scratch().join(format!("compact_boards_{}_{n}.txt", std::process::id()));
    fs::write(&input, boards.join("\n")).unwrap();
    let o = run(&[
        "best",
        "--board",
        board,
        "--variant",
        variant,
        "--data",
        data.to_str().unwrap(),
        "--format",
        "csv",
        "--input",
        input.to_str().unwrap(),
    ]);
    let _ = fs::remove_file(&input);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<String> = stdout(&o).lines().skip(1).map(String::from).collect();
    assert_eq!(rows.len(), boards.len());
    rows
}

/// Checks that fixed-point answers are the full ones within `err` per q-value, with the same
/// best move unless the full solve's best two moves lie within `2·err` of each other (then
/// either is right to the stated precision). Returns the boards whose best move differs.
fn same_within(full: &[String], fixed: &[String], err: f64) -> usize {
    let parse = |row: &str| -> (String, Vec<Option<f64>>, String) {
        let f: Vec<&str> = row.split(',').collect();
        let q = f[1..5].iter().map(|x| x.parse().ok()).collect();
        (f[0].to_string(), q, f[6].to_string())
    };
    let mut differs = 0;
    for (a, b) in full.iter().zip(fixed) {
        let ((board, qa, ba), (_, qb, bb)) = (parse(a), parse(b));
        for (x, y) in qa.iter().zip(&qb) {
            match (x, y) {
                (Some(x), Some(y)) => assert!(
                    (x - y).abs() <= err + 1e-9 * x.abs(),
                    "{board}: q {y} against the full layout's {x} (error {err})"
                ),
                (None, None) => {}
                _ => panic!("{board}: valid moves differ: {a} against {b}"),
            }
        }
        if ba != bb {
            differs += 1;
            let letters = ["L", "R", "U", "D"];
            let q_of = |m: &str| qa[letters.iter().position(|&l| l == m).unwrap()].unwrap();
            assert!(
                (q_of(&ba) - q_of(&bb)).abs() <= 2.0 * err + 1e-9 * q_of(&ba).abs(),
                "{board}: best move {bb} against the full layout's {ba}: {a} / {b}"
            );
        }
    }
    differs
}

#[test]
fn compact_and_full_give_the_same_best_answers_on_2x4_and_3x3() {
    let dir = fresh_dir("compact_best");
    // The boards at once, each in folders of its own.
    let dir = &dir;
    std::thread::scope(|scope| {
        // 3x3 is a goal (a sixth of the expectation game's states): its eight symmetries and
        // nine cells are what it adds to 2x4, whose two variants hold both precisions.
        for (board, variants, every) in [
            ("2x4", "expectation,goal-128", 13u64),
            ("3x3", "goal-256", 1999),
        ] {
            scope.spawn(move || {
                // The full layout's solves are those several subjects read.
                let full = full_solve(board);
                // 3x3's compact solve is one `mpi` reads too.
                let fixed = if board == "3x3" {
                    crate::common::shared_compact_solve().to_path_buf()
                } else {
                    let fixed = dir.join(format!("{board}-compact"));
                    solve(&fixed, board, variants, &["--layout", "compact"]);
                    fixed
                };
                let exact = dir.join(format!("{board}-compact-f64"));
                if board == "2x4" {
                    solve(
                        &exact,
                        board,
                        variants,
                        &["--layout", "compact", "--precision", "f64"],
                    );
                }
                for variant in variants.split(',') {
                    let (m, c) = (
                        manifest(full, board, variant),
                        manifest(&fixed, board, variant),
                    );
                    // Counts, ages and start values are the solve's, whatever the layout.
                    for k in [
                        "n_states",
                        "n_afterstates",
                        "n_terminal_states",
                        "value_initial",
                    ] {
                        assert_eq!(m[k], c[k], "{board} {variant}: {k}");
                    }
                    // Every per-age figure too (the compact writer gets them from the pass, not from
                    // the state records): the manifests' ages without their index sizes.
                    let ages = |m: &serde_json::Value| -> Vec<serde_json::Value> {
                        let mut ages = m["ages"].as_array().unwrap().clone();
                        for a in &mut ages {
                            a.as_object_mut().unwrap().remove("index");
                        }
                        ages
                    };
                    assert_eq!(ages(&m), ages(&c), "{board} {variant}: per-age figures");
                    assert_eq!(c["storage"]["layout"], "compact");
                    let f = if variant == "expectation" { 16 } else { 32 };
                    assert_eq!(c["storage"]["value_fraction_bits"], f);
                    // Only index files and the ages table: no per-state Parquet.
                    let files = c["files"].as_array().unwrap();
                    assert!(files.iter().all(|f| {
                        let p = f["path"].as_str().unwrap();
                        p.starts_with("index/") || p.starts_with("ages/")
                    }));
                    assert!(
                        c["files"].as_array().unwrap().len() < m["files"].as_array().unwrap().len()
                    );
                    let made = full_answers(board, variant, every);
                    let (boards, want) = made.get().unwrap();
                    assert!(boards.len() > 1000, "{board}: only {} boards", boards.len());
                    let got = answers(&fixed, board, variant, boards);
                    let err = 2f64.powi(-(f + 1));
                    let differs = same_within(want, &got, err);
                    assert!(
                        differs * 100 < boards.len(),
                        "{board} {variant}: {differs} best moves differ"
                    );
                    if board == "2x4" {
                        // f64 values: the very same answers, bit for bit.
                        assert_eq!(&answers(&exact, board, variant, boards), want);
                    }
                }
            });
        }
    });
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn sql_compare_and_report_work_on_a_compact_solve_and_say_what_it_lacks() {
    let dir = fresh_dir("compact_readers");
    let data = dir.join("data");
    let d = data.to_str().unwrap();
    solve(
        &data,
        "2x3",
        "expectation,optimistic",
        &["--layout", "compact", "--parquet-ages", "10-20"],
    );
    // `ages` has every age; `states` only the ages kept in Parquet.
    let o = run(&[
        "sql",
        "--data",
        d,
        "--format",
        "csv",
        "SELECT (SELECT sum(n_states) FROM ages WHERE variant = 'expectation'), \
         (SELECT count(*) FROM states WHERE variant = 'expectation'), \
         (SELECT sum(n_states) FROM ages WHERE variant = 'expectation' AND age BETWEEN 10 AND 20), \
         (SELECT min(age) FROM states), (SELECT max(age) FROM afterstates)",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let row: Vec<u64> = stdout(&o)
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    let m = manifest(&data, "2x3", "expectation");
    assert_eq!(row[0], m["n_states"].as_u64().unwrap());
    assert_eq!(row[1], row[2], "states rows are those of ages 10..20");
    assert!(row[1] > 0 && row[1] < row[0]);
    assert!(row[3] >= 10 && row[4] <= 20);

    // `compare` joins states where both have Parquet, afterstates elsewhere, and says so.
    let out = dir.join("cmp");
    let o = run(&[
        "compare",
        "--board",
        "2x3",
        "--data",
        d,
        "--variants",
        "expectation,optimistic",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("compared over"), "{}", stdout(&o));
    let csv = fs::read_to_string(out.join("compare-2x3-expectation-vs-optimistic.csv")).unwrap();
    let over: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap())
        .collect();
    assert!(
        over.contains(&"states") && over.contains(&"afterstates"),
        "{csv}"
    );
    for l in csv.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let age: u32 = f[2].parse().unwrap();
        assert_eq!(f[3] == "states", (10..=20).contains(&age), "{l}");
        // A best move is known only over states.
        assert_eq!(f[6].is_empty(), f[3] == "afterstates", "{l}");
    }

    // The report renders, and its variants table names the layout.
    let rep = dir.join("report");
    let o = run(&["report", "--data", d, "--out", rep.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let variants = fs::read_to_string(rep.join("tables/variants.csv")).unwrap();
    assert!(
        variants.contains("compact (2^-16, Parquet 10..20)"),
        "{variants}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// Without state ids a board counts as reachable when all its afterstates are: one with an
/// afterstate no game reaches is refused like in the full layout, one whose afterstates are
/// all reached is answered (what the compact layout cannot tell, and says in its docs).
#[test]
fn compact_best_refuses_boards_whose_afterstates_are_not_reached() {
    let dir = fresh_dir("compact_unreachable");
    let (full, compact) = (dir.join("full"), dir.join("compact"));
    solve(&full, "2x2", "expectation", &[]);
    solve(&compact, "2x2", "expectation", &["--layout", "compact"]);
    let best = |data: &Path, b: &str| {
        let o = run(&[
            "best",
            "--board",
            "2x2",
            "--data",
            data.to_str().unwrap(),
            b,
        ]);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(2),
            "{}",
            stderr(&o)
        );
        if o.status.code() == Some(2) {
            assert!(stderr(&o).contains("not a reachable"), "{}", stderr(&o));
        }
        o.status.success()
    };
    // `best` says once what the compact layout cannot tell, on standard error.
    let o = run(&[
        "best",
        "--board",
        "2x2",
        "--data",
        compact.to_str().unwrap(),
        "2 2/. .",
    ]);
    assert!(
        stderr(&o).starts_with("note: 2x2 expectation is stored in the compact layout")
            && stderr(&o).lines().count() == 1,
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "best",
        "--board",
        "2x2",
        "--data",
        full.to_str().unwrap(),
        "2 2/. .",
    ]);
    assert_eq!(stderr(&o), "");
    for (board, in_full, in_compact) in [
        ("2 2/. .", true, true),
        // Age 16 is solved, but merging the 8s makes an afterstate no game reaches.
        (". ./8 8", false, false),
        // An age the solve never reaches.
        ("1024 1024/. .", false, false),
        // A lone 4 is no state (a state holds the spawn after a move), but its moves lead
        // to the afterstate a game reaches by merging two 2s.
        (". ./. 4", false, true),
    ] {
        assert_eq!(best(&full, board), in_full, "full layout: {board}");
        assert_eq!(best(&compact, board), in_compact, "compact layout: {board}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn layout_flags_are_checked() {
    let dir = fresh_dir("compact_flags");
    let d = dir.join("data");
    let d = d.to_str().unwrap();
    for (extra, want) in [
        (vec!["--layout", "tiny"], "--layout tiny: not a layout"),
        (
            vec!["--precision", "16"],
            "--precision applies to --layout compact only",
        ),
        (
            vec!["--parquet-ages", "4-8"],
            "--parquet-ages applies to --layout compact only",
        ),
        (
            vec!["--layout", "compact", "--precision", "53"],
            "--precision 53: not a number",
        ),
        (
            vec!["--layout", "compact", "--precision", "x"],
            "--precision x: not a number",
        ),
        (
            vec!["--layout", "compact", "--parquet-ages", "9-4"],
            "--parquet-ages 9-4: not a range",
        ),
        (
            vec!["--layout", "compact", "--parquet-ages", "4"],
            "--parquet-ages 4: not a range",
        ),
    ] {
        let mut args = vec!["solve", "--board", "2x2", "--data", d, "--quiet"];
        args.extend_from_slice(&extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    assert!(!dir.join("data/manifest").exists());
    let _ = fs::remove_dir_all(&dir);
}

/// A solve asked for in another layout than the finished one is solved again in that layout
/// (not reused), and says so in its summary.
#[test]
fn another_layout_solves_again() {
    let dir = fresh_dir("compact_again");
    let data = dir.join("data");
    solve(&data, "2x2", "expectation", &[]);
    assert!(data.join("states/board=2x2").exists());
    let o = run(&[
        "solve",
        "--board",
        "2x2",
        "--data",
        data.to_str().unwrap(),
        "--quiet",
        "--layout",
        "compact",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("compact layout"), "{}", stderr(&o));
    assert_eq!(
        manifest(&data, "2x2", "expectation")["storage"]["layout"],
        "compact"
    );
    // The full solve's Parquet is gone with it, and what is left checks clean.
    assert!(!data.join("states/board=2x2/variant=expectation").exists());
    let o = run(&["verify", "--data", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let _ = fs::remove_dir_all(&dir);
}

/// Regression: `--precision 50` failed at the first age of the backward pass, after the whole
/// forward pass ("does not fit 53 bits at 2^-50"): 2x4's points, up to ≈ 2,600, need more
/// than 53 bits at that precision. Such ages are stored as f64 (exact, so within the error
/// asked), the others in fixed point.
#[test]
fn a_precision_finer_than_53_bits_hold_stores_those_ages_exactly() {
    let dir = fresh_dir("compact_precision_50");
    let fine = dir.join("compact-50");
    solve(
        &fine,
        "2x4",
        "expectation",
        &["--layout", "compact", "--precision", "50"],
    );
    let c = manifest(&fine, "2x4", "expectation");
    assert_eq!(c["storage"]["value_fraction_bits"], 50);
    let made = full_answers("2x4", "expectation", 13);
    let (boards, want) = made.get().unwrap();
    let got = answers(&fine, "2x4", "expectation", boards);
    let differs = same_within(want, &got, 2f64.powi(-51));
    assert!(differs * 100 < boards.len(), "{differs} best moves differ");
    let _ = fs::remove_dir_all(&dir);
}
