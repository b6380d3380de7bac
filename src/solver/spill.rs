//! Layers grown within a memory budget: the sorted runs a layer is grown from
//! ([`super::layer::Runs`]) are packed once the ids held raw pass a cap, and the layer is read
//! back as a stream of sorted chunks, never whole.
//!
//! A packed run is the work files' block code ([`crate::store::idcodec`]: blocks of 64 Ki ids,
//! the gaps between them as varints compressed by zstd, 5–10 bits an id where the ids take 64),
//! with the first id of every block kept beside it, so that the ids of a range of values are
//! found without decoding the run. The layer's stream ([`Spilled::stream`]) is cut into ranges
//! of values by splitters taken from those first ids (and from the raw runs, every 64 Ki-th
//! id), each range holding about [`RANGE_IDS`] ids of all the runs; the ranges of a round are
//! gathered, sorted and deduplicated on all threads, then handed out in order. Any splitters
//! give the same stream, so the chunks' ids are the layer's whatever the cap and the threads.
//!
//! The forward pass of a big age grows its next layers and its afterstates this way when the
//! budget says so (`solver::plan`); the backward pass makes an age's afterstates again this
//! way only from a work file that keeps none (one written before streamed ages kept theirs).

use std::borrow::Cow;

use rayon::prelude::*;

use super::layer::{self, Runs};
use super::{Result, SolveError};
use crate::store::idcodec;

/// Ids of all the runs a range of the stream gathers (2^22: 32 MiB raw, a few ms to sort).
const RANGE_IDS: usize = 1 << 22;

/// Packed runs held before they are merged into one (so that a stream's ranges gather few
/// pieces, and ids in several packed runs are packed once).
const MAX_PACKED: usize = 8;

/// A sorted, deduplicated run of ids, packed in blocks.
pub struct PackedRun {
    age: u32,
    /// Per block: its first id, its count of ids and its payload.
    first: Vec<u64>,
    counts: Vec<u32>,
    blocks: Vec<Vec<u8>>,
    len: usize,
}

impl PackedRun {
    /// Packs a sorted, deduplicated run of ids of age `age` (blocks encoded in parallel).
    pub fn pack(age: u32, ids: &[u64]) -> PackedRun {
        debug_assert!(layer::is_layer(ids));
        let mut run = PackedRun {
            age,
            first: Vec::new(),
            counts: Vec::new(),
            blocks: Vec::new(),
            len: 0,
        };
        run.append(ids);
        run
    }

    /// Appends ids above every id held, in whole blocks but for the last (encoded in parallel).
    fn append(&mut self, ids: &[u64]) {
        debug_assert!(self
            .counts
            .last()
            .is_none_or(|&c| c as usize == idcodec::BLOCK));
        let age = self.age;
        let blocks: Vec<Vec<u8>> = ids
            .par_chunks(idcodec::BLOCK)
            .map(|b| idcodec::encode_block(age, b))
            .collect();
        for (b, payload) in ids.chunks(idcodec::BLOCK).zip(blocks) {
            self.first.push(b[0]);
            self.counts.push(b.len() as u32);
            self.blocks.push(payload);
        }
        self.len += ids.len();
    }

    /// Ids held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the packed blocks take.
    pub fn bytes(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum::<usize>() + self.first.len() * 12
    }

    /// The ids `x` with `lo <= x < hi` (`hi` = `None`: no bound), decoding only the blocks
    /// that can hold them.
    fn range(&self, lo: u64, hi: Option<u64>) -> Result<Vec<u64>> {
        // Block b holds ids from first[b] up to below first[b + 1].
        let from = self.first.partition_point(|&f| f <= lo).saturating_sub(1);
        let to = match hi {
            Some(h) => self.first.partition_point(|&f| f < h),
            None => self.first.len(),
        };
        let mut out = Vec::new();
        let mut buf = Vec::new();
        for b in from..to.max(from) {
            buf.resize(self.counts[b] as usize, 0);
            idcodec::decode_block(self.age, &self.blocks[b], &mut buf).map_err(|e| {
                SolveError::Internal(format!("a packed run of age {} in memory: {e}", self.age))
            })?;
            let s = buf.partition_point(|&x| x < lo);
            let e = hi.map_or(buf.len(), |h| buf.partition_point(|&x| x < h));
            out.extend_from_slice(&buf[s..e.max(s)]);
        }
        Ok(out)
    }
}

