//! The policy file (`.a2p`): one age's optimal moves as a static function from state id to
//! move ([`super::fuse`]), the one on-disk format of the policy layout (header, version,
//! checksum), read zero-copy from any `AsRef<[u8]>`.
//!
//! It answers the stored move of every live state of the age and an arbitrary move for any
//! other id: it cannot tell whether a board was reached (the reader checks that the move
//! answered is valid on the board, and says the rest in one line).
//!
//! An age's ids, in increasing order, are cut into shards of at most [`SHARD_KEYS`] ids
//! (equal parts), each its own graph: a shard is built with a bounded scratch (≈ 26 bytes an
//! id) whatever the age's size, shards build in parallel, and a look-up finds its shard by
//! a binary search over the shards' first ids. [`PolicyBuilder`] writes the same bytes from
//! ids pushed a chunk at a time, for an age whose ids do not fit memory at once. Fixed
//! 128-byte header, little-endian:
//!
//! ```text
//!   0  magic b"A2048POL"          8  format version u32 (1)
//!  12  rows u8  13 cols u8  14 value bits u8 (2)  15 arity u8 (4)
//!  16  age u32                    20  header length u32 (= 128)
//!  24  keys u64                   32  shards u64
//!  40  variant length u8, then 64 bytes of UTF-8 zero-padded; zero padding to 112
//! 112  file length u64
//! 120  CRC32 (crc32fast / IEEE) of every byte of the file except these 4, u32
//! 124  reserved u32 (0)
//! 128  shards × 32 bytes: first id u64, data offset u64, seed u64, segment log u32,
//!      segment count u32
//!      then each shard's cells, contiguous, in shard order ([`FuseParams::bytes`] each)
//! ```
//!
//! Readers check magic, version, lengths, the checksum, then that the shards tile the file
//! and their first ids increase; any failure is [`IndexError::Corrupted`], never a panic and
//! never a move read from damaged bytes.

use rayon::prelude::*;

use super::fuse::{self, FuseParams, ARITY};
use super::raw::{
    check_frame, check_variant, crc_except, expect_file, le_u32, le_u64, Frame, MAX_VARIANT_LEN,
};
use super::{corrupted, invalid, IndexError};

const MAGIC: &[u8; 8] = b"A2048POL";
const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 128;
const SHARD_LEN: usize = 32;
const CRC_AT: usize = 120;
/// Bits of a stored move (four moves).
pub const MOVE_BITS: u32 = 2;
/// The most ids of one shard: 2^20 ids build in ≈ 26 MB of scratch (hashes, values, two
/// words a cell, the peeling order), and a million keys already take the paper's smallest
/// factor, 1.075 cells a key (2^22 ids a shard took ≈ 110 MB a thread for the same bytes).
pub const SHARD_KEYS: usize = 1 << 20;

// The frame's version and header length sit where `raw::check_frame` reads them.
const _: () = assert!(off::VERSION == 8 && off::HEADER_LEN == 20);

mod off {
    pub const VERSION: usize = 8;
    pub const ROWS: usize = 12;
    pub const COLS: usize = 13;
    pub const BITS: usize = 14;
    pub const ARITY: usize = 15;
    pub const AGE: usize = 16;
    pub const HEADER_LEN: usize = 20;
    pub const KEYS: usize = 24;
    pub const SHARDS: usize = 32;
    pub const VARIANT_LEN: usize = 40;
    pub const VARIANT: usize = 41;
    pub const FILE_LEN: usize = 112;
    pub const RESERVED: usize = 124;
}

/// What the caller says about a policy file when writing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyMeta {
    pub rows: u8,
    pub cols: u8,
    pub age: u32,
    pub variant: String,
}

/// Sizes of a policy file.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PolicyStats {
    pub keys: u64,
    pub shards: u64,
    pub file_bytes: u64,
}

impl PolicyStats {
    /// Bits of the whole file per key (0 without keys).
    pub fn bits_per_key(&self) -> f64 {
        if self.keys == 0 {
            0.0
        } else {
            self.file_bytes as f64 * 8.0 / self.keys as f64
        }
    }
}

