//! Independent brute-force oracle for 2048 on small boards.
//!
//! Written from the rules alone; it shares no code with the solver. Boards are raw
//! (unreduced) `u64`s holding one 4-bit exponent per cell (0 = empty, e = tile 2^e), cell
//! (r, c) at nibble `r * cols + c`. Reachable states are enumerated by a forward search from
//! the initial states, values by a memoised recursion over `HashMap`s, and symmetry orbits by
//! this file's own permutation code.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

pub type Board = u64;

/// A fast hasher for `u64` keys (splitmix64 finaliser); the default SipHash is several times
/// slower on the 2x4 board's tens of millions of boards.
#[derive(Default)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = z ^ (z >> 31);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<MixHasher>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub rows: usize,
    pub cols: usize,
}

impl Shape {
    pub const fn new(rows: usize, cols: usize) -> Shape {
        Shape { rows, cols }
    }
    pub fn cells(&self) -> usize {
        self.rows * self.cols
    }
    pub fn name(&self) -> String {
        format!("{}x{}", self.rows, self.cols)
    }
    pub fn idx(&self, r: usize, c: usize) -> usize {
        r * self.cols + c
    }
}

#[inline]
pub fn cell(b: Board, i: usize) -> u8 {
    ((b >> (4 * i)) & 15) as u8
}

#[inline]
pub fn with_cell(b: Board, i: usize, e: u8) -> Board {
    assert!(e < 16, "tile exponent {e} does not fit a nibble");
    (b & !(15u64 << (4 * i))) | ((e as u64) << (4 * i))
}

/// Sum of the tiles.
pub fn age(shape: Shape, b: Board) -> u64 {
    // Two cells (one byte) at a time; cells past the board are zero.
    const BYTE_AGE: [u64; 256] = {
        let mut t = [0u64; 256];
        let mut i = 0;
        while i < 256 {
            let (lo, hi) = (i & 15, i >> 4);
            t[i] = (if lo == 0 { 0 } else { 1 << lo }) + (if hi == 0 { 0 } else { 1 << hi });
            i += 1;
        }
        t
    };
    let _ = shape;
    b.to_le_bytes().iter().map(|&x| BYTE_AGE[x as usize]).sum()
}

pub fn max_exp(shape: Shape, b: Board) -> u8 {
    (0..shape.cells()).map(|i| cell(b, i)).max().unwrap_or(0)
}

pub fn empties(shape: Shape, b: Board) -> Vec<usize> {
    (0..shape.cells()).filter(|&i| cell(b, i) == 0).collect()
}

/// Parses `2 0 4/0 8 0` (`0` or `.` for empty).
pub fn parse_board(shape: Shape, text: &str) -> Board {
    let rows: Vec<&str> = text.trim().split('/').collect();
    assert_eq!(rows.len(), shape.rows, "rows in {text:?}");
    let mut b = 0;
    for (r, row) in rows.iter().enumerate() {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells.len(), shape.cols, "cells in row {r} of {text:?}");
        for (c, t) in cells.iter().enumerate() {
            let v: u64 = if *t == "." {
                0
            } else {
                t.parse().expect("tile")
            };
            let e = if v == 0 {
                0
            } else {
                assert!(v.is_power_of_two() && v >= 2, "tile {v}");
                v.trailing_zeros() as u8
            };
            b = with_cell(b, shape.idx(r, c), e);
        }
    }
    b
}

