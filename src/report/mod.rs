//! The `report` command: figures (SVG + PNG + CSV of each series), tables (Markdown + CSV),
//! `index.html` and `README.md` from a solved data directory.
//!
//! Data flow: DuckDB runs the queries in `sql/` over the views of [`crate::query::catalog`]
//! (per-age series, board totals); [`frames`] computes the quantile band of the state values
//! (sorted and interpolated in our crate, the mean by Polars) and frames the per-age tables of
//! the variants side by side; `compare` merge-joins two variants' states on their sorted ids
//! ([`compare`]); the manifests give values, timings, index sizes and digests. Every file is
//! written to a temporary name and renamed, so re-running over an existing folder is
//! idempotent and never leaves a half-written file.
//!
//! Output layout of `OUT/`:
//! `figures/<name>.{svg,png,csv}`, `tables/<name>.{md,csv}`, `index.html`, `README.md`.

pub mod compare;
pub mod data;
pub mod error;
pub mod figures;
pub mod frames;
pub mod page;
pub mod render;
pub mod tables;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow::array::ArrayRef;
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;

pub use error::ReportError;

use crate::store::Store;
use data::{board_key, variant_key};
use figures::BoardInfo;

/// What [`run_report`] produced.
#[derive(Debug, Clone, Default)]
pub struct ReportSummary {
    /// The output folder.
    pub out: PathBuf,
    /// Boards and variants found.
    pub boards: Vec<String>,
    pub variants: Vec<String>,
    /// Figure names (each written as `figures/NAME.svg`, `.png`, `.csv`).
    pub figures: Vec<String>,
    /// Table names (each written as `tables/NAME.md`, `.csv`).
    pub tables: Vec<String>,
    /// Every file written, relative to `out`.
    pub files: Vec<PathBuf>,
}

/// CSV bytes (with header) of named columns, via Arrow's CSV writer.
pub(crate) fn csv_bytes(cols: Vec<(&str, ArrayRef)>) -> Result<Vec<u8>, ReportError> {
    let fields: Vec<Field> = cols
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(
        std::sync::Arc::new(Schema::new(fields)),
        cols.into_iter().map(|(_, a)| a).collect(),
    )
    .map_err(|e| ReportError::arrow("building a CSV batch", e))?;
    let mut buf = Vec::new();
    {
        let mut w = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(&mut buf);
        w.write(&batch)
            .map_err(|e| ReportError::arrow("writing CSV", e))?;
    }
    Ok(buf)
}

/// A temporary sibling of `path` keeping its extension (plotters picks the image format from it).
fn temp_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|s| format!(".{}", s.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!(".{stem}.tmp-{}{ext}", std::process::id()))
}

/// Writes `bytes` to `path` durably and atomically (the store's one atomic write).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    crate::store::atomic::write(path, bytes)?;
    Ok(())
}

/// Renders a PNG through plotters (which writes to a path) under a temporary name, then puts
/// it in place durably.
pub(crate) fn write_png(
    path: &Path,
    render: impl FnOnce(&Path) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let tmp = temp_path(path);
    render(&tmp)?;
    crate::store::atomic::commit(&tmp, path)?;
    Ok(())
}

/// Writes `DIR/NAME.svg` and `DIR/NAME.png` of a figure (the SVG is drawn before either
/// file is written); returns the two paths.
pub fn write_figure_images(dir: &Path, fig: &render::Figure) -> Result<[PathBuf; 2], ReportError> {
    let svg = render::to_svg(fig)?;
    let svg_path = dir.join(format!("{}.svg", fig.name));
    let png_path = dir.join(format!("{}.png", fig.name));
    write_atomic(&svg_path, svg.as_bytes())?;
    write_png(&png_path, |tmp| render::to_png(fig, tmp))?;
    Ok([svg_path, png_path])
}

struct Progress<'a> {
    total: usize,
    done: usize,
    start: Instant,
    say: &'a dyn Fn(&str),
}

impl Progress<'_> {
    fn step(&mut self, what: &str) {
        self.done += 1;
        (self.say)(&format!(
            "report: [{}/{}] {what} ({:.1} s)",
            self.done,
            self.total,
            self.start.elapsed().as_secs_f64()
        ));
    }
}

/// The report's page, relative to its folder.
pub const PAGE: &str = "index.html";

/// True when `out` holds a report of the solves in `data` as they are now: its page is there
/// and its list of data files (`tables/provenance.csv`, every file with its SHA-256) is the
/// one the manifests give today.
pub fn is_current(data: &Path, out: &Path) -> Result<bool, ReportError> {
    let store = Store::open(data)?;
    let manifests = data::load_manifests(&store)?;
    let table = tables::provenance_table(&manifests);
    let want = table.csv()?;
    let have = std::fs::read(out.join("tables").join(format!("{}.csv", table.name)));
    Ok(out.join(PAGE).is_file() && have.is_ok_and(|h| h == want))
}

