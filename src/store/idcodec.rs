//! The layer work file (`.work/…/layers/age=N.ids`): the sorted states and afterstates of one
//! age, compressed. Only [`super::work`] uses it; no other module restates the format.
//!
//! # The maths
//!
//! A layer is strictly increasing, so it is kept as differences. A board id holds cell `i` in
//! bits `[4i, 4i + 4)` (cell 0 in the *lowest* nibble), and every board of a layer has the
//! layer's age `n` = Σ 2^e over its non-empty cells. Cell 0 is therefore fixed by the others:
//! with `s` the tiles of cells 1…, cell 0 holds `r = n − s`, which is 0 (empty) or a tile
//! `2^e`. So a block whose every id agrees stores *keys* `id >> 4` instead of ids: the keys are
//! strictly increasing as well (two ids with one key have one cell 0), and four bits an id less
//! spread makes the differences about 16 times smaller. The gaps `kᵢ − kᵢ₋₁ − 1 ≥ 0` (the first
//! key of a block as it is) are written as LEB128 varints (7 bits a byte, high bit = more),
//! and the varint bytes of a block are compressed with zstd at level 1, which learns the
//! bytes that recur in the gaps (a 4x4 layer is far from uniform: runs over the low cells
//! repeat the same steps). Measured on real layers at 64 Ki ids a block: 3x3 ≈ 5 bits an
//! id, 4x4 `goal-16` ≈ 5.2 (8-byte ids took 64).
//!
//! Any strictly increasing sequence of `u64` round-trips (ids of another age, ids near
//! `u64::MAX`): a block whose ids do not all fit the age keeps whole ids, and a block that
//! zstd would not shrink below 8 bytes an id is stored as raw words. Blocks are independent,
//! so they are encoded and decoded in parallel (rayon).
//!
//! # The bytes (little-endian)
//!
//! ```text
//! 0   magic "A2048LYR"
//! 8   CRC32 of bytes 12…end (u32)
//! 12  format version (u32, now 1)
//! 16  age (u32)
//! 20  ids per block B (u32, ≥ 1)
//! 24  states (u64)
//! 32  afterstates (u64)
//! 40  payload length of every block (u32 each): ⌈states / B⌉ blocks of states, then
//!     ⌈afterstates / B⌉ of afterstates, each of B ids but the last of its layer
//! …   the payloads, in that order: one mode byte, then
//!       mode 0  raw ids, 8 bytes each
//!       mode 1  zstd frame of the varint gaps of the ids
//!       mode 2  zstd frame of the varint gaps of the keys (cell 0 follows from the age)
//! ```
//!
//! Reading checks everything: magic, version, age, CRC, that the directory and payloads fill
//! the file exactly, that every block decodes to its count of ids with no byte left over, no
//! overflow, and a cell 0 the age allows. A file that fails is [`Damaged`], never trusted.

use rayon::prelude::*;

/// What is wrong with a layer file's bytes.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Damaged(pub String);

type Result<T> = std::result::Result<T, Damaged>;

fn damaged(what: impl Into<String>) -> Damaged {
    Damaged(what.into())
}

const MAGIC: &[u8; 8] = b"A2048LYR";
/// The format version; a file of another version is reported as damaged (and redone).
pub const VERSION: u32 = 1;
/// Bytes before the block directory.
const HEADER: usize = 40;
/// Ids per block: large enough for zstd to learn the gaps (64 Ki ids compress ≈ 20 % better
/// than 4 Ki on 4x4), small enough to spread a layer over the threads.
const BLOCK: usize = 1 << 16;
const ZSTD_LEVEL: i32 = 1;

const MODE_RAW: u8 = 0;
const MODE_IDS: u8 = 1;
const MODE_KEYS: u8 = 2;

/// Longest LEB128 varint of a `u64`.
const MAX_VARINT: usize = 10;

