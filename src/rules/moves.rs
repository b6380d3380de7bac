//! Moves and rewards: every move of a line comes from a table built once per shape.
//!
//! Tiles slide toward the side moved to; equal neighbours merge once per move, pairing from
//! that side (right: `2 2 2 _` → `_ _ 2 4`, `2 2 2 2` → `_ _ 4 4`); the reward is the sum of
//! the new tiles; a move that changes nothing is invalid. A line of up to four cells is one
//! table look-up serving both of its directions; on boards of up to 4×4 the four moves share one
//! bit-parallel transpose and are compiled per shape.

use super::board::{cell, empty_cells, transpose, EmptyCells, MAX_EXP};
use super::shape::{Shape, MAX_CELLS};

/// Largest line length we tabulate; longer lines fall back to the direct slide.
const MAX_TABLE_LINE: usize = 4;

/// A move direction. `L` moves tiles toward column 0, `U` toward row 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    L = 0,
    R = 1,
    U = 2,
    D = 3,
}

impl Dir {
    pub const ALL: [Dir; 4] = [Dir::L, Dir::R, Dir::U, Dir::D];
    pub fn letter(self) -> char {
        ['L', 'R', 'U', 'D'][self as usize]
    }
}

/// Slides one line toward index 0 (cells as exponents); returns the reward.
/// The reference implementation the tables are built from.
fn slide_line(line: &mut [u8]) -> u32 {
    let mut out = 0usize;
    let mut reward = 0u32;
    let mut pending: u8 = 0; // exponent waiting for a partner, 0 = none
    let n = line.len();
    let mut result = [0u8; MAX_CELLS];
    for &e in line.iter() {
        if e == 0 {
            continue;
        }
        if pending == e {
            debug_assert!(
                e < MAX_EXP,
                "tile 2^15 cannot merge: the code has no room for 2^16"
            );
            result[out] = e + 1;
            reward += 1 << (e + 1);
            out += 1;
            pending = 0;
        } else {
            if pending != 0 {
                result[out] = pending;
                out += 1;
            }
            pending = e;
        }
    }
    if pending != 0 {
        result[out] = pending;
    }
    line.copy_from_slice(&result[..n]);
    reward
}

/// Line tables for one line length: one packed entry per line (a line is up to four nibbles,
/// cell 0 in the low nibble). Bits 0–15 hold the line slid toward index 0, bits 16–31 half its
/// reward, bits 32–47 the line slid toward the last index, bits 48–63 half that reward. Rewards
/// are even and at most two merges into 2^15, so half of one fits 16 bits; one load serves both
/// directions of a line (on 4-cell lines the table is 512 KiB).
struct LineTable {
    packed: Vec<u64>,
}

impl LineTable {
    fn new(len: usize) -> LineTable {
        let size = 1usize << (4 * len);
        let mut packed = vec![0u64; size];
        let mut buf = [0u8; MAX_TABLE_LINE];
        for (code, entry) in packed.iter_mut().enumerate() {
            let line = &mut buf[..len];
            for (j, v) in line.iter_mut().enumerate() {
                *v = ((code >> (4 * j)) & 0xF) as u8;
            }
            if has_pair(line, MAX_EXP) {
                // Two 2^15 tiles would merge past what a nibble holds. Such lines are not
                // reachable on boards we can solve; leave them unchanged (the move is invalid).
                *entry = code as u64 | ((code as u64) << 32);
                continue;
            }
            let mut l0 = [0u8; MAX_TABLE_LINE];
            l0[..len].copy_from_slice(line);
            let r0 = slide_line(&mut l0[..len]);
            let mut l1 = [0u8; MAX_TABLE_LINE];
            for j in 0..len {
                l1[j] = line[len - 1 - j];
            }
            let r1 = slide_line(&mut l1[..len]);
            l1[..len].reverse();
            debug_assert!(
                r0.is_multiple_of(2)
                    && r0 / 2 <= 0xFFFF
                    && r1.is_multiple_of(2)
                    && r1 / 2 <= 0xFFFF
            );
            *entry = pack(&l0[..len])
                | (u64::from(r0 / 2) << 16)
                | (pack(&l1[..len]) << 32)
                | (u64::from(r1 / 2) << 48);
        }
        LineTable { packed }
    }

