//! `age2048 evaluate`: the regret of every move of an agent's logged games, written as tables
//! (Parquet and CSV) and a figure, with a summary on standard output.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use clap::Args;

use super::output::{say, Format};
use super::solved::SolvedArgs;
use super::CliError;
use crate::query::evaluate::{evaluate_log, parse_log, LogEvaluation};
use crate::query::Tablebase;
use crate::store::{Store, StoreError};

#[derive(Args, Debug)]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub solved: SolvedArgs,
    /// The agent's games: CSV with columns game,board,move or JSON lines
    /// {"game", "board", "move"}; '-' for standard input.
    #[arg(long)]
    pub log: PathBuf,
    /// Folder for moves, games and regret_by_age (.parquet and .csv) and the figure.
    #[arg(long, default_value = "reports/evaluate")]
    pub out: PathBuf,
    /// Format of the summary on standard output.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// The log's text and the name errors give it.
fn read_log(path: &PathBuf) -> Result<(String, String), CliError> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        io::stdin()
            .lock()
            .read_to_string(&mut s)
            .map_err(|e| StoreError::io("<stdin>", e))?;
        Ok((s, "<stdin>".into()))
    } else {
        let s = std::fs::read_to_string(path).map_err(|e| StoreError::io(path, e))?;
        Ok((s, path.display().to_string()))
    }
}

/// Runs `age2048 evaluate`.
pub fn run(a: &EvaluateArgs) -> Result<(), CliError> {
    let (shape, variant) = a.solved.check()?;
    let store = Store::open(&a.solved.data)?;
    let tb = Tablebase::open(&store, shape, variant)?;
    let (text, name) = read_log(&a.log)?;
    let log = parse_log(&text, &name)?;
    if !tb.has_values() {
        say(&format!(
            "note: {shape} {} is stored in the policy layout: the best move only, so no q-value or regret; a move counts as optimal when it makes the stored move's afterstate (a move tied with it by another afterstate counts as not)",
            tb.variant().name()
        ));
    }
    let ev = evaluate_log(&tb, &log, &name)?;
    if let Some(why) = ev.nothing_evaluated(&name) {
        return Err(CliError::Usage(why));
    }
    // Everything is computed; now the files (each written whole, then renamed).
    let files = crate::store::evaluation::write(&a.out, ev.tables())?;
    // The figure draws regrets: none without values.
    #[cfg(feature = "report")]
    let files = {
        let mut files = files;
        if ev.values {
            files.extend(crate::report::write_figure_images(
                &a.out,
                &crate::report::figures::regret_per_age(&ev),
            )?);
        }
        files
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    write_summary(&ev, a.format, &mut out)
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    say(&format!(
        "evaluate: wrote {} files to {}",
        files.len(),
        a.out.display()
    ));
    Ok(())
}

fn write_summary(ev: &LogEvaluation, format: Format, out: &mut dyn Write) -> io::Result<()> {
    let num = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
    match format {
        Format::Csv => {
            writeln!(
                out,
                "board,variant,games,moves,skipped,optimal_share,mean_regret,mean_game_regret"
            )?;
            writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                ev.board,
                ev.variant,
                ev.games.len(),
                ev.moves.len(),
                ev.skipped,
                ev.optimal_share(),
                num(ev.mean_regret()),
                num(ev.mean_game_regret())
            )?;
        }
        Format::Json => {
            let v = serde_json::json!({
                "board": ev.board,
                "variant": ev.variant,
                "games": ev.games.len(),
                "moves": ev.moves.len(),
                "skipped": ev.skipped,
                "optimal_share": ev.optimal_share(),
                "mean_regret": ev.mean_regret(),
                "mean_game_regret": ev.mean_game_regret(),
            });
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&v).map_err(io::Error::other)?
            )?;
        }
        Format::Table => {
            let unit = ev.unit;
            writeln!(
                out,
                "board {}, variant {}: {} moves in {} games{}",
                ev.board,
                ev.variant,
                ev.moves.len(),
                ev.games.len(),
                if ev.skipped > 0 {
                    format!(" ({} moves after the goal tile not evaluated)", ev.skipped)
                } else {
                    String::new()
                }
            )?;
            writeln!(
                out,
                "optimal moves       {:.2} %",
                100.0 * ev.optimal_share()
            )?;
            let (Some(mean), Some(per_game)) = (ev.mean_regret(), ev.mean_game_regret()) else {
                writeln!(
                    out,
                    "regret              not known (policy layout: moves only)"
                )?;
                return Ok(());
            };
            writeln!(out, "mean regret         {mean:.6} {unit} per move")?;
            writeln!(
                out,
                "mean total regret   {per_game:.6} {unit} per game{}",
                if ev.scored {
                    " (the expected score the moves lost)"
                } else {
                    ""
                }
            )?;
            if let Some(worst) = ev
                .ages
                .iter()
                .max_by(|a, b| a.mean_regret().total_cmp(&b.mean_regret()))
            {
                writeln!(
                    out,
                    "costliest age       {} (mean regret {:.6} over {} moves)",
                    worst.age,
                    worst.mean_regret(),
                    worst.moves
                )?;
            }
        }
    }
    Ok(())
}