/// Formats a board as the solver's text, with `empty` for empty cells.
pub fn board_text(shape: Shape, b: Board, empty: &str) -> String {
    (0..shape.rows)
        .map(|r| {
            (0..shape.cols)
                .map(|c| match cell(b, shape.idx(r, c)) {
                    0 => empty.to_string(),
                    e => (1u64 << e).to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Move letters in the solver's column order.
pub const MOVES: [char; 4] = ['L', 'R', 'U', 'D'];

/// Slides one line whose first element is on the side the tiles move toward.
/// Returns the new line and the reward (sum of the merged tiles).
pub fn slide_line(line: &[u8]) -> (Vec<u8>, u64) {
    let tiles: Vec<u8> = line.iter().copied().filter(|&e| e != 0).collect();
    let mut out = Vec::with_capacity(line.len());
    let mut reward = 0;
    let mut i = 0;
    while i < tiles.len() {
        if i + 1 < tiles.len() && tiles[i] == tiles[i + 1] {
            out.push(tiles[i] + 1);
            reward += 1u64 << (tiles[i] + 1);
            i += 2;
        } else {
            out.push(tiles[i]);
            i += 1;
        }
    }
    out.resize(line.len(), 0);
    (out, reward)
}

/// The move rule on one board shape.
#[derive(Clone, Debug)]
pub struct Rules {
    pub shape: Shape,
    /// For each move (L, R, U, D), the lines of cell indices, each starting at the side the
    /// tiles move toward.
    lines: [Vec<Vec<usize>>; 4],
    /// For each line length, `slide_line` tabulated over every line content (nibble-packed,
    /// first cell in the low nibble): (new content, reward), reward `u64::MAX` if a tile would
    /// overflow a nibble.
    tables: Vec<Vec<(u32, u64)>>,
}

fn tabulate(len: usize) -> Vec<(u32, u64)> {
    (0..1u32 << (4 * len))
        .map(|key| {
            let line: Vec<u8> = (0..len).map(|k| ((key >> (4 * k)) & 15) as u8).collect();
            let (new, reward) = slide_line(&line);
            if new.iter().any(|&e| e > 15) {
                return (key, u64::MAX);
            }
            let packed = new
                .iter()
                .enumerate()
                .map(|(k, &e)| (e as u32) << (4 * k))
                .sum();
            (packed, reward)
        })
        .collect()
}

impl Rules {
    pub fn new(shape: Shape) -> Rules {
        let (rows, cols) = (shape.rows, shape.cols);
        let left: Vec<Vec<usize>> = (0..rows)
            .map(|r| (0..cols).map(|c| shape.idx(r, c)).collect())
            .collect();
        let right: Vec<Vec<usize>> = (0..rows)
            .map(|r| (0..cols).rev().map(|c| shape.idx(r, c)).collect())
            .collect();
        let up: Vec<Vec<usize>> = (0..cols)
            .map(|c| (0..rows).map(|r| shape.idx(r, c)).collect())
            .collect();
        let down: Vec<Vec<usize>> = (0..cols)
            .map(|c| (0..rows).rev().map(|r| shape.idx(r, c)).collect())
            .collect();
        let mut tables = vec![Vec::new(); rows.max(cols) + 1];
        for len in [rows, cols] {
            tables[len] = tabulate(len);
        }
        Rules {
            shape,
            lines: [left, right, up, down],
            tables,
        }
    }

    /// Applies move `m` (index into `MOVES`); `None` if it changes nothing.
    pub fn apply(&self, b: Board, m: usize) -> Option<(Board, u64)> {
        let mut out = b;
        let mut reward = 0;
        for line in &self.lines[m] {
            let key: u32 = line
                .iter()
                .enumerate()
                .map(|(k, &i)| (cell(b, i) as u32) << (4 * k))
                .sum();
            let (new, r) = self.tables[line.len()][key as usize];
            if new == key {
                continue;
            }
            assert!(r != u64::MAX, "tile overflow");
            reward += r;
            for (k, &i) in line.iter().enumerate() {
                out = with_cell(out, i, ((new >> (4 * k)) & 15) as u8);
            }
        }
        if out == b {
            None
        } else {
            Some((out, reward))
        }
    }

    pub fn apply_letter(&self, b: Board, letter: char) -> Option<(Board, u64)> {
        self.apply(
            b,
            MOVES
                .iter()
                .position(|&m| m == letter)
                .expect("move letter"),
        )
    }

    pub fn is_terminal(&self, b: Board) -> bool {
        (0..4).all(|m| self.apply(b, m).is_none())
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Expectation,
    Optimistic,
    Pessimistic,
    /// Goal tile exponent.
    Goal(u8),
    Guaranteed(u8),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    pub kind: Kind,
    pub p4: f64,
    /// γ: every move multiplies the value by it (goal variants; 1 = no discount).
    pub discount: f64,
}

impl Variant {
    pub fn new(kind: Kind) -> Variant {
        Variant::with_p4(kind, 0.1)
    }
    pub fn with_p4(kind: Kind, p4: f64) -> Variant {
        Variant {
            kind,
            p4,
            discount: 1.0,
        }
    }
    /// A goal `2^t` whose value is E[γ^(moves to make it)].
    pub fn discounted_goal(t: u8, discount: f64, p4: f64) -> Variant {
        Variant {
            kind: Kind::Goal(t),
            p4,
            discount,
        }
    }
    /// The solver's base name, without any `-p4=` suffix (with `-discount=γ` if γ ≠ 1).
    pub fn base_name(&self) -> String {
        let base = match self.kind {
            Kind::Expectation => "expectation".into(),
            Kind::Optimistic => "optimistic".into(),
            Kind::Pessimistic => "pessimistic".into(),
            Kind::Goal(t) => format!("goal-{}", 1u64 << t),
            Kind::Guaranteed(t) => format!("guaranteed-{}", 1u64 << t),
        };
        if self.discount == 1.0 {
            base
        } else {
            format!("{base}-discount={}", self.discount)
        }
    }
    /// The solver's full name (`-p4=x` when p4 is not 0.1).
    pub fn name(&self) -> String {
        if self.p4 == 0.1 {
            self.base_name()
        } else {
            format!("{}-p4={}", self.base_name(), self.p4)
        }
    }
    /// The value of playing a move that earns `reward` into an afterstate worth `after`.
    pub fn q(&self, reward: u64, after: f64) -> f64 {
        match self.kind {
            Kind::Goal(_) => self.discount * after,
            Kind::Guaranteed(_) => after,
            _ => reward as f64 + after,
        }
    }
    pub fn goal(&self) -> Option<u8> {
        match self.kind {
            Kind::Goal(t) | Kind::Guaranteed(t) => Some(t),
            _ => None,
        }
    }
    pub fn p2(&self) -> f64 {
        1.0 - self.p4
    }
    /// Spawnable tiles (exponent, probability) with positive probability.
    pub fn tiles(&self) -> Vec<(u8, f64)> {
        [(1u8, self.p2()), (2u8, self.p4)]
            .into_iter()
            .filter(|&(_, p)| p > 0.0)
            .collect()
    }
}

/// Symmetry groups, by the solver's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    Full,
    Flips,
    None,
}

impl Group {
    pub fn name(&self) -> &'static str {
        match self {
            Group::Full => "full",
            Group::Flips => "flips",
            Group::None => "none",
        }
    }
    pub const ALL: [Group; 3] = [Group::Full, Group::Flips, Group::None];
}

/// The group's elements as permutations: `perm[i]` is where cell `i` goes.
pub fn group_perms(shape: Shape, group: Group) -> Vec<Vec<usize>> {
    let (rr, cc) = (shape.rows, shape.cols);
    type CellMap = Box<dyn Fn(usize, usize) -> (usize, usize)>;
    let mut maps: Vec<CellMap> = vec![Box::new(|r, c| (r, c))];
    if group != Group::None {
        maps.push(Box::new(move |r, c| (r, cc - 1 - c)));
        maps.push(Box::new(move |r, c| (rr - 1 - r, c)));
        maps.push(Box::new(move |r, c| (rr - 1 - r, cc - 1 - c)));
    }
    if group == Group::Full && rr == cc {
        let n = rr;
        maps.push(Box::new(|r, c| (c, r)));
        maps.push(Box::new(move |r, c| (c, n - 1 - r)));
        maps.push(Box::new(move |r, c| (n - 1 - c, r)));
        maps.push(Box::new(move |r, c| (n - 1 - c, n - 1 - r)));
    }
    maps.iter()
        .map(|f| {
            (0..shape.cells())
                .map(|i| {
                    let (r, c) = f(i / cc, i % cc);
                    shape.idx(r, c)
                })
                .collect()
        })
        .collect()
}

pub fn permute(b: Board, perm: &[usize]) -> Board {
    let mut out = 0;
    for (i, &j) in perm.iter().enumerate() {
        out |= (cell(b, i) as u64) << (4 * j);
    }
    out
}

pub fn canonical(b: Board, perms: &[Vec<usize>]) -> Board {
    perms.iter().map(|p| permute(b, p)).min().unwrap()
}

/// Per-age counts: (states, afterstates, terminal states).
pub type AgeCounts = BTreeMap<u64, [u64; 3]>;

/// The reachable raw boards of one shape and variant.
pub struct Reach {
    pub states: Vec<Board>,
    pub afters: Vec<Board>,
    pub terminals: Vec<Board>,
}

impl Reach {
    /// Sorted, for comparisons.
    pub fn sorted(mut self) -> Reach {
        self.states.sort_unstable();
        self.afters.sort_unstable();
        self.terminals.sort_unstable();
        self
    }
}

/// Initial states with their probabilities: two spawns on distinct cells.
pub fn initial_states(shape: Shape, v: &Variant) -> Vec<(Board, f64)> {
    let n = shape.cells();
    let pair = 2.0 / (n * (n - 1)) as f64;
    let mut out = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            for &(ti, pi) in &v.tiles() {
                for &(tj, pj) in &v.tiles() {
                    out.push((with_cell(with_cell(0, i, ti), j, tj), pair * pi * pj));
                }
            }
        }
    }
    out
}

/// The boards with two 2-tiles.
pub fn two_2_tiles(shape: Shape) -> Vec<Board> {
    let n = shape.cells();
    let mut out = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            out.push(with_cell(with_cell(0, i, 1), j, 1));
        }
    }
    out
}

