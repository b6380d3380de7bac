//! The SQL catalog: an in-memory DuckDB with views over every board and variant of a data
//! directory.
//!
//! * `states(board, variant, age, id, value, terminal, moves, best, gap, empty)`
//! * `afterstates(board, variant, age, id, value, empty)`
//! * `ages(board, variant, age, n_states, n_afterstates, n_terminal_states, ...)`
//! * `solves(board, variant, arithmetic, caps, require, ..., value_initial, value_empty)`: one
//!   row a finished solve, from its manifest: the values at both starts (today's two spawns
//!   on the empty board, and Slizkov's empty board with the spawner to move), the counts, and
//!   for a restricted solve its caps and requirement
//!
//! `board`, `variant` (VARCHAR) and `age` (UINTEGER) come from the Hive partition path, so
//! `WHERE board = '3x3' AND age < 100` prunes files; the store percent-encodes partition values
//! and DuckDB decodes them. Macros: `max_tile(id)`, the largest tile of a board id; `tile(id, r, c, board)` and
//! `board_text(id, board)` (see [`BOARD_MACROS`]).
//!
//! The views show finished solves only, and only once the store has checked them: each view
//! reads one glob per board and variant that has a manifest, after the store's cheap check
//! (every listed file there at its size, none missing or stray) passed for every one of them;
//! a damaged solve makes [`open`] fail naming the file, so no query answers from it. Partitions
//! without a manifest (a killed or running solve) are left out, and [`Contents`] lists them
//! for a note. A solve in the compact layout has rows in `states` and `afterstates` only for
//! the ages it kept in Parquet (`solve --parquet-ages`), and always its `ages` rows. A
//! directory with no finished solve is an error rather than views of nothing:
//! zero rows would read as an answer. For goal and guaranteed variants, whose values are
//! probabilities, the value columns are shown clamped to [0, 1].

use duckdb::Connection;

use super::{QueryError, Result};
use crate::rules::variant::Given;
use crate::rules::Variant;
use crate::store::schema::{Table, TABLES};
use crate::store::verify::{trusted_all, Problem, Solved};
use crate::store::{Store, StoreError};

/// What the views show: the finished solves (checked), and the unfinished ones left out.
#[derive(Clone, Debug, Default)]
pub struct Contents {
    pub solved: Vec<Solved>,
    pub unfinished: Vec<Problem>,
}

/// The finished solves of `store` checked for reading (see the module comment);
/// [`StoreError::Damaged`] names the first problem found.
pub fn contents(store: &Store) -> Result<Contents> {
    let (solved, unfinished) = trusted_all(store)?;
    Ok(Contents { solved, unfinished })
}

/// Columns holding state or afterstate values (probabilities for goal and guaranteed variants).
const VALUE_COLUMNS: [&str; 3] = ["value", "best_afterstate_value", "mean_state_value"];

/// Quotes a string as an SQL literal.
pub fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The SQL that defines the views over the finished solves of `contents`.
pub fn views_sql(store: &Store, contents: &Contents) -> Result<String> {
    let mut sql = String::new();
    for t in TABLES {
        sql.push_str(&view_sql(store, contents, t)?);
    }
    sql.push_str(&solves_sql(contents));
    sql.push_str(
        "CREATE OR REPLACE MACRO max_tile(id) AS \
         1::UBIGINT << list_max(list_transform(range(16), lambda i: (id::UBIGINT >> (4 * i)::UBIGINT) & 15::UBIGINT));\n",
    );
    sql.push_str(BOARD_MACROS);
    Ok(sql)
}

/// The `solves` view's columns: name, DuckDB type, and the manifest's value as SQL.
type SolveColumn = (&'static str, &'static str, fn(&Solved) -> String);

const SOLVE_COLUMNS: [SolveColumn; 18] = [
    ("board", "VARCHAR", |s| sql_str(&s.board)),
    ("variant", "VARCHAR", |s| sql_str(&s.variant)),
    ("layout", "VARCHAR", |s| {
        sql_str(s.manifest.storage.layout.name())
    }),
    ("arithmetic", "VARCHAR", |s| sql_str(&s.manifest.arithmetic)),
    ("caps", "VARCHAR", |s| {
        sql_opt_str(s.manifest.caps.as_deref())
    }),
    ("require", "VARCHAR", |s| {
        sql_opt_str(s.manifest.require.as_deref())
    }),
    ("symmetry", "VARCHAR", |s| sql_str(&s.manifest.symmetry)),
    ("p4", "DOUBLE", |s| sql_f64(Some(s.manifest.p4))),
    ("discount", "DOUBLE", |s| sql_f64(Some(s.manifest.discount))),
    ("n_states", "UBIGINT", |s| s.manifest.n_states.to_string()),
    ("n_afterstates", "UBIGINT", |s| {
        s.manifest.n_afterstates.to_string()
    }),
    ("n_terminal_states", "UBIGINT", |s| {
        s.manifest.n_terminal_states.to_string()
    }),
    ("max_age", "UINTEGER", |s| s.manifest.max_age.to_string()),
    ("max_tile", "UINTEGER", |s| s.manifest.max_tile.to_string()),
    ("value_two_2_tiles", "DOUBLE", |s| {
        sql_f64(s.manifest.value_two_2_tiles)
    }),
    ("value_initial", "DOUBLE", |s| {
        sql_f64(s.manifest.value_initial)
    }),
    ("value_initial_distinct", "DOUBLE", |s| {
        sql_f64(s.manifest.value_initial_distinct)
    }),
    ("value_empty", "DOUBLE", |s| sql_f64(s.manifest.value_empty)),
];

