//! Library error types (thiserror), each carrying its context: board, age, variant, file.

use std::path::PathBuf;

/// Errors about board shapes, board text and symmetry groups (the rules do no I/O).
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error("bad board size '{text}': {reason}")]
    Shape { text: String, reason: String },
    #[error("bad board '{text}': {reason}")]
    Parse { text: String, reason: String },
    #[error("unknown symmetry group '{0}' (expected full, flips or none)")]
    Symmetry(String),
}

/// Errors about variant names and spawn parameters.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    #[error("unknown variant '{0}' (expected expectation, optimistic, pessimistic, goal-<T> or guaranteed-<T>)")]
    Unknown(String),
    #[error("bad goal tile in variant '{name}': {reason}")]
    Goal { name: String, reason: String },
    #[error("bad --p4 value '{0}': the probability of a 4 must be a number in [0, 1]")]
    P4(String),
    #[error("variant '{0}' is listed twice")]
    Duplicate(String),
}

/// Errors of the solver and its store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error(transparent)]
    Variant(#[from] VariantError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: corrupt file: {what}")]
    Corrupt { path: PathBuf, what: String },
    #[error("{path}: {what}")]
    Parquet { path: PathBuf, what: String },
    #[error("no solved data for board {board}, variant {variant} in {dir} (run `age2048 solve --board {board}` first)")]
    NotSolved {
        dir: PathBuf,
        board: String,
        variant: String,
    },
    #[error("board '{text}' is not a reachable {board} board for variant {variant} (age {age})")]
    Unreachable {
        text: String,
        board: String,
        variant: String,
        age: u32,
    },
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
