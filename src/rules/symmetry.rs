//! Symmetry normalisation: the canonical id of a board is the smallest code among its images
//! under the board's symmetry group.
//!
//! The game is invariant under the symmetries of the board: mirrored or turned, a board has
//! the same value and its moves map onto each other. On a square board that is the dihedral
//! group of order 8; on a rectangle it is the 4-element group {identity, left-right mirror,
//! up-down mirror, 180° turn} (the *flips*). Counting normalised boards under a smaller group
//! (`flips` on a square board, or `none`) reproduces other published counts.
//!
//! Images are built from per-row tables (a mirrored row is one look-up, a transposed row is one
//! look-up of its contribution), so normalising a 3x3 board costs about twenty table reads.

use super::board::cell;
use super::error::BoardError;
use super::shape::Shape;

/// Which symmetry group identifies boards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// All symmetries of the board: 8 on a square board, 4 on a rectangle.
    Full,
    /// Left-right mirror, up-down mirror and 180° turn (4 elements) on any board.
    Flips,
    /// Identity only: every board is its own id.
    None,
}

impl Group {
    pub fn parse(text: &str) -> Result<Group, BoardError> {
        match text {
            "full" => Ok(Group::Full),
            "flips" => Ok(Group::Flips),
            "none" => Ok(Group::None),
            _ => Err(BoardError::Symmetry(text.to_string())),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Group::Full => "full",
            Group::Flips => "flips",
            Group::None => "none",
        }
    }
}

/// Normaliser for one shape and group.
pub struct Symmetry {
    shape: Shape,
    group: Group,
    /// Mirrored row, by packed row (present when rows have at most 4 cells).
    mirror_row: Vec<u16>,
    /// Contribution of row r to the transpose, `transpose_row[r << (4C) | row]` (square ≤ 4).
    transpose_row: Vec<u64>,
    /// Cell permutations of every group element, for the generic path.
    perms: Vec<Vec<u8>>,
    row_bits: usize,
    row_mask: u64,
    fast: bool,
}

impl Symmetry {
    pub fn new(shape: Shape, group: Group) -> Symmetry {
        let (rows, cols) = (shape.rows(), shape.cols());
        let fast = cols <= 4;
        let row_bits = 4 * cols;
        let row_mask = (1u64 << row_bits) - 1;
        let mut mirror_row = Vec::new();
        let mut transpose_row = Vec::new();
        if fast {
            mirror_row = (0..1usize << row_bits)
                .map(|line| {
                    (0..cols).fold(0u16, |acc, c| {
                        acc | ((((line >> (4 * c)) & 0xF) as u16) << (4 * (cols - 1 - c)))
                    })
                })
                .collect();
            if shape.is_square() && group == Group::Full {
                transpose_row = vec![0u64; rows << row_bits];
                for r in 0..rows {
                    for line in 0..1usize << row_bits {
                        let mut out = 0u64;
                        for c in 0..cols {
                            let e = ((line >> (4 * c)) & 0xF) as u64;
                            // cell (r, c) goes to (c, r)
                            out |= e << (4 * (c * cols + r));
                        }
                        transpose_row[(r << row_bits) | line] = out;
                    }
                }
            }
        }
        let perms = group_perms(shape, group);
        Symmetry {
            shape,
            group,
            mirror_row,
            transpose_row,
            perms,
            row_bits,
            row_mask,
            fast,
        }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }
    pub fn group(&self) -> Group {
        self.group
    }
    /// Number of elements of the group.
    pub fn order(&self) -> usize {
        self.perms.len()
    }

    #[inline(always)]
    fn mirror_lr(&self, code: u64) -> u64 {
        let mut out = 0u64;
        for r in 0..self.shape.rows() {
            let shift = r * self.row_bits;
            let line = ((code >> shift) & self.row_mask) as usize;
            out |= u64::from(self.mirror_row[line]) << shift;
        }
        out
    }

    #[inline(always)]
    fn mirror_ud(&self, code: u64) -> u64 {
        let rows = self.shape.rows();
        let mut out = 0u64;
        for r in 0..rows {
            let line = (code >> (r * self.row_bits)) & self.row_mask;
            out |= line << ((rows - 1 - r) * self.row_bits);
        }
        out
    }

