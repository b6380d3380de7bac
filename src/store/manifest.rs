//! The manifest of one solved board and variant (`manifest/board=B/variant=V.json`): the
//! parameters of the solve, its counts and values, per-age figures, and every file it wrote
//! with its size and SHA-256. It is written last, so a manifest means a finished solve.
//!
//! One type for writers and readers; reading is tolerant (a missing field takes its default),
//! so a report over an older manifest still renders what it can. `layout_version` says which
//! layout the files follow; a solve of another layout is not reused. A field added without a
//! new layout (`discount`, `value_initial_distinct`, `storage`, `arithmetic`) changes no data
//! file of a full solve: an older manifest reads as undiscounted, in the full layout, in f64,
//! with no distinct-start mean (shown as missing, not as 0, until the variant is solved again:
//! `solve` reuses a finished solve as it is).
//!
//! A manifest vouches for itself too: its last field, `manifest_sha256`, is the SHA-256 of the
//! file as written with that field's value all zeros, so any byte changed in it is caught
//! when it is read.

use std::collections::BTreeMap;
use std::fs;

use serde::{Deserialize, Serialize};

use super::error::{Result, StoreError};
use super::layout::Layout;
use super::parts::Parts;
use crate::rules::Shape;

/// Version of the on-disk layout, recorded in every manifest. 2: partition values are
/// percent-encoded, each file is listed once. 3: the manifest carries its own digest.
pub const LAYOUT_VERSION: u32 = 3;

/// The field holding the manifest's own digest, as it is spelled in the file.
const SELF_DIGEST: &[u8] = b"\"manifest_sha256\": \"";

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
    /// The age index's sizes; in the policy layout, which writes no index, only its `base`.
    pub index: IndexEntry,
    /// The policy layout's file of the age; absent in the other layouts.
    #[serde(skip_serializing_if = "PolicyEntry::is_empty")]
    pub policy: PolicyEntry,
    /// The exact sums behind the state figures, as integers (`solver::records::FigureSums`):
    /// kept in an unfinished solve's work files, from which a solve over several processes
    /// merges its processes' shares into the figures above; never in a manifest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub state_sums: Vec<i64>,
    /// A policy solve kept over the states optimal play reaches (`solve --reach`): how many
    /// of the age's states it reaches. Absent otherwise, and in solves made before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_reached: Option<u64>,
}

/// Sizes of one age's policy file (the policy layout).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct PolicyEntry {
    pub file: String,
    pub file_bytes: u64,
    /// States with a stored symbol (two valid moves or more; every live state before
    /// format 2).
    pub keys: u64,
    pub shards: u64,
    /// The states the file was built over (all of the age's, or those reached); absent
    /// before format 2.
    #[serde(skip_serializing_if = "is_zero")]
    pub states: u64,
    /// Keys at each level of the file's unary code; absent before format 2.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<u64>,
    /// The rule ordering the moves whose ranks the file stores; absent before format 2.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub order: String,
    /// What the age's optimal moves are like (over every state of the age, reached or not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbols: Option<PolicySymbols>,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// An age's optimal moves counted as its policy file is written: what the symbol a file
/// stores costs at best (its entropy under each rule), against what the file takes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct PolicySymbols {
    /// States by their number of valid moves, 0 to 4.
    pub by_moves: Vec<u64>,
    /// States with two optimal moves or more.
    pub tied: u64,
    /// States of two, three and four valid moves (rows) by their first optimal move in the
    /// order L, R, U, D.
    pub first: Vec<Vec<u64>>,
    /// Per rule of `rules::order`: states of two, three and four valid moves (rows) by the
    /// smallest rank of an optimal move among the valid ones in the rule's order.
    pub ranks: BTreeMap<String, Vec<Vec<u64>>>,
}

