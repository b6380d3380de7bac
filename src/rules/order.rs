//! Orders of a board's valid moves by a cheap rule, which the writer and the reader of the
//! policy layout compute alike from the board: what a policy file stores for a state is the
//! rank of an optimal move in such an order, a skewed symbol when the rule's first move is
//! often optimal (and no symbol at all when the board has one valid move).
//!
//! Every order lists the valid moves only, best first by its key, equal keys in the order
//! L, R, U, D. The keys look at the afterstate of each move and nothing else (no search).

use super::board;
use super::moves::{Dir, Rules};
use super::shape::Shape;
use crate::bits::{byte_max, LOW};

/// A rule ordering the valid moves of a board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// L, R, U, D: the rank among the valid moves in a fixed order.
    Fixed,
    /// Largest reward first, then most empty cells after the move.
    Greedy,
    /// Largest tiles kept toward cell 0 (the corner canonical boards gather their largest
    /// tiles in, being the smallest code of their images), then most empty cells.
    Corner,
    /// Tiles' values weighted along a snake from cell 0 (row 0 left to right, row 1 right to
    /// left, …), halving at each cell: the classic heuristic of a big tile in a corner with
    /// a decreasing chain behind it.
    Snake,
    /// Most empty cells, then the smoothest board (smallest sum of exponent differences
    /// between neighbours).
    Smooth,
    /// The smoothest board, then most empty cells.
    Rough,
    /// Empty cells and smoothness together: an empty cell outweighs three steps of
    /// exponent between neighbours.
    Blend,
}

impl Order {
    pub const ALL: [Order; 7] = [
        Order::Fixed,
        Order::Greedy,
        Order::Corner,
        Order::Snake,
        Order::Smooth,
        Order::Rough,
        Order::Blend,
    ];

    /// The order the policy layout stores ranks in.
    pub const POLICY: Order = Order::Blend;

    /// Its number in a policy file's header.
    pub fn id(self) -> u8 {
        match self {
            Order::Fixed => 0,
            Order::Greedy => 1,
            Order::Corner => 2,
            Order::Snake => 3,
            Order::Smooth => 4,
            Order::Rough => 5,
            Order::Blend => 6,
        }
    }

    pub fn from_id(id: u8) -> Option<Order> {
        Order::ALL.into_iter().find(|o| o.id() == id)
    }

    pub fn name(self) -> &'static str {
        match self {
            Order::Fixed => "fixed",
            Order::Greedy => "greedy",
            Order::Corner => "corner",
            Order::Snake => "snake",
            Order::Smooth => "smooth",
            Order::Rough => "rough",
            Order::Blend => "blend",
        }
    }

    /// The key of a move to `after` with `reward` (larger first), on a board of `cols`
    /// columns.
    #[inline(always)]
    fn key(self, after: u64, reward: u32, cells: usize, cols: usize) -> i64 {
        let empty = i64::from(board::count_empty(after, cells));
        match self {
            Order::Fixed => 0,
            Order::Greedy => (i64::from(reward) << 8) | empty,
            Order::Corner => {
                // Each tile's exponent weighted by its distance from the last cell: a move
                // that keeps big tiles near cell 0 scores more; empty cells break near-ties.
                let mut s = 0i64;
                for i in 0..cells {
                    s += i64::from(board::cell(after, i)) * (cells - i) as i64;
                }
                (s << 5) | empty
            }
            Order::Snake => {
                let mut s = 0i64;
                for i in 0..cells {
                    let (r, c) = (i / cols, i % cols);
                    let along = r * cols + if r % 2 == 0 { c } else { cols - 1 - c };
                    let e = i64::from(board::cell(after, i));
                    if e > 0 {
                        // 2^e / 2^along, in units of 2^-16.
                        s += 1i64 << (e + 16).saturating_sub(along as i64).clamp(0, 62);
                    }
                }
                s
            }
            Order::Smooth => (empty << 16) - roughness(after, cells, cols),
            Order::Rough => (-roughness(after, cells, cols) << 5) | empty,
            Order::Blend => 3 * empty - roughness(after, cells, cols),
        }
    }
}

/// The sum of exponent differences between neighbouring cells (empty cells as 0).
///
/// Without a loop: each cell that has a right-hand (below) neighbour is paired with it by
/// shifting the code one cell (a row) down, under a mask of those cells ([`NEIGHBOURS`]);
/// the pairs' differences are then summed by [`pair_distance`].
#[inline(always)]
fn roughness(code: u64, cells: usize, cols: usize) -> i64 {
    let (x, y) = neighbour_pairs(code, cells, cols);
    pair_distance(x, y)
}

