//! Layers: the sorted, deduplicated ids of one age, and a hash table from id to values.
//!
//! A layer is a `Vec<u64>` of canonical ids in strictly increasing order, so that the rank of
//! an id is its position and per-id data (values, flags) live in plain parallel arrays. The
//! passes look ids up hundreds of millions of times; a binary search over a layer of a few
//! hundred thousand ids misses cache at every late step, so lookups go through [`ValueTable`],
//! an open-addressing table of ids and their values built once per layer (one cache line a
//! lookup).

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

/// Below this many ids a comparison sort beats the radix sort's fixed costs.
const RADIX_MIN: usize = 1 << 12;

/// Sorts and deduplicates ids: the two halves are radix-sorted in parallel, then merged with
/// duplicates dropped. Ids use at most `4·cells` bits, so an LSD radix sort needs only
/// `⌈bits/11⌉` passes, each a sequential read and a scatter into 2^11 buckets — several times
/// cheaper than a comparison sort at the layer sizes of the passes.
pub fn sort_dedup(mut ids: Vec<u64>) -> Vec<u64> {
    if ids.len() < RADIX_MIN {
        ids.sort_unstable();
        ids.dedup();
        return ids;
    }
    let mid = ids.len() / 2;
    let (a, b) = ids.split_at_mut(mid);
    rayon::join(|| radix_sort(a), || radix_sort(b));
    merge_dedup(&ids[..mid], &ids[mid..])
}

/// Sorts and deduplicates ids given in pieces (as parallel tasks produce them), in parallel
/// throughout: a sample of the ids picks splitters, every piece is cut into the ranges between
/// them, and each range is gathered, radix-sorted and deduplicated on its own. The ranges are
/// disjoint and in order, so their concatenation is the sorted layer (the same whatever the
/// number of threads).
pub fn sort_dedup_pieces(pieces: Vec<Vec<u64>>) -> Vec<u64> {
    let n: usize = pieces.iter().map(Vec::len).sum();
    let ranges = (rayon::current_num_threads() * 4).max(1);
    if n < RADIX_MIN * ranges {
        return sort_dedup(pieces.concat());
    }
    // Splitters: every k-th id of a strided sample, sorted.
    let stride = (n / (ranges * 64)).max(1);
    let mut sample: Vec<u64> = pieces
        .iter()
        .flat_map(|p| p.iter().step_by(stride).copied())
        .collect();
    sample.sort_unstable();
    sample.dedup();
    let splitters: Vec<u64> = (1..ranges)
        .map(|j| sample[j * sample.len() / ranges])
        .collect();
    let splitters = {
        let mut s = splitters;
        s.dedup();
        s
    };
    let k = splitters.len() + 1;
    // Cut each piece into the k ranges (each piece is freed once it is cut), then hand every
    // range its parts, so that a range's parts are freed as soon as it is gathered: the peak
    // is the ids once plus the ranges being sorted, not the ids twice.
    let cut: Vec<Vec<Vec<u64>>> = pieces
        .into_par_iter()
        .map(|piece| {
            let mut out = vec![Vec::with_capacity(piece.len() / k + 16); k];
            for x in piece {
                out[splitters.partition_point(|&s| s <= x)].push(x);
            }
            out
        })
        .collect();
    let mut by_range: Vec<Vec<Vec<u64>>> = (0..k).map(|_| Vec::with_capacity(cut.len())).collect();
    for parts in cut {
        for (range, part) in by_range.iter_mut().zip(parts) {
            range.push(part);
        }
    }
    // Gather, sort and deduplicate each range.
    let sorted: Vec<Vec<u64>> = by_range
        .into_par_iter()
        .map(|parts| {
            let mut v: Vec<u64> = super::huge::with_capacity(parts.iter().map(Vec::len).sum());
            for part in parts {
                v.extend_from_slice(&part);
            }
            radix_sort(&mut v);
            v.dedup();
            v.shrink_to_fit();
            v
        })
        .collect();
    debug_assert!(sorted
        .windows(2)
        .all(|w| match (w[0].last(), w[1].first()) {
            (Some(a), Some(b)) => a < b,
            _ => true,
        }));
    sorted.concat()
}

/// Buckets of at most this many ids are sorted LSD within the core's cache (2^16 ids: 512 KiB,
/// as much again of scratch, inside a 2 MiB L2).
const CACHE_SORT: usize = 1 << 16;

/// Bits of a radix digit at most (2^11 counters: 16 KiB, in L1).
const DIGIT: u32 = 11;