/// A move that is not one (a state without a move): its id is not a key.
pub const NO_MOVE: u8 = 4;

/// Encodes the policy of one age: `ids` strictly increasing, one move each (below 4), or
/// [`NO_MOVE`] for an id that is not a key (a terminal state), so that the caller's ids need
/// no filtered copy (a shard filters its own part).
pub fn encode_policy(
    meta: &PolicyMeta,
    ids: &[u64],
    moves: &[u8],
) -> Result<(Vec<u8>, PolicyStats), IndexError> {
    encode_sharded(meta, ids, moves, SHARD_KEYS)
}

/// [`encode_policy`] with shards of at most `shard_keys` ids.
pub(crate) fn encode_sharded(
    meta: &PolicyMeta,
    ids: &[u64],
    moves: &[u8],
    shard_keys: usize,
) -> Result<(Vec<u8>, PolicyStats), IndexError> {
    check_variant(&meta.variant)?;
    check_run(ids, moves, None, 0)?;
    let cuts = Cuts::new(ids.len(), shard_keys);
    let built = build_parts(ids, moves, cuts, 0..cuts.parts)?;
    Ok(assemble(meta, built))
}

/// [`encode_policy`] fed a chunk of ids at a time, for an age whose ids do not fit memory
/// at once: it keeps the ids of the shards not built yet (at most a shard a thread, the one
/// being filled included) and the built shards' cells, and gives the same bytes as
/// [`encode_policy`] over all the ids.
pub struct PolicyBuilder {
    meta: PolicyMeta,
    cuts: Cuts,
    /// Ids pushed so far, and the last of them (ids increase across pushes too).
    pushed: usize,
    last: Option<u64>,
    /// The first shard not built and the shard being filled: `ids` and `moves` hold the ids
    /// from the start of `unbuilt` on (the shards before `filling` are complete).
    unbuilt: usize,
    filling: usize,
    ids: Vec<u64>,
    moves: Vec<u8>,
    built: Vec<Built>,
}

impl PolicyBuilder {
    /// A builder for `n` ids in all, cut into shards as [`encode_policy`] cuts them.
    pub fn new(meta: PolicyMeta, n: usize) -> Result<PolicyBuilder, IndexError> {
        Self::with_shard_keys(meta, n, SHARD_KEYS)
    }

    /// [`PolicyBuilder::new`] with shards of at most `shard_keys` ids.
    pub(crate) fn with_shard_keys(
        meta: PolicyMeta,
        n: usize,
        shard_keys: usize,
    ) -> Result<PolicyBuilder, IndexError> {
        check_variant(&meta.variant)?;
        Ok(PolicyBuilder {
            meta,
            cuts: Cuts::new(n, shard_keys),
            pushed: 0,
            last: None,
            unbuilt: 0,
            filling: 0,
            ids: Vec::new(),
            moves: Vec::new(),
            built: Vec::new(),
        })
    }

    /// Takes the next `ids` (strictly increasing, and above those pushed before) and their
    /// moves, as [`encode_policy`] takes them. The chunk is taken a shard at a time (never
    /// copied whole), and the complete shards build in parallel once there is one a thread
    /// (the rest at [`PolicyBuilder::finish`]). A refused chunk changes nothing.
    pub fn push(&mut self, ids: &[u64], moves: &[u8]) -> Result<(), IndexError> {
        check_run(ids, moves, self.last, self.pushed)?;
        let n = self.cuts.n;
        let total = self.pushed.saturating_add(ids.len());
        if total > n {
            return Err(count_mismatch(total, n));
        }
        let (mut ids, mut moves) = (ids, moves);
        self.last = ids.last().copied().or(self.last);
        while !ids.is_empty() {
            let end = self.cuts.start(self.filling + 1);
            let take = (end - self.pushed).min(ids.len());
            self.ids.extend_from_slice(&ids[..take]);
            self.moves.extend_from_slice(&moves[..take]);
            (ids, moves) = (&ids[take..], &moves[take..]);
            self.pushed += take;
            if self.pushed == end {
                self.filling += 1;
                if self.filling - self.unbuilt >= rayon::current_num_threads() {
                    self.build_complete()?;
                }
            }
        }
        Ok(())
    }

