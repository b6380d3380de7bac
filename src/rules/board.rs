//! Board codes and board text.
//!
//! A board is a `u64` *code*, four bits a cell: cell `(r, c)` has index `i = r·C + c` and its
//! tile exponent `e` (tile `2^e`, `0` = empty) sits in bits `[4i, 4i + 4)`. The *age* of a board
//! is the sum of its tiles. Board text has rows separated by `/`, cells by spaces, `0` or `.`
//! for empty.

use super::error::BoardError;
use super::shape::Shape;
use crate::bits::{byte_max, max_byte, LOW};

/// Largest tile exponent a nibble can hold.
pub const MAX_EXP: u8 = 15;
/// Longest board text accepted (a 4x4 board of 32768 tiles takes under 100 characters).
pub const MAX_TEXT_LEN: usize = 1024;

/// Exponent of the cell with index `i`.
#[inline(always)]
pub fn cell(code: u64, i: usize) -> u8 {
    ((code >> (4 * i)) & 0xF) as u8
}

/// Sum of tiles: invariant under moves, +2 or +4 under a spawn.
#[inline]
pub fn age(code: u64) -> u32 {
    let mut c = code;
    let mut sum = 0u32;
    while c != 0 {
        let e = (c & 0xF) as u32;
        if e != 0 {
            sum += 1 << e;
        }
        c >>= 4;
    }
    sum
}

/// Largest exponent on the board (0 for an empty board).
///
/// Without a loop or a branch: the nibbles are spread into the bytes of two words, whose
/// bytes are then folded pairwise by [`byte_max`] (sixteen lanes, then eight, four, two, one).
/// A loop over the nibbles ended on a branch that the number of occupied nibbles decides, and
/// a goal solve asks this of every board it values (is the goal tile on it?).
#[inline]
pub fn max_exp(code: u64) -> u8 {
    max_byte(byte_max(code & LOW, (code >> 4) & LOW))
}

/// Bit `4i` set for every occupied cell `i`: a nibble is non-zero iff one of its four bits is
/// set, so the bits are folded onto the nibble's lowest.
#[inline(always)]
fn occupied_mask(code: u64) -> u64 {
    let x = code | (code >> 1);
    (x | (x >> 2)) & 0x1111_1111_1111_1111
}