/// An upper bound on the bytes of the file of a layer of `boards` states and afterstates (a
/// block is never stored in more than a mode byte and 8 bytes an id); the tests hold the
/// encoder to it (the free-disk check asks for the encoded file's own length).
#[cfg(test)]
pub fn max_bytes(boards: u64) -> u64 {
    let blocks = boards / BLOCK as u64 + 2;
    (HEADER as u64)
        .saturating_add(boards.saturating_mul(8))
        .saturating_add(blocks.saturating_mul(5))
}

/// The file of the states and afterstates of an age (each strictly increasing).
pub fn encode(age: u32, states: &[u64], afterstates: &[u64]) -> Vec<u8> {
    debug_assert!(
        states.windows(2).all(|w| w[0] < w[1]),
        "states not increasing"
    );
    debug_assert!(
        afterstates.windows(2).all(|w| w[0] < w[1]),
        "afterstates not increasing"
    );
    let blocks: Vec<&[u64]> = states
        .chunks(BLOCK)
        .chain(afterstates.chunks(BLOCK))
        .collect();
    let payloads: Vec<Vec<u8>> = blocks
        .par_iter()
        .map(|ids| encode_block(age, ids))
        .collect();
    let body: usize = payloads.iter().map(|p| 4 + p.len()).sum();
    let mut bytes = Vec::with_capacity(HEADER + body);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&[0; 4]); // CRC, below
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&age.to_le_bytes());
    bytes.extend_from_slice(&(BLOCK as u32).to_le_bytes());
    bytes.extend_from_slice(&(states.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&(afterstates.len() as u64).to_le_bytes());
    for p in &payloads {
        let len = u32::try_from(p.len()).expect("a block payload is under 1 MB");
        bytes.extend_from_slice(&len.to_le_bytes());
    }
    for p in &payloads {
        bytes.extend_from_slice(p);
    }
    let crc = crc32fast::hash(&bytes[12..]);
    bytes[8..12].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// The counts of states and afterstates a file's header gives, unchecked (for progress).
pub fn counts(header: &[u8]) -> Option<(u64, u64)> {
    let h = Header::parse(header).ok()?;
    Some((h.states, h.afterstates))
}

/// Checks a file of age `age` (header, CRC, block directory) without decoding its blocks;
/// returns the counts of states and afterstates.
pub fn check(bytes: &[u8], age: u32) -> Result<(u64, u64)> {
    let (h, _) = open(bytes, age)?;
    Ok((h.states, h.afterstates))
}

/// The states and afterstates of a file of age `age`, every byte checked.
pub fn decode(bytes: &[u8], age: u32) -> Result<(Vec<u64>, Vec<u64>)> {
    let (h, payloads) = open(bytes, age)?;
    let block = h.block as usize;
    let n_states = usize::try_from(h.states).map_err(|_| damaged("too many states"))?;
    let n_after = usize::try_from(h.afterstates).map_err(|_| damaged("too many afterstates"))?;
    let mut states = vec![0u64; n_states];
    let mut afterstates = vec![0u64; n_after];
    let outs: Vec<&mut [u64]> = states
        .chunks_mut(block)
        .chain(afterstates.chunks_mut(block))
        .collect();
    debug_assert_eq!(outs.len(), payloads.len());
    outs.into_par_iter()
        .zip(payloads.into_par_iter())
        .try_for_each(|(out, payload)| decode_block(age, payload, out))?;
    Ok((states, afterstates))
}

struct Header {
    age: u32,
    block: u32,
    states: u64,
    afterstates: u64,
}

impl Header {
    fn parse(bytes: &[u8]) -> Result<Header> {
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(damaged(
                "not a layer file of this version (bad magic or too short)",
            ));
        }
        let version = u32_at(bytes, 12);
        if version != VERSION {
            return Err(damaged(format!(
                "layer file format {version}, this version reads {VERSION}"
            )));
        }
        Ok(Header {
            age: u32_at(bytes, 16),
            block: u32_at(bytes, 20),
            states: u64_at(bytes, 24),
            afterstates: u64_at(bytes, 32),
        })
    }
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[i..i + 4]);
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// The header and the payload of every block, after the checks that need no decoding.
fn open(bytes: &[u8], age: u32) -> Result<(Header, Vec<&[u8]>)> {
    let h = Header::parse(bytes)?;
    if u32_at(bytes, 8) != crc32fast::hash(&bytes[12..]) {
        return Err(damaged("checksum mismatch"));
    }
    if h.age != age {
        return Err(damaged(format!("holds age {}, not {age}", h.age)));
    }
    // (Bounded, so that the counts a hostile header claims cost at most 2^18 ids a byte.)
    if !(1..=1 << 20).contains(&h.block) {
        return Err(damaged(format!("{} ids per block", h.block)));
    }
    let blocks_of = |n: u64| n.div_ceil(u64::from(h.block));
    let n_blocks = blocks_of(h.states).saturating_add(blocks_of(h.afterstates));
    let dir_end = n_blocks
        .checked_mul(4)
        .and_then(|d| d.checked_add(HEADER as u64))
        .filter(|&e| e <= bytes.len() as u64)
        .ok_or_else(|| damaged("truncated (block directory)"))? as usize;
    let mut payloads = Vec::with_capacity(n_blocks as usize);
    let mut at = dir_end;
    for i in 0..n_blocks as usize {
        let len = u32_at(bytes, HEADER + 4 * i) as usize;
        let end = at
            .checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| damaged("truncated (block payloads)"))?;
        payloads.push(&bytes[at..end]);
        at = end;
    }
    if at != bytes.len() {
        return Err(damaged("bytes after the last block"));
    }
    Ok((h, payloads))
}

