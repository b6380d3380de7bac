//! Polars frames of the solver's Parquet files, for the dataframe work of the report: the
//! quantile band of the state values per age, the per-age series of several variants stacked
//! side by side; and where the partitions of a board and variant lie.
//!
//! The store reads the Parquet files (it owns their schema) and Polars gets the columns; it
//! never exchanges buffers with DuckDB. Polars and the crates only the report uses are compiled
//! at -O0 to keep a clean build short (Cargo.toml), so work over every state does not run in
//! their kernels: the quantiles sort and interpolate here ([`linear_quantiles`], compiled with
//! our crate), and Polars only sums the mean.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::ReportError;
use crate::store::layout::{ages_in, part_files, PART};
use crate::store::{ColumnData, Store};

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

/// The probabilities of the quantile band: 5, 25, 50, 75 and 95 %.
pub const BAND: [f64; 5] = [0.05, 0.25, 0.50, 0.75, 0.95];

/// Quantiles of ascending `sorted` values by linear interpolation between order statistics
/// (Hyndman & Fan's type 7, the default of R, NumPy, Polars and DuckDB's `quantile_cont`):
/// with `h = (n − 1)·p`, `lo = x[⌊h⌋]` and `hi = x[⌈h⌉]` (0-based), the quantile is `lo` when
/// `lo == hi`, else `(h − ⌊h⌋)·(hi − lo) + lo`, rounded in that order — Polars' `Linear`
/// rounding, so the figure keeps the bits it had when Polars computed it. `None` when `sorted`
/// is empty.
pub fn linear_quantiles(sorted: &[f64], ps: &[f64]) -> Option<Vec<f64>> {
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "values not sorted");
    let last = sorted.len().checked_sub(1)?;
    Some(
        ps.iter()
            .map(|&p| {
                debug_assert!((0.0..=1.0).contains(&p), "probability {p} out of [0, 1]");
                let h = last as f64 * p;
                let (i, j) = ((h as usize).min(last), (h.ceil() as usize).min(last));
                let (lo, hi) = (sorted[i], sorted[j]);
                if i == j || lo == hi {
                    lo
                } else {
                    (h - i as f64) * (hi - lo) + lo
                }
            })
            .collect(),
    )
}

/// The quantile band ([`BAND`], [`linear_quantiles`]) and the mean of `value` per age over
/// `DIR/states/board=B/variant=V/age=*/`, the ages read in parallel; ages without values have
/// no row. The mean is Polars' sum over the column divided by its length.
pub fn state_value_quantiles(
    store: &Store,
    board: &str,
    variant: &str,
) -> Result<QuantileBand, ReportError> {
    use rayon::prelude::*;
    let files = partition_dir(store, "states", board, variant)
        .map(|d| age_files(&d))
        .unwrap_or_default();
    type Row = (u64, u64, Vec<f64>, f64);
    let rows: Vec<Option<Row>> = files
        .par_iter()
        .map(|(age, f)| -> Result<Option<Row>, ReportError> {
            // In id order, as one part holds them: the mean sums them in the same order.
            let opts = match crate::store::parquet::read_columns_by_id(f, &["value"])?.pop() {
                Some(ColumnData::F64(v)) => v,
                _ => f64_values(&f[0], "value")?,
            };
            let Some(mean) = Column::new("value".into(), &opts)
                .as_materialized_series()
                .mean()
            else {
                return Ok(None);
            };
            let mut values: Vec<f64> = opts.into_iter().flatten().collect();
            values.sort_unstable_by(f64::total_cmp);
            Ok(linear_quantiles(&values, &BAND).map(|q| (*age, values.len() as u64, q, mean)))
        })
        .collect::<Result<_, _>>()?;
    let mut band = QuantileBand {
        board: board.into(),
        variant: variant.into(),
        ..Default::default()
    };
    for (age, n, q, mean) in rows.into_iter().flatten() {
        band.age.push(age);
        band.n.push(n);
        band.q05.push(q[0]);
        band.q25.push(q[1]);
        band.q50.push(q[2]);
        band.q75.push(q[3]);
        band.q95.push(q[4]);
        band.mean.push(mean);
    }
    Ok(band)
}

