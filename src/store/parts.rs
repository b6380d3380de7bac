//! Which part of a distributed solve holds a board ([`Parts`]): a solve run by N processes
//! (`mpirun -np N age2048 solve`) writes each age as N parts, part R holding the states and
//! afterstates process R owns, and the owner of an id is a function of the id alone, the same
//! in every process and for every reader (who opens the one part a look-up needs).
//!
//! Three schemes:
//! - `hash`: a mix of the id's bits. The parts are even, and a successor lands on any part
//!   alike.
//! - `sums`: a mix of the board's line sums (the sorted row sums or the sorted column sums,
//!   whichever is smaller, so that the key is the same for every image of the board). A move
//!   left or right keeps the row sums, up or down the column sums, so some of a state's
//!   afterstates stay with their state's owner.
//! - `tiles`: a mix of where the board's tiles of 8 and more stand, up to symmetry (the
//!   canonical form of the board with its 2s and 4s taken off). A spawn puts a 2 or a 4 in an
//!   empty cell and keeps them, so **every spawn child is owned by its afterstate's owner**:
//!   only the moves cross parts. Boards without such a tile (the smallest ages) all fall in
//!   one part.

use serde::{Deserialize, Serialize};

use std::sync::OnceLock;

use crate::rules::symmetry::Images;
use crate::rules::{board, Group, Shape, Symmetry};

/// How ids are split into parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    #[default]
    Hash,
    Sums,
    Tiles,
}

impl Scheme {
    pub fn parse(s: &str) -> Option<Scheme> {
        match s {
            "hash" => Some(Scheme::Hash),
            "sums" => Some(Scheme::Sums),
            "tiles" => Some(Scheme::Tiles),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scheme::Hash => "hash",
            Scheme::Sums => "sums",
            Scheme::Tiles => "tiles",
        }
    }
}

/// The parts of a solve: how many, and by which scheme (one part: a single-process solve).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parts {
    pub count: u32,
    pub scheme: Scheme,
}

impl Default for Parts {
    fn default() -> Parts {
        Parts::ONE
    }
}

/// SplitMix64's finaliser: every bit of the input moves every bit of the output.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Parts {
    /// A single-process solve.
    pub const ONE: Parts = Parts {
        count: 1,
        scheme: Scheme::Hash,
    };

    pub fn is_one(&self) -> bool {
        self.count <= 1
    }

    /// The part of the board whose images (under the solve's group) are `images`: [`Parts::of`]
    /// its canonical id, without computing the images again where the scheme needs them (the
    /// `tiles` key under the full group).
    #[inline]
    pub fn of_images(&self, images: &Images, shape: Shape) -> u32 {
        if self.scheme == Scheme::Tiles && self.count > 1 && images.order() == full_order(shape) {
            return self.part_of_key(images.min_of(big_tiles));
        }
        self.of(images.min(), shape)
    }

    #[inline]
    fn part_of_key(&self, key: u64) -> u32 {
        ((u128::from(mix(key)) * u128::from(self.count)) >> 64) as u32
    }

    /// Whether every spawn child is in its afterstate's part (one part, or `tiles`).
    pub fn spawns_stay_home(&self) -> bool {
        self.is_one() || self.scheme == Scheme::Tiles
    }

    /// The part holding board `id` of shape `shape`.
    #[inline]
    pub fn of(&self, id: u64, shape: Shape) -> u32 {
        if self.count <= 1 {
            return 0;
        }
        let key = match self.scheme {
            Scheme::Hash => id,
            Scheme::Sums => line_sums_key(id, shape),
            Scheme::Tiles => big_tiles_key(id, shape),
        };
        self.part_of_key(key)
    }
}

/// The smaller of the board's sorted row sums and sorted column sums, packed: the same for
/// every image of the board under the symmetry group (a reflection reorders rows or columns,
/// a transpose swaps them).
///
/// Called for every board a solve over several processes routes or looks up, so the sums are
/// made in arrays on the stack (a side is at most 16 cells), not in two vectors a call.
fn line_sums_key(id: u64, shape: Shape) -> u64 {
    let (rows, cols) = (shape.rows(), shape.cols());
    let (mut r, mut c) = ([0u64; 16], [0u64; 16]);
    let (r, c) = (&mut r[..rows], &mut c[..cols]);
    for (y, row) in r.iter_mut().enumerate() {
        for (x, col) in c.iter_mut().enumerate() {
            // The tile's value, 0 for an empty cell (exponent 0: bit 0, cleared).
            let v = (1u64 << board::cell(id, y * cols + x)) & !1;
            *row += v;
            *col += v;
        }
    }
    r.sort_unstable();
    c.sort_unstable();
    let pack = |v: &[u64]| v.iter().fold(0u64, |h, &s| mix(h ^ s));
    if rows == cols {
        pack(r).min(pack(c))
    } else {
        // A rectangle is never transposed: its row sums are its own.
        pack(r)
    }
}

/// The board's tiles of 8 and more where they stand, up to symmetry: the board with its 2s and
/// 4s (exponents 1 and 2) taken off, normalised under the shape's full group (so the key is
/// the same for every image, under any group a solve uses, which is a subgroup of it).
fn big_tiles_key(id: u64, shape: Shape) -> u64 {
    full_symmetry(shape).canon(big_tiles(id))
}

/// `code` with its 2s and 4s (exponents 1 and 2) taken off, cell by cell.
#[inline(always)]
fn big_tiles(code: u64) -> u64 {
    const LOW: u64 = 0x1111_1111_1111_1111;
    // A nibble's exponent is 3 or more: bit 3 or bit 2 set, or bits 1 and 0 both.
    let keep = ((code >> 3) | (code >> 2) | ((code >> 1) & code)) & LOW;
    code & (keep * 0xf)
}

