//! Evaluating an agent's games: the regret of every logged move against the solution.
//!
//! # The log
//!
//! One move a record, in either of two forms (told apart by the first record: `{` starts
//! JSON lines):
//!
//! * CSV with a header naming the columns `game`, `board` and `move` (any order, other
//!   columns ignored; fields quoted as in RFC 4180 when they hold a comma):
//!   `game,board,move` / `0,2 0 4/0 8 0/0 0 2,L`
//! * JSON lines, one object a line: `{"game": 0, "board": "2 0 4/0 8 0/0 0 2", "move": "L"}`
//!   (`game` a string or an integer).
//!
//! `board` is the board before the move in board text (rows separated by `/`, cells by
//! spaces, `0` or `.` for empty), exactly as the agent saw it; `move` is `L`, `R`, `U`, `D`
//! (or `left`, `right`, `up`, `down`, any case). Empty lines and lines starting with `#` are
//! skipped, and so is a byte-order mark at the start. A game's moves are numbered in log
//! order; games may interleave.
//!
//! # What is computed
//!
//! For each move: the q of the move played, the best q (the state value), the regret
//! `best q − q` and whether the move is optimal. For each game: moves, optimal moves, the
//! total regret and the value of its first board. For a scored variant the total regret is
//! the expected score the moves cost: by the performance-difference identity, the mean of
//! the total regret over games started from a board equals its optimal value minus the
//! agent's expected score. Per age: the moves, the share of optimal ones, the mean and the
//! largest regret. For a goal variant, moves from a board already holding the goal tile have
//! no q-values and are skipped (counted in [`LogEvaluation::skipped`]).
//!
//! A malformed line, a board that is not reachable, a move that changes nothing, or (in a
//! restricted solve) a move its caps bar is an error naming the line; nothing is evaluated
//! half.

use std::collections::{BTreeMap, HashMap};

use super::play::is_optimal;
use super::{Evaluation, QueryError, Result, Tablebase};
use crate::rules::board;
use crate::rules::{parse_board, Dir};
use crate::store::evaluation::{EvaluationTables, GamesColumns, MovesColumns, RegretByAgeColumns};

/// One logged move.
#[derive(Clone, Debug, PartialEq)]
pub struct LogMove {
    /// Line of the log (1-based).
    pub line: usize,
    pub game: String,
    /// Board text as logged.
    pub board: String,
    pub dir: Dir,
}

/// Parses a move name: `L`/`R`/`U`/`D` or `left`/`right`/`up`/`down`, any case.
pub fn parse_move(text: &str) -> Option<Dir> {
    match text.trim().to_ascii_lowercase().as_str() {
        "l" | "left" => Some(Dir::L),
        "r" | "right" => Some(Dir::R),
        "u" | "up" => Some(Dir::U),
        "d" | "down" => Some(Dir::D),
        _ => None,
    }
}

/// Splits one CSV line into fields (RFC 4180 quoting; a record does not span lines).
fn csv_fields(line: &str) -> std::result::Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cur.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && at_start {
            quoted = true;
            at_start = false;
        } else if c == ',' {
            fields.push(std::mem::take(&mut cur));
            at_start = true;
        } else {
            cur.push(c);
            at_start = false;
        }
    }
    if quoted {
        return Err("a quoted field is not closed".into());
    }
    fields.push(cur);
    Ok(fields)
}

