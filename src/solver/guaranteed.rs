//! Guaranteed reachability: the largest tile a player can force whatever the spawns.
//!
//! The spawner picks both the cell and the value of every new tile (Slizkov, "Computational
//! bounds for the 2048 game", §2). For each goal `T = 4, 8, 16, …` the `guaranteed-T` variant is
//! solved in memory (boards holding `T` are absorbing, so these solves are small), and
//! - `from_empty`: the spawner moves first on the empty board, then the player, and so on;
//! - `two_tile_min`: the smallest, over all two-tile starts with the player to move, of the
//!   largest tile forced from that start.
//!
//! Forcing a larger tile implies forcing every smaller one, so each start's answer is the last
//! `T` for which its value is 1.

use std::collections::{BTreeMap, HashMap};

use super::backward::{AgeOutput, Backward, Layers, NoFiles};
use super::forward::{self, absorbed, AgeLayer, Start};
use super::Result;
use crate::rules::board;
use crate::rules::{Game, Kind, Variant};

/// The answer for one board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guaranteed {
    /// Largest tile forced from the empty board with the spawner to move.
    pub from_empty: u32,
    /// Smallest, over the two-tile starts, of the largest tile forced from the start (`None`
    /// on a one-cell board, which has no two-tile start).
    pub two_tile_min: Option<u32>,
}

/// Values of the states of ages ≤ 8 (the two-tile starts) for one variant, solved in memory.
pub fn start_values(game: &Game, variant: &Variant) -> Result<HashMap<u64, f64>> {
    let class = variant.forward_class();
    let mut layers: BTreeMap<u32, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    let max_age = forward::run(game, &class, Start::Fresh, |l: AgeLayer| {
        layers.insert(l.age, (l.states, l.afterstates));
        Ok(())
    })?;
    let min_age = layers.keys().next().copied().unwrap_or(4);
    let mut out = HashMap::new();
    Backward::new(game, std::slice::from_ref(variant))?.run(
        max_age,
        min_age,
        None,
        |_, _, _, _| Ok(NoFiles),
        |age| {
            let (s, a) = layers.remove(&age).unwrap_or_default();
            Ok(Layers::Whole(s, a))
        },
        |o: AgeOutput, ()| {
            if o.age <= 8 {
                // One variant: record i is state i's.
                out.extend(
                    o.states
                        .iter()
                        .enumerate()
                        .map(|(i, &s)| (s, o.state_value(i))),
                );
            }
            Ok(())
        },
    )?;
    Ok(out)
}

/// Value of a one-tile state (player to move) given the values of the two-tile states.
fn one_tile_value(game: &Game, variant: &Variant, s: u64, starts: &HashMap<u64, f64>) -> f64 {
    if absorbed(&variant.forward_class(), s) {
        return 1.0;
    }
    let mut best = 0.0f64;
    for (after, _) in game.rules.moves(s).into_iter().flatten() {
        if absorbed(&variant.forward_class(), after) {
            return 1.0;
        }
        best = best.max(spawner_min(game, variant, after, starts));
    }
    best
}

/// The spawner's best reply: the smallest value over every cell and tile of positive probability.
fn spawner_min(game: &Game, variant: &Variant, after: u64, starts: &HashMap<u64, f64>) -> f64 {
    let class = variant.forward_class();
    let mut worst = f64::INFINITY;
    for i in game.rules.empty_cells(after) {
        for (e, ok) in [(1u8, class.spawn2), (2u8, class.spawn4)] {
            if ok {
                let v = starts
                    .get(&game.canon(board::place(after, i, e)))
                    .copied()
                    .unwrap_or(0.0);
                worst = worst.min(v);
            }
        }
    }
    if worst.is_finite() {
        worst
    } else {
        0.0
    }
}

/// The largest forced tiles of a board, for spawn probability `p4` (which decides which tile
/// values the spawner may use).
pub fn guaranteed(game: &Game, p4: f64) -> Result<Guaranteed> {
    let cells = game.cells();
    let class = Variant::new(Kind::Guaranteed(2), p4).forward_class();
    // Every tile the spawner may put down is forced at once.
    let smallest_spawn = if class.spawn2 { 2 } else { 4 };
    let mut from_empty = smallest_spawn;
    let two_tile_starts: Vec<u64> = game.starts(p4).into_iter().map(|(b, _)| b).collect();
    let mut per_start: Vec<u32> = two_tile_starts
        .iter()
        .map(|&b| 1u32 << board::max_exp(b))
        .collect();
    // No tile above 2^(cells+1) fits on a board of `cells` cells.
    for e in 2..=(cells as u8 + 1).min(15) {
        let t = 1u32 << e;
        let v = Variant::new(Kind::Guaranteed(e), p4);
        let starts = start_values(game, &v)?;
        let mut any = false;
        for (b, best) in two_tile_starts.iter().zip(per_start.iter_mut()) {
            if starts.get(&game.canon(*b)).copied().unwrap_or(0.0) >= 1.0 {
                *best = (*best).max(t);
                any = true;
            }
        }
        let empty_forced = (0..cells).all(|i| {
            [(1u8, class.spawn2), (2u8, class.spawn4)]
                .iter()
                .filter(|(_, ok)| *ok)
                .all(|&(e1, _)| one_tile_value(game, &v, board::place(0, i, e1), &starts) >= 1.0)
        });
        if empty_forced {
            from_empty = from_empty.max(t);
        }
        if !any && !empty_forced {
            break; // nothing forces T, so nothing forces a larger tile
        }
    }
    Ok(Guaranteed {
        from_empty,
        two_tile_min: per_start.into_iter().min(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Group;
    use crate::rules::Shape;

    fn g(r: usize, c: usize) -> Guaranteed {
        guaranteed(&Game::new(Shape::new(r, c).unwrap(), Group::Full), 0.1).unwrap()
    }

    /// Slizkov's table of the maximum tiles guaranteed achievable (from the empty field).
    #[test]
    fn reproduces_the_published_table() {
        assert_eq!(g(1, 1).from_empty, 2);
        assert_eq!(g(1, 2).from_empty, 4);
        assert_eq!(g(1, 3).from_empty, 4);
        assert_eq!(g(2, 2).from_empty, 8);
        assert_eq!(g(2, 3).from_empty, 16);
        assert_eq!(g(3, 2).from_empty, 16);
        assert_eq!(g(2, 4).from_empty, 32);
        assert_eq!(g(2, 3).two_tile_min, Some(16));
        assert_eq!(g(1, 1).two_tile_min, None);
    }
}
