//! `age2048 sql`: statements of the command line, a file or standard input, run against the
//! catalog's views, one result per statement as a table, CSV or JSON.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use arrow::record_batch::RecordBatch;
use duckdb::Connection;

use super::output::{say, Format};
use super::CliError;
use crate::query::catalog;
use crate::query::sql::{query, split_statements, QueryResult, StatementSplitter};
use crate::query::text::{all_text, printable, Target, LOSSLESS};
use crate::query::QueryError;
use crate::store::{Store, StoreError};

/// Query the solved dataset with SQL (embedded DuckDB).
///
/// Views: states(board, variant, age, id, value, terminal, moves, best, gap, empty),
/// afterstates(board, variant, age, id, value, empty) and ages(board, variant, age, n_states,
/// n_afterstates, n_terminal_states, mean_empty_cells_afterstates, best_afterstate_value,
/// mean_state_value, mean_action_gap, frac_gap_lt_1, n_reached), over every board and
/// variant in the data directory; the macro max_tile(id) gives a board's largest tile.
/// Without QUERY or --file, statements are read from stdin, one result per statement.
#[derive(Debug, Clone, clap::Args)]
pub struct SqlArgs {
    /// Data directory written by `age2048 solve`.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// SQL to run (several statements separated by `;` give one result each).
    #[arg(conflicts_with = "file")]
    pub query: Option<String>,
    /// Read the SQL from this file.
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Runs `age2048 sql`, writing results to standard output.
pub fn run(a: &SqlArgs) -> Result<(), CliError> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    run_sql(a, &mut out)?;
    out.flush().map_err(CliError::stdout)
}

/// Writes one result in the chosen format. Every column is made printable first (see
/// [`crate::query::text`]); should a writer still fail, the result is printed as text.
fn write_result(result: &QueryResult, format: Format, out: &mut dyn Write) -> Result<(), CliError> {
    let io_err = CliError::stdout;
    let fmt_err = |e: arrow::error::ArrowError| {
        CliError::Query(QueryError::DuckDb {
            context: "formatting the result".into(),
            message: e.to_string(),
        })
    };
    if result.schema.fields().is_empty() {
        return Ok(());
    }
    let batch = result.concat()?;
    let render = |b: &RecordBatch| -> Result<Vec<u8>, arrow::error::ArrowError> {
        let mut buf = Vec::new();
        match format {
            Format::Table => {
                let text = arrow::util::pretty::pretty_format_batches(std::slice::from_ref(b))?;
                let n = b.num_rows();
                let _ = writeln!(buf, "{text}");
                let _ = writeln!(buf, "({n} row{})", if n == 1 { "" } else { "s" });
            }
            Format::Csv => {
                let mut w = arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(&mut buf);
                w.write(b)?;
            }
            Format::Json => {
                if b.num_rows() == 0 {
                    buf.extend_from_slice(b"[]\n");
                } else {
                    let mut w = arrow::json::ArrayWriter::new(&mut buf);
                    w.write(b)?;
                    w.finish()?;
                    buf.push(b'\n');
                }
            }
        }
        Ok(buf)
    };
    let target = match format {
        Format::Table => Target::Table,
        Format::Csv => Target::Csv,
        Format::Json => Target::Json,
    };
    let bytes = render(&printable(&batch, target))
        .or_else(|_| render(&all_text(&batch)))
        .map_err(fmt_err)?;
    out.write_all(&bytes).map_err(io_err)?;
    out.flush().map_err(io_err)
}

fn run_all(
    conn: &Connection,
    statements: &[String],
    format: Format,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    for (i, s) in statements.iter().enumerate() {
        if i > 0 && format == Format::Csv {
            writeln!(out).map_err(CliError::stdout)?;
        }
        let r = query(conn, s)?;
        write_result(&r, format, out)?;
    }
    Ok(())
}

/// The `sql` command: runs the statements of the query, the file or standard input against the
/// views over the data directory and writes one result per statement to `out`.
///
/// Stops at the first failing statement with [`ReportError::Query`] (DuckDB's message), except
/// when standard input is a terminal: then the error is printed to stderr and the shell goes on
/// (the command still fails at the end).
fn run_sql(a: &SqlArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let store = Store::open(&a.data)?;
    let (conn, contents) = catalog::open_with_contents(&store)?;
    conn.execute_batch(LOSSLESS)
        .map_err(|e| QueryError::DuckDb {
            context: "asking for lossless Arrow results".into(),
            message: e.to_string(),
        })?;
    for p in &contents.unfinished {
        say(&format!(
            "note: not shown: board {}, variant {} is unfinished ({})",
            p.board,
            p.variant,
            store.root().join(&p.path).display()
        ));
    }
    let format = a.format;
    match (&a.query, &a.file) {
        (Some(q), _) => run_all(&conn, &split_statements(q), format, out),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f).map_err(|e| StoreError::io(f, e))?;
            run_all(&conn, &split_statements(&text), format, out)
        }
        (None, None) => {
            let stdin = std::io::stdin();
            let interactive = stdin.is_terminal();
            let mut sp = StatementSplitter::default();
            let mut first_error = None;
            let mut n = 0usize;
            let mut run_one = |s: &str, out: &mut dyn Write| -> Result<(), CliError> {
                if n > 0 && format == Format::Csv {
                    writeln!(out).map_err(CliError::stdout)?;
                }
                n += 1;
                let r = query(&conn, s)?;
                write_result(&r, format, out)
            };
            let mut handle = |res: Result<(), CliError>| -> Result<(), CliError> {
                match res {
                    Ok(()) => Ok(()),
                    // A user's statement failing in the interactive shell: say so, go on.
                    Err(e @ CliError::Query(QueryError::Sql { .. })) if interactive => {
                        say(&format!("error: {e}"));
                        first_error.get_or_insert(e);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            };
            for line in stdin.lock().lines() {
                let line = line.map_err(|e| StoreError::io("<stdin>", e))?;
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