/// A memo of board values keyed by raw board, sharded by age.
pub struct Memo {
    shape: Shape,
    maps: Vec<FastMap<Board, f64>>,
}

impl Memo {
    pub fn new(shape: Shape) -> Memo {
        Memo {
            shape,
            maps: Vec::new(),
        }
    }
    pub fn get(&self, b: &Board) -> Option<&f64> {
        self.maps.get(age(self.shape, *b) as usize / 2)?.get(b)
    }
    pub fn insert(&mut self, b: Board, v: f64) {
        let k = age(self.shape, b) as usize / 2;
        if self.maps.len() <= k {
            self.maps.resize_with(k + 1, FastMap::default);
        }
        self.maps[k].insert(b, v);
    }
    pub fn len(&self) -> usize {
        self.maps.iter().map(|m| m.len()).sum()
    }
    pub fn keys(&self) -> impl Iterator<Item = &Board> + '_ {
        self.maps.iter().flat_map(|m| m.keys())
    }
}

impl std::ops::Index<&Board> for Memo {
    type Output = f64;
    fn index(&self, b: &Board) -> &f64 {
        self.get(b)
            .unwrap_or_else(|| panic!("board {b:#x} not in the memo"))
    }
}

pub struct Oracle {
    pub rules: Rules,
    pub variant: Variant,
    /// Memo of state values, one map per age / 2 (only so that evaluating ages from the
    /// deepest down keeps lookups in small, cache-resident maps; it changes no value).
    pub state_v: Memo,
    pub after_v: Memo,
    tiles: Vec<(u8, f64)>,
}

