//! Polars lazy scans of the solver's Parquet files, for the dataframe work of the report:
//! quantiles of the state values per age, and the per-age series of several variants stacked
//! side by side.
//!
//! Polars keeps its own Arrow, so it reads the Parquet files directly (one lazy scan per age
//! file, the age taken from the Hive directory name and added as a literal column) and never
//! exchanges buffers with DuckDB.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::ReportError;

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

fn scan(path: &Path) -> Result<LazyFrame, ReportError> {
    let s = path.to_str().ok_or_else(|| ReportError::NoData {
        path: path.to_path_buf(),
        what: "path is not valid UTF-8".into(),
    })?;
    let mut args = ScanArgsParquet::default();
    args.hive_options.enabled = Some(false);
    LazyFrame::scan_parquet(PlRefPath::new(s), args)
        .map_err(|e| ReportError::polars(format!("scanning {s}"), e))
}

fn f64s(df: &DataFrame, name: &str, ctx: &str) -> Result<Vec<Option<f64>>, ReportError> {
    let c = df.column(name).map_err(|e| ReportError::polars(ctx, e))?;
    let s = c
        .as_materialized_series()
        .cast(&DataType::Float64)
        .map_err(|e| ReportError::polars(ctx, e))?;
    let ca = s.f64().map_err(|e| ReportError::polars(ctx, e))?;
    Ok((0..ca.len()).map(|i| ca.get(i)).collect())
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
    if files.is_empty() {
        return Ok(QuantileBand {
            board: board.into(),
            variant: variant.into(),
            ..Default::default()
        });
    }
    let mut frames = Vec::with_capacity(files.len());
    for (age, f) in &files {
        frames
            .push(scan(f)?.select([col("value").cast(DataType::Float64), lit(*age).alias("age")]));
    }
    let q = |p: f64, name: &str| {
        col("value")
            .quantile(lit(p), QuantileMethod::Linear)
            .alias(name)
    };
    let df = concat(frames, UnionArgs::default())
        .map_err(|e| ReportError::polars(&ctx, e))?
        .group_by([col("age")])
        .agg([
            len().alias("n"),
            q(0.05, "q05"),
            q(0.25, "q25"),
            q(0.50, "q50"),
            q(0.75, "q75"),
            q(0.95, "q95"),
            col("value").mean().alias("mean"),
        ])
        .sort(["age"], SortMultipleOptions::default())
        .collect()
        .map_err(|e| ReportError::polars(&ctx, e))?;
    let get = |n: &str| f64s(&df, n, &ctx);
    let (age, n) = (get("age")?, get("n")?);
    let (q05, q25, q50, q75, q95, mean) = (
        get("q05")?,
        get("q25")?,
        get("q50")?,
        get("q75")?,
        get("q95")?,
        get("mean")?,
    );
    let mut band = QuantileBand {
        board: board.into(),
        variant: variant.into(),
        ..Default::default()
    };
    for i in 0..df.height() {
        // Ages without states have no quantiles: skip them.
        let (Some(a), Some(c), Some(v05), Some(v25), Some(v50), Some(v75), Some(v95), Some(m)) = (
            age[i], n[i], q05[i], q25[i], q50[i], q75[i], q95[i], mean[i],
        ) else {
            continue;
        };
        band.age.push(a as u64);
        band.n.push(c as u64);
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
    let mut frames = Vec::new();
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
        for f in files {
            frames.push(scan(&f)?.select([
                lit(board.as_str()).alias("board"),
                lit(variant.as_str()).alias("variant"),
                col("age").cast(DataType::UInt64),
                col(column).cast(DataType::Float64).alias("y"),
            ]));
        }
    }
    if frames.is_empty() {
        return Ok(Vec::new());
    }
    let df = concat(frames, UnionArgs::default())
        .map_err(|e| ReportError::polars(&ctx, e))?
        .filter(col("y").is_not_null())
        .sort(["board", "variant", "age"], SortMultipleOptions::default())
        .collect()
        .map_err(|e| ReportError::polars(&ctx, e))?;
    let strs = |name: &str| -> Result<Vec<String>, ReportError> {
        let c = df.column(name).map_err(|e| ReportError::polars(&ctx, e))?;
        let s = c.as_materialized_series();
        let ca = s.str().map_err(|e| ReportError::polars(&ctx, e))?;
        Ok((0..ca.len())
            .map(|i| ca.get(i).unwrap_or_default().to_string())
            .collect())
    };
    let (boards, variants) = (strs("board")?, strs("variant")?);
    let (ages, ys) = (f64s(&df, "age", &ctx)?, f64s(&df, "y", &ctx)?);
    let mut out: Vec<VariantSeries> = Vec::new();
    for i in 0..df.height() {
        let (Some(a), Some(y)) = (ages[i], ys[i]) else {
            continue;
        };
        match out.last_mut() {
            Some(s) if s.board == boards[i] && s.variant == variants[i] => {
                s.points.push((a as u64, y))
            }
            _ => out.push(VariantSeries {
                board: boards[i].clone(),
                variant: variants[i].clone(),
                points: vec![(a as u64, y)],
            }),
        }
    }
    Ok(out)
}
