//! The papers' goal table in the report, and the SQL macros that show boards: real solves in
//! a temporary directory (3x3 goal-256, goal-512 and goal-1024, the three solves about 2.5
//! minutes on two busy cores; 2x3).
#![cfg(feature = "report")]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use age2048::rules::{board, format_board, Shape};

use crate::common::{fresh_dir, run, sql_csv, stderr};

fn data() -> &'static Path {
    crate::common::shared_goal_solves()
}

/// The report over the fixture, made once.
fn report() -> &'static Path {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    OUT.get_or_init(|| {
        let out = fresh_dir("goals_report");
        let o = run(&[
            "report",
            "--data",
            data().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "report: {}", stderr(&o));
        out
    })
}

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn the_goal_table_equals_the_published_values_to_the_printed_digits() {
    let out = report();
    let rows = csv_rows(&out.join("tables/goals.csv"));
    assert_eq!(
        rows[0],
        [
            "board",
            "variant",
            "objective",
            "value_two_2_tiles",
            "value_initial",
            "value_initial_distinct",
            "published",
            "source",
            "agrees"
        ]
    );
    // Galebach (2014), over the initial distribution: P(256) = 0.99571, P(512) = 0.73677,
    // P(1024) = 0.01134.
    for (variant, published) in [
        ("goal-256", "0.99571"),
        ("goal-512", "0.73677"),
        ("goal-1024", "0.01134"),
    ] {
        let r = rows
            .iter()
            .find(|r| r[0] == "3x3" && r[1] == variant)
            .unwrap_or_else(|| panic!("no row for 3x3 {variant}: {rows:?}"));
        let ours: f64 = r[4].parse().unwrap();
        assert_eq!(format!("{ours:.5}"), published, "{variant}");
        // The unweighted mean over the distinct starts is a probability too.
        let distinct: f64 = r[5].parse().unwrap();
        assert!((0.0..=1.0).contains(&distinct), "{variant}: {distinct}");
        assert_eq!(
            r[6].parse::<f64>().unwrap(),
            published.parse::<f64>().unwrap()
        );
        assert_eq!(r[8], "yes");
    }
    let md = std::fs::read_to_string(out.join("tables/goals.md")).unwrap();
    let line = md
        .lines()
        .find(|l| l.starts_with("| 3x3 | goal-512 |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        line.starts_with("| 3x3 | goal-512 | P(make 512) | 0.73677 | 0.73677 | ")
            && line.ends_with("| 0.73677 | Galebach 2014 | yes |"),
        "{line}"
    );
    // A discounted goal is an expected discount, not a probability, and below it.
    let row = |variant: &str| {
        rows.iter()
            .find(|r| r[0] == "2x3" && r[1] == variant)
            .unwrap_or_else(|| panic!("no row for 2x3 {variant}: {rows:?}"))
            .clone()
    };
    let (plain, discounted) = (row("goal-32"), row("goal-32-discount=0.9"));
    assert_eq!(plain[2], "P(make 32)");
    assert_eq!(discounted[2], "E[0.9^(moves to make 32)]");
    for k in [3, 4, 5] {
        let (p, d): (f64, f64) = (plain[k].parse().unwrap(), discounted[k].parse().unwrap());
        assert!(0.0 < d && d < p, "{}: {d} vs {p}", rows[0][k]);
    }
    // No published figure for 2x3: a dash.
    assert!(
        md.contains("| 2x3 | expectation | expected score | "),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("tables/goals.csv") && html.contains("figures/goal_probability_per_age.svg")
    );
}

#[test]
fn the_report_draws_p_goal_per_age_and_summarises_the_index() {
    let out = report();
    for ext in ["svg", "png", "csv"] {
        let p = out.join(format!("figures/goal_probability_per_age.{ext}"));
        assert!(std::fs::metadata(&p).unwrap().len() > 0, "{}", p.display());
    }
    // The series are the best afterstate values of the goal variants, exactly.
    let rows = csv_rows(&out.join("figures/goal_probability_per_age.csv"));
    assert_eq!(
        rows[0],
        ["board", "variant", "age", "best_afterstate_value"]
    );
    // Discounted goals are not probabilities: not in the figure.
    let q = "SELECT board, variant, age, best_afterstate_value FROM ages \
             WHERE variant LIKE 'goal-%' AND variant NOT LIKE '%-discount=%' \
             AND best_afterstate_value IS NOT NULL ORDER BY board, variant, age";
    let want: Vec<Vec<String>> = sql_csv(data(), q)
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), want.len());
    for (a, b) in rows.iter().zip(&want).skip(1) {
        assert_eq!(a[..3], b[..3]);
        let (x, y): (f64, f64) = (a[3].parse().unwrap(), b[3].parse().unwrap());
        assert!((x - y).abs() <= 1e-12, "{a:?} {b:?}");
    }
    // Fig. 7: one panel per board, the variants overlaid.
    let svg =
        std::fs::read_to_string(out.join("figures/best_afterstate_value_per_age.svg")).unwrap();
    assert!(svg.contains("board 2x3") && svg.contains("pessimistic"));
    // Index storage: a few ages per board and a total in Markdown, every age in CSV.
    let md = std::fs::read_to_string(out.join("tables/index_storage.md")).unwrap();
    let shown = md.lines().filter(|l| l.starts_with("| 2x3 |")).count();
    assert!((2..=5).contains(&shown), "{md}");
    assert!(md.contains("| 2x3 | all |"));
    let all = csv_rows(&out.join("tables/index_storage_per_age.csv"));
    let m = crate::common::manifest(data(), "2x3", "expectation");
    let ages = m["ages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["index"]["file"].as_str().is_some_and(|f| !f.is_empty()))
        .count();
    assert_eq!(all.iter().filter(|r| r[0] == "2x3").count(), ages);
}

