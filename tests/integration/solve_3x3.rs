//! The full 3x3 solve, as CI runs it: published counts and values, the layout on disk, and
//! `best` (index look-ups) agreeing with the `states` Parquet board by board.

use std::fs::{self, File};
use std::path::Path;

use age2048::rules::{format_board, Shape};
use age2048::store::Layout;
use arrow::array::{Array, Float64Array, StringArray, UInt64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::common::{self, Boards};

fn read_states(path: &Path) -> Vec<(u64, f64, Option<String>)> {
    let f = File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for batch in reader {
        let b = batch.unwrap();
        let id = b
            .column_by_name("id")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap()
            .clone();
        let value = b
            .column_by_name("value")
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .clone();
        let best = b
            .column_by_name("best")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone();
        for i in 0..b.num_rows() {
            let bst = (!best.is_null(i)).then(|| best.value(i).to_string());
            out.push((id.value(i), value.value(i), bst));
        }
    }
    out
}

/// The q-values L, R, U, D of one board (empty for an invalid move).
fn best_csv(data: &str, variant: &str, board: &str) -> Vec<String> {
    let out = common::best_csv(
        Path::new(data),
        "3x3",
        Some(variant),
        &[],
        Boards::Args(&[board]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    out.lines()
        .nth(1)
        .unwrap()
        .split(',')
        .skip(1)
        .take(4)
        .map(str::to_string)
        .collect()
}

#[test]
fn goal_512_on_3x3_reproduces_the_published_probabilities() {
    // The goal table's solves, which `goals` reads too.
    let data = crate::common::shared_goal_solves();
    let d = data.to_str().unwrap();
    // Galebach (2014): 73.677 % over the initial distribution; show2048strat for one board.
    let m = crate::common::manifest(data, "3x3", "goal-512");
    let p = m["value_initial"].as_f64().unwrap();
    assert_eq!(
        format!("{:.5}", p),
        "0.73677",
        "probability of a 512 tile: {p}"
    );
    let q = best_csv(d, "goal-512", "0 2 0/0 64 4/0 8 8");
    for (got, want) in q[..3]
        .iter()
        .zip([0.736754070877757, 0.736759239587902, 0.736685530252522])
    {
        let g: f64 = got.parse().unwrap();
        assert!(
            (g - want).abs() < 1e-10,
            "goal-512 q-value {g} against the published {want}"
        );
    }
}

#[test]
fn solve_3x3_reproduces_the_published_figures() {
    // The solve several subjects read (made once per build of the binary).
    let data = crate::common::shared_solves().to_path_buf();
    let d = data.to_str().unwrap();

    let m = crate::common::manifest(&data, "3x3", "expectation");
    assert_eq!(m["n_states"], 48_713_519u64, "published 3x3 state count");
    let two = m["value_two_2_tiles"].as_f64().unwrap();
    let init = m["value_initial"].as_f64().unwrap();
    assert_eq!(format!("{two:.2}"), "5469.21");
    assert_eq!(format!("{init:.2}"), "5468.49");
    assert_eq!(m["max_tile"], 1024);

    // Galebach (2014), show2048strat_s: the expected additional score of each move.
    let q = best_csv(d, "expectation", "0 2 0/0 64 4/0 8 8");
    assert_eq!(q[3], "", "D is not a valid move");
    for (got, want) in
        q[..3]
            .iter()
            .zip(["5127.9948379673", "5128.02813702287", "5127.53891560638"])
    {
        let (g, w): (f64, f64) = (got.parse().unwrap(), want.parse().unwrap());
        assert!(
            (g - w).abs() < 1e-8 * w,
            "q-value {g} against the published {w}"
        );
    }

    // Per-age counts add up, and every listed file exists with its size.
    let ages = m["ages"].as_array().unwrap();
    let sum: u64 = ages.iter().map(|a| a["n_states"].as_u64().unwrap()).sum();
    assert_eq!(sum, 48_713_519);
    for f in m["files"].as_array().unwrap() {
        let p = data.join(f["path"].as_str().unwrap());
        assert_eq!(
            fs::metadata(&p).unwrap().len(),
            f["bytes"].as_u64().unwrap(),
            "{}",
            p.display()
        );
    }

    // `best` (Elias-Fano index) agrees with the Parquet values for a spread of ages.
    let shape = Shape::new(3, 3).unwrap();
    let layout = Layout::new(&data);
    let mut compared = 0;
    for age in [4u32, 6, 8, 100, 500, 1000, 1500, 2000] {
        let path = layout.states_file(shape, "expectation", age);
        let rows = read_states(&path);
        let step = (rows.len() / 200).max(1);
        let sample: Vec<_> = rows.iter().step_by(step).collect();
        let text: Vec<String> = sample
            .iter()
            .map(|(id, _, _)| format_board(*id, shape))
            .collect();
        let out = common::best_csv(Path::new(d), "3x3", None, &[], Boards::File(&text))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            out.lines().count(),
            sample.len() + 1,
            "age {age}: one row per board"
        );
        for ((_, value, best), line) in sample.iter().zip(out.lines().skip(1)) {
            compared += 1;
            let f: Vec<&str> = line.split(',').collect();
            let v: f64 = f[5].parse().unwrap();
            assert_eq!(v, *value, "age {age}: {line}");
            assert_eq!(
                f[6],
                best.as_deref().unwrap_or(""),
                "age {age}: best move differs: {line}"
            );
        }
    }
    // Every age above has states on 3x3: about 200 boards each were compared.
    assert!(compared >= 8 * 100, "only {compared} boards compared");
}
