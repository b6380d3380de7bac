//! Elias–Fano sets: a sorted set of distinct `u64` in the quasi-succinct representation
//! (see the module documentation of [`crate::index`] for the layout and the maths).

use std::fmt;

use super::select::{rd, select_in_word, words_of, Word};
use super::{corrupted, invalid, IndexError};

const EF_HEADER_WORDS: usize = 8;
const LOG2_QUANTUM: u32 = 8;
/// Inventory spacing: one sample per 256 ones/zeros costs ≤ 0.25 + 0.5 bits per element
/// with the default `l`, and bounds a select scan to a few cache-resident words.
const QUANTUM: u64 = 1 << LOG2_QUANTUM;
/// Buckets up to this size are scanned linearly; past it, binary search wins.
const LINEAR_SCAN: u64 = 16;

/// Everything about a section that follows from `(m, max)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EfParams {
    l: u32,
    n_zeros: u64,
    high_bits: u64,
    low_words: u64,
    high_words: u64,
    sel1_len: u64,
    sel0_len: u64,
    total_words: u64,
}

fn low_width(m: u64, max: u64) -> u32 {
    if m == 0 {
        return 0;
    }
    let ratio = (max as u128 + 1) / m as u128;
    if ratio <= 1 {
        0
    } else {
        // A 63-bit cap keeps every shift in range; it only binds for m = 1, max ≥ 2^63.
        (127 - ratio.leading_zeros()).min(63)
    }
}

fn ef_params(m: u64, max: u64) -> Option<EfParams> {
    let l = low_width(m, max);
    let n_zeros = (max >> l).checked_add(1)?;
    let high_bits = m.checked_add(n_zeros)?;
    let low_words = m.checked_mul(l as u64)?.div_ceil(64).checked_add(1)?;
    let high_words = high_bits.div_ceil(64);
    let sel1_len = m.div_ceil(QUANTUM);
    let sel0_len = n_zeros.div_ceil(QUANTUM);
    let total_words = (EF_HEADER_WORDS as u64)
        .checked_add(low_words)?
        .checked_add(high_words)?
        .checked_add(sel1_len)?
        .checked_add(sel0_len)?;
    Some(EfParams {
        l,
        n_zeros,
        high_bits,
        low_words,
        high_words,
        sel1_len,
        sel0_len,
        total_words,
    })
}

