//! The layer work file (`.work/…/layers/age=N.ids`): the sorted states and afterstates of one
//! age, compressed. Only [`super::work`] reads and writes the files; no other module restates
//! the format. For ages too big to hold (≈ 900 M states) a file is also built piece by piece
//! ([`LayerEncoder`]) and read a chunk of blocks at a time ([`LayerFile`]), and the solver
//! keeps runs of ids compressed in memory with the block codec itself ([`encode_block`],
//! [`decode_block`]).
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
//! overflow, and a cell 0 the age allows, and that the ids increase across blocks. A file
//! that fails is [`Damaged`], never trusted.

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
/// than 4 Ki on 4x4), small enough to spread a layer over the threads. Every block of a layer
/// holds this many ids but the last of its states and of its afterstates.
pub const BLOCK: usize = 1 << 16;
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
    let mut e = LayerEncoder::new(age);
    e.push_states(states);
    e.push_afterstates(afterstates);
    e.finish()
}

/// The file of an age built from its states, then its afterstates, pushed in pieces: the same
/// bytes as [`encode`] of the whole layers, without holding their ids. It keeps the
/// compressed blocks, and at most 2 × threads blocks of raw ids, which it encodes in parallel
/// once it has that many (or its pieces bring whole blocks).
pub struct LayerEncoder {
    age: u32,
    block: usize,
    /// Raw ids waiting for a batch: at most `batch` blocks.
    pending: Vec<u64>,
    batch: usize,
    afterstates: bool,
    states: u64,
    after: u64,
    last: Option<u64>,
    /// The payload length of every block so far, and their payloads end to end.
    lens: Vec<u32>,
    body: Vec<u8>,
}

impl LayerEncoder {
    pub fn new(age: u32) -> LayerEncoder {
        LayerEncoder::with_block(age, BLOCK)
    }

    /// An encoder of blocks of `block` ids (the tests' small blocks; files say their block).
    fn with_block(age: u32, block: usize) -> LayerEncoder {
        assert!((1..=1 << 20).contains(&block), "{block} ids per block");
        let batch = 2 * rayon::current_num_threads().max(1);
        LayerEncoder {
            age,
            block,
            pending: Vec::new(),
            batch,
            afterstates: false,
            states: 0,
            after: 0,
            last: None,
            lens: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The next states, strictly increasing (within and across calls); before any
    /// afterstate.
    pub fn push_states(&mut self, ids: &[u64]) {
        assert!(!self.afterstates, "states pushed after afterstates");
        self.states += ids.len() as u64;
        self.push(ids);
    }

    /// The next afterstates, strictly increasing (within and across calls); after every
    /// state.
    pub fn push_afterstates(&mut self, ids: &[u64]) {
        if !self.afterstates {
            // The states' last block ends here, however short.
            self.flush();
            self.afterstates = true;
            self.last = None;
        }
        self.after += ids.len() as u64;
        self.push(ids);
    }

    fn push(&mut self, mut ids: &[u64]) {
        debug_assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids not increasing");
        debug_assert!(
            !matches!((self.last, ids.first()), (Some(l), Some(&f)) if l >= f),
            "ids not increasing across pushes"
        );
        if let Some(&l) = ids.last() {
            self.last = Some(l);
        }
        let full = self.batch * self.block;
        if !self.pending.is_empty() {
            let take = ids.len().min(full - self.pending.len());
            self.pending.extend_from_slice(&ids[..take]);
            ids = &ids[take..];
            if self.pending.len() < full {
                return;
            }
            self.flush();
        }
        // Whole blocks straight from the caller's slice; the rest waits.
        let whole = ids.len() - ids.len() % self.block;
        self.encode_blocks(&ids[..whole]);
        self.pending.extend_from_slice(&ids[whole..]);
    }

    /// Encodes the pending ids (whole blocks, or the last of a layer).
    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        self.encode_blocks(&pending);
        self.pending = pending;
        self.pending.clear();
    }

    /// Encodes `ids` in blocks (all whole but perhaps the last), in parallel.
    fn encode_blocks(&mut self, ids: &[u64]) {
        let age = self.age;
        let payloads: Vec<Vec<u8>> = ids
            .par_chunks(self.block)
            .map(|b| encode_block(age, b))
            .collect();
        for p in payloads {
            let len = u32::try_from(p.len()).expect("a block payload is under 8 MB");
            self.lens.push(len);
            self.body.extend_from_slice(&p);
        }
    }

    /// The file's bytes: header, block directory, payloads (moved behind them in place, not
    /// copied into a second buffer).
    pub fn finish(mut self) -> Vec<u8> {
        self.flush();
        let mut head = Vec::with_capacity(HEADER + 4 * self.lens.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&[0; 4]); // CRC, below
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&self.age.to_le_bytes());
        head.extend_from_slice(&(self.block as u32).to_le_bytes());
        head.extend_from_slice(&self.states.to_le_bytes());
        head.extend_from_slice(&self.after.to_le_bytes());
        for len in &self.lens {
            head.extend_from_slice(&len.to_le_bytes());
        }
        let mut bytes = self.body;
        let n = bytes.len();
        bytes.resize(n + head.len(), 0);
        bytes.copy_within(..n, head.len());
        bytes[..head.len()].copy_from_slice(&head);
        let crc = crc32fast::hash(&bytes[12..]);
        bytes[8..12].copy_from_slice(&crc.to_le_bytes());
        bytes
    }
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
    let (h, at) = open(bytes, age)?;
    decode_opened(bytes, age, h.block as usize, (h.states, h.afterstates), &at)
}

