//! Layers: the sorted, deduplicated ids of one age, and how they are made (radix sort,
//! deduplication, union, [`Runs`] for a layer grown from batches, and [`RecentIds`] for the
//! repeats a task drops as it makes them).
//!
//! A layer is a `Vec<u64>` of canonical ids in strictly increasing order, so that the rank of
//! an id is its position and per-id data (values, flags) live in plain parallel arrays. The
//! look-ups of the backward pass go through a [`super::table::ValueTable`] built once per
//! layer.

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
        dedup_sorted(&mut ids);
        return ids;
    }
    let mid = ids.len() / 2;
    let (a, b) = ids.split_at_mut(mid);
    rayon::join(|| radix_sort(a), || radix_sort(b));
    merge_dedup(&ids[..mid], &ids[mid..])
}

/// The union of layers (each sorted and distinct), as one layer: merged two at a time, in
/// parallel, rather than sorted again.
pub fn merge_layers(mut runs: Vec<Vec<u64>>) -> Vec<u64> {
    debug_assert!(runs.iter().all(|r| is_layer(r)));
    while runs.len() > 1 {
        let odd = (runs.len() % 2 == 1).then(|| runs.pop()).flatten();
        let pairs: Vec<(Vec<u64>, Vec<u64>)> = {
            let mut it = runs.into_iter();
            std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect()
        };
        runs = pairs
            .into_par_iter()
            .map(|(a, b)| merge_dedup(&a, &b))
            .collect();
        runs.extend(odd);
    }
    runs.pop().unwrap_or_default()
}

/// Sorts and deduplicates ids given in pieces (as parallel tasks produce them), in parallel
/// throughout: a sample of the ids picks splitters ([`Cuts`]), every piece is cut into the
/// ranges between them, and each range is sorted and deduplicated on its own
/// ([`sort_dedup_cut`]).
pub fn sort_dedup_pieces(pieces: Vec<Vec<u64>>) -> Vec<u64> {
    let n: usize = pieces.iter().map(Vec::len).sum();
    let ranges = Cuts::ranges_for_threads();
    if n < RADIX_MIN * ranges {
        return sort_dedup(pieces.concat());
    }
    // Splitters: a strided sample of some 64 ids a range.
    let stride = (n / (ranges * 64)).max(1);
    let cuts = Cuts::from_sample(
        pieces
            .iter()
            .flat_map(|p| p.iter().step_by(stride).copied())
            .collect(),
        ranges,
    );
    // Each piece is cut (and freed) in turn, so that the peak is the ids once plus the ranges
    // being sorted, not the ids twice.
    let cut: Vec<Vec<Vec<u64>>> = pieces
        .into_par_iter()
        .map(|piece| {
            let mut out = cuts.parts(piece.len());
            for x in piece {
                out[cuts.range_of(x)].push(x);
            }
            out
        })
        .collect();
    sort_dedup_cut(cut)
}

/// Splitters that cut ids into ranges sorted on their own, in parallel: range `r` holds the
/// ids `x` with `splitters[r - 1] <= x < splitters[r]`. Any splitters give the same sorted
/// layer (the ranges are disjoint and in order); a sample of the ids makes the ranges about
/// equal, so that the threads finish together.
///
/// A pass that makes ids (the forward pass's children) can cut them into ranges as it makes
/// them, with splitters from a sample made first ([`Cuts::from_sample`]): the ids are then
/// not written whole and read back from memory to be cut.
pub struct Cuts {
    splitters: Vec<u64>,
}

impl Cuts {
    /// Ranges to cut into for the threads of the pool: two a thread, so that a range that
    /// turns out bigger than the others does not leave the other threads idle long. Each
    /// range is a write stream of every task that makes ids, and fewer streams won over
    /// finer balance (`reports/bench/profile.md`).
    pub fn ranges_for_threads() -> usize {
        (rayon::current_num_threads() * 2).max(1)
    }

    /// At most `ranges` ranges, from a sample of the ids in any order: fewer when the sample
    /// holds fewer distinct ids than `ranges`, one when it is empty.
    pub fn from_sample(mut sample: Vec<u64>, ranges: usize) -> Cuts {
        sample.sort_unstable();
        sample.dedup();
        let mut splitters: Vec<u64> = if sample.is_empty() {
            Vec::new()
        } else {
            (1..ranges)
                .map(|j| sample[j * sample.len() / ranges])
                .collect()
        };
        splitters.dedup();
        Cuts { splitters }
    }