/// Parses a log (see the module documentation). `name` names the log in errors.
pub fn parse_log(text: &str, name: &str) -> Result<Vec<LogMove>> {
    let err = |line: usize, what: String| QueryError::Log {
        name: name.to_string(),
        line,
        what,
    };
    // A byte-order mark (as some spreadsheets write CSV) is not part of the header.
    let mut records = text
        .strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let Some((first_line, first)) = records.next() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let make = |line: usize, game: String, board: String, mv: &str| -> Result<LogMove> {
        if game.trim().is_empty() {
            return Err(err(line, "the game id is empty".into()));
        }
        let dir = parse_move(mv).ok_or_else(|| {
            err(
                line,
                format!("'{mv}' is not a move (expected L, R, U or D)"),
            )
        })?;
        Ok(LogMove {
            line,
            game: game.trim().to_string(),
            board: board.trim().to_string(),
            dir,
        })
    };
    if first.trim_start().starts_with('{') {
        for (line, l) in std::iter::once((first_line, first)).chain(records) {
            let v: serde_json::Value = serde_json::from_str(l)
                .map_err(|e| err(line, format!("not a JSON object: {e}")))?;
            let field = |k: &str| {
                v.get(k)
                    .ok_or_else(|| err(line, format!("no \"{k}\" field")))
            };
            let game = match field("game")? {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                other => {
                    return Err(err(
                        line,
                        format!("\"game\" must be a string or a number, not {other}"),
                    ))
                }
            };
            let text = |k: &str| -> Result<String> {
                field(k)?
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| err(line, format!("\"{k}\" must be a string")))
            };
            out.push(make(line, game, text("board")?, &text("move")?)?);
        }
    } else {
        let header = csv_fields(first).map_err(|e| err(first_line, e))?;
        let find = |k: &str| {
            header
                .iter()
                .position(|h| h.trim().eq_ignore_ascii_case(k))
                .ok_or_else(|| {
                    err(
                        first_line,
                        format!(
                            "the CSV header has no column '{k}' (expected game,board,move; or JSON lines)"
                        ),
                    )
                })
        };
        let (g, b, m) = (find("game")?, find("board")?, find("move")?);
        for (line, l) in records {
            let f = csv_fields(l).map_err(|e| err(line, e))?;
            if f.len() != header.len() {
                return Err(err(
                    line,
                    format!("{} fields, the header has {}", f.len(), header.len()),
                ));
            }
            out.push(make(line, f[g].clone(), f[b].clone(), &f[m])?);
        }
    }
    Ok(out)
}

/// One evaluated move.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveRow {
    pub line: usize,
    pub game: String,
    pub step: u32,
    /// The board as formatted by the rules (`.` for empty).
    pub board: String,
    pub id: u64,
    pub age: u32,
    pub dir: Dir,
    pub q: f64,
    pub best_q: f64,
    pub regret: f64,
    pub optimal: bool,
    pub best: Dir,
}

/// One evaluated game.
#[derive(Clone, Debug, PartialEq)]
pub struct GameRow {
    pub game: String,
    pub first_line: usize,
    pub moves: u64,
    pub optimal_moves: u64,
    pub total_regret: f64,
    pub start_value: f64,
}

/// The moves of one age.
#[derive(Clone, Debug, PartialEq)]
pub struct AgeRegret {
    pub age: u32,
    pub moves: u64,
    pub optimal_moves: u64,
    pub total_regret: f64,
    pub max_regret: f64,
}

impl AgeRegret {
    pub fn mean_regret(&self) -> f64 {
        self.total_regret / self.moves.max(1) as f64
    }
    pub fn optimal_share(&self) -> f64 {
        self.optimal_moves as f64 / self.moves.max(1) as f64
    }
}

/// The evaluation of a whole log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEvaluation {
    /// Whether the solve has values (q-values, regrets): not in the policy layout, where only
    /// `optimal` and `best` are known of a move.
    pub values: bool,
    pub board: String,
    pub variant: String,
    /// Whether q-values are points (false for goal and guaranteed variants: probabilities).
    pub scored: bool,
    /// What q-values and regrets are measured in ([`crate::rules::Variant::unit`]).
    pub unit: &'static str,
    pub moves: Vec<MoveRow>,
    pub games: Vec<GameRow>,
    pub ages: Vec<AgeRegret>,
    /// Moves logged from a board already holding the goal tile (goal variants), not evaluated.
    pub skipped: usize,
}

impl LogEvaluation {
    /// Why a log named `name` gave no move to evaluate, if it gave none (what `evaluate` and
    /// `serve` refuse it with).
    pub fn nothing_evaluated(&self, name: &str) -> Option<String> {
        self.moves.is_empty().then(|| {
            let why = if self.skipped > 0 {
                " (every move was made after the goal tile)"
            } else {
                ""
            };
            format!("{name}: no move to evaluate{why}")
        })
    }

    /// Share of the evaluated moves that are optimal.
    pub fn optimal_share(&self) -> f64 {
        let n = self.moves.len().max(1) as f64;
        self.moves.iter().filter(|m| m.optimal).count() as f64 / n
    }

    /// Mean regret per evaluated move (`None` over a policy solve).
    pub fn mean_regret(&self) -> Option<f64> {
        let sum = self.moves.iter().map(|m| m.regret).sum::<f64>();
        self.values.then(|| sum / self.moves.len().max(1) as f64)
    }

