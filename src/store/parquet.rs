//! The Parquet files: writers of the `states`, `afterstates` and `ages` parts (schema from
//! [`super::schema`]), and a reader of named columns for the report and `compare`.

use std::fs;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, StringArray, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use super::error::{Result, StoreError};
use super::manifest::AgeStats;
use super::schema::{Table, AFTERSTATES, AGES, STATES};

pub(super) fn writer_props(delta_cols: &[&str], plain_cols: &[&str]) -> WriterProperties {
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

/// The Parquet file of one batch (see [`parquet_bytes_by_group`]).
pub(super) fn parquet_bytes(
    path: &Path,
    batch: &RecordBatch,
    props: WriterProperties,
) -> Result<Vec<u8>> {
    let err = |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    if props.max_row_group_bytes().is_some() {
        // Row groups cut by size: leave the cutting to the writer itself.
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).map_err(err)?;
        w.write(batch).map_err(err)?;
        w.close().map_err(err)?;
        return Ok(buf);
    }
    let schema = batch.schema();
    write_groups(path, schema, batch.num_rows(), props, |range| {
        Ok(batch.slice(range.start, range.len()))
    })
}

/// The Parquet file of `rows` rows of `table` whose columns `columns(range)` builds one row
/// group at a time, so that only one group's Arrow arrays exist at once (an age of 4x4
/// `goal-32` holds 60 M states: its columns at once took ≈ 2.5 GB). The bytes are those of
/// [`parquet_bytes`] over the whole batch, which are those of `ArrowWriter::write` + `close`.
pub(super) fn parquet_bytes_by_group(
    path: &Path,
    table: &Table,
    rows: usize,
    props: WriterProperties,
    columns: impl Fn(Range<usize>) -> Vec<ArrayRef> + Sync,
) -> Result<Vec<u8>> {
    debug_assert!(props.max_row_group_bytes().is_none());
    write_groups(path, arrow_schema(table), rows, props, |range| {
        batch(path, table, columns(range))
    })
}

/// Writes `rows` rows in row groups of the writer's row count, the group of `range` made by
/// `group(range)`. The columns of each row group are encoded in parallel (`ArrowWriter`'s own
/// column writers, one task per column) and appended in order, which gives the bytes
/// `ArrowWriter::write` + `close` would give (same row groups, pages, metadata).
fn write_groups(
    path: &Path,
    schema: SchemaRef,
    rows: usize,
    props: WriterProperties,
    group: impl Fn(Range<usize>) -> Result<RecordBatch>,
) -> Result<Vec<u8>> {
    let err = |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let mut buf = Vec::new();
    let rows_per_group = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
    let (mut writer, factory) = ArrowWriter::try_new(&mut buf, schema.clone(), Some(props))
        .and_then(ArrowWriter::into_serialized_writer)
        .map_err(err)?;
    let mut start = 0;
    let mut index = 0;
    while start < rows {
        let n = rows_per_group.min(rows - start);
        let slice = group(start..start + n)?;
        debug_assert_eq!(slice.num_rows(), n);
        let writers = factory.create_column_writers(index).map_err(err)?;
        let chunks: Vec<ArrowColumnChunk> = writers
            .into_par_iter()
            .zip(slice.columns().par_iter().zip(schema.fields().par_iter()))
            .map(|(mut w, (array, field))| {
                for leaf in compute_leaves(field, array)? {
                    w.write(&leaf)?;
                }
                w.close()
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(err)?;
        drop(slice);
        let mut rg = writer.next_row_group().map_err(err)?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut rg).map_err(err)?;
        }
        rg.close().map_err(err)?;
        start += n;
        index += 1;
    }
    writer.close().map_err(err)?;
    Ok(buf)
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

pub fn states_parquet(
    path: &Path,
    rows: usize,
    columns: impl Fn(Range<usize>) -> StatesColumns + Sync,
) -> Result<Vec<u8>> {
    parquet_bytes_by_group(
        path,
        &STATES,
        rows,
        writer_props(&["id"], &["value", "gap"]),
        |range| {
            let c = columns(range);
            vec![
                Arc::new(UInt64Array::from(c.id)),
                Arc::new(Float64Array::from(c.value)),
                Arc::new(BooleanArray::from(c.terminal)),
                Arc::new(UInt8Array::from(c.moves)),
                Arc::new(StringArray::from(c.best)),
                Arc::new(Float64Array::from(c.gap)),
                Arc::new(UInt8Array::from(c.empty)),
            ]
        },
    )
}

/// The `afterstates` file of one age: `columns(range)` gives the ids, values and empty
/// cells of the afterstates in `range` (asked one row group at a time).
pub fn afterstates_parquet(
    path: &Path,
    rows: usize,
    columns: impl Fn(Range<usize>) -> (Vec<u64>, Vec<f64>, Vec<u8>) + Sync,
) -> Result<Vec<u8>> {
    parquet_bytes_by_group(
        path,
        &AFTERSTATES,
        rows,
        writer_props(&["id"], &["value"]),
        |range| {
            let (id, value, empty) = columns(range);
            vec![
                Arc::new(UInt64Array::from(id)),
                Arc::new(Float64Array::from(value)),
                Arc::new(UInt8Array::from(empty)),
            ]
        },
    )
}

pub fn ages_parquet(path: &Path, ages: &[AgeStats]) -> Result<Vec<u8>> {
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
    let b = batch(path, &AGES, cols)?;
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
