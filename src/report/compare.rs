//! Compare variants of one board: "does the spawn rule change how one should play?"
//!
//! For each variant: the values at the starts (from the manifests). For each later variant
//! against the first, per age: the mean difference of state values and the share of states
//! whose best move differs, over the states both hold (goal variants stop at the goal tile,
//! so they hold fewer). The two `states` partitions of an age are merge-joined on `id`: the
//! store writes every part in ascending id order, so the join is one linear pass, summed in
//! id order. At an age one of the two solves has no states Parquet for (the compact layout),
//! the afterstates of the two age indexes are joined instead: the mean difference is then of
//! afterstate values, and the best move is not known (no state ids): such rows say
//! `over = afterstates`. The series are written as CSV and drawn as one figure (SVG and PNG).

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use super::frames::{age_files, partition_dir};
use super::render::{self, Figure, Line, Panel, PALETTE};
use super::{write_atomic, ReportError};
use crate::query::Tablebase;
use crate::rules::variant::Given;
use crate::rules::{Shape, Variant};
use crate::store::{ColumnData, Store, StoreError};

/// Per-age comparison of `variant` against `base`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgeDiff {
    pub age: u64,
    /// What was joined: states (from Parquet) or, where a solve has no states Parquet of the
    /// age, afterstates (from the age indexes).
    pub over: Over,
    /// States (afterstates) present in both variants.
    pub n: u64,
    /// Mean of value(variant) − value(base) over those states (afterstates).
    pub mean_value_diff: f64,
    /// Share of those states whose best move differs (a terminal state has none); NaN over
    /// afterstates.
    pub frac_best_differs: f64,
}

/// The boards an [`AgeDiff`] joins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Over {
    #[default]
    States,
    Afterstates,
}

impl Over {
    pub fn name(self) -> &'static str {
        match self {
            Over::States => "states",
            Over::Afterstates => "afterstates",
        }
    }
}

/// What `compare` produced.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub board: String,
    pub variants: Vec<String>,
    /// Per variant: (value from two 2-tiles, value over the initial distribution, unweighted
    /// mean over the distinct initial states).
    pub start_values: Vec<(Option<f64>, Option<f64>, Option<f64>)>,
    /// Per later variant (against the first).
    pub diffs: Vec<Vec<AgeDiff>>,
    pub files: Vec<PathBuf>,
}

/// `id`, `value` and `best` of one age's states, read through the store (which owns the
/// schema); the ids are checked to be strictly ascending, as the store writes them.
type StateCols = (Vec<u64>, Vec<Option<f64>>, Vec<Option<String>>);

fn states_columns(paths: &[PathBuf]) -> Result<StateCols, ReportError> {
    // The parts of a distributed solve's age merged in id order.
    let cols = crate::store::parquet::read_columns_by_id(paths, &["value", "best"])?;
    let path = paths.first().map_or(Path::new(""), |p| p.as_path());
    let mut it = cols.into_iter();
    let (Some(ColumnData::U64(id)), Some(ColumnData::F64(value)), Some(ColumnData::Utf8(best))) =
        (it.next(), it.next(), it.next())
    else {
        return Err(ReportError::NoData {
            path: path.to_path_buf(),
            what: "unexpected column types in a states part".into(),
        });
    };
    let id: Option<Vec<u64>> = id.into_iter().collect();
    let ascending = id
        .as_ref()
        .is_some_and(|id| id.windows(2).all(|w| w[0] < w[1]));
    match id {
        Some(id) if ascending => Ok((id, value, best)),
        _ => Err(StoreError::corrupt(path, "state ids are not strictly ascending").into()),
    }
}

/// One age: the two variants' states merge-joined on their sorted ids; the differences are
/// summed in id order (the same bits on every run).
fn diff_age(base: &[PathBuf], other: &[PathBuf], age: u64) -> Result<AgeDiff, ReportError> {
    let (a, b) = rayon::join(|| states_columns(base), || states_columns(other));
    let ((a_id, a_value, a_best), (b_id, b_value, b_best)) = (a?, b?);
    let (mut i, mut j) = (0, 0);
    let (mut n, mut valued, mut differs, mut sum) = (0u64, 0u64, 0u64, 0.0f64);
    while i < a_id.len() && j < b_id.len() {
        match a_id[i].cmp(&b_id[j]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                n += 1;
                if let (Some(a), Some(b)) = (a_value[i], b_value[j]) {
                    sum += b - a;
                    valued += 1;
                }
                differs += u64::from(a_best[i] != b_best[j]);
                i += 1;
                j += 1;
            }
        }
    }
    let ratio = |x: f64, d: u64| if d > 0 { x / d as f64 } else { f64::NAN };
    Ok(AgeDiff {
        age,
        over: Over::States,
        n,
        mean_value_diff: ratio(sum, valued),
        frac_best_differs: ratio(differs as f64, n),
    })
}

