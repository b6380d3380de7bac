//! A static function from distinct 64-bit keys to values of a few bits (a *retrieval*
//! structure): it answers the stored value for every key of its set and an arbitrary value
//! for any other key, in about `1.075 · b` bits a key for `b`-bit values.
//!
//! The structure is a 4-wise binary fuse graph (Graf & Lemire, "Binary Fuse Filters: Fast and
//! Smaller Than Xor Filters", ACM JEA 27, 2022), used as Dietzfelbinger & Walzer's retrieval
//! (the XOR of a key's cells is its value, not a fingerprint). The array of `c` cells of `b`
//! bits is cut into segments of `L = 2^ℓ` cells; a key hashes to a window of four consecutive
//! segments and to one cell in each. Building peels the hypergraph (a cell that one key alone
//! touches fixes that key, which is removed: Molloy's 2-core argument, as in xor filters) and
//! then assigns the cells in reverse peeling order so that each key's four cells XOR to its
//! value. Windows of consecutive segments make the graph peel at `c ≈ 1.075 n` where a
//! uniform 4-hypergraph needs `1.30 n` (the paper's Table 3); the size factor and segment
//! length below are the paper's formulas for arity 4. A graph that does not peel is built
//! again with the next seed; every fourth failure adds 2 % of cells, so building always ends,
//! and the seeds are tried in order, so the same keys and values give the same bytes.
//!
//! Version 1 of the policy file (`super::policy`) stores its moves in these graphs; version 2
//! stores ranks in [`super::ribbon`]'s systems, which need fewer bits a key.
//!
//! Why our own and not `sux`'s `VFunc` (which uses the same graphs): the policy file's format
//! is ours (`super::policy`: header, version, checksum, readable zero-copy from any byte slice
//! with `Corrupted` instead of a panic, as the age index is), its keys are already distinct
//! sorted board ids (no signature sorting or duplicate detection needed), and the build must be
//! the same bytes whatever the thread count. A shard of this module is ~300 lines of code with
//! a seeded test against a `HashMap`; `sux` would bring `epserde`, `mem_dbg`, `lender` and
//! their proc macros into a build the install figures already find long.
//!
//! No I/O, no `unsafe`: cells are packed `b` bits at a time, low bits first, in bytes.

use super::{invalid, IndexError};

/// Cells a key touches.
pub const ARITY: usize = 4;
/// The longest segment (cells): the offsets inside a segment come from 16-bit fields.
const MAX_SEGMENT_LOG: u32 = 16;
/// Seeds tried before the array grows by [`GROWTH`].
const TRIES_PER_SIZE: u64 = 4;
const GROWTH: f64 = 1.02;
/// Seeds tried in all (the array 37 % larger by the last): distinct keys peel long before.
const MAX_SEEDS: u64 = 64;

/// The shape of one graph: its seed and segments. The array holds
/// `(segment_count + ARITY - 1) · 2^segment_log` cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuseParams {
    pub seed: u64,
    pub segment_log: u32,
    pub segment_count: u32,
}

impl FuseParams {
    /// Cells of the array.
    pub fn cells(&self) -> u64 {
        (u64::from(self.segment_count) + ARITY as u64 - 1) << self.segment_log
    }

    /// Bytes of the array of `bits`-bit cells.
    pub fn bytes(&self, bits: u32) -> u64 {
        (self.cells() * u64::from(bits)).div_ceil(8)
    }

    /// Whether the shape is one a builder makes (segments in range, not empty).
    pub fn is_valid(&self) -> bool {
        self.segment_log <= MAX_SEGMENT_LOG && self.segment_count >= 1
    }

    /// The hash of `key` under the graph's seed (a bijection of the key).
    #[inline]
    pub fn hash(&self, key: u64) -> u64 {
        mix(key ^ mix(self.seed.wrapping_add(SEED_SALT)))
    }

    /// The segment of the first cell of hash `h` (the cells are in it and the next three).
    #[inline]
    fn first_segment(&self, h: u64) -> usize {
        ((u128::from(h) * u128::from(self.segment_count)) >> 64) as usize
    }

    /// The `ARITY` cells of `key`, in increasing order and in distinct segments.
    #[inline]
    pub fn cells_of(&self, key: u64) -> [usize; ARITY] {
        self.cells_of_hash(self.hash(key))
    }

    /// The cells of hash `h`.
    #[inline]
    fn cells_of_hash(&self, h: u64) -> [usize; ARITY] {
        let offsets = mix(h ^ OFFSET_SALT);
        let len = 1u64 << self.segment_log;
        let mask = len - 1;
        let span = u64::from(self.segment_count) << self.segment_log;
        let first = ((u128::from(h) * u128::from(span)) >> 64) as u64;
        let mut out = [0usize; ARITY];
        for (j, c) in out.iter_mut().enumerate() {
            let p = first + j as u64 * len;
            // XOR inside the segment keeps the cell in its segment (segments are aligned).
            let off = if j == 0 {
                0
            } else {
                (offsets >> (16 * (j - 1))) & mask
            };
            *c = (p ^ off) as usize;
        }
        out
    }
}

