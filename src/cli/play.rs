//! `age2048 play`: many games against the solution (a Monte Carlo check of the exact value),
//! one game shown move by move (`--watch`), or a game played by a person with the regret of
//! each move beside it (`--interactive`).

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use super::output::{say, Format};
use super::solved::SolvedArgs;
use super::terminal::{Key, Keys, RawMode};
use super::{set_threads, CliError};
use crate::query::play::{
    is_optimal, play_many, Estimate, Outcome, PlaySummary, Player, Policy, Rng, Session,
};
use crate::query::{Evaluation, Tablebase};
use crate::rules::board;
use crate::rules::{Dir, Shape};
use crate::store::Store;

/// How `play` chooses moves.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum PolicyArg {
    /// The best move of the solved index.
    Optimal,
    /// A uniformly random valid move.
    Random,
    /// The valid move that merges the most (ties at random).
    Greedy,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::Optimal => Policy::Optimal,
            PolicyArg::Random => Policy::Random,
            PolicyArg::Greedy => Policy::Greedy,
        }
    }
}

#[derive(Args, Debug)]
pub struct PlayArgs {
    #[command(flatten)]
    pub solved: SolvedArgs,
    /// Games to play.
    #[arg(long, default_value_t = 1000)]
    pub games: u64,
    /// Seed of the random numbers (default 0; --watch and --interactive draw one from the
    /// clock and print it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// How moves are chosen.
    #[arg(long, value_enum, default_value = "optimal")]
    pub policy: PolicyArg,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Worker threads (default: all cores); the results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Show one game move by move, with the q-values of the four moves.
    #[arg(long, conflicts_with = "interactive")]
    pub watch: bool,
    /// Pause between the moves of --watch, in milliseconds (default 300 on a terminal, else 0).
    #[arg(long, requires = "watch")]
    pub delay: Option<u64>,
    /// Play yourself: arrows, h/j/k/l or w/a/s/d move, ? shows the q-values, q quits. Without
    /// a terminal the keys are read from standard input.
    #[arg(long)]
    pub interactive: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `age2048 play`.
pub fn run(a: &PlayArgs) -> Result<(), CliError> {
    let (shape, variant) = a.solved.check()?;
    if a.games == 0 {
        return Err(CliError::Usage("--games must be at least 1".into()));
    }
    // Before anything else runs on the global pool (opening the tablebase checks files in
    // parallel).
    set_threads(a.threads)?;
    let store = Store::open(&a.solved.data)?;
    let tb = Tablebase::open(&store, shape, variant)?;
    if a.interactive {
        return interactive(&tb, a.seed.unwrap_or_else(clock_seed));
    }
    if a.watch {
        let delay = a
            .delay
            .unwrap_or(if io::stdout().is_terminal() { 300 } else { 0 });
        return watch(
            &tb,
            a.policy.into(),
            a.seed.unwrap_or_else(clock_seed),
            delay,
        );
    }
    let seed = a.seed.unwrap_or(0);
    let bar = (!a.quiet && io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(a.games);
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:40} {pos}/{len} games {elapsed_precise} eta {eta} ({per_sec})",
        ) {
            b.set_style(style);
        }
        b
    });
    let t = Instant::now();
    let s = play_many(&tb, a.policy.into(), a.games, seed, &|n| {
        if let Some(b) = &bar {
            b.inc(n)
        }
    })?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let secs = t.elapsed().as_secs_f64();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    write_summary(&s, a.format, &mut out)
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    say(&format!(
        "played {} games in {secs:.1} s ({:.0} games/s)",
        s.games,
        s.games as f64 / secs.max(1e-9)
    ));
    Ok(())
}

/// A seed from the clock, for games meant to differ each time.
fn clock_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    t.as_secs() ^ u64::from(t.subsec_nanos()) << 20
}

/// One row of the summary: a quantity, its estimate and the exact value it estimates.
struct Row {
    quantity: String,
    est: Estimate,
    exact: Option<f64>,
}

fn rows(s: &PlaySummary) -> Vec<Row> {
    let mut v = Vec::new();
    let scored_exact = if s.success.is_none() { s.exact } else { None };
    v.push(Row {
        quantity: "score".into(),
        est: s.score,
        exact: scored_exact,
    });
    if let Some(succ) = s.success {
        v.push(Row {
            quantity: "success".into(),
            est: succ,
            exact: if s.discounted.is_none() {
                s.exact
            } else {
                None
            },
        });
    }
    if let Some(d) = s.discounted {
        v.push(Row {
            quantity: "discounted".into(),
            est: d,
            exact: s.exact,
        });
    }
    v.push(Row {
        quantity: "moves".into(),
        est: s.moves,
        exact: None,
    });
    for &(tile, share) in &s.reach {
        v.push(Row {
            quantity: format!("reach_{tile}"),
            est: share,
            exact: None,
        });
    }
    v
}