/// One age over the afterstates of two solves' age indexes, merge-joined on their ascending
/// ids and summed in id order.
fn diff_age_afterstates(
    base: impl Iterator<Item = (u64, f64)>,
    other: impl Iterator<Item = (u64, f64)>,
    age: u64,
) -> AgeDiff {
    let (mut a, mut b) = (base.peekable(), other.peekable());
    let (mut n, mut sum) = (0u64, 0.0f64);
    while let (Some(&(x, vx)), Some(&(y, vy))) = (a.peek(), b.peek()) {
        match x.cmp(&y) {
            Ordering::Less => {
                a.next();
            }
            Ordering::Greater => {
                b.next();
            }
            Ordering::Equal => {
                n += 1;
                sum += vy - vx;
                a.next();
                b.next();
            }
        }
    }
    AgeDiff {
        age,
        over: Over::Afterstates,
        n,
        mean_value_diff: if n > 0 { sum / n as f64 } else { f64::NAN },
        frac_best_differs: f64::NAN,
    }
}

/// Compares `variants` (the first is the base) of `board`, writing CSV and figures into `out`.
/// The variants must be distinct and solved under the same symmetry group (their ids are
/// joined).
pub fn compare(
    store: &Store,
    shape: Shape,
    variants: &[String],
    out: &Path,
) -> Result<Comparison, ReportError> {
    if variants.len() < 2 {
        return Err(ReportError::Input(
            "compare needs at least two variants (--variants A,B)".into(),
        ));
    }
    if let Some(v) = variants
        .iter()
        .enumerate()
        .find_map(|(i, v)| variants[..i].contains(v).then_some(v))
    {
        return Err(ReportError::Input(format!(
            "variant {v} is listed twice: compare needs distinct variants"
        )));
    }
    let board = shape.to_string();
    // Only solves whose files match their manifest are compared (`Tablebase::open` checks).
    let tablebases = variants
        .iter()
        .map(|v| {
            let variant = Variant::parse(v, Given::default())
                .map_err(|e| ReportError::Input(format!("variant {v}: {e}")))?;
            Ok(Tablebase::open(store, shape, variant)?)
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    let start_values: Vec<(Option<f64>, Option<f64>, Option<f64>)> = tablebases
        .iter()
        .map(|tb| {
            let m = tb.manifest();
            (
                m.value_two_2_tiles,
                m.value_initial,
                m.value_initial_distinct,
            )
        })
        .collect();
    let group = |i: usize| &tablebases[i].manifest().symmetry;
    if let Some(i) = (1..variants.len()).find(|&i| group(i) != group(0)) {
        return Err(ReportError::Input(format!(
            "{board} {} was solved under symmetry {}, {} under {}: ids of different groups cannot be joined",
            variants[0],
            group(0),
            variants[i],
            group(i)
        )));
    }
    let states_dir = |v: &str| partition_dir(store, "states", &board, v);
    let states_files = |v: &str| -> BTreeMap<u64, Vec<PathBuf>> {
        states_dir(v)
            .map(|d| age_files(&d))
            .unwrap_or_default()
            .into_iter()
            .collect()
    };
    let ages = |tb: &Tablebase| -> BTreeSet<u64> {
        tb.manifest()
            .ages
            .iter()
            .map(|a| u64::from(a.age))
            .collect()
    };
    let base_files = states_files(&variants[0]);
    let base_ages = ages(&tablebases[0]);
    let mut diffs: Vec<Vec<AgeDiff>> = Vec::new();
    for (v, tb) in variants[1..].iter().zip(&tablebases[1..]) {
        let other = states_files(v);
        let series: Vec<AgeDiff> = base_ages
            .intersection(&ages(tb))
            .copied()
            .collect::<Vec<u64>>()
            .par_iter()
            .map(|&age| match (base_files.get(&age), other.get(&age)) {
                (Some(base), Some(o)) => diff_age(base, o, age),
                _ => Ok(diff_age_afterstates(
                    tablebases[0].afterstates(age as u32)?,
                    tb.afterstates(age as u32)?,
                    age,
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        diffs.push(series.into_iter().filter(|d| d.n > 0).collect());
    }

    fs::create_dir_all(out).map_err(|e| ReportError::io("writing", out, e))?;
    let stem = format!("compare-{board}-{}", variants.join("-vs-"));
    let mut files = Vec::new();
    // Values at the starts.
    let mut csv = String::from("variant,value_two_2_tiles,value_initial,value_initial_distinct\n");
    for (v, (two, init, distinct)) in variants.iter().zip(&start_values) {
        let f = |x: &Option<f64>| x.map_or(String::new(), |v| v.to_string());
        let _ = writeln!(csv, "{v},{},{},{}", f(two), f(init), f(distinct));
    }
    let starts_path = out.join(format!("{stem}-starts.csv"));
    write_atomic(&starts_path, csv.as_bytes())?;
    files.push(starts_path);
    // Per-age series.
    let mut csv = String::from("variant,base,age,over,n,mean_value_diff,frac_best_differs\n");
    for (v, series) in variants[1..].iter().zip(&diffs) {
        for d in series {
            let best = if d.frac_best_differs.is_nan() {
                String::new()
            } else {
                d.frac_best_differs.to_string()
            };
            let _ = writeln!(
                csv,
                "{v},{},{},{},{},{},{best}",
                variants[0],
                d.age,
                d.over.name(),
                d.n,
                d.mean_value_diff
            );
        }
    }
    let series_path = out.join(format!("{stem}.csv"));
    write_atomic(&series_path, csv.as_bytes())?;
    files.push(series_path);

    let compact = diffs.iter().flatten().any(|d| d.over == Over::Afterstates);
    let mut value = Panel::new(
        "age (sum of tiles)",
        &format!(
            "mean {} value − {}",
            if compact {
                "state (afterstate where compact)"
            } else {
                "state"
            },
            variants[0]
        ),
    );
    value.y_from_zero = false;
    let mut best = Panel::new(
        "age (sum of tiles)",
        "share of states whose best move differs",
    );
    for (i, (v, series)) in variants[1..].iter().zip(&diffs).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        value.lines.push(Line {
            label: v.clone(),
            color,
            dashed: false,
            points: series
                .iter()
                .map(|d| (d.age as f64, d.mean_value_diff))
                .collect(),
        });
        best.lines.push(Line {
            label: v.clone(),
            color,
            dashed: false,
            points: series
                .iter()
                .filter(|d| d.over == Over::States)
                .map(|d| (d.age as f64, d.frac_best_differs))
                .collect(),
        });
    }
    let fig = Figure {
        name: stem.clone(),
        title: format!(
            "{board}: {} against {}",
            variants[1..].join(", "),
            variants[0]
        ),
        panels: vec![value, best],
        width: 1400,
        height: 560,
    };
    let svg_path = out.join(format!("{stem}.svg"));
    write_atomic(&svg_path, render::to_svg(&fig)?.as_bytes())?;
    files.push(svg_path);
    let png_path = out.join(format!("{stem}.png"));
    super::write_png(&png_path, |tmp| render::to_png(&fig, tmp))?;
    files.push(png_path);

    Ok(Comparison {
        board,
        variants: variants.to_vec(),
        start_values,
        diffs,
        files,
    })
}

pub fn print_summary(c: &Comparison, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let io = |e| e;
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
    writeln!(
        out,
        "{:<28} {:>18} {:>18} {:>18}",
        "variant", "two 2-tiles", "initial", "distinct starts"
    )
    .map_err(io)?;
    for (v, (two, init, distinct)) in c.variants.iter().zip(&c.start_values) {
        writeln!(
            out,
            "{v:<28} {:>18} {:>18} {:>18}",
            f(*two),
            f(*init),
            f(*distinct)
        )
        .map_err(io)?;
    }
    for (v, series) in c.variants[1..].iter().zip(&c.diffs) {
        let states = || series.iter().filter(|d| d.over == Over::States);
        let n: u64 = states().map(|d| d.n).sum();
        let differs: f64 = states()
            .map(|d| d.frac_best_differs * d.n as f64)
            .sum::<f64>();
        let share = if n > 0 { differs / n as f64 } else { f64::NAN };
        writeln!(
            out,
            "{v} against {}: {n} common states, best move differs in {:.2} % of them",
            c.variants[0],
            100.0 * share
        )
        .map_err(io)?;
        let after: Vec<&AgeDiff> = series
            .iter()
            .filter(|d| d.over == Over::Afterstates)
            .collect();
        if !after.is_empty() {
            writeln!(
                out,
                "{v} against {}: {} ages without states Parquet (compact layout) compared over {} common afterstates; their best moves are not known without state ids",
                c.variants[0],
                after.len(),
                after.iter().map(|d| d.n).sum::<u64>()
            )
            .map_err(io)?;
        }
    }
    for p in &c.files {
        writeln!(out, "wrote {}", p.display()).map_err(io)?;
    }
    Ok(())
}