/// [`decode`] of a file whose header (`block` ids a block, `counts` of states and
/// afterstates) and block directory `at` are read and checked.
fn decode_opened(
    bytes: &[u8],
    age: u32,
    block: usize,
    counts: (u64, u64),
    at: &[usize],
) -> Result<(Vec<u64>, Vec<u64>)> {
    let n_states = usize::try_from(counts.0).map_err(|_| damaged("too many states"))?;
    let n_after = usize::try_from(counts.1).map_err(|_| damaged("too many afterstates"))?;
    let mut states = vec![0u64; n_states];
    let mut afterstates = vec![0u64; n_after];
    let outs: Vec<&mut [u64]> = states
        .chunks_mut(block)
        .chain(afterstates.chunks_mut(block))
        .collect();
    debug_assert_eq!(outs.len() + 1, at.len());
    outs.into_par_iter()
        .enumerate()
        .try_for_each(|(i, out)| decode_block(age, &bytes[at[i]..at[i + 1]], out))?;
    increasing_across(&states, block, None)?;
    increasing_across(&afterstates, block, None)?;
    Ok((states, afterstates))
}

/// Checks that ids decoded block by block (each block increasing) increase across the
/// blocks' boundaries too, and from `before` (the id before `ids`) on.
fn increasing_across(ids: &[u64], block: usize, before: Option<u64>) -> Result<()> {
    let bad = match (before, ids.first()) {
        (Some(b), Some(&f)) => b >= f,
        _ => false,
    } || (block..ids.len())
        .step_by(block)
        .any(|i| ids[i - 1] >= ids[i]);
    if bad {
        return Err(damaged("blocks not increasing"));
    }
    Ok(())
}

/// A layer file read into memory and checked (header, CRC, block directory; what [`check`]
/// checks), decoded a chunk of blocks at a time: a big age's states and afterstates are
/// never all decoded at once. Every chunk is checked as [`decode`] checks.
pub struct LayerFile {
    bytes: Vec<u8>,
    age: u32,
    block: usize,
    states: u64,
    afterstates: u64,
    /// Where each block's payload starts in `bytes`, and where the last one ends.
    at: Vec<usize>,
}

impl LayerFile {
    /// Checks the bytes of a layer file of age `age` and keeps them.
    pub fn open(bytes: Vec<u8>, age: u32) -> Result<LayerFile> {
        let (h, at) = open(&bytes, age)?;
        Ok(LayerFile {
            bytes,
            age,
            block: h.block as usize,
            states: h.states,
            afterstates: h.afterstates,
            at,
        })
    }

