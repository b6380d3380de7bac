//! The Parquet files: writers of the `states`, `afterstates` and `ages` parts (schema from
//! [`super::schema`]), and a reader of named columns for the report and `compare`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, StringArray, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use super::error::{Result, StoreError};
use super::manifest::AgeStats;
use super::schema::{Table, AFTERSTATES, AGES, STATES};

/// The key of a restricted solve's caps in its Parquet files' key-value metadata.
pub const CAPS_KEY: &str = "age2048.caps";
/// The key of a restricted solve's requirement in its Parquet files' key-value metadata.
pub const REQUIRE_KEY: &str = "age2048.require";

/// What a Parquet file of a solve says of itself beyond its schema: for a restricted solve,
/// its caps and requirement as grid text ([`CAPS_KEY`], [`REQUIRE_KEY`]); nothing otherwise,
/// so that an unrestricted solve's files are the bytes they always were.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileMeta {
    pub caps: Option<String>,
    pub require: Option<String>,
}

impl FileMeta {
    fn key_values(&self) -> Vec<parquet::file::metadata::KeyValue> {
        let mut kv = Vec::new();
        if let Some(c) = &self.caps {
            kv.push(parquet::file::metadata::KeyValue::new(
                CAPS_KEY.to_string(),
                c.clone(),
            ));
        }
        if let Some(r) = &self.require {
            kv.push(parquet::file::metadata::KeyValue::new(
                REQUIRE_KEY.to_string(),
                r.clone(),
            ));
        }
        kv
    }
}

pub(super) fn writer_props(delta_cols: &[&str], plain_cols: &[&str]) -> WriterProperties {
    writer_props_with(delta_cols, plain_cols, &FileMeta::default())
}

fn writer_props_with(
    delta_cols: &[&str],
    plain_cols: &[&str],
    meta: &FileMeta,
) -> WriterProperties {
    // zstd at level 1 for every column.
    let zstd = Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 is valid"));
    let mut b = WriterProperties::builder().set_compression(zstd);
    let kv = meta.key_values();
    if !kv.is_empty() {
        b = b.set_key_value_metadata(Some(kv));
    }
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

/// Rows of a row group in the `states` and `afterstates` parts (the Parquet writer's default,
/// which every file written so far has): a solve streams an age's rows in groups of this many.
pub const ROWS_PER_GROUP: usize = parquet::file::properties::DEFAULT_MAX_ROW_GROUP_ROW_COUNT;

/// The fewest rows of a row group a process of a solve over several writes.
pub const MIN_ROWS_PER_GROUP: usize = 1 << 17;

/// Rows of a row group written by one of the `processes` of a solve: one process's
/// [`ROWS_PER_GROUP`] over their number, at least [`MIN_ROWS_PER_GROUP`]. What a process
/// holds for a group being made (its records, its columns, the ghosts its states look up)
/// then stays in proportion to its share of an age, as one process's does to the age. The
/// rows read back are the same whatever the groups; only the files' bytes differ.
pub fn rows_per_group(processes: u32) -> usize {
    (ROWS_PER_GROUP / processes.max(1) as usize).max(MIN_ROWS_PER_GROUP)
}

/// The Parquet file of one batch, in row groups of the writer's row count.
pub(super) fn parquet_bytes(
    path: &Path,
    batch: &RecordBatch,
    props: WriterProperties,
) -> Result<Vec<u8>> {
    let err = parquet_err(path);
    if props.max_row_group_bytes().is_some() {
        // Row groups cut by size: leave the cutting to the writer itself.
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).map_err(err)?;
        w.write(batch).map_err(err)?;
        w.close().map_err(err)?;
        return Ok(buf);
    }
    let rows_per_group = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
    let mut w = PartWriter::new(path, batch.schema(), props, Vec::new())?;
    let mut start = 0;
    while start < batch.num_rows() {
        let n = rows_per_group.min(batch.num_rows() - start);
        w.push_batch(&batch.slice(start, n))?;
        start += n;
    }
    w.finish()
}

/// A Parquet part written one row group at a time into `W` (a file being written, or bytes),
/// so that only one group's Arrow arrays exist at once (an age of 4x4 `goal-32` holds 60 M
/// states: its columns at once took ≈ 2.5 GB). The columns of each group are encoded in
/// parallel (`ArrowWriter`'s own column writers, one task per column) and appended in order,
/// which gives the bytes `ArrowWriter::write` + `close` would give over all the rows in one
/// batch (same row groups, pages, metadata) as long as every group but the last holds the
/// writer's row count ([`ROWS_PER_GROUP`] for the parts of a one-process solve).
pub struct PartWriter<W: Write + Send> {
    path: PathBuf,
    schema: SchemaRef,
    writer: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    groups: usize,
}