fn sql_opt_str(s: Option<&str>) -> String {
    s.map_or_else(|| "NULL".into(), sql_str)
}

/// An f64 as a DuckDB DOUBLE, every bit kept: Rust's shortest round-trip text, read by DuckDB
/// as text (a bare literal would be a DECIMAL first).
fn sql_f64(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("'{v:?}'::DOUBLE"),
        _ => "NULL::DOUBLE".into(),
    }
}

/// The `solves` view: one row a finished solve, from its manifest (see the module comment).
fn solves_sql(contents: &Contents) -> String {
    let typed = |(name, ty, _): &SolveColumn| format!("NULL::{ty} AS {name}");
    if contents.solved.is_empty() {
        let cols: Vec<String> = SOLVE_COLUMNS.iter().map(typed).collect();
        return format!(
            "CREATE OR REPLACE VIEW solves AS SELECT {} WHERE false;\n",
            cols.join(", ")
        );
    }
    let rows: Vec<String> = contents
        .solved
        .iter()
        .map(|s| {
            let values: Vec<String> = SOLVE_COLUMNS
                .iter()
                .map(|(_, ty, value)| format!("{}::{ty}", value(s)))
                .collect();
            format!("({})", values.join(", "))
        })
        .collect();
    let names: Vec<&str> = SOLVE_COLUMNS.iter().map(|(n, _, _)| *n).collect();
    format!(
        "CREATE OR REPLACE VIEW solves AS SELECT * FROM (VALUES {}) AS t({}) ORDER BY board, variant;\n",
        rows.join(", "),
        names.join(", ")
    )
}

/// Macros that read boards out of ids (cell `(r, c)` of an `RxC` board, 0-based, sits at bits
/// `4(r·C + c)`, exponent 0 = empty):
///
/// * `tile(id, r, c, board)`: the tile at row `r`, column `c` (0 if empty, NULL off the board);
/// * `board_text(id, board)`: the board as text, the way `rules::format_board` writes it
///   (rows separated by `/`, cells by spaces, `.` for empty): `2 . 4/. 8 ./. . 2`. One list
///   over the cells, each its separator and its tile's text looked up by exponent: a quarter
///   of the work of a list of rows of `tile` calls.
///
/// `board` is the board size `RxC`, e.g. the `board` column of the views.
pub const BOARD_MACROS: &str = "\
CREATE OR REPLACE MACRO tile(id, r, c, board) AS \
  CASE WHEN r < 0 OR c < 0 OR r >= split_part(board, 'x', 1)::INTEGER OR c >= split_part(board, 'x', 2)::INTEGER THEN NULL \
       WHEN ((id::UBIGINT >> (4 * (r * split_part(board, 'x', 2)::INTEGER + c))::UBIGINT) & 15::UBIGINT) = 0 THEN 0::UBIGINT \
       ELSE 1::UBIGINT << ((id::UBIGINT >> (4 * (r * split_part(board, 'x', 2)::INTEGER + c))::UBIGINT) & 15::UBIGINT) END;
CREATE OR REPLACE MACRO board_text(id, board) AS \
  array_to_string(list_transform(range(split_part(board, 'x', 1)::INTEGER * split_part(board, 'x', 2)::INTEGER), lambda i: \
    CASE WHEN i = 0 THEN '' WHEN i % split_part(board, 'x', 2)::INTEGER = 0 THEN '/' ELSE ' ' END || \
    ['.', '2', '4', '8', '16', '32', '64', '128', '256', '512', '1024', '2048', '4096', '8192', '16384', '32768'] \
      [1 + ((id::UBIGINT >> (4 * i)::UBIGINT) & 15::UBIGINT)::BIGINT]), '');
";

