//! A game of Play, replayed from what its URL holds: the board, the variant, the seed and the
//! moves so far. `query::play::Session` plays them (the seed gives the same spawns as `play
//! --interactive --seed`), so the server keeps no game: a step, an undo or a shared link is
//! the same request with other moves, and answers with every move's q-values and regret.
//!
//! Over a solve in the policy layout (moves only) the answer has each board's stored move
//! instead: a move counts as optimal when it makes the stored move's afterstate (up to
//! symmetry, with the same reward), and q-values and regrets are `null`. Over a policy kept
//! for the states optimal play reaches (`solve --reach`), a game that left the stored moves
//! may leave the states the policy covers, where its moves are some valid move: the answer
//! says so (`on_policy`, `note`).

use serde_json::{json, Value};

use super::ApiError;
use crate::query::play::{is_optimal, Outcome, Session};
use crate::query::{Answer, QueryError, Tablebase};
use crate::rules::board::{self, format_board};
use crate::rules::{Dir, Shape};

/// The most moves a game's URL may hold (3x3 games last about 370 moves).
pub const MAX_MOVES: usize = 100_000;

/// The move a letter names (`L`, `R`, `U`, `D`, either case).
pub fn dir_of(c: char) -> Option<Dir> {
    Dir::ALL
        .into_iter()
        .find(|d| d.letter() == c.to_ascii_uppercase())
}

/// The tiles of a board, row by row (0 for empty).
pub fn cells(code: u64, shape: Shape) -> Vec<Vec<u32>> {
    (0..shape.rows())
        .map(|r| {
            (0..shape.cols())
                .map(|c| match board::cell(code, r * shape.cols() + c) {
                    0 => 0,
                    e => 1u32 << e,
                })
                .collect()
        })
        .collect()
}

/// The game of `tb` seeded with `seed` after `moves` (letters): every move with the q-values
/// of the board it was played on and its regret, and the board now with its q-values.
pub fn replay(tb: &Tablebase, seed: u64, moves: &str) -> Result<Value, ApiError> {
    if moves.len() > MAX_MOVES {
        return Err(ApiError::bad(format!(
            "{} moves, more than the {MAX_MOVES} a game may hold",
            moves.len()
        )));
    }
    if !tb.has_values() {
        return replay_moves_only(tb, seed, moves);
    }
    let shape = tb.game().shape();
    let variant = *tb.variant();
    let mut s = Session::new(tb, seed)?;
    let mut history = Vec::with_capacity(moves.len());
    for (i, c) in moves.chars().enumerate() {
        let dir = move_at(i, c)?;
        let before = s.board;
        match s.play(dir)? {
            Outcome::Invalid(_) => return Err(cannot_play(i, c, before, shape, s.over())),
            Outcome::Moved {
                dir,
                reward,
                q_chosen,
                q_best,
                regret,
                eval,
                ..
            } => {
                let eval = eval.shown(&variant);
                history.push(json!({
                    "board": format_board(before, shape),
                    "move": dir.letter().to_string(),
                    "reward": reward,
                    "q": eval.q,
                    "best": eval.best.map(|d| d.letter().to_string()),
                    "regret": regret,
                    "optimal": is_optimal(q_chosen, q_best),
                }));
            }
        }
    }
    let over = s.over();
    let now = if over {
        Value::Null
    } else {
        Answer::of(s.evaluation()?, &variant).json(&format_board(s.board, shape))
    };
    let mut out = summary(&s, history, now);
    out["total_regret"] = json!(s.total_regret);
    Ok(out)
}

