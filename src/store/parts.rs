//! Which part of a distributed solve holds a board ([`Parts`]): a solve run by N processes
//! (`mpirun -np N age2048 solve`) writes each age as N parts, part R holding the states and
//! afterstates process R owns, and the owner of an id is a function of the id alone, the same
//! in every process and for every reader (who opens the one part a look-up needs).
//!
//! Two schemes: `hash` (a mix of the id's bits: the parts are even, and a successor lands on
//! any part alike) and `sums` (a mix of the board's line sums — the sorted row sums or the
//! sorted column sums, whichever is smaller, so that the key is the same for every image of
//! the board: a move left or right keeps the row sums, up or down the column sums, so some of
//! a state's afterstates stay with their state's owner).

use serde::{Deserialize, Serialize};

use crate::rules::{board, Shape};

/// How ids are split into parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    #[default]
    Hash,
    Sums,
}

impl Scheme {
    pub fn parse(s: &str) -> Option<Scheme> {
        match s {
            "hash" => Some(Scheme::Hash),
            "sums" => Some(Scheme::Sums),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scheme::Hash => "hash",
            Scheme::Sums => "sums",
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

    /// The part holding board `id` of shape `shape`.
    #[inline]
    pub fn of(&self, id: u64, shape: Shape) -> u32 {
        if self.count <= 1 {
            return 0;
        }
        let key = match self.scheme {
            Scheme::Hash => id,
            Scheme::Sums => line_sums_key(id, shape),
        };
        ((u128::from(mix(key)) * u128::from(self.count)) >> 64) as u32
    }
}

/// The smaller of the board's sorted row sums and sorted column sums, packed: the same for
/// every image of the board under the symmetry group (a reflection reorders rows or columns,
/// a transpose swaps them).
fn line_sums_key(id: u64, shape: Shape) -> u64 {
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
        // A rectangle is never transposed: its row sums are its own.
        pack(&r)
    }
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
