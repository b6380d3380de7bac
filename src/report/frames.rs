//! Polars lazy scans of the solver's Parquet files, for the dataframe work of the report:
//! quantiles of the state values per age, and the per-age series of several variants stacked
//! side by side.
//!
//! The store reads the Parquet files (it owns their schema) and Polars gets the columns; it
//! never exchanges buffers with DuckDB.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::ReportError;
use crate::store::ColumnData;

/// Quantiles of the state values at each age of one board and variant.
#[derive(Debug, Clone, Default)]
pub struct QuantileBand {
    pub board: String,
    pub variant: String,
    pub age: Vec<u64>,
    pub n: Vec<u64>,
    pub q05: Vec<f64>,
    pub q25: Vec<f64>,
    pub q50: Vec<f64>,
    pub q75: Vec<f64>,
    pub q95: Vec<f64>,
    pub mean: Vec<f64>,
}

/// `(age, file)` for every `age=N/*.parquet` under a partition directory, sorted by age.
pub fn age_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(age) = name
            .strip_prefix("age=")
            .and_then(|a| a.parse::<u64>().ok())
        else {
            continue;
        };
        let Ok(files) = std::fs::read_dir(e.path()) else {
            continue;
        };
        let mut files: Vec<PathBuf> = files
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        files.sort();
        out.extend(files.into_iter().map(|f| (age, f)));
    }
    out.sort();
    out
}

/// A Polars column of one column of a Parquet part, read through the store (which owns the
/// schema) as `Float64`.
fn f64_column(path: &Path, name: &str) -> Result<Column, ReportError> {
    let cols = crate::store::read_columns(path, &[name]).map_err(|e| ReportError::NoData {
        path: path.to_path_buf(),
        what: e.to_string(),
    })?;
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

fn scalar_f64(s: PolarsResult<Scalar>, ctx: &str) -> Result<Option<f64>, ReportError> {
    let s = s.map_err(|e| ReportError::polars(ctx, e))?;
    Ok(s.value().extract::<f64>())
}

/// Quantiles (5, 25, 50, 75, 95 %, linear interpolation as DuckDB's `quantile_cont`) and mean
/// of `value` per age over `DIR/states/board=B/variant=V/age=*/`.
pub fn state_value_quantiles(
    data: &Path,
    board: &str,
    variant: &str,
) -> Result<QuantileBand, ReportError> {
    let ctx = format!("state value quantiles of {board} {variant}");
    let files = crate::sql::partition_dir(&data.join("states"), board, variant)
        .map(|d| age_files(&d))
        .unwrap_or_default();
    let mut band = QuantileBand {
        board: board.into(),
        variant: variant.into(),
        ..Default::default()
    };
    for (age, f) in &files {
        let values = f64_column(f, "value")?;
        let s = values.as_materialized_series();
        // Ages without states have no quantiles: skip them.
        if s.len() == s.null_count() {
            continue;
        }
        let q = |p: f64| scalar_f64(s.quantile_reduce(p, QuantileMethod::Linear), &ctx);
        let (Some(v05), Some(v25), Some(v50), Some(v75), Some(v95), Some(m)) =
            (q(0.05)?, q(0.25)?, q(0.50)?, q(0.75)?, q(0.95)?, s.mean())
        else {
            continue;
        };
        band.age.push(*age);
        band.n.push((s.len() - s.null_count()) as u64);
        band.q05.push(v05);
        band.q25.push(v25);
        band.q50.push(v50);
        band.q75.push(v75);
        band.q95.push(v95);
        band.mean.push(m);
    }
    Ok(band)
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
    data: &Path,
    pairs: &[(String, String)],
    column: &str,
) -> Result<Vec<VariantSeries>, ReportError> {
    let ctx = format!("ages.{column} by variant");
    let mut out: Vec<VariantSeries> = Vec::new();
    for (board, variant) in pairs {
        let Some(dir) = crate::sql::partition_dir(&data.join("ages"), board, variant) else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        files.sort();
        let mut frames = Vec::new();
        for f in files {
            frames.push(
                DataFrame::new_infer_height(vec![f64_column(&f, "age")?, f64_column(&f, column)?.with_name("y".into())])
                    .map_err(|e| ReportError::polars(&ctx, e))?,
            );
        }
        let Some(mut df) = frames.pop() else {
            continue;
        };
        for f in frames {
            df.vstack_mut(&f).map_err(|e| ReportError::polars(&ctx, e))?;
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