/// The answer's fields both layouts share: the game now (its board, score, moves) and its
/// history.
fn summary(s: &Session, history: Vec<Value>, now: Value) -> Value {
    let tb = s.tablebase();
    let shape = tb.game().shape();
    let variant = tb.variant();
    let valid: Vec<String> = tb
        .game()
        .rules
        .moves(s.board)
        .iter()
        .zip(Dir::ALL)
        .filter(|(m, _)| m.is_some() && !s.over())
        .map(|(_, d)| d.letter().to_string())
        .collect();
    json!({
        "board": shape.to_string(),
        "variant": variant.name(),
        "seed": s.seed(),
        "moves": history.iter().map(|h| h["move"].as_str().unwrap_or("")).collect::<String>(),
        "text": format_board(s.board, shape),
        "cells": cells(s.board, shape),
        "age": board::age(s.board),
        "score": s.score,
        "played": s.moves,
        "optimal_moves": s.optimal_moves,
        "total_regret": null,
        "scored": variant.scored(),
        "unit": variant.unit(),
        "values": tb.has_values(),
        "valid": valid,
        "won": s.won(),
        "over": s.over(),
        "now": now,
        "history": history,
    })
}

/// The stored move of `code` in a policy solve, or `None` where the game has no move; off
/// The refusal of move `i` (letter `c`) of a game, which changed nothing on `before` or came
/// after the game ended.
fn cannot_play(i: usize, c: char, before: u64, shape: Shape, over: bool) -> ApiError {
    let why = if over {
        "the game is over"
    } else {
        "it changes nothing"
    };
    ApiError::bad(format!(
        "move {} ({c}) cannot be played on '{}': {why}",
        i + 1,
        format_board(before, shape)
    ))
}

/// the states a `--reach` policy covers (`covered` false) a board may have none.
fn stored_move(tb: &Tablebase, code: u64, covered: bool) -> Result<Option<Dir>, ApiError> {
    let text = format_board(code, tb.game().shape());
    match tb.best_move(code, &text) {
        Ok(d) => Ok(d),
        Err(QueryError::Unreachable { .. }) if !covered => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// [`replay`] over a solve in the policy layout: each move beside the stored move of its board.
fn replay_moves_only(tb: &Tablebase, seed: u64, moves: &str) -> Result<Value, ApiError> {
    let game = tb.game();
    let shape = game.shape();
    let reach = tb.reached_only();
    let mut s = Session::new(tb, seed)?;
    let mut history = Vec::with_capacity(moves.len());
    // Every move so far the stored one: the boards are those optimal play reaches.
    let mut on_policy = true;
    for (i, c) in moves.chars().enumerate() {
        let dir = move_at(i, c)?;
        let before = s.board;
        let best = if s.over() {
            None
        } else {
            stored_move(tb, before, on_policy || !reach)?
        };
        let Some(reward) = s.step(dir)? else {
            return Err(cannot_play(i, c, before, shape, s.over()));
        };
        // The stored move's equal: the same afterstate up to symmetry, the same reward.
        let made = |d: Dir| {
            game.rules
                .apply(before, d)
                .map(|(after, r)| (game.canon(after), r))
        };
        let optimal = best.is_some_and(|b| made(b) == made(dir));
        on_policy &= optimal;
        s.optimal_moves += u64::from(optimal);
        history.push(json!({
            "board": format_board(before, shape),
            "move": dir.letter().to_string(),
            "reward": reward,
            "q": null,
            "best": best.map(|d| d.letter().to_string()),
            "regret": null,
            "optimal": optimal,
        }));
    }
    let covered = on_policy || !reach;
    let now = if s.over() {
        Value::Null
    } else {
        Answer::move_only(stored_move(tb, s.board, covered)?).json(&format_board(s.board, shape))
    };
    let mut out = summary(&s, history, now);
    out["on_policy"] = json!(on_policy);
    out["note"] = json!(if !covered {
        "this game left the stored moves, so its boards may be outside the states this solve keeps (--reach: those optimal play reaches): the move shown now is some valid move, not an optimal one"
    } else if reach {
        "moves only (policy layout over the states optimal play reaches): every move so far is the stored one"
    } else {
        "moves only (policy layout): a move other than the stored one may still tie with it"
    });
    Ok(out)
}

/// Move `i` (from 0) of a replay, `c`, as a direction, or the one line saying it is none.
fn move_at(i: usize, c: char) -> Result<Dir, ApiError> {
    dir_of(c).ok_or_else(|| {
        ApiError::bad(format!(
            "move {}: '{c}' is not a move (L, R, U or D)",
            i + 1
        ))
    })
}