    /// Mean total regret per game (`None` over a policy solve).
    pub fn mean_game_regret(&self) -> Option<f64> {
        let sum = self.games.iter().map(|g| g.total_regret).sum::<f64>();
        self.values.then(|| sum / self.games.len().max(1) as f64)
    }

    /// The tables as the store writes them.
    pub fn tables(&self) -> EvaluationTables {
        let mut m = MovesColumns::default();
        for r in &self.moves {
            m.line.push(r.line as u64);
            m.game.push(r.game.clone());
            m.step.push(r.step);
            m.board.push(r.board.clone());
            m.id.push(r.id);
            m.age.push(r.age);
            m.mv.push(letter(r.dir));
            let known = |x: f64| self.values.then_some(x);
            m.q.push(known(r.q));
            m.best_q.push(known(r.best_q));
            m.regret.push(known(r.regret));
            m.optimal.push(r.optimal);
            m.best.push(letter(r.best));
        }
        let mut g = GamesColumns::default();
        for r in &self.games {
            let n = r.moves.max(1) as f64;
            g.game.push(r.game.clone());
            g.first_line.push(r.first_line as u64);
            g.moves.push(r.moves);
            g.optimal_moves.push(r.optimal_moves);
            g.optimal_share.push(r.optimal_moves as f64 / n);
            let known = |x: f64| self.values.then_some(x);
            g.total_regret.push(known(r.total_regret));
            g.mean_regret.push(known(r.total_regret / n));
            g.start_value.push(known(r.start_value));
            g.expected_score_lost
                .push((self.scored && self.values).then_some(r.total_regret));
        }
        let mut a = RegretByAgeColumns::default();
        for r in &self.ages {
            a.age.push(r.age);
            a.moves.push(r.moves);
            a.optimal_share.push(r.optimal_share());
            a.mean_regret.push(self.values.then(|| r.mean_regret()));
            a.max_regret.push(self.values.then_some(r.max_regret));
        }
        EvaluationTables {
            moves: m,
            games: g,
            regret_by_age: a,
        }
    }
}

/// What a policy solve says of a move: the best move, and for the move played (if valid) a
/// q of 1 when it makes the best move's afterstate up to symmetry with its reward (so it is as
/// good), 0 otherwise (another move, which may still tie with it: the layout cannot tell);
/// the value is NaN.
fn policy_evaluation(tb: &Tablebase, code: u64, text: &str, played: Dir) -> Result<Evaluation> {
    let game = tb.game();
    let best = tb.best_move(code, text)?;
    let mut ev = Evaluation {
        q: [None; 4],
        value: f64::NAN,
        best,
    };
    let outcome = |d: Dir| {
        game.rules
            .apply(code, d)
            .map(|(after, reward)| (game.canon(after), reward))
    };
    if let (Some(best), Some(made)) = (best, outcome(played)) {
        let same = outcome(best) == Some(made);
        ev.q[played as usize] = Some(if same { 1.0 } else { 0.0 });
    }
    Ok(ev)
}

fn letter(d: Dir) -> &'static str {
    ["L", "R", "U", "D"][d as usize]
}