fn write_summary(s: &PlaySummary, format: Format, out: &mut dyn Write) -> io::Result<()> {
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
    match format {
        Format::Csv => {
            writeln!(out, "quantity,mean,std_error,exact")?;
            for r in rows(s) {
                writeln!(
                    out,
                    "{},{},{},{}",
                    r.quantity,
                    r.est.mean,
                    r.est.se,
                    opt(r.exact)
                )?;
            }
        }
        Format::Json => {
            let est = |e: Estimate| serde_json::json!({"mean": e.mean, "std_error": e.se});
            let mut v = serde_json::json!({
                "board": s.board,
                "variant": s.variant,
                "policy": s.policy.name(),
                "seed": s.seed,
                "games": s.games,
                "score": est(s.score),
                "moves": est(s.moves),
                "exact": s.exact,
                "z": s.z(),
                "reach": s.reach.iter().map(|(t, e)| serde_json::json!({
                    "tile": t, "share": e.mean, "std_error": e.se
                })).collect::<Vec<_>>(),
            });
            if let Some(succ) = s.success {
                v["success"] = est(succ);
            }
            if let Some(d) = s.discounted {
                v["discounted"] = est(d);
            }
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&v).map_err(io::Error::other)?
            )?;
        }
        Format::Table => {
            writeln!(
                out,
                "board {}, variant {}, policy {}, {} games, seed {}",
                s.board,
                s.variant,
                s.policy.name(),
                s.games,
                s.seed
            )?;
            let e = s.score;
            writeln!(
                out,
                "mean score        {:.4} ± {:.4} (standard error)",
                e.mean, e.se
            )?;
            if let Some(succ) = s.success {
                writeln!(
                    out,
                    "success rate      {:.5} ± {:.5} (standard error)",
                    succ.mean, succ.se
                )?;
            }
            if let Some(d) = s.discounted {
                writeln!(
                    out,
                    "discounted value  {:.5} ± {:.5} (mean of γ^moves to the goal, 0 if not made)",
                    d.mean, d.se
                )?;
            }
            if let Some(x) = s.exact {
                let what = if s.discounted.is_some() {
                    "expected γ^(moves to make the goal)"
                } else if s.success.is_some() {
                    "probability of making the goal"
                } else {
                    "expected score"
                };
                writeln!(
                    out,
                    "exact value       {x:.6} ({what} over the initial distribution, optimal play)"
                )?;
                if let Some(z) = s.z() {
                    writeln!(out, "difference        {:+.2} standard errors", z)?;
                }
            }
            writeln!(
                out,
                "mean game length  {:.2} ± {:.2} moves",
                s.moves.mean, s.moves.se
            )?;
            writeln!(out, "largest tile      share of games reaching it")?;
            for (tile, share) in &s.reach {
                writeln!(out, "{tile:>12}      {:>7.3} %", 100.0 * share.mean)?;
            }
        }
    }
    Ok(())
}

/// The board as a grid, one line a row, cells right-aligned.
fn grid(code: u64, shape: Shape) -> String {
    let width = (0..shape.cells())
        .map(|i| match board::cell(code, i) {
            0 => 1,
            e => (1u32 << e).to_string().len(),
        })
        .max()
        .unwrap_or(1)
        .max(4);
    let mut s = String::new();
    for r in 0..shape.rows() {
        for c in 0..shape.cols() {
            let t = match board::cell(code, r * shape.cols() + c) {
                0 => ".".to_string(),
                e => (1u32 << e).to_string(),
            };
            s.push_str(&format!(" {t:>width$}"));
        }
        s.push('\n');
    }
    s
}

/// A q-value as shown: points with 4 decimals, probabilities with 6.
fn qfmt(q: f64, scored: bool) -> String {
    if scored {
        format!("{q:.4}")
    } else {
        format!("{q:.6}")
    }
}

/// The four q-values on one line, the best marked.
fn qline(ev: &Evaluation, scored: bool) -> String {
    Dir::ALL
        .iter()
        .map(|&d| {
            let q = ev.q[d as usize].map_or("—".to_string(), |q| qfmt(q, scored));
            let mark = if ev.best == Some(d) { "*" } else { "" };
            format!("{} {q}{mark}", d.letter())
        })
        .collect::<Vec<_>>()
        .join("   ")
}

