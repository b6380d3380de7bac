//! `age2048 play` and `age2048 evaluate` on real solves (2x3 in a temporary directory, 2x4
//! the solve several subjects read): optimal play agrees with the exact values, runs are
//! deterministic whatever the number of threads, a scripted interactive game shows the
//! regrets `best` gives, and `evaluate` writes the regrets of a hand-made log (and nothing
//! for a bad one).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use crate::common::{
    best_rows, run, run_stdin, shared_solves_of, solve_all, stderr, stdout, Boards, BIN,
};

/// The 2x3 solves every test reads, made once per test run.
fn data() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        solve_all(
            "play_data",
            &[
                ("2x3", "expectation,pessimistic,goal-128"),
                ("2x3", "goal-128-discount=0.99"),
            ],
        )
    })
}

fn d() -> &'static str {
    data().to_str().unwrap()
}

/// The solves of `board`: 2x4 `expectation` is the shared one (`common::shared_solves`).
fn data_of(board: &str) -> &'static Path {
    if board == "2x4" {
        shared_solves_of(board)
    } else {
        data()
    }
}

fn value_initial(board: &str, variant: &str) -> f64 {
    crate::common::manifest(data_of(board), board, variant)["value_initial"]
        .as_f64()
        .unwrap()
}

/// `play --format csv`: quantity → (mean, std_error, exact).
fn play_csv(args: &[&str]) -> BTreeMap<String, (f64, f64, Option<f64>)> {
    let board = args.iter().skip_while(|&&a| a != "--board").nth(1).unwrap();
    let mut all = vec!["play", "--data", data_of(board).to_str().unwrap()];
    all.extend(["--format", "csv"]);
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(o.status.success(), "play {args:?}: {}", stderr(&o));
    let text = stdout(&o);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("quantity,mean,std_error,exact"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].to_string(),
                (
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().ok(),
                ),
            )
        })
        .collect()
}

/// |estimate − exact| ≤ 3 standard errors, for the quantity the variant is about.
fn assert_agrees(board: &str, variant: &str, quantity: &str, games: &str) {
    let rows = play_csv(&[
        "--board",
        board,
        "--variant",
        variant,
        "--games",
        games,
        "--seed",
        "7",
    ]);
    let (mean, se, exact) = rows[quantity];
    let want = value_initial(board, variant);
    assert_eq!(
        exact,
        Some(want),
        "{board} {variant}: exact value from the manifest"
    );
    assert!(se > 0.0);
    assert!(
        (mean - want).abs() <= 3.0 * se,
        "{board} {variant}: {quantity} {mean} ± {se} is more than 3 standard errors from {want}"
    );
}

#[test]
fn optimal_play_agrees_with_the_exact_value() {
    assert_agrees("2x3", "expectation", "score", "20000");
    assert_agrees("2x4", "expectation", "score", "8000");
    // The spawn rule of the variant: the spawner picks the worst cell.
    assert_agrees("2x3", "pessimistic", "score", "20000");
    // A goal variant: the success rate estimates the probability of making 128.
    assert_agrees("2x3", "goal-128", "success", "40000");
    // A discounted goal: the mean of 0.99^(moves to make 128) estimates its value.
    assert_agrees("2x3", "goal-128-discount=0.99", "discounted", "40000");
}

#[test]
fn discounted_play_is_deterministic_whatever_the_thread_count() {
    let args = |threads: &'static str| {
        vec![
            "play",
            "--board",
            "2x3",
            "--data",
            d(),
            "--variant",
            "goal-128",
            "--discount",
            "0.99",
            "--games",
            "3000",
            "--seed",
            "5",
            "--threads",
            threads,
            "--format",
            "json",
        ]
    };
    let (one, two) = (run(&args("1")), run(&args("2")));
    assert!(one.status.success(), "{}", stderr(&one));
    assert_eq!(stdout(&one), stdout(&two));
    let v: serde_json::Value = serde_json::from_str(&stdout(&one)).unwrap();
    let (d, p) = (
        v["discounted"]["mean"].as_f64().unwrap(),
        v["success"]["mean"].as_f64().unwrap(),
    );
    assert!(0.0 < d && d < p, "discounted {d}, success {p}");
}

