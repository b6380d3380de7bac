//! The store: every byte the solver writes or reads goes through here.
//!
//! Layout under the data directory (Hive partitions, so one glob reads every board and
//! variant; ages are not zero-padded so that readers infer integers):
//!
//! ```text
//! states/board=3x3/variant=expectation/age=<n>/part-0.parquet       id value terminal moves best gap empty
//! afterstates/board=3x3/variant=expectation/age=<n>/part-0.parquet  id value empty
//! ages/board=3x3/variant=expectation/part-0.parquet                 one row per age
//! index/board=3x3/variant=expectation/age=<n>.a2i                    Elias-Fano ids + afterstate values
//! manifest/board=3x3/variant=expectation.json                        parameters, counts, digests
//! .work/board=3x3/<class>/                                           forward layers, resume state
//! ```
//!
//! Every file is written under a temporary name and renamed, so a reader (or a resumed solve)
//! sees either the old file or the new one, never half a file. Work files carry a checksum and
//! are reported as corrupt, never trusted blindly.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, StringArray, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::board::Shape;
use crate::error::{Error, Result};

/// Version of the on-disk layout, recorded in every manifest.
pub const LAYOUT_VERSION: u32 = 1;

/// Paths of one data directory.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    fn part(&self, table: &str, board: Shape, variant: &str) -> PathBuf {
        self.root
            .join(table)
            .join(format!("board={board}"))
            .join(format!("variant={variant}"))
    }
    pub fn states_file(&self, board: Shape, variant: &str, age: u32) -> PathBuf {
        self.part("states", board, variant)
            .join(format!("age={age}"))
            .join("part-0.parquet")
    }
    pub fn afterstates_file(&self, board: Shape, variant: &str, age: u32) -> PathBuf {
        self.part("afterstates", board, variant)
            .join(format!("age={age}"))
            .join("part-0.parquet")
    }
    pub fn ages_file(&self, board: Shape, variant: &str) -> PathBuf {
        self.part("ages", board, variant).join("part-0.parquet")
    }
    pub fn index_dir(&self, board: Shape, variant: &str) -> PathBuf {
        self.part("index", board, variant)
    }
    pub fn index_file(&self, board: Shape, variant: &str, age: u32) -> PathBuf {
        self.index_dir(board, variant)
            .join(format!("age={age}.a2i"))
    }
    pub fn manifest_file(&self, board: Shape, variant: &str) -> PathBuf {
        self.root
            .join("manifest")
            .join(format!("board={board}"))
            .join(format!("variant={variant}.json"))
    }
    pub fn work_dir(&self, board: Shape, class_key: &str) -> PathBuf {
        self.root
            .join(".work")
            .join(format!("board={board}"))
            .join(class_key)
    }
    /// Path relative to the data directory, with `/` separators (as in manifests).
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Removes the partitions of one board and variant (before a fresh solve writes them).
    pub fn clear_variant(&self, board: Shape, variant: &str) -> Result<()> {
        for table in ["states", "afterstates", "ages", "index"] {
            let dir = self.part(table, board, variant);
            if dir.exists() {
                fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            }
        }
        let m = self.manifest_file(board, variant);
        if m.exists() {
            fs::remove_file(&m).map_err(|e| Error::io(&m, e))?;
        }
        Ok(())
    }

    pub fn read_manifest(&self, board: Shape, variant: &str) -> Result<Manifest> {
        let path = self.manifest_file(board, variant);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotSolved {
                    dir: self.root.clone(),
                    board: board.to_string(),
                    variant: variant.to_string(),
                })
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path,
            what: format!("manifest is not valid: {e}"),
        })
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename; returns the SHA-256.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<String> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    Ok(sha256_hex(bytes))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A file written for a variant, as listed in its manifest.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FileEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Storage figures of one age's index file.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct IndexEntry {
    pub file: String,
    pub file_bytes: u64,
    pub base: u32,
    pub state_id_bytes: u64,
    pub afterstate_id_bytes: u64,
    pub bits_per_afterstate_id: f64,
    pub bits_per_state_id: f64,
}

/// Per-age figures of one variant (one row of the `ages` table).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
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
    pub files: Vec<FileEntry>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Timings {
    pub forward_s: f64,
    pub backward_s: f64,
    pub total_s: f64,
}

/// What a solve of one board and variant produced.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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
    pub ages: Vec<AgeStats>,
    pub files: Vec<FileEntry>,
}

// ---------------------------------------------------------------------------------------------
// Work files: raw layers and values with a checksum, for the passes and for resuming.

const WORK_MAGIC: &[u8; 8] = b"A2048WRK";

