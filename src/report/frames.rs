//! Polars frames of the solver's per-age tables, for the dataframe work of the report: the
//! per-age series of several variants stacked side by side; and where the partitions of a
//! board and variant lie.
//!
//! The store reads the Parquet files (it owns their schema) and Polars gets the columns; it
//! never exchanges buffers with DuckDB. Work over every state (quantiles) runs in DuckDB
//! ([`super::data`]), whose library arrives built with optimisations: Polars and the crates
//! only the report uses are compiled at -O0 to keep a clean build short (Cargo.toml).

use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::ReportError;
use crate::store::layout::{ages_in, PART};
use crate::store::{ColumnData, Store};

/// The partition folder of a board and variant of `table`, if it exists.
pub fn partition_dir(store: &Store, table: &str, board: &str, variant: &str) -> Option<PathBuf> {
    store
        .layout()
        .partitions(table)
        .into_iter()
        .find(|p| p.board == board && p.variant == variant)
        .map(|p| p.dir)
}

/// `(age, file)` of every `age=N/part-0.parquet` under a partition folder, sorted by age.
pub fn age_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    ages_in(dir, "")
        .into_iter()
        .map(|(age, d)| (u64::from(age), d.join(PART)))
        .filter(|(_, f)| f.exists())
        .collect()
}

/// A Polars column of one column of a Parquet part, read through the store (which owns the
/// schema) as `Float64`.
fn f64_column(path: &Path, name: &str) -> Result<Column, ReportError> {
    let cols = crate::store::parquet::read_columns(path, &[name])?;
    let values: Vec<Option<f64>> = match cols.into_iter().next() {
        Some(ColumnData::F64(v)) => v,
        Some(ColumnData::U64(v)) => v.into_iter().map(|x| x.map(|x| x as f64)).collect(),
        _ => {
            return Err(ReportError::NoData {
                path: path.to_path_buf(),
                what: format!("column {name} is not numeric"),
            })
        }
    };
    Ok(Column::new(name.into(), values))
}

fn f64s(df: &DataFrame, name: &str, ctx: &str) -> Result<Vec<Option<f64>>, ReportError> {
    let c = df.column(name).map_err(|e| ReportError::polars(ctx, e))?;
    let s = c
        .as_materialized_series()
        .cast(&DataType::Float64)
        .map_err(|e| ReportError::polars(ctx, e))?;
    let ca = s.f64().map_err(|e| ReportError::polars(ctx, e))?;
    Ok(ca.iter().collect())
}

/// One per-age series of one board and variant.
#[derive(Debug, Clone)]
pub struct VariantSeries {
    pub board: String,
    pub variant: String,
    pub points: Vec<(u64, f64)>,
}

/// Stacks the per-age column `column` of `DIR/ages/board=B/variant=V/` for every given
/// (board, variant) that exists, dropping ages where it is null.
pub fn ages_column_by_variant(
    store: &Store,
    pairs: &[(String, String)],
    column: &str,
) -> Result<Vec<VariantSeries>, ReportError> {
    let ctx = format!("ages.{column} by variant");
    let mut out: Vec<VariantSeries> = Vec::new();
    for (board, variant) in pairs {
        let Some(dir) = partition_dir(store, "ages", board, variant) else {
            continue;
        };
        let files: Vec<PathBuf> = [dir.join(PART)]
            .into_iter()
            .filter(|p| p.exists())
            .collect();
        let mut frames = Vec::new();
        for f in files {
            frames.push(
                DataFrame::new_infer_height(vec![
                    f64_column(&f, "age")?,
                    f64_column(&f, column)?.with_name("y".into()),
                ])
                .map_err(|e| ReportError::polars(&ctx, e))?,
            );
        }
        let Some(mut df) = frames.pop() else {
            continue;
        };
        for f in frames {
            df.vstack_mut(&f)
                .map_err(|e| ReportError::polars(&ctx, e))?;
        }
        let mask = df
            .column("y")
            .map_err(|e| ReportError::polars(&ctx, e))?
            .is_not_null();
        let df = df
            .filter(&mask)
            .and_then(|d| d.sort(["age"], SortMultipleOptions::default()))
            .map_err(|e| ReportError::polars(&ctx, e))?;
        let (ages, ys) = (f64s(&df, "age", &ctx)?, f64s(&df, "y", &ctx)?);
        let points: Vec<(u64, f64)> = ages
            .iter()
            .zip(&ys)
            .filter_map(|(a, y)| Some((a.as_ref().copied()? as u64, y.as_ref().copied()?)))
            .collect();
        if !points.is_empty() {
            out.push(VariantSeries {
                board: board.clone(),
                variant: variant.clone(),
                points,
            });
        }
    }
    out.sort_by(|a, b| (&a.board, &a.variant).cmp(&(&b.board, &b.variant)));
    Ok(out)
}