    /// The number of ranges (at least one).
    pub fn count(&self) -> usize {
        self.splitters.len() + 1
    }

    /// The range of id `x`.
    #[inline(always)]
    pub fn range_of(&self, x: u64) -> usize {
        self.splitters.partition_point(|&s| s <= x)
    }

    /// Empty vectors, one a range, with room for an even share of `ids` each (and some:
    /// `vec![v; k]` would clone the room away, and ranges grown by doubling copy their ids).
    pub fn parts(&self, ids: usize) -> Vec<Vec<u64>> {
        let k = self.count();
        let room = if ids == 0 {
            0
        } else {
            ids / k + ids / (4 * k) + 16
        };
        (0..k).map(|_| Vec::with_capacity(room)).collect()
    }
}

/// Fibonacci hashing's multiplier (2^64 over the golden ratio, odd): the high bits of `x · FIB`
/// are spread evenly over their range for ids close together, as a layer's are.
pub const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

/// No board: never an id (it would be a board of sixteen 32768 tiles).
pub const NO_ID: u64 = u64::MAX;

/// Bits of a [`RecentIds`] filter's index: 2^12 ids (32 KB), within a core's L1 and L2.
const RECENT_BITS: u32 = 12;

/// The ids a task made last, each in a slot chosen by a hash of it: a direct-mapped filter
/// that drops the repeats a task makes close together before they are written out, cut and
/// sorted. It drops only an id it holds, one the task made before: every id is still kept
/// once.
///
/// It pays where a move slides different tiles into the same afterstate, and little for a
/// spawn's children, whose repeats lie far apart; the measurements, and why 2^12 slots, are
/// in `reports/bench/profile.md` ("A cache of recent ids").
pub struct RecentIds {
    slots: Vec<u64>,
}

impl Default for RecentIds {
    fn default() -> RecentIds {
        RecentIds {
            slots: vec![NO_ID; 1 << RECENT_BITS],
        }
    }
}

impl RecentIds {
    /// True if `x` is not among the filter's ids (it now is), false if it is.
    #[inline(always)]
    pub fn insert(&mut self, x: u64) -> bool {
        let h = (x.wrapping_mul(FIB) >> (64 - RECENT_BITS)) as usize;
        let slot = &mut self.slots[h];
        if *slot == x {
            false
        } else {
            *slot = x;
            true
        }
    }
}

/// Sorts and deduplicates ids cut into ranges: `cut[i][r]` is the part of range `r` that
/// task `i` made, each part's ids within its range of one [`Cuts`] (every task's vector of
/// parts as long). The ranges are sorted in parallel, each from its parts (`sort_range`),
/// a range's parts freed as soon as it is gathered, and the sorted ranges joined in order.
pub fn sort_dedup_cut(cut: Vec<Vec<Vec<u64>>>) -> Vec<u64> {
    let k = cut.first().map_or(0, Vec::len);
    debug_assert!(cut.iter().all(|parts| parts.len() == k));
    let mut by_range: Vec<Vec<Vec<u64>>> = (0..k).map(|_| Vec::with_capacity(cut.len())).collect();
    for parts in cut {
        for (range, part) in by_range.iter_mut().zip(parts) {
            range.push(part);
        }
    }
    let sorted: Vec<Vec<u64>> = by_range.into_par_iter().map(sort_range).collect();
    debug_assert!(sorted
        .windows(2)
        .all(|w| match (w[0].last(), w[1].first()) {
            (Some(a), Some(b)) => a < b,
            _ => true,
        }));
    concat(sorted)
}

