//! The folder `age2048 evaluate` writes: the regret of an agent's moves as three tables, each
//! as Parquet (for `age2048 sql` / DuckDB, Polars, pyarrow) and CSV, beside the figure the
//! command draws.
//!
//! ```text
//! OUT/moves.{parquet,csv}          one row per logged move
//! OUT/games.{parquet,csv}          one row per game
//! OUT/regret_by_age.{parquet,csv}  one row per age of the boards moved on
//! OUT/regret_per_age.{svg,png}     the figure (feature `report`)
//! ```
//!
//! The columns are defined once here (names, types, descriptions, with the types of
//! [`super::schema`]); both writers take the same Arrow arrays, so the CSV and the Parquet
//! file of a table always agree. Every file is encoded before the first one is written, and
//! each reaches the disk through [`super::atomic`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, StringArray, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Float64Type, UInt32Type, UInt64Type};
use arrow::record_batch::RecordBatch;

use super::error::{Result, StoreError};
use super::parquet;
use super::schema::{Column, ColumnType, Table};

const fn col(name: &'static str, ty: ColumnType, nullable: bool, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable,
        doc,
    }
}

use ColumnType::{Bool, Utf8, F64, U32, U64};

/// One row per logged move, in the order of the log.
pub const MOVES: Table = Table {
    name: "moves",
    keys: &[],
    columns: &[
        col("line", U64, false, "line of the log (1-based)"),
        col("game", Utf8, false, "game id as logged"),
        col(
            "step",
            U32,
            false,
            "index of the move within its game (0-based, log order)",
        ),
        col(
            "board",
            Utf8,
            false,
            "board before the move ('.' for empty)",
        ),
        col(
            "id",
            U64,
            false,
            "canonical id of the board (joins states.id)",
        ),
        col("age", U32, false, "sum of the tiles of the board"),
        col("move", Utf8, false, "the move played: L, R, U or D"),
        col(
            "q",
            F64,
            true,
            "q-value of the move played (null over a policy solve: no values)",
        ),
        col(
            "best_q",
            F64,
            true,
            "q-value of the best move (the state value; null over a policy solve)",
        ),
        col(
            "regret",
            F64,
            true,
            "best_q − q (≥ 0; null over a policy solve)",
        ),
        col(
            "optimal",
            Bool,
            false,
            "regret ≤ 1e-9 · max(1, |best_q|); over a policy solve: the move makes the stored move's afterstate (up to symmetry) with its reward",
        ),
        col(
            "best",
            Utf8,
            false,
            "best move (the first of equal ones in L, R, U, D)",
        ),
    ],
};

/// One row per game, in the order of their first line.
pub const GAMES: Table = Table {
    name: "games",
    keys: &[],
    columns: &[
        col("game", Utf8, false, "game id as logged"),
        col("first_line", U64, false, "line of the game's first move"),
        col("moves", U64, false, "moves evaluated"),
        col("optimal_moves", U64, false, "moves with no regret"),
        col("optimal_share", F64, false, "optimal_moves / moves"),
        col(
            "total_regret",
            F64,
            true,
            "sum of the regrets of the game (null over a policy solve)",
        ),
        col("mean_regret", F64, true, "total_regret / moves"),
        col(
            "start_value",
            F64,
            true,
            "value of the game's first logged board under optimal play (null over a policy solve)",
        ),
        col(
            "expected_score_lost",
            F64,
            true,
            "points the moves cost in expectation (= total_regret for scored variants, null for goal variants)",
        ),
    ],
};

/// One row per age of the boards moved on.
pub const REGRET_BY_AGE: Table = Table {
    name: "regret_by_age",
    keys: &[],
    columns: &[
        col("age", U32, false, "sum of the tiles of the boards moved on"),
        col("moves", U64, false, "moves at this age"),
        col("optimal_share", F64, false, "share of them with no regret"),
        col(
            "mean_regret",
            F64,
            true,
            "mean regret of the moves at this age (null over a policy solve)",
        ),
        col(
            "max_regret",
            F64,
            true,
            "largest regret at this age (null over a policy solve)",
        ),
    ],
};

