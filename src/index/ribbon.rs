//! A static function from 64-bit key hashes to values of a few bits: Standard Ribbon
//! retrieval (Dillinger & Walzer, "Ribbon filter: practically smaller than Bloom and Xor",
//! 2021; Dillinger, Hübschle-Schneider, Sanders & Walzer, "Fast Succinct Retrieval and
//! Approximate Membership Using Ribbon", SEA 2022), with 128-bit bands.
//!
//! A key's hash picks a start `s` among `m − 127` slots and a random 128-bit coefficient
//! vector `c` whose lowest bit is set; the key's value is the parity of `c` against the
//! solution's bits `Z[s..s + 128]`, one such parity a bit of the value (each bit has its own
//! plane of `m` bits). Building is Gaussian elimination on the banded system, one key at a
//! time (a key's row is reduced against the rows already stored until it finds an empty
//! pivot, or vanishes: consistently, or not, when the seed is tried again), then back
//! substitution from the last slot. A band this wide solves at about 3 % more slots than
//! keys whatever their number, where a 4-wise binary fuse graph ([`super::fuse`]) needs 7.5 %
//! on a million keys and 12–20 % on the tens of thousands an age of 3x3 holds. A look-up reads
//! 128 bits of each plane (one or two cache lines) and takes a parity: fewer memory accesses
//! than the fuse graph's four cells.
//!
//! Why our own: the well-kept Rust crates of this family (`xorf`, `sux`'s `VFunc`, `ptr_hash`)
//! are filters, fuse graphs or minimal perfect hashes, not ribbon retrieval over a byte slice
//! the caller validated; the rest is [`super::fuse`]'s reasons (a file format of ours read
//! zero-copy, `Corrupted` on hostile bytes, the same bytes whatever the thread count: seeds are
//! tried in order and keys taken in a fixed order).
//!
//! No I/O, no `unsafe`: planes are little-endian `u64` words, each with two words of padding
//! so a window at the last slots is read in bounds.

use super::{invalid, IndexError};

/// Bits of a band (a key's coefficients).
pub const BAND: usize = 128;
/// Each failed seed adds this share of slots.
const GROWTH: f64 = 1.005;
/// Seeds tried before giving up (the slots 2.5 times more by then): keys with distinct hashes
/// solve long before.
const MAX_SEEDS: u64 = 96;

const SEED_SALT: u64 = 0x9E37_79B9_7F4A_7C15;
const COEFF_SALT: [u64; 2] = [0xD1B5_4A32_D192_ED03, 0x8CB9_2BA7_2F3D_8DD7];

/// SplitMix64's finaliser.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The shape of one system: its seed and slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RibbonParams {
    pub seed: u64,
    pub slots: u64,
}

impl RibbonParams {
    /// Whether the shape is one a builder makes (a whole band at least; slots bounded).
    pub fn is_valid(&self) -> bool {
        self.slots >= BAND as u64 && self.slots <= 1 << 40
    }

    /// Words of one plane, padding included.
    pub fn plane_words(&self) -> usize {
        self.slots.div_ceil(64) as usize + 2
    }

    /// Bytes of the solution of `bits`-bit values.
    pub fn bytes(&self, bits: u32) -> u64 {
        self.plane_words() as u64 * 8 * u64::from(bits)
    }

    /// The hash of `key` under the seed, mixed with `level` above 0 (a key may hold several
    /// values at levels); two pairs share a hash under a seed only by chance, and the next
    /// seed parts them.
    #[inline]
    pub fn hash(&self, key: u64, level: usize) -> u64 {
        let h = mix(key ^ mix(self.seed.wrapping_add(SEED_SALT)));
        if level == 0 {
            h
        } else {
            mix(h ^ (level as u64).wrapping_mul(0x2545_F491_4F6C_DD1D))
        }
    }

    /// The start of hash `h`'s band.
    #[inline]
    fn start(&self, h: u64) -> usize {
        let starts = self.slots - BAND as u64 + 1;
        ((u128::from(h) * u128::from(starts)) >> 64) as usize
    }

