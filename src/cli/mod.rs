//! The command line: one file per command, each turning raw arguments (clap) into a checked
//! configuration, then running it. Every failure reaches `main` as a [`CliError`] whose
//! message names the problem (board, file, variant) and whose kind picks the exit status:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done (also when standard output is closed early, e.g. piped into `head`) |
//! | 1 | internal fault: a bug, or the machine failing the program (e.g. output device full) |
//! | 2 | bad input (board, variant, flag, query, file) or bad data (missing, unsolved, damaged, busy) |

pub mod best;
pub mod evaluate;
pub mod guaranteed;
pub mod output;
pub mod play;
mod progress;
#[cfg(feature = "report")]
pub mod report;
#[cfg(feature = "report")]
pub mod serve;
pub mod solve;
pub mod solved;
#[cfg(feature = "report")]
pub mod sql;
pub mod terminal;
mod trace;
pub mod verify;

use std::io;

use clap::{Parser, Subcommand};

use crate::error::{ErrorKind, Kind};
use crate::query::QueryError;
use crate::rules::{BoardError, VariantError};
use crate::solver::SolveError;
use crate::store::StoreError;

#[derive(Parser, Debug)]
#[command(
    name = "age2048",
    version,
    about = "Strongly solves 2048 on small boards, age by age"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// One value, parsed once at the start: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Enumerate every reachable state and compute exact values; write them under --data.
    Solve(solve::SolveArgs),
    /// Print the q-value of each move and the state value of boards, from the solved index.
    Best(best::BestArgs),
    /// Play games against the solution: many (Monte Carlo), one move by move, or yourself.
    Play(play::PlayArgs),
    /// The regret of every move of an agent's logged games, as tables and a figure.
    Evaluate(evaluate::EvaluateArgs),
    /// The largest tile the player can force whatever the spawns (the spawner picks cell and value).
    Guaranteed(guaranteed::GuaranteedArgs),
    /// Check every file of the solved data against its manifest (size, SHA-256) and the layout.
    Verify(verify::VerifyArgs),
    #[cfg(feature = "report")]
    /// Run SQL (DuckDB) over the solved data: views states, afterstates, ages, solves.
    Sql(sql::SqlArgs),
    #[cfg(feature = "report")]
    /// Render every figure and table from the solved data.
    Report(report::ReportArgs),
    #[cfg(feature = "report")]
    /// Compare variants of a board: values at the starts, per-age differences, changed best moves.
    Compare(report::CompareArgs),
    #[cfg(feature = "report")]
    /// Serve the solution in the browser: play, analyse any board, the figures, SQL (and a JSON API).
    Serve(serve::ServeArgs),
    #[cfg(feature = "report")]
    /// A query process of `serve` (started by the server, not by hand).
    #[command(name = "serve-sql-worker", hide = true)]
    ServeSqlWorker(serve::WorkerArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Solve(a) => solve::run(&a),
        Command::Best(a) => best::run(&a),
        Command::Play(a) => play::run(&a),
        Command::Evaluate(a) => evaluate::run(&a),
        Command::Guaranteed(a) => guaranteed::run(&a),
        Command::Verify(a) => verify::run(&a),
        #[cfg(feature = "report")]
        Command::Sql(a) => sql::run(&a),
        #[cfg(feature = "report")]
        Command::Report(a) => report::run_report(&a),
        #[cfg(feature = "report")]
        Command::Compare(a) => report::run_compare(&a),
        #[cfg(feature = "report")]
        Command::Serve(a) => serve::run(&a),
        #[cfg(feature = "report")]
        Command::ServeSqlWorker(a) => serve::run_worker(&a),
    }
}

/// Every error a command can end with.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error(transparent)]
    Variant(#[from] VariantError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Solve(#[from] SolveError),
    #[error(transparent)]
    Query(#[from] QueryError),
    #[cfg(feature = "report")]
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    #[cfg(feature = "report")]
    #[error(transparent)]
    Serve(#[from] crate::serve::ServeError),
    /// A flag or argument that cannot be used.
    #[error("{0}")]
    Usage(String),
    /// `verify` found problems (listed on standard output).
    #[error("{}: {problems} problem{} found (listed above)", dir.display(), if *problems == 1 { "" } else { "s" })]
    Damaged {
        dir: std::path::PathBuf,
        problems: usize,
    },
    /// Writing the command's output failed.
    #[error("writing to {what}")]
    Output {
        what: &'static str,
        #[source]
        source: io::Error,
    },
}

impl CliError {
    /// True when standard output was closed by its reader: not a failure worth a message.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Output { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }

    pub(crate) fn stdout(source: io::Error) -> CliError {
        CliError::Output {
            what: "standard output",
            source,
        }
    }
}

impl ErrorKind for CliError {
    fn kind(&self) -> Kind {
        match self {
            CliError::Board(e) => e.kind(),
            CliError::Variant(e) => e.kind(),
            CliError::Store(e) => e.kind(),
            CliError::Solve(e) => e.kind(),
            CliError::Query(e) => e.kind(),
            #[cfg(feature = "report")]
            CliError::Report(e) => e.kind(),
            #[cfg(feature = "report")]
            CliError::Serve(e) => e.kind(),
            CliError::Usage(_) => Kind::Input,
            CliError::Damaged { .. } => Kind::Data,
            CliError::Output { .. } => Kind::Internal,
        }
    }
}

pub use crate::error::one_line;

/// Starts the global thread pool with `threads` workers (all cores by default).
pub(crate) fn set_threads(threads: Option<usize>) -> Result<(), CliError> {
    if let Some(n) = threads {
        if n == 0 {
            return Err(CliError::Usage("--threads must be at least 1".into()));
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| CliError::Usage(format!("cannot start {n} threads: {e}")))?;
    }
    Ok(())
}