/// The sorted, deduplicated ids of one range of [`sort_dedup_cut`], given in parts.
///
/// The first radix digit scatters the ids straight from the parts into the range's vector,
/// and each of its buckets is then sorted in the thread's own scratch ([`sort_cached`]): the
/// parts are not gathered into a copy first, and no scratch as long as the range is made, so
/// the range goes through memory two times fewer and pages in half as much (the sort and the
/// kernel's zeroing of fresh pages are a large part of a big forward pass:
/// `reports/bench/profile.md`).
fn sort_range(parts: Vec<Vec<u64>>) -> Vec<u64> {
    let n: usize = parts.iter().map(Vec::len).sum();
    let bits = varying_bits(parts.iter().flatten());
    let mut out: Vec<u64> = super::huge::with_capacity(n);
    if n <= CACHE_SORT || bits == 0 {
        for part in parts {
            out.extend_from_slice(&part);
        }
        sort_cached(&mut out);
    } else {
        let (shift, mask) = msd_digit(bits);
        let mut at = vec![0usize; mask as usize + 1];
        for &x in parts.iter().flatten() {
            at[((x >> shift) & mask) as usize] += 1;
        }
        let buckets = bucket_ranges(&mut at);
        debug_assert_eq!(buckets.last().map_or(0, |r| r.end), n);
        {
            let room = &mut out.spare_capacity_mut()[..n];
            for part in parts {
                for x in part {
                    let d = ((x >> shift) & mask) as usize;
                    room[at[d]].write(x);
                    at[d] += 1;
                }
            }
        }
        // SAFETY: the buckets' ranges, from the counts of the ids, partition `0..n`; each id
        // was written at its bucket's next position, and as many ids as the bucket counted
        // went there, so every one of the first `n` elements of `out`'s room was written.
        unsafe { out.set_len(n) };
        for r in buckets {
            sort_cached(&mut out[r]);
        }
    }
    dedup_sorted(&mut out);
    out.shrink_to_fit();
    out
}

/// Buckets up to this many ids are sorted in the thread's scratch of [`sort_cached`], kept
/// from bucket to bucket; bigger ones (rare: ids far from uniform) get a scratch of their own,
/// so that a thread does not hold one the size of its biggest bucket ever.
const KEPT_SCRATCH: usize = 4 * CACHE_SORT;

thread_local! {
    /// [`sort_cached`]'s scratch.
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sorts `v` in place with a scratch the thread keeps (in cache, and paged in once): the
/// buckets of a range, sorted one after another.
fn sort_cached(v: &mut [u64]) {
    if v.len() < RADIX_MIN {
        v.sort_unstable();
    } else if v.len() > KEPT_SCRATCH {
        radix_sort(v);
    } else {
        SCRATCH.with_borrow_mut(|scratch| {
            if scratch.len() < v.len() {
                scratch.resize(v.len(), 0);
            }
            sort_part(v, &mut scratch[..v.len()], false);
        });
    }
}

/// From this many ids on, [`concat`] copies on all threads.
const PARALLEL_CONCAT: usize = 1 << 20;

/// The pieces one after another, copied a piece a task on all threads once they are big: the
/// layers the forward pass sorts and merges are hundreds of megabytes, and a copy of them (and
/// the page faults of the new vector) on one thread left the other core waiting (the pass of
/// 4x3 `goal-256` ran at 1.6 to 1.7 cores of 2). Each piece is freed once copied, as the
/// serial copy freed them, so that the pieces and the whole are not all resident at once.
fn concat(pieces: Vec<Vec<u64>>) -> Vec<u64> {
    let total: usize = pieces.iter().map(Vec::len).sum();
    if total < PARALLEL_CONCAT {
        return pieces.concat();
    }
    let mut out: Vec<u64> = super::huge::with_capacity(total);
    {
        // Each task a slice of the new vector's room and the ids it receives, in order.
        let mut room = &mut out.spare_capacity_mut()[..total];
        let mut tasks = Vec::with_capacity(pieces.len());
        for piece in pieces {
            let (dst, rest) = std::mem::take(&mut room).split_at_mut(piece.len());
            tasks.push((dst, piece));
            room = rest;
        }
        debug_assert!(room.is_empty());
        tasks.into_par_iter().for_each(|(dst, piece)| {
            for (d, &s) in dst.iter_mut().zip(&piece) {
                d.write(s);
            }
        });
    }
    // SAFETY: the tasks' slices cut the first `total` elements of `out`'s room into slices
    // exactly as long as the pieces copied there (the lengths sum to `total`), and every task
    // wrote each element of its slice: all `total` elements are initialised.
    unsafe { out.set_len(total) };
    out
}

/// Buckets of at most this many ids are sorted LSD within the core's caches (2^16 ids: 512 KiB,
/// as much again of scratch). Smaller buckets made small boards slower (their many layers of
/// 2^14 to 2^16 ids then take an MSD pass each), bigger ones gained nothing
/// (`reports/bench/profile.md`).
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

/// The number of low bits in which `ids` differ (0 when they are all equal or none).
fn varying_bits<'a>(mut ids: impl Iterator<Item = &'a u64>) -> u32 {
    let Some(&first) = ids.next() else {
        return 0;
    };
    let diff = ids.fold(0u64, |m, &x| m | (x ^ first));
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
        varying_bits(a.iter())
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
    debug_assert_eq!(bits, varying_bits(src.iter()));
    let (shift, mask) = msd_digit(bits);
    let mut at = vec![0usize; mask as usize + 1];
    for &x in src {
        at[((x >> shift) & mask) as usize] += 1;
    }
    let ranges = bucket_ranges(&mut at);
    for &x in src {
        let d = ((x >> shift) & mask) as usize;
        dst[at[d]] = x;
        at[d] += 1;
    }
    ranges
}