impl Oracle {
    pub fn new(shape: Shape, variant: Variant) -> Oracle {
        Oracle {
            rules: Rules::new(shape),
            variant,
            state_v: Memo::new(shape),
            after_v: Memo::new(shape),
            tiles: variant.tiles(),
        }
    }

    pub fn shape(&self) -> Shape {
        self.rules.shape
    }

    /// Holds a tile at least the goal (goal variants only): value 1, not expanded.
    pub fn at_goal(&self, b: Board) -> bool {
        match self.variant.goal() {
            Some(t) => max_exp(self.shape(), b) >= t,
            None => false,
        }
    }

    /// Forward search from the initial states (independent of the value recursion, which
    /// also visits exactly the reachable boards: the self-tests compare the two).
    pub fn reach(&self) -> Reach {
        let mut states = FastSet::default();
        let mut afters = FastSet::default();
        let mut terminals = FastSet::default();
        let mut stack: Vec<Board> = Vec::new();
        for (b, _) in initial_states(self.shape(), &self.variant) {
            if states.insert(b) {
                stack.push(b);
            }
        }
        let tiles = self.variant.tiles();
        while let Some(s) = stack.pop() {
            if self.at_goal(s) {
                continue;
            }
            let mut any = false;
            for m in 0..4 {
                let Some((a, _)) = self.rules.apply(s, m) else {
                    continue;
                };
                any = true;
                if !afters.insert(a) || self.at_goal(a) {
                    continue;
                }
                for c in empties(self.shape(), a) {
                    for &(t, _) in &tiles {
                        let child = with_cell(a, c, t);
                        if states.insert(child) {
                            stack.push(child);
                        }
                    }
                }
            }
            if !any {
                terminals.insert(s);
            }
        }
        Reach {
            states: states.into_iter().collect(),
            afters: afters.into_iter().collect(),
            terminals: terminals.into_iter().collect(),
        }
    }

