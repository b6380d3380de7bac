//! The `sql` command: an embedded DuckDB over the solved dataset.
//!
//! [`open_catalog`] opens an in-memory DuckDB and defines three views over every board and
//! variant found in the data directory:
//!
//! * `states(board, variant, age, id, value, terminal, moves, best, gap, empty)`
//! * `afterstates(board, variant, age, id, value, empty)`
//! * `ages(board, variant, age, n_states, n_afterstates, n_terminal_states, ...)`
//!
//! `board`, `variant` (VARCHAR) and `age` (UINTEGER) come from the Hive partition path
//! (`board=3x3/variant=expectation/age=17`), so `WHERE board = '3x3' AND age < 100` prunes
//! files. A table with no files gets an empty view of the same columns, so the other views still
//! work. A macro `max_tile(id)` gives the largest tile of a board code.
//!
//! [`run_sql`] runs the statements of a query, a file or standard input (one result per
//! statement, as a small shell) and prints each result as a table, CSV or JSON.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use duckdb_arrow::datatypes::SchemaRef;
use duckdb_arrow::record_batch::RecordBatch;
use duckdb::Connection;

use crate::report::error::one_line;
use crate::report::ReportError;

/// Output format of `age2048 sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SqlFormat {
    /// Aligned text table.
    #[default]
    Table,
    /// CSV with a header line.
    Csv,
    /// One JSON array of row objects per statement.
    Json,
}

/// Where the statements of `age2048 sql` come from.
#[derive(Debug, Clone, Copy)]
pub enum SqlInput<'a> {
    /// Statements given on the command line.
    Query(&'a str),
    /// Statements read from a file.
    File(&'a Path),
    /// Statements read from standard input, executed as each `;` completes one.
    Stdin,
}

/// One of the three tables of the dataset, as laid out on disk.
struct TableLayout {
    name: &'static str,
    /// Directory levels below `DIR/<name>/` down to the Parquet file.
    hive_keys: &'static [&'static str],
    /// Columns (with DuckDB types) of the empty stand-in view, hive keys first.
    empty_columns: &'static [(&'static str, &'static str)],
}

const TABLES: [TableLayout; 3] = [
    TableLayout {
        name: "states",
        hive_keys: &["board", "variant", "age"],
        empty_columns: &[
            ("board", "VARCHAR"),
            ("variant", "VARCHAR"),
            ("age", "UINTEGER"),
            ("id", "UBIGINT"),
            ("value", "DOUBLE"),
            ("terminal", "BOOLEAN"),
            ("moves", "UTINYINT"),
            ("best", "VARCHAR"),
            ("gap", "DOUBLE"),
            ("empty", "UTINYINT"),
        ],
    },
    TableLayout {
        name: "afterstates",
        hive_keys: &["board", "variant", "age"],
        empty_columns: &[
            ("board", "VARCHAR"),
            ("variant", "VARCHAR"),
            ("age", "UINTEGER"),
            ("id", "UBIGINT"),
            ("value", "DOUBLE"),
            ("empty", "UTINYINT"),
        ],
    },
    TableLayout {
        name: "ages",
        hive_keys: &["board", "variant"],
        empty_columns: &[
            ("board", "VARCHAR"),
            ("variant", "VARCHAR"),
            ("age", "UINTEGER"),
            ("n_states", "UBIGINT"),
            ("n_afterstates", "UBIGINT"),
            ("n_terminal_states", "UBIGINT"),
            ("mean_empty_cells_afterstates", "DOUBLE"),
            ("best_afterstate_value", "DOUBLE"),
            ("mean_state_value", "DOUBLE"),
            ("mean_action_gap", "DOUBLE"),
            ("frac_gap_lt_1", "DOUBLE"),
        ],
    },
];

/// Quotes a string as an SQL literal.
pub(crate) fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Counts the Parquet files of a Hive layout `dir/k1=*/k2=*/.../*.parquet`.
fn count_parquet(dir: &Path, levels: usize) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let p = e.path();
        if levels == 0 {
            if p.is_file() && p.extension().is_some_and(|x| x == "parquet") {
                n += 1;
            }
        } else if p.is_dir() && e.file_name().to_string_lossy().contains('=') {
            n += count_parquet(&p, levels - 1);
        }
    }
    n
}

/// Decodes `%XX` escapes of a Hive directory value (as DuckDB does).
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}