/// The shift and mask of the most significant digit of ids that differ in their low `bits`
/// bits: their top [`DIGIT`] of those bits (all of them, if fewer).
fn msd_digit(bits: u32) -> (u32, u64) {
    let shift = bits.saturating_sub(DIGIT);
    (shift, (1u64 << (bits - shift)) - 1)
}

/// Turns the counts of ids by digit into where each digit's ids start (an exclusive prefix
/// sum, in place); returns the ranges of the digits that have ids.
fn bucket_ranges(at: &mut [usize]) -> Vec<std::ops::Range<usize>> {
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

/// Merges two sorted slices (each may repeat ids) into one strictly increasing vector.
///
/// Branch-free like [`union_of`]: every step writes the smaller id after the last one kept
/// and keeps it only if it differs from that one.
fn merge_dedup(a: &[u64], b: &[u64]) -> Vec<u64> {
    // The first id written: the smaller of the two first ones.
    let first = match (a.first(), b.first()) {
        (Some(&x), Some(&y)) => x.min(y),
        (Some(&x), None) | (None, Some(&x)) => x,
        (None, None) => return Vec::new(),
    };
    let mut out = vec![0u64; a.len() + b.len()];
    // `out[..k]` is strictly increasing; `last` is its last id (at first one no id equals).
    let mut k = 0;
    let mut last = !first;
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let m = x.min(y);
        out[k] = m;
        k += usize::from(m != last);
        last = m;
        // On equal ids only `a` steps: the copy in `b` comes next and is dropped as a repeat.
        i += usize::from(x <= y);
        j += usize::from(y < x);
    }
    for &m in a[i..].iter().chain(&b[j..]) {
        out[k] = m;
        k += usize::from(m != last);
        last = m;
    }
    out.truncate(k);
    out
}

/// Drops the repeats of a sorted vector, without a branch on whether an id repeats (board ids
/// repeat about as often as not in a batch of children, so such a branch was a coin toss).
fn dedup_sorted(v: &mut Vec<u64>) {
    if v.len() < 2 {
        return;
    }
    // The last id kept stays in a register: read back from `v[k - 1]`, the id written the step
    // before made every step wait on a store.
    let mut last = v[0];
    let mut k = 1;
    for r in 1..v.len() {
        let x = v[r];
        // `k <= r`: the write never reaches an id not yet read.
        v[k] = x;
        k += usize::from(x != last);
        last = x;
    }
    v.truncate(k);
}

/// From this many ids on, [`union`] merges in parallel.
const PARALLEL_UNION: usize = 1 << 20;

/// Union of two sorted, deduplicated layers. A big union is cut at ids of `a` into ranges
/// merged on all threads (each range's ids of `a` and `b` lie between the same two cuts, so
/// the ranges' unions, in order, are the union).
pub fn union(a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    if a.len() + b.len() < PARALLEL_UNION {
        return union_of(&a, &b);
    }
    let parts = rayon::current_num_threads() * 4;
    let cuts: Vec<(usize, usize)> = (0..=parts)
        .map(|p| {
            if p == 0 {
                return (0, 0);
            }
            if p == parts {
                return (a.len(), b.len());
            }
            let i = p * a.len() / parts;
            (i, b.partition_point(|&y| y < a[i]))
        })
        .collect();
    let pieces: Vec<Vec<u64>> = cuts
        .par_windows(2)
        .map(|w| union_of(&a[w[0].0..w[1].0], &b[w[0].1..w[1].1]))
        .collect();
    drop((a, b));
    concat(pieces)
}

