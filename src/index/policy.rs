//! The policy file (`.a2p`): one age's optimal moves as a compressed static function from
//! state id to the move's *rank*, the one on-disk format of the policy layout (header,
//! version, checksum), read zero-copy from any `AsRef<[u8]>`.
//!
//! # What is stored
//!
//! The reader knows a state's valid moves and lists them in a fixed order (the header names
//! it: a cheap rule of `rules::order`, computed alike by writer and reader); what a state
//! needs is the rank `r` of an optimal move in that list of `m` moves. A state with `m ≤ 1`
//! stores nothing. The others store `r` in unary, cut short by `m`: at level `l = 0, 1, …`
//! one bit, "is the move rank `l`?", until it says yes or only rank `m − 1` is left. So a
//! state with two moves stores one bit; one whose first move is optimal stores one bit; only
//! the states whose rule's choice is not optimal reach the later levels. Where several moves
//! are optimal the writer passes the smallest rank among them (the cheapest). Every level is
//! a 1-bit retrieval ([`super::ribbon`], keys hashed with their level by
//! [`RibbonParams::hash`]) and all levels of a shard share one system: about 1.03 bits a
//! stored bit, the levels' keys together in one system.
//! This is the compressed static function of Hreinsson, Krøyer & Pagh (ESA 2009) and
//! Genuzio, Ottaviano & Vigna (SEA 2016) with a unary code, which the rank's skew suits
//! (most states end at level 0); `reports/bench/policy.md` gives the symbol's entropy under
//! each rule and how close the files come.
//!
//! Why our own and not a crate: `sux`'s `VFunc` and `ptr_hash` store a value a key, not a
//! code whose length varies by key; the rest is [`super::ribbon`]'s reasons (the file format
//! is ours, zero-copy, `Corrupted` on hostile bytes, the same bytes whatever the thread
//! count).
//!
//! It answers the stored rank of every key of the file and an arbitrary rank below `m` for any
//! other id: it cannot tell whether a board was reached (the reader checks that the move
//! answered is valid on the board, and says the rest in one line). A file built over the
//! states optimal play reaches (header flag) holds those only.
//!
//! An age's ids, in increasing order, are cut into shards of at most [`SHARD_KEYS`] ids
//! (equal parts), each its own graph: a shard is built with a bounded scratch whatever the
//! age's size, shards build in parallel, and a look-up finds its shard by a binary search over
//! the shards' first ids. [`PolicyBuilder`] writes the same bytes from ids pushed a chunk at a
//! time, holding a byte a state of the shards not built yet beside their ids. Fixed 160-byte
//! header, little-endian:
//!
//! ```text
//!   0  magic b"A2048POL"          8  format version u32 (2)
//!  12  rows u8  13 cols u8  14 value bits u8 (1; 4 for masks)  15 band bits u8 (128)
//!  16  age u32                    20  header length u32 (= 160)
//!  24  keys u64 (states with two valid moves or more)
//!  32  shards u64
//!  40  variant length u8, then 64 bytes of UTF-8 zero-padded; zero padding to 112
//! 112  file length u64
//! 120  CRC32 (crc32fast / IEEE) of every byte of the file except these 4, u32
//! 124  order u8 (the rule's number), flags u8 (bit 0: reached states only; bit 1: masks of
//!      the optimal moves, one key a state of two moves or more), reserved u16 (0)
//! 128  states u64 (the ids the file was built over, keys or not)
//! 136  keys at levels 0, 1, 2: 3 × u64 (level 0's are the keys)
//! 160  shards × 32 bytes: first key u64, data offset u64, seed u64, slots u64
//!      then each shard's solution, contiguous, in shard order: a plane of slots + 128 bits
//!      (in little-endian words) a bit of the values
//! ```
//!
//! Format version 1 (2-bit moves in 4-wise binary fuse graphs of [`super::fuse`], no order, a
//! 128-byte header ending at the reserved u32 at 124, shard records ending in segment log and
//! count u32) is still read: [`Stored::Move`].
//!
//! Readers check magic, version, lengths, the checksum, then that the shards tile the file
//! and their first ids increase; any failure is [`IndexError::Corrupted`], never a panic and
//! never a move read from damaged bytes.

use std::sync::Arc;

use rayon::prelude::*;

use super::fuse::{self, FuseParams, ARITY};
use super::raw::{
    check_frame, check_variant, crc_except, expect_file, le_u32, le_u64, Frame, MAX_VARIANT_LEN,
};
use super::ribbon::{self, RibbonParams, BAND};
use super::{corrupted, invalid, IndexError};

