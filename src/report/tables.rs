//! The report's tables, written as Markdown and CSV (and shown in `index.html`): one row per
//! board, one row per board and variant, and the index storage per age (from the manifests,
//! like Table 1 of the 4x3 paper).

use std::collections::BTreeMap;
use std::sync::Arc;

use duckdb_arrow::array::{ArrayRef, Float64Array, StringArray, UInt64Array};

use super::data::{BoardRow, ManifestEntry};
use super::{csv_bytes, ReportError};

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
            Cell::Float(m.map(|m| m.timings.total_s), 2),
        ]);
    }
    Table {
        name: "boards".into(),
        title: "Boards".into(),
        description: "One row per board: states, afterstates and terminal states over all ages, the last \
                      age with a state, the largest tile, the value of the game from two 2-tiles and \
                      over the real initial distribution, and the solve time."
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
                Cell::Float(m.map(|m| m.timings.forward_s), 2),
                Cell::Float(m.map(|m| m.timings.backward_s), 2),
                Cell::Float(m.map(|m| m.timings.total_s), 2),
                Cell::Float(m.map(|m| m.peak_rss_bytes as f64 / (1024.0 * 1024.0)), 1),
            ]
        })
        .collect();
    Table {
        name: "variants".into(),
        title: "Variants".into(),
        description:
            "One row per board and solved variant: its values from two 2-tiles and over the \
                      initial distribution, and the time and memory the solve took."
                .into(),
        headers: [
            "board",
            "variant",
            "states",
            "value_two_2_tiles",
            "value_initial",
            "forward_s",
            "backward_s",
            "solve_time_s",
            "peak_rss_mib",
        ]
        .map(String::from)
        .to_vec(),
        rows: out,
        shown: None,
        note: None,
    }
}

/// Index storage per age (board's main variant), from the manifests; all ages in the CSV, a
/// sample of at most 40 ages per board in Markdown/HTML, plus a total row per board.
pub fn index_table(manifests: &[ManifestEntry], main: &BTreeMap<String, String>) -> Table {
    let mut rows = Vec::new();
    let mut shown = Vec::new();
    for e in manifests
        .iter()
        .filter(|e| main.get(&e.board) == Some(&e.variant))
    {
        let ages: Vec<_> = e
            .manifest
            .ages
            .iter()
            .filter(|a| !a.index.file.is_empty())
            .collect();
        if ages.is_empty() {
            continue;
        }
        let step = ages.len().div_ceil(40).max(1);
        let (mut t_ids, mut t_s, mut t_a, mut t_bytes, mut t_file) = (0u64, 0u64, 0u64, 0u64, 0u64);
        for (k, a) in ages.iter().enumerate() {
            let ix = &a.index;
            let ids = a.n_states + a.n_afterstates;
            let bytes = ix.afterstate_id_bytes + ix.state_id_bytes;
            t_ids += ids;
            t_s += a.n_states;
            t_a += a.n_afterstates;
            t_bytes += bytes;
            t_file += ix.file_bytes;
            if k % step == 0 || k + 1 == ages.len() {
                shown.push(rows.len());
            }
            rows.push(vec![
                Cell::Text(e.board.clone()),
                Cell::Text(a.age.to_string()),
                Cell::Int(Some(a.n_states)),
                Cell::Int(Some(a.n_afterstates)),
                Cell::Int(Some(ids)),
                Cell::Int(Some(ix.afterstate_id_bytes)),
                Cell::Int(Some(ix.state_id_bytes)),
                Cell::Int(Some(ix.file_bytes)),
                Cell::Float(Some(ix.bits_per_afterstate_id), 2),
                Cell::Float((ids > 0).then(|| 8.0 * bytes as f64 / ids as f64), 2),
                Cell::Float((ids > 0).then(|| bytes as f64 / (8.0 * ids as f64)), 4),
            ]);
        }
        shown.push(rows.len());
        rows.push(vec![
            Cell::Text(e.board.clone()),
            Cell::Text("all".into()),
            Cell::Int(Some(t_s)),
            Cell::Int(Some(t_a)),
            Cell::Int(Some(t_ids)),
            Cell::Int(None),
            Cell::Int(None),
            Cell::Int(Some(t_file)),
            Cell::Float(None, 2),
            Cell::Float((t_ids > 0).then(|| 8.0 * t_bytes as f64 / t_ids as f64), 2),
            Cell::Float(
                (t_ids > 0).then(|| t_bytes as f64 / (8.0 * t_ids as f64)),
                4,
            ),
        ]);
    }
    let sampled = shown.len() < rows.len();
    Table {
        name: "index_storage".into(),
        title: "Index storage per age".into(),
        description: "Storage of the state and afterstate id index per age: ids stored, bytes for each \
                      kind, bits per id, and the ratio to storing every id as a plain 8-byte integer."
            .into(),
        headers: [
            "board",
            "age",
            "states",
            "afterstates",
            "ids",
            "afterstate_id_bytes",
            "state_id_bytes",
            "file_bytes",
            "bits_per_afterstate_id",
            "bits_per_id",
            "ratio_to_8_bytes",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        shown: sampled.then_some(shown),
        note: sampled.then(|| {
            "Ages sampled evenly (at most 40 per board) and each board's total; every age is in \
             tables/index_storage.csv."
                .to_string()
        }),
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
