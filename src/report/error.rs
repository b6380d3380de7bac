//! The error type of the reporting layer (`sql` and `report` commands).
//!
//! Every failure carries enough context to be printed as one line; DuckDB's own message is kept
//! verbatim (joined onto one line) so that a bad query reads exactly as DuckDB reports it.

use std::io;
use std::path::{Path, PathBuf};

/// Errors of the `sql` and `report` commands.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The data directory does not exist (or is not a directory).
    #[error("data directory {} not found (solve a board first: age2048 solve --board 3x3 --data DIR)", path.display())]
    MissingData { path: PathBuf },

    /// The data directory holds nothing the command can use.
    #[error("no solved data under {}: {what}", path.display())]
    NoData { path: PathBuf, what: String },

    /// A user statement failed in DuckDB; `message` is DuckDB's message on one line.
    #[error("{message}")]
    Query { message: String },

    /// An internal DuckDB call failed (view creation, a report query).
    #[error("DuckDB, {context}: {message}")]
    DuckDb { context: String, message: String },

    /// Polars failed on a scan or an aggregation.
    #[error("Polars, {context}: {message}")]
    Polars { context: String, message: String },

    /// Arrow failed to format or convert a result.
    #[error("Arrow, {context}: {message}")]
    Arrow { context: String, message: String },

    /// A result column did not have the type the report expects.
    #[error("unexpected result shape in {context}: {message}")]
    Shape { context: String, message: String },

    /// A manifest could not be read or parsed.
    #[error("manifest {}: {message}", path.display())]
    Manifest { path: PathBuf, message: String },

    /// Drawing a figure failed.
    #[error("figure {figure}: {message}")]
    Plot { figure: String, message: String },

    /// Reading or writing a file failed.
    #[error("{context} {}: {source}", path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReportError {
    /// Process exit code for this error: 2 for problems of the input (bad query, missing or
    /// empty data directory, bad manifest), 1 for failures while producing output.
    pub fn exit_code(&self) -> i32 {
        match self {
            ReportError::MissingData { .. }
            | ReportError::NoData { .. }
            | ReportError::Query { .. }
            | ReportError::Manifest { .. } => 2,
            _ => 1,
        }
    }

    pub(crate) fn io(context: &'static str, path: &Path, source: io::Error) -> Self {
        ReportError::Io {
            context,
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn duck(context: impl Into<String>, e: duckdb::Error) -> Self {
        ReportError::DuckDb {
            context: context.into(),
            message: one_line(&e.to_string()),
        }
    }

    pub(crate) fn polars(context: impl Into<String>, e: polars::prelude::PolarsError) -> Self {
        ReportError::Polars {
            context: context.into(),
            message: one_line(&e.to_string()),
        }
    }

    pub(crate) fn arrow(context: impl Into<String>, e: duckdb_arrow::error::ArrowError) -> Self {
        ReportError::Arrow {
            context: context.into(),
            message: one_line(&e.to_string()),
        }
    }

    pub(crate) fn shape(context: impl Into<String>, message: impl Into<String>) -> Self {
        ReportError::Shape {
            context: context.into(),
            message: message.into(),
        }
    }

    pub(crate) fn plot(figure: &str, e: impl std::fmt::Display) -> Self {
        ReportError::Plot {
            figure: figure.to_string(),
            message: one_line(&e.to_string()),
        }
    }
}

/// Joins a multi-line message (DuckDB adds `LINE 1: ...` and a caret line) onto one line.
pub fn one_line(message: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c.is_whitespace()))
        .collect();
    parts.join(" | ")
}
