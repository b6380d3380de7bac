//! Compaction of board codes within one age (Kaneko & Yamashita 2025, §3.2.2).
//!
//! Within one age, every exponent is below `b = 1 + (largest exponent present)`, and the
//! tile in cell 0 is determined by the others because the tile sum (the age) is fixed.
//! So a code `Σ e_i·16^i` is re-based to `compact = Σ_{i=1}^{n-1} e_i·b^{i-1}`, shrinking
//! the universe from `16^n` to `b^{n-1}`; for random-looking sets Elias–Fano then spends
//! `log₂(b^{n-1}/m) + 2` bits per id instead of `log₂(16^n/m) + 2`. Both orders are
//! lexicographic from cell `n-1` downwards and cell 0 never breaks a tie between two
//! codes of the same age, so the map is strictly increasing: sorted codes stay sorted and
//! ranks are preserved. [`Compaction::expand`] recovers `e_0` from
//! `age − Σ_{i≥1} 2^{e_i}`.
//!

use rayon::prelude::*;

use super::elias_fano::EliasFano;
use super::{invalid, IndexError};
use crate::bits::{byte_max, max_byte, LOW};

/// Codes a task of the parallel scans takes.
const SCAN: usize = 1 << 16;

/// Sum of tiles of a code (Σ 2^e over non-empty cells of all 16 nibbles).
#[inline]
pub fn board_age(code: u64) -> u64 {
    (0..16)
        .map(|i| (code >> (4 * i)) & 15)
        .filter(|&e| e != 0)
        .map(|e| 1u64 << e)
        .sum()
}

/// Largest exponent of any cell of any code (0 if there are none).
///
/// Each code's nibbles are spread over the bytes of two words (even cells, odd cells) and the
/// largest of each byte kept across all codes, byte by byte, with no branch: the sixteen cells
/// are compared with one another once, at the end, not once a code.
pub fn max_exponent(codes: impl IntoIterator<Item = u64>) -> u8 {
    let mut most = Most::default();
    for c in codes {
        most.add(c);
    }
    most.get()
}

/// The largest nibble seen in each cell, as two words of bytes (even cells, odd cells).
#[derive(Clone, Copy, Default)]
struct Most {
    even: u64,
    odd: u64,
}

impl Most {
    #[inline(always)]
    fn add(&mut self, c: u64) {
        self.even = byte_max(self.even, c & LOW);
        self.odd = byte_max(self.odd, (c >> 4) & LOW);
    }

    #[inline]
    fn merge(self, o: Most) -> Most {
        Most {
            even: byte_max(self.even, o.even),
            odd: byte_max(self.odd, o.odd),
        }
    }

    /// The largest nibble of all.
    fn get(self) -> u8 {
        max_byte(byte_max(self.even, self.odd))
    }
}

/// One pass over a set of codes: its largest exponent ([`max_exponent`]), and the index of
/// the first code not above the one before it, if any. Tasks of [`SCAN`] codes run in
/// parallel, each a loop with no branch a code (the order check is a flag or'ed over the
/// task's pairs; the offender is looked for only if a task's flag is set).
pub(crate) fn scan_codes(codes: &[u64]) -> (u8, Option<usize>) {
    let tasks = codes.len().div_ceil(SCAN);
    let (most, unsorted) = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let (lo, hi) = (t * SCAN, ((t + 1) * SCAN).min(codes.len()));
            let mut most = Most::default();
            for &c in &codes[lo..hi] {
                most.add(c);
            }
            // The task's pairs, the one across its start included.
            let pairs = &codes[lo.saturating_sub(1)..hi];
            let mut bad = false;
            for w in pairs.windows(2) {
                bad |= w[0] >= w[1];
            }
            let first = bad
                .then(|| pairs.windows(2).position(|w| w[0] >= w[1]))
                .flatten()
                .map(|i| lo.saturating_sub(1) + i + 1);
            (most, first)
        })
        .reduce(
            || (Most::default(), None),
            |(a, fa), (b, fb)| {
                let first = match (fa, fb) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
                (a.merge(b), first)
            },
        );
    (most.get(), unsorted)
}

/// The paper's per-age re-basing of board codes (§3.2.2 of Kaneko & Yamashita 2025).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compaction {
    rows: u8,
    cols: u8,
    n: u32,
    age: u32,
    base: u8,
    universe: u64,
    shape_mask: u64,
}

