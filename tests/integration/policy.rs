//! The policy layout (`solve --layout policy`) against the full one: the stored move of every
//! state of 2x3, 2x4 and 3x3 (`goal-256`) is an optimal move (its q is the full layout's best
//! q); kept over the states optimal play reaches (`--reach`), the set holds the starts, is
//! closed under the stored moves and the spawns, and its moves are optimal; `best`, `play`,
//! `evaluate`, `verify` and `sql` read it and say what it lacks; a damaged policy file is
//! damage (exit 2), never a wrong move.

use std::fs;
use std::path::Path;

use age2048::query::Tablebase;
use age2048::rules::variant::Given;
use age2048::rules::{Shape, Variant};
use age2048::store::{Layout, Store};
use arrow::array::{Array, AsArray};
use arrow::datatypes::UInt64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use rayon::prelude::*;
use std::fs::File;

use crate::common::{
    self, fresh_dir, manifest, run, shared_goal_solves, shared_policy_solve, shared_solves_of,
    stderr, stdout,
};

fn solve(data: &Path, board: &str, variant: &str, layout: &str) {
    common::solve(data, board, variant, &["--layout", layout]);
}

/// The q-values of the full solve `full` make `d` an optimal move of `code` (its q is the best
/// q, bit for bit), or `d` is `None` where the full solve has no move.
fn assert_optimal(full: &Tablebase, code: u64, d: Option<age2048::rules::Dir>, what: &str) {
    let ev = full.evaluate(code, "").unwrap();
    match (ev.best, d) {
        (None, None) => {}
        (Some(_), Some(d)) => {
            let best =
                ev.q.iter()
                    .flatten()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
            let q = ev.q[d as usize].unwrap_or_else(|| panic!("{what}: {d:?} is not valid"));
            assert_eq!(
                q.to_bits(),
                best.to_bits(),
                "{what}: {d:?} q {q}, best {best}"
            );
        }
        (want, got) => panic!("{what}: move {got:?}, the full layout's {want:?}"),
    }
}