/// Radix sort in place (with one scratch buffer): most significant digit first while a part is
/// bigger than the cache ([`CACHE_SORT`]), least significant digit first within it. An LSD sort
/// of a big layer moves every id through memory once per digit (five times for 48-bit ids);
/// here it goes through memory once per MSD level (once or twice) and the rest of the work
/// stays in cache. Only the bits that differ among the ids of a part are sorted on (the OR of
/// their XORs with the first), so that a part whose ids share a prefix skips its digits.
fn radix_sort(v: &mut [u64]) {
    if v.len() < RADIX_MIN {
        v.sort_unstable();
        return;
    }
    let mut scratch = super::huge::filled(v.len(), 0u64);
    sort_part(v, &mut scratch, false);
}

/// The number of low bits in which the ids of `v` differ (0 when they are all equal or none).
fn varying_bits(v: &[u64]) -> u32 {
    let first = v.first().copied().unwrap_or(0);
    let diff = v.iter().fold(0u64, |m, &x| m | (x ^ first));
    64 - diff.leading_zeros()
}

/// Sorts the ids of `a` and leaves them in `b` if `into_b`, else in `a`; the other slice (as
/// long) is scratch.
fn sort_part(a: &mut [u64], b: &mut [u64], into_b: bool) {
    debug_assert_eq!(a.len(), b.len());
    let bits = if a.len() < RADIX_MIN {
        a.sort_unstable();
        0
    } else {
        varying_bits(a)
    };
    let in_b = if bits == 0 {
        false // sorted already
    } else if a.len() <= CACHE_SORT {
        lsd(a, b, bits)
    } else {
        for r in msd_scatter(a, b, bits) {
            // The part is in `b` now: sorted there into `a`, unless it belongs in `b`.
            sort_part(&mut b[r.clone()], &mut a[r], !into_b);
        }
        into_b
    };
    match (in_b, into_b) {
        (false, true) => b.copy_from_slice(a),
        (true, false) => a.copy_from_slice(b),
        _ => {}
    }
}

/// Moves the ids of `src`, which differ in their low `bits` bits only, into `dst` grouped by
/// their top [`DIGIT`] of those bits, stably; returns the ranges of the groups that hold an id.
fn msd_scatter(src: &[u64], dst: &mut [u64], bits: u32) -> Vec<std::ops::Range<usize>> {
    debug_assert_eq!(bits, varying_bits(src));
    let shift = bits.saturating_sub(DIGIT);
    let width = bits - shift;
    let buckets = 1usize << width;
    let mask = (buckets - 1) as u64;
    let mut at = vec![0usize; buckets];
    for &x in src {
        at[((x >> shift) & mask) as usize] += 1;
    }
    let mut ranges = Vec::new();
    let mut sum = 0;
    for n in at.iter_mut() {
        let count = *n;
        if count > 0 {
            ranges.push(sum..sum + count);
        }
        *n = sum;
        sum += count;
    }
    for &x in src {
        let d = ((x >> shift) & mask) as usize;
        dst[at[d]] = x;
        at[d] += 1;
    }
    ranges
}

/// LSD radix sort of `a` on its low `bits` bits (the higher ones being equal), ping-ponging
/// with `b` (as long). Returns whether the sorted ids ended in `b` (else in `a`).
fn lsd(a: &mut [u64], b: &mut [u64], bits: u32) -> bool {
    let passes = bits.div_ceil(DIGIT) as usize;
    let width = bits.div_ceil(passes as u32);
    let buckets = 1usize << width;
    let mask = (buckets - 1) as u64;
    // All histograms in one read.
    let mut counts = vec![0usize; passes * buckets];
    for &x in a.iter() {
        for p in 0..passes {
            counts[p * buckets + ((x >> (p as u32 * width)) & mask) as usize] += 1;
        }
    }
    let mut in_b = false; // where the ids are now
    for p in 0..passes {
        let c = &mut counts[p * buckets..(p + 1) * buckets];
        if c.contains(&a.len()) {
            continue; // every id has the same digit: the pass would not move anything
        }
        let mut sum = 0;
        for n in c.iter_mut() {
            let t = *n;
            *n = sum;
            sum += t;
        }
        let shift = p as u32 * width;
        let (src, dst): (&[u64], &mut [u64]) = if in_b { (&*b, &mut *a) } else { (&*a, &mut *b) };
        for &x in src {
            let d = ((x >> shift) & mask) as usize;
            dst[c[d]] = x;
            c[d] += 1;
        }
        in_b = !in_b;
    }
    in_b
}