fn view_sql(store: &Store, contents: &Contents, t: &Table) -> Result<String> {
    // The solves with files in this table: a compact solve has `states` and `afterstates`
    // rows only for the ages it keeps in Parquet, maybe none (a glob of no file is an error).
    let layout = store.layout();
    let solved: Vec<&Solved> = contents
        .solved
        .iter()
        .filter(|s| {
            let dir = layout.relative(&layout.partition(t.name, s.shape, &s.variant));
            s.manifest.files.iter().any(|f| {
                f.path
                    .strip_prefix(&dir)
                    .is_some_and(|r| r.starts_with('/'))
            })
        })
        .collect();
    if solved.is_empty() {
        let cols = t
            .all_columns()
            .map(|c| format!("NULL::{} AS {}", c.ty.duckdb(), c.name))
            .collect::<Vec<_>>()
            .join(", ");
        return Ok(format!(
            "CREATE OR REPLACE VIEW {} AS SELECT {cols} WHERE false;\n",
            t.name
        ));
    }
    // One glob per finished board and variant: the partition folder, then the levels of the
    // remaining keys (`age=*`), then the part.
    let below: Vec<String> = t
        .keys
        .iter()
        .skip(2)
        .map(|k| format!("{}=*", k.name))
        .chain(["*.parquet".to_string()])
        .collect();
    let mut globs = Vec::new();
    for s in &solved {
        let dir = store.layout().partition(t.name, s.shape, &s.variant);
        let dir = dir.to_str().ok_or_else(|| {
            StoreError::corrupt(&dir, "the path is not valid UTF-8 (DuckDB globs are text)")
        })?;
        globs.push(sql_str(&format!("{dir}/{}", below.join("/"))));
    }
    let types = t
        .keys
        .iter()
        .map(|k| format!("'{}': {}", k.name, k.ty.duckdb()))
        .collect::<Vec<_>>()
        .join(", ");
    let keys = t.keys.iter().map(|k| k.name).collect::<Vec<_>>().join(", ");
    // Probabilities shown in [0, 1] (a sum of products can round a hair past 1).
    let probability_variants: Vec<String> = solved
        .iter()
        .filter(|s| Variant::parse(&s.variant, Given::default()).is_ok_and(|v| !v.scored()))
        .map(|s| sql_str(&s.variant))
        .collect();
    let clamped: Vec<String> = t
        .columns
        .iter()
        .filter(|c| VALUE_COLUMNS.contains(&c.name))
        .map(|c| {
            format!(
                "CASE WHEN variant IN ({list}) AND {n} > 1 THEN 1.0::DOUBLE WHEN variant IN ({list}) AND {n} < 0 THEN 0.0::DOUBLE ELSE {n} END AS {n}",
                list = probability_variants.join(", "),
                n = c.name
            )
        })
        .collect();
    let replace = if probability_variants.is_empty() || clamped.is_empty() {
        String::new()
    } else {
        format!(" REPLACE ({})", clamped.join(", "))
    };
    Ok(format!(
        "CREATE OR REPLACE VIEW {name} AS SELECT {keys}, * EXCLUDE ({keys}){replace} FROM read_parquet([{globs}], hive_partitioning = true, hive_types = {{{types}}}, union_by_name = true);\n",
        name = t.name,
        globs = globs.join(", "),
    ))
}

/// Opens an in-memory DuckDB with the views over the finished solves of `store`, after
/// checking them; [`StoreError::NothingSolved`] if there is none.
pub fn open(store: &Store) -> Result<Connection> {
    Ok(open_with_contents(store)?.0)
}

/// [`open`], also returning what the views show and leave out.
pub fn open_with_contents(store: &Store) -> Result<(Connection, Contents)> {
    let conn = Connection::open_in_memory().map_err(|e| QueryError::DuckDb {
        context: "opening DuckDB".into(),
        message: super::error::one_line(&e.to_string()),
    })?;
    let contents = define_views(&conn, store)?;
    Ok((conn, contents))
}

/// The statements that define the views over the finished solves of `store` (for a DuckDB
/// opened elsewhere, e.g. by `serve`'s query processes), after checking them, with what they
/// show and leave out; [`StoreError::NothingSolved`] if there is none.
pub fn views(store: &Store) -> Result<(String, Contents)> {
    let contents = contents(store)?;
    if contents.solved.is_empty() {
        let note = if contents.unfinished.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = contents
                .unfinished
                .iter()
                .map(|p| format!("{} {}", p.board, p.variant))
                .collect();
            format!(
                " (unfinished solves, not shown: {}; finish them with age2048 solve)",
                list.join(", ")
            )
        };
        return Err(StoreError::NothingSolved {
            dir: store.root().to_path_buf(),
            note,
        }
        .into());
    }
    let sql = views_sql(store, &contents)?;
    Ok((sql, contents))
}

/// Defines the views over the finished solves of `store` on `conn` (a database the caller
/// opened), after checking them; returns what they show and leave out.
pub fn define_views(conn: &Connection, store: &Store) -> Result<Contents> {
    let (sql, contents) = views(store)?;
    let duck = |context: &str| {
        let context = context.to_string();
        move |e: duckdb::Error| QueryError::DuckDb {
            context,
            message: super::error::one_line(&e.to_string()),
        }
    };
    conn.execute_batch(&sql)
        .map_err(duck("defining the views"))?;
    Ok(contents)
}