#[test]
fn play_is_deterministic_whatever_the_thread_count() {
    let args = |threads: &'static str, seed: &'static str| {
        vec![
            "play",
            "--board",
            "2x3",
            "--data",
            d(),
            "--games",
            "3000",
            "--seed",
            seed,
            "--threads",
            threads,
            "--format",
            "json",
        ]
    };
    let one = run(&args("1", "11"));
    let two = run(&args("2", "11"));
    assert!(one.status.success() && two.status.success());
    assert_eq!(stdout(&one), stdout(&two));
    let other = run(&args("2", "12"));
    assert_ne!(stdout(&one), stdout(&other), "another seed, other games");
    let v: serde_json::Value = serde_json::from_str(&stdout(&one)).unwrap();
    assert_eq!(v["games"], 3000);
    assert_eq!(v["policy"], "optimal");
    // The shares of games reaching each tile decrease with the tile.
    let shares: Vec<f64> = v["reach"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["share"].as_f64().unwrap())
        .collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
    assert_eq!(shares[0], 1.0);
}

#[test]
fn baselines_score_below_the_optimum() {
    let exact = value_initial("2x3", "expectation");
    for policy in ["random", "greedy"] {
        let rows = play_csv(&[
            "--board", "2x3", "--games", "3000", "--policy", policy, "--seed", "1",
        ]);
        let (mean, se, _) = rows["score"];
        assert!(mean + 10.0 * se < exact, "{policy}: {mean} ± {se}");
    }
}

#[test]
fn watch_shows_every_move_with_its_q_values() {
    let o = run(&[
        "play",
        "--board",
        "2x3",
        "--data",
        d(),
        "--watch",
        "--seed",
        "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("move 1, score 0, age "), "{text}");
    assert!(text.contains("q  L "), "{text}");
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("game over: score "), "{last}");
    // The optimal policy never regrets a move.
    for l in text.lines().filter(|l| l.starts_with("plays ")) {
        assert!(l.ends_with("regret 0.0000"), "{l}");
    }
}

/// The frames of an interactive game: (board, message) — the grid lines after the blank
/// line that follows the score line, and the line after the grid.
fn frames(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("score ") {
            let grid: Vec<&str> = lines[i + 2..]
                .iter()
                .take_while(|r| !r.trim().is_empty())
                .copied()
                .collect();
            let board: Vec<String> = grid
                .iter()
                .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            let message = lines[i + 3 + grid.len()].to_string();
            out.push((board.join("/"), message));
        }
    }
    out
}

/// `best --format csv` of one board: (q of L, R, U, D, value, best).
fn best(board: &str, text: &str) -> (Vec<Option<f64>>, f64, String) {
    let rows = best_rows(data_of(board), board, None, &[], Boards::Args(&[text]))
        .unwrap_or_else(|e| panic!("best {text}: {e}"));
    let row = rows.into_iter().next().unwrap();
    (row.q.to_vec(), row.value, row.best)
}

#[test]
fn a_scripted_interactive_game_shows_the_regrets_best_gives() {
    let args = [
        "play",
        "--board",
        "2x3",
        "--data",
        d(),
        "--interactive",
        "--seed",
        "5",
    ];
    // Left, a hint, right, down, an unknown key, up, then quit.
    let script = "h\n?\nl\nj\nx\nk\nq\n";
    let o = run_stdin(&args, script);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        !text.contains('\x1b'),
        "no terminal codes without a terminal"
    );
    let frames = frames(&text);
    assert_eq!(frames.len(), 7, "{text}");
    let (mut moves, mut regrets) = (0, 0);
    for w in frames.windows(2) {
        let ((before, _), (_, message)) = (&w[0], &w[1]);
        let (q, value, best_move) = best("2x3", before);
        if let Some(hint) = message.strip_prefix("hint: ") {
            // The hint shows the four q-values of the board.
            for (letter, q) in ["L", "R", "U", "D"].iter().zip(&q) {
                let shown = q.map_or("—".to_string(), |q| format!("{q:.4}"));
                assert!(hint.contains(&format!("{letter} {shown}")), "{hint}");
            }
            continue;
        }
        let Some(dir) = ["L", "R", "U", "D"]
            .iter()
            .position(|m| message.starts_with(&format!("{m}: +")))
        else {
            continue;
        };
        moves += 1;
        // The regret of the move played is the best value minus its q.
        let regret = value - q[dir].unwrap();
        if regret > 1e-9 * value {
            regrets += 1;
            assert!(
                message.contains(&format!("regret {regret:.4};"))
                    && message.contains(&format!("the optimal move was {best_move}")),
                "{message} (best: regret {regret}, best move {best_move})"
            );
        } else {
            assert!(message.contains("regret 0 (optimal"), "{message}");
        }
    }
    assert_eq!(moves, 4, "{text}");
    assert!(regrets >= 1, "the script makes a costly move: {text}");
    assert!(text.contains("key 'x' does nothing"));
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("quit: score "), "{last}");
    assert!(last.contains("optimal moves "), "{last}");
    // The same seed and keys replay the same game.
    assert_eq!(stdout(&run_stdin(&args, script)), text);
    // The end of the script ends the game like q.
    let o = run_stdin(&args, "l");
    assert!(stdout(&o).lines().last().unwrap().starts_with("quit: "));
}

