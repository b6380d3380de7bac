//! What a check of a data directory finds wrong: one [`Problem`] a file, what [`verify`]
//! reports and [`StoreError::damaged`] turns into a reader's refusal.
//!
//! [`verify`]: super::verify
//! [`StoreError::damaged`]: super::StoreError::damaged

use std::fmt;

/// One thing wrong in a data directory.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub board: String,
    pub variant: String,
    /// The file or folder it is about, relative to the data directory (`/`-separated).
    pub path: String,
    pub what: What,
}

/// What is wrong with a file.
#[derive(Clone, Debug, PartialEq)]
pub enum What {
    /// Listed by the manifest, not on disk.
    Missing,
    /// On disk at another size than listed.
    Size { listed: u64, found: u64 },
    /// On disk at its size, with other bytes.
    Digest,
    /// On disk in a partition of the board and variant, not listed by the manifest.
    Unlisted,
    /// Could not be read (the operating system's or the decoder's words).
    Unreadable(String),
    /// Partitions without a manifest: a solve that did not finish (or is running).
    Unfinished,
    /// No manifest and no files: the board and variant are not solved here.
    NotSolved,
    /// The manifest does not match the layout or itself.
    Manifest(String),
    /// The `ages` table or a part's row count disagrees with the manifest.
    Ages(String),
    /// The variants of one board were solved under different symmetry groups.
    MixedSymmetry(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, Message(self))
    }
}

impl Problem {
    /// What is wrong, without the path.
    pub fn message(&self) -> String {
        Message(self).to_string()
    }
}

struct Message<'a>(&'a Problem);

impl fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (b, v) = (&self.0.board, &self.0.variant);
        match &self.0.what {
            What::Missing => write!(f, "missing (its manifest lists it)"),
            What::Size { listed, found } => {
                write!(f, "{found} bytes, its manifest lists {listed}")
            }
            What::Digest => write!(f, "damaged: its SHA-256 differs from its manifest's"),
            What::Unlisted => write!(
                f,
                "not listed by the manifest of board {b}, variant {v} (a stray or foreign file)"
            ),
            What::Unreadable(e) => write!(f, "cannot be read: {e}"),
            What::Unfinished => write!(
                f,
                "board {b}, variant {v} has files but no manifest: an unfinished solve (finish it with `age2048 solve --board {b} --variant {v}`)"
            ),
            What::NotSolved => write!(f, "board {b}, variant {v} is not solved here"),
            What::Manifest(s) | What::Ages(s) | What::MixedSymmetry(s) => write!(f, "{s}"),
        }
    }
}

impl Problem {
    pub(super) fn new(board: &str, variant: &str, path: impl Into<String>, what: What) -> Problem {
        Problem {
            board: board.to_string(),
            variant: variant.to_string(),
            path: path.into(),
            what,
        }
    }
}