/// Where a validated section lives inside a word slice (absolute word indices).
#[derive(Clone, Copy, Debug)]
pub(crate) struct EfLayout {
    pub(crate) len: usize,
    pub(crate) max: u64,
    pub(crate) l: u32,
    pub(crate) low: usize,
    pub(crate) high: usize,
    pub(crate) high_words: usize,
    pub(crate) sel1: usize,
    pub(crate) sel1_len: usize,
    pub(crate) sel0: usize,
    pub(crate) sel0_len: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// Walks the high bitvector and reports the position of every `QUANTUM`-th one and zero
/// (only bits below `high_bits` count). Returns the number of ones. Shared by the builder
/// and the validator so that the two cannot disagree.
fn walk_samples(
    high: impl Fn(usize) -> u64,
    high_words: usize,
    high_bits: u64,
    mut on_one: impl FnMut(u64),
    mut on_zero: impl FnMut(u64),
) -> u64 {
    let mut ones = 0u64;
    let mut zeros = 0u64;
    for wi in 0..high_words {
        let valid = if wi + 1 == high_words && !high_bits.is_multiple_of(64) {
            (1u64 << (high_bits % 64)) - 1
        } else {
            u64::MAX
        };
        let x = high(wi) & valid;
        let z = !x & valid;
        let (c1, c0) = (x.count_ones() as u64, z.count_ones() as u64);
        let mut t = ones.next_multiple_of(QUANTUM);
        while t < ones + c1 {
            on_one(wi as u64 * 64 + select_in_word(x, (t - ones) as u32) as u64);
            t += QUANTUM;
        }
        let mut t = zeros.next_multiple_of(QUANTUM);
        while t < zeros + c0 {
            on_zero(wi as u64 * 64 + select_in_word(z, (t - zeros) as u32) as u64);
            t += QUANTUM;
        }
        ones += c1;
        zeros += c0;
    }
    ones
}

/// Appends the Elias–Fano encoding of `values` (strictly increasing) to `out`, which
/// must have a length that is a multiple of 8 so the section stays word-aligned.
pub fn encode_elias_fano(values: &[u64], out: &mut Vec<u8>) -> Result<(), IndexError> {
    encode_elias_fano_by(values.len(), |i| Ok(values[i]), out)
}

/// The words an Elias–Fano section of `m` values up to `max` takes (its header included), as
/// [`encode_elias_fano`] writes it: `None` if the set is too large to encode.
pub(crate) fn elias_fano_words(m: usize, max: u64) -> Option<u64> {
    Some(ef_params(m as u64, max)?.total_words)
}

/// [`encode_elias_fano`] of `m` values made one at a time by `value(i)` (asked for in
/// increasing `i`, the last first), so that they never exist as a vector: the index writer
/// compacts board codes into the encoder directly. An error of `value` is returned as is.
pub(crate) fn encode_elias_fano_by(
    m: usize,
    mut value: impl FnMut(usize) -> Result<u64, IndexError>,
    out: &mut Vec<u8>,
) -> Result<(), IndexError> {
    if !out.len().is_multiple_of(8) {
        return Err(invalid(format!(
            "Elias-Fano output buffer has length {}, not a multiple of 8",
            out.len()
        )));
    }
    let max = if m == 0 { 0 } else { value(m - 1)? };
    let p = ef_params(m as u64, max).ok_or_else(|| invalid("Elias-Fano set too large"))?;
    let l = p.l as u64;
    let mask = (1u64 << l) - 1;
    let mut low = vec![0u64; p.low_words as usize];
    let mut high = vec![0u64; p.high_words as usize];
    let mut prev = None;
    for i in 0..m {
        let v = if i + 1 == m { max } else { value(i)? };
        if let Some(u) = prev.filter(|&u| u >= v) {
            return Err(invalid(format!(
                "values not strictly increasing at index {i}: {u} then {v}"
            )));
        }
        if v > max {
            // Checked before `v` is placed: the bit vectors are sized for `max`.
            return Err(invalid(format!(
                "values not strictly increasing: {v} at index {i} exceeds the last, {max}"
            )));
        }
        prev = Some(v);
        if l > 0 {
            let bit = i as u64 * l;
            let (w, o) = ((bit / 64) as usize, bit % 64);
            low[w] |= (v & mask) << o;
            if o + l > 64 {
                low[w + 1] |= (v & mask) >> (64 - o);
            }
        }
        let hb = (v >> l) + i as u64;
        high[(hb / 64) as usize] |= 1 << (hb % 64);
    }
    let m = m as u64;
    let mut sel1 = Vec::with_capacity(p.sel1_len as usize);
    let mut sel0 = Vec::with_capacity(p.sel0_len as usize);
    walk_samples(
        |i| high[i],
        high.len(),
        p.high_bits,
        |pos| sel1.push(pos),
        |pos| sel0.push(pos),
    );
    debug_assert_eq!(sel1.len() as u64, p.sel1_len);
    debug_assert_eq!(sel0.len() as u64, p.sel0_len);
    out.reserve(p.total_words as usize * 8);
    let header = [
        m,
        max,
        l,
        p.high_bits,
        p.low_words,
        p.high_words,
        p.sel1_len,
        p.sel0_len,
    ];
    for w in header
        .iter()
        .chain(&low)
        .chain(&high)
        .chain(&sel1)
        .chain(&sel0)
    {
        out.extend_from_slice(&w.to_le_bytes());
    }
    Ok(())
}

/// Validates the section occupying words `[start, end)` of `w`: header fields must equal
/// those implied by `(m, max)`, the size must match exactly, the bitvector must hold `m`
/// ones with clean padding, the inventories must be the ones the builder would write, and
/// the last element must decode to `max`.
pub(crate) fn parse_ef(
    w: &[Word],
    start: usize,
    end: usize,
    name: &str,
) -> Result<EfLayout, IndexError> {
    let bad = |msg: String| corrupted(format!("{name}: {msg}"));
    if start > end || end > w.len() {
        return Err(bad(format!(
            "section words {start}..{end} lie outside the {} words available",
            w.len()
        )));
    }
    let avail = (end - start) as u64;
    if avail < EF_HEADER_WORDS as u64 {
        return Err(bad(format!(
            "section of {avail} words is shorter than its {EF_HEADER_WORDS}-word header"
        )));
    }
    let h: Vec<u64> = (0..EF_HEADER_WORDS).map(|k| rd(w, start + k)).collect();
    let (m, max) = (h[0], h[1]);
    if m == 0 && max != 0 {
        return Err(bad(format!("empty set with nonzero maximum {max}")));
    }
    if m > 0 && max < m - 1 {
        return Err(bad(format!("{m} distinct values cannot all be <= {max}")));
    }
    let p = ef_params(m, max).ok_or_else(|| bad(format!("size overflows for m = {m}")))?;
    let expect = [
        ("low width", p.l as u64, h[2]),
        ("high bits", p.high_bits, h[3]),
        ("low words", p.low_words, h[4]),
        ("high words", p.high_words, h[5]),
        ("select1 samples", p.sel1_len, h[6]),
        ("select0 samples", p.sel0_len, h[7]),
    ];
    for (field, want, got) in expect {
        if want != got {
            return Err(bad(format!("{field} is {got}, expected {want}")));
        }
    }
    if p.total_words != avail {
        return Err(bad(format!(
            "section holds {avail} words but its header describes {}",
            p.total_words
        )));
    }
    // All counts are now bounded by `avail`, so the usize conversions below are exact.
    let low = start + EF_HEADER_WORDS;
    let high = low + p.low_words as usize;
    let sel1 = high + p.high_words as usize;
    let sel0 = sel1 + p.sel1_len as usize;
    let lay = EfLayout {
        len: m as usize,
        max,
        l: p.l,
        low,
        high,
        high_words: p.high_words as usize,
        sel1,
        sel1_len: p.sel1_len as usize,
        sel0,
        sel0_len: p.sel0_len as usize,
        start,
        end,
    };
    if p.high_words > 0 && !p.high_bits.is_multiple_of(64) {
        let last = rd(w, high + lay.high_words - 1);
        if last >> (p.high_bits % 64) != 0 {
            return Err(bad("padding bits of the high-bits vector are set".into()));
        }
    }
    let (mut j1, mut ok1) = (0usize, true);
    let (mut j0, mut ok0) = (0usize, true);
    let ones = walk_samples(
        |i| rd(w, high + i),
        lay.high_words,
        p.high_bits,
        |pos| {
            ok1 &= j1 < lay.sel1_len && rd(w, sel1 + j1) == pos;
            j1 += 1;
        },
        |pos| {
            ok0 &= j0 < lay.sel0_len && rd(w, sel0 + j0) == pos;
            j0 += 1;
        },
    );
    if ones != m {
        return Err(bad(format!(
            "high-bits vector has {ones} ones, expected {m}"
        )));
    }
    if !ok1 || j1 != lay.sel1_len {
        return Err(bad("select1 inventory does not match the high bits".into()));
    }
    if !ok0 || j0 != lay.sel0_len {
        return Err(bad("select0 inventory does not match the high bits".into()));
    }
    if m > 0 {
        let last = EfRef { w, lay: &lay }.get(lay.len - 1);
        if last != Some(max) {
            return Err(bad(format!(
                "last element decodes to {last:?}, header says {max}"
            )));
        }
    }
    Ok(lay)
}

/// Borrowed view of a validated section; all query logic lives here.
#[derive(Clone, Copy)]
pub(crate) struct EfRef<'a> {
    pub(crate) w: &'a [Word],
    pub(crate) lay: &'a EfLayout,
}