const MAGIC: &[u8; 8] = b"A2048POL";
const FORMAT_VERSION: u32 = 2;
const V1: u32 = 1;
const HEADER_LEN: usize = 160;
const V1_HEADER_LEN: usize = 128;
const SHARD_LEN: usize = 32;
const CRC_AT: usize = 120;
/// Bits of a stored symbol: one a level.
pub const SYMBOL_BITS: u32 = 1;
/// Bits of a version 1 file's moves.
const V1_MOVE_BITS: u32 = 2;
/// Levels of the unary code (ranks 0 to 3 of at most four moves).
pub const LEVELS: usize = 3;
/// The most ids of one shard: 2^18 ids are about 340 K keys at their levels, which a band
/// of 128 bits solves at ≈ 1.035 slots a key (a million at 1.04), in ≈ 15 MB of scratch (a
/// key's start, band and bit, a slot's row and bit); the shard's 32-byte record is 0.001 bit
/// a key.
pub const SHARD_KEYS: usize = 1 << 18;
/// Header flag: the file holds the states optimal play reaches, not every state.
const FLAG_REACHED: u8 = 1;
/// Header flag: the file holds each state's optimal moves as a 4-bit mask (what the reach
/// pass chooses among), one key a state of two valid moves or more.
const FLAG_MASKS: u8 = 2;
/// Bits of a stored mask.
pub const MASK_BITS: u32 = 4;

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
    pub const ORDER: usize = 124;
    pub const FLAGS: usize = 125;
    pub const RESERVED: usize = 126;
    pub const STATES: usize = 128;
    pub const LEVELS: usize = 136;
}

/// The number of valid moves of a state id (0 for a state without a move: terminal, or
/// holding a goal variant's goal), which the writer's rules know and this room does not.
pub type MovesOf = Arc<dyn Fn(u64) -> u8 + Send + Sync>;

/// What the caller says about a policy file when writing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyMeta {
    pub rows: u8,
    pub cols: u8,
    pub age: u32,
    pub variant: String,
    /// The number of the rule that orders a state's moves (the reader's business).
    pub order: u8,
    /// Whether the ids are the states optimal play reaches (not every state).
    pub reached: bool,
    /// Whether the symbols are masks of the optimal moves (bit `d` for move `d` of L, R, U,
    /// D) instead of ranks: the file the reach pass reads, which a state's tied moves are
    /// all in.
    pub masks: bool,
}

/// Sizes of a policy file.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PolicyStats {
    /// States with a stored symbol (two valid moves or more).
    pub keys: u64,
    pub shards: u64,
    pub file_bytes: u64,
    /// The ids the file was built over.
    pub states: u64,
    /// Keys at each level of the unary code.
    pub levels: [u64; LEVELS],
}

/// Encodes the policy of one age: `ids` strictly increasing, each with the rank (below 4) of
/// an optimal move among its `moves_of(id)` valid moves in the order `meta` names (any rank
/// for a state with at most one move).
pub fn encode_policy(
    meta: &PolicyMeta,
    ids: &[u64],
    ranks: &[u8],
    moves_of: MovesOf,
) -> Result<(Vec<u8>, PolicyStats), IndexError> {
    encode_sharded(meta, ids, ranks, moves_of, SHARD_KEYS)
}

/// [`encode_policy`] with shards of at most `shard_keys` ids.
pub(crate) fn encode_sharded(
    meta: &PolicyMeta,
    ids: &[u64],
    ranks: &[u8],
    moves_of: MovesOf,
    shard_keys: usize,
) -> Result<(Vec<u8>, PolicyStats), IndexError> {
    let moves: Vec<u8> = ids.par_iter().map(|&id| moves_of(id)).collect();
    let mut b = PolicyBuilder::with_shard_keys(meta.clone(), ids.len(), shard_keys)?;
    b.push(ids, ranks, &moves)?;
    b.finish()
}

/// What a shard's build needs of a state, in a byte: for ranks, the rank (bits 0–1) and the
/// length of its unary code (bits 2–3); for masks, the mask (bits 0–3) and whether the state
/// is a key (bit 4: two valid moves or more).
#[inline]
fn code(masks: bool, symbol: u8, moves: u8) -> u8 {
    if masks {
        symbol | u8::from(moves >= 2) << 4
    } else {
        symbol | (unary(symbol, moves).0 as u8) << 2
    }
}