/// The three tables.
pub const TABLES: [&Table; 3] = [&MOVES, &GAMES, &REGRET_BY_AGE];

/// File stem of the figure (`OUT/regret_per_age.svg`, `.png`).
pub const FIGURE: &str = "regret_per_age";

/// Columns of [`MOVES`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MovesColumns {
    pub line: Vec<u64>,
    pub game: Vec<String>,
    pub step: Vec<u32>,
    pub board: Vec<String>,
    pub id: Vec<u64>,
    pub age: Vec<u32>,
    pub mv: Vec<&'static str>,
    pub q: Vec<Option<f64>>,
    pub best_q: Vec<Option<f64>>,
    pub regret: Vec<Option<f64>>,
    pub optimal: Vec<bool>,
    pub best: Vec<&'static str>,
}

/// Columns of [`GAMES`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GamesColumns {
    pub game: Vec<String>,
    pub first_line: Vec<u64>,
    pub moves: Vec<u64>,
    pub optimal_moves: Vec<u64>,
    pub optimal_share: Vec<f64>,
    pub total_regret: Vec<Option<f64>>,
    pub mean_regret: Vec<Option<f64>>,
    pub start_value: Vec<Option<f64>>,
    pub expected_score_lost: Vec<Option<f64>>,
}

/// Columns of [`REGRET_BY_AGE`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegretByAgeColumns {
    pub age: Vec<u32>,
    pub moves: Vec<u64>,
    pub optimal_share: Vec<f64>,
    pub mean_regret: Vec<Option<f64>>,
    pub max_regret: Vec<Option<f64>>,
}

/// Everything `evaluate` writes as tables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvaluationTables {
    pub moves: MovesColumns,
    pub games: GamesColumns,
    pub regret_by_age: RegretByAgeColumns,
}

fn strings(v: Vec<String>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

fn strs(v: Vec<&'static str>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

impl MovesColumns {
    fn arrays(self) -> Vec<ArrayRef> {
        vec![
            Arc::new(UInt64Array::from(self.line)),
            strings(self.game),
            Arc::new(UInt32Array::from(self.step)),
            strings(self.board),
            Arc::new(UInt64Array::from(self.id)),
            Arc::new(UInt32Array::from(self.age)),
            strs(self.mv),
            Arc::new(Float64Array::from(self.q)),
            Arc::new(Float64Array::from(self.best_q)),
            Arc::new(Float64Array::from(self.regret)),
            Arc::new(BooleanArray::from(self.optimal)),
            strs(self.best),
        ]
    }
}

impl GamesColumns {
    fn arrays(self) -> Vec<ArrayRef> {
        vec![
            strings(self.game),
            Arc::new(UInt64Array::from(self.first_line)),
            Arc::new(UInt64Array::from(self.moves)),
            Arc::new(UInt64Array::from(self.optimal_moves)),
            Arc::new(Float64Array::from(self.optimal_share)),
            Arc::new(Float64Array::from(self.total_regret)),
            Arc::new(Float64Array::from(self.mean_regret)),
            Arc::new(Float64Array::from(self.start_value)),
            Arc::new(Float64Array::from(self.expected_score_lost)),
        ]
    }
}

impl RegretByAgeColumns {
    fn arrays(self) -> Vec<ArrayRef> {
        vec![
            Arc::new(UInt32Array::from(self.age)),
            Arc::new(UInt64Array::from(self.moves)),
            Arc::new(Float64Array::from(self.optimal_share)),
            Arc::new(Float64Array::from(self.mean_regret)),
            Arc::new(Float64Array::from(self.max_regret)),
        ]
    }
}

/// Quotes a CSV field when it needs it.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One cell as CSV text: numbers in Rust's shortest round-trip form, null as nothing.
fn csv_cell(path: &Path, a: &dyn Array, i: usize) -> Result<String> {
    if a.is_null(i) {
        return Ok(String::new());
    }
    Ok(match a.data_type() {
        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).to_string(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i).to_string(),
        DataType::Boolean => a.as_boolean().value(i).to_string(),
        DataType::Utf8 => csv_field(a.as_string::<i32>().value(i)),
        other => {
            return Err(StoreError::corrupt(
                path,
                format!("no CSV form for a column of type {other}"),
            ))
        }
    })
}

/// The batch as CSV with a header line.
fn csv_bytes(path: &Path, b: &RecordBatch) -> Result<Vec<u8>> {
    let mut s = String::new();
    let names: Vec<&str> = b
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    s.push_str(&names.join(","));
    s.push('\n');
    for i in 0..b.num_rows() {
        for (j, a) in b.columns().iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let _ = write!(s, "{}", csv_cell(path, a.as_ref(), i)?);
        }
        s.push('\n');
    }
    Ok(s.into_bytes())
}

