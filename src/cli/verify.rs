//! `age2048 verify`: every file of every finished solve against its manifest (size and
//! SHA-256), every manifest against the layout, the `ages` table against the per-age files,
//! and unfinished solves; one line per problem on standard output, then a summary.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::say;
use super::{set_threads, CliError};
use crate::rules::variant::Given;
use crate::rules::{Shape, Variant};
use crate::store::lock;
use crate::store::verify::{bytes_to_hash, check_store, Depth, Filter};
use crate::store::{Store, StoreError};

/// Data at least this large gets a progress bar (on a terminal).
const BAR_BYTES: u64 = 64 << 20;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Data directory.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Only this board size (RxC).
    #[arg(long)]
    pub board: Option<String>,
    /// Only this variant.
    #[arg(long)]
    pub variant: Option<String>,
    /// Probability of a 4 of the variant (as for `solve`).
    #[arg(long)]
    pub p4: Option<String>,
    /// Discount γ of the goal variant (as for `solve`).
    #[arg(long)]
    pub discount: Option<String>,
    /// Only the cheap check readers make: manifests, file sizes, and the SHA-256 of the files
    /// changed since their digests were last checked (by `solve` or `verify`).
    #[arg(long)]
    pub quick: bool,
    /// Worker threads for hashing (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `age2048 verify`: exit 0 if everything checked is as its manifest says, 2 otherwise.
pub fn run(a: &VerifyArgs) -> Result<(), CliError> {
    let board = a.board.as_deref().map(Shape::parse).transpose()?;
    let given = Given::from_args(a.p4.as_deref(), a.discount.as_deref())?;
    let variant = match &a.variant {
        Some(v) => Some(Variant::parse(v, given)?.name()),
        None if given.any() => {
            return Err(CliError::Usage("--p4 and --discount need --variant".into()));
        }
        None => None,
    };
    let store = Store::open(&a.data)?;
    set_threads(a.threads)?;
    let filter = Filter { board, variant };
    let depth = if a.quick {
        Depth::Changed
    } else {
        Depth::Digests
    };
    if let Some(pid) = lock::holder(store.layout()) {
        let who = pid.map_or_else(|| "another process".to_string(), |p| format!("process {p}"));
        say(&format!(
            "note: {who} is solving in {} now: what it has not finished shows as unfinished",
            a.data.display()
        ));
    }
    let t = Instant::now();
    let bar = (depth == Depth::Digests && !a.quiet && std::io::stderr().is_terminal())
        .then(|| bytes_to_hash(&store, &filter))
        .filter(|&total| total >= BAR_BYTES)
        .map(|total| {
            let bar = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "verify {bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        });
    let progress = |n: u64| {
        if let Some(b) = &bar {
            b.inc(n);
        }
    };
    let summary = check_store(&store, &filter, depth, &progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let root = store.root();
    for p in &summary.problems {
        writeln!(out, "{}: {}", root.join(&p.path).display(), p.message())
            .map_err(CliError::stdout)?;
    }
    let n = summary.problems.len();
    writeln!(
        out,
        "verify: {}: {} solve{}, {} files, {:.1} MB checked ({}) in {:.1} s: {}",
        root.display(),
        summary.solves,
        if summary.solves == 1 { "" } else { "s" },
        summary.files,
        summary.bytes as f64 / 1e6,
        match depth {
            Depth::Sizes => "manifests and sizes",
            Depth::Changed => "manifests, sizes and SHA-256 of changed files",
            Depth::Digests => "manifests, sizes and SHA-256",
        },
        t.elapsed().as_secs_f64(),
        match n {
            0 => "no problem".to_string(),
            1 => "1 problem".to_string(),
            n => format!("{n} problems"),
        }
    )
    .and_then(|()| out.flush())
    .map_err(CliError::stdout)?;
    if n > 0 {
        return Err(CliError::Damaged {
            dir: root.to_path_buf(),
            problems: n,
        });
    }
    if summary.solves == 0 {
        let note = match (&filter.board, &filter.variant) {
            (None, None) => String::new(),
            (Some(b), None) => format!(" for board {b}"),
            (None, Some(v)) => format!(" for variant {v}"),
            (Some(b), Some(v)) => format!(" for board {b}, variant {v}"),
        };
        return Err(StoreError::NothingSolved {
            dir: root.to_path_buf(),
            note,
        }
        .into());
    }
    Ok(())
}
