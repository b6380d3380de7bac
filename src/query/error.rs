//! Errors of the read side: the store's and the index's, boards that are not in the solved
//! set, SQL that DuckDB rejects.

use std::path::PathBuf;

use crate::error::{ErrorKind, Kind};
use crate::index::IndexError;
use crate::rules::{BoardError, VariantError};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error(transparent)]
    Variant(#[from] VariantError),
    /// An age index is damaged, or is not the file it should be.
    #[error("{}", path.display())]
    Index {
        path: PathBuf,
        #[source]
        source: IndexError,
    },
    /// The board is not a state the solve reached.
    #[error("board '{text}' is not a reachable {board} board for variant {variant} (age {age})")]
    Unreachable {
        text: String,
        board: String,
        variant: String,
        age: u32,
    },
    /// The board holds a tile above its cell's cap in a restricted solve: never a state of it.
    #[error("board '{text}' is outside the caps of {what}")]
    OutsideCaps { text: String, what: String },
    /// A solve in the policy layout asked for what only values give.
    #[error("{board} {variant} is stored in the policy layout (the optimal move of every state, no values): {what} need the full or compact layout (`age2048 solve --layout full|compact`)")]
    NoValues {
        board: String,
        variant: String,
        what: String,
    },
    /// A line of an agent's log (`evaluate`) that is not in the documented format, or whose
    /// move cannot be played on its board.
    #[error("{name} line {line}: {what}")]
    Log {
        name: String,
        line: usize,
        what: String,
    },
    /// A line of an agent's log whose board cannot be evaluated (malformed, unreachable).
    #[error("{name} line {line}")]
    LogLine {
        name: String,
        line: usize,
        #[source]
        source: Box<QueryError>,
    },
    /// A statement the user gave failed in DuckDB (DuckDB's message, on one line).
    #[error("{message}")]
    Sql { message: String },
    /// DuckDB failed on something this program asked of it.
    #[error("DuckDB, {context}: {message}")]
    DuckDb { context: String, message: String },
}

impl ErrorKind for QueryError {
    fn kind(&self) -> Kind {
        match self {
            QueryError::Store(e) => e.kind(),
            QueryError::Board(e) => e.kind(),
            QueryError::Variant(e) => e.kind(),
            QueryError::Index { source, .. } => source.kind(),
            QueryError::LogLine { source, .. } => source.kind(),
            QueryError::Unreachable { .. }
            | QueryError::OutsideCaps { .. }
            | QueryError::Sql { .. }
            | QueryError::Log { .. }
            | QueryError::NoValues { .. } => Kind::Input,
            QueryError::DuckDb { .. } => Kind::Internal,
        }
    }
}

pub type Result<T, E = QueryError> = std::result::Result<T, E>;

/// Joins a multi-line message (DuckDB adds `LINE 1: ...` and a caret line) onto one line.
pub fn one_line(message: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c.is_whitespace()))
        .collect();
    parts.join(" | ")
}