/// Writes the three tables under `dir` (Parquet and CSV each); returns the files written.
/// Every file is encoded first, so a failure to encode writes nothing.
pub fn write(dir: &Path, tables: EvaluationTables) -> Result<Vec<PathBuf>> {
    let parts = [
        (&MOVES, tables.moves.arrays()),
        (&GAMES, tables.games.arrays()),
        (&REGRET_BY_AGE, tables.regret_by_age.arrays()),
    ];
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for (table, cols) in parts {
        let pq = dir.join(format!("{}.parquet", table.name));
        let csv = dir.join(format!("{}.csv", table.name));
        let b = parquet::batch(&pq, table, cols)?;
        let bytes = parquet::parquet_bytes(&pq, &b, parquet::writer_props(&[], &[]))?;
        files.push((pq.clone(), bytes));
        files.push((csv.clone(), csv_bytes(&csv, &b)?));
    }
    let mut written = Vec::new();
    for (path, bytes) in files {
        super::atomic::write(&path, &bytes)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_round_trip_through_parquet_and_csv() {
        let dir = tempfile::tempdir().unwrap();
        let t = EvaluationTables {
            moves: MovesColumns {
                line: vec![2],
                game: vec!["g,1".into()],
                step: vec![0],
                board: vec!["2 . /. 2".into()],
                id: vec![0x1001],
                age: vec![4],
                mv: vec!["L"],
                q: vec![Some(1.5)],
                best_q: vec![Some(2.0)],
                regret: vec![Some(0.5)],
                optimal: vec![false],
                best: vec!["U"],
            },
            games: GamesColumns {
                game: vec!["g,1".into()],
                first_line: vec![2],
                moves: vec![1],
                optimal_moves: vec![0],
                optimal_share: vec![0.0],
                total_regret: vec![Some(0.5)],
                mean_regret: vec![Some(0.5)],
                start_value: vec![Some(2.0)],
                expected_score_lost: vec![None],
            },
            regret_by_age: RegretByAgeColumns {
                age: vec![4],
                moves: vec![1],
                optimal_share: vec![0.0],
                mean_regret: vec![Some(0.5)],
                max_regret: vec![Some(0.5)],
            },
        };
        let files = write(dir.path(), t).unwrap();
        assert_eq!(files.len(), 6);
        let csv = std::fs::read_to_string(dir.path().join("moves.csv")).unwrap();
        assert_eq!(
            csv,
            "line,game,step,board,id,age,move,q,best_q,regret,optimal,best\n\
             2,\"g,1\",0,2 . /. 2,4097,4,L,1.5,2,0.5,false,U\n"
        );
        let games = std::fs::read_to_string(dir.path().join("games.csv")).unwrap();
        assert!(games.ends_with(",2,\n"), "{games}");
        let cols = crate::store::parquet::read_columns(
            &dir.path().join("regret_by_age.parquet"),
            &["age", "mean_regret"],
        )
        .unwrap();
        assert_eq!(cols[1], crate::store::ColumnData::F64(vec![Some(0.5)]));
    }
}
