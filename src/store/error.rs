//! Errors of the store: a file that cannot be read or written, damaged bytes, a missing or
//! unsolved data directory, a directory another process is writing.

use std::path::PathBuf;

use crate::error::{ErrorKind, Kind};

/// Errors of the store, each naming the file or directory it is about.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing `path` failed (the source is the operating system's error).
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not what the store wrote: truncated, flipped, of another layout.
    #[error("{}: damaged: {what}", path.display())]
    Corrupt { path: PathBuf, what: String },
    /// A Parquet file could not be encoded or decoded.
    #[error("{}: Parquet", path.display())]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// An Arrow batch could not be built (a bug: the columns are ours).
    #[error("{}: building the Arrow batch", path.display())]
    Arrow {
        path: PathBuf,
        #[source]
        source: arrow::error::ArrowError,
    },
    /// The data directory does not exist.
    #[error("data directory {} does not exist (solve a board first: age2048 solve --board 3x3 --data DIR)", path.display())]
    MissingDir { path: PathBuf },
    /// Another process is writing the data directory.
    #[error("{} is being solved by {} (wait for it, or pass --wait)", dir.display(), pid.map_or_else(|| "another process".to_string(), |p| format!("process {p}")))]
    Busy { dir: PathBuf, pid: Option<u32> },
    /// A finished solve whose files do not match its manifest.
    #[error("{}: board {board}, variant {variant} is damaged: {problem} (`age2048 verify --data {}` lists every problem; `age2048 solve` solves it again)", dir.display(), dir.display())]
    Damaged {
        dir: PathBuf,
        board: String,
        variant: String,
        problem: String,
    },
    /// The data directory holds no finished solve at all.
    #[error("nothing is solved in {}{note} (solve a board first: age2048 solve --board 3x3 --data {})", dir.display(), dir.display())]
    NothingSolved {
        dir: PathBuf,
        /// Empty, or what was looked for, or a note on the unfinished solves found.
        note: String,
    },
    /// A board solved under one symmetry group, asked to be solved under another.
    #[error("board {board} in {} is solved under symmetry {existing} ({variant}); one directory holds one group per board: solve with --symmetry {existing}, or pass --force to solve it again under {wanted} (and solve its other variants again too)", dir.display())]
    MixedSymmetry {
        dir: PathBuf,
        board: String,
        variant: String,
        existing: String,
        wanted: Box<str>,
    },
    /// Too little free disk to write the next age (nothing of it was written; running the
    /// same command again resumes once there is room).
    #[error("{}: not enough free disk for {what}: about {} needed (including the reserve of --min-free {}), {} free; make room and run the same command again to resume", dir.display(), mb(*need), mb(*reserve), mb(*free))]
    DiskFull {
        dir: PathBuf,
        what: String,
        need: u64,
        reserve: u64,
        free: u64,
    },
    /// The data directory holds no finished solve of this board and variant.
    #[error("no solved data for board {board}, variant {variant} in {} (run `age2048 solve --board {board} --variant {variant}` first)", dir.display())]
    NotSolved {
        dir: PathBuf,
        board: String,
        variant: String,
    },
}

impl StoreError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// A reader's refusal of a damaged solve, naming the first problem found.
    pub fn damaged(dir: impl Into<PathBuf>, problem: &super::problem::Problem) -> StoreError {
        StoreError::Damaged {
            dir: dir.into(),
            board: problem.board.clone(),
            variant: problem.variant.clone(),
            problem: problem.to_string(),
        }
    }

    pub fn corrupt(path: impl Into<PathBuf>, what: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            path: path.into(),
            what: what.into(),
        }
    }
}

impl ErrorKind for StoreError {
    fn kind(&self) -> Kind {
        match self {
            StoreError::Arrow { .. } => Kind::Internal,
            // The user asked for another group than the directory holds.
            StoreError::MixedSymmetry { .. } => Kind::Input,
            StoreError::Io { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Parquet { .. }
            | StoreError::MissingDir { .. }
            | StoreError::Busy { .. }
            | StoreError::Damaged { .. }
            | StoreError::NothingSolved { .. }
            | StoreError::NotSolved { .. }
            | StoreError::DiskFull { .. } => Kind::Data,
        }
    }
}

/// `bytes` in megabytes, for messages.
fn mb(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