    /// The start and coefficients of hash `h`.
    #[inline]
    fn band(&self, h: u64) -> (usize, u128) {
        let c = (u128::from(mix(h ^ COEFF_SALT[0])) << 64) | u128::from(mix(h ^ COEFF_SALT[1]));
        (self.start(h), c | 1)
    }
}

/// The slots a key to start with: a 128-bit band solves at about 1.02 slots a key on a
/// thousand keys, 1.03 on a hundred thousand, 1.04 on a million (seeded trials, 10 a size: at
/// these factors most seeds solve, and the next seeds add [`GROWTH`]).
fn factor(n: usize) -> f64 {
    1.0 + 0.002 * (n.max(2) as f64).log2()
}

/// Builds the system of `n` keys given by their hash under a shape (`hash(p, i)`, from
/// [`RibbonParams::hash`]) holding `values` (each below `2^bits`, `bits` from 1 to 8): its
/// shape and its planes, plane `b` holding bit `b` of the values.
pub fn build_with(
    n: usize,
    hash: impl Fn(&RibbonParams, usize) -> u64,
    values: &[u8],
    bits: u32,
) -> Result<(RibbonParams, Vec<u8>), IndexError> {
    if n != values.len() {
        return Err(invalid(format!("{n} keys and {} values", values.len())));
    }
    if !(1..=8).contains(&bits) {
        return Err(invalid(format!("{bits}-bit values (1 to 8)")));
    }
    if u32::try_from(n).is_err() {
        return Err(invalid(format!(
            "{n} keys in one system (at most 2^32 - 1)"
        )));
    }
    if let Some(v) = values.iter().find(|&&v| u32::from(v) >> bits != 0) {
        return Err(invalid(format!("value {v} does not fit {bits} bits")));
    }
    let mut capacity = (n as f64 * factor(n)).max(BAND as f64);
    let mut solver = Solver::default();
    for seed in 0..MAX_SEEDS {
        if seed > 0 {
            capacity *= GROWTH;
        }
        let p = RibbonParams {
            seed,
            slots: (capacity.ceil() as u64).max(BAND as u64),
        };
        if solver.solve(&p, n, |i| hash(&p, i), values) {
            return Ok((p, solver.planes(&p, bits)));
        }
    }
    Err(invalid("keys that never solve (repeated keys?)"))
}

/// Starts a bucket of the keys' sort by start.
const BUCKET: usize = 64;

/// The elimination's rows, kept across seeds.
#[derive(Default)]
struct Solver {
    /// Per slot its reduced row (0: empty) and value.
    rows: Vec<u128>,
    vals: Vec<u8>,
    /// Per key, in the keys' order: its hash.
    hashes: Vec<u64>,
    /// Keys by start ([`BUCKET`] starts at a time): their hashes and values (a key's band is
    /// made again from its hash).
    by_start: Vec<(u64, u8)>,
    /// Per bucket of starts, where its keys go in `by_start` (a counting sort).
    at: Vec<u32>,
}

