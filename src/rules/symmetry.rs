//! Symmetry normalisation: the canonical id of a board is the smallest code among its images
//! under the board's symmetry group.
//!
//! The game is invariant under the symmetries of the board: mirrored or turned, a board has
//! the same value and its moves map onto each other. On a square board that is the dihedral
//! group of order 8; on a rectangle it is the 4-element group {identity, left-right mirror,
//! up-down mirror, 180° turn} (the *flips*). Counting normalised boards under a smaller group
//! (`flips` on a square board, or `none`) reproduces other published counts.
//!
//! For boards of up to 4×4 the images are computed bit-parallel, without tables: a mirror moves
//! whole columns or rows of nibbles with masks and shifts, a transpose moves each diagonal at
//! once ([`super::board::transpose`]). A spawn child is normalised from the images of its
//! afterstate (one OR and one minimum per image, [`Symmetry::spawn_canon`]). Wider boards use
//! the group's permutations.

use super::board::{cell, transpose};
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
    /// The elements of the full group whose bits are set (bit `k`: the `k`-th image of
    /// [`Symmetry::images`] under [`Group::Full`]; bit 0, the identity, always): the symmetries
    /// a restricted solve keeps ([`super::Restriction::group`]). Named by its elements,
    /// `keeps-id+lr` ([`ELEMENT_NAMES`]).
    Kept(u8),
}

/// The names of the full group's elements, in the order of its images: identity, left-right
/// mirror, up-down mirror, half turn, then (square boards) the main diagonal's mirror, the
/// quarter turn clockwise, the quarter turn anticlockwise, the other diagonal's mirror.
pub const ELEMENT_NAMES: [&str; 8] = [
    "id", "lr", "ud", "turn180", "diag", "turn90", "turn270", "antidiag",
];

const KEPT_PREFIX: &str = "keeps-";

impl Group {
    pub fn parse(text: &str) -> Result<Group, BoardError> {
        match text {
            "full" => Ok(Group::Full),
            "flips" => Ok(Group::Flips),
            "none" => Ok(Group::None),
            _ => text
                .strip_prefix(KEPT_PREFIX)
                .and_then(|list| {
                    list.split('+').try_fold(0u8, |m, name| {
                        let k = ELEMENT_NAMES.iter().position(|&n| n == name)?;
                        Some(m | (1 << k))
                    })
                })
                .filter(|m| m & 1 == 1)
                .map(Group::Kept)
                .ok_or_else(|| BoardError::Symmetry(text.to_string())),
        }
    }

    pub fn name(self) -> String {
        match self {
            Group::Full => "full".into(),
            Group::Flips => "flips".into(),
            Group::None => "none".into(),
            Group::Kept(m) => {
                let names: Vec<&str> = (0..8)
                    .filter(|k| m & (1 << k) != 0)
                    .map(|k| ELEMENT_NAMES[k])
                    .collect();
                format!("{KEPT_PREFIX}{}", names.join("+"))
            }
        }
    }

    /// The group of the elements in `mask` (bit `k`: the `k`-th image of the full group of
    /// `full` elements), by its usual name where it has one.
    pub fn from_mask(mask: u8, full: usize) -> Group {
        let all = if full >= 8 { 0xFF } else { (1u8 << full) - 1 };
        match mask & all {
            m if m == all => Group::Full,
            0x0F => Group::Flips,
            0x01 | 0x00 => Group::None,
            m => Group::Kept(m | 1),
        }
    }
}

/// The images of one board under the group, in the order of [`Symmetry::images`], with the
/// tools to normalise a spawn child without recomputing them (see [`Images::spawn_canon`]).
#[derive(Clone, Copy, Debug)]
pub struct Images {
    codes: [u64; 8],
    n: usize,
}

impl Images {
    /// The images (the first is the board itself).
    pub fn codes(&self) -> &[u64] {
        &self.codes[..self.n]
    }

    /// The smallest image.
    #[inline(always)]
    pub fn min(&self) -> u64 {
        min8(&self.codes, self.n)
    }

    /// The number of elements of the group the images are under.
    pub fn order(&self) -> usize {
        self.n
    }

    /// The smallest image with `f` applied to every image: the canonical form of `f(board)`
    /// when `f` commutes with the group (a change of tiles cell by cell, say), without
    /// computing its images again.
    #[inline(always)]
    pub fn min_of(&self, f: impl Fn(u64) -> u64) -> u64 {
        min8(&self.codes.map(f), self.n)
    }
}

#[inline(always)]
fn min8(codes: &[u64; 8], n: usize) -> u64 {
    // A fixed-size loop over all eight slots (unused ones repeat an image) vectorises.
    debug_assert!(n >= 1 && codes[n..].iter().all(|&c| c == codes[0]));
    let _ = n;
    codes.iter().copied().fold(u64::MAX, u64::min)
}

