//! A game of Play, replayed from what its URL holds: the board, the variant, the seed and the
//! moves so far. `query::play::Session` plays them (the seed gives the same spawns as `play
//! --interactive --seed`), so the server keeps no game: a step, an undo or a shared link is
//! the same request with other moves, and answers with every move's q-values and regret.

use serde_json::{json, Value};

use super::ApiError;
use crate::query::play::{is_optimal, Outcome, Session};
use crate::query::{Answer, Tablebase};
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
    let shape = tb.game().shape();
    let variant = *tb.variant();
    let mut s = Session::new(tb, seed)?;
    let mut history = Vec::with_capacity(moves.len());
    for (i, c) in moves.chars().enumerate() {
        let dir = dir_of(c).ok_or_else(|| {
            ApiError::bad(format!(
                "move {}: '{c}' is not a move (L, R, U or D)",
                i + 1
            ))
        })?;
        let before = s.board;
        match s.play(dir)? {
            Outcome::Invalid(_) => {
                let why = if s.over() {
                    "the game is over"
                } else {
                    "it changes nothing"
                };
                return Err(ApiError::bad(format!(
                    "move {} ({c}) cannot be played on '{}': {why}",
                    i + 1,
                    format_board(before, shape)
                )));
            }
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
    Ok(json!({
        "board": shape.to_string(),
        "variant": variant.name(),
        "seed": seed,
        "moves": history.iter().map(|h| h["move"].as_str().unwrap_or("")).collect::<String>(),
        "text": format_board(s.board, shape),
        "cells": cells(s.board, shape),
        "age": board::age(s.board),
        "score": s.score,
        "played": s.moves,
        "optimal_moves": s.optimal_moves,
        "total_regret": s.total_regret,
        "scored": variant.scored(),
        "unit": variant.unit(),
        "won": s.won(),
        "over": over,
        "now": now,
        "history": history,
    }))
}