impl Solver {
    /// Reduces every key into the rows; false if two keys' rows contradict.
    fn solve(
        &mut self,
        p: &RibbonParams,
        n: usize,
        hash: impl Fn(usize) -> u64,
        values: &[u8],
    ) -> bool {
        let m = p.slots as usize;
        let starts = m - BAND + 1;
        // By start, [`BUCKET`] starts at a time, keys of a bucket in the keys' order (a
        // stable counting sort), so that the rows a key meets are close in memory (a
        // bucket's keys meet the rows of a few hundred slots). The rows do not depend on the
        // order the keys are reduced in (below); the buckets' counters stay in the L1 cache
        // where a counter a start did not.
        let buckets = (starts - 1) / BUCKET + 1;
        self.at.clear();
        self.at.resize(buckets + 1, 0);
        self.hashes.clear();
        for i in 0..n {
            let h = hash(i);
            self.hashes.push(h);
            self.at[p.start(h) / BUCKET + 1] += 1;
        }
        for s in 1..=buckets {
            self.at[s] += self.at[s - 1];
        }
        self.by_start.clear();
        self.by_start.resize(n, (0, 0));
        for (&h, &b) in self.hashes.iter().zip(values) {
            let at = &mut self.at[p.start(h) / BUCKET];
            self.by_start[*at as usize] = (h, b);
            *at += 1;
        }
        self.rows.clear();
        self.rows.resize(m, 0);
        self.vals.clear();
        self.vals.resize(m, 0);
        // The rows the keys come to do not depend on the order they are reduced in (the
        // pivots are the leading slots of the keys' span, the solution with free slots 0 is
        // the one solution of the echelon system): the keys' two halves, far apart in the
        // band, are reduced in turn, so that the processor overlaps two chains of dependent
        // loads instead of waiting on one.
        let (rows, vals) = (&mut self.rows[..], &mut self.vals[..]);
        let (first, second) = self.by_start.split_at(n / 2);
        let (mut a, mut b) = (first.iter(), second.iter());
        let (Some(&ka), Some(&kb)) = (a.next(), b.next()) else {
            // At most one key (`first` is the shorter half).
            return second
                .iter()
                .all(|&k| Pending::new(p, k).finish(rows, vals));
        };
        let (mut ka, mut kb) = (Pending::new(p, ka), Pending::new(p, kb));
        // Until one half is through, a step of each in turn.
        let rest = loop {
            if let Some(ok) = ka.step(rows, vals) {
                if !ok {
                    return false;
                }
                match a.next() {
                    Some(&k) => ka = Pending::new(p, k),
                    None => break (kb, b),
                }
            }
            if let Some(ok) = kb.step(rows, vals) {
                if !ok {
                    return false;
                }
                match b.next() {
                    Some(&k) => kb = Pending::new(p, k),
                    None => break (ka, a),
                }
            }
        };
        let (k, mut left) = rest;
        k.finish(rows, vals) && left.all(|&k| Pending::new(p, k).finish(rows, vals))
    }

    /// The solution by back substitution, free slots 0, as `bits` planes of words.
    fn planes(&self, p: &RibbonParams, bits: u32) -> Vec<u8> {
        match bits {
            1 => self.planes_of::<1>(p),
            2 => self.planes_of::<2>(p),
            3 => self.planes_of::<3>(p),
            4 => self.planes_of::<4>(p),
            5 => self.planes_of::<5>(p),
            6 => self.planes_of::<6>(p),
            7 => self.planes_of::<7>(p),
            _ => self.planes_of::<8>(p),
        }
    }