impl<W: Write + Send> PartWriter<W> {
    fn new(path: &Path, schema: SchemaRef, props: WriterProperties, sink: W) -> Result<Self> {
        let (writer, factory) = ArrowWriter::try_new(sink, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(parquet_err(path))?;
        Ok(PartWriter {
            path: path.to_path_buf(),
            schema,
            writer,
            factory,
            groups: 0,
        })
    }

    /// A `states` part (schema from [`super::schema`]).
    pub fn states(path: &Path, sink: W, meta: &FileMeta) -> Result<Self> {
        Self::new(
            path,
            arrow_schema(&STATES),
            writer_props_with(&["id"], &["value", "gap"], meta),
            sink,
        )
    }

    /// An `afterstates` part.
    pub fn afterstates(path: &Path, sink: W, meta: &FileMeta) -> Result<Self> {
        Self::new(
            path,
            arrow_schema(&AFTERSTATES),
            writer_props_with(&["id"], &["value"], meta),
            sink,
        )
    }

    /// Appends the next row group of a `states` part.
    pub fn push_states(&mut self, c: StatesColumns) -> Result<()> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(c.id)),
            Arc::new(Float64Array::from(c.value)),
            Arc::new(BooleanArray::from(c.terminal)),
            Arc::new(UInt8Array::from(c.moves)),
            Arc::new(StringArray::from(c.best)),
            Arc::new(Float64Array::from(c.gap)),
            Arc::new(UInt8Array::from(c.empty)),
        ];
        self.push_columns(cols)
    }

    /// Appends the next row group of an `afterstates` part: ids, values, empty cells.
    pub fn push_afterstates(
        &mut self,
        id: Vec<u64>,
        value: Vec<f64>,
        empty: Vec<u8>,
    ) -> Result<()> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(id)),
            Arc::new(Float64Array::from(value)),
            Arc::new(UInt8Array::from(empty)),
        ];
        self.push_columns(cols)
    }

    fn push_columns(&mut self, cols: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), cols).map_err(|source| {
            StoreError::Arrow {
                path: self.path.clone(),
                source,
            }
        })?;
        self.push_batch(&batch)
    }

    fn push_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let writers = self
            .factory
            .create_column_writers(self.groups)
            .map_err(parquet_err(&self.path))?;
        let chunks: Vec<ArrowColumnChunk> = writers
            .into_par_iter()
            .zip(
                batch
                    .columns()
                    .par_iter()
                    .zip(self.schema.fields().par_iter()),
            )
            .map(|(mut w, (array, field))| {
                for leaf in compute_leaves(field, array)? {
                    w.write(&leaf)?;
                }
                w.close()
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(parquet_err(&self.path))?;
        let err = parquet_err(&self.path);
        let mut rg = self.writer.next_row_group().map_err(err)?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut rg).map_err(err)?;
        }
        rg.close().map_err(err)?;
        self.groups += 1;
        Ok(())
    }

    /// Writes the footer; returns the sink.
    pub fn finish(self) -> Result<W> {
        self.writer.into_inner().map_err(parquet_err(&self.path))
    }
}

/// A Parquet error on the file at `path`.
fn parquet_err(path: &Path) -> impl Fn(parquet::errors::ParquetError) -> StoreError + Copy + '_ {
    move |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    }
}

/// The Arrow schema of `table` (from [`super::schema`]).
fn arrow_schema(table: &Table) -> SchemaRef {
    let fields: Vec<Field> = table
        .columns
        .iter()
        .map(|c| Field::new(c.name, c.ty.arrow(), c.nullable))
        .collect();
    Arc::new(Schema::new(fields))
}