    /// The file and its sizes, once all `n` ids are pushed.
    pub fn finish(mut self) -> Result<(Vec<u8>, PolicyStats), IndexError> {
        if self.pushed != self.cuts.n {
            return Err(count_mismatch(self.pushed, self.cuts.n));
        }
        self.build_complete()?;
        Ok(assemble(&self.meta, self.built))
    }

    /// Builds the complete shards not built yet (all that `ids` holds then).
    fn build_complete(&mut self) -> Result<(), IndexError> {
        let built = build_parts(
            &self.ids,
            &self.moves,
            self.cuts,
            self.unbuilt..self.filling,
        )?;
        self.built.extend(built);
        self.ids.clear();
        self.moves.clear();
        self.unbuilt = self.filling;
        Ok(())
    }
}

fn count_mismatch(pushed: usize, n: usize) -> IndexError {
    invalid(format!("{pushed} ids pushed for a policy of {n}"))
}

/// Checks ids `at..` of an age (`prev` the one before them): one move each, the ids strictly
/// increasing, the moves below 4 or [`NO_MOVE`].
fn check_run(ids: &[u64], moves: &[u8], prev: Option<u64>, at: usize) -> Result<(), IndexError> {
    if ids.len() != moves.len() {
        return Err(invalid(format!(
            "{} ids and {} moves",
            ids.len(),
            moves.len()
        )));
    }
    let across = prev
        .filter(|&p| ids.first().is_some_and(|&f| p >= f))
        .map(|p| (0, p));
    let within = || {
        ids.windows(2)
            .position(|w| w[0] >= w[1])
            .map(|i| (i + 1, ids[i]))
    };
    if let Some((i, before)) = across.or_else(within) {
        return Err(invalid(format!(
            "ids not strictly increasing at {}: {before:#x} then {:#x}",
            at + i,
            ids[i]
        )));
    }
    if let Some(m) = moves.iter().find(|&&m| m > NO_MOVE) {
        return Err(invalid(format!("move {m} (0 to 3, or {NO_MOVE} for none)")));
    }
    Ok(())
}

/// How `n` ids are cut into shards: `parts` equal parts, part `s` being ids
/// `start(s)..start(s + 1)` (none empty, as `parts <= n`).
#[derive(Clone, Copy, Debug)]
struct Cuts {
    n: usize,
    parts: usize,
}

impl Cuts {
    fn new(n: usize, shard_keys: usize) -> Cuts {
        Cuts {
            n,
            parts: n.div_ceil(shard_keys.max(1)),
        }
    }

    fn start(&self, s: usize) -> usize {
        (s * self.n).checked_div(self.parts).unwrap_or(0)
    }
}

/// One built shard: its first key, its keys, its graph.
struct Built {
    first: u64,
    keys: u64,
    params: FuseParams,
    data: Vec<u8>,
}

/// Builds parts `range` of `cuts` in parallel, `ids` and `moves` holding the ids from the
/// start of `range` on; parts without a key are left out.
fn build_parts(
    ids: &[u64],
    moves: &[u8],
    cuts: Cuts,
    range: std::ops::Range<usize>,
) -> Result<Vec<Built>, IndexError> {
    let base = cuts.start(range.start);
    let built = range
        .into_par_iter()
        .map(|s| {
            let r = cuts.start(s) - base..cuts.start(s + 1) - base;
            let (keys, vals): (Vec<u64>, Vec<u8>) = ids[r.clone()]
                .iter()
                .zip(&moves[r])
                .filter(|(_, &m)| m != NO_MOVE)
                .map(|(&id, &m)| (id, m))
                .unzip();
            let Some(&first) = keys.first() else {
                return Ok(None);
            };
            let (params, data) = fuse::build(&keys, &vals, MOVE_BITS)?;
            Ok(Some(Built {
                first,
                keys: keys.len() as u64,
                params,
                data,
            }))
        })
        .collect::<Result<Vec<_>, IndexError>>()?;
    Ok(built.into_iter().flatten().collect())
}