impl<'a> EfRef<'a> {
    #[inline(always)]
    fn high_word(&self, i: usize) -> u64 {
        if i < self.lay.high_words {
            rd(self.w, self.lay.high + i)
        } else {
            0
        }
    }

    #[inline(always)]
    fn low(&self, i: usize) -> u64 {
        let l = self.lay.l as u64;
        if l == 0 {
            return 0;
        }
        let bit = (i as u64).wrapping_mul(l);
        let wi = self.lay.low.wrapping_add((bit / 64) as usize);
        let o = bit % 64;
        let mut v = rd(self.w, wi) >> o;
        if o + l > 64 {
            v |= rd(self.w, wi.wrapping_add(1)) << (64 - o);
        }
        v & ((1u64 << l) - 1)
    }

    /// Position of the `k`-th one (`ZERO = false`) or zero (`ZERO = true`).
    #[inline(always)]
    fn select<const ZERO: bool>(&self, k: u64) -> Option<u64> {
        let (inv, inv_len) = if ZERO {
            (self.lay.sel0, self.lay.sel0_len)
        } else {
            (self.lay.sel1, self.lay.sel1_len)
        };
        let j = (k >> LOG2_QUANTUM) as usize;
        if j >= inv_len {
            return None;
        }
        let p = rd(self.w, inv + j);
        let mut r = k & (QUANTUM - 1);
        let mut wi = (p / 64) as usize;
        let flip = |x: u64| if ZERO { !x } else { x };
        let mut x = flip(self.high_word(wi)) & (u64::MAX << (p % 64));
        loop {
            let c = x.count_ones() as u64;
            if r < c {
                return Some(wi as u64 * 64 + select_in_word(x, r as u32) as u64);
            }
            r -= c;
            wi += 1;
            if wi >= self.lay.high_words {
                return None;
            }
            x = flip(self.high_word(wi));
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<u64> {
        if i >= self.lay.len {
            return None;
        }
        let pos = self.select::<false>(i as u64)?;
        let high = pos.wrapping_sub(i as u64);
        Some((high << self.lay.l) | self.low(i))
    }

    #[inline]
    pub(crate) fn rank_of(&self, x: u64) -> Option<usize> {
        let lay = self.lay;
        if lay.len == 0 || x > lay.max {
            return None;
        }
        let h = x >> lay.l;
        // Bucket h starts right after the (h-1)-th zero; everything before it is h zeros
        // and `first` ones, i.e. `first` smaller elements.
        let start = if h == 0 {
            0
        } else {
            self.select::<true>(h - 1)? + 1
        };
        let first = start.checked_sub(h)?;
        let mut wi = (start / 64) as usize;
        let off = start % 64;
        let mut run = (self.high_word(wi) >> off).trailing_ones() as u64;
        if run == 64 - off {
            loop {
                wi += 1;
                if wi >= lay.high_words {
                    break;
                }
                let t = self.high_word(wi).trailing_ones() as u64;
                run += t;
                if t < 64 {
                    break;
                }
            }
        }
        let len = lay.len as u64;
        let (lo_r, hi_r) = (first.min(len), first.saturating_add(run).min(len));
        let target = x & ((1u64 << lay.l) - 1);
        if hi_r - lo_r <= LINEAR_SCAN {
            for r in lo_r..hi_r {
                let v = self.low(r as usize);
                if v >= target {
                    return (v == target).then_some(r as usize);
                }
            }
            None
        } else {
            let (mut a, mut b) = (lo_r, hi_r);
            while a < b {
                let mid = a + (b - a) / 2;
                let v = self.low(mid as usize);
                if v == target {
                    return Some(mid as usize);
                }
                if v < target {
                    a = mid + 1;
                } else {
                    b = mid;
                }
            }
            None
        }
    }

    pub(crate) fn iter(self) -> EfIter<'a> {
        EfIter {
            cur: self.high_word(0),
            ef: self,
            rank: 0,
            wi: 0,
        }
    }
}

/// Iterator over the values of an Elias–Fano set, in increasing order.
#[derive(Clone)]
pub struct EfIter<'a> {
    ef: EfRef<'a>,
    rank: usize,
    wi: usize,
    cur: u64,
}

