//! Loading what the report draws: manifests (serde) and the per-age and per-board SQL results
//! (DuckDB, queries in `sql/`). The quantile band and the variants side by side are frames
//! ([`super::frames`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use arrow::array::{Array, Float64Array, StringArray, UInt64Array};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use duckdb::Connection;

use super::ReportError;
use crate::query::sql::query;
use crate::store::{Manifest, Store};

/// `sql/per_age.sql`: one row per board, variant and age.
pub const PER_AGE_SQL: &str = include_str!("../../sql/per_age.sql");
/// `sql/boards.sql`: totals per board and variant.
pub const BOARDS_SQL: &str = include_str!("../../sql/boards.sql");
/// `sql/largest_tile.sql`: largest tile per board and variant from the codes.
pub const LARGEST_TILE_SQL: &str = include_str!("../../sql/largest_tile.sql");
/// `sql/state_value_quantiles.sql`: DuckDB reference of the quantile band (for users' ad-hoc
/// queries; `quantile_cont` may round the interpolation differently in the last bit).
pub const STATE_VALUE_QUANTILES_SQL: &str = include_str!("../../sql/state_value_quantiles.sql");

/// A manifest with the board and variant of its path.
#[derive(Debug, Clone)]
pub struct ManifestEntry {
    pub board: String,
    pub variant: String,
    pub path: PathBuf,
    pub manifest: Manifest,
}

/// Reads every manifest of the data directory, sorted by board then variant.
pub fn load_manifests(store: &Store) -> Result<Vec<ManifestEntry>, ReportError> {
    let mut out = Vec::new();
    for (p, m) in store.manifests() {
        out.push(ManifestEntry {
            board: p.board,
            variant: p.variant,
            path: p.dir,
            manifest: m?,
        });
    }
    out.sort_by(|a, b| {
        board_key(&a.board)
            .cmp(&board_key(&b.board))
            .then(variant_key(&a.variant).cmp(&variant_key(&b.variant)))
    });
    Ok(out)
}

/// Sort key of a board name `RxC`: by cells, then rows; unparsable names last.
pub fn board_key(board: &str) -> (usize, usize, String) {
    match parse_board(board) {
        Some((r, c)) => (r * c, r, board.to_string()),
        None => (usize::MAX, 0, board.to_string()),
    }
}

/// Sort key of a variant: expectation, optimistic, pessimistic, then the rest by name.
pub fn variant_key(variant: &str) -> (usize, String) {
    let rank = match variant {
        "expectation" => 0,
        "optimistic" => 1,
        "pessimistic" => 2,
        _ => 3,
    };
    (rank, variant.to_string())
}

/// Parses `RxC`.
pub fn parse_board(board: &str) -> Option<(usize, usize)> {
    let (r, c) = board.split_once('x')?;
    Some((r.parse().ok()?, c.parse().ok()?))
}

/// One row of `sql/per_age.sql`.
#[derive(Debug, Clone)]
pub struct AgeRow {
    pub board: String,
    pub variant: String,
    pub age: u64,
    pub n_states: u64,
    pub n_afterstates: u64,
    pub n_terminal_states: u64,
    pub terminal_share: Option<f64>,
    pub frac_gap_lt_1: Option<f64>,
    pub mean_empty_cells_afterstates: Option<f64>,
    pub best_afterstate_value: Option<f64>,
    pub mean_state_value: Option<f64>,
    pub mean_action_gap: Option<f64>,
}

/// One row of `sql/boards.sql`.
#[derive(Debug, Clone)]
pub struct BoardRow {
    pub board: String,
    pub variant: String,
    pub states: u64,
    pub afterstates: u64,
    pub terminal_states: u64,
    pub max_age: Option<u64>,
}

fn column(
    batch: &RecordBatch,
    name: &str,
    to: &DataType,
    ctx: &str,
) -> Result<std::sync::Arc<dyn Array>, ReportError> {
    let c = batch
        .column_by_name(name)
        .ok_or_else(|| ReportError::shape(ctx, format!("no column {name}")))?;
    cast(c, to).map_err(|e| ReportError::arrow(format!("{ctx}: column {name}"), e))
}

pub(crate) fn col_str(b: &RecordBatch, name: &str, ctx: &str) -> Result<Vec<String>, ReportError> {
    let a = column(b, name, &DataType::Utf8, ctx)?;
    let a = a
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| ReportError::shape(ctx, name))?;
    Ok((0..a.len())
        .map(|i| {
            if a.is_null(i) {
                String::new()
            } else {
                a.value(i).to_string()
            }
        })
        .collect())
}