/// The file of the built shards, in order: header, shard table, cells, checksum.
fn assemble(meta: &PolicyMeta, built: Vec<Built>) -> (Vec<u8>, PolicyStats) {
    let keys: u64 = built.iter().map(|b| b.keys).sum();
    let shards = built.len();
    let table_end = HEADER_LEN + shards * SHARD_LEN;
    let file_len = table_end + built.iter().map(|b| b.data.len()).sum::<usize>();
    let mut out = Vec::with_capacity(file_len);
    out.resize(HEADER_LEN, 0);
    out[..8].copy_from_slice(MAGIC);
    put32(&mut out, off::VERSION, FORMAT_VERSION);
    out[off::ROWS] = meta.rows;
    out[off::COLS] = meta.cols;
    out[off::BITS] = MOVE_BITS as u8;
    out[off::ARITY] = ARITY as u8;
    put32(&mut out, off::AGE, meta.age);
    put32(&mut out, off::HEADER_LEN, HEADER_LEN as u32);
    put64(&mut out, off::KEYS, keys);
    put64(&mut out, off::SHARDS, shards as u64);
    out[off::VARIANT_LEN] = meta.variant.len() as u8;
    out[off::VARIANT..off::VARIANT + meta.variant.len()].copy_from_slice(meta.variant.as_bytes());
    put64(&mut out, off::FILE_LEN, file_len as u64);
    let mut at = table_end as u64;
    for b in &built {
        let p = &b.params;
        let mut rec = [0u8; SHARD_LEN];
        rec[..8].copy_from_slice(&b.first.to_le_bytes());
        rec[8..16].copy_from_slice(&at.to_le_bytes());
        rec[16..24].copy_from_slice(&p.seed.to_le_bytes());
        rec[24..28].copy_from_slice(&p.segment_log.to_le_bytes());
        rec[28..32].copy_from_slice(&p.segment_count.to_le_bytes());
        out.extend_from_slice(&rec);
        at += b.data.len() as u64;
    }
    for b in built {
        out.extend_from_slice(&b.data);
    }
    debug_assert_eq!(out.len(), file_len);
    let crc = file_crc(&out);
    put32(&mut out, CRC_AT, crc);
    let stats = PolicyStats {
        keys,
        shards: shards as u64,
        file_bytes: out.len() as u64,
    };
    (out, stats)
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn file_crc(bytes: &[u8]) -> u32 {
    crc_except(bytes, CRC_AT)
}

/// What a policy file's header records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyHeader {
    pub rows: u8,
    pub cols: u8,
    pub age: u32,
    pub variant: String,
    pub keys: u64,
    pub shards: u64,
}

/// One shard: its first id, the shape of its graph, where its cells start.
#[derive(Clone, Copy, Debug)]
struct Shard {
    first: u64,
    params: FuseParams,
    at: usize,
}

/// A validated policy file over bytes `B` (a `Vec<u8>`, a memory map…).
pub struct Policy<B> {
    bytes: B,
    header: PolicyHeader,
    shards: Vec<Shard>,
}