/// The union of the sorted, deduplicated `a` and `b`.
///
/// Without a branch on which side is smaller: the smaller id is appended and each side steps
/// on when its id was it (both, for an id in both). The ids of two batches of children
/// interleave at random, so a branch on the comparison was mispredicted about every other id.
pub fn union_of(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out.push(x.min(y));
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// A layer grown from sorted, deduplicated runs of ids (the forward pass's batches of
/// children), merged as a binary counter adds its carries: a run coming in is merged with
/// the last run held while that one is at most twice its size, so each run held is more than
/// twice the next: a layer of `n` ids is held in at most `log2(n + 1)` runs.
///
/// Merging each run into the whole layer as it came (one [`union`] a run) copied the layer
/// once a run: `k` runs of an age whose layer ends with `n` ids copied about `k·n/2` ids, and
/// `k` grows with the layer (a batch makes at most a fixed number of ids), so that cost grew
/// as the square of the layer. Here an id is copied about once for each time the run holding
/// it at least doubles: `O(n log k)`.
///
/// The price is memory: ids in more than one run are held once a run until those runs merge.
/// The runs held add up to less than twice the first (largest) one, itself no larger than the
/// layer: at most the layer twice, against once plus the run coming in (measured in
/// `reports/bench/profile.md`).
#[derive(Default)]
pub struct Runs {
    /// Sorted, deduplicated runs, each more than twice as long as the next.
    runs: Vec<Vec<u64>>,
}

impl Runs {
    /// Adds a sorted, deduplicated run of ids.
    pub fn push(&mut self, mut run: Vec<u64>) {
        debug_assert!(is_layer(&run));
        if run.is_empty() {
            return;
        }
        while let Some(last) = self.runs.pop_if(|last| last.len() <= 2 * run.len()) {
            run = union(last, run);
        }
        debug_assert!(self
            .runs
            .last()
            .is_none_or(|last| last.len() > 2 * run.len()));
        self.runs.push(run);
    }

    /// The number of runs held (for the tests: the pass needs only the layer).
    #[cfg(test)]
    fn count(&self) -> usize {
        self.runs.len()
    }

    /// Ids held (an id in several runs counts once a run).
    pub fn ids(&self) -> usize {
        self.runs.iter().map(Vec::len).sum()
    }

    /// The runs held, largest first.
    pub fn into_runs(self) -> Vec<Vec<u64>> {
        self.runs
    }

    /// The layer: the union of every run pushed, the shortest runs merged first.
    pub fn into_layer(self) -> Vec<u64> {
        self.runs.into_iter().rev().fold(Vec::new(), union)
    }
}

impl FromIterator<Vec<u64>> for Runs {
    /// The runs, each [`Runs::push`]ed in turn.
    fn from_iter<I: IntoIterator<Item = Vec<u64>>>(runs: I) -> Runs {
        let mut held = Runs::default();
        for run in runs {
            held.push(run);
        }
        held
    }
}

/// True if `ids` is strictly increasing (the layer invariant).
pub fn is_layer(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

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

    /// A board-like id of `cells` nibbles: small exponents (each one more than the last with
    /// probability 0.55, up to 11), so that digits are skewed and parts very uneven in size.
    fn board_like(rng: &mut rand::rngs::StdRng, cells: usize) -> u64 {
        (0..cells).fold(0u64, |id, _| {
            let mut e = 0;
            while e < 11 && rng.gen_bool(0.55) {
                e += 1;
            }
            (id << 4) | e
        })
    }

    /// Board-like ids (several MSD levels) and runs of equal ids, against the standard sort.
    #[test]
    fn radix_sort_agrees_with_std_on_skewed_ids() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        let check = |v: Vec<u64>, what: String| {
            let mut got = v.clone();
            radix_sort(&mut got);
            let mut expect = v;
            expect.sort_unstable();
            assert_eq!(got, expect, "{what}");
        };
        for (n, cells) in [(1_500_000usize, 12usize), (700_000, 16), (300_000, 9)] {
            let v = (0..n).map(|_| board_like(&mut rng, cells)).collect();
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

    /// Ids cut as they are made, by splitters from a sample that may not look like them, sort
    /// to the same layer: a sample from the ids, from other ids (all ids in one range, or
    /// nearly all in the last), an empty sample, and a sample of one id.
    #[test]
    fn sort_dedup_cut_is_the_layer_whatever_the_splitters() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(31);
        let tasks: Vec<Vec<u64>> = (0..9)
            .map(|t| (0..30_000 + t).map(|_| rng.gen::<u64>() >> 20).collect())
            .collect();
        let mut expect = tasks.concat();
        expect.sort_unstable();
        expect.dedup();
        let samples: Vec<(&str, Vec<u64>)> = vec![
            (
                "of the ids",
                tasks.concat().into_iter().step_by(97).collect(),
            ),
            ("above them all", (0..500).map(|i| u64::MAX - i).collect()),
            ("in their lowest 32nd", (0..500).map(|i| i << 30).collect()),
            ("empty", Vec::new()),
            ("one id", vec![expect[expect.len() / 2]]),
        ];
        for (name, sample) in samples {
            for ranges in [1, 3, 8] {
                let cuts = Cuts::from_sample(sample.clone(), ranges);
                assert!(cuts.count() <= ranges);
                let cut: Vec<Vec<Vec<u64>>> = tasks
                    .iter()
                    .map(|ids| {
                        let mut out = cuts.parts(ids.len());
                        for &x in ids {
                            out[cuts.range_of(x)].push(x);
                        }
                        out
                    })
                    .collect();
                assert_eq!(
                    sort_dedup_cut(cut),
                    expect,
                    "sample {name}, {ranges} ranges"
                );
            }
        }
        assert!(sort_dedup_cut(Vec::new()).is_empty());
    }

    /// The union of several layers merged is the layer of all their ids sorted.
    #[test]
    fn merged_layers_are_their_union_sorted() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for runs in [0usize, 1, 2, 3, 5] {
            let layers: Vec<Vec<u64>> = (0..runs)
                .map(|r| {
                    let ids = (0..100 * r + 7).map(|_| rng.gen_range(0..500u64)).collect();
                    sort_dedup(ids)
                })
                .collect();
            let want = sort_dedup(layers.concat());
            assert_eq!(merge_layers(layers), want, "{runs} layers");
        }
    }

    /// The branch-free merge and deduplication against the standard ones: sides with runs of
    /// repeats, shared ids, one side empty, ids at both ends of `u64`.
    #[test]
    fn merge_dedup_and_dedup_agree_with_std() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        for (na, nb, range) in [
            (0usize, 0usize, 10u64),
            (0, 5, 3),
            (7, 0, 3),
            (1, 1, 1),
            (1000, 1000, 50),
            (3000, 10, 1 << 40),
            (5000, 5000, 4000),
        ] {
            let side = |rng: &mut rand::rngs::StdRng, n: usize| -> Vec<u64> {
                let mut v: Vec<u64> = (0..n)
                    .map(|_| match rng.gen_range(0..8) {
                        0 => 0,
                        1 => u64::MAX,
                        _ => rng.gen_range(0..range),
                    })
                    .collect();
                v.sort_unstable();
                v
            };
            let (a, b) = (side(&mut rng, na), side(&mut rng, nb));
            let mut want = [a.clone(), b.clone()].concat();
            want.sort_unstable();
            want.dedup();
            assert_eq!(merge_dedup(&a, &b), want, "{na} and {nb} ids below {range}");
            let mut got = a.clone();
            dedup_sorted(&mut got);
            let mut expect = a;
            expect.dedup();
            assert_eq!(got, expect);
        }
    }

    /// A range sorted from its parts against the standard sort: small and big ranges, empty
    /// parts, all ids equal, board-like skewed ids, and a range whose ids nearly all share
    /// their first digit (a bucket past the kept scratch).
    #[test]
    fn sort_range_agrees_with_std() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(29);
        let cases: Vec<(&str, Vec<Vec<u64>>)> = vec![
            ("none", vec![]),
            ("empty parts", vec![vec![], vec![], vec![]]),
            ("small", vec![vec![5, 1, 5], vec![], vec![2, 1]]),
            (
                "all equal",
                vec![vec![7 << 40; 50_000], vec![7 << 40; 90_000]],
            ),
            (
                "random, in cache",
                (0..3)
                    .map(|_| (0..9_000).map(|_| rng.gen::<u64>() >> 20).collect())
                    .collect(),
            ),
            (
                "random, big",
                (0..9)
                    .map(|_| (0..70_000).map(|_| rng.gen::<u64>() >> 16).collect())
                    .collect(),
            ),
            (
                "board-like",
                (0..5)
                    .map(|_| (0..200_000).map(|_| board_like(&mut rng, 12)).collect())
                    .collect(),
            ),
            (
                "one big bucket",
                (0..4)
                    .map(|_| {
                        (0..300_000)
                            .map(|i| {
                                if i % 100 == 0 {
                                    rng.gen::<u64>()
                                } else {
                                    rng.gen_range(0..1 << 30)
                                }
                            })
                            .collect()
                    })
                    .collect(),
            ),
        ];
        for (what, parts) in cases {
            let mut want = parts.concat();
            want.sort_unstable();
            want.dedup();
            assert_eq!(sort_range(parts), want, "{what}");
        }
    }

    #[test]
    fn concat_is_the_pieces_in_order() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        for (pieces, longest) in [
            (0usize, 1usize),
            (3, 10),
            (5, 700_000),
            (40, 100_000),
            (2, 3_000_000),
        ] {
            let ps: Vec<Vec<u64>> = (0..pieces)
                .map(|_| (0..rng.gen_range(0..longest)).map(|_| rng.gen()).collect())
                .collect();
            assert_eq!(
                concat(ps.clone()),
                ps.concat(),
                "{pieces} pieces up to {longest} ids"
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

    #[test]
    fn runs_make_the_union_of_their_runs_and_stay_few() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        // Runs of equal, growing, shrinking and random sizes; empty ones; one big enough for
        // the parallel union; ids shared between runs and not.
        let shapes: Vec<Vec<usize>> = vec![
            vec![],
            vec![0, 0],
            vec![1],
            vec![100; 40],
            (1..60).map(|i| i * 37).collect(),
            (1..60).rev().map(|i| i * 37).collect(),
            (0..50).map(|_| rng.gen_range(0..3_000)).collect(),
            vec![1_200_000, 5, 900_000, 0, 700_000],
        ];
        for (case, sizes) in shapes.into_iter().enumerate() {
            let span = 1 + sizes.iter().sum::<usize>() as u64;
            let mut runs = Runs::default();
            let mut want = std::collections::BTreeSet::new();
            for n in sizes {
                let run: Vec<u64> = (0..n).map(|_| rng.gen_range(0..span)).collect();
                want.extend(run.iter().copied());
                runs.push(sort_dedup(run));
                // Each run more than twice the next: no more runs than the layer's size has
                // bits.
                let bits = usize::BITS - want.len().leading_zeros();
                assert!(
                    runs.count() <= bits as usize,
                    "case {case}: {} runs",
                    runs.count()
                );
            }
            let got = runs.into_layer();
            assert_eq!(got, want.into_iter().collect::<Vec<u64>>(), "case {case}");
        }
    }

    #[test]
    fn parallel_union_agrees_with_std() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        // Big enough for the parallel merge; b's ids both below a's first and above its last,
        // and many shared.
        for (na, nb) in [(1_500_000, 3), (700_000, 900_000), (5, 1_500_000)] {
            let a: Vec<u64> = (0..na).map(|_| rng.gen_range(1_000..5_000_000)).collect();
            let b: Vec<u64> = (0..nb).map(|_| rng.gen_range(0..5_100_000)).collect();
            let want: Vec<u64> = a
                .iter()
                .chain(&b)
                .copied()
                .collect::<std::collections::BTreeSet<u64>>()
                .into_iter()
                .collect();
            assert_eq!(union(sort_dedup(a), sort_dedup(b)), want);
        }
    }

    #[test]
    fn recent_drops_only_ids_it_was_given_and_keeps_each_id_once() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(23);
        let mut recent = RecentIds::default();
        let mut given = std::collections::HashSet::new();
        let (mut kept, mut dropped) = (Vec::new(), 0);
        // Ids repeated close together (a few hundred apart) and far apart.
        let ids: Vec<u64> = (0..200_000u64)
            .map(|i| match rng.gen_range(0..3) {
                0 => rng.gen::<u64>() >> 8,
                1 => i.saturating_sub(rng.gen_range(0..300)),
                _ => rng.gen_range(0..1_000_000),
            })
            .collect();
        for &x in &ids {
            if recent.insert(x) {
                kept.push(x);
            } else {
                assert!(given.contains(&x), "{x} dropped but never given");
                dropped += 1;
            }
            given.insert(x);
        }
        // Every id is kept at least once: the kept ids make the same layer.
        assert_eq!(sort_dedup(kept), sort_dedup(ids));
        assert!(dropped > 0, "no repeat was dropped");
    }
}
