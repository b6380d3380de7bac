//! `index.html` and `README.md` of the report folder: every figure and table with one sentence
//! on what it shows, and the provenance (tool version, parameters and digests from the
//! manifests, the SQL behind the series).

use super::data::{ManifestEntry, BOARDS_SQL, PER_AGE_SQL, STATE_VALUE_QUANTILES_SQL};
use super::figures::FigureSpec;
use super::tables::{esc, Table};

/// What the pages describe.
pub struct PageInput<'a> {
    pub data_dir: &'a str,
    pub boards: &'a [String],
    pub variants: &'a [String],
    pub figures: &'a [FigureSpec],
    pub tables: &'a [Table],
    pub manifests: &'a [ManifestEntry],
}

const REPORTER: &str = concat!("age2048 ", env!("CARGO_PKG_VERSION"));

/// A text field of a manifest, or a dash where an older manifest lacks it.
fn text(v: &str) -> String {
    if v.is_empty() {
        "–".into()
    } else {
        v.to_string()
    }
}

/// Provenance rows: board, variant, tool, version, symmetry, p4, files, bytes, manifest path.
fn provenance_rows(inp: &PageInput) -> Vec<[String; 9]> {
    inp.manifests
        .iter()
        .map(|e| {
            let m = &e.manifest;
            [
                e.board.clone(),
                e.variant.clone(),
                text(&m.tool),
                text(&m.version),
                text(&m.symmetry),
                m.p4.to_string(),
                m.files.len().to_string(),
                m.total_bytes().to_string(),
                e.path.display().to_string(),
            ]
        })
        .collect()
}

/// Digests of each manifest's summary files (everything not under an `age=` partition).
fn summary_digests(inp: &PageInput) -> Vec<[String; 4]> {
    inp.manifests
        .iter()
        .flat_map(|e| {
            e.manifest
                .files
                .iter()
                .filter(|f| !f.path.contains("age="))
                .take(10)
                .map(move |f| {
                    [
                        e.board.clone(),
                        e.variant.clone(),
                        f.path.clone(),
                        f.sha256.clone(),
                    ]
                })
        })
        .collect()
}

const PROV_HEADERS: [&str; 9] = [
    "board", "variant", "tool", "version", "symmetry", "p4", "files", "bytes", "manifest",
];

/// The README.md of the report folder.
pub fn readme(inp: &PageInput) -> String {
    let mut s = String::new();
    s.push_str("# age2048 report\n\n");
    s.push_str(&format!(
        "Solved data from `{}`: boards {}; variants {}. Made by `{REPORTER} report`; run it again to \
         regenerate this folder (`age2048 report --data {} --out <this folder>`). Every figure is an \
         SVG and a PNG, with the CSV of the exact series drawn beside it; every table is Markdown and CSV.\n\n",
        inp.data_dir,
        inp.boards.join(", "),
        inp.variants.join(", "),
        inp.data_dir,
    ));
    s.push_str("## Figures\n\n");
    for f in inp.figures {
        let n = &f.figure.name;
        s.push_str(&format!("### {}\n\n", f.figure.title));
        s.push_str(&format!("![{}](figures/{n}.png)\n\n", f.figure.title));
        s.push_str(&format!(
            "{} Series: [figures/{n}.csv](figures/{n}.csv) (from {}); vector: [figures/{n}.svg](figures/{n}.svg).\n\n",
            f.description, f.source
        ));
    }
    s.push_str("## Tables\n\n");
    for t in inp
        .tables
        .iter()
        .filter(|t| t.shown.as_ref().is_none_or(|v| !v.is_empty()))
    {
        s.push_str(&format!(
            "### {}\n\n{} CSV: [tables/{n}.csv](tables/{n}.csv).\n\n",
            t.title,
            t.description,
            n = t.name
        ));
        s.push_str(&t.markdown());
        s.push('\n');
    }
    s.push_str("## Provenance\n\n");
    s.push_str(&format!(
        "Report made by {REPORTER}. Solver runs, from the manifests:\n\n"
    ));
    s.push_str(&format!(
        "| {} |\n|{}|\n",
        PROV_HEADERS.join(" | "),
        [":--"; 9].join("|")
    ));
    for r in provenance_rows(inp) {
        s.push_str(&format!(
            "| {} |\n",
            r.map(|c| c.replace('|', "\\|")).join(" | ")
        ));
    }
    let d = summary_digests(inp);
    if !d.is_empty() {
        s.push_str("\nSHA-256 of the per-age summary files:\n\n| board | variant | file | sha256 |\n|:--|:--|:--|:--|\n");
        for r in d {
            s.push_str(&format!(
                "| {} | {} | `{}` | `{}` |\n",
                r[0], r[1], r[2], r[3]
            ));
        }
    }
    s.push_str(
        "\nThe size and SHA-256 of every data file are in [tables/provenance.csv](tables/provenance.csv).\n\n",
    );
    s.push_str("The per-age series and the board totals come from these DuckDB queries (in `sql/`, run over the views `states`, `afterstates`, `ages` that `age2048 sql` defines):\n\n");
    for (name, q) in [
        ("sql/per_age.sql", PER_AGE_SQL),
        ("sql/boards.sql", BOARDS_SQL),
        ("sql/state_value_quantiles.sql", STATE_VALUE_QUANTILES_SQL),
    ] {
        s.push_str(&format!("`{name}`:\n\n```sql\n{}\n```\n\n", q.trim()));
    }
    s
}

