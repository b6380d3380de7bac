//! The error type of the reporting layer (`report` and `compare`).
//!
//! Every failure carries enough context to be printed as one line; DuckDB's and Polars' own
//! messages are kept verbatim (joined onto one line).

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Kind};
use crate::query::error::one_line;
use crate::query::QueryError;
use crate::store::StoreError;

/// Errors of the `report` and `compare` commands.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),

    #[error(transparent)]
    Query(#[from] QueryError),

    /// The data directory holds nothing the command can use.
    #[error("no solved data under {}: {what}", path.display())]
    NoData { path: PathBuf, what: String },

    /// The command line asks for something the data cannot give.
    #[error("{0}")]
    Input(String),

    /// An internal DuckDB call failed (a report query).
    #[error("DuckDB, {context}: {message}")]
    DuckDb { context: String, message: String },

    /// Polars failed on an aggregation.
    #[error("Polars, {context}: {message}")]
    Polars { context: String, message: String },

    /// Arrow failed to format or convert a result.
    #[error("Arrow, {context}: {message}")]
    Arrow { context: String, message: String },

    /// A result column did not have the type the report expects.
    #[error("unexpected result shape in {context}: {message}")]
    Shape { context: String, message: String },

    /// Drawing a figure failed.
    #[error("figure {figure}: {message}")]
    Plot { figure: String, message: String },

    /// Writing an output file failed.
    #[error("{context} {}", path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ErrorKind for ReportError {
    fn kind(&self) -> Kind {
        match self {
            ReportError::Store(e) => e.kind(),
            ReportError::Query(e) => e.kind(),
            ReportError::NoData { .. } => Kind::Data,
            ReportError::Input(_) => Kind::Input,
            ReportError::Io { .. } => Kind::Data,
            ReportError::DuckDb { .. }
            | ReportError::Polars { .. }
            | ReportError::Arrow { .. }
            | ReportError::Shape { .. }
            | ReportError::Plot { .. } => Kind::Internal,
        }
    }
}

impl ReportError {
    pub(crate) fn io(context: &'static str, path: &Path, source: io::Error) -> Self {
        ReportError::Io {
            context,
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn polars(context: impl Into<String>, e: polars::prelude::PolarsError) -> Self {
        ReportError::Polars {
            context: context.into(),
            message: one_line(&e.to_string()),
        }
    }

    pub(crate) fn arrow(context: impl Into<String>, e: arrow::error::ArrowError) -> Self {
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
