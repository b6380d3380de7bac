//! Integration tests of `age2048 sql`, `age2048 report` and `age2048 compare`: they run the
//! real binary on data it solved itself in a temporary directory (2x2 and 2x3, several
//! variants, one of them with a `p4` in its name).
#![cfg(feature = "report")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use crate::common::{csv_rows, manifest, run, run_stdin, solve_all, sql_rows, stderr, stdout};

/// Variants solved per board in the shared dataset.
const SOLVED: [(&str, &str); 3] = [
    ("2x2", "expectation,optimistic,pessimistic"),
    ("2x2", "goal-32-p4=0.2"),
    ("2x3", "expectation,pessimistic"),
];

/// The shared dataset: real solves, made once per test run.
fn fixture() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| solve_all("report_cli_data", &SOLVED))
}

/// `age -> (n_states, n_afterstates, n_terminal_states)` from a manifest.
fn manifest_counts(m: &serde_json::Value) -> BTreeMap<u64, (u64, u64, u64)> {
    m["ages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let g = |k: &str| a[k].as_u64().unwrap();
            (
                g("age"),
                (g("n_states"), g("n_afterstates"), g("n_terminal_states")),
            )
        })
        .collect()
}

/// Per-age counts of `states` and `afterstates` for a board through `age2048 sql`.
fn sql_counts(data: &Path, board: &str, variant: &str) -> BTreeMap<u64, (u64, u64, u64)> {
    let q = format!(
        "WITH s AS (SELECT age, count(*) AS n, count(*) FILTER (WHERE terminal) AS t FROM states \
         WHERE board = '{board}' AND variant = '{variant}' GROUP BY age), \
         a AS (SELECT age, count(*) AS n FROM afterstates WHERE board = '{board}' AND variant = '{variant}' GROUP BY age) \
         SELECT coalesce(s.age, a.age) AS age, coalesce(s.n, 0) AS s, coalesce(a.n, 0) AS a, coalesce(s.t, 0) AS t \
         FROM s FULL JOIN a ON s.age = a.age ORDER BY 1"
    );
    let rows = sql_rows(data, &q);
    assert_eq!(rows[0], ["age", "s", "a", "t"]);
    rows[1..]
        .iter()
        .map(|r| {
            let p = |i: usize| r[i].parse::<u64>().unwrap();
            (p(0), (p(1), p(2), p(3)))
        })
        .collect()
}

fn nonzero(m: BTreeMap<u64, (u64, u64, u64)>) -> BTreeMap<u64, (u64, u64, u64)> {
    m.into_iter().filter(|(_, v)| *v != (0, 0, 0)).collect()
}

#[test]
fn sql_counts_per_age_equal_the_manifest() {
    let data = fixture();
    for board in ["2x2", "2x3"] {
        for variant in ["expectation", "pessimistic"] {
            let m = manifest(data, board, variant);
            assert_eq!(
                sql_counts(data, board, variant),
                nonzero(manifest_counts(&m)),
                "{board} {variant}"
            );
        }
    }
    // The ages view agrees with the manifest too.
    let rows = sql_rows(
        data,
        "SELECT sum(n_states) AS s, sum(n_afterstates) AS a, sum(n_terminal_states) AS t FROM ages \
         WHERE board = '2x3' AND variant = 'expectation'",
    );
    let m = manifest(data, "2x3", "expectation");
    assert_eq!(
        rows[1],
        [
            m["n_states"].to_string(),
            m["n_afterstates"].to_string(),
            m["n_terminal_states"].to_string()
        ]
    );
}