/// `--watch`: one game, move by move.
fn watch(tb: &Tablebase, policy: Policy, seed: u64, delay: u64) -> Result<(), CliError> {
    let shape = tb.game().shape();
    let scored = tb.variant().scored();
    let player = Player::new(tb, policy);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    writeln!(
        out,
        "board {shape}, variant {}, policy {}, seed {seed} (q-values: * marks the best move)",
        tb.variant().name(),
        policy.name()
    )
    .map_err(CliError::stdout)?;
    let mut n = 0u64;
    let mut score = 0u64;
    let mut failed: Option<io::Error> = None;
    let mut show = |t: &crate::query::play::Turn| {
        if failed.is_some() {
            return;
        }
        n += 1;
        let regret = (t.eval.value - t.eval.q[t.dir as usize].unwrap_or(0.0)).max(0.0);
        let text = format!(
            "\nmove {n}, score {score}, age {}\n{}q  {}\nplays {} (+{}), regret {}\n",
            board::age(t.board),
            grid(t.board, shape),
            qline(&t.eval, scored),
            t.dir.letter(),
            t.reward,
            qfmt(regret, scored),
        );
        score += u64::from(t.reward);
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            failed = Some(e);
        }
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(delay));
        }
    };
    let mut rng = Rng::for_game(seed, 0);
    let rec = player.play(&mut rng, Some(&mut show))?;
    if let Some(e) = failed {
        return Err(CliError::stdout(e));
    }
    let goal = match tb.variant().goal() {
        Some(g) if rec.reached_goal => format!(", goal {} made", 1u32 << g),
        Some(g) => format!(", goal {} not made", 1u32 << g),
        None => String::new(),
    };
    writeln!(
        out,
        "\ngame over: score {}, {} moves, largest tile {}{goal}",
        rec.score,
        rec.moves,
        1u32 << rec.max_exp
    )
    .and_then(|()| out.flush())
    .map_err(CliError::stdout)
}

/// The frame of the interactive game: header, board, the last message, the keys.
fn frame(s: &Session, seed: u64, message: &str) -> String {
    let tb = s.tablebase();
    let shape = tb.game().shape();
    let scored = tb.variant().scored();
    format!(
        "age2048 play — board {shape}, variant {}, seed {seed}\n\
         score {}   moves {}   total regret {}   optimal moves {}/{}\n\n{}\n{message}\n\
         keys: arrows, h j k l or w a s d move · ? hint · q quit\n",
        tb.variant().name(),
        s.score,
        s.moves,
        qfmt(s.total_regret, scored),
        s.optimal_moves,
        s.moves,
        grid(s.board, shape),
    )
}

/// The end of the interactive game, in one line.
fn closing(s: &Session, how: &str) -> String {
    let scored = s.tablebase().variant().scored();
    let goal = match s.tablebase().variant().goal() {
        Some(g) if s.won() => format!(", goal {} made", 1u32 << g),
        _ => String::new(),
    };
    format!(
        "{how}: score {} in {} moves, total regret {}, optimal moves {}/{}{goal}\n",
        s.score,
        s.moves,
        qfmt(s.total_regret, scored),
        s.optimal_moves,
        s.moves
    )
}

/// `--interactive`: a person plays; keys from the terminal (raw mode) or from a script.
fn interactive(tb: &Tablebase, seed: u64) -> Result<(), CliError> {
    let tty = io::stdin().is_terminal();
    let _raw = if tty {
        Some(RawMode::enable().map_err(|source| CliError::Output {
            what: "the terminal (raw mode)",
            source,
        })?)
    } else {
        None
    };
    let clear = if tty && io::stdout().is_terminal() {
        "\x1b[2J\x1b[H"
    } else {
        ""
    };
    let scored = tb.variant().scored();
    let mut session = Session::new(tb, seed)?;
    let stdin = io::stdin();
    let mut keys = Keys::new(stdin.lock());
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut message = "your move".to_string();
    let mut put = |text: &str| -> Result<(), CliError> {
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(CliError::stdout)
    };
    loop {
        put(&format!("{clear}{}", frame(&session, seed, &message)))?;
        if session.over() {
            let how = if session.won() {
                "goal made"
            } else {
                "game over"
            };
            return put(&closing(&session, how));
        }
        let key = keys.next_key().map_err(|source| CliError::Output {
            what: "standard input",
            source,
        })?;
        message = match key {
            None | Some(Key::Quit) => return put(&closing(&session, "quit")),
            Some(Key::Hint) => {
                let ev = session.evaluation()?;
                format!("hint: {}  (* best)", qline(&ev, scored))
            }
            Some(Key::Other(b)) => format!(
                "key {} does nothing",
                if b.is_ascii_graphic() {
                    format!("'{}'", b as char)
                } else {
                    format!("0x{b:02x}")
                }
            ),
            Some(Key::Move(d)) => match session.play(d)? {
                Outcome::Invalid(d) => format!("{}: not a valid move here", d.letter()),
                Outcome::Moved {
                    dir,
                    reward,
                    q_chosen,
                    q_best,
                    regret,
                    best,
                    ..
                } => {
                    let best = best.map_or('-', |b| b.letter());
                    if is_optimal(q_chosen, q_best) {
                        format!(
                            "{}: +{reward}, regret 0 (optimal, q {})",
                            dir.letter(),
                            qfmt(q_chosen, scored)
                        )
                    } else {
                        format!(
                            "{}: +{reward}, regret {}; the optimal move was {best} (q {} against {})",
                            dir.letter(),
                            qfmt(regret, scored),
                            qfmt(q_best, scored),
                            qfmt(q_chosen, scored)
                        )
                    }
                }
            },
        };
    }
}
