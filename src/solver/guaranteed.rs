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
//!
//! Under a [`Restriction`] (caps on every cell, perhaps a required configuration) the question
//! is Slizkov's appendix A.1: can the player force the goal from the empty board? [`Restricted`]
//! answers it by a depth-first search from the start that stops at the first winning move and
//! at the spawner's first refutation, with every valued board remembered (the game is acyclic:
//! a spawn raises the age).

use std::collections::{BTreeMap, HashMap};

use super::backward::{AgeOutput, Backward, Layers, NoFiles};
use super::forward::{self, absorbed, AgeLayer, Start};
use super::Result;
use crate::rules::board;
use crate::rules::{Game, Kind, Restriction, Rules, Variant};

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

/// A board's memory in [`Restricted`]: two bits a turn, "valued" and "won".
const STATE_KNOWN: u8 = 1;
const STATE_WON: u8 = 2;
const AFTER_KNOWN: u8 = 4;
const AFTER_WON: u8 = 8;

/// Boards with every tile within its cap fit a mixed-radix index (cell `i` has `cap_i + 1`
/// values); below this many indices the memory is a dense array of nibbles (half a byte a
/// board), above it a hash map of the boards valued.
const DENSE_LIMIT: u64 = 1 << 31;

enum Memory {
    Dense {
        strides: [u64; 16],
        nibbles: Vec<u8>,
    },
    Sparse(HashMap<u64, u8>),
}

impl Memory {
    #[inline]
    fn get(&self, code: u64) -> u8 {
        match self {
            Memory::Dense { strides, nibbles } => {
                let i = dense_index(strides, code);
                (nibbles[(i / 2) as usize] >> (4 * (i % 2))) & 0xF
            }
            Memory::Sparse(m) => m.get(&code).copied().unwrap_or(0),
        }
    }
    #[inline]
    fn set(&mut self, code: u64, bits: u8) {
        match self {
            Memory::Dense { strides, nibbles } => {
                let i = dense_index(strides, code);
                nibbles[(i / 2) as usize] |= bits << (4 * (i % 2));
            }
            Memory::Sparse(m) => *m.entry(code).or_insert(0) |= bits,
        }
    }
    fn bytes(&self) -> u64 {
        match self {
            Memory::Dense { nibbles, .. } => nibbles.len() as u64,
            Memory::Sparse(m) => m.capacity() as u64 * 9,
        }
    }
}

#[inline(always)]
fn dense_index(strides: &[u64; 16], code: u64) -> u64 {
    let mut c = code;
    let mut i = 0u64;
    let mut k = 0;
    while c != 0 {
        i += (c & 0xF) * strides[k];
        c >>= 4;
        k += 1;
    }
    i
}

/// Guaranteed reachability of a goal tile under a restriction, from the empty board with the
/// spawner to move (Slizkov's start): the spawner picks the cell and the tile (each tile of
/// positive probability under `p4`).
pub struct Restricted<'a> {
    rules: &'a Rules,
    restriction: &'a Restriction,
    goal: u8,
    spawns: Vec<u8>,
    memory: Memory,
    states: u64,
    afterstates: u64,
}

/// What one restricted solve found and what it cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestrictedAnswer {
    pub winnable: bool,
    /// Boards valued with the player to move.
    pub states: u64,
    /// Boards valued with the spawner to move (the empty start among them).
    pub afterstates: u64,
    /// Bytes of the memory of valued boards.
    pub memory_bytes: u64,
}

impl<'a> Restricted<'a> {
    /// A solver for goal tile `2^goal` (at least 4); `p4` decides which tiles the spawner may
    /// put down.
    pub fn new(rules: &'a Rules, restriction: &'a Restriction, goal: u8, p4: f64) -> Self {
        assert!(goal >= 2, "the goal is a tile of at least 4");
        let class = Variant::new(Kind::Guaranteed(goal), p4).forward_class();
        let spawns = [(1u8, class.spawn2), (2u8, class.spawn4)]
            .into_iter()
            .filter_map(|(e, ok)| ok.then_some(e))
            .collect();
        // A tile of the goal wins at once, so no cell holds more than half of it.
        let mut strides = [0u64; 16];
        let mut size = 1u64;
        for (i, s) in strides.iter_mut().enumerate().take(rules.shape().cells()) {
            *s = size;
            let values = u64::from(restriction.cap_exp(i).min(goal - 1)) + 1;
            size = size.saturating_mul(values);
        }
        let memory = if size <= DENSE_LIMIT {
            Memory::Dense {
                strides,
                nibbles: vec![0u8; size.div_ceil(2) as usize],
            }
        } else {
            Memory::Sparse(HashMap::new())
        };
        Restricted {
            rules,
            restriction,
            goal,
            spawns,
            memory,
            states: 0,
            afterstates: 0,
        }
    }