    /// Forward search age by age (a move keeps the age, a spawn adds 2 or 4): for each
    /// age / 2, the reachable states and afterstates of that age.
    pub fn reach_layers(&self) -> Vec<(Vec<Board>, Vec<Board>)> {
        let shape = self.shape();
        let mut states: Vec<FastSet<Board>> = Vec::new();
        let add = |states: &mut Vec<FastSet<Board>>, b: Board| {
            let k = age(shape, b) as usize / 2;
            if states.len() <= k {
                states.resize_with(k + 1, FastSet::default);
            }
            states[k].insert(b);
        };
        for (b, _) in initial_states(shape, &self.variant) {
            add(&mut states, b);
        }
        let mut out = Vec::new();
        let mut k = 0;
        while k < states.len() {
            let layer: Vec<Board> = std::mem::take(&mut states[k]).into_iter().collect();
            let mut afters = FastSet::default();
            for &s in &layer {
                if self.at_goal(s) {
                    continue;
                }
                for m in 0..4 {
                    let Some((a, _)) = self.rules.apply(s, m) else {
                        continue;
                    };
                    if !afters.insert(a) || self.at_goal(a) {
                        continue;
                    }
                    for c in empties(shape, a) {
                        for &(t, _) in &self.tiles {
                            add(&mut states, with_cell(a, c, t));
                        }
                    }
                }
            }
            out.push((layer, afters.into_iter().collect()));
            k += 1;
        }
        out
    }

    /// q-value of move `m` in state `s`: reward (none for goal variants) plus afterstate value,
    /// times γ for a discounted goal; `None` for an invalid move.
    pub fn q(&mut self, s: Board, m: usize) -> Option<f64> {
        let (a, reward) = self.rules.apply(s, m)?;
        let after = self.after_value(a);
        Some(self.variant.q(reward, after))
    }

    pub fn value(&mut self, s: Board) -> f64 {
        if let Some(&v) = self.state_v.get(&s) {
            return v;
        }
        let v = if self.at_goal(s) {
            1.0
        } else {
            let mut best: Option<f64> = None;
            for m in 0..4 {
                if let Some(q) = self.q(s, m) {
                    best = Some(best.map_or(q, |b: f64| b.max(q)));
                }
            }
            best.unwrap_or(0.0)
        };
        self.state_v.insert(s, v);
        v
    }

