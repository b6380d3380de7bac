//! The routes of `/api/` (but `POST /api/sql`, which the server hands the query pool), and the state
//! they answer from. Every answer is JSON; a refusal is a 4xx status with `{"error": "…"}`
//! holding the line the CLI prints for the same mistake.
//!
//! | route | answer |
//! |---|---|
//! | `GET /api/info` | the solves (board, variant, layout, counts, values at the starts), limits |
//! | `GET /api/best?board=B&variant=V&b=TEXT[&b=…]` | what `best --format json` prints |
//! | `GET /api/analyse?board=B&b=TEXT` | the board's age and id, and its q-values under every variant solved |
//! | `GET /api/game?board=B&variant=V&seed=S&moves=LRUD…` | the game replayed: every move's q-values and regret, the board now |
//! | `POST /api/evaluate?board=B&variant=V` `{"log": "…"}` | `evaluate`'s tables of a game log (CSV or JSON lines): each move's regret, the games, the regret per age |
//! | `POST /api/sql` `{"query": "…"}` | `{"columns", "types", "rows", "truncated", "note", "elapsed_ms"}` |
//! | `GET /api/sql/examples` | the README's example queries |
//! | `GET /api/figures`, `POST /api/figures/render` | the report's status; render it |

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::figures::Figures;
use super::game::{cells, replay};
use super::guard::Guard;
use super::http::{Request, Target};
use super::pool::Sql;
use super::solved::Solved;
use super::ApiError;
use crate::error::one_line;
use crate::query::evaluate;
use crate::rules::board::{self, format_board};
use crate::rules::{parse_board, Shape};

/// What the server answers from.
pub struct App {
    pub data: PathBuf,
    pub solved: Solved,
    pub sql: Sql,
    pub figures: Arc<Figures>,
    pub guard: Guard,
}

/// The README's example queries, by title (the SQL tab shows them one click away).
pub const EXAMPLES: [(&str, &str); 6] = [
    (
        "Boards and variants solved",
        "SELECT board, variant, sum(n_states)::BIGINT AS states, sum(n_afterstates)::BIGINT AS afterstates,\n       max(age) AS max_age\nFROM ages GROUP BY board, variant\n-- boards by size; variants as the page lists them, the numbers in names as numbers (goal-128 before goal-1024)\nORDER BY split_part(board, 'x', 1)::INT * split_part(board, 'x', 2)::INT, board,\n         coalesce(list_position(['expectation', 'optimistic', 'pessimistic'], variant), 4),\n         regexp_replace(variant, '[0-9]+', ''), TRY_CAST(regexp_extract(variant, '[0-9]+') AS UBIGINT) NULLS FIRST, variant",
    ),
    (
        "Share of terminal states per age on 3x3",
        "SELECT age, avg(terminal::INT) AS terminal_share FROM states\nWHERE board = '3x3' AND variant = 'expectation' GROUP BY age ORDER BY age",
    ),
    (
        "The ten states with the largest action gap",
        "SELECT board, variant, age, id, gap FROM states\nWHERE gap IS NOT NULL ORDER BY gap DESC LIMIT 10",
    ),
    (
        "The ten 3x3 states with the largest action gap, shown as boards",
        "SELECT board_text(id, board) AS shown, age, best, gap FROM states\nWHERE board = '3x3' AND variant = 'expectation' AND gap IS NOT NULL\nORDER BY gap DESC LIMIT 10",
    ),
    (
        "Per age, the share of 3x3 states with the largest tile in a corner, and the mean value with and without",
        "SELECT age, avg(corner::INT) AS corner_share,\n       avg(value) FILTER (WHERE corner) AS corner_value,\n       avg(value) FILTER (WHERE NOT corner) AS other_value\nFROM (SELECT age, value, max_tile(id) IN (tile(id, 0, 0, board), tile(id, 0, 2, board),\n             tile(id, 2, 0, board), tile(id, 2, 2, board)) AS corner\n      FROM states WHERE board = '3x3' AND variant = 'expectation')\nGROUP BY age ORDER BY age",
    ),
    (
        "Value distribution of 3x3 states holding a 256 tile",
        "SELECT count(*) AS n, quantile_cont(value, [0.1, 0.5, 0.9]) AS deciles FROM states\nWHERE board = '3x3' AND variant = 'expectation' AND max_tile(id) = 256",
    ),
];

