//! Succinct per-age indices: Elias–Fano sets of compacted board codes, and the on-disk
//! "age index" file that maps a state or afterstate code to its rank (and an afterstate
//! rank to its value).
//!
//! # Elias–Fano
//!
//! A sorted set of `m` distinct values `x_0 < … < x_{m-1}`, all `≤ max`, is stored in the
//! quasi-succinct representation of Elias ("Efficient storage and retrieval by content and
//! address of static files", J. ACM 21(2), 1974) and Fano ("On the number of bits required
//! to implement an associative memory", MIT Project MAC memo 61, 1971), as engineered by
//! Vigna ("Quasi-succinct indices", WSDM 2013) and in the `sux` crate:
//!
//! * each value is split into `l = ⌊log₂(U/m)⌋` low bits (with `U = max + 1`, capped at
//!   63), stored verbatim in an array of `m·l` bits;
//! * the high part `h_i = x_i >> l` is written in unary: bit `h_i + i` of a bitvector of
//!   `m + (max >> l) + 1` bits is set. Bucket `h` (the elements sharing high part `h`) is
//!   the run of ones after the `h`-th zero, so the vector has exactly `(max >> l) + 1`
//!   zeros and `m` ones.
//!
//! That costs at most `2 + ⌈log₂(U/m)⌉` bits per element, plus the inventories. Two inventories of absolute
//! positions make the bitvector navigable: the position of every 256th one (for
//! `select1`, hence `get(i)`) and of every 256th zero (for `select0`, hence `rank_of(x)`,
//! which jumps straight to the bucket of `x >> l` and scans its — on average one or two —
//! low parts). Select inside a word is Vigna's broadword algorithm ("Broadword
//! implementation of rank/select queries", WEA 2008) with a byte lookup table.
//!
//! Every structure is a view over `B: AsRef<[u8]>` (the model is the `fst` crate): it
//! works unchanged over a `Vec<u8>` or a memory map that the caller made. Words are read
//! with `u64::from_le_bytes`, so the file format is little-endian everywhere and the
//! slice needs no alignment; sections start at multiples of 8 bytes so that a word index
//! is a byte offset divided by 8. There is no `unsafe`.
//!
//! Serialised Elias–Fano section (all `u64` little-endian):
//!
//! ```text
//! [0] m   [1] max   [2] l   [3] high_bits
//! [4] low_words  [5] high_words  [6] select1 samples  [7] select0 samples
//! low words (m·l bits, plus one padding word so a value straddling two words is
//!   always read from in-bounds memory) | high words | select1 samples | select0 samples
//! ```
//!
//! Every header field is a function of `(m, max)`, so a reader recomputes and compares
//! them rather than trusting them, and re-derives the inventories from the bitvector.
//!
//! # Compaction (Kaneko & Yamashita 2025, §3.2.2)
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
//! # Age index file
//!
//! One file per (board, variant, age). Fixed 176-byte header, little-endian:
//!
//! ```text
//!   0  magic b"A2048IDX"          8  format version u32 (= 1)
//!  12  rows u8  13 cols u8  14 base u8  15 reserved u8 (0)
//!  16  age u32                    20  header length u32 (= 176)
//!  24  n_states u64               32  n_afterstates u64
//!  40  variant length u8, then 64 bytes of UTF-8 zero-padded; zero padding to 112
//! 112  file length u64
//! 120  states offset u64, 128 states length u64        (Elias–Fano of compact ids)
//! 136  afterstates offset u64, 144 afterstates length u64
//! 152  values offset u64, 160 values length u64        (f64 LE, one per afterstate)
//! 168  CRC32 (crc32fast / IEEE) of every byte of the file except these 4, u32
//! 172  reserved u32 (0)
//! 176  sections, contiguous, in the order above, each 8-byte aligned
//! ```
//!
//! Writers go through `path.tmp`, fsync and rename, so a killed writer never leaves a
//! partial file under the real name. Readers check magic, version, lengths (with
//! overflow-safe arithmetic), the checksum and then the internal consistency of each
//! section; any failure is [`IndexError::Corrupted`], never a panic.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of this module.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// An I/O operation on `path` failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bytes that should hold an index do not (bad magic, truncation, checksum, …).
    #[error("corrupted index: {what}")]
    Corrupted { what: String },
    /// The caller asked to encode something that cannot be encoded.
    #[error("invalid input: {what}")]
    InvalidInput { what: String },
}

fn corrupted(what: impl Into<String>) -> IndexError {
    IndexError::Corrupted { what: what.into() }
}

fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidInput { what: what.into() }
}

// ---------------------------------------------------------------------------------------
// Words and broadword selection
// ---------------------------------------------------------------------------------------

type Word = [u8; 8];

/// The whole 8-byte words of `bytes`; a trailing partial word is ignored (readers reject
/// lengths that are not multiples of 8 before getting here).
#[inline]
fn words_of(bytes: &[u8]) -> &[Word] {
    bytes.as_chunks::<8>().0
}

/// Reads word `i`, or 0 past the end: structures are validated on load, so the fallback
/// only exists to make hostile input harmless instead of a panic.
#[inline(always)]
fn rd(words: &[Word], i: usize) -> u64 {
    match words.get(i) {
        Some(w) => u64::from_le_bytes(*w),
        None => 0,
    }
}

/// `SELECT_IN_BYTE[k << 8 | b]` = position of the k-th (0-based) one of byte `b` (8 if
/// there is none).
const SELECT_IN_BYTE: [u8; 2048] = {
    let mut t = [8u8; 2048];
    let mut k = 0;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let mut seen = 0;
            let mut p = 0;
            while p < 8 {
                if (b >> p) & 1 == 1 {
                    if seen == k {
                        t[(k << 8) | b] = p as u8;
                        break;
                    }
                    seen += 1;
                }
                p += 1;
            }
            b += 1;
        }
        k += 1;
    }
    t
};