/// The cells that have a right-hand neighbour and those that have one below (`x`), and those
/// neighbours shifted onto them (`y`).
#[inline(always)]
fn neighbour_pairs(code: u64, cells: usize, cols: usize) -> ([u64; 2], [u64; 2]) {
    let (right, below) = NEIGHBOURS[cells][cols];
    // A row of 16 cells has none below (and its shift would be the whole word).
    let under = code.checked_shr(4 * cols as u32).unwrap_or(0);
    (
        [code & right, code & below],
        [(code >> 4) & right, under & below],
    )
}

/// The sum over nibbles of `|x − y|`, nibble by nibble, of the two pairs of words: on
/// x86-64 by SSE2's sum of absolute byte differences (`psadbw`, part of that architecture's
/// baseline), the even and the odd nibbles apart; elsewhere by [`pair_distance_swar`]. The
/// policy layout ranks every state's moves by a key made of this, so it is on the backward
/// pass's path.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pair_distance(x: [u64; 2], y: [u64; 2]) -> i64 {
    // SAFETY: SSE2 is part of the x86-64 baseline, so every x86-64 processor has it.
    unsafe { pair_distance_sse2(x, y) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn pair_distance_sse2(x: [u64; 2], y: [u64; 2]) -> i64 {
    use std::arch::x86_64::*;
    let low = _mm_set1_epi8(0x0F);
    let x = _mm_set_epi64x(x[1] as i64, x[0] as i64);
    let y = _mm_set_epi64x(y[1] as i64, y[0] as i64);
    let even = _mm_sad_epu8(_mm_and_si128(x, low), _mm_and_si128(y, low));
    let odd = _mm_sad_epu8(
        _mm_and_si128(_mm_srli_epi64::<4>(x), low),
        _mm_and_si128(_mm_srli_epi64::<4>(y), low),
    );
    let s = _mm_add_epi64(even, odd);
    _mm_cvtsi128_si64(_mm_add_epi64(s, _mm_unpackhi_epi64(s, s)))
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn pair_distance(x: [u64; 2], y: [u64; 2]) -> i64 {
    pair_distance_swar(x, y)
}

/// [`pair_distance`] in a word's arithmetic: the differences taken a byte each, even
/// nibbles and odd nibbles apart, and summed by a multiplication.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn pair_distance_swar([a, c]: [u64; 2], [b, d]: [u64; 2]) -> i64 {
    // A byte of each term is at most 15, so of their sum at most 60: no carry between bytes.
    let x = byte_diff(a & LOW, b & LOW)
        + byte_diff((a >> 4) & LOW, (b >> 4) & LOW)
        + byte_diff(c & LOW, d & LOW)
        + byte_diff((c >> 4) & LOW, (d >> 4) & LOW);
    // Pairs of bytes into 16-bit lanes (each at most 120), then the lanes summed in the top one.
    const PAIRS: u64 = 0x00FF_00FF_00FF_00FF;
    let y = (x & PAIRS) + ((x >> 8) & PAIRS);
    (y.wrapping_mul(0x0001_0001_0001_0001) >> 48) as i64
}

/// The difference of each pair of bytes of `a` and `b` (every byte under 128): the larger
/// minus the other, which never borrows.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn byte_diff(a: u64, b: u64) -> u64 {
    let larger = byte_max(a, b);
    larger.wrapping_sub(a ^ b ^ larger)
}

/// Per board of `cells` cells and `cols` columns, the nibble masks of the cells with a
/// neighbour to their right and of those with one below.
const NEIGHBOURS: [[(u64, u64); 17]; 17] = {
    let mut t = [[(0u64, 0u64); 17]; 17];
    let mut cells = 1;
    while cells <= 16 {
        let mut cols = 1;
        while cols <= cells {
            let (mut right, mut below) = (0u64, 0u64);
            let mut i = 0;
            while i < cells {
                if i % cols + 1 < cols && i + 1 < cells {
                    right |= 0xF << (4 * i);
                }
                if i + cols < cells {
                    below |= 0xF << (4 * i);
                }
                i += 1;
            }
            t[cells][cols] = (right, below);
            cols += 1;
        }
        cells += 1;
    }
    t
};

/// The valid moves of a board in an order: `dirs[..len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranked {
    pub dirs: [Dir; 4],
    pub len: u8,
}

impl Ranked {
    /// The moves, best first.
    pub fn moves(&self) -> &[Dir] {
        &self.dirs[..usize::from(self.len)]
    }