    /// The line slid toward index 0 and its reward.
    #[inline(always)]
    fn toward0(&self, line: usize) -> (u64, u32) {
        let e = self.packed[line];
        (e & 0xFFFF, 2 * ((e >> 16) & 0xFFFF) as u32)
    }

    /// The line slid toward its last index and its reward.
    #[inline(always)]
    fn toward_end(&self, line: usize) -> (u64, u32) {
        let e = self.packed[line];
        ((e >> 32) & 0xFFFF, 2 * (e >> 48) as u32)
    }
}

fn has_pair(line: &[u8], e: u8) -> bool {
    line.iter().filter(|&&x| x == e).count() >= 2
}

fn pack(line: &[u8]) -> u64 {
    line.iter()
        .enumerate()
        .fold(0u64, |acc, (j, &e)| acc | (u64::from(e) << (4 * j)))
}

/// All four moves of a board: L, R, U, D, each `None` when it changes nothing.
type MovesFn = fn(&Rules, u64) -> [Option<(u64, u32)>; 4];

/// The rules for one shape: move tables and helpers. Cheap to share across threads.
pub struct Rules {
    shape: Shape,
    rows_table: Option<LineTable>,
    cols_table: Option<LineTable>,
    row_mask: u64,
    /// [`moves_rc`] for the shape when both sides are at most 4, else the direction-by-direction
    /// path.
    moves_fn: MovesFn,
}

/// The four moves of an R×C board (both sides at most 4): each row is one table load (both
/// directions), the columns are the rows of the transposed code, and a valid vertical move is
/// transposed back. `R` and `C` are constants, so every loop unrolls.
fn moves_rc<const R: usize, const C: usize>(rules: &Rules, code: u64) -> [Option<(u64, u32)>; 4] {
    let (Some(rt), Some(ct)) = (&rules.rows_table, rules.col_table()) else {
        return rules.moves_by_dir(code);
    };
    // Slicing to the exact size once lets the masked indices below go unchecked.
    let rmask = (1u64 << (4 * C)) - 1;
    let cmask = (1u64 << (4 * R)) - 1;
    let rows = &rt.packed[..=rmask as usize];
    let cols = &ct.packed[..=cmask as usize];
    let lines = |table: &[u64], x: u64, n: usize, width: usize, mask: u64| {
        let (mut lo, mut lo_rew, mut hi, mut hi_rew) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..n {
            let shift = 4 * width * i;
            let e = table[((x >> shift) & mask) as usize];
            lo |= (e & 0xFFFF) << shift;
            lo_rew += (e >> 16) & 0xFFFF;
            hi |= ((e >> 32) & 0xFFFF) << shift;
            hi_rew += e >> 48;
        }
        ((lo, 2 * lo_rew as u32), (hi, 2 * hi_rew as u32))
    };
    let (l, r) = lines(rows, code, R, C, rmask);
    let t = transpose::<R, C>(code);
    let (u, d) = lines(cols, t, C, R, cmask);
    let valid = |(a, rw): (u64, u32), before: u64| (a != before).then_some((a, rw));
    [
        valid(l, code),
        valid(r, code),
        valid(u, t).map(|(a, rw)| (transpose::<C, R>(a), rw)),
        valid(d, t).map(|(a, rw)| (transpose::<C, R>(a), rw)),
    ]
}

/// [`moves_rc`] for a shape, when both sides are at most [`MAX_TABLE_LINE`].
fn moves_fn(shape: Shape) -> Option<MovesFn> {
    macro_rules! pick {
        ($($r:literal x $c:literal),*) => {
            match (shape.rows(), shape.cols()) {
                $(($r, $c) => Some(moves_rc::<$r, $c> as MovesFn),)*
                _ => None,
            }
        };
    }
    pick!(1 x 1, 1 x 2, 1 x 3, 1 x 4, 2 x 1, 2 x 2, 2 x 3, 2 x 4, 3 x 1, 3 x 2, 3 x 3, 3 x 4,
          4 x 1, 4 x 2, 4 x 3, 4 x 4)
}