/// A layer grown from sorted, deduplicated runs within a cap of ids held raw: beyond it the
/// raw runs are merged and packed ([`PackedRun`]), and beyond [`MAX_PACKED`] packed runs those
/// are merged into one. With no cap reached it is [`Runs`] itself.
pub struct Spilled {
    age: u32,
    raw: Runs,
    /// Ids the raw runs hold.
    raw_ids: usize,
    /// Raw ids held before they are packed.
    cap: usize,
    packed: Vec<PackedRun>,
}

impl Spilled {
    /// A layer of age `age` holding at most `cap` ids raw (`usize::MAX`: never packed).
    pub fn new(age: u32, cap: usize) -> Spilled {
        Spilled {
            age,
            raw: Runs::default(),
            raw_ids: 0,
            cap: cap.max(1),
            packed: Vec::new(),
        }
    }

    /// Adds a sorted, deduplicated run of ids.
    pub fn push(&mut self, run: Vec<u64>) -> Result<()> {
        self.raw.push(run);
        self.raw_ids = self.raw.ids();
        if self.raw_ids > self.cap {
            let layer = std::mem::take(&mut self.raw).into_layer();
            self.raw_ids = 0;
            self.packed.push(PackedRun::pack(self.age, &layer));
            drop(layer);
            if self.packed.len() > MAX_PACKED {
                let mut merged = PackedRun::pack(self.age, &[]);
                let mut tail = Vec::new();
                let all = Spilled {
                    age: self.age,
                    raw: Runs::default(),
                    raw_ids: 0,
                    cap: self.cap,
                    packed: std::mem::take(&mut self.packed),
                };
                for chunk in all.stream_parts()? {
                    tail.extend_from_slice(&chunk?);
                    let whole = tail.len() / idcodec::BLOCK * idcodec::BLOCK;
                    merged.append(&tail[..whole]);
                    tail.drain(..whole);
                }
                merged.append(&tail);
                self.packed = vec![merged];
            }
        }
        Ok(())
    }

    /// Whether any run was packed (the layer is no longer all in memory).
    pub fn spilled(&self) -> bool {
        !self.packed.is_empty()
    }

    /// Ids held (raw and packed; an id in several runs counts once a run).
    pub fn held(&self) -> usize {
        self.raw_ids + self.packed.iter().map(PackedRun::len).sum::<usize>()
    }

    /// Bytes held: 8 an id raw, the packed runs' own.
    pub fn bytes(&self) -> usize {
        self.raw_ids * 8 + self.packed.iter().map(PackedRun::bytes).sum::<usize>()
    }