#[test]
fn sql_macros_show_boards_as_the_rules_format_them() {
    let shape = Shape::parse("2x3").unwrap();
    let q = "SELECT id, board_text(id, board) AS text, tile(id, 0, 0, board) AS t00, \
             tile(id, 1, 2, board) AS t12, tile(id, 2, 0, board) AS off, max_tile(id) AS top \
             FROM states WHERE board = '2x3' AND variant = 'expectation' ORDER BY id";
    let text = sql_csv(data(), q);
    let mut n = 0;
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let id: u64 = f[0].parse().unwrap();
        assert_eq!(f[1], format_board(id, shape), "id {id}");
        let tile = |i: usize| match board::cell(id, i) {
            0 => 0u64,
            e => 1 << e,
        };
        assert_eq!(f[2].parse::<u64>().unwrap(), tile(0));
        assert_eq!(f[3].parse::<u64>().unwrap(), tile(5));
        assert_eq!(f[4], "", "off the board: NULL");
        assert_eq!(f[5].parse::<u64>().unwrap(), 1 << board::max_exp(id));
        n += 1;
    }
    assert_eq!(n, 21752, "every 2x3 state");
    // A square board, cells counted across rows of three: one 3x3 state in 997.
    let three = Shape::parse("3x3").unwrap();
    let rows: Vec<(u64, String)> = sql_csv(
        data(),
        "SELECT id, board_text(id, board) FROM states \
         WHERE board = '3x3' AND variant = 'goal-256' AND id % 997 = 0",
    )
    .lines()
    .skip(1)
    .map(|l| {
        let (id, text) = l.split_once(',').unwrap();
        (id.parse().unwrap(), text.to_string())
    })
    .collect();
    assert!(rows.len() > 1000, "{} 3x3 states", rows.len());
    for (id, text) in rows {
        assert_eq!(text, format_board(id, three), "3x3 id {id}");
    }
    // The README's example: the ten states with the largest action gap, as boards.
    let shown = sql_csv(
        data(),
        "SELECT board_text(id, board) AS shown, age, best, gap FROM states \
         WHERE board = '2x3' AND variant = 'expectation' AND gap IS NOT NULL ORDER BY gap DESC LIMIT 10",
    );
    assert_eq!(shown.lines().count(), 11);
}