impl Compaction {
    /// `rows·cols ≤ 16`, both ≥ 1; `2 ≤ base ≤ 16`.
    pub fn new(rows: u8, cols: u8, age: u32, base: u8) -> Result<Self, IndexError> {
        let n = rows as u32 * cols as u32;
        if rows == 0 || cols == 0 || n > 16 {
            return Err(invalid(format!(
                "board shape {rows}x{cols} is not 1..=16 cells"
            )));
        }
        if !(2..=16).contains(&base) {
            return Err(invalid(format!("compaction base {base} is not in 2..=16")));
        }
        let universe = (base as u64).pow(n - 1);
        let shape_mask = if n == 16 {
            u64::MAX
        } else {
            (1u64 << (4 * n)) - 1
        };
        Ok(Self {
            rows,
            cols,
            n,
            age,
            base,
            universe,
            shape_mask,
        })
    }

    /// The base the paper uses for a set of codes: one more than the largest exponent
    /// present (at least 2, so an all-empty age still has a well-formed codec).
    pub fn base_for(codes: impl IntoIterator<Item = u64>) -> u8 {
        Self::base_above(max_exponent(codes))
    }

    /// The base of codes whose largest exponent is `e` (at least 2): [`Compaction::base_for`]
    /// of codes whose [`max_exponent`] is known.
    pub(crate) fn base_above(e: u8) -> u8 {
        (e + 1).max(2)
    }

    pub fn rows(&self) -> u8 {
        self.rows
    }
    pub fn cols(&self) -> u8 {
        self.cols
    }
    pub fn age(&self) -> u32 {
        self.age
    }
    pub fn base(&self) -> u8 {
        self.base
    }

    /// `base^(n-1)`: every compact id is below it.
    pub fn universe(&self) -> u64 {
        self.universe
    }

    /// Compact id of `code`, or `None` if `code` has cells outside the board, an
    /// exponent ≥ base in cells 1.., or a different age (so it cannot be in the set).
    #[inline]
    pub fn compact(&self, code: u64) -> Option<u64> {
        if code & !self.shape_mask != 0 {
            return None;
        }
        let b = self.base as u64;
        let mut id = 0u64;
        let mut sum = 0u64;
        for i in (1..self.n).rev() {
            let e = (code >> (4 * i)) & 15;
            if e >= b {
                return None;
            }
            id = id * b + e;
            sum += (1u64 << e) & !1;
        }
        let e0 = code & 15;
        sum += (1u64 << e0) & !1;
        (sum == self.age as u64).then_some(id)
    }

    /// The code with compact id `id`, or `None` if `id` is out of range or the other
    /// cells leave a remainder of the age that is not a single tile.
    pub fn expand(&self, id: u64) -> Option<u64> {
        if id >= self.universe {
            return None;
        }
        let b = self.base as u64;
        let (mut rest, mut code, mut sum) = (id, 0u64, 0u64);
        for i in 1..self.n {
            let e = rest % b;
            rest /= b;
            code |= e << (4 * i);
            sum += (1u64 << e) & !1;
        }
        let e0 = match (self.age as u64).checked_sub(sum)? {
            0 => 0,
            r if (2..=1 << 15).contains(&r) && r.is_power_of_two() => r.trailing_zeros() as u64,
            _ => return None,
        };
        Some(code | e0)
    }

    /// Compact ids of `codes`; an error names the first code that does not fit the board,
    /// this age or the base (the checks are the compaction itself: nothing is computed twice).
    pub(crate) fn compact_all(&self, codes: &[u64], what: &str) -> Result<Vec<u64>, IndexError> {
        let batch = Batch::new(self);
        (0..codes.len())
            .map(|i| batch.compact_at(codes, i, what))
            .collect()
    }

    /// Why `c` has no compact id.
    fn misfit(&self, c: u64, i: usize, what: &str) -> IndexError {
        if c & !self.shape_mask != 0 {
            return invalid(format!(
                "{what}: code {c:#x} at index {i} has cells outside a {}x{} board",
                self.rows, self.cols
            ));
        }
        let a = board_age(c);
        if a != self.age as u64 {
            return invalid(format!(
                "{what}: code {c:#x} at index {i} has age {a}, expected {}",
                self.age
            ));
        }
        invalid(format!(
            "{what}: code {c:#x} at index {i} has an exponent >= base {}",
            self.base
        ))
    }
}

/// The largest exponent of `codes` ([`scan_codes`]), or the error naming the first code of the
/// set `what` not above the one before it.
pub(crate) fn sorted_most(codes: &[u64], what: &str) -> Result<u8, IndexError> {
    match scan_codes(codes) {
        (most, None) => Ok(most),
        (_, Some(i)) => Err(invalid(format!(
            "{what}: codes not strictly increasing at index {i}: {:#x} then {:#x}",
            codes[i - 1],
            codes[i]
        ))),
    }
}

/// The tiles of the two cells of a byte of a code (`2^e`, 0 for an empty cell), by byte.
const TILES: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        let (lo, hi) = (b & 15, b >> 4);
        t[b] = ((1u32 << lo) & !1) + ((1u32 << hi) & !1);
        b += 1;
    }
    t
};