/// Number of empty cells among the first `cells`.
///
/// The occupied cells' bits (one a nibble) are summed a byte at a time, then the bytes by a
/// multiplication: four instructions where `count_ones` is a dozen on a processor the build
/// may not assume the `popcnt` instruction of.
#[inline]
pub fn count_empty(code: u64, cells: usize) -> u32 {
    let m = occupied_mask(code);
    // Each byte's low nibble: its two cells' bits (at most 2, no carry).
    let bytes = (m + (m >> 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    // At most 16 in the top byte: no carry out of any byte.
    cells as u32 - (bytes.wrapping_mul(0x0101_0101_0101_0101) >> 56) as u32
}

/// The empty cells of a board of `cells` cells, in increasing order, from a mask of their
/// nibbles (no branch per occupied cell).
#[inline(always)]
pub fn empty_cells(code: u64, cells: usize) -> EmptyCells {
    let all = if cells >= 16 {
        0x1111_1111_1111_1111
    } else {
        0x1111_1111_1111_1111 & ((1u64 << (4 * cells)) - 1)
    };
    EmptyCells(!occupied_mask(code) & all)
}

/// Iterator of [`empty_cells`]: bit `4i` of the mask is set while cell `i` is still to come.
#[derive(Clone, Copy, Debug)]
pub struct EmptyCells(u64);

impl Iterator for EmptyCells {
    type Item = usize;
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize / 4;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// Holds the shift groups of the transpose of an R×C code (cell `(r, c)` at nibble `r·C + c`)
/// into a C×R code (cell `(c, r)` at nibble `c·R + r`): cell `(r, c)` moves by
/// `c·R + r − r·C − c` nibbles, and the cells that move by the same distance move together, one
/// mask and one shift (7 groups on 4×4, 5 on 3×3, 11 on 4×3).
struct Transpose<const R: usize, const C: usize>;

impl<const R: usize, const C: usize> Transpose<R, C> {
    /// `(masks, shifts in nibbles, number of groups)`.
    const GROUPS: ([u64; 32], [i32; 32], usize) = transpose_groups(R, C);
}

/// An R×C code as the C×R code of its transpose, bit-parallel (`Transpose`): on a square
/// board one of its symmetries; for the moves, a column move is a row move of the transpose.
#[inline(always)]
pub fn transpose<const R: usize, const C: usize>(x: u64) -> u64 {
    let (masks, shifts, n) = Transpose::<R, C>::GROUPS;
    let mut out = 0u64;
    let mut g = 0;
    while g < n {
        let part = x & masks[g];
        let s = shifts[g];
        out |= if s >= 0 {
            part << (4 * s)
        } else {
            part >> (-4 * s)
        };
        g += 1;
    }
    out
}

/// The shift groups of [`transpose`], computed at compile time.
const fn transpose_groups(rows: usize, cols: usize) -> ([u64; 32], [i32; 32], usize) {
    // Distances lie in (−16, 16): bucket the cells by distance + 16.
    let mut by_shift = [0u64; 32];
    let mut r = 0;
    while r < rows {
        let mut c = 0;
        while c < cols {
            let d = (c * rows + r) as i32 - (r * cols + c) as i32;
            by_shift[(d + 16) as usize] |= 0xF << (4 * (r * cols + c));
            c += 1;
        }
        r += 1;
    }
    let mut masks = [0u64; 32];
    let mut shifts = [0i32; 32];
    let mut n = 0;
    let mut i = 0;
    while i < 32 {
        if by_shift[i] != 0 {
            masks[n] = by_shift[i];
            shifts[n] = i as i32 - 16;
            n += 1;
        }
        i += 1;
    }
    (masks, shifts, n)
}

/// Places exponent `e` in cell `i` (which must be empty).
#[inline(always)]
pub fn place(code: u64, i: usize, e: u8) -> u64 {
    debug_assert_eq!(cell(code, i), 0, "spawn into an occupied cell");
    code | (u64::from(e) << (4 * i))
}

/// Parses board text: rows separated by `/`, cells by white space, `0` or `.` for empty,
/// tiles as numbers (`2`, `4`, …, `32768`).
/// Text longer than [`MAX_TEXT_LEN`] bytes is refused before it is read (and shown shortened
/// in the error).
pub fn parse_board(text: &str, shape: Shape) -> Result<u64, BoardError> {
    if text.len() > MAX_TEXT_LEN {
        let head: String = text.chars().take(40).collect();
        return Err(BoardError::Parse {
            text: format!("{}…", head.escape_debug()),
            reason: format!(
                "{} bytes of board text, more than the {MAX_TEXT_LEN} a board can take",
                text.len()
            ),
        });
    }
    let bad = |reason: String| BoardError::Parse {
        text: text.to_string(),
        reason,
    };
    let rows: Vec<&str> = text.trim().split('/').collect();
    if rows.len() != shape.rows() {
        return Err(bad(format!(
            "expected {} rows separated by '/', found {}",
            shape.rows(),
            rows.len()
        )));
    }
    let mut code = 0u64;
    for (r, row) in rows.iter().enumerate() {
        let cells: Vec<&str> = row.split_whitespace().collect();
        if cells.len() != shape.cols() {
            return Err(bad(format!(
                "row {} has {} cells, expected {}",
                r + 1,
                cells.len(),
                shape.cols()
            )));
        }
        for (c, tok) in cells.iter().enumerate() {
            let e = parse_tile(tok)
                .map_err(|reason| bad(format!("row {}, column {}: {reason}", r + 1, c + 1)))?;
            code |= u64::from(e) << (4 * (r * shape.cols() + c));
        }
    }
    Ok(code)
}

fn parse_tile(tok: &str) -> Result<u8, String> {
    if tok == "." || tok == "0" {
        return Ok(0);
    }
    let v: u64 = tok.parse().map_err(|_| {
        format!("'{tok}' is not a tile (use a power of two ≥ 2, or 0 or . for empty)")
    })?;
    if v < 2 || !v.is_power_of_two() {
        return Err(format!("{v} is not a power of two ≥ 2"));
    }
    let e = v.trailing_zeros();
    if e > u32::from(MAX_EXP) {
        return Err(format!(
            "{v} is larger than the largest tile a board can hold (32768)"
        ));
    }
    Ok(e as u8)
}

/// Formats a board as text in the same syntax `parse_board` reads (`.` for empty).
pub fn format_board(code: u64, shape: Shape) -> String {
    let mut s = String::new();
    for r in 0..shape.rows() {
        if r > 0 {
            s.push('/');
        }
        for c in 0..shape.cols() {
            if c > 0 {
                s.push(' ');
            }
            match cell(code, r * shape.cols() + c) {
                0 => s.push('.'),
                e => s.push_str(&(1u32 << e).to_string()),
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Shape;

    #[test]
    fn empty_cells_are_the_zero_nibbles_in_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        for cells in 1..=16 {
            for _ in 0..500 {
                let code =
                    (0..cells).fold(0u64, |acc, i| acc | (rng.gen_range(0..3u64) << (4 * i)));
                let expect: Vec<usize> = (0..cells).filter(|&i| cell(code, i) == 0).collect();
                assert_eq!(
                    empty_cells(code, cells).collect::<Vec<_>>(),
                    expect,
                    "{code:x}"
                );
                assert_eq!(expect.len() as u32, count_empty(code, cells));
            }
        }
        // A full 16-cell board's bits above the last nibble do not exist.
        assert_eq!(empty_cells(0, 16).count(), 16);
        assert_eq!(empty_cells(u64::MAX, 16).count(), 0);
        // The counts at both ends: a full board of 16 (the byte sums' largest), an empty one.
        for full in [u64::MAX, 0x1111_1111_1111_1111, 0x8421_8421_8421_8421] {
            assert_eq!(count_empty(full, 16), 0, "{full:x}");
        }
        assert_eq!(count_empty(0, 16), 16);
        assert_eq!(count_empty(0x0F0F_0F0F_0F0F_0F0F, 16), 8);
    }

    #[test]
    fn max_exp_is_the_largest_nibble() {
        use rand::{Rng, SeedableRng};
        let naive = |code: u64| (0..16).map(|i| cell(code, i)).max().unwrap_or(0);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            // Few cells or many, small exponents or any: the largest nibble in any position.
            let cells = rng.gen_range(0..=16);
            let top = rng.gen_range(1..=16u64);
            let code = (0..cells).fold(0u64, |acc, _| {
                acc | (rng.gen_range(0..top) << (4 * rng.gen_range(0..16)))
            });
            assert_eq!(max_exp(code), naive(code), "{code:016x}");
        }
        for e in 0..16u64 {
            for i in 0..16 {
                assert_eq!(max_exp(e << (4 * i)), e as u8);
                assert_eq!(max_exp(u64::MAX ^ (15 << (4 * i)) | (e << (4 * i))), 15);
            }
        }
    }

    #[test]
    fn board_text_errors_name_the_problem() {
        let s = Shape::new(2, 2).unwrap();
        assert!(parse_board("2 2/2", s)
            .unwrap_err()
            .to_string()
            .contains("row 2 has 1 cells"));
        assert!(parse_board("2 3/2 2", s)
            .unwrap_err()
            .to_string()
            .contains("3 is not a power of two"));
        assert!(parse_board("2 2", s)
            .unwrap_err()
            .to_string()
            .contains("expected 2 rows"));
        assert!(parse_board("2 x/. .", s)
            .unwrap_err()
            .to_string()
            .contains("'x' is not a tile"));
        let long = "2 ".repeat(MAX_TEXT_LEN);
        let e = parse_board(&long, s).unwrap_err().to_string();
        assert!(e.contains("more than the 1024"), "{e}");
        assert!(e.len() < 200, "the error repeats the whole text: {e}");
        assert!(Shape::parse("5x4").is_err());
        assert!(Shape::parse("3by3").is_err());
        assert_eq!(Shape::parse("2x3").unwrap().cells(), 6);
    }
}