/// Merges two sorted slices into one strictly increasing vector.
fn merge_dedup(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    let push = |x: u64, out: &mut Vec<u64>| {
        if out.last() != Some(&x) {
            out.push(x);
        }
    };
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            push(a[i], &mut out);
            i += 1;
        } else {
            push(b[j], &mut out);
            j += 1;
        }
    }
    for &x in &a[i..] {
        push(x, &mut out);
    }
    for &x in &b[j..] {
        push(x, &mut out);
    }
    out
}

/// Union of two sorted, deduplicated layers.
pub fn union(a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x < y {
            out.push(x);
            i += 1;
        } else if y < x {
            out.push(y);
            j += 1;
        } else {
            out.push(x);
            i += 1;
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// True if `ids` is strictly increasing (the layer invariant).
pub fn is_layer(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}

const EMPTY: u64 = u64::MAX;

/// How many ids ahead [`ValueTable::new`] prefetches the slot of.
const BUILD_AHEAD: usize = 16;

/// From this many ids on, a [`ValueTable`] is built by all threads (below, one thread is
/// quicker than handing out the work).
const PARALLEL_BUILD: usize = 1 << 15;

/// Ids per task of a parallel [`ValueTable`] build.
const BUILD_CHUNK: usize = 1 << 12;

// `as_atomic` relies on this (true wherever `AtomicU64` exists with u64's alignment).
const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());

/// The words of a table under construction as atomics, so that threads can claim slots.
fn as_atomic(words: &mut [u64]) -> &[AtomicU64] {
    // SAFETY: `AtomicU64` has the size and bit validity of `u64`, and the same alignment
    // (asserted above); the exclusive borrow of `words` is held for as long as the atomic
    // view lives, so nothing else reads or writes the words meanwhile.
    unsafe { &*(words as *mut [u64] as *const [AtomicU64]) }
}

/// Maps the ids of one layer to their values (`k` per id, one per variant), one cache line a
/// lookup.
///
/// Linear probing at load [`load`] (1/2, or 3/4 for big layers) with a multiplicative
/// (Fibonacci) hash mapped onto the slots by a multiply-shift (Lemire's fast range reduction,
/// so the number of slots need not be a power of two): expected probes for a hit are
/// `(1 + 1/(1 − α))/2`, 1.5 at α = 1/2 and 2.5 at 3/4 (Knuth, TAOCP 6.4), neighbouring slots
/// mostly in the same cache line. A slot is the id followed by its `k` values (as bits),
/// padded to a power-of-two number of words so that no slot straddles a cache line: a lookup
/// reads one line where an id → rank table and a separate value array read two, which is most
/// of the cost of a backward pass whose layers outgrow the caches. With one variant a slot is
/// 16 bytes, so an id costs 32 bytes, or about 21 in a big table (when the slots were a power
/// of two: 32 to 64).
/// `u64::MAX` marks an empty slot; it is never an id (it would be a board of sixteen 32768
/// tiles).
pub struct ValueTable {
    words: Vec<u64>,
    /// Number of slots (at least one more than the ids, so that a probe always ends).
    slots: usize,
    /// Words per slot: `k + 1` rounded up to a power of two.
    stride: usize,
    k: usize,
}

/// The load of a [`ValueTable`] (ids over slots) of `n` ids: 1/2, or 3/4 from [`BIG_TABLE`]
/// ids on. The load trades probes for bytes: at 3/4 a 3x3 `goal-1024` solve took 9 % longer
/// than with power-of-two tables at load 1/4 to 1/2 (7 paired runs side by side), at 1/2 1.7 %
/// longer; bytes matter only where the layers are big (4x4 `goal-32`: 61 M states an age).
pub fn load(n: usize) -> f64 {
    if n >= BIG_TABLE {
        0.75
    } else {
        0.5
    }
}

/// From this many ids on, a [`ValueTable`] is filled to 3/4 ([`load`]).
pub const BIG_TABLE: usize = 1 << 24;

impl ValueTable {
    /// The table of a layer `ids` (sorted, deduplicated) with `values[i * k + v]` the value of
    /// id `i` under variant `v`.
    pub fn new(ids: &[u64], values: &[f64], k: usize) -> ValueTable {
        debug_assert_eq!(values.len(), ids.len() * k);
        ValueTable::with_load(ids, |j| values[j], k, load(ids.len()))
    }

    /// [`ValueTable::new`] with `value(rank * k + v)` the value of variant `v` of the id of
    /// rank `rank`: the values need not sit in a vector of their own.
    pub fn from_fn(ids: &[u64], value: impl Fn(usize) -> f64 + Sync, k: usize) -> ValueTable {
        ValueTable::with_load(ids, value, k, load(ids.len()))
    }

    /// [`ValueTable::from_fn`] at load `alpha` (at least one slot stays empty whatever `alpha`).
    ///
    /// A big table is filled by all threads at once: each claims a slot for its id with a
    /// compare-and-swap on the slot's first word (empty → id), then writes the values. Which
    /// slot an id lands in then depends on the order of the inserts, but every id still sits
    /// after an unbroken run of full slots from its home (slots only ever fill), which is all
    /// [`ValueTable::get`] needs: a look-up finds the same values whatever the threads did.
    fn with_load(
        ids: &[u64],
        value: impl Fn(usize) -> f64 + Sync,
        k: usize,
        alpha: f64,
    ) -> ValueTable {
        debug_assert!(is_layer(ids), "a layer must be sorted and deduplicated");
        debug_assert!(alpha > 0.0 && alpha <= 1.0);
        let slots = ((ids.len() as f64 / alpha).ceil() as usize)
            .max(ids.len() + 1)
            .max(16);
        let stride = (k + 1).next_power_of_two();
        let mut words = super::huge::filled(stride * slots, EMPTY);
        let cells = as_atomic(&mut words);
        // Inserts the ids of chunk `c`; the chunks may go in any order, on any thread.
        let insert = |(c, chunk): (usize, &[u64])| {
            for (i, &id) in chunk.iter().enumerate() {
                debug_assert_ne!(id, EMPTY);
                // The ids are sorted, their slots scattered: ask for the slot of an id a few
                // places ahead, so that its cache miss overlaps the inserts in between.
                if let Some(&ahead) = chunk.get(i + BUILD_AHEAD) {
                    prefetch(&cells[home(ahead, slots) * stride]);
                }
                let mut h = home(id, slots);
                while cells[h * stride]
                    .compare_exchange(EMPTY, id, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {
                    h = next(h, slots);
                }
                let rank = c * BUILD_CHUNK + i;
                for v in 0..k {
                    cells[h * stride + 1 + v]
                        .store(value(rank * k + v).to_bits(), Ordering::Relaxed);
                }
            }
        };
        if ids.len() < PARALLEL_BUILD {
            ids.chunks(BUILD_CHUNK).enumerate().for_each(insert);
        } else {
            // The threads join before `words` is read again: what they stored is visible.
            ids.par_chunks(BUILD_CHUNK).enumerate().for_each(insert);
        }
        ValueTable {
            words,
            slots,
            stride,
            k,
        }
    }

    /// Asks the CPU to start loading the slot a lookup of `id` reads first, so that a batch of
    /// lookups overlaps its cache misses instead of paying them one after another.
    #[inline(always)]
    pub fn prefetch(&self, id: u64) {
        prefetch(&self.words[home(id, self.slots) * self.stride]);
    }

    /// The values of `id` (one per variant), if `id` is in the layer.
    #[inline]
    pub fn get(&self, id: u64) -> Option<Values<'_>> {
        let mut h = home(id, self.slots);
        loop {
            let at = h * self.stride;
            let key = self.words[at];
            if key == id {
                return Some(Values(&self.words[at + 1..at + 1 + self.k]));
            }
            if key == EMPTY {
                return None;
            }
            h = next(h, self.slots);
        }
    }
}

/// The values of one id in a [`ValueTable`], one per variant.
#[derive(Clone, Copy)]
pub struct Values<'a>(&'a [u64]);

