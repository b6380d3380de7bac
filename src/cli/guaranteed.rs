//! `age2048 guaranteed`: the largest tile a player can force, per board.

use std::io::Write;

use clap::Args;

use super::output::Format;
use super::{set_threads, CliError};
use crate::rules::variant::{parse_p4_arg, DEFAULT_P4};
use crate::rules::{Game, Group, Shape};
use crate::solver::guaranteed::guaranteed;

#[derive(Args, Debug)]
pub struct GuaranteedArgs {
    /// Board sizes RxC, comma-separated (e.g. 1x3,2x2,2x3).
    #[arg(long)]
    pub board: String,
    /// Probability of a 4: only 0 and 1 change what the spawner may put down.
    #[arg(long)]
    pub p4: Option<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// Runs `age2048 guaranteed`.
pub fn run(a: &GuaranteedArgs) -> Result<(), CliError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    write(a, &mut out)
}

fn write(a: &GuaranteedArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let shapes: Vec<Shape> = a
        .board
        .split(',')
        .map(|b| Shape::parse(b.trim()))
        .collect::<Result<_, _>>()?;
    let p4 =
        a.p4.as_deref()
            .map(parse_p4_arg)
            .transpose()?
            .unwrap_or(DEFAULT_P4);
    set_threads(a.threads)?;
    let mut rows = Vec::new();
    for shape in shapes {
        let g = guaranteed(&Game::new(shape, Group::Full), p4)?;
        rows.push((shape, g));
    }
    let io = CliError::stdout;
    match a.format {
        Format::Csv => {
            writeln!(out, "board,from_empty,two_tile_min").map_err(io)?;
            for (s, g) in &rows {
                let two = g.two_tile_min.map_or(String::new(), |t| t.to_string());
                writeln!(out, "{s},{},{two}", g.from_empty).map_err(io)?;
            }
        }
        Format::Json => {
            let v: Vec<serde_json::Value> = rows
                .iter()
                .map(|(s, g)| serde_json::json!({"board": s.to_string(), "from_empty": g.from_empty, "two_tile_min": g.two_tile_min}))
                .collect();
            writeln!(out, "{}", serde_json::Value::Array(v)).map_err(io)?;
        }
        Format::Table => {
            writeln!(
                out,
                "{:<6} {:>10} {:>13}",
                "board", "from_empty", "two_tile_min"
            )
            .map_err(io)?;
            for (s, g) in &rows {
                let two = g.two_tile_min.map_or("-".to_string(), |t| t.to_string());
                writeln!(out, "{:<6} {:>10} {:>13}", s.to_string(), g.from_empty, two)
                    .map_err(io)?;
            }
        }
    }
    Ok(())
}