impl Rules {
    pub fn new(shape: Shape) -> Rules {
        let rows_table = (shape.cols() <= MAX_TABLE_LINE).then(|| LineTable::new(shape.cols()));
        let cols_table = if shape.rows() == shape.cols() {
            None // same length: share the row table (see `col_table`)
        } else {
            (shape.rows() <= MAX_TABLE_LINE).then(|| LineTable::new(shape.rows()))
        };
        Rules {
            shape,
            rows_table,
            cols_table,
            // A 16-cell row fills the code: no `1 << 64`.
            row_mask: u64::MAX >> (64 - 4 * shape.cols()),
            moves_fn: moves_fn(shape).unwrap_or(Rules::moves_by_dir),
        }
    }

    /// All four moves at once (L, R, U, D).
    #[inline]
    pub fn moves(&self, code: u64) -> [Option<(u64, u32)>; 4] {
        (self.moves_fn)(self, code)
    }

    /// The four moves one direction at a time (shapes with a side longer than the tables; also
    /// the independent path the tests check [`Rules::moves`] against).
    fn moves_by_dir(&self, code: u64) -> [Option<(u64, u32)>; 4] {
        Dir::ALL.map(|d| self.apply(code, d))
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    fn col_table(&self) -> Option<&LineTable> {
        if self.shape.is_square() {
            self.rows_table.as_ref()
        } else {
            self.cols_table.as_ref()
        }
    }

    /// Applies `dir`; `None` if the move changes nothing (invalid). Returns the afterstate and
    /// the reward (sum of merged tiles).
    #[inline]
    pub fn apply(&self, code: u64, dir: Dir) -> Option<(u64, u32)> {
        let (after, reward) = match dir {
            Dir::L | Dir::R => self.move_rows(code, dir == Dir::L),
            Dir::U | Dir::D => self.move_cols(code, dir == Dir::U),
        };
        (after != code).then_some((after, reward))
    }

    #[inline]
    fn move_rows(&self, code: u64, toward0: bool) -> (u64, u32) {
        let cols = self.shape.cols();
        let mut out = 0u64;
        let mut reward = 0u32;
        match &self.rows_table {
            Some(t) => {
                for r in 0..self.shape.rows() {
                    let shift = 4 * cols * r;
                    let line = ((code >> shift) & self.row_mask) as usize;
                    let (moved, rw) = if toward0 {
                        t.toward0(line)
                    } else {
                        t.toward_end(line)
                    };
                    out |= moved << shift;
                    reward += rw;
                }
            }
            None => {
                for r in 0..self.shape.rows() {
                    reward += slide_cells(code, &mut out, r * cols, 1, cols, toward0);
                }
            }
        }
        (out, reward)
    }

    #[inline]
    fn move_cols(&self, code: u64, toward0: bool) -> (u64, u32) {
        let (rows, cols) = (self.shape.rows(), self.shape.cols());
        let mut out = 0u64;
        let mut reward = 0u32;
        match self.col_table() {
            Some(t) => {
                for c in 0..cols {
                    let mut line = 0usize;
                    for r in 0..rows {
                        line |= (((code >> (4 * (r * cols + c))) & 0xF) as usize) << (4 * r);
                    }
                    let (moved, rw) = if toward0 {
                        t.toward0(line)
                    } else {
                        t.toward_end(line)
                    };
                    reward += rw;
                    for r in 0..rows {
                        out |= ((moved >> (4 * r)) & 0xF) << (4 * (r * cols + c));
                    }
                }
            }
            None => {
                for c in 0..cols {
                    reward += slide_cells(code, &mut out, c, cols, rows, toward0);
                }
            }
        }
        (out, reward)
    }

    /// True when no move is valid.
    pub fn is_terminal(&self, code: u64) -> bool {
        self.moves(code).iter().all(Option::is_none)
    }

    /// Empty cell indices of a board, in increasing order.
    pub fn empty_cells(&self, code: u64) -> EmptyCells {
        empty_cells(code, self.shape.cells())
    }
}

/// Slow path for lines longer than the tables: slide the `len` cells `first`, `first + step`, …
/// (toward the first when `toward0`) and write them into `out`. On the stack: it is the whole
/// move of boards wider than four cells (2x5, 2x6, 1xN), so it allocates nothing.
fn slide_cells(
    code: u64,
    out: &mut u64,
    first: usize,
    step: usize,
    len: usize,
    toward0: bool,
) -> u32 {
    let mut line = [0u8; MAX_CELLS];
    let line = &mut line[..len];
    let at = |j: usize| first + step * if toward0 { j } else { len - 1 - j };
    for (j, v) in line.iter_mut().enumerate() {
        *v = cell(code, at(j));
    }
    let reward = slide_line(line);
    for (j, &e) in line.iter().enumerate() {
        *out |= u64::from(e) << (4 * at(j));
    }
    reward
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::board::{age, count_empty, format_board, parse_board};

    fn line_right(cells: &[u32]) -> (Vec<u32>, u32) {
        let shape = Shape::new(1, cells.len()).unwrap();
        let rules = Rules::new(shape);
        let text = cells
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        let code = parse_board(&text, shape).unwrap();
        let (after, reward) = rules.apply(code, Dir::R).unwrap_or((code, 0));
        let out = (0..cells.len())
            .map(|i| match cell(after, i) {
                0 => 0,
                e => 1 << e,
            })
            .collect();
        (out, reward)
    }

    #[test]
    fn merges_pair_from_the_side_moved_toward() {
        assert_eq!(line_right(&[2, 2, 2, 0]), (vec![0, 0, 2, 4], 4));
        assert_eq!(line_right(&[2, 2, 2, 2]), (vec![0, 0, 4, 4], 8));
        assert_eq!(line_right(&[4, 2, 2, 0]), (vec![0, 0, 4, 4], 4));
        assert_eq!(line_right(&[4, 4, 8, 0]), (vec![0, 0, 8, 8], 8));
        assert_eq!(line_right(&[2, 0, 0, 2]), (vec![0, 0, 0, 4], 4));
        assert_eq!(line_right(&[2, 4, 8, 16]), (vec![2, 4, 8, 16], 0));
    }

    #[test]
    fn long_lines_use_the_slow_path_with_the_same_rule() {
        assert_eq!(line_right(&[2, 2, 2, 0, 2, 8]), (vec![0, 0, 0, 4, 4, 8], 8));
        assert_eq!(line_right(&[2, 2, 2, 0, 4, 8]), (vec![0, 0, 2, 4, 4, 8], 4));
        assert_eq!(line_right(&[4, 4, 4, 4, 4]), (vec![0, 0, 4, 8, 8], 16));
    }

    #[test]
    fn columns_and_invalid_moves() {
        let shape = Shape::new(3, 3).unwrap();
        let rules = Rules::new(shape);
        let b = parse_board("2 . ./2 . ./4 . .", shape).unwrap();
        let (up, r) = rules.apply(b, Dir::U).unwrap();
        assert_eq!(format_board(up, shape), "4 . ./4 . ./. . .");
        assert_eq!(r, 4);
        let (down, r) = rules.apply(b, Dir::D).unwrap();
        assert_eq!(format_board(down, shape), ". . ./4 . ./4 . .");
        assert_eq!(r, 4);
        assert!(rules.apply(b, Dir::L).is_none());
        let (right, r) = rules.apply(b, Dir::R).unwrap();
        assert_eq!(format_board(right, shape), ". . 2/. . 2/. . 4");
        assert_eq!(r, 0);
        let full = parse_board("2 4 2/4 2 4/2 4 2", shape).unwrap();
        assert!(rules.is_terminal(full));
        assert_eq!(age(full), 26);
        assert_eq!(count_empty(b, 9), 6);
    }

    #[test]
    fn rectangular_columns() {
        let shape = Shape::new(2, 4).unwrap();
        let rules = Rules::new(shape);
        let b = parse_board("2 2 4 ./2 . 4 8", shape).unwrap();
        let (up, r) = rules.apply(b, Dir::U).unwrap();
        assert_eq!(format_board(up, shape), "4 2 8 8/. . . .");
        assert_eq!(r, 12);
        let (left, r) = rules.apply(b, Dir::L).unwrap();
        assert_eq!(format_board(left, shape), "4 4 . ./2 4 8 .");
        assert_eq!(r, 4);
    }

    /// Slides the cells at `idx` (ordered from the side moved toward when `toward0`) into `out`.
    fn slide_idx(code: u64, out: &mut u64, idx: &[usize], toward0: bool) -> u32 {
        let mut line: Vec<u8> = idx.iter().map(|&i| cell(code, i)).collect();
        if !toward0 {
            line.reverse();
        }
        let reward = slide_line(&mut line);
        if !toward0 {
            line.reverse();
        }
        for (&i, &e) in idx.iter().zip(&line) {
            *out |= u64::from(e) << (4 * i);
        }
        reward
    }

    /// The four moves cell by cell, from [`slide_line`] alone (no table, no transpose).
    fn moves_cell_by_cell(shape: Shape, b: u64) -> [Option<(u64, u32)>; 4] {
        let (rows, cols) = (shape.rows(), shape.cols());
        let row = |r: usize| (0..cols).map(|c| r * cols + c).collect::<Vec<_>>();
        let col = |c: usize| (0..rows).map(|r| r * cols + c).collect::<Vec<_>>();
        let lines: [Vec<Vec<usize>>; 2] =
            [(0..rows).map(row).collect(), (0..cols).map(col).collect()];
        let one = |lines: &[Vec<usize>], toward0: bool| {
            let mut out = 0u64;
            let reward = lines
                .iter()
                .map(|l| slide_idx(b, &mut out, l, toward0))
                .sum();
            (out != b).then_some((out, reward))
        };
        [
            one(&lines[0], true),
            one(&lines[0], false),
            one(&lines[1], true),
            one(&lines[1], false),
        ]
    }

    #[test]
    fn moves_match_the_cell_by_cell_rule_on_every_small_shape() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for r in 1..=4 {
            for c in 1..=4 {
                check_random_boards(Shape::new(r, c).unwrap(), &mut rng);
            }
        }
    }

