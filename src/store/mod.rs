//! The store: the single owner of every on-disk format of a data directory except the age
//! index's own bytes (the `index` room encodes those; the store writes and lists them).
//!
//! - [`layout`]: every path, the escaping of partition values, the one partition walker;
//! - [`schema`]: the columns of the tables, with their Arrow and DuckDB types;
//! - [`parquet`]: the Parquet writers, and a reader of named columns;
//! - [`manifest`]: the manifest of a solved board and variant;
//! - [`parts`]: which part of a distributed solve holds a board;
//! - [`work`]: the work files of an unfinished solve (its layer files in the compact format of
//!   `idcodec`);
//! - [`atomic`]: the one durable, atomic way a file reaches the disk;
//! - [`lock`]: one writer per data directory (an advisory lock on `DIR/.lock`);
//! - [`verify`]: the files of every solve against its manifest (sizes, digests, layout).
//!   What it finds is a list of [`verify::Problem`]s (`problem`, below the errors); the seals
//!   that spare it hashing unchanged files are `seal`'s.
//! - [`evaluation`]: the tables `evaluate` writes about an agent's moves (outside a data
//!   directory, in the folder given by `--out`).
//!
//! Imports inside the store point one way: `problem` and `error` at the bottom, `verify` at
//! the top (it checks a [`Store`], which seals what it writes through `seal`, not `verify`).
//!
//! The solver and the readers reach the disk only through here (the query room memory-maps
//! the index files the layout names).

pub mod atomic;
mod error;
pub mod evaluation;
pub mod idcodec;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod parquet;
pub mod parts;
mod problem;
pub mod schema;
mod seal;
pub mod verify;
pub mod work;

use std::fs;
use std::path::{Path, PathBuf};

use crate::rules::Shape;
use seal::MemorySeals;

pub use atomic::TempFile;
pub use error::{Result, StoreError};
pub use layout::{Layout, Partition};
pub use manifest::{
    AgeStats, FileEntry, IndexEntry, LayoutKind, Manifest, PolicyEntry, PolicySymbols, Storage,
    Timings, LAYOUT_VERSION,
};
pub use parquet::{
    rows_per_group, ColumnData, FileMeta, PartWriter, StatesColumns, MIN_ROWS_PER_GROUP,
    ROWS_PER_GROUP,
};

/// A data directory.
#[derive(Clone, Debug)]
pub struct Store {
    layout: Layout,
    /// A reader that must not write (`serve` over published data): the seals of its checks,
    /// by seal file, kept here instead of on disk.
    seals: Option<std::sync::Arc<MemorySeals>>,
}