/// The `report` command: reads the solved data under `data` and writes the report to `out`;
/// `say` receives a line per step.
pub fn run_report(
    data: &Path,
    out: &Path,
    say: &dyn Fn(&str),
) -> Result<ReportSummary, ReportError> {
    let start = Instant::now();
    let store = Store::open(data)?;
    let conn = crate::query::catalog::open(&store)?;
    let manifests = data::load_manifests(&store)?;
    let rows = data::per_age(&conn)?;
    if rows.is_empty() {
        return Err(ReportError::NoData {
            path: data.to_path_buf(),
            what: "no ages/board=*/variant=*/part-0.parquet found".into(),
        });
    }
    let board_rows = data::boards(&conn)?;
    let main = figures::main_variants(&rows);

    let mut boards: Vec<String> = main.keys().cloned().collect();
    boards.sort_by_key(|b| board_key(b));
    let mut variants: Vec<String> = board_rows.iter().map(|r| r.variant.clone()).collect();
    variants.sort_by_key(|v| variant_key(v));
    variants.dedup();

    // Largest tile: from the manifest, else computed from the state codes.
    let mut largest: BTreeMap<(String, String), u64> = BTreeMap::new();
    for e in &manifests {
        if e.manifest.max_tile > 0 {
            largest.insert(
                (e.board.clone(), e.variant.clone()),
                u64::from(e.manifest.max_tile),
            );
        }
    }
    if main
        .iter()
        .any(|(b, v)| !largest.contains_key(&(b.clone(), v.clone())))
    {
        match data::largest_tiles(&conn) {
            Ok(m) => {
                for (k, t) in m {
                    largest.entry(k).or_insert(t);
                }
            }
            Err(e) => say(&format!("report: warning: largest tile not computed: {e}")),
        }
    }
    let infos: Vec<BoardInfo> = boards
        .iter()
        .map(|b| {
            let v = main[b].clone();
            BoardInfo {
                board: b.clone(),
                largest_tile: largest.get(&(b.clone(), v.clone())).copied(),
                max_age: board_rows
                    .iter()
                    .find(|r| r.board == *b && r.variant == v)
                    .and_then(|r| r.max_age),
                variant: v,
            }
        })
        .collect();

    let qboard = figures::quantile_board(&infos, &store);
    let pairs: Vec<(String, String)> = board_rows
        .iter()
        .filter(|r| {
            matches!(
                r.variant.as_str(),
                "expectation" | "optimistic" | "pessimistic"
            )
        })
        .map(|r| (r.board.clone(), r.variant.clone()))
        .collect();
    let best = frames::ages_column_by_variant(&store, &pairs, "best_afterstate_value")?;
    let mut specs = figures::build_figures(&rows, &infos, &best)?;
    specs.extend(figures::reached_figure(&store)?);
    // Every step is counted before the first is shown: the two reads above, the quantiles and
    // their figure (when a board has states), one step a figure, the tables and the pages.
    let quantile_steps = if qboard.is_some() { 2 } else { 0 };
    let mut progress = Progress {
        total: 2 + quantile_steps + specs.len() + 2,
        done: 0,
        start,
        say,
    };
    progress.step("per-age series and board totals (DuckDB)");
    progress.step("best afterstate value by variant (Polars)");
    let mut quantile_spec = None;
    if let Some(b) = &qboard {
        let q = frames::state_value_quantiles(&store, &b.board, &b.variant)?;
        progress.step(&format!("state value quantiles (board {})", b.board));
        quantile_spec = figures::quantile_figure(&q)?;
        if quantile_spec.is_none() {
            progress.step(&format!(
                "figure state_value_quantiles_{}: no state has a value, not drawn",
                b.board
            ));
        }
    }
    specs.extend(quantile_spec);

    let fig_dir = out.join("figures");
    let tab_dir = out.join("tables");
    for d in [out, fig_dir.as_path(), tab_dir.as_path()] {
        std::fs::create_dir_all(d).map_err(|e| ReportError::io("creating", d, e))?;
    }
    let mut summary = ReportSummary {
        out: out.to_path_buf(),
        boards: boards.clone(),
        variants: variants.clone(),
        ..Default::default()
    };
    for spec in &specs {
        let n = &spec.figure.name;
        write_figure_images(&fig_dir, &spec.figure)?;
        write_atomic(&fig_dir.join(format!("{n}.csv")), &spec.csv)?;
        for ext in ["svg", "png", "csv"] {
            summary
                .files
                .push(PathBuf::from("figures").join(format!("{n}.{ext}")));
        }
        summary.figures.push(n.clone());
        progress.step(&format!("figure {n}"));
    }

    let tables = vec![
        tables::boards_table(&board_rows, &main, &manifests, &largest),
        tables::goals_table(&manifests),
        tables::variants_table(&board_rows, &manifests),
        tables::index_summary_table(&manifests, &main),
        tables::index_table(&manifests, &main),
        tables::provenance_table(&manifests),
    ];
    for t in &tables {
        write_atomic(&tab_dir.join(format!("{}.csv", t.name)), &t.csv()?)?;
        summary
            .files
            .push(PathBuf::from("tables").join(format!("{}.csv", t.name)));
        if t.shown.as_ref().is_none_or(|v| !v.is_empty()) {
            let md = format!("# {}\n\n{}\n\n{}", t.title, t.description, t.markdown());
            write_atomic(&tab_dir.join(format!("{}.md", t.name)), md.as_bytes())?;
            summary
                .files
                .push(PathBuf::from("tables").join(format!("{}.md", t.name)));
        }
        summary.tables.push(t.name.clone());
    }
    progress.step("tables");

    let data_str = data.display().to_string();
    let inp = page::PageInput {
        data_dir: &data_str,
        boards: &boards,
        variants: &variants,
        figures: &specs,
        tables: &tables,
        manifests: &manifests,
    };
    write_atomic(&out.join("README.md"), page::readme(&inp).as_bytes())?;
    write_atomic(&out.join(PAGE), page::index_html(&inp).as_bytes())?;
    summary.files.push(PathBuf::from("README.md"));
    summary.files.push(PathBuf::from("index.html"));
    progress.step("README.md and index.html");
    Ok(summary)
}