    pub fn states(&self) -> u64 {
        self.states
    }

    pub fn afterstates(&self) -> u64 {
        self.afterstates
    }

    /// Every state and afterstate at once, as [`decode`] gives them from the same bytes.
    pub fn decode(&self) -> Result<(Vec<u64>, Vec<u64>)> {
        let counts = (self.states, self.afterstates);
        decode_opened(&self.bytes, self.age, self.block, counts, &self.at)
    }

    /// The states in order, in chunks of the whole blocks that fit `ids_per_chunk` ids (at
    /// least one block), each chunk's blocks decoded in parallel. After an error the
    /// iterator ends.
    pub fn state_chunks(
        &self,
        ids_per_chunk: usize,
    ) -> impl Iterator<Item = Result<Vec<u64>>> + '_ {
        self.chunks(0, self.states, ids_per_chunk)
    }

    /// The afterstates in order, as [`LayerFile::state_chunks`] gives the states.
    pub fn afterstate_chunks(
        &self,
        ids_per_chunk: usize,
    ) -> impl Iterator<Item = Result<Vec<u64>>> + '_ {
        let first = self.states.div_ceil(self.block as u64) as usize;
        self.chunks(first, self.afterstates, ids_per_chunk)
    }

    /// The chunks of the `count` ids in blocks from `first` on.
    fn chunks(
        &self,
        first: usize,
        count: u64,
        ids_per_chunk: usize,
    ) -> impl Iterator<Item = Result<Vec<u64>>> + '_ {
        let block = self.block;
        let per = (ids_per_chunk / block).max(1);
        let end = first + count.div_ceil(block as u64) as usize;
        let (mut next, mut before, mut failed) = (first, None, false);
        std::iter::from_fn(move || {
            if failed || next == end {
                return None;
            }
            let stop = end.min(next.saturating_add(per));
            // Ids before this chunk, then in it (the last block may be short).
            let done = (next - first) as u64 * block as u64;
            let n = (count - done).min(((stop - next) * block) as u64) as usize;
            let mut out = vec![0u64; n];
            let decoded = out
                .par_chunks_mut(block)
                .zip(next..stop)
                .try_for_each(|(o, i)| {
                    decode_block(self.age, &self.bytes[self.at[i]..self.at[i + 1]], o)
                })
                .and_then(|()| increasing_across(&out, block, before));
            next = stop;
            before = out.last().copied();
            failed = decoded.is_err();
            Some(decoded.map(|()| out))
        })
    }
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

/// The header, and where the payload of every block starts (and the last ends), after the
/// checks that need no decoding.
fn open(bytes: &[u8], age: u32) -> Result<(Header, Vec<usize>)> {
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
    let mut starts = Vec::with_capacity(n_blocks as usize + 1);
    let mut at = dir_end;
    for i in 0..n_blocks as usize {
        let len = u32_at(bytes, HEADER + 4 * i) as usize;
        let end = at
            .checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| damaged("truncated (block payloads)"))?;
        starts.push(at);
        at = end;
    }
    if at != bytes.len() {
        return Err(damaged("bytes after the last block"));
    }
    starts.push(at);
    Ok((h, starts))
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