/// The largest game log `POST /api/evaluate` takes (its JSON body).
pub const MAX_LOG: usize = 1024 * 1024;

/// Answers a request under `/api/` (but `POST /api/sql`): the status and the JSON.
pub fn answer(app: &App, rq: &Request, t: &Target) -> Result<(u16, Value), ApiError> {
    let method = rq.method.as_str();
    let get = matches!(method, "GET" | "HEAD");
    let post = method == "POST";
    let ok = |v: Value| Ok((200, v));
    match t.path.as_str() {
        "/api/info" if get => ok(info(app)),
        "/api/best" if get => ok(best(app, t)?),
        "/api/analyse" if get => ok(analyse(app, t)?),
        "/api/game" if get => ok(game(app, t)?),
        "/api/sql/examples" if get => ok(Value::Array(
            EXAMPLES
                .iter()
                .map(|(title, query)| json!({ "title": title, "query": query }))
                .collect(),
        )),
        "/api/figures" if get => ok(app.figures.status()),
        "/api/figures/render" if post => Ok((202, app.figures.render()?)),
        "/api/evaluate" if post => ok(evaluate(app, rq, t)?),
        "/api/evaluate"
        | "/api/info"
        | "/api/best"
        | "/api/analyse"
        | "/api/game"
        | "/api/sql/examples"
        | "/api/figures"
        | "/api/figures/render"
        | "/api/sql" => Err(ApiError::new(
            405,
            format!("{} does not take {method}", t.path),
        )),
        p => Err(ApiError::new(404, format!("no such route: {p}"))),
    }
}

fn info(app: &App) -> Value {
    let mut v = app.solved.json();
    v["version"] = json!(env!("CARGO_PKG_VERSION"));
    v["data"] = json!(app.data.display().to_string());
    v["sql"] = json!({
        "max_rows": app.sql.max_rows,
        "timeout_s": app.sql.timeout.as_secs_f64(),
        "workers": app.sql.workers,
        "max_body_bytes": super::MAX_BODY,
        "max_reply_bytes": app.sql.max_bytes,
        "max_log_bytes": MAX_LOG,
    });
    v
}

/// `best --format json` for the boards `b` of one board size and variant: the first board
/// that is malformed or unreachable is the answer's error, as in the CLI.
fn best(app: &App, t: &Target) -> Result<Value, ApiError> {
    let (solve, tb) = app
        .solved
        .find(t.need("board")?, t.get("variant").unwrap_or("expectation"))?;
    let texts = t.all("b");
    if texts.is_empty() {
        return Err(ApiError::bad(
            "no board given (pass b=TEXT, e.g. b=2 0 4/0 8 0/0 0 2)",
        ));
    }
    let mut rows = Vec::with_capacity(texts.len());
    for text in texts {
        let code = parse_board(text, solve.shape)?;
        rows.push(tb.answer(code, text)?.json(text));
    }
    Ok(Value::Array(rows))
}

/// One board under every variant solved for its size: a variant that does not reach it says
/// so in its row, a malformed board is the answer's error.
fn analyse(app: &App, t: &Target) -> Result<Value, ApiError> {
    let shape = Shape::parse(t.need("board")?)?;
    let text = t.need("b")?;
    let code = parse_board(text, shape)?;
    let solves: Vec<_> = app.solved.of_board(shape).collect();
    if solves.is_empty() {
        return Err(ApiError::new(
            404,
            format!(
                "board {shape} is not solved in {} (run `age2048 solve --board {shape}` first)",
                app.data.display()
            ),
        ));
    }
    let mut id = None;
    let rows: Vec<Value> = solves
        .iter()
        .map(|s| {
            let head = json!({
                "variant": s.name(),
                "scored": s.variant.scored(),
                "unit": s.variant.unit(),
                "layout": s.manifest.storage.describe(),
                "state_ids": s.manifest.storage.state_ids(),
            });
            let body = match &s.tablebase {
                Err(why) => json!({ "error": why }),
                Ok(tb) => {
                    id.get_or_insert(tb.game().canon(code));
                    match tb.answer(code, text) {
                        Ok(answer) => answer.json(text),
                        Err(e) => json!({ "error": one_line(&e) }),
                    }
                }
            };
            let mut row = head;
            if let (Some(r), Some(b)) = (row.as_object_mut(), body.as_object()) {
                r.extend(b.clone());
            }
            row
        })
        .collect();
    Ok(json!({
        "board": shape.to_string(),
        "text": text,
        "shown": format_board(code, shape),
        "cells": cells(code, shape),
        "age": board::age(code),
        "id": id.map(|i| i.to_string()),
        "variants": rows,
    }))
}