/// The hand-made log: two games on 2x3 (game "b" interleaved with "a").
const LOG_CSV: &str = "\
game,board,move
a,2 0 0/0 2 0,L
a,2 2 0/2 0 0,R
b,0 0 2/0 2 0,down
a,4 2 2/0 0 0,D
a,2 4 0/0 0 2,U
b,16 4 2/2 4 .,R
";

fn evaluate(log: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "evaluate",
        "--board",
        "2x3",
        "--data",
        d(),
        "--log",
        log,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn csv_table(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(str::to_string))
                .collect()
        })
        .collect()
}

#[test]
fn evaluate_gives_the_regrets_best_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("agent.csv");
    std::fs::write(&log, LOG_CSV).unwrap();
    let out = tmp.path().join("eval");
    let o = evaluate(log.to_str().unwrap(), &out, &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let moves = csv_table(&out.join("moves.csv"));
    assert_eq!(moves.len(), 6);
    let mut total: BTreeMap<String, f64> = BTreeMap::new();
    let mut optimal = 0;
    for (row, line) in moves.iter().zip(LOG_CSV.lines().skip(1)) {
        let f: Vec<&str> = line.split(',').collect();
        let (q, value, best_move) = best("2x3", f[1]);
        let dir = ["L", "R", "U", "D"]
            .iter()
            .position(|m| *m == row["move"])
            .unwrap();
        let want_q = q[dir].unwrap();
        let got = |k: &str| row[k].parse::<f64>().unwrap();
        assert_eq!(got("q"), want_q, "{line}");
        assert_eq!(got("best_q"), value, "{line}");
        assert_eq!(got("regret"), value - want_q, "{line}");
        assert_eq!(row["best"], best_move, "{line}");
        // Optimal: no regret beyond rounding (1e-9 of the value).
        let is_optimal = value - want_q <= 1e-9 * value.abs().max(1.0);
        assert_eq!(row["optimal"] == "true", is_optimal, "{line}");
        optimal += usize::from(is_optimal);
        *total.entry(f[0].to_string()).or_default() += value - want_q;
        assert_eq!(row["game"], f[0]);
    }
    assert_eq!(moves[2]["move"], "D", "'down' is D");
    assert_eq!(moves[2]["step"], "0");
    assert_eq!(moves[3]["step"], "2", "steps count within a game");
    assert_eq!(moves[0]["line"], "2");
    // Per game: the total regret and the expected score lost (the same, in points).
    let games = csv_table(&out.join("games.csv"));
    assert_eq!(games.len(), 2);
    for g in &games {
        let t: f64 = g["total_regret"].parse().unwrap();
        assert!((t - total[&g["game"]]).abs() < 1e-9, "{g:?}");
        assert_eq!(g["expected_score_lost"], g["total_regret"]);
    }
    assert_eq!(games[0]["moves"], "4");
    // Overall, on standard output.
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["moves"], 6);
    assert_eq!(v["games"], 2);
    assert!((v["optimal_share"].as_f64().unwrap() - optimal as f64 / 6.0).abs() < 1e-12);
    for f in [
        "moves.parquet",
        "games.parquet",
        "regret_by_age.parquet",
        "regret_by_age.csv",
    ] {
        assert!(std::fs::metadata(out.join(f)).unwrap().len() > 0, "{f}");
    }
    #[cfg(feature = "report")]
    {
        let png = std::fs::read(out.join("regret_per_age.png")).unwrap();
        assert_eq!(&png[..4], b"\x89PNG");
        // `sql` reads the Parquet tables.
        let q = format!(
            "SELECT count(*) AS n, sum(regret) AS r FROM '{}'",
            out.join("moves.parquet").display()
        );
        let o = run(&["sql", "--data", d(), "--format", "csv", &q]);
        assert!(o.status.success(), "{}", stderr(&o));
        let row = stdout(&o).lines().nth(1).unwrap().to_string();
        let (n, r) = row.split_once(',').unwrap();
        assert_eq!(n, "6");
        let r: f64 = r.parse().unwrap();
        assert!((r - total.values().sum::<f64>()).abs() < 1e-9);
    }

    // The same log as JSON lines, from standard input, gives the same moves table.
    let json: String = LOG_CSV
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            format!(
                "{}\n",
                serde_json::json!({"game": f[0], "board": f[1], "move": f[2]})
            )
        })
        .collect();
    let out2 = tmp.path().join("eval2");
    let mut args = vec![
        "evaluate",
        "--board",
        "2x3",
        "--data",
        d(),
        "--log",
        "-",
        "--out",
    ];
    let out2s = out2.to_str().unwrap().to_string();
    args.push(&out2s);
    let o = run_stdin(&args, &json);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = std::fs::read_to_string(out.join("moves.csv")).unwrap();
    let b = std::fs::read_to_string(out2.join("moves.csv")).unwrap();
    // Line numbers differ by the CSV header; everything else agrees.
    let strip = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split_once(',').unwrap().1.to_string())
            .collect()
    };
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn bad_logs_name_the_line_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        // A board no game of 2x3 reaches.
        (
            "game,board,move\n0,2 0 0/0 2 0,L\n0,4096 . ./. . .,L\n",
            "line 3: board '4096 . ./. . .' is not a reachable 2x3 board",
        ),
        // A move that changes nothing.
        (
            "game,board,move\n0,2 . ./2 . .,L\n",
            "line 2: move L does not change the board",
        ),
        // Malformed board text and move.
        (
            "game,board,move\n0,2 0 0/0 3 0,L\n",
            "line 2: bad board '2 0 0/0 3 0'",
        ),
        (
            "game,board,move\n\n0,2 0 0/0 2 0,X\n",
            "line 3: 'X' is not a move",
        ),
        (
            "{\"game\": 1, \"board\": \"2 0 0/0 2 0\", \"move\": \"L\"}\n{\"game\": 2}\n",
            "line 2: no \"board\" field",
        ),
    ];
    for (i, (log, want)) in cases.iter().enumerate() {
        let path = tmp.path().join(format!("bad{i}.csv"));
        std::fs::write(&path, log).unwrap();
        let out = tmp.path().join(format!("out{i}"));
        let o = evaluate(path.to_str().unwrap(), &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{log}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(want), "{log}: {e}");
        assert_eq!(e.lines().count(), 1, "one line: {e}");
        assert!(!out.exists(), "{log}: nothing written");
    }
}