    #[inline(always)]
    fn transpose(&self, code: u64) -> u64 {
        let mut out = 0u64;
        for r in 0..self.shape.rows() {
            let line = ((code >> (r * self.row_bits)) & self.row_mask) as usize;
            out |= self.transpose_row[(r << self.row_bits) | line];
        }
        out
    }

    /// The canonical id: the smallest code among the images of `code` under the group.
    /// Equal for all symmetric boards (the invariant every layer relies on).
    #[inline]
    pub fn canon(&self, code: u64) -> u64 {
        if self.group == Group::None {
            return code;
        }
        if !self.fast {
            return self.images_generic(code).min().unwrap_or(code);
        }
        let h = self.mirror_lr(code);
        let v = self.mirror_ud(code);
        let hv = self.mirror_ud(h);
        let mut m = code.min(h).min(v).min(hv);
        if !self.transpose_row.is_empty() {
            let t = self.transpose(code);
            let th = self.mirror_lr(t);
            let tv = self.mirror_ud(t);
            let thv = self.mirror_ud(th);
            m = m.min(t).min(th).min(tv).min(thv);
        }
        m
    }

    fn images_generic(&self, code: u64) -> impl Iterator<Item = u64> + '_ {
        self.perms.iter().map(move |p| apply_perm(code, p))
    }

    /// All images of `code` under the group (with repeats for symmetric boards).
    pub fn images(&self, code: u64) -> Vec<u64> {
        self.images_generic(code).collect()
    }
}

fn apply_perm(code: u64, perm: &[u8]) -> u64 {
    perm.iter().enumerate().fold(0u64, |acc, (i, &src)| {
        acc | (u64::from(cell(code, src as usize)) << (4 * i))
    })
}

/// Each group element as "destination cell i takes the tile of source cell perm[i]".
fn group_perms(shape: Shape, group: Group) -> Vec<Vec<u8>> {
    let (rows, cols) = (shape.rows(), shape.cols());
    let idx = |r: usize, c: usize| (r * cols + c) as u8;
    let make = |f: &dyn Fn(usize, usize) -> (usize, usize)| -> Vec<u8> {
        (0..rows * cols)
            .map(|i| {
                let (r, c) = f(i / cols, i % cols);
                idx(r, c)
            })
            .collect()
    };
    let mut perms = vec![make(&|r, c| (r, c))];
    if group == Group::None {
        return perms;
    }
    perms.push(make(&|r, c| (r, cols - 1 - c)));
    perms.push(make(&|r, c| (rows - 1 - r, c)));
    perms.push(make(&|r, c| (rows - 1 - r, cols - 1 - c)));
    if group == Group::Full && shape.is_square() {
        let n = rows;
        perms.push(make(&|r, c| (c, r)));
        perms.push(make(&|r, c| (n - 1 - c, r)));
        perms.push(make(&|r, c| (c, n - 1 - r)));
        perms.push(make(&|r, c| (n - 1 - c, n - 1 - r)));
    }
    perms
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn random_board(rng: &mut impl Rng, cells: usize) -> u64 {
        (0..cells).fold(0u64, |acc, i| acc | ((rng.gen_range(0..12u64)) << (4 * i)))
    }

    #[test]
    fn canon_is_min_over_generic_images_and_same_for_all_symmetric_boards() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for (r, c) in [
            (2, 2),
            (2, 3),
            (3, 2),
            (3, 3),
            (2, 4),
            (4, 2),
            (3, 4),
            (4, 3),
            (4, 4),
            (1, 6),
            (2, 5),
        ] {
            let shape = Shape::new(r, c).unwrap();
            for group in [Group::Full, Group::Flips, Group::None] {
                let sym = Symmetry::new(shape, group);
                let expect_order = match group {
                    Group::None => 1,
                    Group::Full if shape.is_square() => 8,
                    _ => 4,
                };
                assert_eq!(sym.order(), expect_order);
                for _ in 0..2000 {
                    let b = random_board(&mut rng, shape.cells());
                    let images = sym.images(b);
                    let id = sym.canon(b);
                    assert_eq!(id, *images.iter().min().unwrap(), "{shape} {group:?}");
                    for &img in &images {
                        assert_eq!(
                            sym.canon(img),
                            id,
                            "{shape} {group:?}: symmetric boards differ"
                        );
                    }
                }
            }
        }
    }
}