/// [`encode_policy`] fed a chunk of ids at a time, for an age whose ids do not fit memory
/// at once: it keeps the ids of the shards not built yet (at most a shard a thread, the one
/// being filled included) with a byte each of their symbols, and the built shards' cells, and
/// gives the same bytes as [`encode_policy`] over all the ids.
pub struct PolicyBuilder {
    meta: PolicyMeta,
    cuts: Cuts,
    /// Ids pushed so far, and the last of them (ids increase across pushes too).
    pushed: usize,
    last: Option<u64>,
    /// The first shard not built and the shard being filled: `ids` and `codes` hold the ids
    /// from the start of `unbuilt` on (the shards before `filling` are complete).
    unbuilt: usize,
    filling: usize,
    ids: Vec<u64>,
    /// Per id its [`code`].
    codes: Vec<u8>,
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
            codes: Vec::new(),
            built: Vec::new(),
        })
    }

    /// Takes the next `ids` (strictly increasing, and above those pushed before), their
    /// ranks (or masks) and their numbers of valid moves (what [`encode_policy`]'s
    /// `moves_of` gives). The chunk is taken a shard at a time (never copied whole), and the
    /// complete shards build in parallel once there is one a thread (the rest at
    /// [`PolicyBuilder::finish`]). A refused chunk changes nothing.
    pub fn push(&mut self, ids: &[u64], ranks: &[u8], moves: &[u8]) -> Result<(), IndexError> {
        check_run(ids, ranks, moves, self.last, self.pushed, self.meta.masks)?;
        let n = self.cuts.n;
        let total = self.pushed.saturating_add(ids.len());
        if total > n {
            return Err(count_mismatch(total, n));
        }
        let masks = self.meta.masks;
        let (mut ids, mut ranks, mut moves) = (ids, ranks, moves);
        self.last = ids.last().copied().or(self.last);
        while !ids.is_empty() {
            let end = self.cuts.start(self.filling + 1);
            let take = (end - self.pushed).min(ids.len());
            self.ids.extend_from_slice(&ids[..take]);
            self.codes.extend(
                ranks[..take]
                    .iter()
                    .zip(&moves[..take])
                    .map(|(&r, &m)| code(masks, r, m)),
            );
            (ids, ranks, moves) = (&ids[take..], &ranks[take..], &moves[take..]);
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
        Ok(assemble(&self.meta, self.cuts.n as u64, self.built))
    }

    /// Builds the complete shards not built yet (all that `ids` holds then).
    fn build_complete(&mut self) -> Result<(), IndexError> {
        let base = self.cuts.start(self.unbuilt);
        let (ids, codes, cuts) = (&self.ids, &self.codes, self.cuts);
        let masks = self.meta.masks;
        let shard = |s: usize| {
            let r = cuts.start(s) - base..cuts.start(s + 1) - base;
            build_shard(&ids[r.clone()], &codes[r], masks)
        };
        // One shard is built on the caller's thread: a writer thread outside the pool then
        // builds it beside the pass instead of queueing behind the pass's own work.
        let built = if self.filling - self.unbuilt == 1 {
            vec![shard(self.unbuilt)?]
        } else {
            (self.unbuilt..self.filling)
                .into_par_iter()
                .map(shard)
                .collect::<Result<Vec<_>, IndexError>>()?
        };
        self.built.extend(built.into_iter().flatten());
        self.ids.clear();
        self.codes.clear();
        self.unbuilt = self.filling;
        Ok(())
    }
}

fn count_mismatch(pushed: usize, n: usize) -> IndexError {
    invalid(format!("{pushed} ids pushed for a policy of {n}"))
}