    /// [`Solver::planes`] of `B` bits, from the last slot down. Each plane's solution from the
    /// slot at hand on is kept in a register (bit `k` slot `i + k`, slot `i` itself still 0:
    /// what a stored row meets), and its bits go into the word being filled: no slot waits on
    /// a store of the slot before.
    fn planes_of<const B: usize>(&self, p: &RibbonParams) -> Vec<u8> {
        let m = p.slots as usize;
        let words = p.plane_words();
        let mut planes = vec![0u64; words * B];
        let mut ahead = [0u128; B];
        let mut word = [0u64; B];
        for i in (0..m).rev() {
            let (r, v) = (self.rows[i], self.vals[i]);
            for b in 0..B {
                let w = ahead[b] << 1;
                // Bit 0 of the row is slot i itself (0 in `w`); a free slot is 0.
                let z = u64::from((parity(r & w) ^ (v >> b)) & u8::from(r != 0) & 1);
                ahead[b] = w | u128::from(z);
                word[b] |= z << (i % 64);
            }
            if i % 64 == 0 {
                for b in 0..B {
                    planes[b * words + i / 64] = std::mem::take(&mut word[b]);
                }
            }
        }
        let mut out = Vec::with_capacity(words * 8 * B);
        for w in planes {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// The parity of `x`'s bits, without `count_ones` (a dozen instructions a word on a processor
/// the build may not assume the `popcnt` instruction of): the halves folded into one word,
/// each nibble's parity into its lowest bit, and those summed by a multiplication into the
/// top nibble (whose lowest bit is the parity of the sixteen).
#[inline(always)]
fn parity(x: u128) -> u8 {
    let mut y = (x as u64) ^ ((x >> 64) as u64);
    y ^= y >> 1;
    y ^= y >> 2;
    ((y & 0x1111_1111_1111_1111).wrapping_mul(0x1111_1111_1111_1111) >> 60) as u8 & 1
}

/// A key being reduced: the slot of its row's lowest bit, the row from there (its low and high
/// words), its value.
#[derive(Clone, Copy)]
struct Pending {
    s: usize,
    lo: u64,
    hi: u64,
    b: u8,
}

impl Pending {
    #[inline(always)]
    fn new(p: &RibbonParams, (h, b): (u64, u8)) -> Pending {
        let (s, c) = p.band(h);
        Pending {
            s,
            lo: c as u64,
            hi: (c >> 64) as u64,
            b,
        }
    }

    /// One step of the elimination: `Some(true)` once the row is stored at an empty pivot or
    /// vanished with its value 0, `Some(false)` if it vanished with a value left (the seed
    /// fails), `None` while rows are met.
    ///
    /// The row is held as two words and shifted as two: the lowest set bit is nearly always
    /// in the low word, where the shift is two funnel shifts without the test of a shift of
    /// 64 or more that a `u128` shift makes (a step is the elimination's inner loop).
    #[inline(always)]
    fn step(&mut self, rows: &mut [u128], vals: &mut [u8]) -> Option<bool> {
        // The row is never 0 here: a key's row starts with bit 0 set, and a step whose XOR
        // leaves 0 ends the key (below).
        if self.lo != 0 {
            let j = self.lo.trailing_zeros();
            // `hi << (64 - j)` as two shifts: j may be 0.
            self.lo = (self.lo >> j) | ((self.hi << 1) << (63 - j));
            self.hi >>= j;
            self.s += j as usize;
        } else {
            let j = self.hi.trailing_zeros();
            self.lo = self.hi >> j;
            self.hi = 0;
            self.s += 64 + j as usize;
        }
        let r = rows[self.s];
        if r == 0 {
            rows[self.s] = u128::from(self.hi) << 64 | u128::from(self.lo);
            vals[self.s] = self.b;
            return Some(true);
        }
        self.lo ^= r as u64;
        self.hi ^= (r >> 64) as u64;
        self.b ^= vals[self.s];
        if self.lo | self.hi == 0 {
            return Some(self.b == 0);
        }
        None
    }

    /// The steps to the end; false if the seed fails.
    #[inline(always)]
    fn finish(mut self, rows: &mut [u128], vals: &mut [u8]) -> bool {
        loop {
            if let Some(ok) = self.step(rows, vals) {
                return ok;
            }
        }
    }
}

#[inline]
fn word(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"))
}

/// The value of hash `h` in a system of shape `p` over its planes `data` (which must hold
/// `p.bytes(bits)` bytes: the reader checks that when it opens the file).
#[inline]
pub fn get(p: &RibbonParams, data: &[u8], bits: u32, h: u64) -> u8 {
    let (s, c) = p.band(h);
    let plane_bytes = p.plane_words() * 8;
    let (w, o) = (s / 64, s % 64);
    let mut v = 0u8;
    for b in 0..bits as usize {
        let at = b * plane_bytes + w * 8;
        let lo = u128::from(word(data, at)) | (u128::from(word(data, at + 8)) << 64);
        let z = if o == 0 {
            lo
        } else {
            (lo >> o) | (u128::from(word(data, at + 16)) << (128 - o))
        };
        v |= (((c & z).count_ones() & 1) as u8) << b;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    fn sample(seed: u64, n: usize, bits: u32) -> (Vec<(u64, usize)>, Vec<u8>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut seen = HashMap::new();
        let mut id = rng.gen::<u64>() >> 24;
        while seen.len() < n {
            id += rng.gen_range(1..30);
            for level in 0..rng.gen_range(1..4usize) {
                if seen.len() < n {
                    seen.insert((id, level), rng.gen_range(0..1u16 << bits) as u8);
                }
            }
        }
        let mut keys: Vec<(u64, usize)> = seen.keys().copied().collect();
        keys.sort_unstable();
        let values = keys.iter().map(|k| seen[k]).collect();
        (keys, values)
    }

    #[test]
    fn answers_every_key_as_a_map_does() {
        for (seed, n) in [0usize, 1, 2, 5, 127, 128, 129, 1_000, 20_000, 300_000]
            .into_iter()
            .enumerate()
        {
            for bits in [1, 2, 4, 8] {
                let (keys, values) = sample(seed as u64 * 10 + u64::from(bits), n, bits);
                let (p, data) =
                    build_with(n, |p, i| p.hash(keys[i].0, keys[i].1), &values, bits).unwrap();
                assert!(p.is_valid());
                assert_eq!(data.len() as u64, p.bytes(bits));
                for (&(k, l), &v) in keys.iter().zip(&values) {
                    assert_eq!(get(&p, &data, bits, p.hash(k, l)), v, "n {n} bits {bits}");
                }
                if n >= 20_000 {
                    let factor = p.slots as f64 / n as f64;
                    assert!(factor < 1.05, "{factor} slots a key at n {n}");
                }
            }
        }
    }

    #[test]
    fn the_same_keys_give_the_same_bytes() {
        let (keys, values) = sample(7, 50_000, 1);
        let b = || build_with(keys.len(), |p, i| p.hash(keys[i].0, keys[i].1), &values, 1);
        assert_eq!(b().unwrap(), b().unwrap());
    }

    /// Bits `i..i + 128` of a plane of words (padded: two words past the last slot).
    fn window(plane: &[u64], i: usize) -> u128 {
        let (w, o) = (i / 64, i % 64);
        let lo = u128::from(plane[w]) | (u128::from(plane[w + 1]) << 64);
        if o == 0 {
            lo
        } else {
            (lo >> o) | (u128::from(plane[w + 2]) << (128 - o))
        }
    }

    #[test]
    fn windows_read_any_offset() {
        let plane: Vec<u64> = (0..6u64).map(|i| mix(i + 1)).collect();
        for i in 0..(4 * 64 - 128) {
            let mut want = 0u128;
            for j in 0..128 {
                let bit = (plane[(i + j) / 64] >> ((i + j) % 64)) & 1;
                want |= u128::from(bit) << j;
            }
            assert_eq!(window(&plane, i), want, "{i}");
        }
    }

    /// The planes of a shape by the textbook: keys reduced one at a time in `order`, then
    /// each slot from the last solved against the plane's bits above it, read from memory.
    fn plainly(p: &RibbonParams, hashes: &[u64], values: &[u8], bits: u32) -> Option<Vec<u8>> {
        let m = p.slots as usize;
        let (mut rows, mut vals) = (vec![0u128; m], vec![0u8; m]);
        for (&h, &v) in hashes.iter().zip(values) {
            let (mut s, mut c) = p.band(h);
            let mut b = v;
            loop {
                if c == 0 {
                    if b != 0 {
                        return None;
                    }
                    break;
                }
                let j = c.trailing_zeros() as usize;
                s += j;
                c >>= j;
                if rows[s] == 0 {
                    rows[s] = c;
                    vals[s] = b;
                    break;
                }
                c ^= rows[s];
                b ^= vals[s];
            }
        }
        let mut planes = vec![vec![0u64; p.plane_words()]; bits as usize];
        for i in (0..m).rev() {
            for (b, plane) in planes.iter_mut().enumerate() {
                let x = (rows[i] & window(plane, i)).count_ones() as u8 & 1;
                if rows[i] != 0 && x ^ (vals[i] >> b) & 1 == 1 {
                    plane[i / 64] |= 1 << (i % 64);
                }
            }
        }
        Some(
            planes
                .concat()
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect(),
        )
    }

    #[test]
    fn the_solution_is_the_textbooks_in_any_order_of_the_keys() {
        for (seed, n, bits) in [(1, 3, 1), (2, 1_000, 1), (3, 20_000, 1), (4, 5_000, 4)] {
            let (keys, values) = sample(seed, n, bits);
            let (p, data) =
                build_with(n, |p, i| p.hash(keys[i].0, keys[i].1), &values, bits).unwrap();
            let hashes: Vec<u64> = keys.iter().map(|&(k, l)| p.hash(k, l)).collect();
            assert_eq!(
                plainly(&p, &hashes, &values, bits),
                Some(data.clone()),
                "{n}"
            );
            // Reversed, and every other key first: the same rows, the same solution.
            let rev: Vec<usize> = (0..n).rev().collect();
            let split: Vec<usize> = (0..n).step_by(2).chain((1..n).step_by(2)).collect();
            for order in [rev, split] {
                let h: Vec<u64> = order.iter().map(|&i| hashes[i]).collect();
                let v: Vec<u8> = order.iter().map(|&i| values[i]).collect();
                assert_eq!(plainly(&p, &h, &v, bits), Some(data.clone()), "{n}");
            }
        }
    }

    #[test]
    fn parity_is_that_of_the_count_of_ones() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        let mut words: Vec<u128> = vec![0, 1, u128::MAX, u128::MAX - 1, 1 << 127, 0xFFFF];
        words.extend((0..20_000).map(|_| rng.gen::<u128>()));
        // Sparse and dense words too, where a carry in the sum of nibbles would show.
        words
            .extend((0..20_000).map(|_| rng.gen::<u128>() & rng.gen::<u128>() & rng.gen::<u128>()));
        words
            .extend((0..20_000).map(|_| rng.gen::<u128>() | rng.gen::<u128>() | rng.gen::<u128>()));
        for x in words {
            assert_eq!(parity(x), (x.count_ones() & 1) as u8, "{x:#x}");
        }
    }

    /// A step's two-word shift against the `u128` one, including rows whose low word is 0
    /// (which the elimination meets about once in 2^64 steps, so no build would test them).
    #[test]
    fn a_step_moves_the_row_to_its_lowest_bit_as_a_u128_shift_does() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(23);
        let mut rows: Vec<u128> = (0..20_000).map(|_| rng.gen()).collect();
        rows.extend((0..20_000).map(|_| u128::from(rng.gen::<u64>()) << 64));
        rows.extend([1, 1 << 63, 1 << 64, 1 << 127, u128::MAX, 3 << 63]);
        for c in rows.into_iter().filter(|&c| c != 0) {
            let (mut slots, mut vals) = (vec![0u128; 300], vec![0u8; 300]);
            let mut k = Pending {
                s: 7,
                lo: c as u64,
                hi: (c >> 64) as u64,
                b: 1,
            };
            assert_eq!(k.step(&mut slots, &mut vals), Some(true), "{c:#x}");
            let j = c.trailing_zeros() as usize;
            assert_eq!(
                (k.s, slots[7 + j], vals[7 + j]),
                (7 + j, c >> j, 1),
                "{c:#x}"
            );
        }
    }

    #[test]
    fn refuses_what_it_cannot_hold() {
        assert!(build_with(2, |p, i| p.hash(i as u64, 0), &[0], 1).is_err());
        assert!(build_with(1, |p, i| p.hash(i as u64, 0), &[2], 1).is_err());
        assert!(build_with(1, |p, i| p.hash(i as u64, 0), &[0], 9).is_err());
        // The same key twice with two values never solves.
        assert!(build_with(2, |p, _| p.hash(5, 0), &[0, 1], 1).is_err());
    }
}
