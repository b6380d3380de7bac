//! Best move: q-values of a board from the stored index of its age, without scanning Parquet.
//!
//! The board is taken exactly as given (its orientation matters for the move letters); each
//! valid move's afterstate is normalised and looked up in the age's Elias-Fano index, whose
//! rank gives the stored afterstate value. An index of the compact layout holds no state ids:
//! there a board counts as reachable when all its afterstates are (a board no game reaches
//! whose moves all lead to reachable afterstates gets q-values, and a board without a move
//! the value 0). The reader works over any `AsRef<[u8]>`: the
//! [`super::tablebase`] memory-maps the files, tests may pass vectors.

use super::{QueryError, Result};
use crate::index::AgeIndex;
use crate::rules::board;
use crate::rules::{Dir, Game, Variant};

/// The solved view of one board.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// q-value of L, R, U, D; `None` for an invalid move.
    pub q: [Option<f64>; 4],
    /// State value: the best q, 0 at a terminal board, 1 at a board holding the goal tile.
    pub value: f64,
    pub best: Option<Dir>,
}

impl Evaluation {
    /// As shown to a user: for a variant whose values are probabilities, the value and the
    /// q-values in [0, 1] whatever the rounding of the sums behind them.
    pub fn shown(mut self, variant: &Variant) -> Evaluation {
        if !variant.scored() {
            self.value = self.value.clamp(0.0, 1.0);
            self.q = self.q.map(|q| q.map(|x| x.clamp(0.0, 1.0)));
        }
        self
    }
}

/// What `best` answers of a board in every layout: its q-values and value as shown (none in
/// the policy layout, which keeps the best move only) and its best move.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub q: [Option<f64>; 4],
    pub value: Option<f64>,
    pub best: Option<Dir>,
}

impl Answer {
    /// The answer of a layout with values.
    pub fn of(ev: Evaluation, variant: &Variant) -> Answer {
        let ev = ev.shown(variant);
        Answer {
            q: ev.q,
            value: Some(ev.value),
            best: ev.best,
        }
    }

    /// The answer of the policy layout: the move alone.
    pub fn move_only(best: Option<Dir>) -> Answer {
        Answer {
            q: [None; 4],
            value: None,
            best,
        }
    }

    /// The object `best --format json` prints for the board `text`: its q-values (`null` for
    /// an invalid move or a layout without values), value and best move.
    pub fn json(&self, text: &str) -> serde_json::Value {
        serde_json::json!({
            "board": text, "L": self.q[0], "R": self.q[1], "U": self.q[2], "D": self.q[3],
            "value": self.value, "best": self.best.map(|d| d.letter().to_string()),
        })
    }
}

/// The error of a board holding a tile above its cell's cap under `variant`'s restriction.
pub fn outside_caps(game: &Game, variant: &Variant, code: u64, text: &str) -> QueryError {
    let l = variant.limits.expect("a restricted variant");
    let cell = (0..game.cells())
        .find(|&i| board::cell(code, i) > board::cell(l.caps, i))
        .unwrap_or(0);
    let cols = game.shape().cols();
    QueryError::OutsideCaps {
        text: text.to_string(),
        what: format!(
            "{} {}: the tile {} in row {}, column {} is above that cell's cap {}",
            game.shape(),
            variant.name(),
            1u32 << board::cell(code, cell),
            cell / cols + 1,
            cell % cols + 1,
            1u32 << board::cell(l.caps, cell)
        ),
    }
}

/// Evaluates `code` under `variant`. `index(id)` must be the index of the board's age for
/// this game and variant that holds board `id` (the age's one index, or in a solve of several
/// parts the part's; `None` if the solve has no board of that age there).
///
/// For goal variants a board holding the goal tile is terminal with value 1 and no move,
/// whether or not play could continue from it.
pub fn evaluate<'a, B: AsRef<[u8]> + 'a>(
    game: &Game,
    variant: &Variant,
    index: &dyn Fn(u64) -> Result<Option<&'a AgeIndex<B>>>,
    code: u64,
    text: &str,
) -> Result<Evaluation> {
    let age = board::age(code);
    let mut ev = Evaluation {
        q: [None; 4],
        value: 0.0,
        best: None,
    };
    let class = variant.forward_class();
    if class.absorbs(code) {
        ev.value = 1.0;
        return Ok(ev);
    }
    if let Some(l) = variant.limits {
        if l.breaks_caps(code) {
            return Err(outside_caps(game, variant, code, text));
        }
    }
    let unreachable = || QueryError::Unreachable {
        text: text.to_string(),
        board: game.shape().to_string(),
        variant: variant.name(),
        age,
    };
    let id = game.canon(code);
    let Some(own) = index(id)? else {
        return Err(unreachable());
    };
    // Without state ids (the compact layout) a board is taken as reachable when every
    // afterstate of it is; one that is not is an unreachable board, not damage.
    let states = own.has_state_ids();
    if states && own.state_rank(id).is_none() {
        return Err(unreachable());
    }
    // The moves the variant allows (under caps, not one into a tile above its cap unless it
    // wins), in the order of `Dir::ALL`.
    let moves = class.moves(&game.rules, code);
    for (i, d) in Dir::ALL.iter().enumerate() {
        let Some((after, reward)) = moves[i] else {
            continue;
        };
        let after = game.canon(after);
        let Some(index) = index(after)? else {
            return Err(unreachable());
        };
        let rank = index.afterstate_rank(after);
        if rank.is_none() && !states {
            return Err(unreachable());
        }
        let rank = rank.ok_or_else(|| QueryError::Index {
            path: format!("index of age {age}").into(),
            source: crate::index::IndexError::Corrupted {
                what: format!("lacks an afterstate of the reachable board '{text}'"),
            },
        })?;
        // The solver's q-value: reward plus afterstate value, or γ times it (discounted goal).
        let q = variant.q(reward, index.afterstate_value(rank));
        ev.q[i] = Some(q);
        if ev.best.is_none() || q > ev.value {
            ev.value = q;
            ev.best = Some(*d);
        }
    }
    Ok(ev)
}
