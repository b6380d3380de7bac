//! The age index file: the one on-disk format of this room (header, version, checksum), read
//! zero-copy from any `AsRef<[u8]>`.
//!
//! One file per (board, variant, age). Fixed 176-byte header, little-endian:
//!
//! ```text
//!   0  magic b"A2048IDX"          8  format version u32 (1 or 2, see below)
//!  12  rows u8  13 cols u8  14 base u8  15 flags u8 (version 1: 0)
//!  16  age u32                    20  header length u32 (= 176)
//!  24  n_states u64               32  n_afterstates u64
//!  40  variant length u8, then 64 bytes of UTF-8 zero-padded; zero padding to 112
//! 112  file length u64
//! 120  states offset u64, 128 states length u64        (Elias–Fano of compact ids)
//! 136  afterstates offset u64, 144 afterstates length u64
//! 152  values offset u64, 160 values length u64        (one per afterstate)
//! 168  CRC32 (crc32fast / IEEE) of every byte of the file except these 4, u32
//! 172  fraction bits u8, 173 value width u8, 174 reserved u16 (version 1: all 0)
//! 176  sections, contiguous, in the order above, each 8-byte aligned
//! ```
//!
//! Version 1 (the full layout) holds the state ids and every value as an f64. Version 2 (the
//! compact layout, [`IndexOptions`]) says in `flags` what it holds: bit 0 set = the state ids
//! are stored (clear: the states section is an empty set and `n_states` only counts them, as
//! Kaneko & Yamashita store afterstates only); bit 1 set = values in fixed point, clear = f64.
//! A fixed-point value `v` is stored as `q = round(v·2^f)` (`f` = fraction bits ≤ 52) in `w` =
//! value-width bits (the fewest that hold the age's largest `q`, at most 53 so that `q·2^-f` is
//! an exact f64), packed low bit first into words, with one padding word so that a value
//! straddling two words is read from in-bounds memory. It reads back within `2^-(f+1)` of the
//! value written.
//!
//! This room does no file I/O: the store writes the encoded bytes (atomically), readers hand
//! in bytes (a vector, a memory map). Readers check magic, version, lengths (with
//! overflow-safe arithmetic), the checksum and then the internal consistency of each
//! section; any failure is [`IndexError::Corrupted`], never a panic. [`AgeIndex::expect`]
//! checks that a file is the one asked for (board, age, variant).

use std::fmt;

use rayon::prelude::*;

use super::compaction::{sorted_most, Batch, Compaction};
use super::elias_fano::{elias_fano_words, encode_elias_fano_by, parse_ef, EfLayout, EfRef};
use super::select::{rd, words_of};
use super::{corrupted, invalid, IndexError};

pub(crate) const MAGIC: &[u8; 8] = b"A2048IDX";
/// The full layout's files: state ids, f64 values.
const FORMAT_VERSION: u32 = 1;
/// Files written with other [`IndexOptions`]: what they hold is in the header's flags.
const FORMAT_VERSION_OPTIONS: u32 = 2;
/// Flag: the state ids are stored.
const FLAG_STATE_IDS: u8 = 1;
/// Flag: values in fixed point (else f64).
const FLAG_FIXED: u8 = 2;
/// The most fraction bits of a fixed-point value.
pub const MAX_FRACTION_BITS: u8 = 52;
/// The widest fixed-point value, in bits: `q < 2^53` converts to f64 exactly.
const MAX_VALUE_WIDTH: u32 = 53;
pub(crate) const HEADER_LEN: usize = 176;
/// The longest variant name a header holds, in bytes (`Variant::parse` refuses longer names,
/// so a solve never gets as far as writing one).
pub const MAX_VARIANT_LEN: usize = 64;
pub(crate) const CRC_AT: usize = 168;

mod off {
    pub const VERSION: usize = 8;
    pub const ROWS: usize = 12;
    pub const COLS: usize = 13;
    pub const BASE: usize = 14;
    pub const FLAGS: usize = 15;
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
    pub const FRACTION: usize = 172;
    pub const WIDTH: usize = 173;
    pub const RESERVED16: usize = 174;
}

