//! Command-line arguments of the `sql` and `report` subcommands, and their entry points.
//!
//! `main.rs` wires them as `Sql(SqlArgs)` and `Report(ReportArgs)` and, on error, prints the
//! error on one line to stderr and exits with [`ReportError::exit_code`] (2 for a bad query or a
//! missing data directory).

use std::io::Write;
use std::path::PathBuf;

use crate::report::{run_report, ReportError, ReportSummary};
use crate::sql::{run_sql, SqlFormat, SqlInput};

/// Query the solved dataset with SQL (embedded DuckDB).
///
/// Views: states(board, variant, age, id, value, terminal, moves, best, gap, empty),
/// afterstates(board, variant, age, id, value, empty) and ages(board, variant, age, n_states,
/// n_afterstates, n_terminal_states, mean_empty_cells_afterstates, best_afterstate_value,
/// mean_state_value, mean_action_gap, frac_gap_lt_1), over every board and variant in the data
/// directory; the macro max_tile(id) gives a board's largest tile. Without QUERY or --file,
/// statements are read from stdin, one result per statement.
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
    #[arg(long, value_enum, default_value_t = SqlFormat::Table)]
    pub format: SqlFormat,
}

/// Draw the figures and tables of the solved dataset (SVG, PNG, CSV, Markdown, index.html).
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Data directory written by `age2048 solve`.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Output folder (created; files in it are replaced atomically).
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
}

/// Runs `age2048 sql`, writing results to stdout.
pub fn run_sql_cmd(args: &SqlArgs) -> Result<(), ReportError> {
    let input = match (&args.query, &args.file) {
        (Some(q), _) => SqlInput::Query(q),
        (None, Some(f)) => SqlInput::File(f),
        (None, None) => SqlInput::Stdin,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let r = run_sql(&args.data, input, args.format, &mut out);
    let _ = out.flush();
    r
}

/// Runs `age2048 report`, printing where the report went.
pub fn run_report_cmd(args: &ReportArgs) -> Result<ReportSummary, ReportError> {
    let s = run_report(&args.data, &args.out)?;
    println!(
        "report: {} figures, {} tables for boards {} in {}",
        s.figures.len(),
        s.tables.len(),
        s.boards.join(", "),
        s.out.join("index.html").display()
    );
    Ok(s)
}