/// Writes u64 words (ids or f64 bits) as a checksummed work file.
pub fn write_words(path: &Path, words: &[u64]) -> Result<()> {
    let mut bytes = Vec::with_capacity(24 + words.len() * 8);
    bytes.extend_from_slice(WORK_MAGIC);
    bytes.extend_from_slice(&(words.len() as u64).to_le_bytes());
    let body_start = bytes.len() + 8;
    bytes.extend_from_slice(&[0u8; 8]);
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    let crc = crc32fast::hash(&bytes[body_start..]);
    bytes[16..24].copy_from_slice(&u64::from(crc).to_le_bytes());
    atomic_write(path, &bytes).map(|_| ())
}

/// Reads a work file written by [`write_words`]; `None` if it does not exist.
pub fn read_words(path: &Path) -> Result<Option<Vec<u64>>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let corrupt = |what: &str| Error::Corrupt {
        path: path.to_path_buf(),
        what: what.to_string(),
    };
    if bytes.len() < 24 || &bytes[..8] != WORK_MAGIC {
        return Err(corrupt("not a work file (bad magic or too short)"));
    }
    let n = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let crc = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    let body = &bytes[24..];
    if (body.len() as u64) != n.saturating_mul(8) {
        return Err(corrupt("truncated"));
    }
    if u64::from(crc32fast::hash(body)) != crc {
        return Err(corrupt("checksum mismatch"));
    }
    Ok(Some(
        body.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
    ))
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<String> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    atomic_write(path, &bytes)
}

pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    match fs::read(path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| Error::Corrupt {
                path: path.to_path_buf(),
                what: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

// ---------------------------------------------------------------------------------------------
// Parquet tables.

fn writer_props(delta_cols: &[&str], plain_cols: &[&str]) -> WriterProperties {
    // zstd at level 1 for every column.
    let zstd = Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 is valid"));
    let mut b = WriterProperties::builder().set_compression(zstd);
    // Sorted ids delta-encode to a few bits each.
    for c in delta_cols {
        b = b
            .set_column_dictionary_enabled(ColumnPath::from(*c), false)
            .set_column_encoding(ColumnPath::from(*c), Encoding::DELTA_BINARY_PACKED);
    }
    // Many distinct doubles: a dictionary would be built only to be thrown away. zstd still
    // saves a third of their bytes (equal values recur: terminal states, symmetric gaps), and
    // on this machine writing bytes costs more than compressing them (measured on 3x3:
    // 1.0 GB instead of 1.4 GB, the same solve time).
    for c in plain_cols {
        b = b.set_column_dictionary_enabled(ColumnPath::from(*c), false);
    }
    b.build()
}

fn parquet_bytes(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Result<Vec<u8>> {
    let err = |e: parquet::errors::ParquetError| Error::Parquet {
        path: path.to_path_buf(),
        what: e.to_string(),
    };
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).map_err(err)?;
    w.write(batch).map_err(err)?;
    w.close().map_err(err)?;
    Ok(buf)
}

fn batch(path: &Path, fields: Vec<Field>, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(|e| Error::Parquet {
        path: path.to_path_buf(),
        what: e.to_string(),
    })
}

/// Columns of one age's `states` partition.
pub struct StatesColumns {
    pub id: Vec<u64>,
    pub value: Vec<f64>,
    pub terminal: Vec<bool>,
    pub moves: Vec<u8>,
    pub best: Vec<Option<&'static str>>,
    pub gap: Vec<Option<f64>>,
    pub empty: Vec<u8>,
}

pub fn states_parquet(path: &Path, c: StatesColumns) -> Result<Vec<u8>> {
    let fields = vec![
        Field::new("id", DataType::UInt64, false),
        Field::new("value", DataType::Float64, false),
        Field::new("terminal", DataType::Boolean, false),
        Field::new("moves", DataType::UInt8, false),
        Field::new("best", DataType::Utf8, true),
        Field::new("gap", DataType::Float64, true),
        Field::new("empty", DataType::UInt8, false),
    ];
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(c.id)),
        Arc::new(Float64Array::from(c.value)),
        Arc::new(BooleanArray::from(c.terminal)),
        Arc::new(UInt8Array::from(c.moves)),
        Arc::new(StringArray::from(c.best)),
        Arc::new(Float64Array::from(c.gap)),
        Arc::new(UInt8Array::from(c.empty)),
    ];
    let b = batch(path, fields, cols)?;
    parquet_bytes(path, &b, writer_props(&["id"], &["value", "gap"]))
}

pub fn afterstates_parquet(
    path: &Path,
    id: Vec<u64>,
    value: Vec<f64>,
    empty: Vec<u8>,
) -> Result<Vec<u8>> {
    let fields = vec![
        Field::new("id", DataType::UInt64, false),
        Field::new("value", DataType::Float64, false),
        Field::new("empty", DataType::UInt8, false),
    ];
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(id)),
        Arc::new(Float64Array::from(value)),
        Arc::new(UInt8Array::from(empty)),
    ];
    let b = batch(path, fields, cols)?;
    parquet_bytes(path, &b, writer_props(&["id"], &["value"]))
}