/// Normaliser for one shape and group.
pub struct Symmetry {
    shape: Shape,
    group: Group,
    /// All images at once, bit-parallel (no table), for shapes of up to 4×4.
    images_fn: fn(u64) -> [u64; 8],
    /// Number of group elements (1, 4 or 8).
    order: usize,
    /// `spawn_or[i][e - 1][k]`: a tile of exponent `e` (1 or 2: a spawned 2 or 4) in cell `i`,
    /// as image `k` places it. Unused images repeat the identity's.
    spawn_or: Vec<[[u64; 8]; 2]>,
    /// Cell permutations of every group element (the definition; also the path for shapes
    /// wider or taller than 4).
    perms: Vec<Vec<u8>>,
    /// Under [`Group::Kept`]: which of the full group's images each slot takes (unused slots
    /// the identity's).
    pick: Option<[usize; 8]>,
}

impl Symmetry {
    pub fn new(shape: Shape, group: Group) -> Symmetry {
        let perms = group_perms(shape, group);
        let order = perms.len();
        let pick = match group {
            Group::Kept(mask) => {
                let mut pick = [0usize; 8];
                for (slot, k) in (0..8).filter(|k| mask & (1 << k) != 0).enumerate() {
                    pick[slot] = k;
                }
                Some(pick)
            }
            _ => None,
        };
        let images_fn = images_fn(shape, group);
        let symmetry = |images_fn| Symmetry {
            shape,
            group,
            images_fn,
            order,
            spawn_or: Vec::new(),
            perms: perms.clone(),
            pick,
        };
        let mut sym = symmetry(images_fn.unwrap_or(generic_placeholder));
        if images_fn.is_none() {
            return sym;
        }
        // Where each cell's new tile lands in each image: the image of the one-tile board.
        sym.spawn_or = (0..shape.cells())
            .map(|i| [1u64, 2].map(|e| sym.image_codes(e << (4 * i))))
            .collect();
        sym
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }
    pub fn group(&self) -> Group {
        self.group
    }
    /// Number of elements of the group.
    pub fn order(&self) -> usize {
        self.order
    }

    /// The images of `code` under the group (for shapes of up to 4×4; `None` otherwise).
    #[inline(always)]
    pub fn images_of(&self, code: u64) -> Option<Images> {
        if self.spawn_or.is_empty() {
            return None;
        }
        Some(Images {
            codes: self.image_codes(code),
            n: self.order,
        })
    }

    /// The bit-parallel images, those of a [`Group::Kept`] picked from the full group's.
    #[inline(always)]
    fn image_codes(&self, code: u64) -> [u64; 8] {
        let all = (self.images_fn)(code);
        match &self.pick {
            None => all,
            Some(pick) => pick.map(|k| all[k]),
        }
    }

    /// The canonical id of the board `a` with exponent `e` placed in its empty cell `i`,
    /// given the images of `a`: each image of the child is an image of `a` plus the new tile
    /// where that image puts cell `i`, so no image is recomputed.
    #[inline(always)]
    pub fn spawn_canon(&self, images: &Images, i: usize, e: u8) -> u64 {
        debug_assert!(e == 1 || e == 2, "a spawn is a 2 or a 4");
        let add = &self.spawn_or[i][usize::from(e - 1)];
        let mut c = images.codes;
        for k in 0..8 {
            c[k] |= add[k];
        }
        min8(&c, images.n)
    }

    /// The canonical id: the smallest code among the images of `code` under the group.
    /// Equal for all symmetric boards (the invariant every layer relies on).
    #[inline]
    pub fn canon(&self, code: u64) -> u64 {
        match self.images_of(code) {
            Some(img) => img.min(),
            None => self
                .perms
                .iter()
                .map(|p| apply_perm(code, p))
                .min()
                .unwrap_or(code),
        }
    }

    /// All images of `code` under the group (with repeats for symmetric boards), in the
    /// order of the group's permutations.
    pub fn images(&self, code: u64) -> Vec<u64> {
        self.perms.iter().map(|p| apply_perm(code, p)).collect()
    }
}

fn generic_placeholder(code: u64) -> [u64; 8] {
    [code; 8]
}

/// The bit-parallel image function of a shape of up to 4×4 and a group.
fn images_fn(shape: Shape, group: Group) -> Option<fn(u64) -> [u64; 8]> {
    // A kept subgroup picks from the full group's images.
    let group = match group {
        Group::Kept(_) => Group::Full,
        g => g,
    };
    macro_rules! pick {
        ($($r:literal x $c:literal),*) => {
            match (shape.rows(), shape.cols(), group, shape.is_square()) {
                $(
                    ($r, $c, Group::None, _) => Some(images::<$r, $c, 1> as fn(u64) -> [u64; 8]),
                    ($r, $c, Group::Flips, _) | ($r, $c, Group::Full, false) => Some(images::<$r, $c, 4>),
                    ($r, $c, Group::Full, true) => Some(images::<$r, $c, 8>),
                )*
                _ => None,
            }
        };
    }
    pick!(1 x 1, 1 x 2, 1 x 3, 1 x 4, 2 x 1, 2 x 2, 2 x 3, 2 x 4, 3 x 1, 3 x 2, 3 x 3, 3 x 4,
          4 x 1, 4 x 2, 4 x 3, 4 x 4)
}