pub(crate) fn col_u64(
    b: &RecordBatch,
    name: &str,
    ctx: &str,
) -> Result<Vec<Option<u64>>, ReportError> {
    let a = column(b, name, &DataType::UInt64, ctx)?;
    let a = a
        .as_any()
        .downcast_ref::<UInt64Array>()
        .ok_or_else(|| ReportError::shape(ctx, name))?;
    Ok((0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i)))
        .collect())
}

pub(crate) fn col_f64(
    b: &RecordBatch,
    name: &str,
    ctx: &str,
) -> Result<Vec<Option<f64>>, ReportError> {
    let a = column(b, name, &DataType::Float64, ctx)?;
    let a = a
        .as_any()
        .downcast_ref::<Float64Array>()
        .ok_or_else(|| ReportError::shape(ctx, name))?;
    Ok((0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i)))
        .collect())
}

/// Runs `sql/per_age.sql`.
pub fn per_age(conn: &Connection) -> Result<Vec<AgeRow>, ReportError> {
    let ctx = "sql/per_age.sql";
    let b = query(conn, PER_AGE_SQL)
        .map_err(|e| ReportError::DuckDb {
            context: ctx.into(),
            message: e.to_string(),
        })?
        .concat()
        .map_err(ReportError::Query)?;
    let board = col_str(&b, "board", ctx)?;
    let variant = col_str(&b, "variant", ctx)?;
    let age = col_u64(&b, "age", ctx)?;
    let ns = col_u64(&b, "n_states", ctx)?;
    let na = col_u64(&b, "n_afterstates", ctx)?;
    let nt = col_u64(&b, "n_terminal_states", ctx)?;
    let ts = col_f64(&b, "terminal_share", ctx)?;
    let fg = col_f64(&b, "frac_gap_lt_1", ctx)?;
    let me = col_f64(&b, "mean_empty_cells_afterstates", ctx)?;
    let bv = col_f64(&b, "best_afterstate_value", ctx)?;
    let mv = col_f64(&b, "mean_state_value", ctx)?;
    let mg = col_f64(&b, "mean_action_gap", ctx)?;
    Ok((0..b.num_rows())
        .map(|i| AgeRow {
            board: board[i].clone(),
            variant: variant[i].clone(),
            age: age[i].unwrap_or(0),
            n_states: ns[i].unwrap_or(0),
            n_afterstates: na[i].unwrap_or(0),
            n_terminal_states: nt[i].unwrap_or(0),
            terminal_share: ts[i],
            frac_gap_lt_1: fg[i],
            mean_empty_cells_afterstates: me[i],
            best_afterstate_value: bv[i],
            mean_state_value: mv[i],
            mean_action_gap: mg[i],
        })
        .collect())
}

/// Runs `sql/boards.sql`.
pub fn boards(conn: &Connection) -> Result<Vec<BoardRow>, ReportError> {
    let ctx = "sql/boards.sql";
    let b = query(conn, BOARDS_SQL)
        .map_err(|e| ReportError::DuckDb {
            context: ctx.into(),
            message: e.to_string(),
        })?
        .concat()
        .map_err(ReportError::Query)?;
    let board = col_str(&b, "board", ctx)?;
    let variant = col_str(&b, "variant", ctx)?;
    let s = col_u64(&b, "states", ctx)?;
    let a = col_u64(&b, "afterstates", ctx)?;
    let t = col_u64(&b, "terminal_states", ctx)?;
    let m = col_u64(&b, "max_age", ctx)?;
    Ok((0..b.num_rows())
        .map(|i| BoardRow {
            board: board[i].clone(),
            variant: variant[i].clone(),
            states: s[i].unwrap_or(0),
            afterstates: a[i].unwrap_or(0),
            terminal_states: t[i].unwrap_or(0),
            max_age: m[i],
        })
        .collect())
}

/// Runs `sql/largest_tile.sql`: `(board, variant) -> largest tile`.
pub fn largest_tiles(conn: &Connection) -> Result<BTreeMap<(String, String), u64>, ReportError> {
    let ctx = "sql/largest_tile.sql";
    let b = query(conn, LARGEST_TILE_SQL)
        .map_err(|e| ReportError::DuckDb {
            context: ctx.into(),
            message: e.to_string(),
        })?
        .concat()
        .map_err(ReportError::Query)?;
    let board = col_str(&b, "board", ctx)?;
    let variant = col_str(&b, "variant", ctx)?;
    let t = col_u64(&b, "largest_tile", ctx)?;
    Ok((0..b.num_rows())
        .filter_map(|i| t[i].map(|t| ((board[i].clone(), variant[i].clone()), t)))
        .collect())
}