pub fn ages_parquet(path: &Path, ages: &[AgeStats]) -> Result<Vec<u8>> {
    let f = |name: &str| Field::new(name, DataType::Float64, true);
    let fields = vec![
        Field::new("age", DataType::UInt32, false),
        Field::new("n_states", DataType::UInt64, false),
        Field::new("n_afterstates", DataType::UInt64, false),
        Field::new("n_terminal_states", DataType::UInt64, false),
        f("mean_empty_cells_afterstates"),
        f("best_afterstate_value"),
        f("mean_state_value"),
        f("mean_action_gap"),
        f("frac_gap_lt_1"),
    ];
    let col = |g: fn(&AgeStats) -> Option<f64>| -> ArrayRef {
        Arc::new(Float64Array::from(ages.iter().map(g).collect::<Vec<_>>()))
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from(
            ages.iter().map(|a| a.age).collect::<Vec<_>>(),
        )),
        Arc::new(UInt64Array::from(
            ages.iter().map(|a| a.n_states).collect::<Vec<_>>(),
        )),
        Arc::new(UInt64Array::from(
            ages.iter().map(|a| a.n_afterstates).collect::<Vec<_>>(),
        )),
        Arc::new(UInt64Array::from(
            ages.iter().map(|a| a.n_terminal_states).collect::<Vec<_>>(),
        )),
        col(|a| a.mean_empty_cells_afterstates),
        col(|a| a.best_afterstate_value),
        col(|a| a.mean_state_value),
        col(|a| a.mean_action_gap),
        col(|a| a.frac_gap_lt_1),
    ];
    let b = batch(path, fields, cols)?;
    parquet_bytes(path, &b, writer_props(&[], &[]))
}

/// A column read back from a Parquet part, as the report and `compare` use it.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    U64(Vec<Option<u64>>),
    F64(Vec<Option<f64>>),
    Utf8(Vec<Option<String>>),
}

/// Reads the named columns of a Parquet part written by this store (integers widened to
/// `U64`, floats to `F64`, strings as `Utf8`), in the order asked.
pub fn read_columns(path: &Path, names: &[&str]) -> Result<Vec<ColumnData>> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, UInt64Type};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let perr = |e: &dyn std::fmt::Display| Error::Parquet {
        path: path.to_path_buf(),
        what: e.to_string(),
    };
    let file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| perr(&e))?;
    let schema = builder.schema().clone();
    let mut leaves = Vec::new();
    for n in names {
        let i = schema
            .index_of(n)
            .map_err(|_| perr(&format!("no column {n}")))?;
        leaves.push(i);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), leaves.iter().copied());
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|e| perr(&e))?;
    let mut out: Vec<ColumnData> = names
        .iter()
        .map(|n| {
            let f = schema.field_with_name(n).expect("checked above");
            match f.data_type() {
                DataType::Float32 | DataType::Float64 => ColumnData::F64(Vec::new()),
                DataType::Utf8 | DataType::LargeUtf8 => ColumnData::Utf8(Vec::new()),
                _ => ColumnData::U64(Vec::new()),
            }
        })
        .collect();
    for batch in reader {
        let batch = batch.map_err(|e| perr(&e))?;
        for (n, col) in names.iter().zip(out.iter_mut()) {
            let a = batch
                .column_by_name(n)
                .ok_or_else(|| perr(&format!("no column {n}")))?;
            match col {
                ColumnData::F64(v) => {
                    let a = arrow::compute::cast(a, &DataType::Float64).map_err(|e| perr(&e))?;
                    v.extend(a.as_primitive::<Float64Type>().iter());
                }
                ColumnData::U64(v) => {
                    let a = arrow::compute::cast(a, &DataType::UInt64).map_err(|e| perr(&e))?;
                    v.extend(a.as_primitive::<UInt64Type>().iter());
                }
                ColumnData::Utf8(v) => {
                    let a = arrow::compute::cast(a, &DataType::Utf8).map_err(|e| perr(&e))?;
                    let a = a.as_string::<i32>();
                    v.extend((0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i).to_string())));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_files_round_trip_and_detect_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.ids");
        write_words(&p, &[1, 5, 9]).unwrap();
        assert_eq!(read_words(&p).unwrap(), Some(vec![1, 5, 9]));
        let mut b = fs::read(&p).unwrap();
        b[30] ^= 1;
        fs::write(&p, &b).unwrap();
        assert!(matches!(read_words(&p), Err(Error::Corrupt { .. })));
        fs::write(&p, &b[..20]).unwrap();
        assert!(matches!(read_words(&p), Err(Error::Corrupt { .. })));
        assert_eq!(read_words(&dir.path().join("none")).unwrap(), None);
    }
}