impl Values<'_> {
    /// The value under variant `v`.
    #[inline(always)]
    pub fn get(self, v: usize) -> f64 {
        f64::from_bits(self.0[v])
    }
}

/// Hints the CPU to bring the cache line holding `x` into its caches (a no-op on targets
/// without a prefetch instruction). A hint only: it reads nothing and cannot fault.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is a hint that never dereferences in a way that can fault or
    // be observed; the pointer comes from a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// The first slot of `id` among `slots`: the high half of the product of its Fibonacci hash
/// and the number of slots (uniform over `0..slots` when the hash is uniform over `u64`).
#[inline(always)]
fn home(id: u64, slots: usize) -> usize {
    let h = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((u128::from(h) * slots as u128) >> 64) as usize
}

/// The slot after `h`, wrapping around.
#[inline(always)]
fn next(h: usize, slots: usize) -> usize {
    if h + 1 == slots {
        0
    } else {
        h + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn value_table_agrees_with_binary_search() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        // 50,000 and 200,000 ids are built by all threads (PARALLEL_BUILD), at loads up to a
        // single empty slot.
        const { assert!(50_000 > PARALLEL_BUILD) };
        for k in [1usize, 2, 3, 6] {
            for n in [0usize, 1, 2, 17, 1000, 50_000, 200_000] {
                let ids = sort_dedup((0..n).map(|_| rng.gen_range(0..1u64 << 36)).collect());
                let values: Vec<f64> = (0..ids.len() * k).map(|_| rng.gen::<f64>()).collect();
                for alpha in [load(n), 0.75, 1.0] {
                    let table = ValueTable::with_load(&ids, |j| values[j], k, alpha);
                    for (r, &id) in ids.iter().enumerate() {
                        let got = table.get(id).expect("an id of the layer");
                        for v in 0..k {
                            assert_eq!(got.get(v).to_bits(), values[r * k + v].to_bits());
                        }
                    }
                    for _ in 0..10_000 {
                        let q = rng.gen_range(0..1u64 << 36);
                        let expect = ids.binary_search(&q).ok().map(|r| values[r * k]);
                        assert_eq!(table.get(q).map(|x| x.get(0)), expect, "k={k} n={n}");
                    }
                }
            }
        }
    }

    #[test]
    fn sort_dedup_agrees_with_std() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for (n, bits) in [
            (0usize, 8u32),
            (10, 8),
            (5000, 36),
            (100_000, 36),
            (100_000, 6),
            (70_000, 48),
            (50_000, 64),
            (600_000, 48),
            (400_000, 19),
            (300_000, 64),
        ] {
            let v: Vec<u64> = (0..n).map(|_| rng.gen::<u64>() >> (64 - bits)).collect();
            let mut expect = v.clone();
            expect.sort_unstable();
            expect.dedup();
            assert_eq!(sort_dedup(v), expect, "n={n} bits={bits}");
        }
    }

    /// Board-like ids (small, skewed exponents in every nibble: parts of very uneven sizes,
    /// several MSD levels) and runs of equal ids, against the standard sort.
    #[test]
    fn radix_sort_agrees_with_std_on_skewed_ids() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        let nibble = |rng: &mut rand::rngs::StdRng| -> u64 {
            let mut e = 0;
            while e < 11 && rng.gen_bool(0.55) {
                e += 1;
            }
            e
        };
        let check = |v: Vec<u64>, what: String| {
            let mut got = v.clone();
            radix_sort(&mut got);
            let mut expect = v;
            expect.sort_unstable();
            assert_eq!(got, expect, "{what}");
        };
        for (n, cells) in [(1_500_000usize, 12usize), (700_000, 16), (300_000, 9)] {
            let v = (0..n)
                .map(|_| (0..cells).fold(0u64, |id, _| (id << 4) | nibble(&mut rng)))
                .collect();
            check(v, format!("n={n} cells={cells}"));
        }
        for distinct in [1u64, 3, 5000] {
            let v = (0..400_000)
                .map(|_| rng.gen_range(0..distinct) << 40 | 7)
                .collect();
            check(v, format!("{distinct} distinct ids"));
        }
    }

    #[test]
    fn sort_dedup_pieces_agrees_with_std() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for (pieces, n, bits) in [
            (1usize, 10usize, 8u32),
            (7, 100_000, 36),
            (33, 20_000, 12),
            (5, 300_000, 64),
        ] {
            let ps: Vec<Vec<u64>> = (0..pieces)
                .map(|_| (0..n).map(|_| rng.gen::<u64>() >> (64 - bits)).collect())
                .collect();
            let mut expect = ps.concat();
            expect.sort_unstable();
            expect.dedup();
            assert_eq!(
                sort_dedup_pieces(ps),
                expect,
                "{pieces} pieces of {n}, {bits} bits"
            );
        }
    }

    #[test]
    fn union_is_sorted_set_union() {
        let a = vec![1, 3, 5, 7];
        let b = vec![2, 3, 8];
        assert_eq!(union(a, b), vec![1, 2, 3, 5, 7, 8]);
        assert_eq!(union(vec![], vec![4]), vec![4]);
        assert_eq!(sort_dedup(vec![5, 1, 5, 2, 1]), vec![1, 2, 5]);
    }
}