impl<B> std::fmt::Debug for Policy<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl<B: AsRef<[u8]>> Policy<B> {
    /// Validates `bytes` as a policy file: magic, version, lengths, checksum, then the shard
    /// table against the file. Never panics. `B::as_ref` must return the same bytes each time.
    pub fn from_bytes(bytes: B) -> Result<Self, IndexError> {
        let b = bytes.as_ref();
        let file_len = b.len() as u64;
        check_frame(
            b,
            &Frame {
                magic: MAGIC,
                versions: &[FORMAT_VERSION],
                header_len: HEADER_LEN,
                file_len_at: off::FILE_LEN,
                crc_at: CRC_AT,
            },
        )?;
        // The checksum proves the bytes are what some writer wrote; the rest proves they
        // describe shards inside the file, so a look-up never reads out of bounds.
        let (rows, cols) = (b[off::ROWS], b[off::COLS]);
        if rows == 0 || cols == 0 || u32::from(rows) * u32::from(cols) > 16 {
            return Err(corrupted(format!("a {rows}x{cols} board")));
        }
        if u32::from(b[off::BITS]) != MOVE_BITS || usize::from(b[off::ARITY]) != ARITY {
            return Err(corrupted(format!(
                "{}-bit values in a {}-wise graph (this reader: {MOVE_BITS}-bit, {ARITY}-wise)",
                b[off::BITS],
                b[off::ARITY]
            )));
        }
        if le_u32(b, off::RESERVED) != 0 {
            return Err(corrupted("reserved header bytes are not zero"));
        }
        let vlen = b[off::VARIANT_LEN] as usize;
        if vlen > MAX_VARIANT_LEN {
            return Err(corrupted(format!("variant name length {vlen}")));
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
        let keys = le_u64(b, off::KEYS);
        let n_shards = le_u64(b, off::SHARDS);
        let table_end = n_shards
            .checked_mul(SHARD_LEN as u64)
            .and_then(|t| t.checked_add(HEADER_LEN as u64))
            .filter(|&t| t <= file_len)
            .ok_or_else(|| corrupted(format!("{n_shards} shards do not fit the file")))?;
        if (keys == 0) != (n_shards == 0) || n_shards > keys {
            return Err(corrupted(format!("{keys} ids in {n_shards} shards")));
        }
        let mut shards = Vec::with_capacity(n_shards as usize);
        let mut at = table_end;
        for s in 0..n_shards as usize {
            let r = HEADER_LEN + s * SHARD_LEN;
            let params = FuseParams {
                seed: le_u64(b, r + 16),
                segment_log: le_u32(b, r + 24),
                segment_count: le_u32(b, r + 28),
            };
            let shard = Shard {
                first: le_u64(b, r),
                params,
                at: le_u64(b, r + 8) as usize,
            };
            if !params.is_valid() {
                return Err(corrupted(format!("shard {s}: segments {params:?}")));
            }
            if shard.at as u64 != at {
                return Err(corrupted(format!(
                    "shard {s} starts at {}, expected {at}",
                    shard.at
                )));
            }
            if shards
                .last()
                .is_some_and(|p: &Shard| p.first >= shard.first)
            {
                return Err(corrupted(format!("shard {s}: first ids not increasing")));
            }
            at = at
                .checked_add(params.bytes(MOVE_BITS))
                .filter(|&e| e <= file_len)
                .ok_or_else(|| corrupted(format!("shard {s} runs past the end of the file")))?;
            shards.push(shard);
        }
        if at != file_len {
            return Err(corrupted(format!(
                "shards end at {at}, the file at {file_len}"
            )));
        }
        Ok(Policy {
            header: PolicyHeader {
                rows,
                cols,
                age: le_u32(b, off::AGE),
                variant,
                keys,
                shards: n_shards,
            },
            shards,
            bytes,
        })
    }

    pub fn header(&self) -> &PolicyHeader {
        &self.header
    }

    /// Checks that the file is the one asked for.
    pub fn expect(&self, rows: u8, cols: u8, age: u32, variant: &str) -> Result<(), IndexError> {
        let h = &self.header;
        expect_file(
            (h.rows, h.cols, h.age, &h.variant),
            (rows, cols, age, variant),
        )
    }

    /// The stored move (0..4) of `id` if it is a live state of the age; an arbitrary one in
    /// 0..4 otherwise; `None` if the age has no live state.
    #[inline]
    pub fn get(&self, id: u64) -> Option<u8> {
        let s = self.shards.partition_point(|s| s.first <= id).max(1) - 1;
        let shard = self.shards.get(s)?;
        let data = &self.bytes.as_ref()[shard.at..];
        Some(fuse::get(&shard.params, data, MOVE_BITS, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn meta() -> PolicyMeta {
        PolicyMeta {
            rows: 3,
            cols: 3,
            age: 40,
            variant: "goal-32-discount=0.95".into(),
        }
    }

    fn sample(seed: u64, n: usize) -> (Vec<u64>, Vec<u8>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut keys: Vec<u64> = (0..n).map(|_| rng.gen::<u64>() >> 28).collect();
        keys.sort_unstable();
        keys.dedup();
        // A fifth of the ids are not keys (terminal states).
        let moves = keys.iter().map(|_| rng.gen_range(0..5)).collect();
        (keys, moves)
    }

    #[test]
    fn every_id_gets_its_move_across_shards() {
        for (n, shard) in [
            (0, 8),
            (1, 8),
            (7, 8),
            (8, 8),
            (9, 8),
            (1000, 64),
            (50_000, 4096),
        ] {
            let (keys, moves) = sample(n as u64, n);
            let (bytes, stats) = encode_sharded(&meta(), &keys, &moves, shard).unwrap();
            let live = moves.iter().filter(|&&m| m != NO_MOVE).count();
            assert_eq!(stats.keys as usize, live);
            assert!(stats.shards as usize <= keys.len().div_ceil(shard));
            let p = Policy::from_bytes(&bytes[..]).unwrap();
            p.expect(3, 3, 40, "goal-32-discount=0.95").unwrap();
            assert!(p.expect(3, 3, 42, "goal-32-discount=0.95").is_err());
            for (&k, &m) in keys.iter().zip(&moves) {
                if m != NO_MOVE {
                    assert_eq!(p.get(k), Some(m));
                }
            }
            // Ids outside the set get some move, never a panic.
            for k in [0, 1, u64::MAX, keys.first().map_or(5, |k| k ^ 1)] {
                if live == 0 {
                    assert_eq!(p.get(k), None);
                } else {
                    assert!(p.get(k).unwrap() < 4);
                }
            }
        }
    }

    #[test]
    fn a_flipped_byte_anywhere_is_damage() {
        let (keys, moves) = sample(9, 300);
        let (bytes, _) = encode_sharded(&meta(), &keys, &moves, 100).unwrap();
        for i in 0..bytes.len() {
            for bit in [0, 5] {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    matches!(
                        Policy::from_bytes(&bad[..]),
                        Err(IndexError::Corrupted { .. })
                    ),
                    "byte {i} bit {bit}"
                );
            }
        }
        for len in [0, 4, 100, bytes.len() - 1] {
            assert!(Policy::from_bytes(&bytes[..len]).is_err());
        }
    }

    /// Pushes `ids` and `moves` in chunks of `chunk()` ids, checking that the builder never
    /// holds more than a shard a thread of ids.
    fn build_in_chunks(
        ids: &[u64],
        moves: &[u8],
        shard: usize,
        mut chunk: impl FnMut() -> usize,
    ) -> (Vec<u8>, PolicyStats) {
        let mut b = PolicyBuilder::with_shard_keys(meta(), ids.len(), shard).unwrap();
        let mut at = 0;
        while at < ids.len() {
            let end = (at + chunk()).min(ids.len());
            b.push(&ids[at..end], &moves[at..end]).unwrap();
            assert!(b.ids.len() <= rayon::current_num_threads() * shard);
            at = end;
        }
        b.finish().unwrap()
    }

    #[test]
    fn the_builder_gives_the_bytes_of_all_ids_at_once() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        // (ids, shard keys, parts whose ids all have no move)
        for (n, shard, blank) in [
            (0, 1000, &[][..]),
            (1, 1000, &[]),
            (1, 1000, &[0]),
            (300, 1000, &[]),
            (300, 64, &[0, 4]),
            (5000, 1000, &[1, 4]),
            (4321, 1000, &[2]),
            (2500, 100, &[0, 1, 2, 13, 24]),
        ] {
            let (ids, mut moves) = sample(n as u64 + 100, n);
            let cuts = Cuts::new(ids.len(), shard);
            for &s in blank {
                moves[cuts.start(s)..cuts.start(s + 1)].fill(NO_MOVE);
            }
            let want = encode_sharded(&meta(), &ids, &moves, shard).unwrap();
            assert_eq!(want.1.shards as usize, cuts.parts - blank.len());
            let all = ids.len();
            for (name, got) in [
                ("1", build_in_chunks(&ids, &moves, shard, || 1)),
                ("7", build_in_chunks(&ids, &moves, shard, || 7)),
                (
                    "random",
                    build_in_chunks(&ids, &moves, shard, || rng.gen_range(0..2 * shard)),
                ),
                ("all", build_in_chunks(&ids, &moves, shard, || all)),
            ] {
                assert!(got == want, "{n} ids, shards of {shard}, chunks of {name}");
            }
        }
    }

    #[test]
    fn the_builder_gives_the_same_bytes_on_any_thread_count() {
        let (ids, moves) = sample(12, 2500);
        let want = encode_sharded(&meta(), &ids, &moves, 100).unwrap();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| build_in_chunks(&ids, &moves, 100, || 7));
            assert!(got == want, "{threads} threads");
        }
    }