/// How values are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueCoding {
    /// Every bit of the f64.
    F64,
    /// `round(v·2^fraction_bits)` in as few bits as the age needs; reads back within
    /// `2^-(fraction_bits+1)`. Values must be finite and ≥ 0.
    Fixed { fraction_bits: u8 },
}

impl ValueCoding {
    /// The most a stored value differs from the value written (0 for f64).
    pub fn max_error(self) -> f64 {
        match self {
            ValueCoding::F64 => 0.0,
            ValueCoding::Fixed { fraction_bits } => (-f64::from(fraction_bits) - 1.0).exp2(),
        }
    }
}

/// What an age index holds besides the afterstate ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexOptions {
    /// Store the state ids (rank of a state, and whether a board is a reachable state).
    pub state_ids: bool,
    pub values: ValueCoding,
}

impl IndexOptions {
    /// The full layout (format version 1): state ids and f64 values.
    pub const FULL: IndexOptions = IndexOptions {
        state_ids: true,
        values: ValueCoding::F64,
    };
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self::FULL
    }
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
    /// What the file holds (state ids or not, how values are coded).
    pub options: IndexOptions,
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
    encode_age_index_with_stats(
        meta,
        state_codes,
        afterstate_codes,
        afterstate_values,
        IndexOptions::FULL,
    )
    .map(|(bytes, _)| bytes)
}

/// How an age's values are stored when asked for `asked`, and the width of a fixed-point
/// code (that of the largest value). Fixed point where the largest value fits
/// [`MAX_VALUE_WIDTH`] bits at the precision asked; where it does not (a precision finer
/// than an f64 of that size holds: 3x3's 5,469 points at 2^-50), every bit of the f64, which
/// is exact and so within the error asked. A value below 0 or not finite is refused.
fn stored_coding(values: &[f64], asked: ValueCoding) -> Result<(ValueCoding, u32), IndexError> {
    let ValueCoding::Fixed { fraction_bits } = asked else {
        return Ok((asked, 0));
    };
    if fraction_bits > MAX_FRACTION_BITS {
        return Err(invalid(format!(
            "{fraction_bits} fraction bits, at most {MAX_FRACTION_BITS}"
        )));
    }
    // In parallel (an age of a big board has tens of millions of values): the first value
    // refused, as a scan in order finds it, then the largest.
    let scale = fixed_scale(fraction_bits);
    let refused = |v: f64| !(v.is_finite() && fixed_round(v, scale) >= 0.0);
    if let Some(i) = values.par_iter().position_first(|&v| refused(v)) {
        let v = values[i];
        return Err(invalid(format!(
            "value {v} of afterstate {i}: values in fixed point must be finite and ≥ 0"
        )));
    }
    let max = values
        .par_iter()
        .map(|&v| fixed_round(v, scale))
        .reduce(|| 0.0, f64::max);
    if max >= f64::from(MAX_VALUE_WIDTH).exp2() {
        return Ok((ValueCoding::F64, 0));
    }
    Ok((asked, 64 - (max as u64).leading_zeros()))
}

/// `values` at `2^-fraction_bits`, `width` bits each, packed into words (the padding word
/// included); [`stored_coding`] has checked that they fit.
fn pack_fixed(values: &[f64], fraction_bits: u8, width: u32) -> Vec<u64> {
    let mut words = vec![0u64; packed_words(values.len() as u64, width) as usize];
    let scale = fixed_scale(fraction_bits);
    if width > 0 {
        for (i, &v) in values.iter().enumerate() {
            let q = fixed_round(v, scale) as u64;
            let bit = i as u64 * u64::from(width);
            let (k, o) = ((bit / 64) as usize, (bit % 64) as u32);
            words[k] |= q << o;
            if o + width > 64 {
                words[k + 1] |= q >> (64 - o);
            }
        }
    }
    words
}

/// `2^fraction_bits`, what [`fixed_round`] scales by (asked once an age, not once a value).
fn fixed_scale(fraction_bits: u8) -> f64 {
    f64::from(fraction_bits).exp2()
}

/// `v` at `2^-fraction_bits` (`scale` from [`fixed_scale`]), rounded: multiplying by a power of
/// two is exact, the rounding is the only error. [`stored_coding`] has checked that it fits.
#[inline]
fn fixed_round(v: f64, scale: f64) -> f64 {
    round_half_away(v * scale)
}