/// Sum of the tiles of the two cells of each byte value.
const TILES: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        let (lo, hi) = (b & 15, b >> 4);
        t[b] = if lo == 0 { 0 } else { 1 << lo } + if hi == 0 { 0 } else { 1 << hi };
        b += 1;
    }
    t
};

/// The sum of the tiles of a code (its age).
#[inline]
fn tiles(code: u64) -> u32 {
    code.to_le_bytes().iter().map(|&b| TILES[b as usize]).sum()
}

/// Cell 0 of the board of age `age` whose other cells are `key` (`id >> 4`); `None` if no
/// tile fits.
#[inline]
fn cell0(key: u64, age: u32) -> Option<u64> {
    let r = age.checked_sub(tiles(key))?;
    match r {
        0 => Some(0),
        _ if r.is_power_of_two() && (2..=1 << 15).contains(&r) => {
            Some(u64::from(r.trailing_zeros()))
        }
        _ => None,
    }
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn get_varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        // The tenth byte carries bit 63 only.
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The gaps of a strictly increasing sequence as varints: the first value, then
/// `x[i] − x[i−1] − 1`.
fn gaps(values: impl Iterator<Item = u64>, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 2 + MAX_VARINT);
    let mut prev: Option<u64> = None;
    for v in values {
        put_varint(&mut out, prev.map_or(v, |p| v - p - 1));
        prev = Some(v);
    }
    out
}

fn encode_block(age: u32, ids: &[u64]) -> Vec<u8> {
    let keys = ids.iter().all(|&id| cell0(id >> 4, age) == Some(id & 15));
    let (mode, varints) = if keys {
        (MODE_KEYS, gaps(ids.iter().map(|&id| id >> 4), ids.len()))
    } else {
        (MODE_IDS, gaps(ids.iter().copied(), ids.len()))
    };
    // Level 1 of a few hundred KB of bytes cannot fail but for memory; raw words then.
    // Each thread keeps its zstd context (making one per block costs ≈ 10 % more).
    thread_local! {
        static ZSTD: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let compressed = ZSTD.with(|z| {
        let mut z = z.borrow_mut();
        if z.is_none() {
            *z = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?);
        }
        z.as_mut().expect("made above").compress(&varints)
    });
    match compressed {
        Ok(z) if z.len() < 8 * ids.len() => {
            let mut out = Vec::with_capacity(1 + z.len());
            out.push(mode);
            out.extend_from_slice(&z);
            out
        }
        _ => {
            let mut out = Vec::with_capacity(1 + 8 * ids.len());
            out.push(MODE_RAW);
            for id in ids {
                out.extend_from_slice(&id.to_le_bytes());
            }
            out
        }
    }
}