    /// [`Rules::moves`] against [`moves_cell_by_cell`] on 4000 random boards of `shape`.
    fn check_random_boards(shape: Shape, rng: &mut rand::rngs::StdRng) {
        use rand::Rng;
        let rules = Rules::new(shape);
        for round in 0..4000 {
            // Sparse boards early (many slides), dense late (many merges), up to 2^14.
            let top = if round < 2000 { 3 } else { 15 };
            let b =
                (0..shape.cells()).fold(0u64, |acc, i| acc | (rng.gen_range(0..top) << (4 * i)));
            assert_eq!(
                rules.moves(b),
                moves_cell_by_cell(shape, b),
                "{shape} {}",
                format_board(b, shape)
            );
        }
    }

    /// Boards with a side longer than the tables take [`slide_cells`] for that side.
    #[test]
    fn long_sides_match_the_cell_by_cell_rule() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        for (r, c) in [
            (1, 5),
            (1, 9),
            (1, 16),
            (2, 5),
            (2, 6),
            (2, 8),
            (3, 5),
            (5, 3),
            (6, 2),
        ] {
            check_random_boards(Shape::new(r, c).unwrap(), &mut rng);
        }
    }

    #[test]
    fn all_moves_at_once_agree_with_single_moves() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for (r, c) in [
            (1, 1),
            (1, 4),
            (2, 2),
            (2, 3),
            (3, 2),
            (3, 3),
            (2, 4),
            (4, 2),
            (3, 4),
            (4, 3),
            (4, 4),
            (2, 5),
            (1, 8),
        ] {
            let shape = Shape::new(r, c).unwrap();
            let rules = Rules::new(shape);
            let trules = Rules::new(Shape::new(c, r).unwrap());
            for _ in 0..3000 {
                let b = (0..shape.cells())
                    .fold(0u64, |acc, i| acc | (rng.gen_range(0..4u64) << (4 * i)));
                let all = rules.moves(b);
                for (i, d) in Dir::ALL.iter().enumerate() {
                    assert_eq!(
                        all[i],
                        rules.apply(b, *d),
                        "{shape} {d:?} {}",
                        format_board(b, shape)
                    );
                }
                // Moving up is moving left on the transposed board.
                let tb = (0..shape.cells()).fold(0u64, |acc, i| {
                    acc | (u64::from(cell(b, i)) << (4 * ((i % c) * r + i / c)))
                });
                let tl = trules.apply(tb, Dir::L);
                assert_eq!(tl.map(|x| x.1), all[2].map(|x| x.1));
            }
        }
    }
}