/// A digit pair that has a cell at or above the base.
const MISFIT: u16 = 1 << 15;

/// [`Compaction::compact`] for the many codes of an encoding, a byte (two cells) a step
/// instead of a cell: a table maps a byte of the code to its two digits in base `b`
/// (`e_lo + e_hi·b`, or [`MISFIT`]) and another to its two tiles, and the pairs' digits are
/// weighted by powers of `b²` independently rather than folded one cell after another
/// (Horner's rule is a chain of `n − 1` multiplications a code). The same ids, the same
/// refusals: a test holds it to [`Compaction::compact`] on seeded codes, good and bad.
pub(crate) struct Batch<'a> {
    codec: &'a Compaction,
    /// By byte of the code shifted past cell 0: cells `2j + 1` (low nibble) and `2j + 2`.
    digits: [u16; 256],
    /// `b^(2j)`, the weight of byte `j` of the shifted code.
    weight: [u64; 8],
}

impl<'a> Batch<'a> {
    pub(crate) fn new(codec: &'a Compaction) -> Batch<'a> {
        let b = u64::from(codec.base);
        let mut digits = [MISFIT; 256];
        for (byte, d) in digits.iter_mut().enumerate() {
            let (lo, hi) = (byte as u64 & 15, byte as u64 >> 4);
            if lo < b && hi < b {
                *d = (lo + hi * b) as u16;
            }
        }
        // b ≤ 16 and 15 cells past cell 0 at most: b^14 ≤ 2^56, every id below 16^15 = 2^60.
        let mut weight = [1u64; 8];
        for j in 1..8 {
            weight[j] = weight[j - 1] * (b * b);
        }
        Batch {
            codec,
            digits,
            weight,
        }
    }

    /// [`Compaction::compact`] of `code`.
    #[inline]
    pub(crate) fn compact(&self, code: u64) -> Option<u64> {
        let c = self.codec;
        if code & !c.shape_mask != 0 {
            return None;
        }
        let (rest, all) = ((code >> 4).to_le_bytes(), code.to_le_bytes());
        let (mut id, mut misfit, mut sum) = (0u64, 0u16, 0u32);
        for j in 0..8 {
            let d = self.digits[usize::from(rest[j])];
            misfit |= d;
            // A misfit pair's weight is never added: the whole code is refused below.
            id = id.wrapping_add(u64::from(d).wrapping_mul(self.weight[j]));
            sum += TILES[usize::from(all[j])];
        }
        (misfit & MISFIT == 0 && u64::from(sum) == u64::from(c.age)).then_some(id)
    }

    /// The compact id of `codes[i]`, or an error naming it if it does not fit the board, this
    /// age or the base.
    #[inline]
    pub(crate) fn compact_at(
        &self,
        codes: &[u64],
        i: usize,
        what: &str,
    ) -> Result<u64, IndexError> {
        let c = codes[i];
        self.compact(c).ok_or_else(|| self.codec.misfit(c, i, what))
    }
}

/// A set of board codes of one age: compaction + Elias–Fano.
#[derive(Clone, Debug)]
pub struct CodeSet<B> {
    ef: EliasFano<B>,
    codec: Compaction,
}

impl CodeSet<Vec<u8>> {
    /// Builds the set from strictly increasing codes of age `age` on a `rows×cols` board,
    /// with the base chosen by [`Compaction::base_for`] (one `sorted_most` finds it and checks
    /// the order; `Compaction::compact_all` checks the rest).
    pub fn build(rows: u8, cols: u8, age: u32, codes: &[u64]) -> Result<Self, IndexError> {
        let most = sorted_most(codes, "codes")?;
        let codec = Compaction::new(rows, cols, age, Compaction::base_above(most))?;
        let ids = codec.compact_all(codes, "codes")?;
        Ok(Self {
            ef: EliasFano::from_sorted(&ids)?,
            codec,
        })
    }
}

impl<B: AsRef<[u8]>> CodeSet<B> {
    pub fn len(&self) -> usize {
        self.ef.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ef.is_empty()
    }
    pub fn codec(&self) -> &Compaction {
        &self.codec
    }
    pub fn elias_fano(&self) -> &EliasFano<B> {
        &self.ef
    }

    /// Rank of `code` in the sorted set, or `None` if absent (including codes of another
    /// age or shape).
    #[inline]
    pub fn rank_of_code(&self, code: u64) -> Option<usize> {
        self.ef.rank_of(self.codec.compact(code)?)
    }

    /// The `i`-th smallest code, or `None` if `i >= len()`.
    pub fn code_at(&self, i: usize) -> Option<u64> {
        self.codec.expand(self.ef.get(i)?)
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.ef.iter().filter_map(|id| self.codec.expand(id))
    }
}