/// The order of `shape`'s full symmetry group: 8 on a square, 4 on a rectangle.
fn full_order(shape: Shape) -> usize {
    if shape.is_square() {
        8
    } else {
        4
    }
}

/// The full group's normaliser of `shape`, made once a shape.
fn full_symmetry(shape: Shape) -> &'static Symmetry {
    const SIDES: usize = 17;
    static MADE: [OnceLock<Symmetry>; SIDES * SIDES] = [const { OnceLock::new() }; SIDES * SIDES];
    MADE[shape.rows() * SIDES + shape.cols()].get_or_init(|| Symmetry::new(shape, Group::Full))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Game, Group};

    #[test]
    fn a_board_and_its_images_share_their_part() {
        for (shape, group) in [
            (Shape::new(3, 3).unwrap(), Group::Full),
            (Shape::new(2, 4).unwrap(), Group::Full),
        ] {
            let game = Game::new(shape, group);
            let mut x = 0x1234_5678_9abc_def1u64;
            for _ in 0..2000 {
                x = mix(x);
                let code = x & shape.mask() & 0x3333_3333_3333_3333;
                for count in [2u32, 3, 7] {
                    let parts = Parts {
                        count,
                        scheme: Scheme::Sums,
                    };
                    let id = game.canon(code);
                    assert_eq!(parts.of(id, shape), parts.of(code, shape));
                    assert!(parts.of(id, shape) < count);
                    let hash = Parts {
                        count,
                        scheme: Scheme::Hash,
                    };
                    assert!(hash.of(id, shape) < count);
                }
            }
        }
        assert_eq!(Parts::ONE.of(12345, Shape::new(3, 3).unwrap()), 0);
    }

    #[test]
    fn by_tiles_a_spawn_child_and_every_image_share_their_part() {
        for (shape, group) in [
            (Shape::new(4, 4).unwrap(), Group::Full),
            (Shape::new(3, 4).unwrap(), Group::Full),
            (Shape::new(3, 3).unwrap(), Group::Flips),
            (Shape::new(2, 8).unwrap(), Group::Full),
        ] {
            let game = Game::new(shape, group);
            let parts = Parts {
                count: 5,
                scheme: Scheme::Tiles,
            };
            let mut seen = [0u32; 5];
            let mut x = 0x0fed_cba9_8765_4321u64;
            for _ in 0..3000 {
                x = mix(x);
                // Exponents 0 to 7, a quarter of the cells empty or so.
                let code = x & shape.mask() & 0x7777_7777_7777_7777;
                let a = game.canon(code);
                let part = parts.of(a, shape);
                seen[part as usize] += 1;
                for image in game.sym.images(a) {
                    assert_eq!(parts.of(image, shape), part);
                    if let Some(images) = game.sym.images_of(image) {
                        assert_eq!(parts.of_images(&images, shape), part);
                    }
                }
                for i in board::empty_cells(a, shape.cells()) {
                    for e in [1, 2] {
                        let child = game.canon(board::place(a, i, e));
                        assert_eq!(parts.of(child, shape), part, "{a:x} + {e} at {i}");
                    }
                }
                // A tile of 8 or more placed does move the key (the scheme is not constant).
                assert_ne!(big_tiles_key(a, shape), big_tiles_key(a | 0xf, shape));
            }
            assert!(seen.iter().all(|&n| n > 300), "{shape}: {seen:?}");
        }
    }

    /// The key as first written (two vectors of sums), against which the one on the stack
    /// is checked: a part is a function of it, so the files of a solve by sums depend on it.
    fn line_sums_key_naive(id: u64, shape: Shape) -> u64 {
        let (rows, cols) = (shape.rows(), shape.cols());
        let value = |i: usize| match board::cell(id, i) {
            0 => 0u64,
            e => 1u64 << e,
        };
        let mut r: Vec<u64> = (0..rows)
            .map(|y| (0..cols).map(|x| value(y * cols + x)).sum())
            .collect();
        let mut c: Vec<u64> = (0..cols)
            .map(|x| (0..rows).map(|y| value(y * cols + x)).sum())
            .collect();
        r.sort_unstable();
        c.sort_unstable();
        let pack = |v: &[u64]| v.iter().fold(0u64, |h, &s| mix(h ^ s));
        if rows == cols {
            pack(&r).min(pack(&c))
        } else {
            pack(&r)
        }
    }

    #[test]
    fn line_sums_key_is_the_naive_one_on_every_shape() {
        let mut x = 0x05ee_d0f5_u64;
        for rows in 1..=16 {
            for cols in 1..=16 / rows {
                let Ok(shape) = Shape::new(rows, cols) else {
                    continue;
                };
                for _ in 0..500 {
                    x = mix(x);
                    // Every exponent up to 15, empty cells among them.
                    let id = x & shape.mask();
                    assert_eq!(
                        line_sums_key(id, shape),
                        line_sums_key_naive(id, shape),
                        "{shape}: {id:x}"
                    );
                }
            }
        }
    }

    #[test]
    fn hash_parts_are_even() {
        let parts = Parts {
            count: 3,
            scheme: Scheme::Hash,
        };
        let shape = Shape::new(4, 4).unwrap();
        let mut n = [0u32; 3];
        for id in 0..30_000u64 {
            n[parts.of(id * 16, shape) as usize] += 1;
        }
        assert!(n.iter().all(|&c| (9_000..11_000).contains(&c)), "{n:?}");
    }
}