/// Mask of nibble 0 of every row of an R×C code.
const fn col0_mask(r: usize, c: usize) -> u64 {
    let mut m = 0u64;
    let mut i = 0;
    while i < r {
        m |= 0xF << (4 * c * i);
        i += 1;
    }
    m
}

/// Left-right mirror: reverses the nibbles of every row.
#[inline(always)]
fn mirror_lr<const R: usize, const C: usize>(x: u64) -> u64 {
    let m0 = col0_mask(R, C);
    let mut out = 0u64;
    let mut c = 0;
    while c < C {
        let part = x & (m0 << (4 * c));
        let to = C - 1 - c;
        out |= if to >= c {
            part << (4 * (to - c))
        } else {
            part >> (4 * (c - to))
        };
        c += 1;
    }
    out
}

/// Up-down mirror: reverses the order of the rows.
#[inline(always)]
fn mirror_ud<const R: usize, const C: usize>(x: u64) -> u64 {
    let w = 4 * C;
    let row = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let mut out = 0u64;
    let mut r = 0;
    while r < R {
        out |= ((x >> (w * r)) & row) << (w * (R - 1 - r));
        r += 1;
    }
    out
}

/// The images of an R×C code under the group of `ORDER` elements, in the order identity,
/// left-right, up-down, 180°, then (square boards) transpose and its three flips; unused slots
/// repeat the identity.
#[inline(always)]
fn images<const R: usize, const C: usize, const ORDER: usize>(x: u64) -> [u64; 8] {
    let mut out = [x; 8];
    if ORDER >= 4 {
        let h = mirror_lr::<R, C>(x);
        let v = mirror_ud::<R, C>(x);
        out[1] = h;
        out[2] = v;
        out[3] = mirror_ud::<R, C>(h);
    }
    if ORDER == 8 {
        debug_assert_eq!(R, C);
        let t = transpose::<R, C>(x);
        let th = mirror_lr::<R, C>(t);
        out[4] = t;
        out[5] = th;
        out[6] = mirror_ud::<R, C>(t);
        out[7] = mirror_ud::<R, C>(th);
    }
    out
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
    if let Group::Kept(mask) = group {
        let all = group_perms(shape, Group::Full);
        return (0..all.len())
            .filter(|k| mask & (1 << k) != 0)
            .map(|k| all[k].clone())
            .collect();
    }
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
                    // Spawning into an empty cell from the images gives the child's id.
                    if let Some(img) = sym.images_of(b) {
                        assert_eq!(img.min(), id);
                        for i in (0..shape.cells()).filter(|&i| cell(b, i) == 0) {
                            for e in [1u8, 2] {
                                let child = b | (u64::from(e) << (4 * i));
                                assert_eq!(sym.spawn_canon(&img, i, e), sym.canon(child));
                                let generic = sym.images(child).into_iter().min().unwrap();
                                assert_eq!(sym.canon(child), generic, "{shape} {group:?}");
                            }
                        }
                    }
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

    #[test]
    fn kept_subgroups_pick_their_images_and_read_back_by_name() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        // On 3x3: the left-right mirror; the diagonal subgroup (identity, half turn, both
        // diagonal mirrors). On 2x4: the up-down mirror.
        for (r, c, mask, name) in [
            (3, 3, 0b0000_0011u8, "keeps-id+lr"),
            (3, 3, 0b1001_1001, "keeps-id+turn180+diag+antidiag"),
            (2, 4, 0b0000_0101, "keeps-id+ud"),
        ] {
            let shape = Shape::new(r, c).unwrap();
            let g = Group::Kept(mask);
            assert_eq!(g.name(), name);
            assert_eq!(Group::parse(name).unwrap(), g);
            let sym = Symmetry::new(shape, g);
            let full = Symmetry::new(shape, Group::Full);
            assert_eq!(sym.order(), mask.count_ones() as usize);
            for _ in 0..2000 {
                let b = random_board(&mut rng, shape.cells());
                let all = full.images(b);
                let want = (0..8)
                    .filter(|k| mask & (1 << k) != 0)
                    .map(|k| all[k])
                    .min()
                    .unwrap();
                assert_eq!(sym.canon(b), want, "{shape} {name}");
                let img = sym.images_of(b).unwrap();
                assert_eq!(img.min(), want);
                for i in (0..shape.cells()).filter(|&i| cell(b, i) == 0) {
                    let child = b | (1u64 << (4 * i));
                    assert_eq!(sym.spawn_canon(&img, i, 1), sym.canon(child));
                }
            }
        }
        // The usual groups keep their names; a mask without the identity is no group.
        assert_eq!(Group::from_mask(0xFF, 8), Group::Full);
        assert_eq!(Group::from_mask(0x0F, 8), Group::Flips);
        assert_eq!(Group::from_mask(0x0F, 4), Group::Full);
        assert_eq!(Group::from_mask(0x01, 8), Group::None);
        assert!(Group::parse("keeps-lr").is_err());
        assert!(Group::parse("keeps-id+spin").is_err());
    }
}