fn decode_block(age: u32, payload: &[u8], out: &mut [u64]) -> Result<()> {
    let Some((&mode, body)) = payload.split_first() else {
        return Err(damaged("empty block"));
    };
    match mode {
        MODE_RAW => {
            if body.len() != 8 * out.len() {
                return Err(damaged("raw block of the wrong length"));
            }
            for (o, w) in out.iter_mut().zip(body.chunks_exact(8)) {
                *o = u64_at(w, 0);
            }
            if out.windows(2).any(|w| w[0] >= w[1]) {
                return Err(damaged("raw block not increasing"));
            }
            Ok(())
        }
        MODE_IDS | MODE_KEYS => {
            thread_local! {
                static ZSTD: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
                    const { std::cell::RefCell::new(None) };
            }
            let varints = ZSTD
                .with(|z| {
                    let mut z = z.borrow_mut();
                    if z.is_none() {
                        *z = Some(zstd::bulk::Decompressor::new()?);
                    }
                    z.as_mut()
                        .expect("made above")
                        .decompress(body, MAX_VARINT * out.len())
                })
                .map_err(|e| damaged(format!("block does not decompress: {e}")))?;
            let bad = || damaged("block gaps do not fit its ids");
            let mut at = 0;
            let mut prev: Option<u64> = None;
            for o in out.iter_mut() {
                let g = get_varint(&varints, &mut at).ok_or_else(bad)?;
                let v = match prev {
                    None => g,
                    Some(p) => p
                        .checked_add(g)
                        .and_then(|v| v.checked_add(1))
                        .ok_or_else(bad)?,
                };
                prev = Some(v);
                *o = v;
            }
            if at != varints.len() {
                return Err(bad());
            }
            if mode == MODE_KEYS {
                for o in out.iter_mut() {
                    let key = *o;
                    if key >> 60 != 0 {
                        return Err(bad());
                    }
                    let c = cell0(key, age).ok_or_else(|| damaged("a board of another age"))?;
                    *o = key << 4 | c;
                }
            }
            Ok(())
        }
        m => Err(damaged(format!("unknown block mode {m}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The naive encoding the codec must agree with: the ids themselves.
    fn naive(states: &[u64], afterstates: &[u64]) -> Vec<u64> {
        let mut w = vec![states.len() as u64];
        w.extend_from_slice(states);
        w.extend_from_slice(afterstates);
        w
    }

    fn round_trip(age: u32, s: &[u64], a: &[u64]) -> Vec<u8> {
        let bytes = encode(age, s, a);
        assert!(bytes.len() as u64 <= max_bytes((s.len() + a.len()) as u64));
        assert_eq!(counts(&bytes), Some((s.len() as u64, a.len() as u64)));
        assert_eq!(
            check(&bytes, age).unwrap(),
            (s.len() as u64, a.len() as u64)
        );
        let (ds, da) = decode(&bytes, age).unwrap();
        assert_eq!(naive(&ds, &da), naive(s, a));
        bytes
    }

    fn sorted(mut v: Vec<u64>) -> Vec<u64> {
        v.sort_unstable();
        v.dedup();
        v
    }

    /// A random board of `cells` cells with tiles up to 2^max_e.
    fn board(rng: &mut StdRng, cells: usize, max_e: u64) -> u64 {
        (0..cells).fold(0, |c, i| c | rng.gen_range(0..=max_e) << (4 * i))
    }

    /// The boards of one age among random boards: a real layer's shape.
    fn layer_of_age(rng: &mut StdRng, n: usize, cells: usize, max_e: u64) -> (u32, Vec<u64>) {
        let age = tiles(board(rng, cells, max_e));
        let mut v = Vec::with_capacity(n);
        for _ in 0..n * 50 {
            if v.len() == n {
                break;
            }
            let key = board(rng, cells - 1, max_e);
            if let Some(c) = cell0(key, age) {
                v.push(key << 4 | c);
            }
        }
        (age, sorted(v))
    }

    #[test]
    fn round_trips_random_layers_against_the_raw_ids() {
        let mut rng = StdRng::seed_from_u64(0x2048);
        let mut lens = vec![
            0usize,
            1,
            2,
            3,
            100,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            3 * BLOCK + 7,
        ];
        lens.extend((0..20).map(|_| rng.gen_range(0..5000)));
        for (i, &n) in lens.iter().enumerate() {
            let m = rng.gen_range(0..n + 2);
            // Sparse: anywhere in u64, up to u64::MAX - 1 and u64::MAX.
            let s = sorted((0..n).map(|_| rng.gen::<u64>()).collect());
            let mut a = sorted(
                (0..m)
                    .map(|_| u64::MAX - rng.gen_range(0..3 * m as u64 + 2))
                    .collect(),
            );
            if i % 2 == 0 {
                a.push(u64::MAX - 1);
                a = sorted(a);
            }
            round_trip(1234, &s, &a);
            // Dense: runs of consecutive integers.
            let base = rng.gen::<u64>() >> rng.gen_range(0..64);
            let d: Vec<u64> = sorted(
                (0..n as u64)
                    .map(|k| base.saturating_add(k * rng.gen_range(1..3)))
                    .collect(),
            );
            round_trip(7, &d, &[]);
            // Of one age, as the solver writes them: keys, and small.
            let cells = [4, 9, 12, 16][i % 4];
            let (age, s) = layer_of_age(&mut rng, n, cells, [3, 6, 11, 15][i % 4]);
            let a: Vec<u64> = s.iter().copied().step_by(1 + i % 5).collect();
            let bytes = round_trip(age, &s, &a);
            if i % 4 == 1 && s.len() > 1000 {
                // 3x3-like: well under the 64 bits of an id.
                let bits = bytes.len() * 8 / (s.len() + a.len());
                assert!(bits < 20, "{bits} bits an id");
            }
            // A block of one age with an intruder keeps whole ids.
            if s.len() > 2 {
                let mut s2 = s.clone();
                s2[1] = s2[0] + 1;
                let s2 = sorted(s2);
                round_trip(age, &s2, &s);
            }
        }
    }

    #[test]
    fn damaged_files_are_refused_not_trusted() {
        let mut rng = StdRng::seed_from_u64(7);
        let (age, s) = layer_of_age(&mut rng, 3 * BLOCK, 16, 6);
        let a: Vec<u64> = s.iter().copied().step_by(3).collect();
        assert!(s.len() > 2 * BLOCK, "{} states", s.len());
        let good = encode(age, &s, &a);
        assert_eq!(decode(&good, age).unwrap(), (s.clone(), a.clone()));
        let refused = |b: &[u8]| decode(b, age).is_err() && check(b, age).is_err();

        // Every flipped byte of the header, and bytes all over the body.
        let mut at: Vec<usize> = (0..HEADER + 8).collect();
        at.extend((0..200).map(|_| rng.gen_range(0..good.len())));
        for i in at {
            let mut b = good.clone();
            b[i] ^= 1 << rng.gen_range(0..8);
            assert!(refused(&b), "flip at {i}");
        }
        // Truncated anywhere, or lengthened.
        for len in [0, 7, 8, 12, 39, 40, 41, good.len() / 2, good.len() - 1] {
            assert!(refused(&good[..len]), "truncated to {len}");
            assert!(counts(&good[..len]).is_none() || len >= HEADER);
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(refused(&longer));
        // Another magic, another version (CRC fixed up so only they are wrong), another age.
        let fix = |mut b: Vec<u8>| {
            let crc = crc32fast::hash(&b[12..]);
            b[8..12].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let mut b = good.clone();
        b[..8].copy_from_slice(b"A2048WRK");
        assert!(refused(&fix(b)));
        let mut b = good.clone();
        b[12..16].copy_from_slice(&(VERSION + 1).to_le_bytes());
        let b = fix(b);
        assert!(refused(&b));
        assert!(counts(&b).is_none());
        assert!(decode(&good, age + 2).is_err());

        // Hostile bytes with a right CRC: wrong counts, a block of another mode, garbage
        // payloads. Refused, never a panic.
        let mut b = good.clone();
        b[24..32].copy_from_slice(&(s.len() as u64 + 1).to_le_bytes());
        assert!(refused(&fix(b)));
        let mut b = good.clone();
        b[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(refused(&fix(b)));
        let mut b = good.clone();
        b[20..24].copy_from_slice(&0u32.to_le_bytes());
        assert!(refused(&fix(b)));
        // (A block of keys read as whole ids would decode: only the CRC tells that.)
        let first = HEADER + 4 * (s.len().div_ceil(BLOCK) + a.len().div_ceil(BLOCK));
        for mode in [MODE_RAW, 9] {
            let mut b = good.clone();
            b[first] = mode;
            assert!(decode(&fix(b), age).is_err(), "mode {mode}");
        }
        for _ in 0..50 {
            let mut b = good.clone();
            let i = rng.gen_range(first + 1..b.len());
            b[i] = rng.gen();
            let _ = decode(&fix(b), age);
        }
    }

    #[test]
    fn ages_decide_cell_0() {
        // 2 4 / 8 . at age 14: cell 0 is the 2 the other cells leave.
        let id = 0x0321;
        assert_eq!(tiles(id), 14);
        assert_eq!(cell0(id >> 4, 14), Some(1));
        assert_eq!(cell0(id >> 4, 12), Some(0));
        assert_eq!(cell0(id >> 4, 11), None);
        assert_eq!(cell0(id >> 4, 13), None);
        assert_eq!(cell0(id >> 4, 10), None);
        assert_eq!(cell0(0, 1 << 15), Some(15));
        assert_eq!(cell0(0, 1 << 16), None);
    }
}

/// Bits an id and speed on real layer files: `A2048_LAYERS=DIR cargo test --release --lib
/// measure_layer_files -- --ignored --nocapture`, DIR holding `age=N.ids` files of this format
/// or of the raw-word format before it.
#[cfg(test)]
mod measure {
    use super::*;
    use std::time::Instant;

    #[test]
    #[ignore]
    fn measure_layer_files() {
        let Ok(dir) = std::env::var("A2048_LAYERS") else {
            return;
        };
        let mut rows = Vec::new();
        let (mut n, mut bytes, mut te, mut td) = (0u64, 0u64, 0f64, 0f64);
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let Some(age) = name
                .strip_prefix("age=")
                .and_then(|r| r.strip_suffix(".ids"))
                .and_then(|a| a.parse::<u32>().ok())
            else {
                continue;
            };
            let raw = std::fs::read(&p).unwrap();
            let (s, a) = if &raw[..8] == MAGIC {
                decode(&raw, age).unwrap()
            } else {
                let w = crate::store::work::read_words(&p).unwrap().unwrap();
                let k = w[0] as usize;
                (w[1..1 + k].to_vec(), w[1 + k..].to_vec())
            };
            let t = Instant::now();
            let enc = encode(age, &s, &a);
            let e = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let dec = decode(&enc, age).unwrap();
            let d = t.elapsed().as_secs_f64();
            assert!(dec.0 == s && dec.1 == a);
            let k = (s.len() + a.len()) as u64;
            rows.push((k, age, enc.len() as f64 * 8.0 / k as f64, e, d));
            (n, bytes, te, td) = (n + k, bytes + enc.len() as u64, te + e, td + d);
        }
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        println!("age ids bits/id enc_M/s dec_M/s");
        for (k, age, b, e, d) in rows.iter().take(8) {
            let m = *k as f64 / 1e6;
            println!("{age} {k} {b:.2} {:.0} {:.0}", m / e, m / d);
        }
        let m = n as f64 / 1e6;
        println!(
            "all {n} {:.2} {:.0} {:.0} ({:.1} MB, {:.1} MB raw)",
            bytes as f64 * 8.0 / n as f64,
            m / te,
            m / td,
            bytes as f64 / 1e6,
            (8 * n) as f64 / 1e6
        );
    }
}