const SEED_SALT: u64 = 0x9E37_79B9_7F4A_7C15;
const OFFSET_SALT: u64 = 0xD1B5_4A32_D192_ED03;

/// SplitMix64's finaliser: a bijection of `u64` (so distinct keys hash apart under a seed).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The paper's segment length for `n` keys, arity 4: `2^⌊ln n / ln 2.91 − 0.5⌋`.
fn segment_log(n: usize) -> u32 {
    let n = n.max(2) as f64;
    let l = (n.ln() / 2.91f64.ln() - 0.5).floor();
    (l.max(1.0) as u32).min(MAX_SEGMENT_LOG)
}

/// The paper's size factor for `n` keys, arity 4: `max(1.075, 0.77 + 0.305 · ln 600000 / ln n)`.
fn size_factor(n: usize) -> f64 {
    let n = n.max(2) as f64;
    (0.77 + 0.305 * 600_000f64.ln() / n.ln()).max(1.075)
}

/// The segments of a graph for `n` keys with `capacity` cells asked for.
fn shape_for(n: usize, capacity: f64, seed: u64) -> FuseParams {
    let segment_log = segment_log(n);
    let len = 1u64 << segment_log;
    let segments = (capacity.ceil() as u64).div_ceil(len);
    let segment_count = segments.saturating_sub(ARITY as u64 - 1).max(1);
    FuseParams {
        seed,
        segment_log,
        segment_count: u32::try_from(segment_count).unwrap_or(u32::MAX),
    }
}

/// Builds the graph of `keys` (distinct) holding `values` (each below `2^bits`, `bits` one of
/// 1, 2, 4, 8): its shape and its array of cells.
pub fn build(keys: &[u64], values: &[u8], bits: u32) -> Result<(FuseParams, Vec<u8>), IndexError> {
    if keys.len() != values.len() {
        return Err(invalid(format!(
            "{} keys and {} values",
            keys.len(),
            values.len()
        )));
    }
    if !matches!(bits, 1 | 2 | 4 | 8) {
        return Err(invalid(format!("{bits}-bit values (1, 2, 4 or 8)")));
    }
    if let Some(v) = values.iter().find(|&&v| u32::from(v) >> bits != 0) {
        return Err(invalid(format!("value {v} does not fit {bits} bits")));
    }
    if u32::try_from(keys.len()).is_err() {
        return Err(invalid(format!("{} keys in one graph", keys.len())));
    }
    let n = keys.len();
    let mut capacity = n as f64 * size_factor(n);
    let mut peel = Peeler::default();
    for seed in 0u64.. {
        if seed > 0 && seed % TRIES_PER_SIZE == 0 {
            capacity *= GROWTH;
        }
        let params = shape_for(n, capacity, seed);
        if peel.peel(&params, keys, values) {
            return Ok((params, peel.assign(&params, bits)));
        }
        if seed >= MAX_SEEDS {
            // Distinct keys peel long before: only repeated keys get here.
            return Err(invalid("keys that never peel (repeated keys?)"));
        }
    }
    unreachable!("the seeds are unbounded")
}

/// The peeling's scratch, kept across seeds.
///
/// Keys are taken in the order of their first segment (a counting sort of their hashes), so
/// that counting, peeling and assigning walk the cells nearly in order, a few segments at a
/// time, instead of jumping across an array of many megabytes for every key (as Graf &
/// Lemire's construction does).
#[derive(Default)]
struct Peeler {
    /// Hashes and values, by first segment.
    hashes: Vec<u64>,
    values: Vec<u8>,
    count: Vec<u32>,
    /// XOR of the positions (in `hashes`) of the keys a cell still has.
    xor: Vec<u32>,
    stack: Vec<u32>,
    /// Positions in peeling order, each with the cell it was peeled from.
    order: Vec<(u32, u32)>,
}

impl Peeler {
    /// Peels the graph of `keys`; false if it has a 2-core.
    fn peel(&mut self, p: &FuseParams, keys: &[u64], values: &[u8]) -> bool {
        let n = keys.len();
        let segments = p.segment_count as usize;
        let mut start = vec![0u32; segments + 1];
        for &k in keys {
            start[p.first_segment(p.hash(k)) + 1] += 1;
        }
        for s in 0..segments {
            start[s + 1] += start[s];
        }
        self.hashes.clear();
        self.hashes.resize(n, 0);
        self.values.clear();
        self.values.resize(n, 0);
        for (&k, &v) in keys.iter().zip(values) {
            let h = p.hash(k);
            let at = &mut start[p.first_segment(h)];
            self.hashes[*at as usize] = h;
            self.values[*at as usize] = v;
            *at += 1;
        }

        let cells = p.cells() as usize;
        self.count.clear();
        self.count.resize(cells, 0);
        self.xor.clear();
        self.xor.resize(cells, 0);
        for (i, &h) in self.hashes.iter().enumerate() {
            for c in p.cells_of_hash(h) {
                self.count[c] += 1;
                self.xor[c] ^= i as u32;
            }
        }
        self.order.clear();
        for c in 0..cells {
            if self.count[c] != 1 {
                continue;
            }
            self.stack.push(c as u32);
            while let Some(c) = self.stack.pop() {
                let c = c as usize;
                if self.count[c] != 1 {
                    continue;
                }
                let i = self.xor[c];
                self.order.push((i, c as u32));
                for d in p.cells_of_hash(self.hashes[i as usize]) {
                    self.count[d] -= 1;
                    self.xor[d] ^= i;
                    if self.count[d] == 1 {
                        self.stack.push(d as u32);
                    }
                }
            }
        }
        self.order.len() == n
    }