/// Checks ids `at..` of an age (`prev` the one before them): one symbol and one count of
/// valid moves each, the ids strictly increasing, the moves at most 4; a state of two moves
/// or more needs a rank below its moves, or a mask of at least one move.
fn check_run(
    ids: &[u64],
    ranks: &[u8],
    moves: &[u8],
    prev: Option<u64>,
    at: usize,
    masks: bool,
) -> Result<(), IndexError> {
    if ids.len() != ranks.len() || ids.len() != moves.len() {
        return Err(invalid(format!(
            "{} ids, {} ranks and {} counts of moves",
            ids.len(),
            ranks.len(),
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
    let most = if masks { 15 } else { 3 };
    if let Some(r) = ranks.iter().find(|&&r| r > most) {
        let what = if masks { "mask" } else { "rank" };
        return Err(invalid(format!("{what} {r} (0 to {most})")));
    }
    let bad = |(&r, &m): (&u8, &u8)| m > 4 || (m >= 2 && if masks { r == 0 } else { r >= m });
    if let Some(i) = ranks.iter().zip(moves).position(bad) {
        let (id, r, m) = (ids[i], ranks[i], moves[i]);
        return Err(invalid(if m > 4 {
            format!("{m} moves of {id:#x}")
        } else if masks {
            format!("no optimal move of {id:#x}")
        } else {
            format!("rank {r} of {m} moves of {id:#x}")
        }));
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

/// One built shard: its first key, its keys at each level, its system.
struct Built {
    first: u64,
    levels: [u64; LEVELS],
    params: RibbonParams,
    data: Vec<u8>,
}

/// The unary code of rank `r` among `m` moves: the bits of levels `0..len`, level `l`'s bit
/// being whether `r == l` (a state with at most one move stores none).
#[inline]
pub fn unary(r: u8, m: u8) -> (usize, [u8; LEVELS]) {
    let mut bits = [0u8; LEVELS];
    if m < 2 {
        return (0, bits);
    }
    let len = usize::from(r.min(m - 2)) + 1;
    if usize::from(r) < len {
        bits[usize::from(r)] = 1;
    }
    (len, bits)
}

/// The graph of one shard's ids (`codes[i]` the [`code`] of `ids[i]`); `None` without a key.
fn build_shard(ids: &[u64], codes: &[u8], masks: bool) -> Result<Option<Built>, IndexError> {
    let mut keys: Vec<(u64, u8)> = Vec::with_capacity(ids.len() + ids.len() / 2);
    let mut values: Vec<u8> = Vec::with_capacity(keys.capacity());
    let mut levels = [0u64; LEVELS];
    for (&id, &c) in ids.iter().zip(codes) {
        if masks {
            if c >> 4 != 0 {
                keys.push((id, 0));
                values.push(c & 15);
                levels[0] += 1;
            }
            continue;
        }
        let (r, len) = (c & 3, c >> 2);
        for l in 0..len {
            keys.push((id, l));
            values.push(u8::from(r == l));
            levels[usize::from(l)] += 1;
        }
    }
    let Some(&(first, _)) = keys.first() else {
        return Ok(None);
    };
    let (params, data) = ribbon::build_with(
        keys.len(),
        |p, i| p.hash(keys[i].0, usize::from(keys[i].1)),
        &values,
        if masks { MASK_BITS } else { SYMBOL_BITS },
    )?;
    Ok(Some(Built {
        first,
        levels,
        params,
        data,
    }))
}

/// The file of the built shards, in order: header, shard table, cells, checksum.
fn assemble(meta: &PolicyMeta, states: u64, built: Vec<Built>) -> (Vec<u8>, PolicyStats) {
    let mut levels = [0u64; LEVELS];
    for b in &built {
        for (x, y) in levels.iter_mut().zip(b.levels) {
            *x += y;
        }
    }
    let keys = levels[0];
    let shards = built.len();
    let table_end = HEADER_LEN + shards * SHARD_LEN;
    let file_len = table_end + built.iter().map(|b| b.data.len()).sum::<usize>();
    let mut out = Vec::with_capacity(file_len);
    out.resize(HEADER_LEN, 0);
    out[..8].copy_from_slice(MAGIC);
    put32(&mut out, off::VERSION, FORMAT_VERSION);
    out[off::ROWS] = meta.rows;
    out[off::COLS] = meta.cols;
    out[off::BITS] = if meta.masks { MASK_BITS } else { SYMBOL_BITS } as u8;
    out[off::ARITY] = BAND as u8;
    put32(&mut out, off::AGE, meta.age);
    put32(&mut out, off::HEADER_LEN, HEADER_LEN as u32);
    put64(&mut out, off::KEYS, keys);
    put64(&mut out, off::SHARDS, shards as u64);
    out[off::VARIANT_LEN] = meta.variant.len() as u8;
    out[off::VARIANT..off::VARIANT + meta.variant.len()].copy_from_slice(meta.variant.as_bytes());
    put64(&mut out, off::FILE_LEN, file_len as u64);
    out[off::ORDER] = meta.order;
    out[off::FLAGS] =
        if meta.reached { FLAG_REACHED } else { 0 } | if meta.masks { FLAG_MASKS } else { 0 };
    put64(&mut out, off::STATES, states);
    for (l, &x) in levels.iter().enumerate() {
        put64(&mut out, off::LEVELS + 8 * l, x);
    }
    let mut at = table_end as u64;
    for b in &built {
        let p = &b.params;
        let mut rec = [0u8; SHARD_LEN];
        rec[..8].copy_from_slice(&b.first.to_le_bytes());
        rec[8..16].copy_from_slice(&at.to_le_bytes());
        rec[16..24].copy_from_slice(&p.seed.to_le_bytes());
        rec[24..32].copy_from_slice(&p.slots.to_le_bytes());
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
        states,
        levels,
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
    pub version: u32,
    pub rows: u8,
    pub cols: u8,
    pub age: u32,
    pub variant: String,
    pub keys: u64,
    pub shards: u64,
    /// The rule ordering a state's moves (version 2; `None` in version 1, which stores moves).
    pub order: Option<u8>,
    /// The file holds the states optimal play reaches only.
    pub reached: bool,
    /// The file holds masks of the optimal moves (the reach pass's input), not ranks.
    pub masks: bool,
    /// Version 2: the ids the file was built over, and the keys at each level.
    pub states: u64,
    pub levels: [u64; LEVELS],
}

/// What a file holds of a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// The rank of the move among the state's valid moves in the header's order.
    Rank(u8),
    /// The move itself (0 to 3 for L, R, U, D): a version 1 file.
    Move(u8),
    /// The optimal moves (bit `d` for move `d` of L, R, U, D): a file of masks.
    Mask(u8),
}

/// One shard: its first id, the shape of its system (a fuse graph in version 1), where its
/// bits start.
#[derive(Clone, Copy, Debug)]
struct Shard {
    first: u64,
    graph: Graph,
    at: usize,
}

#[derive(Clone, Copy, Debug)]
enum Graph {
    Fuse(FuseParams),
    Ribbon(RibbonParams),
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
        // Version 1's header is shorter: its frame is checked as such.
        let v1 = b.len() >= 12 && b[..8] == MAGIC[..] && le_u32(b, off::VERSION) == V1;
        let header_len = if v1 { V1_HEADER_LEN } else { HEADER_LEN };
        let version = check_frame(
            b,
            &Frame {
                magic: MAGIC,
                versions: if v1 { &[V1] } else { &[FORMAT_VERSION] },
                header_len,
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
        let masks = !v1 && b[off::FLAGS] & FLAG_MASKS != 0;
        let bits = if v1 {
            V1_MOVE_BITS
        } else if masks {
            MASK_BITS
        } else {
            SYMBOL_BITS
        };
        let arity = if v1 { ARITY } else { BAND };
        if u32::from(b[off::BITS]) != bits || usize::from(b[off::ARITY]) != arity {
            return Err(corrupted(format!(
                "{}-bit values, arity {} (version {version}: {bits}-bit, {arity})",
                b[off::BITS],
                b[off::ARITY]
            )));
        }
        let (order, reached, states, levels) = if v1 {
            if le_u32(b, off::ORDER) != 0 {
                return Err(corrupted("reserved header bytes are not zero"));
            }
            (None, false, 0, [0; LEVELS])
        } else {
            let flags = b[off::FLAGS];
            if flags & !(FLAG_REACHED | FLAG_MASKS) != 0
                || b[off::RESERVED] != 0
                || b[off::RESERVED + 1] != 0
            {
                return Err(corrupted("reserved header bits are not zero"));
            }
            let levels: [u64; LEVELS] = std::array::from_fn(|l| le_u64(b, off::LEVELS + 8 * l));
            let states = le_u64(b, off::STATES);
            if levels[0] != le_u64(b, off::KEYS)
                || levels.windows(2).any(|w| w[1] > w[0])
                || (masks && levels[1] != 0)
                || states < levels[0]
            {
                return Err(corrupted(format!(
                    "{states} states, keys at levels {levels:?}"
                )));
            }
            (
                Some(b[off::ORDER]),
                flags & FLAG_REACHED != 0,
                states,
                levels,
            )
        };
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
            .and_then(|t| t.checked_add(header_len as u64))
            .filter(|&t| t <= file_len)
            .ok_or_else(|| corrupted(format!("{n_shards} shards do not fit the file")))?;
        if (keys == 0) != (n_shards == 0) || n_shards > keys {
            return Err(corrupted(format!("{keys} ids in {n_shards} shards")));
        }
        let mut shards = Vec::with_capacity(n_shards as usize);
        let mut at = table_end;
        for s in 0..n_shards as usize {
            let r = header_len + s * SHARD_LEN;
            let seed = le_u64(b, r + 16);
            let (graph, valid, bytes) = if v1 {
                let p = FuseParams {
                    seed,
                    segment_log: le_u32(b, r + 24),
                    segment_count: le_u32(b, r + 28),
                };
                (Graph::Fuse(p), p.is_valid(), p.bytes(bits))
            } else {
                let p = RibbonParams {
                    seed,
                    slots: le_u64(b, r + 24),
                };
                (Graph::Ribbon(p), p.is_valid(), p.bytes(bits))
            };
            let shard = Shard {
                first: le_u64(b, r),
                graph,
                at: le_u64(b, r + 8) as usize,
            };
            if !valid {
                return Err(corrupted(format!("shard {s}: shape {graph:?}")));
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
                .checked_add(bytes)
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
                version,
                rows,
                cols,
                age: le_u32(b, off::AGE),
                variant,
                keys,
                shards: n_shards,
                order,
                reached,
                masks,
                states,
                levels,
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

    /// What the file holds of `id`, a state with `moves` valid moves (0 to 4): the rank of
    /// its stored move (a version 2 file; rank 0 without asking the file for a state with one
    /// move) or the move (version 1). For an id that is not a key, an arbitrary rank below
    /// `moves` (or move). `None` for a state without a move, or where the file has no key.
    #[inline]
    pub fn stored(&self, id: u64, moves: u8) -> Option<Stored> {
        if moves == 0 {
            return None;
        }
        if self.header.version == FORMAT_VERSION && moves == 1 {
            return Some(Stored::Rank(0));
        }
        let s = self.shards.partition_point(|s| s.first <= id).max(1) - 1;
        let shard = self.shards.get(s)?;
        let data = &self.bytes.as_ref()[shard.at..];
        let p = match shard.graph {
            Graph::Fuse(p) => return Some(Stored::Move(fuse::get(&p, data, V1_MOVE_BITS, id))),
            Graph::Ribbon(p) => p,
        };
        if self.header.masks {
            let h = p.hash(id, 0);
            return Some(Stored::Mask(ribbon::get(&p, data, MASK_BITS, h)));
        }
        let m = moves.min(4);
        for l in 0..usize::from(m - 1) {
            if ribbon::get(&p, data, SYMBOL_BITS, p.hash(id, l)) == 1 {
                return Some(Stored::Rank(l as u8));
            }
        }
        Some(Stored::Rank(m - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    fn meta() -> PolicyMeta {
        PolicyMeta {
            rows: 3,
            cols: 3,
            age: 40,
            variant: "goal-32-discount=0.95".into(),
            order: 2,
            reached: false,
            masks: false,
        }
    }

    /// The valid moves of an id, as the rules would give them: 0 to 4, from its bits.
    fn moves_of() -> MovesOf {
        Arc::new(|id: u64| ((id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59) % 5) as u8)
    }

    fn moves(ids: &[u64]) -> Vec<u8> {
        ids.iter().map(|&id| moves_of()(id)).collect()
    }

    /// Sorted distinct ids and a rank each (below its moves; 0 or random for those with at
    /// most one, which store nothing).
    fn sample(seed: u64, n: usize) -> (Vec<u64>, Vec<u8>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut keys: Vec<u64> = (0..n).map(|_| rng.gen::<u64>() >> 28).collect();
        keys.sort_unstable();
        keys.dedup();
        let m = moves_of();
        // Skewed as a good rule makes them: rank 0 most of the time.
        let ranks = keys
            .iter()
            .map(|&k| match m(k) {
                0 | 1 => rng.gen_range(0..4),
                m if rng.gen_bool(0.7) => rng.gen_range(0..1.min(m)),
                m => rng.gen_range(0..m),
            })
            .collect();
        (keys, ranks)
    }

    #[test]
    fn every_id_gets_its_rank_across_shards() {
        let m = moves_of();
        for (n, shard) in [
            (0, 8),
            (1, 8),
            (7, 8),
            (8, 8),
            (9, 8),
            (1000, 64),
            (50_000, 4096),
            (300_000, SHARD_KEYS),
        ] {
            let (keys, ranks) = sample(n as u64, n);
            let (bytes, stats) = encode_sharded(&meta(), &keys, &ranks, m.clone(), shard).unwrap();
            let naive: HashMap<u64, (u8, u8)> = keys
                .iter()
                .zip(&ranks)
                .map(|(&k, &r)| (k, (m(k), r)))
                .collect();
            let multi = naive.values().filter(|x| x.0 >= 2).count();
            assert_eq!(stats.keys as usize, multi);
            assert_eq!(stats.states as usize, keys.len());
            // Levels: one key a state with two moves or more, then those not at rank 0 with
            // three or more, then those at ranks 2 and 3 with four.
            let at = |l: u8| {
                naive
                    .values()
                    .filter(|&&(m, r)| m >= l + 2 && r >= l)
                    .count()
            };
            assert_eq!(stats.levels, [at(0), at(1), at(2)].map(|x| x as u64));
            assert!(stats.shards as usize <= keys.len().div_ceil(shard));
            let p = Policy::from_bytes(&bytes[..]).unwrap();
            p.expect(3, 3, 40, "goal-32-discount=0.95").unwrap();
            assert!(p.expect(3, 3, 42, "goal-32-discount=0.95").is_err());
            assert_eq!(p.header().order, Some(2));
            assert_eq!(p.header().levels, stats.levels);
            for (&k, &(moves, r)) in &naive {
                let got = p.stored(k, moves);
                match moves {
                    0 => assert_eq!(got, None),
                    1 => assert_eq!(got, Some(Stored::Rank(0))),
                    _ => assert_eq!(got, Some(Stored::Rank(r)), "{k:#x} of {moves} moves"),
                }
            }
            if shard == SHARD_KEYS {
                // Near the entropy of its unary code, with the graphs' overhead.
                let stored: u64 = stats.levels.iter().sum();
                let bits = (stats.file_bytes * 8) as f64 / stored as f64;
                assert!(bits < 1.2, "{bits} bits a stored bit");
            }
            // Ids outside the set get some rank below their moves, never a panic.
            for k in [0, 1, u64::MAX, keys.first().map_or(5, |k| k ^ 1)] {
                for moves in 2..=4 {
                    match p.stored(k, moves) {
                        None => assert_eq!(multi, 0),
                        Some(Stored::Rank(r)) => assert!(r < moves),
                        Some(x) => panic!("{x:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn a_file_of_masks_answers_every_mask() {
        let m = moves_of();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (keys, _) = sample(21, 20_000);
        let masks: Vec<u8> = keys
            .iter()
            .map(|&k| if m(k) == 0 { 0 } else { rng.gen_range(1..16) })
            .collect();
        let meta = PolicyMeta {
            masks: true,
            ..meta()
        };
        let (bytes, stats) = encode_sharded(&meta, &keys, &masks, m.clone(), 4096).unwrap();
        let multi = keys.iter().filter(|&&k| m(k) >= 2).count() as u64;
        assert_eq!(stats.levels, [multi, 0, 0]);
        let p = Policy::from_bytes(&bytes[..]).unwrap();
        assert!(p.header().masks);
        for (&k, &x) in keys.iter().zip(&masks) {
            match m(k) {
                0 => assert_eq!(p.stored(k, 0), None),
                1 => assert_eq!(p.stored(k, 1), Some(Stored::Rank(0))),
                moves => assert_eq!(p.stored(k, moves), Some(Stored::Mask(x))),
            }
        }
        // A state of two moves or more needs an optimal move; masks fit 4 bits.
        let id = keys.iter().copied().find(|&k| m(k) >= 2).unwrap();
        assert!(encode_policy(&meta, &[id], &[0], m.clone()).is_err());
        assert!(encode_policy(&meta, &[id], &[16], m).is_err());
    }

    #[test]
    fn the_unary_code_stops_at_the_rank_or_the_last_move() {
        assert_eq!(unary(0, 0), (0, [0, 0, 0]));
        assert_eq!(unary(0, 1), (0, [0, 0, 0]));
        assert_eq!(unary(0, 2), (1, [1, 0, 0]));
        assert_eq!(unary(1, 2), (1, [0, 0, 0]));
        assert_eq!(unary(1, 3), (2, [0, 1, 0]));
        assert_eq!(unary(2, 3), (2, [0, 0, 0]));
        assert_eq!(unary(2, 4), (3, [0, 0, 1]));
        assert_eq!(unary(3, 4), (3, [0, 0, 0]));
    }

    #[test]
    fn a_flipped_byte_anywhere_is_damage() {
        let (keys, ranks) = sample(9, 300);
        let (bytes, _) = encode_sharded(&meta(), &keys, &ranks, moves_of(), 100).unwrap();
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
        for len in [0, 4, 100, 130, bytes.len() - 1] {
            assert!(Policy::from_bytes(&bytes[..len]).is_err());
        }
    }

    /// A version 1 file (2-bit moves, 128-byte header) of one shard, as that writer made it.
    fn v1_file(keys: &[u64], moves: &[u8]) -> Vec<u8> {
        let (p, data) = fuse::build(keys, moves, V1_MOVE_BITS).unwrap();
        let mut out = vec![0u8; V1_HEADER_LEN];
        out[..8].copy_from_slice(MAGIC);
        put32(&mut out, off::VERSION, V1);
        out[off::ROWS] = 3;
        out[off::COLS] = 3;
        out[off::BITS] = 2;
        out[off::ARITY] = 4;
        put32(&mut out, off::AGE, 40);
        put32(&mut out, off::HEADER_LEN, V1_HEADER_LEN as u32);
        put64(&mut out, off::KEYS, keys.len() as u64);
        put64(&mut out, off::SHARDS, 1);
        out[off::VARIANT_LEN] = 6;
        out[off::VARIANT..off::VARIANT + 6].copy_from_slice(b"goal-8");
        let len = V1_HEADER_LEN + SHARD_LEN + data.len();
        put64(&mut out, off::FILE_LEN, len as u64);
        out.extend_from_slice(&keys[0].to_le_bytes());
        out.extend_from_slice(&((V1_HEADER_LEN + SHARD_LEN) as u64).to_le_bytes());
        out.extend_from_slice(&p.seed.to_le_bytes());
        out.extend_from_slice(&p.segment_log.to_le_bytes());
        out.extend_from_slice(&p.segment_count.to_le_bytes());
        out.extend_from_slice(&data);
        let crc = file_crc(&out);
        put32(&mut out, CRC_AT, crc);
        out
    }

    #[test]
    fn a_version_1_file_still_answers_its_moves() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let keys: Vec<u64> = (1..2000u64).map(|i| i * 97).collect();
        let moves: Vec<u8> = keys.iter().map(|_| rng.gen_range(0..4)).collect();
        let bytes = v1_file(&keys, &moves);
        let p = Policy::from_bytes(&bytes[..]).unwrap();
        p.expect(3, 3, 40, "goal-8").unwrap();
        assert_eq!(p.header().version, 1);
        assert_eq!(p.header().order, None);
        for (&k, &m) in keys.iter().zip(&moves) {
            assert_eq!(p.stored(k, 1), Some(Stored::Move(m)));
        }
        let mut bad = bytes.clone();
        bad[200] ^= 4;
        assert!(Policy::from_bytes(&bad[..]).is_err());
    }

    /// Pushes `ids` and `ranks` in chunks of `chunk()` ids, checking that the builder never
    /// holds more than a shard a thread of ids.
    fn build_in_chunks(
        ids: &[u64],
        ranks: &[u8],
        shard: usize,
        mut chunk: impl FnMut() -> usize,
    ) -> (Vec<u8>, PolicyStats) {
        let mut b = PolicyBuilder::with_shard_keys(meta(), ids.len(), shard).unwrap();
        let moves = moves(ids);
        let mut at = 0;
        while at < ids.len() {
            let end = (at + chunk()).min(ids.len());
            b.push(&ids[at..end], &ranks[at..end], &moves[at..end])
                .unwrap();
            assert!(b.ids.len() <= rayon::current_num_threads() * shard);
            assert_eq!(b.codes.len(), b.ids.len());
            at = end;
        }
        b.finish().unwrap()
    }

    #[test]
    fn the_builder_gives_the_bytes_of_all_ids_at_once() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for (n, shard) in [
            (0, 1000),
            (1, 1000),
            (300, 1000),
            (300, 64),
            (5000, 1000),
            (4321, 1000),
            (2500, 100),
        ] {
            let (ids, ranks) = sample(n as u64 + 100, n);
            let want = encode_sharded(&meta(), &ids, &ranks, moves_of(), shard).unwrap();
            let all = ids.len();
            for (name, got) in [
                ("1", build_in_chunks(&ids, &ranks, shard, || 1)),
                ("7", build_in_chunks(&ids, &ranks, shard, || 7)),
                (
                    "random",
                    build_in_chunks(&ids, &ranks, shard, || rng.gen_range(0..2 * shard)),
                ),
                ("all", build_in_chunks(&ids, &ranks, shard, || all)),
            ] {
                assert!(got == want, "{n} ids, shards of {shard}, chunks of {name}");
            }
        }
    }

    #[test]
    fn the_builder_gives_the_same_bytes_on_any_thread_count() {
        let (ids, ranks) = sample(12, 2500);
        let want = encode_sharded(&meta(), &ids, &ranks, moves_of(), 100).unwrap();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| build_in_chunks(&ids, &ranks, 100, || 7));
            assert!(got == want, "{threads} threads");
        }
    }

    #[test]
    fn the_builder_refuses_what_encode_refuses() {
        let err = |r: Result<(), IndexError>| r.unwrap_err().to_string();
        let push =
            |b: &mut PolicyBuilder, ids: &[u64], ranks: &[u8]| b.push(ids, ranks, &moves(ids));
        let mut b = PolicyBuilder::new(meta(), 5).unwrap();
        push(&mut b, &[1, 2, 3], &[0, 1, 0]).unwrap();
        let e = err(push(&mut b, &[3, 4], &[0, 0]));
        assert!(
            e.contains("not strictly increasing at 3: 0x3 then 0x3"),
            "{e}"
        );
        let e = err(push(&mut b, &[4, 4], &[0, 0]));
        assert!(
            e.contains("not strictly increasing at 4: 0x4 then 0x4"),
            "{e}"
        );
        let e = err(push(&mut b, &[4, 5], &[0, 5]));
        assert!(e.contains("rank 5"), "{e}");
        let e = err(push(&mut b, &[4, 5], &[0]));
        assert!(e.contains("2 ids, 1 ranks and 2 counts of moves"), "{e}");
        let e = err(b.push(&[4, 5], &[0, 0], &[2, 5]));
        assert!(e.contains("5 moves of 0x5"), "{e}");
        let e = err(push(&mut b, &[4, 5, 6], &[0, 0, 0]));
        assert!(e.contains("6 ids pushed for a policy of 5"), "{e}");
        // A refused chunk changed nothing.
        push(&mut b, &[4, 5], &[0, 0]).unwrap();
        let want = encode_policy(&meta(), &[1, 2, 3, 4, 5], &[0, 1, 0, 0, 0], moves_of()).unwrap();
        assert!(b.finish().unwrap() == want);

        // A rank at or past a state's moves.
        let m = moves_of();
        let id = (1..).find(|&i| m(i) == 2).unwrap();
        let e = encode_policy(&meta(), &[id], &[2], moves_of()).unwrap_err();
        assert!(e.to_string().contains("rank 2 of 2 moves"), "{e}");

        let mut b = PolicyBuilder::new(meta(), 3).unwrap();
        push(&mut b, &[1, 2], &[0, 0]).unwrap();
        let e = b.finish().unwrap_err().to_string();
        assert!(e.contains("2 ids pushed for a policy of 3"), "{e}");
        let mut b = PolicyBuilder::new(meta(), 0).unwrap();
        assert!(err(push(&mut b, &[1], &[0])).contains("1 ids pushed for a policy of 0"));
        push(&mut b, &[], &[]).unwrap();
        assert!(b.finish().unwrap() == encode_policy(&meta(), &[], &[], moves_of()).unwrap());
        let long = PolicyMeta {
            variant: "x".repeat(MAX_VARIANT_LEN + 1),
            ..meta()
        };
        assert!(PolicyBuilder::new(long, 1).is_err());
    }

    #[test]
    fn refuses_ids_out_of_order() {
        let e = encode_policy(&meta(), &[5, 3], &[0, 1], moves_of()).unwrap_err();
        assert!(
            e.to_string().contains("not strictly increasing at 1"),
            "{e}"
        );
        assert!(encode_policy(&meta(), &[3, 3], &[0, 1], moves_of()).is_err());
        assert!(encode_policy(&meta(), &[3, 4], &[0, 5], moves_of()).is_err());
    }
}
