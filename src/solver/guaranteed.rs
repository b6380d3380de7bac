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
use super::huge;
use super::layer::prefetch;
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
/// values); up to this many indices the memory is a dense array of nibbles (half a byte a
/// board), above it a table of slots.
const DENSE_LIMIT: u64 = 1 << 32;

/// Slots of the table that replaces the dense array above [`DENSE_LIMIT`] (8 bytes each).
const SLOTS: usize = 1 << 28;

enum Memory {
    Dense {
        strides: [u64; 16],
        nibbles: Vec<u8>,
    },
    /// Boards of at most 15 cells: a slot holds a board's code and, in its top nibble, the
    /// board's bits; two slots a bucket. A board whose slot another takes is valued again when
    /// met (its value depends on it alone), so losing one costs time, never the answer.
    Slots(Vec<u64>),
    Sparse(HashMap<u64, u8>),
}

const CODE_BITS: u64 = (1 << 60) - 1;

impl Memory {
    #[inline]
    fn bucket(slots: &[u64], code: u64) -> usize {
        // Fibonacci hashing onto an even slot.
        let h = code.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        (h as usize & (slots.len() - 1)) & !1
    }

    #[inline]
    fn get(&self, code: u64) -> u8 {
        match self {
            Memory::Dense { strides, nibbles } => {
                let i = dense_index(strides, code);
                (nibbles[(i / 2) as usize] >> (4 * (i % 2))) & 0xF
            }
            Memory::Slots(slots) => {
                let b = Self::bucket(slots, code);
                for s in [slots[b], slots[b + 1]] {
                    if s != 0 && s & CODE_BITS == code {
                        return (s >> 60) as u8;
                    }
                }
                0
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
            Memory::Slots(slots) => {
                let b = Self::bucket(slots, code);
                let mut at = None;
                for (k, s) in slots.iter_mut().enumerate().skip(b).take(2) {
                    if *s != 0 && *s & CODE_BITS == code {
                        *s |= u64::from(bits) << 60;
                        return;
                    }
                    if *s == 0 && at.is_none() {
                        at = Some(k);
                    }
                }
                // Both taken: the board of the larger age goes (a younger one is nearer the
                // start, so its value cost more to find).
                let k = at.unwrap_or_else(|| {
                    if board::age(slots[b] & CODE_BITS) >= board::age(slots[b + 1] & CODE_BITS) {
                        b
                    } else {
                        b + 1
                    }
                });
                slots[k] = code | (u64::from(bits) << 60);
            }
            Memory::Sparse(m) => *m.entry(code).or_insert(0) |= bits,
        }
    }

    /// Asks for `code`'s line of memory ahead of its look-up (the look-ups of one board's
    /// successors then wait for memory together, not one after another).
    #[inline]
    fn prefetch(&self, code: u64) {
        match self {
            Memory::Dense { strides, nibbles } => {
                prefetch(&nibbles[(dense_index(strides, code) / 2) as usize]);
            }
            Memory::Slots(slots) => prefetch(&slots[Self::bucket(slots, code)]),
            Memory::Sparse(_) => {}
        }
    }

    fn bytes(&self) -> u64 {
        match self {
            Memory::Dense { nibbles, .. } => nibbles.len() as u64,
            Memory::Slots(slots) => slots.len() as u64 * 8,
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

/// The flips of a rectangle (left-right mirror, up-down mirror, half turn) that keep a
/// restriction, applied to whole codes with shifts and masks: a restricted search identifies a
/// board with its images under them. (The transposes of a square board are not used.)
#[derive(Clone, Copy, Debug)]
pub struct Flips {
    rows: usize,
    cols: usize,
    /// Bit `k` set: the `k`-th of identity, left-right, up-down, half turn is kept.
    mask: u8,
}

impl Flips {
    /// The flips of `shape` that map `restriction`, with its caps lowered to half of
    /// `2^goal` (a larger cap bars nothing more), to itself.
    pub fn kept(restriction: &Restriction, goal: u8) -> Flips {
        let shape = restriction.shape();
        let mut limits = restriction.limits();
        let mut caps = 0u64;
        for i in 0..shape.cells() {
            caps |= u64::from(restriction.cap_exp(i).min(goal - 1)) << (4 * i);
        }
        limits.caps = caps;
        let lowered = Restriction::from_limits(shape, limits).expect("same shape");
        let mask = lowered
            .symmetries()
            .into_iter()
            .filter(|&k| k < 4)
            .fold(0u8, |m, k| m | (1 << k));
        Flips {
            rows: shape.rows(),
            cols: shape.cols(),
            mask,
        }
    }

    /// The kept elements as a bit mask (bit 0, the identity, always set).
    pub fn mask(&self) -> u8 {
        self.mask
    }

    /// The code read backwards cell by cell (cell `i` to cell `cells - 1 - i`): the half turn.
    #[inline(always)]
    fn turn(&self, code: u64) -> u64 {
        let x = code.swap_bytes();
        let x = ((x & 0x0F0F_0F0F_0F0F_0F0F) << 4) | ((x >> 4) & 0x0F0F_0F0F_0F0F_0F0F);
        x >> (64 - 4 * self.rows * self.cols)
    }

    /// The rows in reverse order.
    #[inline(always)]
    fn up_down(&self, code: u64) -> u64 {
        if self.rows == 1 {
            return code;
        }
        let w = 4 * self.cols;
        let row = (1u64 << w) - 1;
        let mut out = 0u64;
        for r in 0..self.rows {
            out |= ((code >> (w * r)) & row) << (w * (self.rows - 1 - r));
        }
        out
    }

    /// The images under identity, left-right, up-down and half turn (in that order).
    pub fn images(&self, code: u64) -> [u64; 4] {
        let ud = self.up_down(code);
        [code, self.turn(ud), ud, self.turn(code)]
    }

    /// The smallest image under the kept flips.
    #[inline]
    pub fn canon(&self, code: u64) -> u64 {
        match self.mask {
            0b0001 => code,
            0b0011 => code.min(self.turn(self.up_down(code))),
            0b0101 => code.min(self.up_down(code)),
            0b1001 => code.min(self.turn(code)),
            _ => {
                let ud = self.up_down(code);
                let mut m = code;
                for (k, c) in [(1, self.turn(ud)), (2, ud), (3, self.turn(code))] {
                    if self.mask & (1 << k) != 0 {
                        m = m.min(c);
                    }
                }
                m
            }
        }
    }
}

/// Guaranteed reachability of a goal tile under a restriction, from the empty board with the
/// spawner to move (Slizkov's start): the spawner picks the cell and the tile (each tile of
/// positive probability under `p4`).
///
/// A board is valued once and remembered under its smallest image by the [`Flips`] that keep
/// the restriction. Before searching below a board, its successors are looked up: a player's
/// move known to win, or a spawn known to refute, settles it at once. The player's moves are
/// then tried those leaving the most empty cells first.
pub struct Restricted<'a> {
    rules: &'a Rules,
    restriction: &'a Restriction,
    goal: u8,
    cells: usize,
    spawns: Vec<u8>,
    flips: Flips,
    memory: Memory,
    states: u64,
    afterstates: u64,
}

/// What one restricted solve found and what it cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestrictedAnswer {
    pub winnable: bool,
    /// Boards valued with the player to move (one a set of symmetric boards; a board valued
    /// again after losing its slot in the memory counts again).
    pub states: u64,
    /// Boards valued with the spawner to move (the empty start among them).
    pub afterstates: u64,
    /// Bytes of the memory of valued boards.
    pub memory_bytes: u64,
    /// The flips the search identified boards by ([`Flips::mask`]).
    pub flips: u8,
}

impl<'a> Restricted<'a> {
    /// A solver for goal tile `2^goal` (at least 4); `p4` decides which tiles the spawner may
    /// put down.
    pub fn new(rules: &'a Rules, restriction: &'a Restriction, goal: u8, p4: f64) -> Self {
        Self::with_flips(rules, restriction, goal, p4, true)
    }

    /// As [`Restricted::new`]; without `symmetry`, every board is its own (the search before
    /// boards were identified, which the tests check the identified one against).
    pub fn with_flips(
        rules: &'a Rules,
        restriction: &'a Restriction,
        goal: u8,
        p4: f64,
        symmetry: bool,
    ) -> Self {
        assert!(goal >= 2, "the goal is a tile of at least 4");
        let class = Variant::new(Kind::Guaranteed(goal), p4).forward_class();
        let spawns = [(1u8, class.spawn2), (2u8, class.spawn4)]
            .into_iter()
            .filter_map(|(e, ok)| ok.then_some(e))
            .collect();
        let cells = rules.shape().cells();
        // A tile of the goal wins at once, so no cell holds more than half of it.
        let mut strides = [0u64; 16];
        let mut size = 1u64;
        for (i, s) in strides.iter_mut().enumerate().take(cells) {
            *s = size;
            let values = u64::from(restriction.cap_exp(i).min(goal - 1)) + 1;
            size = size.saturating_mul(values);
        }
        let memory = if size <= DENSE_LIMIT {
            Memory::Dense {
                strides,
                nibbles: huge::filled(size.div_ceil(2) as usize, 0u8),
            }
        } else if cells < 16 {
            Memory::Slots(huge::filled(SLOTS, 0u64))
        } else {
            Memory::Sparse(HashMap::new())
        };
        let mut flips = Flips::kept(restriction, goal);
        if !symmetry {
            flips.mask = 1;
        }
        Restricted {
            rules,
            restriction,
            goal,
            cells,
            spawns,
            flips,
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
            flips: self.flips.mask,
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
        let canon = self.flips.canon(code);
        let known = self.memory.get(canon);
        if known & STATE_KNOWN != 0 {
            return known & STATE_WON != 0;
        }
        self.value_state(canon)
    }

    /// Values a state not yet valued (given as its smallest image).
    fn value_state(&mut self, code: u64) -> bool {
        // The allowed moves' results (smallest images).
        let mut next = [(0u32, 0u64); 4];
        let mut n = 0;
        for (after, _) in self.rules.moves(code).into_iter().flatten() {
            if self.wins_at_once(after) {
                return self.record_state(code, true);
            }
            if self.restriction.breaks_caps(after) {
                continue; // barred
            }
            let after = self.flips.canon(after);
            self.memory.prefetch(after);
            next[n] = (board::count_empty(after, self.cells), after);
            n += 1;
        }
        // A move known to win settles it; one known to lose is not tried.
        let mut open = 0;
        for k in 0..n {
            let known = self.memory.get(next[k].1);
            if known & AFTER_KNOWN != 0 {
                if known & AFTER_WON != 0 {
                    return self.record_state(code, true);
                }
                continue;
            }
            next[open] = next[k];
            open += 1;
        }
        let next = &mut next[..open];
        next.sort_unstable_by_key(|a| std::cmp::Reverse(a.0));
        for &(_, after) in next.iter() {
            // Valued meanwhile, below an earlier move?
            let known = self.memory.get(after);
            let wins = if known & AFTER_KNOWN != 0 {
                known & AFTER_WON != 0
            } else {
                self.value_after(after)
            };
            if wins {
                return self.record_state(code, true);
            }
        }
        self.record_state(code, false)
    }

    fn record_state(&mut self, code: u64, won: bool) -> bool {
        self.states += 1;
        self.memory
            .set(code, STATE_KNOWN | if won { STATE_WON } else { 0 });
        won
    }

    fn record_after(&mut self, code: u64, won: bool) -> bool {
        self.afterstates += 1;
        self.memory
            .set(code, AFTER_KNOWN | if won { AFTER_WON } else { 0 });
        won
    }

    /// Whether the player forces a win after the spawner's reply to `code`.
    pub fn after_wins(&mut self, code: u64) -> bool {
        if self.restriction.met(code) {
            return true;
        }
        let canon = self.flips.canon(code);
        let known = self.memory.get(canon);
        if known & AFTER_KNOWN != 0 {
            return known & AFTER_WON != 0;
        }
        self.value_after(canon)
    }

    /// Values an afterstate (given as its smallest image) whose value may not be known yet.
    fn value_after(&mut self, code: u64) -> bool {
        if self.restriction.met(code) {
            return true;
        }
        // The spawns' results (smallest images) not won at once.
        let mut children = [0u64; 32];
        let mut n = 0;
        for i in self.rules.empty_cells(code) {
            for k in 0..self.spawns.len() {
                let child = board::place(code, i, self.spawns[k]);
                if self.wins_at_once(child) {
                    continue;
                }
                let child = self.flips.canon(child);
                self.memory.prefetch(child);
                children[n] = child;
                n += 1;
            }
        }
        // A spawn known to refute settles it; one known to be won is not searched.
        let mut open = 0;
        for k in 0..n {
            let known = self.memory.get(children[k]);
            if known & STATE_KNOWN != 0 {
                if known & STATE_WON == 0 {
                    return self.record_after(code, false);
                }
                continue;
            }
            children[open] = children[k];
            open += 1;
        }
        for &child in &children[..open] {
            // Valued meanwhile, below an earlier sibling?
            let known = self.memory.get(child);
            let wins = if known & STATE_KNOWN != 0 {
                known & STATE_WON != 0
            } else {
                self.value_state(child)
            };
            if !wins {
                return self.record_after(code, false);
            }
        }
        self.record_after(code, true)
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

#[cfg(test)]
mod identified_tests {
    use super::*;
    use crate::rules::{Group, Shape, Symmetry};
    use rand::{Rng, SeedableRng};

    /// The flips by shifts and masks are the flips group's permutations, element by element.
    #[test]
    fn flips_are_the_groups_permutations() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(64);
        for (r, c) in [
            (1, 6),
            (2, 5),
            (2, 6),
            (3, 3),
            (3, 4),
            (4, 3),
            (2, 8),
            (1, 16),
        ] {
            let shape = Shape::new(r, c).unwrap();
            let sym = Symmetry::new(shape, Group::Flips);
            let caps = vec!["32768"; shape.cells()].join(" ");
            let res = Restriction::parse(shape, &caps, None).unwrap();
            let flips = Flips::kept(&res, 15);
            assert_eq!(flips.mask(), 0b1111, "{shape}");
            for _ in 0..2000 {
                let code =
                    (0..shape.cells()).fold(0u64, |x, i| x | (rng.gen_range(0..16u64) << (4 * i)));
                assert_eq!(flips.images(code).to_vec(), sym.images(code), "{shape}");
                assert_eq!(flips.canon(code), sym.canon(code), "{shape}");
            }
        }
    }

    /// Only the flips that keep the caps (lowered to half the goal) and the requirement.
    #[test]
    fn the_kept_flips_map_the_restriction_to_itself() {
        let shape = Shape::new(2, 6).unwrap();
        let kept = |caps: &str, need: Option<&str>, goal: u8| {
            Flips::kept(&Restriction::parse(shape, caps, need).unwrap(), goal).mask()
        };
        let sym = "16 32 32 32 32 16 / 16 32 32 32 32 16";
        assert_eq!(kept(sym, None, 6), 0b1111);
        assert_eq!(
            kept("32 32 32 32 32 16 / 32 32 32 32 32 16", None, 6),
            0b0101
        );
        assert_eq!(
            kept("32 32 32 32 32 16 / 16 32 32 32 32 32", None, 6),
            0b1001
        );
        assert_eq!(
            kept("32 32 32 32 32 32 / 32 32 32 32 32 16", None, 6),
            0b0001
        );
        // Above half the goal a cap bars nothing: 64 and 32 are the same cap for goal 64.
        assert_eq!(
            kept("64 32 32 32 32 32 / 32 32 32 32 32 32", None, 6),
            0b1111
        );
        assert_eq!(
            kept("64 32 32 32 32 32 / 32 32 32 32 32 32", None, 7),
            0b0001
        );
        let need = Some(". 32 . . . . / . . . . . .");
        assert_eq!(kept(sym, need, 7), 0b0001);
    }

    /// The search with boards identified by the kept flips, and with a memory that loses
    /// boards, answers as the search that identifies none and forgets none (the start; and
    /// random boards, identified against plain).
    #[test]
    fn identified_and_forgetful_searches_answer_as_the_plain_one() {
        let cases: [(usize, usize, &str, Option<&str>, u8); 7] = [
            (2, 4, "16 16 16 8 / 16 16 16 8", None, 5),
            (2, 4, "32 32 32 32 / 32 32 32 32", None, 6),
            (2, 4, "16 16 16 16 / 16 16 16 16", None, 5),
            (3, 3, "16 8 16 / 16 16 16 / 16 8 16", None, 5),
            (3, 3, "16 16 16 / 16 16 16 / 8 8 8", None, 5),
            (2, 5, "16 16 16 16 8 / 16 16 16 8 8", None, 5),
            (2, 4, "8 8 8 8 / 8 8 8 8", Some(". . . . / . 8 8 ."), 5),
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut answers = Vec::new();
        for (r, c, caps, need, goal) in cases {
            let shape = Shape::new(r, c).unwrap();
            let rules = Rules::new(shape);
            let res = Restriction::parse(shape, caps, need).unwrap();
            let plain = Restricted::with_flips(&rules, &res, goal, 0.1, false).solve();
            let ided = Restricted::new(&rules, &res, goal, 0.1).solve();
            assert_eq!(ided.winnable, plain.winnable, "{shape} {caps}");
            // A table of fewer slots than the boards valued forgets some (not too many: a
            // search that forgets every board is a tree search, exponential), on the 2x4
            // cases (larger ones take minutes so).
            if r * c == 8 {
                let boards = ided.states + ided.afterstates;
                let mut small = Restricted::new(&rules, &res, goal, 0.1);
                small.memory = Memory::Slots(vec![0u64; (boards as usize / 2).next_power_of_two()]);
                let forgetful = small.solve();
                assert_eq!(forgetful.winnable, plain.winnable, "{shape} {caps}");
            }
            answers.push(plain.winnable);
            // Random boards within the caps, player and spawner to move.
            let mut a = Restricted::with_flips(&rules, &res, goal, 0.1, false);
            let mut b = Restricted::new(&rules, &res, goal, 0.1);
            for _ in 0..300 {
                let code = (0..shape.cells()).fold(0u64, |x, i| {
                    let e = rng.gen_range(0..=res.cap_exp(i).min(goal - 1));
                    let e = if rng.gen_bool(0.3) { 0 } else { e };
                    x | (u64::from(e) << (4 * i))
                });
                assert_eq!(a.state_wins(code), b.state_wins(code), "{shape} {code:x}");
                assert_eq!(a.after_wins(code), b.after_wins(code), "{shape} {code:x}");
            }
        }
        // Both answers among the cases (a check that can fail both ways).
        assert!(
            answers.contains(&true) && answers.contains(&false),
            "{answers:?}"
        );
    }
}
