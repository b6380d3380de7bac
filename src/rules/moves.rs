//! Moves and rewards: every move of a line comes from a table built once per shape.
//!
//! Tiles slide toward the side moved to; equal neighbours merge once per move, pairing from
//! that side (right: `2 2 2 _` → `_ _ 2 4`, `2 2 2 2` → `_ _ 4 4`); the reward is the sum of
//! the new tiles; a move that changes nothing is invalid. A line of up to four cells is one
//! table look-up; all four moves of a board share one transpose.

use super::board::{cell, MAX_EXP};
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

/// Line tables for one line length: for every packed line, its slide toward index 0
/// (`toward0`) and toward the last index (`toward_end`), with rewards.
struct LineTable {
    toward0: Vec<u16>,
    toward0_reward: Vec<u32>,
    toward_end: Vec<u16>,
    toward_end_reward: Vec<u32>,
}

impl LineTable {
    fn new(len: usize) -> LineTable {
        let size = 1usize << (4 * len);
        let mut t = LineTable {
            toward0: vec![0; size],
            toward0_reward: vec![0; size],
            toward_end: vec![0; size],
            toward_end_reward: vec![0; size],
        };
        let mut buf = [0u8; MAX_TABLE_LINE];
        for packed in 0..size {
            let line = &mut buf[..len];
            for (j, v) in line.iter_mut().enumerate() {
                *v = ((packed >> (4 * j)) & 0xF) as u8;
            }
            if has_pair(line, MAX_EXP) {
                // Two 2^15 tiles would merge past what a nibble holds. Such lines are not
                // reachable on boards we can solve; leave them unchanged (the move is invalid).
                t.toward0[packed] = packed as u16;
                t.toward_end[packed] = packed as u16;
                continue;
            }
            let mut l0 = [0u8; MAX_TABLE_LINE];
            l0[..len].copy_from_slice(line);
            let r0 = slide_line(&mut l0[..len]);
            t.toward0[packed] = pack(&l0[..len]) as u16;
            t.toward0_reward[packed] = r0;
            let mut l1 = [0u8; MAX_TABLE_LINE];
            for j in 0..len {
                l1[j] = line[len - 1 - j];
            }
            let r1 = slide_line(&mut l1[..len]);
            l1[..len].reverse();
            t.toward_end[packed] = pack(&l1[..len]) as u16;
            t.toward_end_reward[packed] = r1;
        }
        t
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

/// The rules for one shape: move tables and helpers. Cheap to share across threads.
pub struct Rules {
    shape: Shape,
    rows_table: Option<LineTable>,
    cols_table: Option<LineTable>,
    row_mask: u64,
    transpose: Option<Transpose>,
}

/// Per-row tables that transpose a code (R×C → C×R) and back, so that a column move is a row
/// move of the transposed code: R + C look-ups instead of gathering nibbles one by one.
struct Transpose {
    /// `fwd[(r << 4C) | row]`: the transposed contribution of row `r` of the original.
    fwd: Vec<u64>,
    /// `back[(c << 4R) | row]`: the original contribution of row `c` of the transposed code.
    back: Vec<u64>,
}

impl Transpose {
    fn new(shape: Shape) -> Transpose {
        let (rows, cols) = (shape.rows(), shape.cols());
        let mut fwd = vec![0u64; rows << (4 * cols)];
        for r in 0..rows {
            for line in 0..1usize << (4 * cols) {
                let mut out = 0u64;
                for c in 0..cols {
                    out |= (((line >> (4 * c)) & 0xF) as u64) << (4 * (c * rows + r));
                }
                fwd[(r << (4 * cols)) | line] = out;
            }
        }
        let mut back = vec![0u64; cols << (4 * rows)];
        for c in 0..cols {
            for line in 0..1usize << (4 * rows) {
                let mut out = 0u64;
                for r in 0..rows {
                    out |= (((line >> (4 * r)) & 0xF) as u64) << (4 * (r * cols + c));
                }
                back[(c << (4 * rows)) | line] = out;
            }
        }
        Transpose { fwd, back }
    }
}

/// Slides every line of a code made of `n` lines of `len` nibbles.
#[inline(always)]
fn slide_lines(t: &LineTable, code: u64, n: usize, len: usize, toward0: bool) -> (u64, u32) {
    let (res, rew) = if toward0 {
        (&t.toward0, &t.toward0_reward)
    } else {
        (&t.toward_end, &t.toward_end_reward)
    };
    let mask = (1u64 << (4 * len)) - 1;
    let mut out = 0u64;
    let mut reward = 0u32;
    for i in 0..n {
        let shift = 4 * len * i;
        let line = ((code >> shift) & mask) as usize;
        out |= u64::from(res[line]) << shift;
        reward += rew[line];
    }
    (out, reward)
}

impl Rules {
    pub fn new(shape: Shape) -> Rules {
        let rows_table = (shape.cols() <= MAX_TABLE_LINE).then(|| LineTable::new(shape.cols()));
        let cols_table = if shape.rows() == shape.cols() {
            None // same length: share the row table (see `col_table`)
        } else {
            (shape.rows() <= MAX_TABLE_LINE).then(|| LineTable::new(shape.rows()))
        };
        let transpose = (shape.rows() <= MAX_TABLE_LINE && shape.cols() <= MAX_TABLE_LINE)
            .then(|| Transpose::new(shape));
        Rules {
            shape,
            rows_table,
            cols_table,
            row_mask: (1u64 << (4 * shape.cols())) - 1,
            transpose,
        }
    }

    #[inline(always)]
    fn transposed(&self, t: &Transpose, code: u64) -> u64 {
        let cols = self.shape.cols();
        (0..self.shape.rows()).fold(0u64, |acc, r| {
            let line = ((code >> (4 * cols * r)) & self.row_mask) as usize;
            acc | t.fwd[(r << (4 * cols)) | line]
        })
    }

    #[inline(always)]
    fn untransposed(&self, t: &Transpose, code: u64) -> u64 {
        let rows = self.shape.rows();
        let mask = (1u64 << (4 * rows)) - 1;
        (0..self.shape.cols()).fold(0u64, |acc, c| {
            let line = ((code >> (4 * rows * c)) & mask) as usize;
            acc | t.back[(c << (4 * rows)) | line]
        })
    }

    /// All four moves at once (L, R, U, D), sharing one transpose for U and D.
    #[inline]
    pub fn moves(&self, code: u64) -> [Option<(u64, u32)>; 4] {
        let (Some(rt), Some(ct), Some(tr)) = (&self.rows_table, self.col_table(), &self.transpose)
        else {
            return Dir::ALL.map(|d| self.apply(code, d));
        };
        let (rows, cols) = (self.shape.rows(), self.shape.cols());
        let l = slide_lines(rt, code, rows, cols, true);
        let r = slide_lines(rt, code, rows, cols, false);
        let t = self.transposed(tr, code);
        let u = slide_lines(ct, t, cols, rows, true);
        let d = slide_lines(ct, t, cols, rows, false);
        let valid = |(a, rw): (u64, u32), before: u64| (a != before).then_some((a, rw));
        [
            valid(l, code),
            valid(r, code),
            valid(u, t).map(|(a, rw)| (self.untransposed(tr, a), rw)),
            valid(d, t).map(|(a, rw)| (self.untransposed(tr, a), rw)),
        ]
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
                let (res, rew) = if toward0 {
                    (&t.toward0, &t.toward0_reward)
                } else {
                    (&t.toward_end, &t.toward_end_reward)
                };
                for r in 0..self.shape.rows() {
                    let shift = 4 * cols * r;
                    let line = ((code >> shift) & self.row_mask) as usize;
                    out |= u64::from(res[line]) << shift;
                    reward += rew[line];
                }
            }
            None => {
                for r in 0..self.shape.rows() {
                    let idx: Vec<usize> = (0..cols).map(|c| r * cols + c).collect();
                    reward += slide_cells(code, &mut out, &idx, toward0);
                }
            }
        }
        (out, reward)
    }