/// The payload of one block of strictly increasing `ids` (any number of them, of age `age`
/// or not: a block that does not fit the age keeps whole ids). The solver keeps runs of ids
/// compressed in memory this way; [`decode_block`] reads them back.
pub fn encode_block(age: u32, ids: &[u64]) -> Vec<u8> {
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

/// Decodes the payload of a block [`encode_block`] made of `out.len()` ids (the count is not
/// stored: `out` must be exactly that long) into `out`, every byte checked.
pub fn decode_block(age: u32, payload: &[u8], out: &mut [u64]) -> Result<()> {
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

/// [`decode_block`] into a new vector of the block's `count` ids.
pub fn decode_block_vec(age: u32, payload: &[u8], count: usize) -> Result<Vec<u64>> {
    let mut out = vec![0u64; count];
    decode_block(age, payload, &mut out)?;
    Ok(out)
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
        let refused = |b: &[u8]| {
            decode(b, age).is_err() && check(b, age).is_err() && file_refuses(b, age, BLOCK)
        };

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
            let b = fix(b);
            assert!(decode(&b, age).is_err(), "mode {mode}");
            assert!(file_refuses(&b, age, 2 * BLOCK), "mode {mode}");
        }
        for _ in 0..50 {
            let mut b = good.clone();
            let i = rng.gen_range(first + 1..b.len());
            b[i] = rng.gen();
            let b = fix(b);
            assert_eq!(decode(&b, age).is_err(), file_refuses(&b, age, BLOCK));
        }
    }

    /// The bytes of `encode` before [`LayerEncoder`] (an oracle, kept as it was), for any
    /// block and without its order checks (to make files whose blocks do not increase).
    fn reference(age: u32, block: usize, states: &[u64], afterstates: &[u64]) -> Vec<u8> {
        let blocks: Vec<&[u64]> = states
            .chunks(block)
            .chain(afterstates.chunks(block))
            .collect();
        let payloads: Vec<Vec<u8>> = blocks
            .par_iter()
            .map(|ids| encode_block(age, ids))
            .collect();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&[0; 4]);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&age.to_le_bytes());
        bytes.extend_from_slice(&(block as u32).to_le_bytes());
        bytes.extend_from_slice(&(states.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&(afterstates.len() as u64).to_le_bytes());
        for p in &payloads {
            bytes.extend_from_slice(&(p.len() as u32).to_le_bytes());
        }
        for p in &payloads {
            bytes.extend_from_slice(p);
        }
        let crc = crc32fast::hash(&bytes[12..]);
        bytes[8..12].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    /// `ids` cut at random places (empty pieces too).
    fn pieces<'a>(rng: &mut StdRng, ids: &'a [u64]) -> Vec<&'a [u64]> {
        let mut cuts: Vec<usize> = (0..rng.gen_range(0..6))
            .map(|_| rng.gen_range(0..=ids.len()))
            .collect();
        cuts.extend([0, ids.len()]);
        cuts.sort_unstable();
        cuts.windows(2).map(|w| &ids[w[0]..w[1]]).collect()
    }

    /// The file of an encoder of blocks of `block` ids fed `s` and `a` in random pieces.
    fn streamed(rng: &mut StdRng, age: u32, block: usize, s: &[u64], a: &[u64]) -> Vec<u8> {
        let mut e = LayerEncoder::with_block(age, block);
        for p in pieces(rng, s) {
            e.push_states(p);
        }
        // Sometimes no afterstates are pushed at all.
        if !a.is_empty() || rng.gen() {
            for p in pieces(rng, a) {
                e.push_afterstates(p);
            }
        }
        e.finish()
    }

    /// Every chunk of a file's states, then of its afterstates, of `per` ids; checks their
    /// sizes (whole blocks, at least one).
    fn chunked(f: &LayerFile, per: usize) -> Result<(Vec<u64>, Vec<u64>)> {
        let whole = (per / f.block).max(1) * f.block;
        let mut out = (Vec::new(), Vec::new());
        for (chunks, ids, n) in [
            (
                f.state_chunks(per).collect::<Vec<_>>(),
                &mut out.0,
                f.states(),
            ),
            (
                f.afterstate_chunks(per).collect(),
                &mut out.1,
                f.afterstates(),
            ),
        ] {
            assert_eq!(chunks.len() as u64, n.div_ceil(whole as u64));
            for (i, c) in chunks.into_iter().enumerate() {
                let c = c?;
                assert!(c.len() == whole || (i as u64 + 1).saturating_mul(whole as u64) >= n);
                ids.extend(c);
            }
        }
        Ok(out)
    }

    /// True if a [`LayerFile`] refuses the bytes, on opening or in a chunk (never a panic).
    fn file_refuses(bytes: &[u8], age: u32, per: usize) -> bool {
        LayerFile::open(bytes.to_vec(), age).map_or(true, |f| {
            let chunks = f.state_chunks(per).any(|c| c.is_err())
                || f.afterstate_chunks(per).any(|c| c.is_err());
            // The whole decode refuses what the chunks refuse.
            assert_eq!(f.decode().is_err(), chunks, "whole decode against chunks");
            chunks
        })
    }

    /// Layers of one age and of none (sparse, dense), of `n` states.
    fn layers(rng: &mut StdRng, n: usize, i: usize) -> (u32, Vec<u64>, Vec<u64>) {
        match i % 3 {
            0 => {
                let (age, s) = layer_of_age(rng, n, [9, 12, 16][i % 4 % 3], 6);
                let a = s.iter().copied().step_by(1 + i % 4).collect();
                (age, s, a)
            }
            1 => {
                let s = sorted((0..n).map(|_| rng.gen::<u64>()).collect());
                let m = rng.gen_range(0..n + 2);
                (1234, s, sorted((0..m).map(|_| rng.gen::<u64>()).collect()))
            }
            _ => {
                let base = rng.gen::<u64>() >> 8;
                let s = (0..n as u64).map(|k| base + 2 * k).collect();
                (7, s, Vec::new())
            }
        }
    }

    #[test]
    fn the_encoder_writes_the_bytes_of_encode_for_any_pieces() {
        let mut rng = StdRng::seed_from_u64(0x5eed);
        // Small blocks make many batches (2 × threads blocks each) cheaply.
        for block in [1, 3, 64] {
            let mut lens = vec![0, 1, block - 1, block, block + 1, 2 * block, 9 * block];
            lens.extend((0..8).map(|_| rng.gen_range(0..60 * block)));
            for (i, &n) in lens.iter().enumerate() {
                let (age, s, a) = layers(&mut rng, n, i);
                let want = reference(age, block, &s, &a);
                for _ in 0..4 {
                    assert_eq!(streamed(&mut rng, age, block, &s, &a), want, "{block} {n}");
                    assert_eq!(streamed(&mut rng, age, block, &a, &s), {
                        reference(age, block, &a, &s)
                    });
                }
            }
        }
        // The real block: whole multiples and not, 0 states or afterstates; states of the
        // age, or of none.
        let (age, pool) = layer_of_age(&mut rng, 3 * BLOCK, 16, 6);
        assert!(pool.len() > 2 * BLOCK + 5, "{}", pool.len());
        let any = |rng: &mut StdRng, n| sorted((0..n).map(|_| rng.gen::<u64>()).collect());
        for (ns, na) in [
            (0, 0),
            (0, BLOCK),
            (BLOCK, 0),
            (2 * BLOCK, BLOCK + 5),
            (2 * BLOCK + 5, 2 * BLOCK),
            (3 * BLOCK, 3 * BLOCK - 1),
        ] {
            let s = if ns <= pool.len() {
                pool[..ns].to_vec()
            } else {
                any(&mut rng, ns)
            };
            let a = any(&mut rng, na);
            assert_eq!((s.len(), a.len()), (ns, na));
            let want = reference(age, BLOCK, &s, &a);
            assert_eq!(encode(age, &s, &a), want);
            assert_eq!(streamed(&mut rng, age, BLOCK, &s, &a), want);
            let mut e = LayerEncoder::new(age);
            e.push_states(&s);
            e.push_afterstates(&a);
            assert_eq!(e.finish(), want);
        }
    }

    #[test]
    fn layer_files_decode_in_chunks_what_decode_does() {
        let mut rng = StdRng::seed_from_u64(0xc4c);
        let mut files = Vec::new();
        for (i, (block, n)) in [
            (3, 0),
            (3, 1),
            (3, 100),
            (64, 64 * 7),
            (64, 1000),
            (BLOCK, 2 * BLOCK + 3),
        ]
        .into_iter()
        .enumerate()
        {
            let (age, s, a) = layers(&mut rng, n, i);
            files.push((age, s.clone(), a.clone(), reference(age, block, &s, &a)));
            // No states, some afterstates.
            files.push((age, vec![], s.clone(), reference(age, block, &[], &s)));
        }
        for (age, s, a, bytes) in files {
            let f = LayerFile::open(bytes.clone(), age).unwrap();
            assert_eq!(
                (f.states(), f.afterstates()),
                (s.len() as u64, a.len() as u64)
            );
            assert_eq!(decode(&bytes, age).unwrap(), (s.clone(), a.clone()));
            assert_eq!(f.decode().unwrap(), (s.clone(), a.clone()));
            let b = f.block;
            for per in [0, 1, b - 1, b, b + 1, 2 * b, 7 * b + 1, usize::MAX] {
                assert_eq!(chunked(&f, per).unwrap(), (s.clone(), a.clone()), "{per}");
            }
            if s.is_empty() {
                assert!(f.state_chunks(1).next().is_none());
            }
            assert!(LayerFile::open(bytes, age + 1).is_err());
        }
    }

    #[test]
    fn damaged_layer_files_are_refused_in_open_or_a_chunk() {
        let mut rng = StdRng::seed_from_u64(0xdead);
        let (age, s) = layer_of_age(&mut rng, 40, 9, 5);
        let mut s2 = s.clone();
        s2.extend((0..13).map(|k| (1 << 50) + 3 * k));
        let a: Vec<u64> = s.iter().copied().step_by(2).collect();
        let good = reference(age, 4, &s2, &a);
        let fix = |mut b: Vec<u8>| {
            let crc = crc32fast::hash(&b[12..]);
            b[8..12].copy_from_slice(&crc.to_le_bytes());
            b
        };
        assert!(!file_refuses(&good, age, 4));
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                assert!(LayerFile::open(b.clone(), age).is_err(), "flip {i}.{bit}");
                // With the CRC made right: refused, or read as decode reads it.
                let b = fix(b);
                match decode(&b, age) {
                    Err(_) => assert!(file_refuses(&b, age, 4 * rng.gen_range(1..4)), "{i}"),
                    Ok(d) => {
                        let f = LayerFile::open(b, age).unwrap();
                        assert_eq!(chunked(&f, 4 * rng.gen_range(1..4)).unwrap(), d);
                    }
                }
            }
        }
        for len in 0..good.len() {
            assert!(LayerFile::open(good[..len].to_vec(), age).is_err());
        }
        // Blocks each increasing but not across: refused at the boundary, whether it falls
        // inside a chunk or between two; afterstates start afresh.
        let bad = reference(age, 4, &[10, 11, 12, 13, 1, 2, 3, 4, 20], &[0, 1]);
        assert!(decode(&bad, age).is_err());
        let f = LayerFile::open(bad.clone(), age).unwrap();
        assert!(f.decode().is_err());
        for per in [4, 8, 100] {
            let chunks: Vec<_> = f.state_chunks(per).collect();
            assert!(chunks[0].is_ok() == (per == 4), "{per}");
            assert!(chunks.last().unwrap().is_err(), "{per}");
            assert_eq!(
                chunks.len(),
                if per == 4 { 2 } else { 1 },
                "ends after the error"
            );
        }
        let fine = reference(age, 4, &[10, 11, 12, 13, 14], &[0, 1, 2, 3, 4]);
        assert!(!file_refuses(&fine, age, 4));
    }

    #[test]
    fn blocks_round_trip_alone() {
        let mut rng = StdRng::seed_from_u64(11);
        let (age, s) = layer_of_age(&mut rng, 5000, 16, 7);
        let other = sorted((0..3000).map(|_| rng.gen::<u64>()).collect());
        for ids in [&s[..], &s[..1], &[], &other[..], &[u64::MAX - 1, u64::MAX]] {
            let p = encode_block(age, ids);
            assert_eq!(decode_block_vec(age, &p, ids.len()).unwrap(), ids);
            let mut out = vec![0; ids.len()];
            decode_block(age, &p, &mut out).unwrap();
            assert_eq!(out, ids);
            // The count is the caller's: another one is refused.
            assert!(decode_block_vec(age, &p, ids.len() + 1).is_err());
            if !ids.is_empty() {
                assert!(decode_block_vec(age, &p, ids.len() - 1).is_err());
            }
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
