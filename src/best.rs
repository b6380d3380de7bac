//! Best move: q-values of a board from the stored index of its age, without scanning Parquet.
//!
//! The board is taken exactly as given (its orientation matters for the move letters); each
//! valid move's afterstate is normalised and looked up in the age's Elias-Fano index, whose
//! rank gives the stored afterstate value. The reader works over any `AsRef<[u8]>`: the CLI
//! memory-maps the files, tests may pass vectors.

use crate::board::{self, Dir};
use crate::error::{Error, Result};
use crate::forward::absorbed;
use crate::game::Game;
use crate::index::AgeIndex;
use crate::variant::Variant;

/// The solved view of one board.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// q-value of L, R, U, D; `None` for an invalid move.
    pub q: [Option<f64>; 4],
    /// State value: the best q, 0 at a terminal board, 1 at a board holding the goal tile.
    pub value: f64,
    pub best: Option<Dir>,
}

/// Evaluates `code` (a board of `index`'s age) under `variant`. `index` must be the index of
/// the board's age for this game and variant.
pub fn evaluate<B: AsRef<[u8]>>(
    game: &Game,
    variant: &Variant,
    index: &AgeIndex<B>,
    code: u64,
    text: &str,
) -> Result<Evaluation> {
    let age = board::age(code);
    let unreachable = || Error::Unreachable {
        text: text.to_string(),
        board: game.shape().to_string(),
        variant: variant.name(),
        age,
    };
    if index.state_rank(game.canon(code)).is_none() {
        return Err(unreachable());
    }
    let mut ev = Evaluation {
        q: [None; 4],
        value: 0.0,
        best: None,
    };
    if absorbed(&variant.forward_class(), code) {
        ev.value = 1.0;
        return Ok(ev);
    }
    for (i, d) in Dir::ALL.iter().enumerate() {
        let Some((after, reward)) = game.rules.apply(code, *d) else {
            continue;
        };
        let rank = index.afterstate_rank(game.canon(after)).ok_or_else(|| {
            Error::Invalid(format!(
            "index of age {age} lacks an afterstate of a reachable board '{text}' (corrupt data?)"
        ))
        })?;
        let mut q = index.afterstate_value(rank);
        if variant.scored() {
            q += f64::from(reward);
        }
        ev.q[i] = Some(q);
        if ev.best.is_none() || q > ev.value {
            ev.value = q;
            ev.best = Some(*d);
        }
    }
    Ok(ev)
}