    /// The cells, filled in reverse peeling order: a key's peeled cell is the last of its
    /// cells to be set, so it can make their XOR the key's value.
    fn assign(&self, p: &FuseParams, bits: u32) -> Vec<u8> {
        let mut cells = vec![0u8; p.cells() as usize];
        for &(i, c) in self.order.iter().rev() {
            let x = p
                .cells_of_hash(self.hashes[i as usize])
                .iter()
                .filter(|&&d| d != c as usize)
                .fold(self.values[i as usize], |x, &d| x ^ cells[d]);
            cells[c as usize] = x;
        }
        pack(&cells, bits)
    }
}

/// `bits`-bit cells packed low bits first.
fn pack(cells: &[u8], bits: u32) -> Vec<u8> {
    let per = (8 / bits) as usize;
    cells
        .chunks(per)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (j, &x)| b | (x << (j as u32 * bits)))
        })
        .collect()
}

/// The value of `key` in a graph of shape `p` over its packed array `data` (which must hold
/// `p.bytes(bits)` bytes: the reader checks that when it opens the file).
#[inline]
pub fn get(p: &FuseParams, data: &[u8], bits: u32, key: u64) -> u8 {
    let per = 8 / bits as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    p.cells_of(key).iter().fold(0u8, |x, &c| {
        x ^ ((data[c / per] >> ((c % per) as u32 * bits)) & mask)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    fn keys_values(seed: u64, n: usize, bits: u32) -> (Vec<u64>, Vec<u8>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut seen = HashMap::new();
        while seen.len() < n {
            seen.insert(rng.gen::<u64>() >> rng.gen_range(0..40), ());
        }
        let mut keys: Vec<u64> = seen.into_keys().collect();
        keys.sort_unstable();
        let values = keys
            .iter()
            .map(|_| rng.gen_range(0..1u16 << bits) as u8)
            .collect();
        (keys, values)
    }

    #[test]
    fn answers_every_key_as_a_map_does() {
        for (seed, n) in [0usize, 1, 2, 3, 5, 17, 100, 1_000, 20_000, 200_000]
            .into_iter()
            .enumerate()
        {
            for bits in [1, 2, 4, 8] {
                let (keys, values) = keys_values(seed as u64 * 10 + u64::from(bits), n, bits);
                let naive: HashMap<u64, u8> = keys.iter().copied().zip(values.clone()).collect();
                let (p, data) = build(&keys, &values, bits).unwrap();
                assert!(p.is_valid());
                assert_eq!(data.len() as u64, p.bytes(bits));
                for (&k, &v) in &naive {
                    assert_eq!(get(&p, &data, bits, k), v, "n {n}, bits {bits}, key {k}");
                }
            }
        }
    }

    #[test]
    fn the_same_keys_give_the_same_bytes() {
        let (keys, values) = keys_values(7, 50_000, 2);
        assert_eq!(
            build(&keys, &values, 2).unwrap(),
            build(&keys, &values, 2).unwrap()
        );
    }

    #[test]
    fn a_big_set_takes_close_to_the_papers_factor() {
        let (keys, values) = keys_values(3, 1 << 20, 2);
        let (p, _) = build(&keys, &values, 2).unwrap();
        let factor = p.cells() as f64 / keys.len() as f64;
        assert!(factor < 1.10, "{factor} cells a key");
    }

    #[test]
    fn cells_lie_in_consecutive_segments_inside_the_array() {
        let p = shape_for(1000, 1100.0, 5);
        for k in 0..10_000u64 {
            let c = p.cells_of(k.wrapping_mul(0x1234_5678_9ABC_DEF1));
            let seg: Vec<usize> = c.iter().map(|&x| x >> p.segment_log).collect();
            for j in 1..ARITY {
                assert_eq!(seg[j], seg[0] + j);
            }
            assert!((c[ARITY - 1] as u64) < p.cells());
        }
    }

    #[test]
    fn refuses_what_it_cannot_hold() {
        assert!(build(&[1, 2], &[0], 2).is_err());
        assert!(build(&[1, 2], &[0, 4], 2).is_err());
        assert!(build(&[1], &[0], 3).is_err());
    }
}