    /// Solves from the empty board with the spawner to move.
    pub fn solve(mut self) -> RestrictedAnswer {
        let winnable = self.after_wins(0);
        RestrictedAnswer {
            winnable,
            states: self.states,
            afterstates: self.afterstates,
            memory_bytes: self.memory.bytes(),
        }
    }

    /// True when a move's result wins at once: it holds the goal tile or the requirement.
    #[inline]
    fn wins_at_once(&self, code: u64) -> bool {
        board::max_exp(code) >= self.goal || self.restriction.met(code)
    }

    /// Whether the player, to move on `code` (every tile within its cap), forces a win.
    pub fn state_wins(&mut self, code: u64) -> bool {
        // A spawn may complete the requirement, or put down the goal itself (goal 4).
        if self.wins_at_once(code) {
            return true;
        }
        let known = self.memory.get(code);
        if known & STATE_KNOWN != 0 {
            return known & STATE_WON != 0;
        }
        let mut won = false;
        for (after, _) in self.rules.moves(code).into_iter().flatten() {
            if self.wins_at_once(after) {
                won = true;
                break;
            }
            if self.restriction.breaks_caps(after) {
                continue; // barred
            }
            if self.after_wins(after) {
                won = true;
                break;
            }
        }
        self.states += 1;
        self.memory
            .set(code, STATE_KNOWN | if won { STATE_WON } else { 0 });
        won
    }

    /// Whether the player forces a win after the spawner's reply to `code`.
    pub fn after_wins(&mut self, code: u64) -> bool {
        if self.restriction.met(code) {
            return true;
        }
        let known = self.memory.get(code);
        if known & AFTER_KNOWN != 0 {
            return known & AFTER_WON != 0;
        }
        let mut won = true;
        'spawns: for i in self.rules.empty_cells(code) {
            for k in 0..self.spawns.len() {
                let e = self.spawns[k];
                if !self.state_wins(board::place(code, i, e)) {
                    won = false;
                    break 'spawns;
                }
            }
        }
        self.afterstates += 1;
        self.memory
            .set(code, AFTER_KNOWN | if won { AFTER_WON } else { 0 });
        won
    }
}

/// Solves a restricted guaranteed question on its own stack (deep searches recurse once a
/// spawn).
pub fn restricted(rules: &Rules, restriction: &Restriction, goal: u8, p4: f64) -> RestrictedAnswer {
    // A frame pair a spawn, at most one spawn per 2 of the largest age.
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn_scoped(s, || Restricted::new(rules, restriction, goal, p4).solve())
            .expect("a thread starts")
            .join()
            .expect("the search does not panic")
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

    /// Caps of half the goal bar nothing: the restricted answer is the unrestricted one.
    #[test]
    fn caps_that_bar_nothing_agree_with_the_unrestricted_solve() {
        for (r, c) in [(2, 2), (2, 3), (1, 4)] {
            let shape = Shape::new(r, c).unwrap();
            let forced = g(r, c).from_empty;
            let rules = Rules::new(shape);
            for goal in 2u8..=6 {
                let half = 1u32 << (goal - 1);
                let caps = vec![half.max(4).to_string(); shape.cells()].join(" ");
                let res = Restriction::parse(shape, &caps, None).unwrap();
                let a = restricted(&rules, &res, goal, 0.1);
                assert_eq!(
                    a.winnable,
                    (1u32 << goal) <= forced,
                    "{shape} goal {}",
                    1 << goal
                );
                assert!(a.states > 0 && a.afterstates > 0);
            }
        }
    }

    /// A cap that bites: on 2x2 a cap of 4 in every cell leaves no 8 to merge into 16.
    #[test]
    fn a_cap_bars_the_moves_that_break_it() {
        let shape = Shape::new(2, 2).unwrap();
        let rules = Rules::new(shape);
        let open = Restriction::parse(shape, "8 8 / 8 8", None).unwrap();
        let tight = Restriction::parse(shape, "4 4 / 4 4", None).unwrap();
        assert!(restricted(&rules, &open, 3, 0.1).winnable); // 8 is forced on 2x2
        assert!(restricted(&rules, &tight, 3, 0.1).winnable); // making 8 wins, the cap aside
        assert!(!restricted(&rules, &tight, 4, 0.1).winnable);
        // A 2 required in a corner: the spawner that may put down 4s puts down nothing else,
        // and the one that puts down 2s alone cannot keep them out of the corner.
        let need = Restriction::parse(shape, "4 4 / 4 4", Some("2 . / . .")).unwrap();
        assert!(!restricted(&rules, &need, 4, 0.1).winnable);
        assert!(restricted(&rules, &need, 4, 0.0).winnable);
    }
}
