//! `age2048 best`: q-values, value and best move of boards, from the solved index (the best
//! move alone from a solve in the policy layout).

use std::fs::File;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;

use clap::Args;

use super::output::{csv_field, say, Format};
use super::solved::SolvedArgs;
use super::CliError;
use crate::query::{Answer, Tablebase};
use crate::rules::parse_board;
use crate::store::{Store, StoreError};

#[derive(Args, Debug)]
pub struct BestArgs {
    #[command(flatten)]
    pub solved: SolvedArgs,
    /// Read boards from a file, one per line ('-' for standard input).
    #[arg(long)]
    pub input: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Boards: rows separated by '/', cells by spaces, 0 or . for empty: "2 0 4/0 8 0/0 0 2".
    pub boards: Vec<String>,
}

/// Boards as given on the command line or in the input file.
fn read_boards(a: &BestArgs) -> Result<Vec<String>, CliError> {
    let mut boards = a.boards.clone();
    if let Some(path) = &a.input {
        let lines: Vec<String> = if path.as_os_str() == "-" {
            io::stdin()
                .lock()
                .lines()
                .collect::<io::Result<_>>()
                .map_err(|e| StoreError::io("<stdin>", e))?
        } else {
            let f = File::open(path).map_err(|e| StoreError::io(path, e))?;
            io::BufReader::new(f)
                .lines()
                .collect::<io::Result<_>>()
                .map_err(|e| StoreError::io(path, e))?
        };
        boards.extend(
            lines
                .into_iter()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty() && !l.starts_with('#')),
        );
    }
    if boards.is_empty() {
        return Err(CliError::Usage(
            "no board given (pass boards as arguments or --input FILE)".into(),
        ));
    }
    Ok(boards)
}

/// Runs `age2048 best`.
pub fn run(a: &BestArgs) -> Result<(), CliError> {
    let (shape, variant) = a.solved.check()?;
    let store = Store::open(&a.solved.data)?;
    let tb = Tablebase::open(&store, shape, variant)?;
    let storage = &tb.manifest().storage;
    if tb.reached_only() {
        say(&format!(
            "note: {shape} {} is stored in the policy layout over the states optimal play reaches from the start: the best move only (no q-values, no value), and only on those boards; on any other board the move is not an optimal one, and nothing in the files tells such a board apart",
            variant.name()
        ));
    } else if !tb.has_values() {
        say(&format!(
            "note: {shape} {} is stored in the policy layout: the best move only (no q-values, no value); a board the solve did not reach may get any valid move",
            variant.name()
        ));
    } else if !storage.is_full() {
        // What a compact solve cannot say, once, on standard error (the answers stay clean).
        let values = storage
            .value_fraction_bits
            .map_or("exact".to_string(), |f| {
                format!("within 2^-{}", u32::from(f) + 1)
            });
        say(&format!(
            "note: {shape} {} is stored in the compact layout: afterstate values {values}; a board counts as reachable when all its afterstates are",
            variant.name()
        ));
    }
    let boards = read_boards(a)?;
    let mut rows: Vec<(String, Answer)> = Vec::with_capacity(boards.len());
    for text in boards {
        let code = parse_board(&text, shape)?;
        let answer = tb.answer(code, &text)?;
        rows.push((text, answer));
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    write_evaluations(&rows, a.format, &mut out)
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

fn num(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| v.to_string())
}

fn write_evaluations(
    rows: &[(String, Answer)],
    format: Format,
    out: &mut dyn Write,
) -> io::Result<()> {
    let best = |e: &Answer| e.best.map_or(String::new(), |d| d.letter().to_string());
    match format {
        Format::Csv => {
            writeln!(out, "board,L,R,U,D,value,best")?;
            for (text, e) in rows {
                writeln!(
                    out,
                    "{},{},{},{},{},{},{}",
                    csv_field(text),
                    num(e.q[0]),
                    num(e.q[1]),
                    num(e.q[2]),
                    num(e.q[3]),
                    num(e.value),
                    best(e)
                )?;
            }
        }
        Format::Json => {
            let v: Vec<serde_json::Value> = rows.iter().map(|(text, e)| e.json(text)).collect();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&v).map_err(io::Error::other)?
            )?;
        }
        Format::Table => {
            let fmt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
            let w = rows
                .iter()
                .map(|(t, _)| t.chars().count())
                .max()
                .unwrap_or(5)
                .max(5);
            writeln!(
                out,
                "{:<w$}  {:>12} {:>12} {:>12} {:>12} {:>12}  best",
                "board", "L", "R", "U", "D", "value"
            )?;
            for (text, e) in rows {
                writeln!(
                    out,
                    "{:<w$}  {:>12} {:>12} {:>12} {:>12} {:>12}  {}",
                    text,
                    fmt(e.q[0]),
                    fmt(e.q[1]),
                    fmt(e.q[2]),
                    fmt(e.q[3]),
                    fmt(e.value),
                    best(e)
                )?;
            }
        }
    }
    Ok(())
}