impl Store {
    /// The store over `root` (which need not exist yet: `solve` creates it).
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store {
            layout: Layout::new(root),
            seals: None,
        }
    }

    /// [`Store::open`] for a reader that writes nothing into the directory (which may be a
    /// read-only mount): the seals its checks make stay in this process's memory.
    pub fn open_read_only(root: impl Into<PathBuf>) -> Result<Store> {
        let mut s = Store::open(root)?;
        s.seals = Some(Default::default());
        Ok(s)
    }

    /// The in-memory seals of a read-only store (`None`: seals are files).
    pub(crate) fn memory_seals(&self) -> Option<&MemorySeals> {
        self.seals.as_deref()
    }

    /// The store over an existing data directory; [`StoreError::MissingDir`] otherwise.
    pub fn open(root: impl Into<PathBuf>) -> Result<Store> {
        let root = root.into();
        if !root.is_dir() {
            return Err(StoreError::MissingDir { path: root });
        }
        Ok(Store::new(root))
    }

    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The store as the writer of part `part` of `parts` of a distributed solve sees it: the
    /// files it writes are that part's ([`Layout::with_part`]).
    pub fn with_part(mut self, part: u32, parts: parts::Parts) -> Store {
        self.layout = self.layout.with_part(part, parts);
        self
    }

    /// Path relative to the data directory, as manifests list it.
    pub fn relative(&self, path: &Path) -> String {
        self.layout.relative(path)
    }

    pub fn read_manifest(&self, board: Shape, variant: &str) -> Result<Manifest> {
        manifest::read(&self.layout, board, variant)
    }

    /// Writes the manifest of a finished solve (last, atomically), then seals its files: a
    /// reader hashes again only the files changed since (see [`verify`]).
    pub fn write_manifest(&self, board: Shape, m: &Manifest) -> Result<String> {
        let digest = manifest::write(&self.layout, board, m)?;
        seal::manifest(&self.layout, self.memory_seals(), board, m);
        Ok(digest)
    }

    /// Every manifest of the directory, with the board and variant of its path; a manifest
    /// that cannot be read is returned as its error.
    pub fn manifests(&self) -> Vec<(Partition, Result<Manifest>)> {
        self.layout
            .manifests()
            .into_iter()
            .map(|p| {
                let m = manifest::read_path(&p.dir);
                (p, m)
            })
            .collect()
    }

    /// Removes the partitions and manifest of one board and variant (before a fresh solve
    /// writes them). The manifest goes first: without it nothing else is trusted.
    pub fn clear_variant(&self, board: Shape, variant: &str) -> Result<()> {
        for m in [
            self.layout.manifest_file(board, variant),
            self.layout.seal_file(board, variant),
        ] {
            match fs::remove_file(&m) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io(&m, e)),
            }
        }
        for table in layout::VARIANT_FOLDERS {
            let dir = self.layout.partition(table, board, variant);
            match fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io(&dir, e)),
            }
        }
        Ok(())
    }

    /// The bytes of a file of the data directory (a policy file the reach pass reads back).
    pub fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        fs::read(path).map_err(|e| StoreError::io(path, e))
    }

    /// Writes a file durably and atomically; returns its manifest entry.
    pub fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<FileEntry> {
        let sha256 = atomic::write(path, bytes)?;
        Ok(self.entry(path, bytes, sha256))
    }

    /// Writes a file atomically, durable after the next [`Store::sync`]; returns its entry.
    pub fn write_file_batched(&self, path: &Path, bytes: &[u8]) -> Result<FileEntry> {
        let sha256 = atomic::write_batched(path, bytes)?;
        Ok(self.entry(path, bytes, sha256))
    }

    /// The `states` part at `path`, written row group by row group under its temporary name
    /// until [`Store::commit_part`].
    pub fn states_part(&self, path: &Path, meta: &FileMeta) -> Result<PartWriter<TempFile>> {
        PartWriter::states(path, TempFile::create(path)?, meta)
    }

    /// The `afterstates` part at `path` (see [`Store::states_part`]).
    pub fn afterstates_part(&self, path: &Path, meta: &FileMeta) -> Result<PartWriter<TempFile>> {
        PartWriter::afterstates(path, TempFile::create(path)?, meta)
    }

    /// Puts a part in place, durable after the next [`Store::sync`]; returns its entry.
    pub fn commit_part(&self, part: PartWriter<TempFile>) -> Result<FileEntry> {
        let file = part.finish()?;
        let path = self.relative(file.path());
        let (bytes, sha256) = file.commit_batched()?;
        Ok(FileEntry {
            path,
            bytes,
            sha256,
        })
    }

    fn entry(&self, path: &Path, bytes: &[u8], sha256: String) -> FileEntry {
        FileEntry {
            path: self.relative(path),
            bytes: bytes.len() as u64,
            sha256,
        }
    }

    /// An upper estimate of the bytes one age of `boards` states and afterstates takes on disk,
    /// for variants stored as `storages` say: per board and variant its Parquet rows (≈ 12.5
    /// bytes measured on 3x3) and index entry, with room to spare, or in the compact layout
    /// without Parquet at that age the index alone (an afterstate id and a value of at most 8
    /// bytes), in the policy layout a move; and the state values a resume keeps (8 bytes a
    /// variant).
    pub fn age_bytes_estimate(boards: u64, storages: &[Storage], age: u32) -> u64 {
        let per_board: u64 = storages
            .iter()
            .map(|s| match (s.parquet_at(age), s.has_index()) {
                (true, _) => 32,
                (false, true) => 20,
                // A policy file (≈ 2.2 bits a state) and the state values a resume keeps.
                (false, false) => 9,
            })
            .sum();
        boards.saturating_mul(per_board)
    }

    /// An upper bound on the bytes the backward pass of a solve writes (its output and the
    /// state values a resume keeps), from the forward pass's `(age, states, afterstates)`:
    /// per board 10 bytes of Parquet and index (5.8–8.0 measured), 3 of a compact index (2.1),
    /// 0.3 a state of a policy file (2.2 bits), and 8 bytes a state and variant of the three
    /// largest ages' values.
    pub fn run_bytes_estimate(counts: &[(u32, u64, u64)], storages: &[Storage]) -> u64 {
        let mut out = 0u64;
        for &(age, s, a) in counts {
            for st in storages {
                let b = s + a;
                out = out.saturating_add(match (st.parquet_at(age), st.has_index()) {
                    (true, _) => b * 10,
                    (false, true) => b * 3,
                    (false, false) => s * 3 / 10 + 4096,
                });
            }
        }
        let largest = counts.iter().map(|c| c.1).max().unwrap_or(0);
        out.saturating_add(largest.saturating_mul(24 * storages.len() as u64))
    }

    /// Checks that the data directory's file system has room for `need` bytes of `what`
    /// plus `reserve` bytes left over, before anything of it is written.
    pub fn ensure_free(&self, what: &str, need: u64, reserve: u64) -> Result<()> {
        fs::create_dir_all(self.root()).map_err(|e| StoreError::io(self.root(), e))?;
        let free = atomic::free_bytes(self.root())?;
        if free >= need.saturating_add(reserve) {
            return Ok(());
        }
        Err(StoreError::DiskFull {
            dir: self.root().to_path_buf(),
            what: what.to_string(),
            need: need.saturating_add(reserve),
            reserve,
            free,
        })
    }

    /// Makes every file written so far durable (one `syncfs` of the data directory's file
    /// system).
    pub fn sync(&self) -> Result<()> {
        fs::create_dir_all(self.root()).map_err(|e| StoreError::io(self.root(), e))?;
        atomic::sync_fs(self.root())
    }
}