    pub fn after_value(&mut self, a: Board) -> f64 {
        if let Some(&v) = self.after_v.get(&a) {
            return v;
        }
        let v = if self.at_goal(a) {
            1.0
        } else {
            let cells = self.shape().cells();
            let n = (0..cells).filter(|&c| cell(a, c) == 0).count();
            assert!(n > 0, "afterstate without an empty cell");
            let n = n as f64;
            let tiles = self.tiles.clone();
            match self.variant.kind {
                Kind::Expectation | Kind::Goal(_) => {
                    let mut sum = 0.0;
                    for c in (0..cells).filter(|&c| cell(a, c) == 0) {
                        for &(t, p) in &tiles {
                            sum += (1.0 / n) * p * self.value(with_cell(a, c, t));
                        }
                    }
                    sum
                }
                Kind::Optimistic | Kind::Pessimistic => {
                    let opt = self.variant.kind == Kind::Optimistic;
                    let mut sum = 0.0;
                    for &(t, p) in &tiles {
                        let mut ext = if opt {
                            f64::NEG_INFINITY
                        } else {
                            f64::INFINITY
                        };
                        for c in (0..cells).filter(|&c| cell(a, c) == 0) {
                            let v = self.value(with_cell(a, c, t));
                            ext = if opt { ext.max(v) } else { ext.min(v) };
                        }
                        sum += p * ext;
                    }
                    sum
                }
                Kind::Guaranteed(_) => {
                    let mut m = f64::INFINITY;
                    for c in (0..cells).filter(|&c| cell(a, c) == 0) {
                        for &(t, _) in &tiles {
                            m = m.min(self.value(with_cell(a, c, t)));
                        }
                    }
                    m
                }
            }
        };
        self.after_v.insert(a, v);
        v
    }

    /// Value over the real initial distribution.
    pub fn value_initial(&mut self) -> f64 {
        initial_states(self.shape(), &self.variant)
            .into_iter()
            .map(|(b, p)| p * self.value(b))
            .sum()
    }

    /// Average over the placements of two 2-tiles.
    pub fn value_two_2_tiles(&mut self) -> f64 {
        let boards = two_2_tiles(self.shape());
        let n = boards.len() as f64;
        boards.into_iter().map(|b| self.value(b)).sum::<f64>() / n
    }
}

/// The distinct initial states: one board per orbit of the full symmetry group.
pub fn distinct_initial_states(shape: Shape, v: &Variant) -> Vec<Board> {
    let perms = group_perms(shape, Group::Full);
    let orbits: std::collections::BTreeSet<Board> = initial_states(shape, v)
        .into_iter()
        .filter(|&(_, p)| p > 0.0)
        .map(|(b, _)| canonical(b, &perms))
        .collect();
    orbits.into_iter().collect()
}

/// Per-age orbit counts under `group` of the reachable boards, by hashing canonical forms.
pub fn age_counts_hashed(shape: Shape, group: Group, reach: &Reach) -> AgeCounts {
    let perms = group_perms(shape, group);
    let mut out: AgeCounts = BTreeMap::new();
    for (k, set) in [&reach.states, &reach.afters, &reach.terminals]
        .into_iter()
        .enumerate()
    {
        let orbits: FastSet<Board> = set.iter().map(|&b| canonical(b, &perms)).collect();
        for b in orbits {
            out.entry(age(shape, b)).or_default()[k] += 1;
        }
    }
    out
}

/// Per-age orbit counts under `group`, counting the boards that are their orbit's least
/// element. Valid because the reachable sets are closed under the group (checked against
/// `age_counts_hashed` by the self-tests); needs no hashing, so it is fast on 2x4.
pub fn age_counts(shape: Shape, group: Group, reach: &Reach) -> AgeCounts {
    let perms = group_perms(shape, group);
    let mut out: AgeCounts = BTreeMap::new();
    for (k, set) in [&reach.states, &reach.afters, &reach.terminals]
        .into_iter()
        .enumerate()
    {
        for &b in set.iter() {
            if canonical(b, &perms) == b {
                out.entry(age(shape, b)).or_default()[k] += 1;
            }
        }
    }
    out
}