/// The index.html of the report folder.
pub fn index_html(inp: &PageInput) -> String {
    let mut s = String::new();
    s.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>age2048 report</title>\n<style>\n\
         body{font-family:'DejaVu Sans',sans-serif;max-width:1280px;margin:2em auto;padding:0 1em;color:#222}\n\
         figure{margin:2em 0}img{max-width:100%;border:1px solid #ddd}\n\
         table{border-collapse:collapse;margin:1em 0;font-size:90%}th,td{border:1px solid #ccc;padding:3px 8px}\n\
         th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}\n\
         .note{font-size:90%;color:#555}code,pre{background:#f6f6f6}pre{padding:.6em;overflow-x:auto}\n\
         </style>\n</head>\n<body>\n",
    );
    s.push_str("<h1>age2048 report</h1>\n");
    s.push_str(&format!(
        "<p>Solved data from <code>{}</code>: boards {}; variants {}. Made by <code>{REPORTER} report</code>; \
         every figure is an SVG and a PNG with the CSV of the exact series drawn beside it.</p>\n",
        esc(inp.data_dir),
        esc(&inp.boards.join(", ")),
        esc(&inp.variants.join(", "))
    ));
    s.push_str("<h2>Figures</h2>\n");
    for f in inp.figures {
        let n = &f.figure.name;
        s.push_str(&format!(
            "<figure id=\"{n}\">\n<img src=\"figures/{n}.svg\" alt=\"{t}\">\n<figcaption><b>{t}.</b> {d} \
             Series: <a href=\"figures/{n}.csv\">CSV</a> (from {src}); <a href=\"figures/{n}.png\">PNG</a>.</figcaption>\n</figure>\n",
            t = esc(&f.figure.title),
            d = esc(&f.description),
            src = esc(&f.source),
        ));
    }
    s.push_str("<h2>Tables</h2>\n");
    for t in inp
        .tables
        .iter()
        .filter(|t| t.shown.as_ref().is_none_or(|v| !v.is_empty()))
    {
        s.push_str(&format!(
            "<h3 id=\"{n}\">{}</h3>\n<p>{} <a href=\"tables/{n}.csv\">CSV</a>, <a href=\"tables/{n}.md\">Markdown</a>.</p>\n",
            esc(&t.title),
            esc(&t.description),
            n = t.name
        ));
        s.push_str(&t.html());
    }
    s.push_str(&format!("<h2>Provenance</h2>\n<p>Report made by {REPORTER}. Solver runs, from the manifests:</p>\n<table>\n<thead><tr>"));
    for h in PROV_HEADERS {
        s.push_str(&format!("<th>{h}</th>"));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for r in provenance_rows(inp) {
        s.push_str("<tr>");
        for c in r {
            s.push_str(&format!("<td>{}</td>", esc(&c)));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    let d = summary_digests(inp);
    if !d.is_empty() {
        s.push_str("<p>SHA-256 of the per-age summary files:</p>\n<table>\n<thead><tr><th>board</th><th>variant</th><th>file</th><th>sha256</th></tr></thead>\n<tbody>\n");
        for r in d {
            s.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>\n",
                esc(&r[0]),
                esc(&r[1]),
                esc(&r[2]),
                esc(&r[3])
            ));
        }
        s.push_str("</tbody>\n</table>\n");
    }
    s.push_str("<p>The size and SHA-256 of every data file are in <a href=\"tables/provenance.csv\">tables/provenance.csv</a>.</p>\n");
    s.push_str("<p>The per-age series and the board totals come from these DuckDB queries over the views <code>states</code>, <code>afterstates</code>, <code>ages</code> that <code>age2048 sql</code> defines:</p>\n");
    for (name, q) in [
        ("sql/per_age.sql", PER_AGE_SQL),
        ("sql/boards.sql", BOARDS_SQL),
        ("sql/state_value_quantiles.sql", STATE_VALUE_QUANTILES_SQL),
    ] {
        s.push_str(&format!(
            "<p><code>{name}</code>:</p>\n<pre><code>{}</code></pre>\n",
            esc(q.trim())
        ));
    }
    s.push_str("</body>\n</html>\n");
    s
}
