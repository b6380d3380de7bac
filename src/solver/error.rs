//! Errors of the solver: the store's (a file that cannot be written or is damaged), work files
//! that contradict each other, and internal faults.

use std::path::PathBuf;

use crate::error::{ErrorKind, Kind};
use crate::index::IndexError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Encoding an age index failed (the solver handed it something it should not have).
    #[error("{}: encoding the age index", path.display())]
    Index {
        path: PathBuf,
        #[source]
        source: IndexError,
    },
    /// The board has no reachable state under this spawn rule (e.g. a 1x1 board).
    #[error("board {board}: no reachable state")]
    NoState { board: String },
    /// A move or a spawn leads out of the layers the forward pass stored: the work files are
    /// damaged or belong to different solves.
    #[error("board {board}, age {age}: a {step} leads to a board missing from the forward layers (damaged or mixed work files; solve again with --force)")]
    Inconsistent {
        board: String,
        age: u32,
        step: &'static str,
    },
    /// The memory budget (`solve --memory`) cannot be kept to: what it is and what is needed.
    #[error("{0}")]
    Budget(String),
    /// A solve over several processes that cannot go on as asked (another number of
    /// processes than its unfinished work files were made by): what differs.
    #[error("{0}")]
    Processes(String),
    /// A fault of this program.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ErrorKind for SolveError {
    fn kind(&self) -> Kind {
        match self {
            SolveError::Store(e) => e.kind(),
            SolveError::Index { .. } | SolveError::Internal(_) => Kind::Internal,
            SolveError::NoState { .. } | SolveError::Budget(_) | SolveError::Processes(_) => {
                Kind::Input
            }
            SolveError::Inconsistent { .. } => Kind::Data,
        }
    }
}

pub type Result<T, E = SolveError> = std::result::Result<T, E>;