    #[inline]
    fn move_cols(&self, code: u64, toward0: bool) -> (u64, u32) {
        let (rows, cols) = (self.shape.rows(), self.shape.cols());
        if let (Some(ct), Some(tr)) = (self.col_table(), &self.transpose) {
            let (a, reward) = slide_lines(ct, self.transposed(tr, code), cols, rows, toward0);
            return (self.untransposed(tr, a), reward);
        }
        let mut out = 0u64;
        let mut reward = 0u32;
        match self.col_table() {
            Some(t) => {
                let (res, rew) = if toward0 {
                    (&t.toward0, &t.toward0_reward)
                } else {
                    (&t.toward_end, &t.toward_end_reward)
                };
                for c in 0..cols {
                    let mut line = 0usize;
                    for r in 0..rows {
                        line |= (((code >> (4 * (r * cols + c))) & 0xF) as usize) << (4 * r);
                    }
                    let moved = u64::from(res[line]);
                    reward += rew[line];
                    for r in 0..rows {
                        out |= ((moved >> (4 * r)) & 0xF) << (4 * (r * cols + c));
                    }
                }
            }
            None => {
                for c in 0..cols {
                    let idx: Vec<usize> = (0..rows).map(|r| r * cols + c).collect();
                    reward += slide_cells(code, &mut out, &idx, toward0);
                }
            }
        }
        (out, reward)
    }

    /// True when no move is valid.
    pub fn is_terminal(&self, code: u64) -> bool {
        self.moves(code).iter().all(Option::is_none)
    }

    /// Empty cell indices of a board.
    pub fn empty_cells(&self, code: u64) -> impl Iterator<Item = usize> + '_ {
        (0..self.shape.cells()).filter(move |&i| cell(code, i) == 0)
    }
}

/// Slow path for lines longer than the tables: slide the cells at `idx` (ordered from the side
/// toward which tiles move when `toward0`) and write them into `out`.
fn slide_cells(code: u64, out: &mut u64, idx: &[usize], toward0: bool) -> u32 {
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