#[test]
fn sql_bad_query_exits_2_with_duckdbs_message() {
    let data = fixture().to_str().unwrap();
    let o = run(&["sql", "--data", data, "SELEC 1"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("Parser Error: syntax error at or near \"SELEC\""),
        "{e}"
    );
    assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");

    let o = run(&["sql", "--data", data, "SELECT * FROM nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Catalog Error"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim_end().lines().count(), 1);
}

#[test]
fn sql_missing_data_dir_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing-here");
    let o = run(&["sql", "--data", missing.to_str().unwrap(), "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing-here"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim_end().lines().count(), 1);
    let o = run(&[
        "report",
        "--data",
        missing.to_str().unwrap(),
        "--out",
        tmp.path().join("r").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn sql_age_is_an_integer_and_hive_columns_filter() {
    let data = fixture();
    let rows = sql_rows(data, "SELECT DISTINCT typeof(age) AS t FROM states");
    assert_eq!(rows[1..], [vec!["UINTEGER".to_string()]]);
    // Numeric comparison: as strings '8' < '10' would be false.
    let rows = sql_rows(
        data,
        "SELECT count(DISTINCT age) AS n FROM states WHERE board = '2x2' AND variant = 'optimistic' AND age < 10",
    );
    assert_eq!(rows[1], ["3"]); // ages 4, 6, 8
    let rows = sql_rows(data, "SELECT DISTINCT board FROM ages ORDER BY board");
    assert_eq!(
        rows[1..],
        [vec!["2x2".to_string()], vec!["2x3".to_string()]]
    );
    let rows = sql_rows(
        data,
        "SELECT max(max_tile(id)) AS t FROM states WHERE board = '2x2'",
    );
    assert_eq!(
        rows[1],
        [manifest(data, "2x2", "expectation")["max_tile"].to_string()]
    );
}

/// Partitions without a manifest (a killed solve) are not data: `sql` refuses a directory
/// holding nothing else, and leaves them out (with a note) next to finished solves.
#[test]
fn sql_shows_finished_solves_only() {
    let tmp = tempfile::tempdir().unwrap();
    let only = tmp.path().join("only-states");
    copy_dir(&fixture().join("states"), &only.join("states"));
    let o = run(&[
        "sql",
        "--data",
        only.to_str().unwrap(),
        "SELECT count(*) FROM states",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing is solved"), "{}", stderr(&o));
    assert!(stderr(&o).contains("unfinished"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());

    // A finished solve and a partition of a variant that never finished.
    let mixed = tmp.path().join("mixed");
    copy_dir(fixture(), &mixed);
    copy_dir(
        &fixture().join("states/board=2x3/variant=expectation"),
        &mixed.join("states/board=2x3/variant=optimistic"),
    );
    let o = run(&[
        "sql",
        "--data",
        mixed.to_str().unwrap(),
        "--format",
        "csv",
        "SELECT count(*) AS n FROM states WHERE variant = 'optimistic' AND board = '2x3'",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(csv_rows(&stdout(&o))[1], ["0"]);
    assert!(stderr(&o).contains("not shown"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2x3, variant optimistic"),
        "{}",
        stderr(&o)
    );
}

/// A variant whose name holds `=` (`goal-32-p4=0.2`) is one partition like any other: its
/// board, variant and age columns come from the (escaped) folder names.
#[test]
fn sql_and_report_handle_a_variant_with_an_equals_sign() {
    let data = fixture();
    let rows = sql_rows(
        data,
        "SELECT DISTINCT variant FROM states WHERE board = '2x2' ORDER BY variant",
    );
    assert_eq!(
        rows[1..],
        [
            vec!["expectation".to_string()],
            vec!["goal-32-p4=0.2".to_string()],
            vec!["optimistic".to_string()],
            vec!["pessimistic".to_string()]
        ]
    );
    let m = manifest(data, "2x2", "goal-32-p4=0.2");
    assert_eq!(
        sql_counts(data, "2x2", "goal-32-p4=0.2"),
        nonzero(manifest_counts(&m))
    );
    let rows = sql_rows(
        data,
        "SELECT typeof(age) AS t, count(*) AS n FROM states WHERE variant = 'goal-32-p4=0.2' AND board = '2x2' GROUP BY 1",
    );
    assert_eq!(rows[1][0], "UINTEGER");
    let rows = sql_rows(
        data,
        "SELECT count(*) AS n FROM ages WHERE variant = 'goal-32-p4=0.2'",
    );
    assert_eq!(rows[1][0], m["ages"].as_array().unwrap().len().to_string());
    let tmp = tempfile::tempdir().unwrap();
    let o = report(data, &tmp.path().join("r"));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Regression: the manifest listed each per-age file twice (top level and per age), so the
/// report doubled the file and byte totals and listed every file twice in provenance.csv.
#[test]
fn provenance_and_totals_count_each_file_once() {
    let data = fixture();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = report(data, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_rows(&std::fs::read_to_string(out.join("tables/provenance.csv")).unwrap());
    let mut expected = 0;
    for (board, variants) in SOLVED {
        for v in variants.split(',') {
            let m = manifest(data, board, v);
            let files = m["files"].as_array().unwrap();
            let paths: std::collections::BTreeSet<&str> =
                files.iter().map(|f| f["path"].as_str().unwrap()).collect();
            assert_eq!(paths.len(), files.len(), "{board} {v}: a file listed twice");
            // Every listed file exists with its size: states, afterstates and index per age.
            let ages = m["ages"].as_array().unwrap().len();
            assert_eq!(files.len(), 3 * ages + 1, "{board} {v}");
            for f in files {
                let len = std::fs::metadata(data.join(f["path"].as_str().unwrap()))
                    .unwrap()
                    .len();
                assert_eq!(len, f["bytes"].as_u64().unwrap());
            }
            let listed = rows.iter().filter(|r| r[0] == board && r[1] == v).count();
            assert_eq!(listed, files.len(), "{board} {v} in provenance.csv");
            expected += files.len();
        }
    }
    assert_eq!(rows.len() - 1, expected);
    // The README's provenance table gives the same totals.
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    let m = manifest(data, "2x3", "expectation");
    let n = m["files"].as_array().unwrap().len();
    let bytes: u64 = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["bytes"].as_u64().unwrap())
        .sum();
    let line = readme
        .lines()
        .find(|l| l.contains("| 2x3 | expectation |") && l.contains("manifest"))
        .unwrap_or_else(|| panic!("no provenance row for 2x3 expectation:\n{readme}"));
    assert!(
        line.contains(&format!("| {n} | {bytes} |")),
        "{line} should count {n} files, {bytes} bytes"
    );
}

#[test]
fn sql_reads_statements_from_stdin_one_result_each() {
    let data = fixture().to_str().unwrap();
    let o = run_stdin(
        &["sql", "--data", data, "--format", "csv"],
        "SELECT 1 AS a;\nSELECT 'x;y' AS b; -- comment\nSELECT count(*) AS n FROM ages\n  WHERE board = '2x2'\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let blocks: Vec<&str> = text
        .split("\n\n")
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .collect();
    assert_eq!(blocks.len(), 3, "{}", stdout(&o));
    assert_eq!(blocks[0], "a\n1");
    assert_eq!(blocks[1], "b\nx;y");
    assert!(blocks[2].starts_with("n\n"));

    // A failing statement in a pipe stops with exit 2 after the results before it.
    let o = run_stdin(
        &["sql", "--data", data],
        "SELECT 42 AS answer; SELECT * FROM nope;",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("42"));
    assert!(stderr(&o).contains("Catalog Error"));
}

#[test]
fn sql_formats_table_and_json() {
    let data = fixture().to_str().unwrap();
    let q = "SELECT board, count(*) AS n FROM ages WHERE variant = 'expectation' GROUP BY board ORDER BY board";
    let o = run(&["sql", "--data", data, q]);
    assert!(o.status.success());
    let t = stdout(&o);
    assert!(t.contains("| board | n "), "{t}");
    assert!(t.contains("(2 rows)"), "{t}");
    let o = run(&["sql", "--data", data, "--format", "json", q]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[0]["board"], "2x2");
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "SELECT 7 AS seven;").unwrap();
    let o = run(&[
        "sql",
        "--data",
        data,
        "--file",
        f.path().to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert_eq!(stdout(&o), "seven\n7\n");
}

const FIGURES: [&str; 7] = [
    "states_afterstates_per_age",
    "best_afterstate_value_per_age",
    "terminal_share_per_age",
    "gap_below_1_share_per_age",
    "mean_empty_cells_per_age",
    "mean_action_gap_per_age",
    "state_value_quantiles_2x3",
];
const TABLES_MD: [&str; 3] = ["boards", "variants", "index_storage"];

/// Minimal well-formedness check of an XML document: tags nest and close, quotes close.
fn check_xml(text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let mut stack: Vec<String> = Vec::new();
    let mut i = 0;
    let mut root_seen = false;
    while i < b.len() {
        if b[i] != b'<' {
            if b[i] == b'>' {
                return Err(format!("stray '>' at {i}"));
            }
            i += 1;
            continue;
        }
        let rest = &text[i..];
        if rest.starts_with("<?") {
            i += rest.find("?>").ok_or("unclosed <?")? + 2;
            continue;
        }
        if rest.starts_with("<!--") {
            i += rest.find("-->").ok_or("unclosed comment")? + 3;
            continue;
        }
        if rest.starts_with("<!") {
            i += rest.find('>').ok_or("unclosed <!")? + 1;
            continue;
        }
        // Find the end of the tag, skipping quoted attribute values.
        let mut j = i + 1;
        let mut quote = None;
        while j < b.len() {
            match (quote, b[j]) {
                (None, b'"') | (None, b'\'') => quote = Some(b[j]),
                (Some(q), c) if c == q => quote = None,
                (None, b'>') => break,
                (None, b'<') => return Err(format!("'<' inside a tag at {j}")),
                _ => {}
            }
            j += 1;
        }
        if j >= b.len() {
            return Err("unclosed tag".into());
        }
        let tag = &text[i + 1..j];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("close of {name} without open"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
        } else {
            let name: String = tag
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '/')
                .collect();
            if name.is_empty() {
                return Err(format!("empty tag at {i}"));
            }
            if stack.is_empty() {
                if root_seen {
                    return Err("two root elements".into());
                }
                root_seen = true;
                if name != "svg" {
                    return Err(format!("root is {name}"));
                }
            }
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        i = j + 1;
    }
    if !stack.is_empty() {
        return Err(format!("unclosed {stack:?}"));
    }
    if !root_seen {
        return Err("no root".into());
    }
    Ok(())
}

fn report(data: &Path, out: &Path) -> Output {
    run(&[
        "report",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn report_writes_every_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("reports");
    let o = report(fixture(), &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("report: ["),
        "progress shown: {}",
        stderr(&o)
    );
    // Regression: the total was guessed before the figures were known ("[3/12]" then
    // "[4/13]"). Every step line counts 1, 2, … up to one and the same total.
    let steps: Vec<(usize, usize)> = stderr(&o)
        .lines()
        .filter_map(|l| l.strip_prefix("report: [")?.split_once(']'))
        .map(|(k, _)| {
            let (done, total) = k.split_once('/').expect("[done/total]");
            (done.parse().unwrap(), total.parse().unwrap())
        })
        .collect();
    let total = steps.last().expect("progress lines").1;
    assert_eq!(
        steps,
        (1..=total).map(|k| (k, total)).collect::<Vec<_>>(),
        "{}",
        stderr(&o)
    );
    let mut expected = vec![out.join("index.html"), out.join("README.md")];
    for f in FIGURES {
        for ext in ["svg", "png", "csv"] {
            expected.push(out.join("figures").join(format!("{f}.{ext}")));
        }
    }
    for t in TABLES_MD {
        expected.push(out.join("tables").join(format!("{t}.md")));
        expected.push(out.join("tables").join(format!("{t}.csv")));
    }
    expected.push(out.join("tables/provenance.csv"));
    for p in &expected {
        let len = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{} missing or empty", p.display());
    }
    for f in FIGURES {
        let svg = std::fs::read_to_string(out.join("figures").join(format!("{f}.svg"))).unwrap();
        check_xml(&svg).unwrap_or_else(|e| panic!("{f}.svg is not well-formed: {e}"));
        assert!(
            svg.contains("age (sum of the tiles)"),
            "{f}: x axis labelled"
        );
        let png = std::fs::read(out.join("figures").join(format!("{f}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{f}.png is a PNG");
    }
    let svg = std::fs::read_to_string(out.join("figures/mean_action_gap_per_age.svg")).unwrap();
    assert!(
        svg.contains("2x2") && svg.contains("2x3") && svg.contains("expectation"),
        "legend and title"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    for f in FIGURES {
        assert!(
            html.contains(&format!("figures/{f}.svg")),
            "index.html shows {f}"
        );
        assert!(
            readme.contains(&format!("figures/{f}.png")),
            "README shows {f}"
        );
    }
    for t in TABLES_MD {
        assert!(
            html.contains(&format!("tables/{t}.csv"))
                && readme.contains(&format!("tables/{t}.csv"))
        );
    }
    assert!(
        readme.contains(concat!("| age2048 | ", env!("CARGO_PKG_VERSION"), " |")),
        "provenance names the solver version"
    );
    // No temporary file left behind.
    for d in [&out, &out.join("figures"), &out.join("tables")] {
        for e in std::fs::read_dir(d).unwrap() {
            let n = e.unwrap().file_name().to_string_lossy().to_string();
            assert!(!n.contains(".tmp"), "temporary file left: {n}");
        }
    }
    // Boards table: one row per board, counts from the manifest.
    let rows = csv_rows(&std::fs::read_to_string(out.join("tables/boards.csv")).unwrap());
    assert_eq!(rows.len(), 3);
    let m = manifest(fixture(), "2x3", "expectation");
    assert_eq!(rows[2][0], "2x3");
    assert_eq!(rows[2][2], m["n_states"].to_string());
    assert_eq!(rows[2][6], m["max_tile"].to_string());
}

fn assert_same_series(figure_csv: &Path, sql_rows: &[Vec<String>]) {
    let fig = csv_rows(&std::fs::read_to_string(figure_csv).unwrap());
    assert_eq!(fig[0], sql_rows[0], "{}: header", figure_csv.display());
    assert_eq!(fig.len(), sql_rows.len(), "{}: rows", figure_csv.display());
    for (a, b) in fig.iter().zip(sql_rows).skip(1) {
        for (x, y) in a.iter().zip(b) {
            match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) => assert!(
                    (x - y).abs() <= 1e-9 * (1.0 + x.abs()),
                    "{}: {a:?} vs {b:?}",
                    figure_csv.display()
                ),
                _ => assert_eq!(x, y, "{}", figure_csv.display()),
            }
        }
    }
}

#[test]
fn report_series_equal_the_sql_results() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let data = fixture();
    let o = report(data, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let fig = |n: &str| out.join("figures").join(format!("{n}.csv"));
    let per_board = |col: &str, expr: &str| {
        sql_rows(
            data,
            &format!(
                "SELECT board, variant, age, {expr} AS {col} FROM ages WHERE variant = 'expectation' \
                 AND {expr} IS NOT NULL ORDER BY board, age"
            ),
        )
    };
    assert_same_series(
        &fig("mean_action_gap_per_age"),
        &per_board("mean_action_gap", "mean_action_gap"),
    );
    assert_same_series(
        &fig("gap_below_1_share_per_age"),
        &per_board("frac_gap_lt_1", "frac_gap_lt_1"),
    );
    assert_same_series(
        &fig("mean_empty_cells_per_age"),
        &per_board(
            "mean_empty_cells_afterstates",
            "mean_empty_cells_afterstates",
        ),
    );
    assert_same_series(
        &fig("terminal_share_per_age"),
        &per_board(
            "terminal_share",
            "CASE WHEN n_states > 0 THEN n_terminal_states / n_states END",
        ),
    );
    assert_same_series(
        &fig("states_afterstates_per_age"),
        &sql_rows(
            data,
            "SELECT board, variant, age, n_states, n_afterstates FROM ages WHERE variant = 'expectation' ORDER BY board, age",
        ),
    );
    assert_same_series(
        &fig("best_afterstate_value_per_age"),
        &sql_rows(
            data,
            "SELECT board, variant, age, best_afterstate_value FROM ages WHERE best_afterstate_value IS NOT NULL \
             AND variant IN ('expectation', 'optimistic', 'pessimistic') ORDER BY board, variant, age",
        ),
    );
    // The quantile band (type 7, sorted in our crate) equals DuckDB's quantile_cont over the
    // same states, to the last bit or so (the two round the interpolation differently).
    assert_same_series(
        &fig("state_value_quantiles_2x3"),
        &sql_rows(
            data,
            "SELECT board, variant, age, count(*) AS n, quantile_cont(value, 0.05) AS q05, \
             quantile_cont(value, 0.25) AS q25, quantile_cont(value, 0.5) AS q50, quantile_cont(value, 0.75) AS q75, \
             quantile_cont(value, 0.95) AS q95, avg(value) AS mean FROM states \
             WHERE board = '2x3' AND variant = 'expectation' GROUP BY ALL ORDER BY age",
        ),
    );
}

#[test]
fn report_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    assert!(report(fixture(), &out).status.success());
    let list = |d: &Path| {
        let mut v: Vec<(String, Vec<u8>)> = Vec::new();
        for sub in ["", "figures", "tables"] {
            for e in std::fs::read_dir(d.join(sub)).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    v.push((
                        p.strip_prefix(d).unwrap().display().to_string(),
                        std::fs::read(&p).unwrap(),
                    ));
                }
            }
        }
        v.sort();
        v
    };
    let first = list(&out);
    assert!(report(fixture(), &out).status.success());
    let second = list(&out);
    assert_eq!(first.len(), second.len());
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.0, b.0);
        assert!(a.1 == b.1, "{} changed between runs", a.0);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// `compare` merge-joins two variants' states on their sorted ids: its per-age series equal
/// a DuckDB join of the same partitions.
#[test]
fn compare_series_equal_a_duckdb_join() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let data = fixture();
    let o = run(&[
        "compare",
        "--board",
        "2x3",
        "--variants",
        "expectation,pessimistic",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let series = out.join("compare-2x3-expectation-vs-pessimistic.csv");
    let rows = sql_rows(
        data,
        "SELECT 'pessimistic' AS variant, 'expectation' AS base, a.age, 'states' AS over, count(*) AS n, \
         avg(b.value - a.value) AS mean_value_diff, \
         avg(CASE WHEN coalesce(a.best, '-') <> coalesce(b.best, '-') THEN 1.0 ELSE 0.0 END) AS frac_best_differs \
         FROM states a JOIN states b ON a.board = b.board AND a.age = b.age AND a.id = b.id \
         WHERE a.board = '2x3' AND a.variant = 'expectation' AND b.variant = 'pessimistic' \
         GROUP BY a.age ORDER BY a.age",
    );
    assert!(rows.len() > 10, "too few ages joined: {rows:?}");
    // Pessimistic spawns change the best move somewhere: the series is not trivially zero.
    assert!(rows[1..].iter().any(|r| r[6] != "0.0" && r[6] != "0"));
    assert_same_series(&series, &rows);
}

/// `compare` refuses variants solved under different symmetry groups (their ids name
/// different boards): one line, status 2, nothing written.
#[test]
fn compare_refuses_variants_of_different_symmetry_groups() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = data.to_str().unwrap();
    for (variant, group) in [("expectation", "full"), ("pessimistic", "none")] {
        let o = run(&[
            "solve",
            "--board",
            "2x2",
            "--data",
            d,
            "--quiet",
            "--variant",
            variant,
            "--symmetry",
            group,
            "--force",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let out = tmp.path().join("c");
    let o = run(&[
        "compare",
        "--board",
        "2x2",
        "--variants",
        "expectation,pessimistic",
        "--data",
        d,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("expectation was solved under symmetry full, pessimistic under none"),
        "{e}"
    );
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}