/// Every state of the full solve: the policy's move for the same id is an optimal one (ids are
/// canonical boards; the policy stores the rank of an optimal move in its order, the full
/// layout's `best` is the first optimal one in L, R, U, D).
pub(crate) fn policy_agrees_with_full(
    full: &Path,
    policy: &Path,
    board: &str,
    variant: &str,
) -> u64 {
    let shape = Shape::parse(board).unwrap();
    let v = Variant::parse(variant, Given::default()).unwrap();
    let tb = Tablebase::open(&Store::open(policy).unwrap(), shape, v).unwrap();
    let tf = Tablebase::open(&Store::open(full).unwrap(), shape, v).unwrap();
    assert!(!tb.has_values());
    let layout = Layout::new(full);
    let m = manifest(full, board, variant);
    let ages: Vec<u32> = m["ages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["n_states"].as_u64().unwrap() > 0)
        .map(|a| a["age"].as_u64().unwrap() as u32)
        .collect();
    ages.par_iter()
        .map(|&age| {
            let path = layout.states_file(shape, variant, age);
            let builder =
                ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
            let mask = ProjectionMask::columns(builder.parquet_schema(), ["id", "best"]);
            let mut checked = 0;
            for batch in builder.with_projection(mask).build().unwrap() {
                let b = batch.unwrap();
                let ids = b.column_by_name("id").unwrap().as_primitive::<UInt64Type>();
                let best = b.column_by_name("best").unwrap().as_string::<i32>();
                for i in 0..b.num_rows() {
                    let id = ids.value(i);
                    let got = tb.best_move(id, "").unwrap();
                    assert_eq!(got.is_some(), !best.is_null(i), "{board} age {age} {id:#x}");
                    let what = format!("{board} {variant} age {age} id {id:#x}");
                    assert_optimal(&tf, id, got, &what);
                    checked += 1;
                }
            }
            checked
        })
        .sum()
}

#[test]
fn the_policy_is_the_full_layouts_best_move_on_every_state() {
    let own = fresh_dir("policy_full");
    let policy = fresh_dir("policy_policy");
    // The policy layout's shared solves: 3x3 `goal-256` (a board of eight symmetries) and 2x4
    // `expectation` (made once per build of the binary).
    let shared_policy = shared_policy_solve();
    // 3x3 is a goal of the goal table: a sixth of the expectation game's states, the same
    // symmetries and cells; the expectation game's policy is checked on 2x3 and 2x4.
    let (goals, variant3) = (shared_goal_solves(), "goal-256");
    for (board, variant) in [
        ("2x3", "expectation"),
        ("2x3", "goal-64"),
        ("2x4", "expectation"),
        ("3x3", variant3),
    ] {
        // The full layout's solves several subjects read, where they hold the variant.
        let full = match (board, variant) {
            ("3x3", _) => goals,
            (_, "expectation") => shared_solves_of(board),
            _ => {
                solve(&own, board, variant, "full");
                own.as_path()
            }
        };
        let pol = if board == "2x3" {
            solve(&policy, board, variant, "policy");
            policy.as_path()
        } else {
            shared_policy
        };
        let (mf, mp) = (
            manifest(full, board, variant),
            manifest(pol, board, variant),
        );
        for field in [
            "n_states",
            "n_afterstates",
            "n_terminal_states",
            "max_tile",
            "value_two_2_tiles",
            "value_initial",
        ] {
            assert_eq!(mf[field], mp[field], "{board} {variant} {field}");
        }
        assert_eq!(mp["storage"]["layout"], "policy");
        let states = mf["n_states"].as_u64().unwrap();
        let checked = policy_agrees_with_full(full, pol, board, variant);
        assert_eq!(checked, states, "{board} {variant}");

        // Bits a state, the whole layout's bytes (policy files, ages table, manifest).
        let bytes: u64 = mp["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["bytes"].as_u64().unwrap())
            .sum();
        let bits = bytes as f64 * 8.0 / states as f64;
        if board == "3x3" {
            // The rank of an optimal move in a cheap rule's order, in unary, in ribbon
            // retrieval: 1.45 bits a state of 3x3 `goal-256` (1.33 of 3x3 expectation).
            assert!(bits <= 1.5, "3x3: {bits:.3} bits a state");
        }
    }

    // `best` says what it lacks, once, and answers the full layout's move.
    let boards = ["32 64 32/4 2 ./. . .", "4 2 ./. . ./. 2 ."];
    // The board, variant and format of `best` and `evaluate` below.
    let on3 = ["--board", "3x3", "--variant", variant3, "--format", "csv"];
    let mut args = vec!["best"];
    args.extend(on3);
    args.push("--data");
    let (f, p) = (goals.to_str().unwrap(), shared_policy.to_str().unwrap());
    let mut from_full = args.clone();
    from_full.push(f);
    from_full.extend(boards);
    args.push(p);
    args.extend(boards);
    let (of, op) = (run(&from_full), run(&args));
    assert!(
        of.status.success() && op.status.success(),
        "{}",
        stderr(&op)
    );
    assert!(stderr(&op).contains("policy layout"), "{}", stderr(&op));
    let last = |o: &str| -> Vec<String> {
        o.lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(last(&stdout(&op)), last(&stdout(&of)));
    assert!(stdout(&op).lines().nth(1).unwrap().contains(",,,,,"));

    // `evaluate` over the policy solve: the same optimal moves as over the full one (the
    // logged moves are the full layout's), no q-values or regrets, said once.
    let rows: Vec<Vec<String>> = stdout(&of)
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    // A move of the first board worth less than its best.
    let worse = |r: &Vec<String>| -> String {
        let value: f64 = r[5].parse().unwrap();
        (0..4)
            .find(|&i| !r[1 + i].is_empty() && r[1 + i].parse::<f64>().unwrap() < value - 1e-3)
            .map(|i| ["L", "R", "U", "D"][i].to_string())
            .unwrap_or_else(|| panic!("no worse move in {r:?}"))
    };
    let log = policy.with_extension("agent.csv");
    fs::write(
        &log,
        format!(
            "game,board,move\n0,{},{}\n0,{},{}\n1,{},{}\n",
            boards[0],
            rows[0][6],
            boards[1],
            rows[1][6],
            boards[0],
            worse(&rows[0])
        ),
    )
    .unwrap();
    let evaluate = |data: &str, out: &Path| {
        let mut args = vec!["evaluate"];
        args.extend(on3);
        args.extend([
            "--data",
            data,
            "--log",
            log.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        o
    };
    let (ef, ep) = (
        evaluate(f, &own.with_extension("eval")),
        evaluate(p, &policy.with_extension("eval")),
    );
    assert!(stderr(&ep).contains("policy layout"), "{}", stderr(&ep));
    let share = |o: &std::process::Output| {
        stdout(o)
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .nth(5)
            .unwrap()
            .to_string()
    };
    assert_eq!(share(&ep), share(&ef));
    assert!((share(&ep).parse::<f64>().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    let moves = policy.with_extension("eval").join("moves.parquet");
    let o = run(&[
        "sql", "--data", f, "--format", "csv",
        &format!("SELECT count(*) FILTER (WHERE q IS NULL AND regret IS NULL), count(*) FILTER (WHERE optimal) FROM '{}'", moves.display()),
    ]);
    assert_eq!(stdout(&o).lines().nth(1), Some("3,2"), "{}", stderr(&o));

    // `play --policy optimal` over the policy solve makes the goal as often as over the full
    // one (after it, any move is optimal, so the scores may differ).
    let play3 = ["play", "--board", "3x3", "--variant", variant3];
    let play = |data: &str| -> serde_json::Value {
        let mut args = play3.to_vec();
        args.extend(["--games", "2000", "--seed", "7", "--format", "json"]);
        args.extend(["--data", data]);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let (jf, jp) = (play(f), play(p));
    let mean = |j: &serde_json::Value| j["success"]["mean"].as_f64().unwrap();
    let se = |j: &serde_json::Value| j["success"]["std_error"].as_f64().unwrap();
    let diff = (mean(&jf) - mean(&jp)).abs();
    assert!(
        diff <= 3.0 * (se(&jf).powi(2) + se(&jp).powi(2)).sqrt(),
        "full {jf}, policy {jp}"
    );
    // What needs values is refused in one line.
    let mut args = play3.to_vec();
    args.extend(["--watch", "--data", p]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("policy layout"), "{}", stderr(&o));

    // `verify` checks its files, `sql` shows its ages table.
    let o = run(&["verify", "--data", p]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let o = run(&[
        "sql",
        "--data",
        p,
        "--format",
        "csv",
        &format!("SELECT sum(n_states) FROM ages WHERE board = '3x3' AND variant = '{variant3}'"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let states = manifest(goals, "3x3", variant3)["n_states"].to_string();
    assert_eq!(stdout(&o).lines().nth(1), Some(states.as_str()));
}

#[test]
fn a_flipped_byte_in_a_policy_file_is_damage_never_a_move() {
    let data = fresh_dir("policy_damage");
    solve(&data, "2x3", "expectation", "policy");
    let m = manifest(&data, "2x3", "expectation");
    let biggest = m["ages"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|a| a["policy"]["file_bytes"].as_u64().unwrap_or(0))
        .unwrap();
    let file = data.join(biggest["policy"]["file"].as_str().unwrap());
    let bytes = fs::read(&file).unwrap();
    let age = biggest["age"].as_u64().unwrap();
    // A board of that age: the sql view has no states, so take one from a full solve.
    let full = shared_solves_of("2x3");
    let q = format!(
        "SELECT board_text(id, board) FROM states WHERE board = '2x3' AND age = {age} AND NOT terminal LIMIT 1"
    );
    let o = run(&[
        "sql",
        "--data",
        full.to_str().unwrap(),
        "--format",
        "csv",
        &q,
    ]);
    let board = stdout(&o)
        .lines()
        .nth(1)
        .unwrap()
        .trim_matches('"')
        .to_string();
    let d = data.to_str().unwrap();
    let best = || run(&["best", "--board", "2x3", "--data", d, &board]);
    assert!(best().status.success(), "{}", stderr(&best()));
    for at in [3, 60, 130, bytes.len() / 2, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        fs::write(&file, &bad).unwrap();
        let o = best();
        assert_eq!(o.status.code(), Some(2), "byte {at}: {}", stdout(&o));
        assert!(stderr(&o).contains("damaged"), "byte {at}: {}", stderr(&o));
        fs::write(&file, &bytes).unwrap();
    }
    let o = run(&["verify", "--data", d]);
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn policy_layout_flags_are_checked() {
    let data = fresh_dir("policy_flags");
    let d = data.to_str().unwrap();
    for extra in [["--precision", "16"], ["--parquet-ages", "4-10"]] {
        let o = run(&[
            "solve", "--board", "2x2", "--layout", "policy", "--data", d, extra[0], extra[1],
        ]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("compact only"), "{}", stderr(&o));
    }
    assert!(!data.join("manifest").exists());
}

/// Walks optimal play as the reach solve `reach` stores it, from every start: per age the
/// states it reaches, each one's stored move checked optimal against the full solve `full`,
/// and every spawn after it reached. Returns per age the states reached, each with its stored
/// move (`None`: terminal or holding the goal), in id order.
pub fn walk_reached(
    full: &Path,
    reach: &Path,
    board: &str,
    variant: &str,
) -> std::collections::BTreeMap<u32, Vec<(u64, Option<age2048::rules::Dir>)>> {
    use age2048::rules::board as b;
    use std::collections::BTreeMap;
    let shape = Shape::parse(board).unwrap();
    let v = Variant::parse(variant, Given::default()).unwrap();
    let tr = Tablebase::open(&Store::open(reach).unwrap(), shape, v).unwrap();
    let tf = Tablebase::open(&Store::open(full).unwrap(), shape, v).unwrap();
    assert!(tr.reached_only() && !tf.reached_only());
    let game = tr.game();
    let class = v.forward_class();
    let mut pending: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (code, p) in game.starts(v.p4) {
        if p > 0.0 {
            pending
                .entry(b::age(code))
                .or_default()
                .push(game.canon(code));
        }
    }
    let mut walked = BTreeMap::new();
    while let Some((age, mut states)) = pending.pop_first() {
        states.sort_unstable();
        states.dedup();
        let moves: Vec<_> = states
            .par_iter()
            .map(|&s| (s, tr.best_move(s, "").unwrap()))
            .collect();
        let kids: Vec<Vec<(u32, u64)>> = moves
            .par_iter()
            .map(|&(s, d)| {
                assert_optimal(&tf, s, d, &format!("{board} {variant} reached {s:#x}"));
                let Some(d) = d else {
                    return Vec::new();
                };
                assert!(!age2048::solver::forward::absorbed(&class, s));
                let (a, _) = game.rules.apply(s, d).unwrap();
                let mut out = Vec::new();
                for i in (0..shape.cells()).filter(|&i| b::cell(a, i) == 0) {
                    for (e, ok) in [(1u8, v.p4 < 1.0), (2, v.p4 > 0.0)] {
                        if ok {
                            out.push((age + 2 * u32::from(e), game.canon(b::place(a, i, e))));
                        }
                    }
                }
                out
            })
            .collect();
        walked.insert(age, moves);
        for (a, k) in kids.into_iter().flatten() {
            pending.entry(a).or_default().push(k);
        }
    }
    walked
}

#[test]
fn the_reached_set_holds_the_starts_is_closed_and_its_moves_are_optimal() {
    let data = fresh_dir("policy_reach");
    let d = data.to_str().unwrap();
    let goals = shared_goal_solves();
    for (board, variant, full) in [
        ("2x3", "expectation", shared_solves_of("2x3")),
        ("2x4", "expectation", shared_solves_of("2x4")),
        ("2x3", "goal-32", goals),
        ("3x3", "goal-256", goals),
    ] {
        common::solve(&data, board, variant, &["--layout", "policy", "--reach"]);
        let m = manifest(&data, board, variant);
        assert_eq!(m["storage"]["reach"], true);
        // The walk from the starts following the stored moves reaches, age by age, the
        // states the solve says it kept: its set holds the starts and is closed, and every
        // move stored for it is optimal.
        let walked: std::collections::BTreeMap<u32, u64> =
            walk_reached(full, &data, board, variant)
                .into_iter()
                .map(|(age, states)| (age, states.len() as u64))
                .collect();
        let kept: std::collections::BTreeMap<u32, u64> = m["ages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["n_reached"].as_u64().unwrap_or(0) > 0)
            .map(|a| {
                (
                    a["age"].as_u64().unwrap() as u32,
                    a["n_reached"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(walked, kept, "{board} {variant}");
        let reached: u64 = kept.values().sum();
        let states = m["n_states"].as_u64().unwrap();
        assert!(reached < states, "{board} {variant}: {reached} of {states}");
        // Every age with states has its file and its count (0 where none is reached).
        for a in m["ages"].as_array().unwrap() {
            if a["n_states"].as_u64().unwrap() > 0 {
                assert!(
                    a["n_reached"].is_u64(),
                    "{board} {variant} age {}",
                    a["age"]
                );
                // (A count of 0 is left out of the policy entry.)
                let states = a["policy"]["states"].as_u64().unwrap_or(0);
                assert_eq!(Some(states), a["n_reached"].as_u64());
            }
        }
        if board == "3x3" {
            let bytes: u64 = m["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["bytes"].as_u64().unwrap())
                .sum();
            // 0.65 measured on 3x3 `goal-256`, whose ties are a fifth of its states; 3x3
            // expectation (0.51, reports/bench/policy.md) is too long a solve for this suite.
            let bits = bytes as f64 * 8.0 / states as f64;
            assert!(
                bits <= 0.7,
                "3x3 {variant}: {bits:.3} bits a state of the space"
            );
        }
    }

    // `best` says the layout covers optimal play only; `play --policy optimal` plays it as
    // well as the exact value says (it never leaves the set: a board outside it would get a
    // move that is not optimal, and the walk above checks every board it reaches).
    let o = run(&[
        "best",
        "--board",
        "3x3",
        "--variant",
        "goal-256",
        "--data",
        d,
        "2 2 ./. . ./. . .",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("optimal play"), "{}", stderr(&o));
    let o = run(&[
        "play",
        "--board",
        "3x3",
        "--variant",
        "goal-256",
        "--games",
        "2000",
        "--seed",
        "3",
        "--format",
        "json",
        "--data",
        d,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let exact = manifest(&data, "3x3", "goal-256")["value_initial"]
        .as_f64()
        .unwrap();
    let (mean, se) = (
        j["success"]["mean"].as_f64().unwrap(),
        j["success"]["std_error"].as_f64().unwrap(),
    );
    assert!(
        (mean - exact).abs() <= 4.0 * se + 1e-9,
        "{mean} ± {se} against {exact}"
    );

    // `verify` checks its files, `sql` shows the counts in `ages`.
    let o = run(&["verify", "--data", d]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let o = run(&[
        "sql", "--data", d, "--format", "csv",
        "SELECT sum(n_reached), sum(n_states) FROM ages WHERE board = '3x3' AND variant = 'goal-256'",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = manifest(&data, "3x3", "goal-256");
    let reached: u64 = m["ages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["n_reached"].as_u64())
        .sum();
    assert_eq!(
        stdout(&o).lines().nth(1).unwrap(),
        format!("{reached},{}", m["n_states"])
    );

    // A flipped byte in a reach solve's file is damage too.
    let age = m["ages"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|a| a["policy"]["file_bytes"].as_u64().unwrap_or(0))
        .unwrap();
    let file = data.join(age["policy"]["file"].as_str().unwrap());
    let bytes = fs::read(&file).unwrap();
    let mut bad = bytes.clone();
    bad[bytes.len() / 2] ^= 1;
    fs::write(&file, &bad).unwrap();
    let o = run(&["verify", "--data", d]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    fs::write(&file, &bytes).unwrap();
}

#[test]
fn reach_is_for_the_policy_layout_only() {
    let data = fresh_dir("policy_reach_flags");
    let o = run(&[
        "solve",
        "--board",
        "2x2",
        "--reach",
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--layout policy only"),
        "{}",
        stderr(&o)
    );
    assert!(!data.join("manifest").exists());
}