/// A batch of `table`'s columns (the schema comes from [`super::schema`]).
pub(super) fn batch(path: &Path, table: &Table, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    RecordBatch::try_new(arrow_schema(table), cols).map_err(|source| StoreError::Arrow {
        path: path.to_path_buf(),
        source,
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

pub fn ages_parquet(path: &Path, ages: &[AgeStats], meta: &FileMeta) -> Result<Vec<u8>> {
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
        Arc::new(UInt64Array::from(
            ages.iter().map(|a| a.n_reached).collect::<Vec<_>>(),
        )),
    ];
    let b = batch(path, &AGES, cols)?;
    parquet_bytes(path, &b, writer_props_with(&[], &[], meta))
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
    let perr = |e: &dyn std::fmt::Display| StoreError::corrupt(path, e.to_string());
    let file = fs::File::open(path).map_err(|e| StoreError::io(path, e))?;
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

/// [`read_columns`] of the parts of one age (a distributed solve's parts, or one file), their
/// rows in ascending `id` order, as one part of a single-process solve holds them: `id`
/// first, then the named columns. Ids must be distinct across the parts.
pub fn read_columns_by_id(paths: &[std::path::PathBuf], names: &[&str]) -> Result<Vec<ColumnData>> {
    let mut with_id = vec!["id"];
    with_id.extend_from_slice(names);
    if let [one] = paths {
        return read_columns(one, &with_id);
    }
    let mut parts: Vec<Vec<ColumnData>> = Vec::with_capacity(paths.len());
    for p in paths {
        parts.push(read_columns(p, &with_id)?);
    }
    // (id, part, row) of every row, sorted by id.
    let mut order: Vec<(u64, usize, usize)> = Vec::new();
    for (pi, cols) in parts.iter().enumerate() {
        if let Some(ColumnData::U64(ids)) = cols.first() {
            order.extend(
                ids.iter()
                    .enumerate()
                    .map(|(r, id)| (id.unwrap_or(u64::MAX), pi, r)),
            );
        }
    }
    order.sort_unstable();
    let mut out = Vec::with_capacity(with_id.len());
    for c in 0..with_id.len() {
        out.push(match parts.first().map(|p| &p[c]) {
            Some(ColumnData::U64(_)) => ColumnData::U64(
                order
                    .iter()
                    .map(|&(_, p, r)| match &parts[p][c] {
                        ColumnData::U64(v) => v[r],
                        _ => None,
                    })
                    .collect(),
            ),
            Some(ColumnData::F64(_)) => ColumnData::F64(
                order
                    .iter()
                    .map(|&(_, p, r)| match &parts[p][c] {
                        ColumnData::F64(v) => v[r],
                        _ => None,
                    })
                    .collect(),
            ),
            _ => ColumnData::Utf8(
                order
                    .iter()
                    .map(|&(_, p, r)| match &parts[p][c] {
                        ColumnData::Utf8(v) => v[r].clone(),
                        _ => None,
                    })
                    .collect(),
            ),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process of several writes one process's row groups over their number, never fewer
    /// rows than the least, and one process the writer's default.
    #[test]
    fn a_process_of_several_writes_groups_of_its_share() {
        assert_eq!(rows_per_group(1), ROWS_PER_GROUP);
        assert_eq!(rows_per_group(0), ROWS_PER_GROUP);
        assert_eq!(rows_per_group(2), ROWS_PER_GROUP / 2);
        assert_eq!(rows_per_group(3), ROWS_PER_GROUP / 3);
        // 2^20 rows over 8 are the least; more processes write no smaller groups.
        assert_eq!(rows_per_group(8), MIN_ROWS_PER_GROUP);
        assert_eq!(rows_per_group(1000), MIN_ROWS_PER_GROUP);
        for n in 1..100 {
            assert!(rows_per_group(n + 1) <= rows_per_group(n), "{n}");
        }
    }

    /// An afterstates part of `ids` (values: the id over 8) at `path`.
    fn part(store: &super::super::Store, path: &Path, ids: &[u64]) {
        let mut p = store.afterstates_part(path, &FileMeta::default()).unwrap();
        p.push_afterstates(
            ids.to_vec(),
            ids.iter().map(|&i| i as f64 / 8.0).collect(),
            ids.iter().map(|&i| (i % 7) as u8).collect(),
        )
        .unwrap();
        store.commit_part(p).unwrap();
    }

    #[test]
    fn parts_read_by_id_are_the_one_part_of_their_union() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::Store::new(dir.path());
        let all: Vec<u64> = (1..200u64).map(|i| i * 37 % 1009).collect::<Vec<_>>();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        let one = dir.path().join("one.parquet");
        part(&store, &one, &sorted);
        // Three parts as three processes own them: by a hash of the id, each sorted.
        let mut paths = Vec::new();
        for r in 0..3u64 {
            let ids: Vec<u64> = sorted
                .iter()
                .copied()
                .filter(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 62 == r % 4)
                .collect();
            let path = dir.path().join(format!("part-{r}.parquet"));
            part(&store, &path, &ids);
            paths.push(path);
        }
        let rest: Vec<u64> = sorted
            .iter()
            .copied()
            .filter(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 62 == 3)
            .collect();
        let path = dir.path().join("part-3.parquet");
        part(&store, &path, &rest);
        paths.push(path);
        let whole = read_columns_by_id(&[one], &["value", "empty"]).unwrap();
        let merged = read_columns_by_id(&paths, &["value", "empty"]).unwrap();
        assert_eq!(whole, merged);
        match &merged[0] {
            ColumnData::U64(ids) => {
                assert_eq!(ids.iter().map(|x| x.unwrap()).collect::<Vec<_>>(), sorted)
            }
            _ => panic!("ids are u64"),
        }
    }
}