impl PolicySymbols {
    /// Adds another age's (or part's) counts.
    pub fn add(&mut self, o: &PolicySymbols) {
        fn add_vec(a: &mut Vec<u64>, b: &[u64]) {
            if a.len() < b.len() {
                a.resize(b.len(), 0);
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        fn add_rows(a: &mut Vec<Vec<u64>>, b: &[Vec<u64>]) {
            if a.len() < b.len() {
                a.resize(b.len(), Vec::new());
            }
            for (x, y) in a.iter_mut().zip(b) {
                add_vec(x, y);
            }
        }
        add_vec(&mut self.by_moves, &o.by_moves);
        self.tied += o.tied;
        add_rows(&mut self.first, &o.first);
        for (k, v) in &o.ranks {
            add_rows(self.ranks.entry(k.clone()).or_default(), v);
        }
    }
}

impl PolicyEntry {
    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }
}

/// How a solve is stored. The full layout (the default) writes every state and afterstate in
/// Parquet and indexes with the state ids and f64 values. The compact layout, for boards whose
/// full output would not fit a disk, writes per age only the index of the afterstate ids and
/// their values (in fixed point at `2^-value_fraction_bits`, or f64 if that is `None`), the
/// `ages` table and the manifest; the `states` and `afterstates` Parquet of the ages in
/// `parquet_ages` (inclusive) only. What a compact solve lacks: per-state rows outside those
/// ages, the state ids (so `best` cannot tell a reachable board from an unreachable one whose
/// moves all lead to reachable afterstates), and, in fixed point, the values' last bits. The
/// policy layout keeps per age only the optimal move of every live state, as a static function
/// from state id to move (`index::policy`), with the `ages` table and the manifest: no value
/// but the manifest's values at the starts and the `ages` table's figures, no ids.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Storage {
    /// `full`, `compact` or `policy`.
    pub layout: LayoutKind,
    /// Compact layout: fraction bits of the fixed-point afterstate values (`None`: f64).
    pub value_fraction_bits: Option<u8>,
    /// Compact layout: the first and last age also written as Parquet (`None`: no age).
    pub parquet_ages: Option<(u32, u32)>,
    /// Policy layout: the moves kept only for the states optimal play reaches from the
    /// starts, following the stored moves (`solve --reach`); absent (false) otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reach: bool,
}

/// The layouts of a solve.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LayoutKind {
    #[default]
    Full,
    Compact,
    Policy,
}

impl LayoutKind {
    /// The name the manifest writes (`full`, `compact`, `policy`).
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Full => "full",
            LayoutKind::Compact => "compact",
            LayoutKind::Policy => "policy",
        }
    }
}

impl Storage {
    /// The full layout.
    pub const FULL: Storage = Storage {
        layout: LayoutKind::Full,
        value_fraction_bits: None,
        parquet_ages: None,
        reach: false,
    };

    pub fn is_full(&self) -> bool {
        self.layout == LayoutKind::Full
    }

    /// Whether age `age` has `states` and `afterstates` Parquet files.
    pub fn parquet_at(&self, age: u32) -> bool {
        match self.layout {
            LayoutKind::Full => true,
            LayoutKind::Compact => self
                .parquet_ages
                .is_some_and(|(lo, hi)| (lo..=hi).contains(&age)),
            LayoutKind::Policy => false,
        }
    }

    /// Whether each age has an index file (values by afterstate id); else a policy file.
    pub fn has_index(&self) -> bool {
        self.layout != LayoutKind::Policy
    }

    /// Whether the solve keeps values a reader can look up (q-values, regrets): every layout
    /// but the policy one.
    pub fn has_values(&self) -> bool {
        self.has_index()
    }

    /// Whether the index files hold the state ids.
    pub fn state_ids(&self) -> bool {
        self.is_full()
    }

    /// One line saying what the layout holds, for summaries and errors.
    pub fn describe(&self) -> String {
        match self.layout {
            LayoutKind::Full => "full layout".into(),
            LayoutKind::Compact => {
                let values = match self.value_fraction_bits {
                    Some(f) => format!("values in fixed point at 2^-{f}"),
                    None => "f64 values".into(),
                };
                let parquet = match self.parquet_ages {
                    Some((lo, hi)) => format!("Parquet for ages {lo}..{hi}"),
                    None => "no per-state Parquet".into(),
                };
                format!("compact layout (afterstate index, {values}, {parquet}, no state ids)")
            }
            LayoutKind::Policy if self.reach => "policy layout over the states optimal play \
                 reaches (their optimal moves only: no values, no ids, no other state)"
                .into(),
            LayoutKind::Policy => {
                "policy layout (the optimal move of every live state only: no values, no ids)"
                    .into()
            }
        }
    }
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
    /// γ of a discounted goal variant, 1 otherwise (and in manifests written before it).
    #[serde(default = "no_discount")]
    pub discount: f64,
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
    /// Unweighted mean of the values of the distinct initial states (the boards two spawns
    /// on the empty board can make, each orbit of the board's full symmetry group counted
    /// once, whatever the solve's `symmetry`): the convention of published tables. Null in
    /// manifests written before it.
    pub value_initial_distinct: Option<f64>,
    /// Value from the empty board with the computer to move (Slizkov's start: a spawn, the
    /// player's move of the one tile, a spawn, then play). Null in manifests written before
    /// it.
    #[serde(default)]
    pub value_empty: Option<f64>,
    /// The arithmetic the values were made in: `f64` (rounded to nearest; also in manifests
    /// written before this field), or `u32` / `u53`: integers times 2^-32 / 2^-53, every step
    /// rounded down, so that every value (those at the starts too) is a proved lower bound
    /// (`rules::rigorous`).
    #[serde(default = "f64_arithmetic")]
    pub arithmetic: String,
    /// The caps of a restricted solve, as grid text (`256 128 / 64 64`; absent otherwise):
    /// a move whose result holds a tile above its cell's cap is not played unless it wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caps: Option<String>,
    /// The required configuration of a restricted solve, as grid text (`.` in a free cell),
    /// if it has one: reaching it wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<String>,
    pub timings: Timings,
    pub peak_rss_bytes: u64,
    /// How the files are stored; absent (the full layout) in manifests of full solves, so
    /// that they read as they always did.
    #[serde(skip_serializing_if = "Storage::is_full")]
    pub storage: Storage,
    /// The parts of a solve run by several processes (`mpirun -np N age2048 solve`): how
    /// many and by which scheme an id's part is found ([`super::parts::Parts`]); absent for a
    /// single-process solve, whose files are as they always were.
    #[serde(skip_serializing_if = "Parts::is_one")]
    pub parts: Parts,
    /// Per-age figures, ages with states or afterstates only.
    pub ages: Vec<AgeStats>,
    /// Every file of this board and variant, each listed once.
    pub files: Vec<FileEntry>,
    /// SHA-256 of this file with this value all zeros (see the module comment); empty in
    /// manifests before layout 3.
    pub manifest_sha256: String,
}