/// The partition folder of a board and variant of `table`, if it exists.
pub fn partition_dir(store: &Store, table: &str, board: &str, variant: &str) -> Option<PathBuf> {
    store
        .layout()
        .partitions(table)
        .into_iter()
        .find(|p| p.board == board && p.variant == variant)
        .map(|p| p.dir)
}

/// `(age, parts)` of every `age=N` folder with Parquet parts under a partition folder (one
/// part, or one a process of a distributed solve), sorted by age.
pub fn age_files(dir: &Path) -> Vec<(u64, Vec<PathBuf>)> {
    ages_in(dir, "")
        .into_iter()
        .map(|(age, d)| (u64::from(age), part_files(&d)))
        .filter(|(_, f)| !f.is_empty())
        .collect()
}

/// A Polars column of one column of a Parquet part, read through the store (which owns the
/// schema) as `Float64`.
fn f64_column(path: &Path, name: &str) -> Result<Column, ReportError> {
    Ok(Column::new(name.into(), f64_values(path, name)?))
}

/// One column of a Parquet part, read through the store, as `f64`s.
fn f64_values(path: &Path, name: &str) -> Result<Vec<Option<f64>>, ReportError> {
    let cols = crate::store::parquet::read_columns(path, &[name])?;
    Ok(match cols.into_iter().next() {
        Some(ColumnData::F64(v)) => v,
        Some(ColumnData::U64(v)) => v.into_iter().map(|x| x.map(|x| x as f64)).collect(),
        _ => {
            return Err(ReportError::NoData {
                path: path.to_path_buf(),
                what: format!("column {name} is not numeric"),
            })
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::QuantileMethod;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn linear_quantiles_of_small_samples() {
        assert_eq!(linear_quantiles(&[], &BAND), None);
        assert_eq!(linear_quantiles(&[7.0], &BAND), Some(vec![7.0; 5]));
        // h = 3p: 0.15, 0.75, 1.5, 2.25, 2.85.
        let q = linear_quantiles(&[1.0, 2.0, 4.0, 8.0], &BAND).unwrap();
        for (got, want) in q.iter().zip([1.15, 1.75, 3.0, 5.0, 7.4]) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
        assert_eq!(
            linear_quantiles(&[1.0, 2.0, 4.0, 8.0], &[0.0, 1.0]),
            Some(vec![1.0, 8.0])
        );
        // Equal neighbours are returned as they are, not interpolated.
        assert_eq!(linear_quantiles(&[3.0, 3.0], &[0.3]), Some(vec![3.0]));
    }

    /// Seeded samples of several sizes and spreads (ties, wide ranges, a single value): the
    /// band equals Polars' `Linear` quantiles bit for bit, which is what the figure showed when
    /// Polars computed it.
    #[test]
    fn linear_quantiles_equal_polars_bit_for_bit() {
        let mut rng = StdRng::seed_from_u64(2048);
        for trial in 0..200 {
            let n = [1, 2, 3, 5, 20, 101, 1000][trial % 7];
            let mut v: Vec<f64> = (0..n)
                .map(|_| match trial % 3 {
                    0 => rng.gen_range(0.0..6000.0),
                    1 => f64::from(rng.gen_range(0u8..4)) * 0.25,
                    _ => rng.gen::<f64>() * 10f64.powi(rng.gen_range(-3..6)),
                })
                .collect();
            let s = Series::new("v".into(), &v);
            v.sort_unstable_by(f64::total_cmp);
            let ours = linear_quantiles(&v, &BAND).unwrap();
            for (p, q) in BAND.iter().zip(&ours) {
                let theirs = s
                    .quantile_reduce(*p, QuantileMethod::Linear)
                    .unwrap()
                    .value()
                    .extract::<f64>()
                    .unwrap();
                assert_eq!(
                    q.to_bits(),
                    theirs.to_bits(),
                    "trial {trial}, n {n}, p {p}: {q} vs {theirs}"
                );
            }
        }
    }
}
