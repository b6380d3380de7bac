//! `age2048 guaranteed`: the largest tile a player can force, per board; under `--caps` (and
//! `--require`), whether the player forces `--goal` from the empty board (Slizkov's A.1), and
//! with `--minimal` whether halving or doubling any one cap changes that.

use std::io::Write;

use clap::Args;

use super::output::Format;
use super::{set_threads, CliError};
use crate::rules::variant::{parse_p4_arg, DEFAULT_P4};
use crate::rules::{Game, Group, Restriction, Rules, Shape};
use crate::solver::guaranteed::{guaranteed, restricted, RestrictedAnswer};

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
    /// The largest tile of every cell, row-major, rows split by '/' (e.g. "16 16 8 / 16 16 8");
    /// a move that breaks a cap is barred unless it wins. Asks whether --goal is forced.
    #[arg(long, requires = "goal")]
    pub caps: Option<String>,
    /// The goal tile under --caps (e.g. 32).
    #[arg(long, requires = "caps")]
    pub goal: Option<String>,
    /// Tiles whose reaching (exactly these in these cells, '.' = any) wins, under --caps.
    #[arg(long, requires = "caps")]
    pub require: Option<String>,
    /// Under --caps, also solve with each cap halved and each doubled (where that changes the
    /// restriction), to check Slizkov's "minimal" and "maximal".
    #[arg(long, requires = "caps")]
    pub minimal: bool,
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
    if let Some(caps) = &a.caps {
        let [shape] = shapes[..] else {
            return Err(CliError::Usage(
                "--caps takes one board size in --board".into(),
            ));
        };
        return write_restricted(a, shape, caps, p4, out);
    }
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

/// Parses `--goal`: a power of two from 4 to 32768, as an exponent.
fn parse_goal(text: &str) -> Result<u8, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "bad --goal '{text}': expected a power of two from 4 to 32768"
        ))
    };
    let v: u32 = text.trim().parse().map_err(|_| bad())?;
    if !v.is_power_of_two() || !(4..=32768).contains(&v) {
        return Err(bad());
    }
    Ok(v.trailing_zeros() as u8)
}

/// One restricted solve: the answer and its time.
struct Solved {
    answer: RestrictedAnswer,
    seconds: f64,
}

fn solve_one(rules: &Rules, r: &Restriction, goal: u8, p4: f64) -> Solved {
    let t = std::time::Instant::now();
    let answer = restricted(rules, r, goal, p4);
    Solved {
        answer,
        seconds: t.elapsed().as_secs_f64(),
    }
}

/// One cap changed (halved or doubled) and the answer under it.
struct Change {
    cell: usize,
    from: u8,
    to: u8,
    winnable: bool,
}

/// Slizkov's claim for the answer and its one-cap changes: "minimal" when winnable and every
/// halving makes it not winnable; "maximal" when not winnable and every doubling makes it
/// winnable. Only changes that change the restriction count (a halved cap stays at least 4, a
/// doubled one at most half the goal, above which a cap bars nothing).
fn claim(winnable: bool, changes: &[Change]) -> String {
    let (word, flipped) = if winnable {
        (
            "minimal",
            changes
                .iter()
                .filter(|c| c.to < c.from)
                .all(|c| !c.winnable),
        )
    } else {
        (
            "maximal",
            changes.iter().filter(|c| c.to > c.from).all(|c| c.winnable),
        )
    };
    if flipped {
        word.to_string()
    } else {
        format!("not {word}")
    }
}

/// The flips a restricted search identified boards by, as `Group` names its elements
/// (`keeps-id+lr`), or `none`.
fn flips_name(mask: u8) -> String {
    if mask <= 1 {
        "none".into()
    } else {
        Group::Kept(mask).name()
    }
}

fn write_restricted(
    a: &GuaranteedArgs,
    shape: Shape,
    caps: &str,
    p4: f64,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let goal = parse_goal(a.goal.as_deref().unwrap_or_default())?;
    let r = Restriction::parse(shape, caps, a.require.as_deref())
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let rules = Rules::new(shape);
    let main = solve_one(&rules, &r, goal, p4);
    let mut changes = Vec::new();
    let mut seconds = main.seconds;
    if a.minimal {
        for cell in 0..shape.cells() {
            let from = r.cap_exp(cell).min(goal - 1);
            let halved = from.checked_sub(1).filter(|&e| e >= 2);
            let doubled = Some(from + 1).filter(|&e| e < goal);
            for to in [halved, doubled].into_iter().flatten() {
                if let Some(changed) = r.with_cap(cell, to) {
                    let s = solve_one(&rules, &changed, goal, p4);
                    seconds += s.seconds;
                    changes.push(Change {
                        cell,
                        from,
                        to,
                        winnable: s.answer.winnable,
                    });
                }
            }
        }
    }
    let m = main.answer;
    let result = if m.winnable {
        "winnable"
    } else {
        "not winnable"
    };
    let claim = a.minimal.then(|| claim(m.winnable, &changes));
    let require = r.require_text().unwrap_or_default();
    let goal_tile = 1u32 << goal;
    let symmetry = flips_name(m.flips);
    let io = CliError::stdout;
    match a.format {
        Format::Csv => {
            writeln!(
                out,
                "board,caps,require,goal,result,claim,states,afterstates,memory_bytes,seconds,seconds_all,symmetry"
            )
            .map_err(io)?;
            writeln!(
                out,
                "{shape},{},{require},{goal_tile},{result},{},{},{},{},{:.3},{seconds:.3},{symmetry}",
                r.caps_text(),
                claim.clone().unwrap_or_default(),
                m.states,
                m.afterstates,
                m.memory_bytes,
                main.seconds
            )
            .map_err(io)?;
        }
        Format::Json => {
            let ch: Vec<serde_json::Value> = changes
                .iter()
                .map(|c| serde_json::json!({"row": c.cell / shape.cols() + 1, "col": c.cell % shape.cols() + 1, "cap": 1u32 << c.from, "changed_to": 1u32 << c.to, "winnable": c.winnable}))
                .collect();
            let v = serde_json::json!({
                "board": shape.to_string(), "caps": r.caps_text(), "require": r.require_text(),
                "goal": goal_tile, "winnable": m.winnable, "claim": claim, "changes": ch,
                "states": m.states, "afterstates": m.afterstates, "memory_bytes": m.memory_bytes,
                "seconds": main.seconds, "seconds_all": seconds, "symmetry": symmetry,
            });
            writeln!(out, "{v}").map_err(io)?;
        }
        Format::Table => {
            writeln!(
                out,
                "board {shape}, caps {}, goal {goal_tile}",
                r.caps_text()
            )
            .map_err(io)?;
            if !require.is_empty() {
                writeln!(out, "require {require}").map_err(io)?;
            }
            writeln!(
                out,
                "{result} from the empty board ({} states, {} afterstates valued, boards identified by {symmetry}, {:.3} s)",
                m.states, m.afterstates, main.seconds
            )
            .map_err(io)?;
            for c in &changes {
                writeln!(
                    out,
                    "  row {}, column {}: cap {} -> {}: {}",
                    c.cell / shape.cols() + 1,
                    c.cell % shape.cols() + 1,
                    1u32 << c.from,
                    1u32 << c.to,
                    if c.winnable {
                        "winnable"
                    } else {
                        "not winnable"
                    }
                )
                .map_err(io)?;
            }
            if let Some(c) = &claim {
                writeln!(out, "{c}").map_err(io)?;
            }
        }
    }
    Ok(())
}