fn game(app: &App, t: &Target) -> Result<Value, ApiError> {
    let (_, tb) = app
        .solved
        .find(t.need("board")?, t.get("variant").unwrap_or("expectation"))?;
    let seed_text = t.get("seed").unwrap_or("0");
    let seed: u64 = seed_text.trim().parse().map_err(|_| {
        ApiError::bad(format!(
            "bad seed '{seed_text}': a whole number from 0 to {}",
            u64::MAX
        ))
    })?;
    replay(tb, seed, t.get("moves").unwrap_or(""))
}

/// `evaluate` over a log posted as `{"log": "…"}` (the CSV or JSON lines `age2048 evaluate
/// --log` reads), against the board and variant of the query string: every move with its
/// q-values and regret in log order, the games, and the regret per age, as the CLI computes
/// them (`query::evaluate`), without writing any file.
fn evaluate(app: &App, rq: &Request, t: &Target) -> Result<Value, ApiError> {
    let json = rq
        .header("Content-Type")
        .is_some_and(|c| c.trim_start().starts_with("application/json"));
    if !json {
        return Err(ApiError::new(
            415,
            "the body must be sent as Content-Type: application/json",
        ));
    }
    let (solve, tb) = app
        .solved
        .find(t.need("board")?, t.get("variant").unwrap_or("expectation"))?;
    let text = serde_json::from_slice::<Value>(&rq.body)
        .ok()
        .and_then(|v| v.get("log").and_then(Value::as_str).map(String::from))
        .ok_or_else(|| {
            ApiError::bad("the body must be JSON: {\"log\": \"game,board,move\\n…\"}")
        })?;
    let name = t.get("name").unwrap_or("the log");
    let log = evaluate::parse_log(&text, name)?;
    let ev = evaluate::evaluate_log(tb, &log, name)?;
    if let Some(why) = ev.nothing_evaluated(name) {
        return Err(ApiError::bad(why));
    }
    let known = |x: f64| if ev.values { json!(x) } else { Value::Null };
    let moves: Vec<Value> = ev
        .moves
        .iter()
        .map(|m| {
            json!({
                "line": m.line,
                "game": m.game,
                "step": m.step,
                "board": m.board,
                "age": m.age,
                "move": m.dir.letter().to_string(),
                "best": m.best.letter().to_string(),
                "q": known(m.q),
                "best_q": known(m.best_q),
                "regret": known(m.regret),
                "optimal": m.optimal,
            })
        })
        .collect();
    let games: Vec<Value> = ev
        .games
        .iter()
        .map(|g| {
            json!({
                "game": g.game,
                "first_line": g.first_line,
                "moves": g.moves,
                "optimal_moves": g.optimal_moves,
                "total_regret": known(g.total_regret),
                "start_value": known(g.start_value),
            })
        })
        .collect();
    let ages: Vec<Value> = ev
        .ages
        .iter()
        .map(|a| {
            json!({
                "age": a.age,
                "moves": a.moves,
                "optimal_share": a.optimal_share(),
                "mean_regret": known(a.mean_regret()),
                "max_regret": known(a.max_regret),
            })
        })
        .collect();
    Ok(json!({
        "board": ev.board,
        "variant": ev.variant,
        "layout": solve.manifest.storage.describe(),
        "values": ev.values,
        "scored": ev.scored,
        "unit": ev.unit,
        "games": ev.games.len(),
        "moves": ev.moves.len(),
        "skipped": ev.skipped,
        "optimal_share": ev.optimal_share(),
        "mean_regret": ev.mean_regret(),
        "mean_game_regret": ev.mean_game_regret(),
        "rows": moves,
        "game_rows": games,
        "ages": ages,
    }))
}