/// Position of the `k`-th (0-based) one of `x`; requires `k < x.count_ones()`.
#[inline]
fn select_in_word(x: u64, k: u32) -> u32 {
    const L8: u64 = 0x0101_0101_0101_0101;
    const H8: u64 = 0x8080_8080_8080_8080;
    debug_assert!(k < x.count_ones());
    let mut s = x - ((x >> 1) & 0x5555_5555_5555_5555);
    s = (s & 0x3333_3333_3333_3333) + ((s >> 2) & 0x3333_3333_3333_3333);
    s = (s + (s >> 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Byte j of `cum` is the number of ones in bytes 0..=j (at most 64, so no carries).
    let cum = s.wrapping_mul(L8);
    // Byte j has its top bit set iff k >= cum_j, i.e. the wanted one lies beyond byte j;
    // bytes are ≤ 0xBF and ≥ 0, so the subtraction never borrows across bytes.
    let beyond = ((((k as u64) * L8) | H8) - cum) & H8;
    let place = beyond.count_ones() * 8;
    let before = ((cum << 8) >> place) & 0xff;
    let byte = (x >> place) & 0xff;
    place + SELECT_IN_BYTE[(byte | ((k as u64 - before) << 8)) as usize] as u32
}

// ---------------------------------------------------------------------------------------
// Elias–Fano
// ---------------------------------------------------------------------------------------

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
struct EfLayout {
    len: usize,
    max: u64,
    l: u32,
    low: usize,
    high: usize,
    high_words: usize,
    sel1: usize,
    sel1_len: usize,
    sel0: usize,
    sel0_len: usize,
    start: usize,
    end: usize,
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
    if !out.len().is_multiple_of(8) {
        return Err(invalid(format!(
            "Elias-Fano output buffer has length {}, not a multiple of 8",
            out.len()
        )));
    }
    if let Some(i) = values.windows(2).position(|w| w[0] >= w[1]) {
        return Err(invalid(format!(
            "values not strictly increasing at index {}: {} then {}",
            i + 1,
            values[i],
            values[i + 1]
        )));
    }
    let m = values.len() as u64;
    let max = values.last().copied().unwrap_or(0);
    let p = ef_params(m, max).ok_or_else(|| invalid("Elias-Fano set too large"))?;
    let l = p.l as u64;
    let mask = (1u64 << l) - 1;
    let mut low = vec![0u64; p.low_words as usize];
    let mut high = vec![0u64; p.high_words as usize];
    for (i, &v) in values.iter().enumerate() {
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
fn parse_ef(w: &[Word], start: usize, end: usize, name: &str) -> Result<EfLayout, IndexError> {
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
struct EfRef<'a> {
    w: &'a [Word],
    lay: &'a EfLayout,
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
    fn get(&self, i: usize) -> Option<u64> {
        if i >= self.lay.len {
            return None;
        }
        let pos = self.select::<false>(i as u64)?;
        let high = pos.wrapping_sub(i as u64);
        Some((high << self.lay.l) | self.low(i))
    }

    #[inline]
    fn rank_of(&self, x: u64) -> Option<usize> {
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

    fn iter(self) -> EfIter<'a> {
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

// ---------------------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------------------

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
pub fn max_exponent(codes: impl IntoIterator<Item = u64>) -> u8 {
    codes
        .into_iter()
        .map(|c| (0..16).map(|i| (c >> (4 * i)) & 15).max().unwrap_or(0) as u8)
        .max()
        .unwrap_or(0)
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
        (max_exponent(codes) + 1).max(2)
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

    /// Checks that `codes` are strictly increasing, fit the board and have this age.
    fn check_codes(&self, codes: &[u64], what: &str) -> Result<(), IndexError> {
        if let Some(i) = codes.windows(2).position(|w| w[0] >= w[1]) {
            return Err(invalid(format!(
                "{what}: codes not strictly increasing at index {}: {:#x} then {:#x}",
                i + 1,
                codes[i],
                codes[i + 1]
            )));
        }
        for (i, &c) in codes.iter().enumerate() {
            if c & !self.shape_mask != 0 {
                return Err(invalid(format!(
                    "{what}: code {c:#x} at index {i} has cells outside a {}x{} board",
                    self.rows, self.cols
                )));
            }
            let a = board_age(c);
            if a != self.age as u64 {
                return Err(invalid(format!(
                    "{what}: code {c:#x} at index {i} has age {a}, expected {}",
                    self.age
                )));
            }
        }
        Ok(())
    }

    fn compact_all(&self, codes: &[u64]) -> Result<Vec<u64>, IndexError> {
        codes
            .iter()
            .map(|&c| {
                self.compact(c).ok_or_else(|| {
                    invalid(format!("code {c:#x} has an exponent >= base {}", self.base))
                })
            })
            .collect()
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
    /// with the base chosen by [`Compaction::base_for`].
    pub fn build(rows: u8, cols: u8, age: u32, codes: &[u64]) -> Result<Self, IndexError> {
        let codec = Compaction::new(rows, cols, age, Compaction::base_for(codes.iter().copied()))?;
        codec.check_codes(codes, "codes")?;
        let ids = codec.compact_all(codes)?;
        Ok(Self {
            ef: EliasFano::from_sorted(&ids)?,
            codec,
        })
    }
}

impl<B: AsRef<[u8]>> CodeSet<B> {
    /// Combines an Elias–Fano set of compact ids with the codec that produced them.
    pub fn from_parts(ef: EliasFano<B>, codec: Compaction) -> Result<Self, IndexError> {
        if !ef.is_empty() && ef.max() >= codec.universe() {
            return Err(corrupted(format!(
                "compact id {} is outside the universe {}",
                ef.max(),
                codec.universe()
            )));
        }
        Ok(Self { ef, codec })
    }

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

// ---------------------------------------------------------------------------------------
// Age index file
// ---------------------------------------------------------------------------------------

const MAGIC: &[u8; 8] = b"A2048IDX";
const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 176;
const MAX_VARIANT_LEN: usize = 64;
const CRC_AT: usize = 168;

mod off {
    pub const VERSION: usize = 8;
    pub const ROWS: usize = 12;
    pub const COLS: usize = 13;
    pub const BASE: usize = 14;
    pub const RESERVED8: usize = 15;
    pub const AGE: usize = 16;
    pub const HEADER_LEN: usize = 20;
    pub const N_STATES: usize = 24;
    pub const N_AFTER: usize = 32;
    pub const VARIANT_LEN: usize = 40;
    pub const VARIANT: usize = 41;
    pub const FILE_LEN: usize = 112;
    pub const STATES: usize = 120;
    pub const AFTER: usize = 136;
    pub const VALUES: usize = 152;
    pub const RESERVED32: usize = 172;
}

/// What the caller says about an age index when writing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgeIndexMeta {
    pub rows: u8,
    pub cols: u8,
    pub age: u32,
    /// Game variant name, at most 64 bytes of UTF-8.
    pub variant: String,
}

/// Everything the header of an age index file records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgeIndexHeader {
    pub rows: u8,
    pub cols: u8,
    pub age: u32,
    pub variant: String,
    /// Compaction base (1 + largest exponent in the age's boards, at least 2).
    pub base: u8,
    pub n_states: u64,
    pub n_afterstates: u64,
}

/// Sizes of an age index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AgeIndexStats {
    pub n_states: u64,
    pub n_afterstates: u64,
    pub base: u8,
    /// Bytes of the Elias–Fano section of state ids (with its header and inventories).
    pub state_id_bytes: u64,
    pub afterstate_id_bytes: u64,
    pub value_bytes: u64,
    pub file_bytes: u64,
    /// `8·afterstate_id_bytes / n_afterstates` (0 if there are none).
    pub bits_per_afterstate_id: f64,
    pub bits_per_state_id: f64,
}

fn bits_per(bytes: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / n as f64
    }
}

/// Encodes an age index in memory. `state_codes` and `afterstate_codes` must be strictly
/// increasing codes of `meta.age` on a `meta.rows × meta.cols` board, with one value per
/// afterstate.
pub fn encode_age_index(
    meta: &AgeIndexMeta,
    state_codes: &[u64],
    afterstate_codes: &[u64],
    afterstate_values: &[f64],
) -> Result<Vec<u8>, IndexError> {
    if meta.variant.len() > MAX_VARIANT_LEN {
        return Err(invalid(format!(
            "variant name is {} bytes, at most {MAX_VARIANT_LEN} allowed",
            meta.variant.len()
        )));
    }
    if afterstate_values.len() != afterstate_codes.len() {
        return Err(invalid(format!(
            "{} afterstate values for {} afterstates",
            afterstate_values.len(),
            afterstate_codes.len()
        )));
    }
    let base = Compaction::base_for(state_codes.iter().chain(afterstate_codes).copied());
    let codec = Compaction::new(meta.rows, meta.cols, meta.age, base)?;
    codec.check_codes(state_codes, "states")?;
    codec.check_codes(afterstate_codes, "afterstates")?;

    let mut out = vec![0u8; HEADER_LEN];
    let states_off = out.len();
    encode_elias_fano(&codec.compact_all(state_codes)?, &mut out)?;
    let after_off = out.len();
    encode_elias_fano(&codec.compact_all(afterstate_codes)?, &mut out)?;
    let values_off = out.len();
    out.reserve(afterstate_values.len() * 8);
    for v in afterstate_values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let file_len = out.len();

    let put64 = |out: &mut Vec<u8>, at: usize, v: u64| {
        out[at..at + 8].copy_from_slice(&v.to_le_bytes());
    };
    out[..8].copy_from_slice(MAGIC);
    out[off::VERSION..off::VERSION + 4].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[off::ROWS] = meta.rows;
    out[off::COLS] = meta.cols;
    out[off::BASE] = base;
    out[off::AGE..off::AGE + 4].copy_from_slice(&meta.age.to_le_bytes());
    out[off::HEADER_LEN..off::HEADER_LEN + 4].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    put64(&mut out, off::N_STATES, state_codes.len() as u64);
    put64(&mut out, off::N_AFTER, afterstate_codes.len() as u64);
    out[off::VARIANT_LEN] = meta.variant.len() as u8;
    out[off::VARIANT..off::VARIANT + meta.variant.len()].copy_from_slice(meta.variant.as_bytes());
    put64(&mut out, off::FILE_LEN, file_len as u64);
    for (at, a, b) in [
        (off::STATES, states_off, after_off),
        (off::AFTER, after_off, values_off),
        (off::VALUES, values_off, file_len),
    ] {
        put64(&mut out, at, a as u64);
        put64(&mut out, at + 8, (b - a) as u64);
    }
    let crc = file_crc(&out);
    out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

fn file_crc(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..CRC_AT]);
    h.update(&bytes[CRC_AT + 4..]);
    h.finalize()
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Encodes an age index and writes it to `path` atomically: the bytes go to
/// `path` + ".tmp", are fsynced, and the temporary is renamed over `path` (then the
/// directory is fsynced so the rename itself survives a crash).
pub fn write_age_index(
    path: &Path,
    meta: &AgeIndexMeta,
    state_codes: &[u64],
    afterstate_codes: &[u64],
    afterstate_values: &[f64],
) -> Result<AgeIndexStats, IndexError> {
    let bytes = encode_age_index(meta, state_codes, afterstate_codes, afterstate_values)?;
    let stats = AgeIndex::from_bytes(&bytes[..])?.stats();
    let mut tmp: OsString = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> Result<(), IndexError> {
        let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(&bytes).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
        Ok(())
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(path)(e));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Directory fsync is what makes the rename durable on Linux; where directories cannot
    // be opened (e.g. Windows) the rename is still atomic, so failure to open is ignored.
    if let Ok(d) = fs::File::open(dir) {
        d.sync_all().map_err(io_err(dir))?;
    }
    Ok(stats)
}

/// A validated age index over bytes `B` (a `Vec<u8>`, a `&[u8]`, a memory map…).
#[derive(Clone)]
pub struct AgeIndex<B> {
    bytes: B,
    header: AgeIndexHeader,
    codec: Compaction,
    states: EfLayout,
    afters: EfLayout,
    values: usize,
}

impl<B> fmt::Debug for AgeIndex<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgeIndex")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl AgeIndex<Vec<u8>> {
    /// Reads a whole file into memory and validates it; errors name the path.
    pub fn read_file(path: &Path) -> Result<Self, IndexError> {
        let bytes = fs::read(path).map_err(io_err(path))?;
        Self::from_bytes(bytes).map_err(|e| match e {
            IndexError::Corrupted { what } => corrupted(format!("{}: {what}", path.display())),
            e => e,
        })
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl<B: AsRef<[u8]>> AgeIndex<B> {
    /// Validates `bytes` as an age index: magic, version, lengths, checksum, then the
    /// consistency of every section. Never panics.
    ///
    /// `B::as_ref` must return the same bytes every time it is called.
    pub fn from_bytes(bytes: B) -> Result<Self, IndexError> {
        let b = bytes.as_ref();
        let have = b.len();
        if b[..have.min(8)] != MAGIC[..have.min(8)] {
            return Err(corrupted("bad magic"));
        }
        if have < HEADER_LEN {
            return Err(corrupted(format!(
                "truncated: file has {have} bytes, less than the {HEADER_LEN}-byte header"
            )));
        }
        let version = le_u32(b, off::VERSION);
        if version != FORMAT_VERSION {
            return Err(corrupted(format!("unsupported format version {version}")));
        }
        let header_len = le_u32(b, off::HEADER_LEN);
        if header_len as usize != HEADER_LEN {
            return Err(corrupted(format!(
                "header length is {header_len}, expected {HEADER_LEN}"
            )));
        }
        let file_len = le_u64(b, off::FILE_LEN);
        if file_len != have as u64 {
            let kind = if file_len > have as u64 {
                "truncated"
            } else {
                "trailing bytes"
            };
            return Err(corrupted(format!(
                "{kind}: header says {file_len} bytes, file has {have}"
            )));
        }
        let (stored, computed) = (le_u32(b, CRC_AT), file_crc(b));
        if stored != computed {
            return Err(corrupted(format!(
                "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            )));
        }

        // The checksum only proves the bytes are what some writer wrote; the rest proves
        // they describe a well-formed index, so queries can never go out of bounds.
        let (rows, cols, base, age) = (
            b[off::ROWS],
            b[off::COLS],
            b[off::BASE],
            le_u32(b, off::AGE),
        );
        if b[off::RESERVED8] != 0 || le_u32(b, off::RESERVED32) != 0 {
            return Err(corrupted("reserved header fields are not zero"));
        }
        let codec = Compaction::new(rows, cols, age, base).map_err(|e| match e {
            IndexError::InvalidInput { what } => corrupted(format!("header: {what}")),
            e => e,
        })?;
        let vlen = b[off::VARIANT_LEN] as usize;
        if vlen > MAX_VARIANT_LEN {
            return Err(corrupted(format!(
                "variant name length {vlen} exceeds {MAX_VARIANT_LEN}"
            )));
        }
        let variant = std::str::from_utf8(&b[off::VARIANT..off::VARIANT + vlen])
            .map_err(|_| corrupted("variant name is not UTF-8"))?
            .to_owned();
        if b[off::VARIANT + vlen..off::FILE_LEN]
            .iter()
            .any(|&x| x != 0)
        {
            return Err(corrupted("variant name padding is not zero"));
        }
        let n_states = le_u64(b, off::N_STATES);
        let n_after = le_u64(b, off::N_AFTER);

        // Sections must tile the file exactly, in order, from the end of the header.
        let mut expect_off = HEADER_LEN as u64;
        let mut sections = [(0usize, 0usize); 3];
        for (k, (at, name)) in [
            (off::STATES, "states"),
            (off::AFTER, "afterstates"),
            (off::VALUES, "values"),
        ]
        .into_iter()
        .enumerate()
        {
            let (o, l) = (le_u64(b, at), le_u64(b, at + 8));
            if o != expect_off {
                return Err(corrupted(format!(
                    "{name} section starts at {o}, expected {expect_off}"
                )));
            }
            if !l.is_multiple_of(8) {
                return Err(corrupted(format!(
                    "{name} section length {l} is not a multiple of 8"
                )));
            }
            let end = o.checked_add(l).filter(|&e| e <= file_len).ok_or_else(|| {
                corrupted(format!(
                    "{name} section {o}+{l} runs past the end of the {file_len}-byte file"
                ))
            })?;
            sections[k] = ((o / 8) as usize, (end / 8) as usize);
            expect_off = end;
        }
        if expect_off != file_len {
            return Err(corrupted(format!(
                "sections end at {expect_off}, file has {file_len} bytes"
            )));
        }
        let w = words_of(b);
        let states = parse_ef(w, sections[0].0, sections[0].1, "states section")?;
        let afters = parse_ef(w, sections[1].0, sections[1].1, "afterstates section")?;
        for (lay, n, name) in [
            (&states, n_states, "states"),
            (&afters, n_after, "afterstates"),
        ] {
            if lay.len as u64 != n {
                return Err(corrupted(format!(
                    "header counts {n} {name}, section holds {}",
                    lay.len
                )));
            }
            if lay.len > 0 && lay.max >= codec.universe() {
                return Err(corrupted(format!(
                    "{name} compact id {} is outside the universe {}",
                    lay.max,
                    codec.universe()
                )));
            }
        }
        let values_words = (sections[2].1 - sections[2].0) as u64;
        if values_words != n_after {
            return Err(corrupted(format!(
                "values section holds {values_words} values for {n_after} afterstates"
            )));
        }
        let header = AgeIndexHeader {
            rows,
            cols,
            age,
            variant,
            base,
            n_states,
            n_afterstates: n_after,
        };
        Ok(Self {
            values: sections[2].0,
            bytes,
            header,
            codec,
            states,
            afters,
        })
    }

    #[inline(always)]
    fn ef<'a>(&'a self, lay: &'a EfLayout) -> EfRef<'a> {
        EfRef {
            w: words_of(self.bytes.as_ref()),
            lay,
        }
    }

    pub fn meta(&self) -> &AgeIndexHeader {
        &self.header
    }

    pub fn codec(&self) -> &Compaction {
        &self.codec
    }

    /// Rank of a state code, or `None` if it is not a state of this age.
    #[inline]
    pub fn state_rank(&self, code: u64) -> Option<usize> {
        self.ef(&self.states).rank_of(self.codec.compact(code)?)
    }

    /// Rank of an afterstate code, or `None` if it is not an afterstate of this age.
    #[inline]
    pub fn afterstate_rank(&self, code: u64) -> Option<usize> {
        self.ef(&self.afters).rank_of(self.codec.compact(code)?)
    }

    /// Value of the afterstate of rank `rank`.
    ///
    /// # Panics
    /// If `rank >= n_afterstates` (ranks come from [`Self::afterstate_rank`]).
    #[inline]
    pub fn afterstate_value(&self, rank: usize) -> f64 {
        assert!(
            rank < self.afters.len,
            "afterstate rank {rank} out of range (n_afterstates = {})",
            self.afters.len
        );
        f64::from_bits(rd(words_of(self.bytes.as_ref()), self.values + rank))
    }

    /// The `i`-th smallest state code, or `None` if `i >= n_states`.
    pub fn state_code(&self, i: usize) -> Option<u64> {
        self.codec.expand(self.ef(&self.states).get(i)?)
    }

    /// The `i`-th smallest afterstate code, or `None` if `i >= n_afterstates`.
    pub fn afterstate_code(&self, i: usize) -> Option<u64> {
        self.codec.expand(self.ef(&self.afters).get(i)?)
    }

    /// All state codes in increasing order.
    pub fn state_codes(&self) -> impl Iterator<Item = u64> + '_ {
        let c = self.codec;
        self.ef(&self.states)
            .iter()
            .filter_map(move |id| c.expand(id))
    }

    /// All afterstate codes in increasing order.
    pub fn afterstate_codes(&self) -> impl Iterator<Item = u64> + '_ {
        let c = self.codec;
        self.ef(&self.afters)
            .iter()
            .filter_map(move |id| c.expand(id))
    }

    pub fn stats(&self) -> AgeIndexStats {
        let sb = ((self.states.end - self.states.start) * 8) as u64;
        let ab = ((self.afters.end - self.afters.start) * 8) as u64;
        let h = &self.header;
        AgeIndexStats {
            n_states: h.n_states,
            n_afterstates: h.n_afterstates,
            base: h.base,
            state_id_bytes: sb,
            afterstate_id_bytes: ab,
            value_bytes: h.n_afterstates * 8,
            file_bytes: self.bytes.as_ref().len() as u64,
            bits_per_afterstate_id: bits_per(ab, h.n_afterstates),
            bits_per_state_id: bits_per(sb, h.n_states),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    pub fn into_inner(self) -> B {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeSet;

    fn naive_select(x: u64, k: u32) -> u32 {
        let mut seen = 0;
        for p in 0..64 {
            if (x >> p) & 1 == 1 {
                if seen == k {
                    return p;
                }
                seen += 1;
            }
        }
        unreachable!()
    }

    #[test]
    fn select_in_word_matches_naive() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut words = vec![u64::MAX, 1, 1 << 63, 0x8000_0000_0000_0001];
        for _ in 0..2000 {
            let density = rng.gen_range(0..4);
            let mut w = rng.gen::<u64>();
            for _ in 0..density {
                w &= rng.gen::<u64>();
            }
            words.push(w);
        }
        for w in words {
            for k in 0..w.count_ones() {
                assert_eq!(select_in_word(w, k), naive_select(w, k), "w={w:#x} k={k}");
            }
        }
    }

    /// Checks every operation of `ef` against the sorted vector `v`, including probes
    /// around each element and random probes.
    fn check_set(v: &[u64], rng: &mut StdRng) {
        let ef = EliasFano::from_sorted(v).unwrap();
        assert_eq!(ef.len(), v.len());
        assert_eq!(ef.is_empty(), v.is_empty());
        assert_eq!(ef.iter().len(), v.len());
        assert!(ef.iter().eq(v.iter().copied()));
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(ef.get(i), Some(x), "get({i})");
            assert_eq!(ef.rank_of(x), Some(i), "rank_of({x})");
        }
        assert_eq!(ef.get(v.len()), None);
        let probe = |x: u64| {
            assert_eq!(ef.rank_of(x), v.binary_search(&x).ok(), "probe {x}");
        };
        for &x in v.iter().take(2000) {
            probe(x.wrapping_add(1));
            probe(x.wrapping_sub(1));
        }
        for x in [0, 1, 2, u64::MAX, u64::MAX - 1, 1 << 40, 1 << 63] {
            probe(x);
        }
        if let Some(&last) = v.last() {
            probe(last.wrapping_add(1));
            for _ in 0..500 {
                probe(rng.gen_range(0..=last));
            }
        }
        // Round trip through a borrowed slice: the same bytes work zero-copy.
        let borrowed = EliasFano::from_bytes(ef.as_bytes()).unwrap();
        assert!(borrowed.iter().eq(v.iter().copied()));
    }

    fn random_set(rng: &mut StdRng, m: usize, universe: u64) -> Vec<u64> {
        let mut s = BTreeSet::new();
        let m = (m as u64).min(universe) as usize;
        while s.len() < m {
            s.insert(rng.gen_range(0..universe));
        }
        s.into_iter().collect()
    }

    #[test]
    fn elias_fano_matches_sorted_vec() {
        let mut rng = StdRng::seed_from_u64(2);
        check_set(&[], &mut rng);
        for x in [0, 1, 2, 255, 256, 1 << 40, u64::MAX - 1, u64::MAX] {
            check_set(&[x], &mut rng);
        }
        check_set(&[0, u64::MAX], &mut rng);
        check_set(&(0..1000).collect::<Vec<_>>(), &mut rng);
        check_set(
            &(0..700).map(|i| u64::MAX - 699 + i).collect::<Vec<_>>(),
            &mut rng,
        );
        for &m in &[2usize, 3, 10, 100, 257, 1000, 5000] {
            for &universe in &[
                m as u64,
                m as u64 + 1,
                2 * m as u64,
                (m as u64) * 3 + 7,
                1 << 20,
                1 << 40,
                1 << 63,
                u64::MAX,
            ] {
                for _ in 0..3 {
                    let mut v = random_set(&mut rng, m, universe);
                    // Edge values 0 and U-1 are where off-by-ones live.
                    if v.len() >= 2 {
                        v[0] = 0;
                        *v.last_mut().unwrap() = universe - 1;
                        v.dedup();
                    }
                    check_set(&v, &mut rng);
                }
            }
        }
    }

    #[test]
    fn elias_fano_big_buckets_and_runs() {
        // Clustered sets give long runs of ones (multi-word) and big buckets (binary
        // search path), and long runs of zeros for select0.
        let mut rng = StdRng::seed_from_u64(3);
        let mut v: Vec<u64> = (0..3000).collect();
        v.extend((0..3000).map(|i| (1 << 50) + i * 3));
        v.push(u64::MAX / 2);
        check_set(&v, &mut rng);
        let mut v: Vec<u64> = (0..200).map(|i| i * 1_000_000).collect();
        v.extend((0..5000).map(|i| 300_000_000 + i));
        check_set(&v, &mut rng);
    }

    #[test]
    fn elias_fano_rejects_bad_input() {
        assert!(matches!(
            EliasFano::from_sorted(&[3, 3]),
            Err(IndexError::InvalidInput { .. })
        ));
        assert!(matches!(
            EliasFano::from_sorted(&[4, 3]),
            Err(IndexError::InvalidInput { .. })
        ));
        let mut out = vec![0u8; 3];
        assert!(encode_elias_fano(&[1], &mut out).is_err());
    }

    #[test]
    fn elias_fano_hostile_bytes_never_panic() {
        let mut rng = StdRng::seed_from_u64(4);
        for trial in 0..300 {
            let m = rng.gen_range(0..600);
            let bits = rng.gen_range(10..64);
            let v = random_set(&mut rng, m, 1 << bits);
            let good = EliasFano::from_sorted(&v).unwrap().into_inner();
            let mut bad = good.clone();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..bad.len());
                bad[i] ^= 1 << rng.gen_range(0..8);
            }
            if trial % 5 == 0 {
                bad.truncate(rng.gen_range(0..bad.len()));
            }
            if let Ok(ef) = EliasFano::from_bytes(&bad[..]) {
                // Only low bits can change undetected; exercise everything anyway.
                let n = ef.len();
                let _ = ef.iter().count();
                for i in 0..n + 2 {
                    let _ = ef.get(i);
                }
                for &x in &v {
                    let _ = ef.rank_of(x);
                    let _ = ef.rank_of(x ^ 1);
                }
            }
        }
        for len in 0..200 {
            let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            assert!(EliasFano::from_bytes(junk).is_err());
        }
    }

    /// A random board with the given tile sum (`age` even, ≥ 2), or None if the draw ran
    /// out of cells.
    fn random_board(rng: &mut StdRng, n: u32, age: u64, max_e: u64) -> Option<u64> {
        let mut rest = age;
        let mut code = 0u64;
        let mut empty: Vec<u32> = (0..n).collect();
        while rest > 0 {
            if empty.is_empty() {
                return None;
            }
            let cell = empty.swap_remove(rng.gen_range(0..empty.len()));
            let top = (63 - rest.leading_zeros() as u64).min(max_e);
            let e = rng.gen_range(1..=top);
            code |= e << (4 * cell);
            rest -= 1 << e;
        }
        Some(code)
    }

    fn boards_of_age(rng: &mut StdRng, n: u32, age: u64, count: usize) -> Vec<u64> {
        let mut s = BTreeSet::new();
        for _ in 0..count * 20 {
            if s.len() >= count {
                break;
            }
            if let Some(c) = random_board(rng, n, age, 15) {
                s.insert(c);
            }
        }
        s.into_iter().collect()
    }

    #[test]
    fn compaction_is_monotone_and_invertible_exhaustive() {
        // Every 2x2 board with exponents ≤ 6: per age, compaction must be strictly
        // increasing and expand must invert it.
        let mut by_age: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        for code in 0u64..(1 << 16) {
            if (0..4).all(|i| (code >> (4 * i)) & 15 <= 6) {
                by_age.entry(board_age(code)).or_default().push(code);
            }
        }
        for (age, codes) in by_age {
            let base = Compaction::base_for(codes.iter().copied());
            let c = Compaction::new(2, 2, age as u32, base).unwrap();
            let ids: Vec<u64> = codes.iter().map(|&x| c.compact(x).unwrap()).collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "age {age}");
            for (&code, &id) in codes.iter().zip(&ids) {
                assert_eq!(c.expand(id), Some(code));
                assert!(id < c.universe());
            }
            // Ids that are not images of a board of this age must not expand to one.
            let img: BTreeSet<u64> = ids.iter().copied().collect();
            for id in 0..c.universe() {
                if let Some(code) = c.expand(id) {
                    assert!(img.contains(&id) || (code & 15) > 6);
                    assert_eq!(c.compact(code), Some(id));
                }
            }
            assert_eq!(c.expand(c.universe()), None);
        }
    }

    #[test]
    fn code_set_with_real_looking_boards() {
        let mut rng = StdRng::seed_from_u64(5);
        for &(rows, cols, age) in &[
            (1u8, 1u8, 4u32),
            (2, 2, 36),
            (2, 3, 100),
            (3, 3, 500),
            (3, 4, 2048 + 12),
            (4, 4, 1000),
            (4, 4, 65534),
        ] {
            let n = rows as u32 * cols as u32;
            let codes = boards_of_age(&mut rng, n, age as u64, 3000);
            let set = CodeSet::build(rows, cols, age, &codes).unwrap();
            assert_eq!(set.len(), codes.len());
            assert!(set.iter().eq(codes.iter().copied()));
            for (i, &c) in codes.iter().enumerate() {
                assert_eq!(set.rank_of_code(c), Some(i));
                assert_eq!(set.code_at(i), Some(c));
            }
            assert_eq!(set.code_at(codes.len()), None);
            // Absent boards of the same age, other ages, other shapes, big exponents.
            let present: BTreeSet<u64> = codes.iter().copied().collect();
            let others = boards_of_age(&mut rng, n, age as u64, 3000);
            for &c in others.iter().filter(|c| !present.contains(c)) {
                assert_eq!(set.rank_of_code(c), None);
            }
            for &c in &codes {
                assert_eq!(set.rank_of_code(c ^ 1), None, "age differs");
                if n < 16 {
                    assert_eq!(set.rank_of_code(c | 1 << (4 * n)), None, "off-board cell");
                }
                let b = set.codec().base() as u64;
                if n > 1 && b < 16 {
                    let big = (c & !0xf0) | (b << 4);
                    assert_eq!(set.codec().compact(big), None, "exponent >= base");
                    assert_eq!(set.rank_of_code(big), None);
                }
            }
            for _ in 0..2000 {
                let c = rng.gen::<u64>();
                assert_eq!(set.rank_of_code(c), codes.binary_search(&c).ok());
            }
        }
    }

    fn sample_index(
        rng: &mut StdRng,
        rows: u8,
        cols: u8,
        age: u32,
        ns: usize,
        na: usize,
    ) -> (AgeIndexMeta, Vec<u64>, Vec<u64>, Vec<f64>) {
        let n = rows as u32 * cols as u32;
        let states = boards_of_age(rng, n, age as u64, ns);
        let afters = boards_of_age(rng, n, age as u64, na);
        let values: Vec<f64> = afters.iter().map(|_| rng.gen::<f64>() * 1000.0).collect();
        let meta = AgeIndexMeta {
            rows,
            cols,
            age,
            variant: "classic-0.9/0.1".into(),
        };
        (meta, states, afters, values)
    }

    fn check_index<B: AsRef<[u8]>>(
        idx: &AgeIndex<B>,
        meta: &AgeIndexMeta,
        states: &[u64],
        afters: &[u64],
        values: &[f64],
        rng: &mut StdRng,
    ) {
        let h = idx.meta();
        assert_eq!((h.rows, h.cols, h.age), (meta.rows, meta.cols, meta.age));
        assert_eq!(h.variant, meta.variant);
        assert_eq!(h.n_states, states.len() as u64);
        assert_eq!(h.n_afterstates, afters.len() as u64);
        for (i, &c) in states.iter().enumerate() {
            assert_eq!(idx.state_rank(c), Some(i));
            assert_eq!(idx.state_code(i), Some(c));
        }
        for (i, &c) in afters.iter().enumerate() {
            let r = idx.afterstate_rank(c).unwrap();
            assert_eq!(r, i);
            assert_eq!(idx.afterstate_value(r).to_bits(), values[i].to_bits());
            assert_eq!(idx.afterstate_code(i), Some(c));
        }
        assert_eq!(idx.state_code(states.len()), None);
        assert_eq!(idx.afterstate_code(afters.len()), None);
        assert!(idx.state_codes().eq(states.iter().copied()));
        assert!(idx.afterstate_codes().eq(afters.iter().copied()));
        let n = meta.rows as u32 * meta.cols as u32;
        for c in boards_of_age(rng, n, meta.age as u64, 500)
            .into_iter()
            .chain((0..500).map(|_| rng.gen::<u64>()))
        {
            assert_eq!(idx.state_rank(c), states.binary_search(&c).ok());
            assert_eq!(idx.afterstate_rank(c), afters.binary_search(&c).ok());
        }
    }

    #[test]
    fn age_index_round_trip() {
        let mut rng = StdRng::seed_from_u64(6);
        for &(rows, cols, age, ns, na) in &[
            (3u8, 3u8, 200u32, 2000usize, 3000usize),
            (4, 4, 1024, 4000, 6000),
            (2, 2, 8, 0, 0),
            (2, 4, 60, 1, 0),
            (2, 4, 60, 0, 5),
        ] {
            let (meta, s, a, v) = sample_index(&mut rng, rows, cols, age, ns, na);
            let bytes = encode_age_index(&meta, &s, &a, &v).unwrap();
            let idx = AgeIndex::from_bytes(&bytes[..]).unwrap();
            check_index(&idx, &meta, &s, &a, &v, &mut rng);
            let st = idx.stats();
            assert_eq!(st.file_bytes, bytes.len() as u64);
            assert_eq!(
                st.file_bytes,
                HEADER_LEN as u64 + st.state_id_bytes + st.afterstate_id_bytes + st.value_bytes
            );
            assert_eq!(st.base, idx.meta().base);
            let owned = AgeIndex::from_bytes(bytes.clone()).unwrap();
            assert_eq!(owned.stats(), st);
        }
    }

    #[test]
    fn write_and_read_file() {
        let mut rng = StdRng::seed_from_u64(7);
        let dir = std::env::temp_dir().join(format!("efindex-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("age-200.idx");
        let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 200, 500, 700);
        let stats = write_age_index(&path, &meta, &s, &a, &v).unwrap();
        assert!(!dir.join("age-200.idx.tmp").exists());
        let idx = AgeIndex::read_file(&path).unwrap();
        assert_eq!(idx.stats(), stats);
        check_index(&idx, &meta, &s, &a, &v, &mut rng);

        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let err = AgeIndex::read_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("age-200.idx") && err.contains("truncated"),
            "{err}"
        );
        let err = AgeIndex::read_file(&dir.join("missing")).unwrap_err();
        assert!(matches!(err, IndexError::Io { .. }));
        assert!(err.to_string().contains("missing"), "{err}");
        let err = write_age_index(&dir.join("no/such/dir/x"), &meta, &s, &a, &v).unwrap_err();
        assert!(matches!(err, IndexError::Io { .. }) && err.to_string().contains("x.tmp"));
        fs::remove_dir_all(&dir).unwrap();
    }

    fn is_corrupted<B: AsRef<[u8]>>(r: Result<AgeIndex<B>, IndexError>) -> String {
        match r {
            Err(IndexError::Corrupted { what }) => what,
            Err(e) => panic!("wrong error kind: {e}"),
            Ok(_) => panic!("corrupt input accepted"),
        }
    }

    #[test]
    fn corruption_is_always_detected() {
        let mut rng = StdRng::seed_from_u64(8);
        let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 40, 60);
        let good = encode_age_index(&meta, &s, &a, &v).unwrap();
        let mut buf = good.clone();
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                buf[i] ^= flip;
                is_corrupted(AgeIndex::from_bytes(&buf[..]));
                buf[i] ^= flip;
            }
        }
        for len in 0..good.len() {
            let what = is_corrupted(AgeIndex::from_bytes(&good[..len]));
            assert!(what.contains("truncated"), "len {len}: {what}");
        }
        let mut longer = good.clone();
        longer.push(0);
        is_corrupted(AgeIndex::from_bytes(&longer[..]));
        for len in [0usize, 1, 7, 8, 100, 176, 177, 1000, 5000] {
            for _ in 0..20 {
                let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                is_corrupted(AgeIndex::from_bytes(&junk[..]));
                // Junk behind a valid magic and version gets past the first checks.
                let mut j = junk.clone();
                if j.len() >= 12 {
                    j[..8].copy_from_slice(MAGIC);
                    j[8..12].copy_from_slice(&1u32.to_le_bytes());
                    is_corrupted(AgeIndex::from_bytes(&j[..]));
                }
            }
        }
        // The messages say what is wrong.
        let mut b = good.clone();
        b[0] = b'X';
        assert_eq!(is_corrupted(AgeIndex::from_bytes(&b[..])), "bad magic");
        let mut b = good.clone();
        b[8..12].copy_from_slice(&7u32.to_le_bytes());
        assert_eq!(
            is_corrupted(AgeIndex::from_bytes(&b[..])),
            "unsupported format version 7"
        );
        let what = is_corrupted(AgeIndex::from_bytes(&good[..good.len() - 8]));
        assert_eq!(
            what,
            format!(
                "truncated: header says {} bytes, file has {}",
                good.len(),
                good.len() - 8
            )
        );
        let mut b = good.clone();
        *b.last_mut().unwrap() ^= 4;
        assert!(is_corrupted(AgeIndex::from_bytes(&b[..])).starts_with("checksum mismatch"));
    }

    /// Re-seals a modified file with a fresh checksum, to reach the structural checks.
    fn reseal(b: &mut [u8]) {
        let crc = file_crc(b);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn structural_corruption_behind_a_valid_checksum() {
        let mut rng = StdRng::seed_from_u64(9);
        let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 300, 400);
        let good = encode_age_index(&meta, &s, &a, &v).unwrap();
        let mut accepted = 0;
        for _ in 0..3000 {
            let mut b = good.clone();
            let i = rng.gen_range(0..b.len());
            b[i] ^= 1 << rng.gen_range(0..8);
            reseal(&mut b);
            if let Ok(idx) = AgeIndex::from_bytes(&b[..]) {
                // Low bits and values can change undetectably; nothing may panic.
                accepted += 1;
                for &c in s.iter().chain(&a) {
                    let _ = idx.state_rank(c);
                    if let Some(r) = idx.afterstate_rank(c) {
                        let _ = idx.afterstate_value(r);
                    }
                }
                let _ = idx.state_codes().count() + idx.afterstate_codes().count();
            }
        }
        assert!(accepted < 3000);
    }

    #[test]
    fn invalid_input_is_rejected() {
        let mut rng = StdRng::seed_from_u64(10);
        let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 30, 30);
        let inv = |r: Result<Vec<u8>, IndexError>| match r {
            Err(IndexError::InvalidInput { what }) => what,
            other => panic!("expected InvalidInput, got {:?}", other.map(|b| b.len())),
        };
        inv(encode_age_index(&meta, &s, &a, &v[1..]));
        let mut rev = s.clone();
        rev.swap(0, 1);
        inv(encode_age_index(&meta, &rev, &a, &v));
        let mut dup = a.clone();
        dup[1] = dup[0];
        inv(encode_age_index(&meta, &s, &dup, &v));
        let mut wrong_age = s.clone();
        wrong_age.push(*s.last().unwrap() + 1);
        inv(encode_age_index(&meta, &wrong_age, &a, &v));
        let mut off_board = s.clone();
        off_board.push(1 << 40);
        inv(encode_age_index(&meta, &off_board, &a, &v));
        let long = AgeIndexMeta {
            variant: "x".repeat(65),
            ..meta.clone()
        };
        inv(encode_age_index(&long, &s, &a, &v));
        let bad_shape = AgeIndexMeta {
            rows: 5,
            cols: 4,
            ..meta.clone()
        };
        inv(encode_age_index(&bad_shape, &s, &a, &v));
        let max_name = AgeIndexMeta {
            variant: "é".repeat(32),
            ..meta
        };
        let b = encode_age_index(&max_name, &s, &a, &v).unwrap();
        assert_eq!(
            AgeIndex::from_bytes(b).unwrap().meta().variant,
            "é".repeat(32)
        );
    }
}