fn no_discount() -> f64 {
    1.0
}

fn f64_arithmetic() -> String {
    "f64".into()
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
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| StoreError::corrupt(path, format!("not a manifest: {e}")))?;
    if m.layout_version >= 3 && self_digest(&bytes).as_deref() != Some(m.manifest_sha256.as_str()) {
        return Err(StoreError::corrupt(
            path,
            "its own SHA-256 (manifest_sha256) does not match its bytes",
        ));
    }
    Ok(m)
}

/// The SHA-256 of manifest bytes with the value of their last `manifest_sha256` field as
/// zeros; `None` without such a field.
fn self_digest(bytes: &[u8]) -> Option<String> {
    let at = bytes
        .windows(SELF_DIGEST.len())
        .rposition(|w| w == SELF_DIGEST)?
        + SELF_DIGEST.len();
    let value = bytes.get(at..at + 64)?;
    if bytes.get(at + 64) != Some(&b'"') || !value.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut zeroed = bytes.to_vec();
    zeroed[at..at + 64].fill(b'0');
    Some(super::atomic::sha256_hex(&zeroed))
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
    let zeros = Manifest {
        manifest_sha256: "0".repeat(64),
        ..m.clone()
    };
    let mut bytes = serde_json::to_vec_pretty(&zeros)
        .map_err(|e| StoreError::corrupt(&path, format!("cannot encode the manifest: {e}")))?;
    let digest = self_digest(&bytes)
        .ok_or_else(|| StoreError::corrupt(&path, "cannot place the manifest's own digest"))?;
    let at = bytes
        .windows(SELF_DIGEST.len())
        .rposition(|w| w == SELF_DIGEST)
        .map(|i| i + SELF_DIGEST.len())
        .ok_or_else(|| StoreError::corrupt(&path, "cannot place the manifest's own digest"))?;
    bytes[at..at + 64].copy_from_slice(digest.as_bytes());
    super::atomic::write(&path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::{LayoutKind, Manifest};

    /// Regression: serde_json's default float parser may be an ulp off, so a rigorous bound
    /// read back from its manifest could come out one ulp above the bound written. The crate
    /// is built with `float_roundtrip`; every value must read back with the bits written.
    #[test]
    fn values_read_back_from_a_manifest_with_the_bits_written() {
        // A u32 bound a 3x3 restricted solve wrote, read back an ulp low before the fix.
        let seen = [0.999_997_621_867_805_7_f64, 0.999_997_630_618_347_9];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000 + seen.len() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Probabilities near 1 (the rigorous bounds), and points of any size.
            let v = if let Some(&v) = seen.get(i.wrapping_sub(20_000)) {
                v
            } else if i % 2 == 0 {
                1.0 - (x >> 11) as f64 / (1u64 << 53) as f64 * 1e-3
            } else {
                f64::from_bits(0x3FF0_0000_0000_0000 | (x >> 12)) * (1u64 << (x % 20)) as f64
            };
            let m = Manifest {
                value_empty: Some(v),
                ..Manifest::default()
            };
            let back: Manifest =
                serde_json::from_slice(&serde_json::to_vec_pretty(&m).unwrap()).unwrap();
            assert_eq!(
                back.value_empty.map(f64::to_bits),
                Some(v.to_bits()),
                "{v:?}"
            );
        }
    }

    #[test]
    fn a_layouts_name_is_what_the_manifest_writes() {
        for kind in [LayoutKind::Full, LayoutKind::Compact, LayoutKind::Policy] {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
    }
}
