//! The report's tables, written as Markdown and CSV (and shown in `index.html`): one row per
//! board, the goal probabilities beside the published ones, one row per board and variant,
//! and the index storage (a summary like Table 1 of the 4x3 paper, every age in CSV), all
//! from the manifests.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, StringArray, UInt64Array};

use super::data::{BoardRow, ManifestEntry};
use super::{csv_bytes, ReportError};
use crate::rules::variant::{Given, NO_DISCOUNT};
use crate::rules::{Kind, Variant};

/// One cell of a table.
#[derive(Debug, Clone)]
pub enum Cell {
    Text(String),
    Int(Option<u64>),
    /// A float with the number of decimals shown in Markdown/HTML (CSV keeps full precision).
    Float(Option<f64>, usize),
}

impl Cell {
    /// The cell as shown in Markdown and HTML.
    pub fn display(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(None) | Cell::Float(None, _) => "–".into(),
            Cell::Int(Some(v)) => group(*v),
            Cell::Float(Some(v), d) => format!("{v:.d$}", d = *d),
        }
    }
}

/// `1234567` → `1,234,567`.
fn group(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A table of the report.
#[derive(Debug, Clone)]
pub struct Table {
    /// File stem (`tables/NAME.md`, `tables/NAME.csv`).
    pub name: String,
    pub title: String,
    pub description: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Rows shown in Markdown/HTML when not all of them (the CSV has all).
    pub shown: Option<Vec<usize>>,
    pub note: Option<String>,
}

impl Table {
    fn shown_rows(&self) -> Vec<&Vec<Cell>> {
        match &self.shown {
            Some(ix) => ix.iter().filter_map(|&i| self.rows.get(i)).collect(),
            None => self.rows.iter().collect(),
        }
    }

    /// The table as a Markdown pipe table (numbers right-aligned).
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!("| {} |\n", self.headers.join(" | ")));
        let align: Vec<&str> = (0..self.headers.len())
            .map(|j| match self.rows.first().and_then(|r| r.get(j)) {
                Some(Cell::Text(_)) | None => ":--",
                _ => "--:",
            })
            .collect();
        s.push_str(&format!("|{}|\n", align.join("|")));
        for r in self.shown_rows() {
            let cells: Vec<String> = r.iter().map(|c| c.display().replace('|', "\\|")).collect();
            s.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        if let Some(n) = &self.note {
            s.push_str(&format!("\n{n}\n"));
        }
        s
    }

    /// The table as an HTML `<table>`.
    pub fn html(&self) -> String {
        let mut s = String::from("<table>\n<thead><tr>");
        for h in &self.headers {
            s.push_str(&format!("<th>{}</th>", esc(h)));
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for r in self.shown_rows() {
            s.push_str("<tr>");
            for c in r {
                let class = if matches!(c, Cell::Text(_)) {
                    ""
                } else {
                    " class=\"num\""
                };
                s.push_str(&format!("<td{class}>{}</td>", esc(&c.display())));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody>\n</table>\n");
        if let Some(n) = &self.note {
            s.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
        }
        s
    }

    /// The whole table as CSV (typed columns, full precision), via Arrow's CSV writer.
    pub fn csv(&self) -> Result<Vec<u8>, ReportError> {
        let mut cols: Vec<(&str, ArrayRef)> = Vec::new();
        for (j, h) in self.headers.iter().enumerate() {
            let cells = self
                .rows
                .iter()
                .map(|r| r.get(j).cloned().unwrap_or(Cell::Text(String::new())));
            let kind = self
                .rows
                .first()
                .and_then(|r| r.get(j))
                .cloned()
                .unwrap_or(Cell::Text(String::new()));
            let a: ArrayRef = match kind {
                Cell::Text(_) => Arc::new(StringArray::from_iter_values(cells.map(|c| match c {
                    Cell::Text(s) => s,
                    other => other.display(),
                }))),
                Cell::Int(_) => Arc::new(UInt64Array::from_iter(cells.map(|c| match c {
                    Cell::Int(v) => v,
                    _ => None,
                }))),
                Cell::Float(..) => Arc::new(Float64Array::from_iter(cells.map(|c| match c {
                    Cell::Float(v, _) => v,
                    Cell::Int(v) => v.map(|v| v as f64),
                    _ => None,
                }))),
            };
            cols.push((h.as_str(), a));
        }
        csv_bytes(cols)
    }
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn manifest_for<'a>(
    m: &'a [ManifestEntry],
    board: &str,
    variant: &str,
) -> Option<&'a ManifestEntry> {
    m.iter().find(|e| e.board == board && e.variant == variant)
}

/// One row per board (its main variant): counts from `sql/boards.sql`, values and time from
/// the manifest.
pub fn boards_table(
    rows: &[BoardRow],
    main: &BTreeMap<String, String>,
    manifests: &[ManifestEntry],
    largest: &BTreeMap<(String, String), u64>,
) -> Table {
    let mut out = Vec::new();
    for r in rows
        .iter()
        .filter(|r| main.get(&r.board) == Some(&r.variant))
    {
        let m = manifest_for(manifests, &r.board, &r.variant).map(|e| &e.manifest);
        let tile = m
            .map(|m| u64::from(m.max_tile))
            .filter(|&t| t > 0)
            .or_else(|| largest.get(&(r.board.clone(), r.variant.clone())).copied());
        out.push(vec![
            Cell::Text(r.board.clone()),
            Cell::Text(r.variant.clone()),
            Cell::Int(Some(r.states)),
            Cell::Int(Some(r.afterstates)),
            Cell::Int(Some(r.terminal_states)),
            Cell::Int(r.max_age),
            Cell::Int(tile),
            Cell::Float(m.and_then(|m| m.value_two_2_tiles), 4),
            Cell::Float(m.and_then(|m| m.value_initial), 4),
            Cell::Float(m.and_then(|m| m.value_initial_distinct), 4),
            Cell::Float(m.map(|m| m.timings.total_s), 2),
        ]);
    }
    Table {
        name: "boards".into(),
        title: "Boards".into(),
        description:
            "One row per board: states, afterstates and terminal states over all ages, the last \
                      age with a state, the largest tile, the value of the game from two 2-tiles, \
                      over the real initial distribution and averaged over the distinct initial \
                      states (each counted once), and the solve time."
                .into(),
        headers: [
            "board",
            "variant",
            "states",
            "afterstates",
            "terminal_states",
            "max_age",
            "largest_tile",
            "value_two_2_tiles",
            "value_initial",
            "value_initial_distinct",
            "solve_time_s",
        ]
        .map(String::from)
        .to_vec(),
        rows: out,
        shown: None,
        note: None,
    }
}

/// One row per board and variant: the values of each solved variant and its cost.
pub fn variants_table(rows: &[BoardRow], manifests: &[ManifestEntry]) -> Table {
    let out = rows
        .iter()
        .map(|r| {
            let m = manifest_for(manifests, &r.board, &r.variant).map(|e| &e.manifest);
            vec![
                Cell::Text(r.board.clone()),
                Cell::Text(r.variant.clone()),
                Cell::Int(Some(r.states)),
                Cell::Float(m.and_then(|m| m.value_two_2_tiles), 4),
                Cell::Float(m.and_then(|m| m.value_initial), 4),
                Cell::Float(m.and_then(|m| m.value_initial_distinct), 4),
                Cell::Float(m.map(|m| m.timings.forward_s), 2),
                Cell::Float(m.map(|m| m.timings.backward_s), 2),
                Cell::Float(m.map(|m| m.timings.total_s), 2),
                Cell::Float(m.map(|m| m.peak_rss_bytes as f64 / (1024.0 * 1024.0)), 1),
                Cell::Text(m.map_or_else(String::new, |m| layout_text(&m.storage))),
            ]
        })
        .collect();
    let compact = manifests.iter().any(|e| !e.manifest.storage.is_full());
    Table {
        name: "variants".into(),
        title: "Variants".into(),
        description: "One row per board and solved variant: its values from two 2-tiles, over the \
                      initial distribution and averaged over the distinct initial states, the \
                      time and memory the solve took, and its layout."
            .into(),
        headers: [
            "board",
            "variant",
            "states",
            "value_two_2_tiles",
            "value_initial",
            "value_initial_distinct",
            "forward_s",
            "backward_s",
            "solve_time_s",
            "peak_rss_mib",
            "layout",
        ]
        .map(String::from)
        .to_vec(),
        rows: out,
        shown: None,
        note: compact.then(|| {
            "A compact solve (`solve --layout compact`) stores per age the afterstate ids and \
             their values, in fixed point at 2^-f where it says so, and per-state Parquet only \
             for the ages it names: its per-age figures come from the `ages` table as for every \
             solve, and the quantiles of state values are drawn only over the ages it kept in \
             Parquet. A policy solve (`solve --layout policy`) stores per age the optimal move \
             of every live state only: its per-age figures come from the `ages` table."
                .to_string()
        }),
    }
}

/// A solve's layout in a few words: `full`, `policy`, or `compact` with its precision and
/// Parquet ages.
fn layout_text(s: &crate::store::Storage) -> String {
    if s.is_full() {
        return "full".into();
    }
    if !s.has_index() {
        return "policy (moves only)".into();
    }
    let values = s
        .value_fraction_bits
        .map_or("f64".to_string(), |f| format!("2^-{f}"));
    let parquet = s.parquet_ages.map_or("no Parquet".to_string(), |(lo, hi)| {
        format!("Parquet {lo}..{hi}")
    });
    format!("compact ({values}, {parquet})")
}

/// One age of an index as the storage tables show it.
fn index_row(board: &str, a: &crate::store::AgeStats) -> Vec<Cell> {
    let ix = &a.index;
    let ids = a.n_states + a.n_afterstates;
    let bytes = ix.afterstate_id_bytes + ix.state_id_bytes;
    vec![
        Cell::Text(board.to_string()),
        Cell::Text(a.age.to_string()),
        Cell::Int(Some(a.n_states)),
        Cell::Int(Some(a.n_afterstates)),
        Cell::Int(Some(ids)),
        Cell::Int(Some(u64::from(ix.base))),
        Cell::Int(Some(ix.afterstate_id_bytes)),
        Cell::Int(Some(ix.state_id_bytes)),
        Cell::Int(Some(ix.file_bytes)),
        Cell::Float(Some(ix.bits_per_afterstate_id), 2),
        Cell::Float((ids > 0).then(|| 8.0 * bytes as f64 / ids as f64), 2),
        Cell::Float((ids > 0).then(|| bytes as f64 / (8.0 * ids as f64)), 4),
    ]
}

const INDEX_HEADERS: [&str; 12] = [
    "board",
    "age",
    "states",
    "afterstates",
    "ids",
    "base",
    "afterstate_id_bytes",
    "state_id_bytes",
    "file_bytes",
    "bits_per_afterstate_id",
    "bits_per_id",
    "ratio_to_8_bytes",
];

/// The ages of a board with an index file.
fn indexed_ages(e: &ManifestEntry) -> Vec<&crate::store::AgeStats> {
    e.manifest
        .ages
        .iter()
        .filter(|a| !a.index.file.is_empty())
        .collect()
}

/// Index storage of every age (board's main variant), from the manifests: CSV only.
pub fn index_table(manifests: &[ManifestEntry], main: &BTreeMap<String, String>) -> Table {
    let rows = manifests
        .iter()
        .filter(|e| main.get(&e.board) == Some(&e.variant))
        .flat_map(|e| indexed_ages(e).into_iter().map(|a| index_row(&e.board, a)))
        .collect();
    Table {
        name: "index_storage_per_age".into(),
        title: "Index storage per age".into(),
        description: "Storage of the state and afterstate id index at every age: ids stored, the \
                      compaction base, bytes for each kind, bits per id, and the ratio to storing \
                      every id as a plain 8-byte integer."
            .into(),
        headers: INDEX_HEADERS.map(String::from).to_vec(),
        rows,
        shown: Some(Vec::new()),
        note: None,
    }
}

/// Representative ages of a board: about a quarter, half and three quarters of its last age,
/// and the age with the most afterstates (where the index is largest).
fn representative_ages(ages: &[&crate::store::AgeStats]) -> Vec<u32> {
    let Some(last) = ages.iter().map(|a| a.age).max() else {
        return Vec::new();
    };
    let nearest = |target: u32| {
        ages.iter()
            .filter(|a| a.n_afterstates > 0)
            .min_by_key(|a| (a.age.abs_diff(target), a.age))
            .map(|a| a.age)
    };
    let peak = ages
        .iter()
        .max_by_key(|a| (a.n_afterstates, std::cmp::Reverse(a.age)))
        .map(|a| a.age);
    let mut v: Vec<u32> = [
        nearest(last / 4),
        nearest(last / 2),
        nearest(3 * last / 4),
        peak,
    ]
    .into_iter()
    .flatten()
    .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The afterstate index summarised like Table 1 of the 4x3 paper: a few representative ages
/// per board and the board's total; every age is in [`index_table`]'s CSV.
pub fn index_summary_table(manifests: &[ManifestEntry], main: &BTreeMap<String, String>) -> Table {
    let mut rows = Vec::new();
    let row = |board: &str, age: String, m: u64, base: Option<u64>, bytes: u64| {
        vec![
            Cell::Text(board.to_string()),
            Cell::Text(age),
            Cell::Int(Some(m)),
            Cell::Int(base),
            Cell::Int(Some(bytes)),
            Cell::Float((m > 0).then(|| 8.0 * bytes as f64 / m as f64), 2),
            Cell::Int(Some(8 * m)),
            Cell::Float((m > 0).then(|| 100.0 * bytes as f64 / (8.0 * m as f64)), 1),
        ]
    };
    for e in manifests
        .iter()
        .filter(|e| main.get(&e.board) == Some(&e.variant))
    {
        let ages = indexed_ages(e);
        if ages.is_empty() {
            continue;
        }
        for age in representative_ages(&ages) {
            if let Some(a) = ages.iter().find(|a| a.age == age) {
                rows.push(row(
                    &e.board,
                    a.age.to_string(),
                    a.n_afterstates,
                    Some(u64::from(a.index.base)),
                    a.index.afterstate_id_bytes,
                ));
            }
        }
        let m: u64 = ages.iter().map(|a| a.n_afterstates).sum();
        let bytes: u64 = ages.iter().map(|a| a.index.afterstate_id_bytes).sum();
        rows.push(row(&e.board, "all".into(), m, None, bytes));
    }
    Table {
        name: "index_storage".into(),
        title: "Index storage (afterstate ids, as Table 1 of the 4x3 paper)".into(),
        description: "Afterstate ids of a few representative ages per board (about a quarter, half \
                      and three quarters of the last age, and the age with the most afterstates) and \
                      every age together: the ids stored m, the compaction base b, the bytes of their \
                      Elias-Fano sets (high and low parts), bits per id, the 8 bytes an id takes in \
                      memory, and the ratio of the two."
            .into(),
        headers: [
            "board",
            "age",
            "afterstate_ids",
            "base",
            "stored_bytes",
            "bits_per_id",
            "in_memory_bytes",
            "ratio_percent",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        shown: None,
        note: Some(
            "Every age, with the state ids and the file sizes, is in tables/index_storage_per_age.csv."
                .into(),
        ),
    }
}

/// Values at the start published by others, to set beside ours: `(board, variant, value,
/// decimals printed, source)`. Galebach (2014) solved 3x3 for the goals 256, 512 and 1024 and
/// for the score, over the real initial distribution.
pub const PUBLISHED: [(&str, &str, f64, usize, &str); 4] = [
    ("3x3", "goal-256", 0.99571, 5, "Galebach 2014"),
    ("3x3", "goal-512", 0.73677, 5, "Galebach 2014"),
    ("3x3", "goal-1024", 0.01134, 5, "Galebach 2014"),
    ("3x3", "expectation", 5468.5, 1, "Galebach 2014"),
];

/// The goal tile and the discount of a goal variant's name (`goal-512`, `goal-512-p4=0.2`,
/// `goal-512-discount=0.99`).
fn goal_of(variant: &str) -> Option<(u64, f64)> {
    let v = Variant::parse(variant, Given::default()).ok()?;
    match v.kind {
        Kind::Goal(e) => Some((1u64 << e, v.discount)),
        _ => None,
    }
}

fn goal_tile(variant: &str) -> Option<u64> {
    goal_of(variant).map(|g| g.0)
}

/// The papers' goal table: for each board, the probability of making each solved goal tile
/// (and the expected score), from two 2-tiles and over the initial distribution, beside the
/// published figures.
pub fn goals_table(manifests: &[ManifestEntry]) -> Table {
    let mut entries: Vec<&ManifestEntry> = manifests
        .iter()
        .filter(|e| e.variant == "expectation" || goal_tile(&e.variant).is_some())
        .collect();
    entries.sort_by(|a, b| {
        super::data::board_key(&a.board)
            .cmp(&super::data::board_key(&b.board))
            .then(goal_tile(&a.variant).cmp(&goal_tile(&b.variant)))
            .then(a.variant.cmp(&b.variant))
    });
    let rows: Vec<Vec<Cell>> = entries
        .iter()
        .map(|e| {
            let m = &e.manifest;
            let published = PUBLISHED
                .iter()
                .find(|p| p.0 == e.board && p.1 == e.variant);
            // A discounted goal is an expected discount, not a probability.
            let objective = match goal_of(&e.variant) {
                Some((t, g)) if g != NO_DISCOUNT => format!("E[{g}^(moves to make {t})]"),
                Some((t, _)) => format!("P(make {t})"),
                None => "expected score".into(),
            };
            let decimals = published.map_or(
                if goal_tile(&e.variant).is_some() {
                    5
                } else {
                    2
                },
                |p| p.3,
            );
            let agrees = match (published, m.value_initial) {
                (Some(p), Some(v)) => {
                    if format!("{v:.d$}", d = p.3) == format!("{:.d$}", p.2, d = p.3) {
                        "yes"
                    } else {
                        "no"
                    }
                }
                _ => "",
            };
            vec![
                Cell::Text(e.board.clone()),
                Cell::Text(e.variant.clone()),
                Cell::Text(objective),
                Cell::Float(m.value_two_2_tiles, decimals),
                Cell::Float(m.value_initial, decimals),
                Cell::Float(m.value_initial_distinct, decimals),
                Cell::Float(published.map(|p| p.2), decimals),
                Cell::Text(published.map_or("", |p| p.4).to_string()),
                Cell::Text(agrees.to_string()),
            ]
        })
        .collect();
    Table {
        name: "goals".into(),
        title: "Goal probabilities and expected score at the start".into(),
        description: "For each board, the probability of ever making each solved goal tile under \
                      optimal play for that goal (variants goal-T), E[γ^(moves to make it)] for a \
                      discounted goal (goal-T-discount=γ), and the expected final score \
                      (expectation): from a start with two 2-tiles (averaged over their placements), \
                      over the real initial distribution (two spawns on the empty board), and \
                      averaged over the distinct initial states (each board up to symmetry counted \
                      once, the convention of published tables), beside the published value (over \
                      the initial distribution), shown to the digits it was published with."
            .into(),
        headers: [
            "board",
            "variant",
            "objective",
            "value_two_2_tiles",
            "value_initial",
            "value_initial_distinct",
            "published",
            "source",
            "agrees",
        ]
        .map(String::from)
        .to_vec(),
        shown: rows.is_empty().then(Vec::new),
        rows,
        note: Some(
            "Published: B. Galebach, \"2048 3x3 solved\" (2014). \"–\": no published figure. \
             \"agrees\": value_initial rounded to the published digits equals the published value."
                .into(),
        ),
    }
}

/// Every data file listed by the manifests (each once), with its size and digest (CSV only).
pub fn provenance_table(manifests: &[ManifestEntry]) -> Table {
    let rows = manifests
        .iter()
        .flat_map(|e| {
            e.manifest.files.iter().map(move |f| {
                vec![
                    Cell::Text(e.board.clone()),
                    Cell::Text(e.variant.clone()),
                    Cell::Text(f.path.clone()),
                    Cell::Int(Some(f.bytes)),
                    Cell::Text(f.sha256.clone()),
                ]
            })
        })
        .collect();
    Table {
        name: "provenance".into(),
        title: "Data files".into(),
        description:
            "Every file of the solved dataset as listed by the manifests, with size and SHA-256."
                .into(),
        headers: ["board", "variant", "path", "bytes", "sha256"]
            .map(String::from)
            .to_vec(),
        rows,
        shown: Some(Vec::new()),
        note: None,
    }
}