/// `(board dir, board, variant dir, variant)` of every `board=*/variant=*` directory under
/// `root` (values unescaped), sorted.
pub(crate) fn partitions(root: &Path) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    let Ok(bs) = std::fs::read_dir(root) else {
        return out;
    };
    for b in bs.flatten() {
        let bdir = b.file_name().to_string_lossy().to_string();
        let Some(board) = bdir.strip_prefix("board=") else {
            continue;
        };
        let Ok(vs) = std::fs::read_dir(b.path()) else {
            continue;
        };
        for v in vs.flatten() {
            let vdir = v.file_name().to_string_lossy().to_string();
            if !v.path().is_dir() {
                continue;
            }
            let Some(variant) = vdir.strip_prefix("variant=") else {
                continue;
            };
            out.push((
                bdir.clone(),
                unescape(board),
                vdir.clone(),
                unescape(variant),
            ));
        }
    }
    out.sort();
    out
}

/// The directory `root/board=../variant=..` of a board and variant (values as in SQL).
pub fn partition_dir(root: &Path, board: &str, variant: &str) -> Option<PathBuf> {
    partitions(root)
        .into_iter()
        .find(|(_, b, _, v)| b == board && v == variant)
        .map(|(bd, _, vd, _)| root.join(bd).join(vd))
}

/// True if every partition directory name has exactly one `=` (DuckDB's Hive parser ignores
/// a path component with two).
fn simple_partitions(root: &Path) -> bool {
    partitions(root)
        .iter()
        .all(|(b, _, v, _)| b.matches('=').count() == 1 && v.matches('=').count() == 1)
}

/// Checks that `data` is a directory and returns it as UTF-8 (DuckDB globs are strings).
fn data_dir_str(data: &Path) -> Result<String, ReportError> {
    if !data.is_dir() {
        return Err(ReportError::MissingData {
            path: data.to_path_buf(),
        });
    }
    data.to_str()
        .map(|s| s.trim_end_matches('/').to_string())
        .ok_or_else(|| ReportError::NoData {
            path: data.to_path_buf(),
            what: "path is not valid UTF-8".into(),
        })
}