    /// The rank of `d`, if valid.
    pub fn rank_of(&self, d: Dir) -> Option<u8> {
        self.moves().iter().position(|&x| x == d).map(|r| r as u8)
    }
}

/// The valid moves of `moves` (as [`Rules::moves`] gives them) in `order`.
#[inline]
pub fn rank_moves(order: Order, moves: &[Option<(u64, u32)>; 4], shape: Shape) -> Ranked {
    let (cells, cols) = (shape.cells(), shape.cols());
    let mut keyed = [(0i64, Dir::L); 4];
    let mut len = 0usize;
    for (d, m) in Dir::ALL.into_iter().zip(moves) {
        if let Some((after, reward)) = *m {
            keyed[len] = (order.key(after, reward, cells, cols), d);
            len += 1;
        }
    }
    // Stable: equal keys keep L, R, U, D.
    let part = &mut keyed[..len];
    for i in 1..part.len() {
        let mut j = i;
        while j > 0 && part[j - 1].0 < part[j].0 {
            part.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut dirs = [Dir::L; 4];
    for (x, &(_, d)) in dirs.iter_mut().zip(part.iter()) {
        *x = d;
    }
    Ranked {
        dirs,
        len: len as u8,
    }
}

/// The smallest rank in `order` of a move of `optimal` (bit `d` for [`Dir::ALL`]`[d]`) among
/// the valid moves of `moves` (as [`Rules::moves`] gives them): its position in
/// [`rank_moves`]'s list, 0 if none is valid. Without the list: a move's rank is the number
/// of valid moves with a larger key, or an equal key and an earlier direction.
#[inline(always)]
pub fn first_rank(order: Order, moves: &[Option<(u64, u32)>; 4], shape: Shape, optimal: u8) -> u8 {
    rank_among(&MoveKeys::new(order, moves, shape), optimal)
}

/// The keys of a board's valid moves in an order, computed once for several masks of
/// optimal moves ([`rank_among`]; one a variant in the backward pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveKeys {
    /// Per direction of [`Dir::ALL`], its key (0 where the move is invalid).
    pub keys: [i64; 4],
    /// Bit `d` set where move `d` is valid.
    pub valid: u8,
}

impl MoveKeys {
    /// The keys of the valid moves of `moves` (as [`Rules::moves`] gives them) in `order`.
    ///
    /// The order is matched once, outside the moves ([`MoveKeys::of`] is inlined with it
    /// constant), and every move's key is computed, valid or not, then masked: the backward
    /// pass ranks every state's moves, and a branch on each move's validity is one the
    /// processor cannot predict.
    #[inline(always)]
    pub fn new(order: Order, moves: &[Option<(u64, u32)>; 4], shape: Shape) -> MoveKeys {
        let (cells, cols) = (shape.cells(), shape.cols());
        match order {
            Order::Fixed => Self::of(Order::Fixed, moves, cells, cols),
            Order::Greedy => Self::of(Order::Greedy, moves, cells, cols),
            Order::Corner => Self::of(Order::Corner, moves, cells, cols),
            Order::Snake => Self::of(Order::Snake, moves, cells, cols),
            Order::Smooth => Self::of(Order::Smooth, moves, cells, cols),
            Order::Rough => Self::of(Order::Rough, moves, cells, cols),
            Order::Blend => Self::of(Order::Blend, moves, cells, cols),
        }
    }

    #[inline(always)]
    fn of(order: Order, moves: &[Option<(u64, u32)>; 4], cells: usize, cols: usize) -> MoveKeys {
        let mut keys = [0i64; 4];
        let mut valid = 0u8;
        for (d, m) in moves.iter().enumerate() {
            let (after, reward) = m.unwrap_or((0, 0));
            let is = m.is_some();
            keys[d] = order.key(after, reward, cells, cols) & -i64::from(is);
            valid |= u8::from(is) << d;
        }
        MoveKeys { keys, valid }
    }
}

/// [`first_rank`] from the moves' keys.
#[inline(always)]
pub fn rank_among(k: &MoveKeys, optimal: u8) -> u8 {
    let (keys, valid) = (&k.keys, k.valid);
    let mut best = u8::MAX;
    for d in 0..4 {
        if (optimal & valid) >> d & 1 == 0 {
            continue;
        }
        let mut rank = 0u8;
        for e in 0..4 {
            let before = keys[e] > keys[d] || (keys[e] == keys[d] && e < d);
            rank += u8::from(valid >> e & 1 == 1 && before);
        }
        best = best.min(rank);
    }
    if best == u8::MAX {
        0
    } else {
        best
    }
}

/// The valid moves of `code` in `order`.
pub fn ranked(rules: &Rules, order: Order, code: u64) -> Ranked {
    rank_moves(order, &rules.moves(code), rules.shape())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::parse_board;

    #[test]
    fn orders_list_the_valid_moves_once() {
        let shape = Shape::new(3, 3).unwrap();
        let rules = Rules::new(shape);
        let mut rng = 0x1234_5678u64;
        for _ in 0..5000 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut code = 0u64;
            for i in 0..9 {
                let e = ((rng >> (4 * i + 20)) & 0xF) % 6;
                code |= e << (4 * i);
            }
            let valid: Vec<Dir> = Dir::ALL
                .into_iter()
                .filter(|&d| rules.apply(code, d).is_some())
                .collect();
            for order in Order::ALL {
                let r = ranked(&rules, order, code);
                let mut got = r.moves().to_vec();
                got.sort_by_key(|&d| d as u8);
                assert_eq!(got, valid, "{order:?} {code:#x}");
                for (i, &d) in r.moves().iter().enumerate() {
                    assert_eq!(r.rank_of(d), Some(i as u8));
                }
            }
            let fixed = ranked(&rules, Order::Fixed, code);
            assert_eq!(fixed.moves(), &valid[..]);
        }
    }

    #[test]
    fn first_rank_is_the_position_in_the_list() {
        for (rows, cols) in [(3, 3), (2, 4), (4, 4)] {
            let shape = Shape::new(rows, cols).unwrap();
            let rules = Rules::new(shape);
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            for _ in 0..4000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mut code = 0u64;
                for i in 0..shape.cells() {
                    code |= ((x >> (3 * i)) % 5) << (4 * i);
                }
                let moves = rules.moves(code);
                for order in Order::ALL {
                    let list = rank_moves(order, &moves, shape);
                    for optimal in 0..16u8 {
                        let want = list
                            .moves()
                            .iter()
                            .position(|&d| optimal >> (d as u8) & 1 == 1)
                            .unwrap_or(0) as u8;
                        assert_eq!(
                            first_rank(order, &moves, shape, optimal),
                            want,
                            "{order:?} {code:#x} {optimal:#b}"
                        );
                    }
                }
            }
        }
    }

    /// The roughness as the loop over cells computes it.
    fn naive_roughness(code: u64, cells: usize, cols: usize) -> i64 {
        let e = |i: usize| i64::from(board::cell(code, i));
        let mut rough = 0i64;
        for i in 0..cells {
            if i % cols + 1 < cols {
                rough += (e(i) - e(i + 1)).abs();
            }
            if i + cols < cells {
                rough += (e(i) - e(i + cols)).abs();
            }
        }
        rough
    }

    #[test]
    fn roughness_is_the_loops_on_every_shape() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for rows in 1..=16usize {
            for cols in 1..=16 / rows {
                let cells = rows * cols;
                let all = u64::MAX >> (64 - 4 * cells);
                // The largest differences (alternating 15 and 0), and seeded boards.
                let mut codes = vec![
                    all,
                    0,
                    0xF0F0_F0F0_F0F0_F0F0 & all,
                    0x0F0F_0F0F_0F0F_0F0F & all,
                ];
                for _ in 0..20_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    codes.push(x & all);
                }
                for code in codes {
                    let want = naive_roughness(code, cells, cols);
                    assert_eq!(
                        roughness(code, cells, cols),
                        want,
                        "{rows}x{cols} {code:#x}"
                    );
                    // The word-arithmetic version too, which x86-64 builds do not call.
                    let pairs = neighbour_pairs(code, cells, cols);
                    assert_eq!(
                        pair_distance_swar(pairs.0, pairs.1),
                        want,
                        "{rows}x{cols} {code:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn greedy_takes_the_merge_first_and_ids_round_trip() {
        let shape = Shape::new(3, 3).unwrap();
        let rules = Rules::new(shape);
        // Up and down merge the 2s of column 0; left and right merge nothing.
        let code = parse_board("2 0 0/2 0 4/0 0 0", shape).unwrap();
        let r = ranked(&rules, Order::Greedy, code);
        assert_eq!(&r.moves()[..2], &[Dir::U, Dir::D]);
        for o in Order::ALL {
            assert_eq!(Order::from_id(o.id()), Some(o));
        }
        assert_eq!(Order::from_id(9), None);
    }
}
