//! The manifest of one solved board and variant (`manifest/board=B/variant=V.json`): the
//! parameters of the solve, its counts and values, per-age figures, and every file it wrote
//! with its size and SHA-256. It is written last, so a manifest means a finished solve.
//!
//! One type for writers and readers; reading is tolerant (a missing field takes its default),
//! so a report over an older manifest still renders what it can. `layout_version` says which
//! layout the files follow; a solve of another layout is not reused.

use std::fs;

use serde::{Deserialize, Serialize};

use super::error::{Result, StoreError};
use super::layout::Layout;
use crate::rules::Shape;

/// Version of the on-disk layout, recorded in every manifest. 2: partition values are
/// percent-encoded, each file is listed once.
pub const LAYOUT_VERSION: u32 = 2;

/// A file written for a variant, as listed in its manifest.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct FileEntry {
    /// Path relative to the data directory, `/`-separated.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Storage figures of one age's index file.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct IndexEntry {
    pub file: String,
    pub file_bytes: u64,
    pub base: u32,
    pub state_id_bytes: u64,
    pub afterstate_id_bytes: u64,
    pub bits_per_afterstate_id: f64,
    pub bits_per_state_id: f64,
}

/// Per-age figures of one variant (one row of the `ages` table, plus the index's sizes).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct AgeStats {
    pub age: u32,
    pub n_states: u64,
    pub n_afterstates: u64,
    pub n_terminal_states: u64,
    pub mean_empty_cells_afterstates: Option<f64>,
    pub best_afterstate_value: Option<f64>,
    pub mean_state_value: Option<f64>,
    pub mean_action_gap: Option<f64>,
    pub frac_gap_lt_1: Option<f64>,
    pub index: IndexEntry,
}

/// Seconds spent in each pass.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Timings {
    pub forward_s: f64,
    pub backward_s: f64,
    pub total_s: f64,
}

/// What a solve of one board and variant produced.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Manifest {
    pub tool: String,
    pub version: String,
    pub layout_version: u32,
    pub board: String,
    pub variant: String,
    pub symmetry: String,
    pub p4: f64,
    pub threads: usize,
    pub n_states: u64,
    pub n_afterstates: u64,
    pub n_terminal_states: u64,
    pub min_age: u32,
    pub max_age: u32,
    pub max_tile: u32,
    /// Value of a start with two 2-tiles, averaged over their placements (null if p4 = 1).
    pub value_two_2_tiles: Option<f64>,
    /// Value over the real initial distribution (two spawns on the empty board).
    pub value_initial: Option<f64>,
    pub timings: Timings,
    pub peak_rss_bytes: u64,
    /// Per-age figures, ages with states or afterstates only.
    pub ages: Vec<AgeStats>,
    /// Every file of this board and variant, each listed once.
    pub files: Vec<FileEntry>,
}

impl Manifest {
    /// Total bytes of the files listed.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Reads the manifest at `path`.
pub fn read_path(path: &std::path::Path) -> Result<Manifest> {
    let bytes = fs::read(path).map_err(|e| StoreError::io(path, e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| StoreError::corrupt(path, format!("not a manifest: {e}")))
}

/// Reads the manifest of `board` and `variant`; [`StoreError::NotSolved`] if there is none.
pub fn read(layout: &Layout, board: Shape, variant: &str) -> Result<Manifest> {
    let path = layout.manifest_file(board, variant);
    if !path.exists() {
        return Err(StoreError::NotSolved {
            dir: layout.root().to_path_buf(),
            board: board.to_string(),
            variant: variant.to_string(),
        });
    }
    read_path(&path)
}

/// Writes the manifest of its board and variant (durably, last of all its files).
pub fn write(layout: &Layout, board: Shape, m: &Manifest) -> Result<String> {
    let path = layout.manifest_file(board, &m.variant);
    let bytes = serde_json::to_vec_pretty(m)
        .map_err(|e| StoreError::corrupt(&path, format!("cannot encode the manifest: {e}")))?;
    super::atomic::write(&path, &bytes)
}