/// The SQL that defines the three views over `data` (also shown by the report's provenance).
pub fn catalog_sql(data: &Path) -> Result<String, ReportError> {
    let dir = data_dir_str(data)?;
    let mut sql = String::new();
    for t in &TABLES {
        let root: PathBuf = data.join(t.name);
        let files = count_parquet(&root, t.hive_keys.len());
        if files > 0 && simple_partitions(&root) {
            let glob = format!(
                "{dir}/{}/{}/*.parquet",
                t.name,
                t.hive_keys
                    .iter()
                    .map(|k| format!("{k}=*"))
                    .collect::<Vec<_>>()
                    .join("/")
            );
            let types = t
                .hive_keys
                .iter()
                .map(|k| {
                    format!(
                        "'{k}': {}",
                        if *k == "age" { "UINTEGER" } else { "VARCHAR" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let keys = t.hive_keys.join(", ");
            sql.push_str(&format!(
                "CREATE OR REPLACE VIEW {name} AS SELECT {keys}, * EXCLUDE ({keys}) FROM read_parquet({glob}, hive_partitioning = true, hive_types = {{{types}}}, union_by_name = true);\n",
                name = t.name,
                glob = sql_str(&glob),
            ));
        } else if files > 0 {
            // Some directory name has a second '=' (e.g. `variant=goal-2048-p4=0.2`), which
            // DuckDB's Hive parser does not take as a partition: read each board and variant
            // on its own, with board and variant as literals, and stack them.
            let mut parts = Vec::new();
            for (bdir, board, vdir, variant) in partitions(&root) {
                let rest = if t.hive_keys.contains(&"age") {
                    "age=*/*.parquet"
                } else {
                    "*.parquet"
                };
                let glob = format!("{dir}/{}/{bdir}/{vdir}/{rest}", t.name);
                let (age_type, age_col) = if t.hive_keys.contains(&"age") {
                    (", 'age': UINTEGER", "age, ")
                } else {
                    ("", "")
                };
                // A simple variant directory is parsed by DuckDB too: drop its column.
                let simple_v = vdir.matches('=').count() == 1;
                parts.push(format!(
                    "SELECT {b} AS board, {v} AS variant, {age_col}* EXCLUDE (board{exv}{ex}) FROM read_parquet({g}, hive_partitioning = true, hive_types = {{'board': VARCHAR{vtype}{age_type}}}, union_by_name = true)",
                    b = sql_str(&board),
                    v = sql_str(&variant),
                    exv = if simple_v { ", variant" } else { "" },
                    vtype = if simple_v { ", 'variant': VARCHAR" } else { "" },
                    ex = if age_col.is_empty() { "" } else { ", age" },
                    g = sql_str(&glob),
                ));
            }
            sql.push_str(&format!(
                "CREATE OR REPLACE VIEW {} AS {};\n",
                t.name,
                parts.join(" UNION ALL BY NAME ")
            ));
        } else {
            let cols = t
                .empty_columns
                .iter()
                .map(|(c, ty)| format!("NULL::{ty} AS {c}"))
                .collect::<Vec<_>>()
                .join(", ");
            sql.push_str(&format!(
                "CREATE OR REPLACE VIEW {} AS SELECT {cols} WHERE false;\n",
                t.name
            ));
        }
    }
    sql.push_str(
        "CREATE OR REPLACE MACRO max_tile(id) AS \
         1::UBIGINT << list_max(list_transform(range(16), lambda i: (id::UBIGINT >> (4 * i)::UBIGINT) & 15::UBIGINT));\n",
    );
    Ok(sql)
}

/// Opens an in-memory DuckDB with the views `states`, `afterstates` and `ages` over `data`.
pub fn open_catalog(data: &Path) -> Result<Connection, ReportError> {
    let sql = catalog_sql(data)?;
    let conn = Connection::open_in_memory().map_err(|e| ReportError::duck("opening DuckDB", e))?;
    conn.execute_batch(&sql)
        .map_err(|e| ReportError::duck("defining the views", e))?;
    Ok(conn)
}

/// A fully fetched statement result.
pub struct QueryResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl QueryResult {
    /// Number of rows over all batches.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// All rows as one batch (an empty batch of the schema if there are none).
    pub fn concat(&self) -> Result<RecordBatch, ReportError> {
        duckdb_arrow::compute::concat_batches(&self.schema, &self.batches)
            .map_err(|e| ReportError::arrow("concatenating result batches", e))
    }
}

/// Runs one statement and fetches its whole result as Arrow batches. On failure the error is
/// [`ReportError::Query`] with DuckDB's message on one line.
pub fn query(conn: &Connection, statement: &str) -> Result<QueryResult, ReportError> {
    let fail = |e: duckdb::Error| ReportError::Query {
        message: one_line(&e.to_string()),
    };
    let mut stmt = conn.prepare(statement).map_err(fail)?;
    let stream = stmt.stream_arrow([]).map_err(fail)?;
    let schema = stream.get_schema();
    let mut batches = Vec::new();
    for b in stream {
        batches.push(b);
    }
    Ok(QueryResult { schema, batches })
}

/// Writes one result in the chosen format.
pub fn write_result(
    result: &QueryResult,
    format: SqlFormat,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let io_err = |e| ReportError::io("writing the result to", Path::new("<output>"), e);
    if result.schema.fields().is_empty() {
        return Ok(());
    }
    match format {
        SqlFormat::Table => {
            let batch = result.concat()?;
            let text = duckdb_arrow::util::pretty::pretty_format_batches(&[batch])
                .map_err(|e| ReportError::arrow("formatting the table", e))?;
            writeln!(out, "{text}").map_err(io_err)?;
            let n = result.num_rows();
            writeln!(out, "({n} row{})", if n == 1 { "" } else { "s" }).map_err(io_err)?;
        }
        SqlFormat::Csv => {
            let batch = result.concat()?;
            let mut w = duckdb_arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut *out);
            w.write(&batch)
                .map_err(|e| ReportError::arrow("writing CSV", e))?;
        }
        SqlFormat::Json => {
            if result.num_rows() == 0 {
                writeln!(out, "[]").map_err(io_err)?;
            } else {
                let mut w = duckdb_arrow::json::ArrayWriter::new(&mut *out);
                for b in &result.batches {
                    w.write(b)
                        .map_err(|e| ReportError::arrow("writing JSON", e))?;
                }
                w.finish()
                    .map_err(|e| ReportError::arrow("writing JSON", e))?;
                writeln!(out).map_err(io_err)?;
            }
        }
    }
    out.flush().map_err(io_err)
}

/// Splits SQL text into statements at `;` outside quotes and comments.
///
/// Feed text with [`StatementSplitter::push`]; it returns the statements completed so far.
#[derive(Default)]
pub struct StatementSplitter {
    buf: String,
    state: SplitState,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum SplitState {
    #[default]
    Code,
    Single,
    Double,
    LineComment,
    BlockComment,
}

impl StatementSplitter {
    /// Adds text; returns every statement it completes (without the `;`, trimmed, non-empty).
    pub fn push(&mut self, text: &str) -> Vec<String> {
        let mut done = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match self.state {
                SplitState::Code => match c {
                    ';' => {
                        if let Some(s) = Self::take(&mut self.buf) {
                            done.push(s);
                        }
                        continue;
                    }
                    '\'' => self.state = SplitState::Single,
                    '"' => self.state = SplitState::Double,
                    '-' if chars.peek() == Some(&'-') => self.state = SplitState::LineComment,
                    '/' if chars.peek() == Some(&'*') => self.state = SplitState::BlockComment,
                    _ => {}
                },
                SplitState::Single if c == '\'' => self.state = SplitState::Code,
                SplitState::Double if c == '"' => self.state = SplitState::Code,
                SplitState::LineComment if c == '\n' => self.state = SplitState::Code,
                SplitState::BlockComment if c == '*' && chars.peek() == Some(&'/') => {
                    self.buf.push(c);
                    self.buf.push(chars.next().unwrap_or('/'));
                    self.state = SplitState::Code;
                    continue;
                }
                _ => {}
            }
            self.buf.push(c);
        }
        done
    }

    /// The statement left without a final `;`, if it has any content.
    pub fn finish(mut self) -> Option<String> {
        Self::take(&mut self.buf)
    }

    fn take(buf: &mut String) -> Option<String> {
        let s = std::mem::take(buf);
        if has_code(&s) {
            Some(s.trim().to_string())
        } else {
            None
        }
    }
}

/// True if the text has anything but whitespace and comments.
fn has_code(s: &str) -> bool {
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map(|(_, r)| r).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map(|(_, r)| r).unwrap_or("");
        } else {
            return !rest.is_empty();
        }
    }
}

/// Splits a whole SQL text into statements.
pub fn split_statements(text: &str) -> Vec<String> {
    let mut sp = StatementSplitter::default();
    let mut v = sp.push(text);
    v.extend(sp.finish());
    v
}

fn run_all(
    conn: &Connection,
    statements: &[String],
    format: SqlFormat,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    for (i, s) in statements.iter().enumerate() {
        if i > 0 && format == SqlFormat::Csv {
            writeln!(out).map_err(|e| ReportError::io("writing to", Path::new("<output>"), e))?;
        }
        let r = query(conn, s)?;
        write_result(&r, format, out)?;
    }
    Ok(())
}

/// The `sql` command: runs the statements of `input` against the views over `data` and writes
/// one result per statement to `out`.
///
/// Stops at the first failing statement with [`ReportError::Query`] (DuckDB's message), except
/// when standard input is a terminal: then the error is printed to stderr and the shell goes on
/// (the command still fails at the end).
pub fn run_sql(
    data: &Path,
    input: SqlInput<'_>,
    format: SqlFormat,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let conn = open_catalog(data)?;
    match input {
        SqlInput::Query(q) => run_all(&conn, &split_statements(q), format, out),
        SqlInput::File(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| ReportError::io("reading the SQL file", f, e))?;
            run_all(&conn, &split_statements(&text), format, out)
        }
        SqlInput::Stdin => {
            let stdin = std::io::stdin();
            let interactive = stdin.is_terminal();
            let mut sp = StatementSplitter::default();
            let mut first_error = None;
            let mut n = 0usize;
            let mut run_one = |s: &str, out: &mut dyn Write| -> Result<(), ReportError> {
                if n > 0 && format == SqlFormat::Csv {
                    writeln!(out)
                        .map_err(|e| ReportError::io("writing to", Path::new("<output>"), e))?;
                }
                n += 1;
                query(&conn, s).and_then(|r| write_result(&r, format, out))
            };
            let mut handle = |res: Result<(), ReportError>| -> Result<(), ReportError> {
                match res {
                    Ok(()) => Ok(()),
                    Err(e) if interactive => {
                        eprintln!("error: {e}");
                        first_error.get_or_insert(e);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            };
            for line in stdin.lock().lines() {
                let line = line.map_err(|e| ReportError::io("reading", Path::new("<stdin>"), e))?;
                for s in sp.push(&line).into_iter().chain(sp.push("\n")) {
                    handle(run_one(&s, out))?;
                }
            }
            if let Some(s) = sp.finish() {
                handle(run_one(&s, out))?;
            }
            match first_error {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_outside_quotes_and_comments() {
        let v = split_statements(
            "select 'a;b' as x; -- c;d\nselect \"q;\" from t /* ; */ ;\n  ;select 3",
        );
        assert_eq!(
            v,
            vec![
                "select 'a;b' as x",
                "-- c;d\nselect \"q;\" from t /* ; */",
                "select 3"
            ]
        );
        assert!(split_statements(" -- only a comment\n ; ").is_empty());
    }

    #[test]
    fn one_line_joins_duckdb_messages() {
        let m = "Parser Error: syntax error at or near \"SELEC\"\n\nLINE 1: SELEC 1\n        ^";
        assert_eq!(
            one_line(m),
            "Parser Error: syntax error at or near \"SELEC\" | LINE 1: SELEC 1"
        );
    }
}