    #[test]
    fn the_builder_refuses_what_encode_refuses() {
        let err = |r: Result<(), IndexError>| r.unwrap_err().to_string();
        let mut b = PolicyBuilder::new(meta(), 5).unwrap();
        b.push(&[1, 2, 3], &[0, 1, 4]).unwrap();
        let e = err(b.push(&[3, 4], &[0, 0]));
        assert!(
            e.contains("not strictly increasing at 3: 0x3 then 0x3"),
            "{e}"
        );
        let e = err(b.push(&[4, 4], &[0, 0]));
        assert!(
            e.contains("not strictly increasing at 4: 0x4 then 0x4"),
            "{e}"
        );
        let e = err(b.push(&[4, 5], &[0, 5]));
        assert!(e.contains("move 5"), "{e}");
        let e = err(b.push(&[4, 5], &[0]));
        assert!(e.contains("2 ids and 1 moves"), "{e}");
        let e = err(b.push(&[4, 5, 6], &[0, 1, 2]));
        assert!(e.contains("6 ids pushed for a policy of 5"), "{e}");
        // A refused chunk changed nothing.
        b.push(&[4, 5], &[2, 3]).unwrap();
        let want = encode_policy(&meta(), &[1, 2, 3, 4, 5], &[0, 1, 4, 2, 3]).unwrap();
        assert!(b.finish().unwrap() == want);

        let mut b = PolicyBuilder::new(meta(), 3).unwrap();
        b.push(&[1, 2], &[0, 1]).unwrap();
        let e = b.finish().unwrap_err().to_string();
        assert!(e.contains("2 ids pushed for a policy of 3"), "{e}");
        let mut b = PolicyBuilder::new(meta(), 0).unwrap();
        assert!(err(b.push(&[1], &[0])).contains("1 ids pushed for a policy of 0"));
        b.push(&[], &[]).unwrap();
        assert!(b.finish().unwrap() == encode_policy(&meta(), &[], &[]).unwrap());
        let long = PolicyMeta {
            variant: "x".repeat(MAX_VARIANT_LEN + 1),
            ..meta()
        };
        assert!(PolicyBuilder::new(long, 1).is_err());
    }

    #[test]
    fn refuses_ids_out_of_order() {
        let e = encode_policy(&meta(), &[5, 3], &[0, 1]).unwrap_err();
        assert!(
            e.to_string().contains("not strictly increasing at 1"),
            "{e}"
        );
        assert!(encode_policy(&meta(), &[3, 3], &[0, 1]).is_err());
        assert!(encode_policy(&meta(), &[3, 4], &[0, 5]).is_err());
    }
}