impl Iterator for EfIter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.rank >= self.ef.lay.len {
            return None;
        }
        while self.cur == 0 {
            self.wi += 1;
            if self.wi >= self.ef.lay.high_words {
                return None;
            }
            self.cur = self.ef.high_word(self.wi);
        }
        let pos = self.wi as u64 * 64 + self.cur.trailing_zeros() as u64;
        self.cur &= self.cur - 1;
        let high = pos.wrapping_sub(self.rank as u64);
        let v = (high << self.ef.lay.l) | self.ef.low(self.rank);
        self.rank += 1;
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.ef.lay.len.saturating_sub(self.rank);
        (n, Some(n))
    }
}

impl ExactSizeIterator for EfIter<'_> {}

/// A static set of distinct `u64` values in Elias–Fano form, over bytes `B`.
#[derive(Clone)]
pub struct EliasFano<B> {
    bytes: B,
    lay: EfLayout,
}

impl<B> fmt::Debug for EliasFano<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EliasFano")
            .field("len", &self.lay.len)
            .field("max", &self.lay.max)
            .field("low_bits", &self.lay.l)
            .finish_non_exhaustive()
    }
}

impl EliasFano<Vec<u8>> {
    /// Builds the set from strictly increasing `values`.
    pub fn from_sorted(values: &[u64]) -> Result<Self, IndexError> {
        let mut bytes = Vec::new();
        encode_elias_fano(values, &mut bytes)?;
        Self::from_bytes(bytes)
    }
}

