//! The SQL catalog: an in-memory DuckDB with views over every board and variant of a data
//! directory.
//!
//! * `states(board, variant, age, id, value, terminal, moves, best, gap, empty)`
//! * `afterstates(board, variant, age, id, value, empty)`
//! * `ages(board, variant, age, n_states, n_afterstates, n_terminal_states, ...)`
//!
//! `board`, `variant` (VARCHAR) and `age` (UINTEGER) come from the Hive partition path, so
//! `WHERE board = '3x3' AND age < 100` prunes files; the store percent-encodes partition values
//! and DuckDB decodes them, so one glob reads every variant. A table with no files gets an
//! empty view of the same columns (types from the store's schema), so the other views still
//! work. Macros: `max_tile(id)`, the largest tile of a board id; `tile(id, r, c, board)` and
//! `board_text(id, board)` (see [`BOARD_MACROS`]).

use duckdb::Connection;

use super::{QueryError, Result};
use crate::store::schema::{Table, TABLES};
use crate::store::{Store, StoreError};

/// Quotes a string as an SQL literal.
pub fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The SQL that defines the views over `store` (also shown by the report's provenance).
pub fn catalog_sql(store: &Store) -> Result<String> {
    let root = store.root();
    let dir = root
        .to_str()
        .map(|s| s.trim_end_matches('/').to_string())
        .ok_or_else(|| {
            StoreError::corrupt(root, "the path is not valid UTF-8 (DuckDB globs are text)")
        })?;
    let mut sql = String::new();
    for t in TABLES {
        sql.push_str(&view_sql(store, &dir, t));
    }
    sql.push_str(
        "CREATE OR REPLACE MACRO max_tile(id) AS \
         1::UBIGINT << list_max(list_transform(range(16), lambda i: (id::UBIGINT >> (4 * i)::UBIGINT) & 15::UBIGINT));\n",
    );
    sql.push_str(BOARD_MACROS);
    Ok(sql)
}

/// Macros that read boards out of ids (cell `(r, c)` of an `RxC` board, 0-based, sits at bits
/// `4(r·C + c)`, exponent 0 = empty):
///
/// * `tile(id, r, c, board)`: the tile at row `r`, column `c` (0 if empty, NULL off the board);
/// * `board_text(id, board)`: the board as text, the way `rules::format_board` writes it
///   (rows separated by `/`, cells by spaces, `.` for empty): `2 . 4/. 8 ./. . 2`.
///
/// `board` is the board size `RxC`, e.g. the `board` column of the views.
pub const BOARD_MACROS: &str = "\
CREATE OR REPLACE MACRO tile(id, r, c, board) AS \
  CASE WHEN r < 0 OR c < 0 OR r >= split_part(board, 'x', 1)::INTEGER OR c >= split_part(board, 'x', 2)::INTEGER THEN NULL \
       WHEN ((id::UBIGINT >> (4 * (r * split_part(board, 'x', 2)::INTEGER + c))::UBIGINT) & 15::UBIGINT) = 0 THEN 0::UBIGINT \
       ELSE 1::UBIGINT << ((id::UBIGINT >> (4 * (r * split_part(board, 'x', 2)::INTEGER + c))::UBIGINT) & 15::UBIGINT) END;
CREATE OR REPLACE MACRO board_text(id, board) AS \
  array_to_string(list_transform(range(split_part(board, 'x', 1)::INTEGER), lambda r: \
    array_to_string(list_transform(range(split_part(board, 'x', 2)::INTEGER), lambda c: \
      CASE WHEN tile(id, r, c, board) = 0 THEN '.' ELSE tile(id, r, c, board)::VARCHAR END), ' ')), '/');
";

fn view_sql(store: &Store, dir: &str, t: &Table) -> String {
    let has_files = store
        .layout()
        .partitions(t.name)
        .iter()
        .any(|p| has_parquet(&p.dir));
    if !has_files {
        let cols = t
            .all_columns()
            .map(|c| format!("NULL::{} AS {}", c.ty.duckdb(), c.name))
            .collect::<Vec<_>>()
            .join(", ");
        return format!(
            "CREATE OR REPLACE VIEW {} AS SELECT {cols} WHERE false;\n",
            t.name
        );
    }
    let levels: Vec<String> = t.keys.iter().map(|k| format!("{}=*", k.name)).collect();
    let glob = format!("{dir}/{}/{}/*.parquet", t.name, levels.join("/"));
    let types = t
        .keys
        .iter()
        .map(|k| format!("'{}': {}", k.name, k.ty.duckdb()))
        .collect::<Vec<_>>()
        .join(", ");
    let keys = t.keys.iter().map(|k| k.name).collect::<Vec<_>>().join(", ");
    format!(
        "CREATE OR REPLACE VIEW {name} AS SELECT {keys}, * EXCLUDE ({keys}) FROM read_parquet({glob}, hive_partitioning = true, hive_types = {{{types}}}, union_by_name = true);\n",
        name = t.name,
        glob = sql_str(&glob),
    )
}

/// True if a partition folder holds a Parquet file at any depth.
fn has_parquet(dir: &std::path::Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            has_parquet(&p)
        } else {
            p.extension().is_some_and(|x| x == "parquet")
        }
    })
}

/// Opens an in-memory DuckDB with the views over `store`.
pub fn open(store: &Store) -> Result<Connection> {
    let sql = catalog_sql(store)?;
    let duck = |context: &str| {
        let context = context.to_string();
        move |e: duckdb::Error| QueryError::DuckDb {
            context,
            message: super::error::one_line(&e.to_string()),
        }
    };
    let conn = Connection::open_in_memory().map_err(duck("opening DuckDB"))?;
    conn.execute_batch(&sql)
        .map_err(duck("defining the views"))?;
    Ok(conn)
}