/// `x.round()` (half away from zero) to the bit, without the call into libm that `round` is on
/// x86-64's baseline (no SSE4.1): a call a value was ≈ 0.5 % of a 4x3 compact backward pass.
///
/// Exact: below 2^52 in magnitude, `t = trunc(x)` is exact (the cast), so is `x − t` (both
/// multiples of `x`'s last place and `|x − t| < 1 ≤ |t|` or `t = 0`), and so is `t ± 1`; from
/// 2^52 on every f64 is an integer, returned as it is, as are NaN and the infinities.
#[inline]
fn round_half_away(x: f64) -> f64 {
    const INTEGRAL_FROM: f64 = 4_503_599_627_370_496.0; // 2^52
    if x.is_nan() || x.abs() >= INTEGRAL_FROM {
        return x;
    }
    let t = x as i64 as f64;
    let r = if (x - t).abs() >= 0.5 {
        t + x.signum()
    } else {
        t
    };
    // −0.3 rounds to −0.0, as `round` has it.
    r.copysign(x)
}

/// Words holding `m` values of `width` bits packed low bit first, with one padding word.
fn packed_words(m: u64, width: u32) -> u64 {
    (m * u64::from(width)).div_ceil(64) + 1
}

/// Reads the `i`-th `width`-bit value of packed words starting at word `at`.
#[inline(always)]
fn read_packed(words: &[super::select::Word], at: usize, i: usize, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let bit = i as u64 * u64::from(width);
    let (w, o) = (at + (bit / 64) as usize, (bit % 64) as u32);
    let lo = rd(words, w) >> o;
    // The padding word makes `w + 1` in bounds; `o + width > 64` is the only case that needs it.
    let hi = if o + width > 64 {
        rd(words, w + 1) << (64 - o)
    } else {
        0
    };
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (lo | hi) & mask
}