/// Evaluates every move of `log` against `tb`. `name` names the log in errors.
pub fn evaluate_log(tb: &Tablebase, log: &[LogMove], name: &str) -> Result<LogEvaluation> {
    let values = tb.has_values();
    let game = tb.game();
    let shape = game.shape();
    let variant = tb.variant();
    let at_line = |line: usize, e: QueryError| QueryError::LogLine {
        name: name.to_string(),
        line,
        source: Box::new(e),
    };
    let mut moves = Vec::with_capacity(log.len());
    let mut games: Vec<GameRow> = Vec::new();
    let mut game_ix: HashMap<&str, usize> = HashMap::new();
    let mut ages: BTreeMap<u32, AgeRegret> = BTreeMap::new();
    let mut skipped = 0;
    for m in log {
        let code =
            parse_board(&m.board, shape).map_err(|e| at_line(m.line, QueryError::Board(e)))?;
        if variant.goal().is_some_and(|g| board::max_exp(code) >= g) {
            skipped += 1;
            continue;
        }
        let ev = if values {
            tb.evaluate(code, &m.board)
        } else {
            policy_evaluation(tb, code, &m.board, m.dir)
        }
        .map_err(|e| at_line(m.line, e))?;
        let (Some(q), Some(best)) = (ev.q[m.dir as usize], ev.best) else {
            // A move that changes the board yet has no q: a restricted solve's caps bar it.
            let what = if game.rules.apply(code, m.dir).is_some() {
                format!(
                    "move {} on the board '{}' is barred by the caps of {} (it makes a tile \
                     above its cell's cap): the game left the restricted solve",
                    m.dir.letter(),
                    m.board,
                    variant.name()
                )
            } else {
                format!(
                    "move {} does not change the board '{}' (not a valid move{})",
                    m.dir.letter(),
                    m.board,
                    if ev.best.is_none() {
                        ": the game is over"
                    } else {
                        ""
                    }
                )
            };
            return Err(QueryError::Log {
                name: name.to_string(),
                line: m.line,
                what,
            });
        };
        // Over a policy solve q and the value are NaN: optimal is whether the move is as good
        // as the stored one by making its afterstate (see `policy_evaluation`).
        let regret = (ev.value - q).max(0.0);
        let optimal = if values {
            is_optimal(q, ev.value)
        } else {
            q == 1.0
        };
        let gi = *game_ix.entry(m.game.as_str()).or_insert_with(|| {
            games.push(GameRow {
                game: m.game.clone(),
                first_line: m.line,
                moves: 0,
                optimal_moves: 0,
                total_regret: 0.0,
                start_value: ev.value,
            });
            games.len() - 1
        });
        let g = &mut games[gi];
        let step = g.moves as u32;
        g.moves += 1;
        g.optimal_moves += u64::from(optimal);
        g.total_regret += regret;
        let age = board::age(code);
        let a = ages.entry(age).or_insert(AgeRegret {
            age,
            moves: 0,
            optimal_moves: 0,
            total_regret: 0.0,
            max_regret: 0.0,
        });
        a.moves += 1;
        a.optimal_moves += u64::from(optimal);
        a.total_regret += regret;
        a.max_regret = a.max_regret.max(regret);
        moves.push(MoveRow {
            line: m.line,
            game: m.game.clone(),
            step,
            board: crate::rules::format_board(code, shape),
            id: game.canon(code),
            age,
            dir: m.dir,
            q,
            best_q: ev.value,
            regret,
            optimal,
            best,
        });
    }
    Ok(LogEvaluation {
        values,
        board: shape.to_string(),
        variant: variant.name(),
        scored: variant.scored(),
        unit: variant.unit(),
        moves,
        games,
        ages: ages.into_values().collect(),
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_parse_in_both_forms() {
        let csv = "# my agent\ngame,move,board\n0,L,2 0 4/0 8 0/0 0 2\n\"a,b\",up,\". 2/2 .\"\n";
        let v = parse_log(csv, "log").unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].line, 3);
        assert_eq!(v[0].board, "2 0 4/0 8 0/0 0 2");
        assert_eq!(v[1].game, "a,b");
        assert_eq!(v[1].dir, Dir::U);
        let json = "{\"game\": 3, \"board\": \"2 0/0 2\", \"move\": \"d\"}\n\n{\"game\": \"x\", \"board\": \"2 2/0 0\", \"move\": \"R\"}";
        let v = parse_log(json, "log").unwrap();
        assert_eq!((v[0].game.as_str(), v[0].dir), ("3", Dir::D));
        assert_eq!((v[1].line, v[1].dir), (3, Dir::R));
        // A spreadsheet's byte-order mark before the header.
        let v = parse_log("\u{feff}game,board,move\n0,2 0/0 2,L\n", "log").unwrap();
        assert_eq!((v[0].line, v[0].game.as_str()), (2, "0"));
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_log("game,board,move\n0,2 0/0 2,X\n", "a.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.csv line 2: 'X' is not a move (expected L, R, U or D)"
        );
        let e = parse_log("game,board\n", "a.csv").unwrap_err();
        assert!(e
            .to_string()
            .contains("line 1: the CSV header has no column 'move'"));
        let e = parse_log("{\"game\": 1, \"move\": \"L\"}", "-").unwrap_err();
        assert_eq!(e.to_string(), "- line 1: no \"board\" field");
        let e = parse_log("game,board,move\n0,\"2 0/0 2,L\n", "a.csv").unwrap_err();
        assert!(e
            .to_string()
            .contains("line 2: a quoted field is not closed"));
    }
}