    /// The layer whole (the union of every run pushed).
    pub fn into_layer(self) -> Result<Vec<u64>> {
        if self.packed.is_empty() {
            return Ok(self.raw.into_layer());
        }
        let mut out = Vec::with_capacity(self.held() / 2);
        for chunk in self.stream() {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    /// The layer as sorted, deduplicated chunks in order (none empty).
    pub fn stream(self) -> impl Iterator<Item = Result<Vec<u64>>> {
        let parts = self.stream_parts();
        let (first, rest) = match parts {
            Ok(p) => (None, Some(p)),
            Err(e) => (Some(Err(e)), None),
        };
        first.into_iter().chain(rest.into_iter().flatten())
    }

    fn stream_parts(self) -> Result<Stream> {
        let Spilled { raw, packed, .. } = self;
        let raw = raw.into_runs();
        // Splitters: every block's first id of the packed runs, every BLOCK-th id of the raw
        // ones; each stands for about BLOCK ids, so one in RANGE_IDS / BLOCK is kept.
        let mut marks: Vec<u64> = packed
            .iter()
            .flat_map(|p| p.first.iter().copied())
            .collect();
        for r in &raw {
            marks.extend(r.iter().step_by(idcodec::BLOCK).copied());
        }
        marks.sort_unstable();
        marks.dedup();
        let every = (RANGE_IDS / idcodec::BLOCK).max(1);
        let mut splitters: Vec<u64> = marks.into_iter().skip(every).step_by(every).collect();
        splitters.dedup();
        Ok(Stream {
            raw,
            packed,
            splitters,
            next: 0,
            ready: std::collections::VecDeque::new(),
        })
    }
}

/// The ranges of a layer, gathered a round at a time.
struct Stream {
    raw: Vec<Vec<u64>>,
    packed: Vec<PackedRun>,
    /// Range r holds ids from splitters[r - 1] (or 0) up to below splitters[r] (or no bound).
    splitters: Vec<u64>,
    /// The next range to gather.
    next: usize,
    ready: std::collections::VecDeque<Vec<u64>>,
}

impl Stream {
    fn ranges(&self) -> usize {
        self.splitters.len() + 1
    }

    /// The ids of range `r`, sorted and deduplicated.
    fn gather(&self, r: usize) -> Result<Vec<u64>> {
        let lo = if r == 0 { 0 } else { self.splitters[r - 1] };
        let hi = self.splitters.get(r).copied();
        // The raw runs' ids are merged from where they lie; the packed ones' as decoded.
        let mut pieces: Vec<Cow<[u64]>> = Vec::with_capacity(self.raw.len() + self.packed.len());
        for run in &self.raw {
            let s = run.partition_point(|&x| x < lo);
            let e = hi.map_or(run.len(), |h| run.partition_point(|&x| x < h));
            if e > s {
                pieces.push(Cow::Borrowed(&run[s..e]));
            }
        }
        for p in &self.packed {
            let ids = p.range(lo, hi)?;
            if !ids.is_empty() {
                pieces.push(Cow::Owned(ids));
            }
        }
        // The pieces are sorted: merged two by two (about log2(pieces) copies of each id),
        // where sorting them all again cost a radix sort's passes and scatters.
        while pieces.len() > 1 {
            let mut next = Vec::with_capacity(pieces.len().div_ceil(2));
            let mut it = pieces.into_iter();
            while let Some(a) = it.next() {
                next.push(match it.next() {
                    Some(b) => Cow::Owned(layer::union_of(&a, &b)),
                    None => a,
                });
            }
            pieces = next;
        }
        Ok(pieces.pop().map(Cow::into_owned).unwrap_or_default())
    }
}

impl Iterator for Stream {
    type Item = Result<Vec<u64>>;

    fn next(&mut self) -> Option<Result<Vec<u64>>> {
        loop {
            if let Some(chunk) = self.ready.pop_front() {
                return Some(Ok(chunk));
            }
            if self.next >= self.ranges() {
                return None;
            }
            let round =
                self.next..(self.next + 2 * rayon::current_num_threads()).min(self.ranges());
            self.next = round.end;
            let got: Result<Vec<Vec<u64>>> =
                round.into_par_iter().map(|r| self.gather(r)).collect();
            match got {
                Ok(chunks) => self
                    .ready
                    .extend(chunks.into_iter().filter(|c| !c.is_empty())),
                Err(e) => {
                    self.next = self.ranges();
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Ids of age `age`-like boards: any u64 round-trips, so plain random ones.
    fn run(rng: &mut rand::rngs::StdRng, n: usize, span: u64) -> Vec<u64> {
        layer::sort_dedup((0..n).map(|_| rng.gen_range(0..span)).collect())
    }

    #[test]
    fn spilled_layers_stream_the_union_of_their_runs_whatever_the_cap() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(46);
        for (runs, n, span) in [
            (0, 0, 10),
            (1, 10, 100),
            (30, 5_000, 1 << 20),
            (25, 40_000, 1 << 40),
        ] {
            let made: Vec<Vec<u64>> = (0..runs).map(|_| run(&mut rng, n, span)).collect();
            let want = layer::sort_dedup(made.concat());
            for cap in [1, 1000, 70_000, usize::MAX] {
                let mut s = Spilled::new(20, cap);
                for r in &made {
                    s.push(r.clone()).unwrap();
                }
                assert!(s.packed.len() <= MAX_PACKED);
                if cap < want.len() {
                    assert!(s.spilled() || runs == 0);
                }
                let chunks: Vec<Vec<u64>> = s.stream().map(Result::unwrap).collect();
                assert!(chunks.iter().all(|c| !c.is_empty()));
                assert_eq!(chunks.concat(), want, "{runs} runs of {n}, cap {cap}");
                let mut s = Spilled::new(20, cap);
                for r in &made {
                    s.push(r.clone()).unwrap();
                }
                assert_eq!(s.into_layer().unwrap(), want);
            }
        }
    }

    #[test]
    fn a_packed_range_is_its_ids_between_the_bounds() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let ids = run(&mut rng, 300_000, 1 << 36);
        let p = PackedRun::pack(100, &ids);
        assert_eq!(p.len(), ids.len());
        for _ in 0..50 {
            let lo = rng.gen_range(0..1u64 << 36);
            let hi = lo + rng.gen_range(0..1u64 << 34);
            let want: Vec<u64> = ids.iter().copied().filter(|&x| x >= lo && x < hi).collect();
            assert_eq!(p.range(lo, Some(hi)).unwrap(), want);
            let want: Vec<u64> = ids.iter().copied().filter(|&x| x >= lo).collect();
            assert_eq!(p.range(lo, None).unwrap(), want);
        }
    }
}
