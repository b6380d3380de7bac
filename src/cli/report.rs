//! `age2048 report` and `age2048 compare`.

use std::path::PathBuf;

use clap::Args;

use super::output::say;
use super::CliError;
use crate::report::compare::{compare, print_summary};
use crate::report::run_report as render;
use crate::rules::variant::Given;
use crate::rules::{Shape, Variant};
use crate::store::Store;

/// Draw the figures and tables of the solved dataset (SVG, PNG, CSV, Markdown, index.html).
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Data directory written by `age2048 solve`.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Output folder (created; files in it are replaced atomically).
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Board size RxC.
    #[arg(long)]
    pub board: String,
    /// Variants, comma-separated; the first is the base the others are compared with.
    #[arg(long)]
    pub variants: String,
    /// Data directory.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Where to write the figure and CSV files.
    #[arg(long, default_value = "reports/compare")]
    pub out: PathBuf,
}

/// Runs `age2048 report`, printing where the report went.
pub fn run_report(a: &ReportArgs) -> Result<(), CliError> {
    let s = render(&a.data, &a.out, &|line: &str| say(line))?;
    say(&format!(
        "report: {} figures, {} tables for boards {} in {}",
        s.figures.len(),
        s.tables.len(),
        s.boards.join(", "),
        s.out.join("index.html").display()
    ));
    Ok(())
}

/// Runs `age2048 compare`.
pub fn run_compare(a: &CompareArgs) -> Result<(), CliError> {
    let shape = Shape::parse(&a.board)?;
    let mut names = Vec::new();
    for v in a
        .variants
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        names.push(Variant::parse(v, Given::default())?.name());
    }
    let store = Store::open(&a.data)?;
    let c = compare(&store, shape, &names, &a.out)?;
    let stdout = std::io::stdout();
    print_summary(&c, &mut stdout.lock()).map_err(CliError::stdout)
}