/// [`encode_age_index`], with the sizes of what it wrote (the same figures
/// [`AgeIndex::stats`] reads back, without parsing the bytes again).
pub fn encode_age_index_with_stats(
    meta: &AgeIndexMeta,
    state_codes: &[u64],
    afterstate_codes: &[u64],
    afterstate_values: &[f64],
    options: IndexOptions,
) -> Result<(Vec<u8>, AgeIndexStats), IndexError> {
    check_variant(&meta.variant)?;
    if afterstate_values.len() != afterstate_codes.len() {
        return Err(invalid(format!(
            "{} afterstate values for {} afterstates",
            afterstate_values.len(),
            afterstate_codes.len()
        )));
    }
    // One pass over each set: its largest exponent (the base) and its order.
    let (state_most, after_most) = rayon::join(
        || sorted_most(state_codes, "states"),
        || sorted_most(afterstate_codes, "afterstates"),
    );
    let base = Compaction::base_above(state_most?.max(after_most?));
    let codec = Compaction::new(meta.rows, meta.cols, meta.age, base)?;
    let batch = Batch::new(&codec);

    let stored_states: &[u64] = if options.state_ids { state_codes } else { &[] };
    // The file's length is known before it is written (values in fixed point are packed
    // below, after their width is known): one allocation, no copy as it grows.
    let ef_bytes = |codes: &[u64], what| -> Result<usize, IndexError> {
        let max = match codes.len() {
            0 => 0,
            m => batch.compact_at(codes, m - 1, what)?,
        };
        let words = elias_fano_words(codes.len(), max)
            .ok_or_else(|| invalid(format!("{what}: Elias-Fano set too large")))?;
        Ok(words as usize * 8)
    };
    let (values, width) = stored_coding(afterstate_values, options.values)?;
    let options = IndexOptions { values, ..options };
    let value_bytes = match values {
        ValueCoding::F64 => afterstate_values.len() * 8,
        ValueCoding::Fixed { .. } => {
            packed_words(afterstate_values.len() as u64, width) as usize * 8
        }
    };
    let planned = HEADER_LEN
        + ef_bytes(stored_states, "states")?
        + ef_bytes(afterstate_codes, "afterstates")?
        + value_bytes;
    let mut out = Vec::with_capacity(planned);
    out.resize(HEADER_LEN, 0);
    let states_off = out.len();
    // The codes are compacted as the encoder takes them (their compact ids never exist as a
    // vector: 8 bytes a board at the age's peak).
    let encode = |codes: &[u64], what, out: &mut Vec<u8>| {
        encode_elias_fano_by(codes.len(), |i| batch.compact_at(codes, i, what), out)
    };
    // The sections are made at once: the states' set into the file, the afterstates' set and
    // the values in fixed point beside it (then appended; values as f64 are their own bytes).
    let (states, (after, words)) = rayon::join(
        || encode(stored_states, "states", &mut out),
        || {
            rayon::join(
                || {
                    let mut bytes = Vec::new();
                    encode(afterstate_codes, "afterstates", &mut bytes).map(|()| bytes)
                },
                || match options.values {
                    ValueCoding::F64 => Vec::new(),
                    ValueCoding::Fixed { fraction_bits } => {
                        pack_fixed(afterstate_values, fraction_bits, width)
                    }
                },
            )
        },
    );
    states?;
    let after_off = out.len();
    out.extend_from_slice(&after?);
    let values_off = out.len();
    match options.values {
        ValueCoding::F64 => {
            for v in afterstate_values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        ValueCoding::Fixed { .. } => {
            for x in words {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    debug_assert_eq!(out.len(), planned, "the file's length was computed before");
    let file_len = out.len();

    let put64 = |out: &mut Vec<u8>, at: usize, v: u64| {
        out[at..at + 8].copy_from_slice(&v.to_le_bytes());
    };
    out[..8].copy_from_slice(MAGIC);
    let version = if options == IndexOptions::FULL {
        FORMAT_VERSION
    } else {
        let mut flags = 0;
        if options.state_ids {
            flags |= FLAG_STATE_IDS;
        }
        if let ValueCoding::Fixed { fraction_bits } = options.values {
            flags |= FLAG_FIXED;
            out[off::FRACTION] = fraction_bits;
            out[off::WIDTH] = width as u8;
        }
        out[off::FLAGS] = flags;
        FORMAT_VERSION_OPTIONS
    };
    out[off::VERSION..off::VERSION + 4].copy_from_slice(&version.to_le_bytes());
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
    let (n_states, n_after) = (state_codes.len() as u64, afterstate_codes.len() as u64);
    let (sb, ab) = (
        (after_off - states_off) as u64,
        (values_off - after_off) as u64,
    );
    let stats = AgeIndexStats {
        n_states,
        n_afterstates: n_after,
        base,
        state_id_bytes: sb,
        afterstate_id_bytes: ab,
        value_bytes: (file_len - values_off) as u64,
        file_bytes: out.len() as u64,
        bits_per_afterstate_id: bits_per(ab, n_after),
        bits_per_state_id: if options.state_ids {
            bits_per(sb, n_states)
        } else {
            0.0
        },
    };
    Ok((out, stats))
}

/// Refuses a variant name longer than a header holds.
pub(crate) fn check_variant(variant: &str) -> Result<(), IndexError> {
    if variant.len() > MAX_VARIANT_LEN {
        return Err(invalid(format!(
            "variant name is {} bytes, at most {MAX_VARIANT_LEN} allowed",
            variant.len()
        )));
    }
    Ok(())
}

/// Checks that a file holding `have` (rows, cols, age, variant) is the one asked for (`want`):
/// another one (a misplaced or renamed file) is corrupted data, not an answer.
pub(crate) fn expect_file(
    have: (u8, u8, u32, &str),
    want: (u8, u8, u32, &str),
) -> Result<(), IndexError> {
    if have != want {
        let ((r, c, a, v), (rows, cols, age, variant)) = (have, want);
        return Err(corrupted(format!(
            "holds {r}x{c} age {a} variant {v}, expected {rows}x{cols} age {age} variant {variant}"
        )));
    }
    Ok(())
}

pub(crate) fn file_crc(bytes: &[u8]) -> u32 {
    crc_except(bytes, CRC_AT)
}

/// The CRC32 of every byte of a file but the four at `crc_at` (where it is stored).
pub(crate) fn crc_except(bytes: &[u8], crc_at: usize) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..crc_at]);
    h.update(&bytes[crc_at + 4..]);
    h.finalize()
}

/// The frame every file of this room has: its magic, a format version (u32 at 8), the header's
/// length (u32 at 20; both as in the age index's header), the file's length (u64 at `file_len_at`) and the CRC32 of the rest (u32
/// at `crc_at`).
pub(crate) struct Frame {
    pub magic: &'static [u8; 8],
    pub versions: &'static [u32],
    pub header_len: usize,
    pub file_len_at: usize,
    pub crc_at: usize,
}

/// Checks a file's frame, in this order: magic, a whole header, a known version, the header's
/// length, the file's length, the checksum; returns the version.
pub(crate) fn check_frame(b: &[u8], f: &Frame) -> Result<u32, IndexError> {
    let have = b.len();
    if b[..have.min(8)] != f.magic[..have.min(8)] {
        return Err(corrupted("bad magic"));
    }
    let header = f.header_len;
    if have < header {
        return Err(corrupted(format!(
            "truncated: file has {have} bytes, less than the {header}-byte header"
        )));
    }
    let version = le_u32(b, off::VERSION);
    if !f.versions.contains(&version) {
        return Err(corrupted(format!("unsupported format version {version}")));
    }
    let header_len = le_u32(b, off::HEADER_LEN);
    if header_len as usize != header {
        return Err(corrupted(format!(
            "header length is {header_len}, expected {header}"
        )));
    }
    let file_len = le_u64(b, f.file_len_at);
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
    let (stored, computed) = (le_u32(b, f.crc_at), crc_except(b, f.crc_at));
    if stored != computed {
        return Err(corrupted(format!(
            "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
        )));
    }
    Ok(version)
}

/// A validated age index over bytes `B` (a `Vec<u8>`, a `&[u8]`, a memory map…).
#[derive(Clone)]
pub struct AgeIndex<B> {
    bytes: B,
    header: AgeIndexHeader,
    codec: Compaction,
    states: EfLayout,
    afters: EfLayout,
    /// First word of the values section.
    values: usize,
    /// Bits per fixed-point value (unused for f64).
    width: u32,
    /// `2^-fraction_bits` (unused for f64).
    unit: f64,
}

impl<B> fmt::Debug for AgeIndex<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgeIndex")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

pub(crate) fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl<B: AsRef<[u8]>> AgeIndex<B> {
    /// Validates `bytes` as an age index: magic, version, lengths, checksum, then the
    /// consistency of every section. Never panics.
    ///
    /// `B::as_ref` must return the same bytes every time it is called.
    pub fn from_bytes(bytes: B) -> Result<Self, IndexError> {
        let b = bytes.as_ref();
        let version = check_frame(
            b,
            &Frame {
                magic: MAGIC,
                versions: &[FORMAT_VERSION, FORMAT_VERSION_OPTIONS],
                header_len: HEADER_LEN,
                file_len_at: off::FILE_LEN,
                crc_at: CRC_AT,
            },
        )?;
        let file_len = b.len() as u64;

        // The checksum only proves the bytes are what some writer wrote; the rest proves
        // they describe a well-formed index, so queries can never go out of bounds.
        let (rows, cols, base, age) = (
            b[off::ROWS],
            b[off::COLS],
            b[off::BASE],
            le_u32(b, off::AGE),
        );
        let (flags, fraction, width) = (b[off::FLAGS], b[off::FRACTION], b[off::WIDTH]);
        let reserved = [b[off::RESERVED16], b[off::RESERVED16 + 1]] != [0, 0];
        let options = if version == FORMAT_VERSION {
            if flags != 0 || fraction != 0 || width != 0 || reserved {
                return Err(corrupted("reserved header fields are not zero"));
            }
            IndexOptions::FULL
        } else {
            if flags & !(FLAG_STATE_IDS | FLAG_FIXED) != 0 || reserved {
                return Err(corrupted(format!(
                    "unknown header flags {flags:#04x} or reserved bytes not zero"
                )));
            }
            let fixed = flags & FLAG_FIXED != 0;
            if fixed && (fraction > MAX_FRACTION_BITS || u32::from(width) > MAX_VALUE_WIDTH) {
                return Err(corrupted(format!(
                    "fixed-point values of {width} bits at 2^-{fraction}: at most {MAX_VALUE_WIDTH} bits and {MAX_FRACTION_BITS} fraction bits"
                )));
            }
            if !fixed && (fraction != 0 || width != 0) {
                return Err(corrupted("f64 values with a fixed-point width"));
            }
            IndexOptions {
                state_ids: flags & FLAG_STATE_IDS != 0,
                values: if fixed {
                    ValueCoding::Fixed {
                        fraction_bits: fraction,
                    }
                } else {
                    ValueCoding::F64
                },
            }
        };
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
        let stored_states = if options.state_ids { n_states } else { 0 };
        for (lay, n, name) in [
            (&states, stored_states, "states"),
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
        let expect_words = match options.values {
            ValueCoding::F64 => n_after,
            ValueCoding::Fixed { .. } => packed_words(n_after, u32::from(width)),
        };
        if values_words != expect_words {
            return Err(corrupted(format!(
                "values section holds {values_words} words for {n_after} afterstates, expected {expect_words}"
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
            options,
        };
        let unit = match options.values {
            ValueCoding::F64 => 1.0,
            ValueCoding::Fixed { fraction_bits } => (-f64::from(fraction_bits)).exp2(),
        };
        Ok(Self {
            values: sections[2].0,
            width: u32::from(width),
            unit,
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

    /// Checks that this index is the one asked for: a valid file of another board, age or
    /// variant (a misplaced or renamed file) is corrupted data, not an answer.
    pub fn expect(&self, rows: u8, cols: u8, age: u32, variant: &str) -> Result<(), IndexError> {
        let h = &self.header;
        expect_file(
            (h.rows, h.cols, h.age, &h.variant),
            (rows, cols, age, variant),
        )
    }

    pub fn codec(&self) -> &Compaction {
        &self.codec
    }

    /// Whether the file holds the state ids (the compact layout does not): without them
    /// [`Self::state_rank`] knows no state.
    pub fn has_state_ids(&self) -> bool {
        self.header.options.state_ids
    }

    /// How the values are stored.
    pub fn value_coding(&self) -> ValueCoding {
        self.header.options.values
    }

    /// Rank of a state code, or `None` if it is not a state of this age (or the file holds no
    /// state ids: see [`Self::has_state_ids`]).
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
        let w = words_of(self.bytes.as_ref());
        match self.header.options.values {
            ValueCoding::F64 => f64::from_bits(rd(w, self.values + rank)),
            // Exact: the code has at most 53 bits and the unit is a power of two.
            ValueCoding::Fixed { .. } => {
                read_packed(w, self.values, rank, self.width) as f64 * self.unit
            }
        }
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
            value_bytes: self.bytes.as_ref().len() as u64 - self.values as u64 * 8,
            file_bytes: self.bytes.as_ref().len() as u64,
            bits_per_afterstate_id: bits_per(ab, h.n_afterstates),
            bits_per_state_id: if h.options.state_ids {
                bits_per(sb, h.n_states)
            } else {
                0.0
            },
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
    use super::round_half_away;

    /// The bits of `f64::round`, on the halves and near-halves where a shortcut
    /// (`floor(x + 0.5)`) goes wrong, near 2^52 and 2^53, and on seeded random values of every
    /// magnitude.
    #[test]
    fn round_half_away_is_round_to_the_bit() {
        let mut cases = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            0.3,
            -0.3,
            4_503_599_627_370_495.5,
            -4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for e in -60..70 {
            let p = 2f64.powi(e);
            cases.extend([p, p + 0.5, p - 0.5, p.next_up(), p.next_down(), -p - 0.5]);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Any bits (any magnitude, sign, NaN) and values scaled like fixed-point codes.
            cases.push(f64::from_bits(x));
            cases.push((x >> 11) as f64 / 1024.0);
        }
        for c in cases {
            if c.is_nan() {
                assert!(round_half_away(c).is_nan());
            } else {
                assert_eq!(round_half_away(c).to_bits(), c.round().to_bits(), "{c:e}");
            }
        }
    }
}