pub fn totals(counts: &AgeCounts) -> [u64; 3] {
    let mut t = [0; 3];
    for c in counts.values() {
        for k in 0..3 {
            t[k] += c[k];
        }
    }
    t
}

/// A fully solved oracle: the reachable boards plus values of every reachable state and
/// afterstate, found by the memoised recursion from the initial states.
pub struct Solved {
    pub oracle: Oracle,
    pub reach: Reach,
}

impl Solved {
    /// Runs the deep recursion on a thread with a large stack.
    pub fn new(shape: Shape, variant: Variant) -> Solved {
        std::thread::Builder::new()
            .stack_size(1 << 30)
            .spawn(move || {
                let mut oracle = Oracle::new(shape, variant);
                let layers = oracle.reach_layers();
                // Deepest ages first, so each recursion finds its successors memoised.
                for (layer, _) in layers.iter().rev() {
                    for &s in layer {
                        oracle.value(s);
                    }
                }
                let states: Vec<Board> = layers.iter().flat_map(|l| l.0.iter().copied()).collect();
                let afters: Vec<Board> = layers.iter().flat_map(|l| l.1.iter().copied()).collect();
                let terminals: Vec<Board> = states
                    .iter()
                    .copied()
                    .filter(|&s| !oracle.at_goal(s) && oracle.rules.is_terminal(s))
                    .collect();
                Solved {
                    oracle,
                    reach: Reach {
                        states,
                        afters,
                        terminals,
                    },
                }
            })
            .unwrap()
            .join()
            .unwrap()
    }

    pub fn shape(&self) -> Shape {
        self.oracle.shape()
    }

    /// The state value, computing it (on a big-stack thread) if it was not reached.
    pub fn value(&mut self, s: Board) -> f64 {
        if let Some(&v) = self.oracle.state_v.get(&s) {
            return v;
        }
        let oracle = &mut self.oracle;
        std::thread::scope(|sc| {
            std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn_scoped(sc, || oracle.value(s))
                .unwrap()
                .join()
                .unwrap()
        })
    }

    /// Value of a reached state (panics if it was not reached).
    pub fn reached_value(&self, s: Board) -> f64 {
        self.oracle.state_v[&s]
    }

    /// q-values for L, R, U, D of a reached state not at the goal (its afterstates were all
    /// valued by `new`, so this needs no recursion).
    pub fn qs(&self, s: Board) -> [Option<f64>; 4] {
        std::array::from_fn(|m| {
            let (a, reward) = self.oracle.rules.apply(s, m)?;
            Some(self.oracle.variant.q(reward, self.oracle.after_v[&a]))
        })
    }

    pub fn max_age(&self) -> u64 {
        self.reach
            .states
            .iter()
            .map(|&b| age(self.shape(), b))
            .max()
            .unwrap()
    }

    pub fn value_initial(&mut self) -> f64 {
        let shape = self.shape();
        let v = self.oracle.variant;
        initial_states(shape, &v)
            .into_iter()
            .map(|(b, p)| p * self.value(b))
            .sum()
    }

    /// Unweighted mean over the distinct initial states (each orbit of the full group once).
    pub fn value_initial_distinct(&mut self) -> f64 {
        let boards = distinct_initial_states(self.shape(), &self.oracle.variant);
        let n = boards.len() as f64;
        boards.into_iter().map(|b| self.value(b)).sum::<f64>() / n
    }

    /// Average over the placements of two 2-tiles (computed even where they are unreachable,
    /// as for p4 = 1).
    pub fn value_two_2_tiles(&mut self) -> f64 {
        let boards = two_2_tiles(self.shape());
        let n = boards.len() as f64;
        boards.into_iter().map(|b| self.value(b)).sum::<f64>() / n
    }
}