impl<B: AsRef<[u8]>> EliasFano<B> {
    /// Wraps bytes produced by [`encode_elias_fano`] (exactly one section), validating
    /// them in time linear in the size of the high-bits vector.
    ///
    /// `B::as_ref` must return the same bytes every time it is called.
    pub fn from_bytes(bytes: B) -> Result<Self, IndexError> {
        let b = bytes.as_ref();
        if !b.len().is_multiple_of(8) {
            return Err(corrupted(format!(
                "Elias-Fano bytes have length {}, not a multiple of 8",
                b.len()
            )));
        }
        let w = words_of(b);
        let lay = parse_ef(w, 0, w.len(), "Elias-Fano set")?;
        Ok(Self { bytes, lay })
    }

    #[inline(always)]
    fn r(&self) -> EfRef<'_> {
        EfRef {
            w: words_of(self.bytes.as_ref()),
            lay: &self.lay,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.lay.len
    }

    pub fn is_empty(&self) -> bool {
        self.lay.len == 0
    }

    /// Largest element (0 for the empty set).
    pub fn max(&self) -> u64 {
        self.lay.max
    }

    /// The `i`-th smallest element, or `None` if `i >= len()`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        self.r().get(i)
    }

    /// Index of `x` in the set, or `None` if absent.
    #[inline]
    pub fn rank_of(&self, x: u64) -> Option<usize> {
        self.r().rank_of(x)
    }

    pub fn iter(&self) -> EfIter<'_> {
        self.r().iter()
    }

    /// Serialised size in bytes (header, bits and inventories).
    pub fn size_bytes(&self) -> usize {
        (self.lay.end - self.lay.start) * 8
    }

    /// Bits per element of the serialised form (0 for the empty set).
    pub fn bits_per_element(&self) -> f64 {
        if self.lay.len == 0 {
            0.0
        } else {
            self.size_bytes() as f64 * 8.0 / self.lay.len as f64
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    pub fn into_inner(self) -> B {
        self.bytes
    }
}