#[test]
fn play_refuses_what_it_cannot_do() {
    let o = run(&["play", "--board", "2x3", "--data", d(), "--games", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--games must be at least 1"));
    let o = run(&["play", "--board", "3x3", "--data", d()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no solved data for board 3x3"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "play",
        "--board",
        "2x3",
        "--data",
        d(),
        "--watch",
        "--interactive",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// The moves of a `--watch` game as an agent's log: (board text, move letter) per move.
fn watched_moves(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.starts_with("move ") {
            continue;
        }
        let grid: Vec<String> = lines[i + 1..]
            .iter()
            .take_while(|r| !r.starts_with("q "))
            .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        let plays = lines[i + 2 + grid.len()];
        let letter = plays
            .strip_prefix("plays ")
            .and_then(|p| p.split(' ').next())
            .unwrap_or_else(|| panic!("no move after the board: {plays}"));
        out.push((grid.join("/"), letter.to_string()));
    }
    out
}

#[test]
fn a_logged_game_of_optimal_moves_has_no_regret() {
    // The optimal policy's own game, moved by `play --watch`, logged as an agent would.
    let o = run(&[
        "play",
        "--board",
        "2x4",
        "--data",
        data_of("2x4").to_str().unwrap(),
        "--watch",
        "--seed",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let moves = watched_moves(&stdout(&o));
    assert!(moves.len() > 50, "a whole 2x4 game: {} moves", moves.len());
    let mut log = String::from("game,board,move\n");
    for (board, m) in &moves {
        log.push_str(&format!("g,{board},{m}\n"));
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("optimal.csv");
    std::fs::write(&path, &log).unwrap();
    let out = tmp.path().join("eval");
    let o = run(&[
        "evaluate",
        "--board",
        "2x4",
        "--data",
        data_of("2x4").to_str().unwrap(),
        "--log",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["moves"], moves.len());
    assert_eq!(v["optimal_share"], 1.0);
    assert_eq!(v["mean_regret"], 0.0);
    let rows = csv_table(&out.join("moves.csv"));
    assert_eq!(rows.len(), moves.len());
    for r in &rows {
        assert_eq!(r["regret"], "0", "{r:?}");
        assert_eq!(r["optimal"], "true", "{r:?}");
        assert_eq!(r["move"], r["best"], "{r:?}");
    }
    let games = csv_table(&out.join("games.csv"));
    assert_eq!(games.len(), 1);
    assert_eq!(games[0]["total_regret"], "0");
    assert_eq!(games[0]["expected_score_lost"], "0");
    // The first board's value is the optimal value of the game's start.
    let (_, value, _) = best("2x4", &moves[0].0);
    assert_eq!(games[0]["start_value"].parse::<f64>().unwrap(), value);
}

/// The value of a 2x3 board in table `table` (`states` or `afterstates`) of the expectation
/// variant, read from the Parquet files through `sql`: the row whose id is one of the board's
/// four images under the flips (ids are the smallest image, so exactly one matches), in the
/// files of the board's age (the sum of its tiles) only.
#[cfg(feature = "report")]
fn table_value(table: &str, images: [&str; 4]) -> f64 {
    let list = images.map(|t| format!("'{t}'")).join(", ");
    let age: u32 = images[0]
        .split([' ', '/'])
        .filter_map(|t| t.parse::<u32>().ok())
        .sum();
    let q = format!(
        "SELECT value FROM {table} WHERE board = '2x3' AND variant = 'expectation' \
         AND age = {age} AND board_text(id, board) IN ({list})"
    );
    let o = run(&["sql", "--data", d(), "--format", "csv", &q]);
    assert!(o.status.success(), "{q}: {}", stderr(&o));
    let text = stdout(&o);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{q}: {text}");
    rows[0].parse().unwrap()
}

#[cfg(feature = "report")]
#[test]
fn a_bad_move_costs_exactly_what_the_tables_say() {
    // Worked by hand on 4 4 2/2 . . (age 12), with each board's images under the flips:
    //   L merges the 4s leftwards: 8 2 ./2 . . and 8 points;
    //   R merges them rightwards:  . 8 2/. . 2 and 8 points;
    //   D moves the right two columns down: 4 . ./2 4 2 and no points.
    // q(move) = points + value of the afterstate, regret = V(board) − q. The values come from
    // the Parquet tables through `sql`, not from the index `evaluate` probes.
    let v_board = table_value(
        "states",
        ["4 4 2/2 . .", "2 4 4/. . 2", "2 . ./4 4 2", ". . 2/2 4 4"],
    );
    let q_left = 8.0
        + table_value(
            "afterstates",
            ["8 2 ./2 . .", ". 2 8/. . 2", "2 . ./8 2 .", ". . 2/. 2 8"],
        );
    let q_right = 8.0
        + table_value(
            "afterstates",
            [". 8 2/. . 2", "2 8 ./2 . .", ". . 2/. 8 2", "2 . ./2 8 ."],
        );
    let q_down = table_value(
        "afterstates",
        ["4 . ./2 4 2", ". . 4/2 4 2", "2 4 2/4 . .", "2 4 2/. . 4"],
    );
    assert_eq!(
        v_board,
        q_left.max(q_right).max(q_down),
        "U changes nothing"
    );
    assert_eq!(v_board, q_left, "L is the best move");
    let (regret_right, regret_down) = (v_board - q_right, v_board - q_down);
    assert!(
        regret_right > 0.1 && regret_down > 0.1,
        "{regret_right} {regret_down}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.jsonl");
    std::fs::write(
        &path,
        "{\"game\": 7, \"board\": \"4 4 2/2 0 0\", \"move\": \"right\"}\n\
         {\"game\": 8, \"board\": \"4 4 2/2 0 0\", \"move\": \"D\"}\n\
         {\"game\": 9, \"board\": \"4 4 2/2 0 0\", \"move\": \"L\"}\n",
    )
    .unwrap();
    let out = tmp.path().join("eval");
    let o = evaluate(path.to_str().unwrap(), &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_table(&out.join("moves.csv"));
    let f = |r: &BTreeMap<String, String>, k: &str| r[k].parse::<f64>().unwrap();
    for (r, (mv, q, regret)) in rows.iter().zip([
        ("R", q_right, regret_right),
        ("D", q_down, regret_down),
        ("L", q_left, 0.0),
    ]) {
        assert_eq!(r["move"], mv);
        assert_eq!(f(r, "q"), q, "{r:?}");
        assert_eq!(f(r, "best_q"), v_board, "{r:?}");
        assert_eq!(f(r, "regret"), regret, "{r:?}");
        assert_eq!(r["optimal"], (regret == 0.0).to_string(), "{r:?}");
        assert_eq!(r["best"], "L");
    }
    let games = csv_table(&out.join("games.csv"));
    let lost: Vec<f64> = games
        .iter()
        .map(|g| g["expected_score_lost"].parse().unwrap())
        .collect();
    assert_eq!(lost, [regret_right, regret_down, 0.0]);
    let by_age = csv_table(&out.join("regret_by_age.csv"));
    assert_eq!(by_age.len(), 1);
    assert_eq!(by_age[0]["age"], "12");
    assert_eq!(by_age[0]["moves"], "3");
    assert!((f(&by_age[0], "optimal_share") - 1.0 / 3.0).abs() < 1e-15);
    let mean = f(&by_age[0], "mean_regret");
    assert!(
        (mean - (regret_right + regret_down) / 3.0).abs() < 1e-12,
        "{mean}"
    );
    assert_eq!(f(&by_age[0], "max_regret"), regret_right.max(regret_down));
}

/// A pseudo-terminal: (master, slave), both read-write.
#[cfg(unix)]
fn openpty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the given ints; name, termios and window
    // size may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    }
}

#[cfg(unix)]
#[test]
fn interactive_through_a_pseudo_terminal_replays_the_scripted_game() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let args = [
        "play",
        "--board",
        "2x3",
        "--data",
        d(),
        "--interactive",
        "--seed",
        "5",
    ];
    let (mut master, slave) = openpty();
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    // Everything the terminal shows, read as it comes.
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let mut reader = master.try_clone().unwrap();
    let reading = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // EIO once no process holds the slave side any more.
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            if tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut shown = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !String::from_utf8_lossy(&shown).contains("keys: ") {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => shown.extend(chunk),
            Err(_) => panic!("no first frame: {}", String::from_utf8_lossy(&shown)),
        }
    }
    // Raw mode: single keys, no Enter; the arrow keys as the terminal sends them.
    // Left (h), a hint, right (l), down (arrow), an unknown key, up (arrow), quit.
    master.write_all(b"h?l\x1b[Bx\x1b[Aq").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    // The terminal is left as it was found: line editing and echo back on.
    // SAFETY: termios is plain data; tcgetattr fills it for an open descriptor.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::tcgetattr(slave.as_raw_fd(), &mut t) }, 0);
    assert_ne!(t.c_lflag & libc::ICANON, 0, "canonical mode restored");
    assert_ne!(t.c_lflag & libc::ECHO, 0, "echo restored");
    drop(slave);
    reading.join().unwrap();
    shown.extend(rx.try_iter().flatten());
    let text = String::from_utf8_lossy(&shown).replace("\r\n", "\n");
    assert!(
        text.contains("\x1b[2J\x1b[H"),
        "the screen is cleared per frame"
    );
    // The same game as the scripted run with the same seed and keys, frame for frame.
    let screen = text.replace("\x1b[2J\x1b[H", "");
    let scripted = stdout(&run_stdin(&args, "h?ljxkq"));
    assert_eq!(screen, scripted);
    assert!(screen.lines().last().unwrap().starts_with("quit: score "));
}
