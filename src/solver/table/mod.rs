//! Values by id for the look-ups of the backward pass, one table per layer it reads.
//!
//! A small layer gets an open-addressing table of ids and values ([`open`]: one cache line a
//! look-up, 21 to 32 bytes an id); from [`PERFECT_FROM`] ids on, a layer gets a perfect hash
//! onto slots of a fingerprint and the values ([`perfect`]: two dependent reads a look-up,
//! mostly from the caches since its parts follow the layer's order, about 11.6 bytes an id
//! with one variant). The big layers are where memory goes (4x4
//! `goal-32`: 63 M states an age, 1.3 GB a table open, 0.73 GB perfect); the small ones, where
//! the look-ups are most of the time and the tables sit in the caches anyway (a 3x3 solve's
//! backward pass took 75 % longer with perfect tables throughout when their parts were
//! chosen by hash; with parts in the layer's order, perfect tables from 2^16 ids on made a
//! 3x3 solve 8 % slower and 4x4 `goal-16` 4 %, medians of 3 alternating pairs, 2026-11-27).
//!
//! Tried for the afterstates' table and not kept (2026-11-26): a 32-bit fingerprint and the
//! values per slot, five slots to a cache line, filled by linear probing (one read a look-up,
//! no pilots to search). At load 0.85 a build of 16 Mi ids took ≈ 85 ns an id on one thread
//! (a compare-and-swap on every slot passed) against the perfect table's ≈ 113, but a look-up
//! ≈ 80 ns against ≈ 40 (blocks of 64, prefetched): 14 % of the look-ups ran past their home
//! line, 3.6 lines on average, each line a miss no prefetch had asked for (linear probing's
//! clusters; inserting in hash order moves ids, not the mean displacement). And at 15 bytes
//! an id it would add to the phase that builds the afterstates' table, the one whose peak
//! already projects highest for the full 4x3 (`reports/bench/memory.md`: 15.0 GiB).
//!
//! Tried and not kept (2026-11-27): building each big table in the buffers of the one the
//! backward pass let go before it, so that its pages are written again rather than faulted in
//! and zeroed (2.8 % of a 4x3 `goal-128` compact backward pass's CPU, half of it under a
//! table's slots). System time fell by a few seconds of ≈ 60, wall time did not move beyond
//! the host's spread, and the peak rose by 1–2 %: a reused buffer is resident whole from the
//! build's first scan, a fresh one only as its parts are appended, and a build's peak is
//! within its scans.

mod open;
mod perfect;

use open::OpenTable;
use perfect::PerfectTable;

/// From this many ids on, a layer's table is a [`PerfectTable`].
pub const PERFECT_FROM: usize = 1 << 22;

/// Maps the ids of one layer to their values (`k` per id, one per variant).
pub enum ValueTable {
    Open(OpenTable),
    Perfect(PerfectTable),
}

/// The values of one id in a [`ValueTable`], one per variant.
#[derive(Clone, Copy)]
pub enum Values<'a> {
    /// The bits of each value.
    Words(&'a [u64]),
    /// The bits of each value, little-endian.
    Bytes(&'a [u8]),
}

impl Values<'_> {
    /// The value under variant `v`.
    #[inline(always)]
    pub fn get(self, v: usize) -> f64 {
        match self {
            Values::Words(w) => f64::from_bits(w[v]),
            Values::Bytes(b) => {
                let mut x = [0u8; 8];
                x.copy_from_slice(&b[8 * v..8 * v + 8]);
                f64::from_le_bytes(x)
            }
        }
    }
}

impl ValueTable {
    /// The table of a layer `ids` (sorted, deduplicated) with `values[i * k + v]` the value of
    /// id `i` under variant `v`.
    pub fn new(ids: &[u64], values: &[f64], k: usize) -> ValueTable {
        debug_assert_eq!(values.len(), ids.len() * k);
        ValueTable::from_fn(ids, |j| values[j], k)
    }

    /// [`ValueTable::new`] with `value(rank * k + v)` the value of variant `v` of the id of
    /// rank `rank`: the values need not sit in a vector of their own.
    pub fn from_fn(ids: &[u64], value: impl Fn(usize) -> f64 + Sync, k: usize) -> ValueTable {
        ValueTable::from_fn_at(ids, value, k, PERFECT_FROM)
    }

    /// [`ValueTable::from_fn`], a [`PerfectTable`] from `perfect_from` ids on (tests make
    /// every table perfect, to hold the backward pass's look-ups in them to the open ones').
    pub fn from_fn_at(
        ids: &[u64],
        value: impl Fn(usize) -> f64 + Sync,
        k: usize,
        perfect_from: usize,
    ) -> ValueTable {
        if ids.len() >= perfect_from {
            ValueTable::Perfect(PerfectTable::from_fn(ids, value, k))
        } else {
            ValueTable::Open(OpenTable::from_fn(ids, value, k))
        }
    }

    /// Asks the CPU to start loading what a look-up of `id` reads first, so that a batch of
    /// look-ups overlaps its cache misses instead of paying them one after another. `hint`
    /// is where the look-up before it in the same stream was (a stream's look-ups are close
    /// in the layer's order: see [`perfect`]); it becomes where this one is, which the
    /// second step ([`ValueTable::locate`]) takes. Start a stream at 0.
    #[inline(always)]
    pub fn prefetch(&self, id: u64, hint: &mut u32) {
        match self {
            ValueTable::Open(t) => t.prefetch(id),
            ValueTable::Perfect(t) => t.prefetch(id, hint),
        }
    }

    /// Whether a look-up takes a second step between [`ValueTable::prefetch`] and the read
    /// ([`ValueTable::locate`]): a perfect table's slot is known only once its pilot is read.
    #[inline(always)]
    pub fn two_step(&self) -> bool {
        matches!(self, ValueTable::Perfect(_))
    }

    /// The second step of a look-up of `id` whose first ([`ValueTable::prefetch`]) was made
    /// and left its hint at `at`: where [`ValueTable::at`] reads, its cache line asked for
    /// (a perfect table reads the pilot; for an open table, `id` itself and nothing read).
    #[inline(always)]
    pub fn locate(&self, id: u64, at: u32) -> u64 {
        match self {
            ValueTable::Open(_) => id,
            ValueTable::Perfect(t) => t.locate_packed(id, at),
        }
    }

    /// The values at `loc` (from [`ValueTable::locate`]): those of its id if the layer holds
    /// it (as [`ValueTable::get`]).
    #[inline(always)]
    pub fn at(&self, loc: u64) -> Option<Values<'_>> {
        match self {
            ValueTable::Open(t) => t.get(loc).map(Values::Words),
            ValueTable::Perfect(t) => t.at_packed(loc).map(Values::Bytes),
        }
    }

    /// The values of `id` (one per variant), if `id` is in the layer (a perfect table tells
    /// an id outside its layer apart but for 1 in 2^16: see [`perfect`]).
    #[inline]
    pub fn get(&self, id: u64) -> Option<Values<'_>> {
        match self {
            ValueTable::Open(t) => t.get(id).map(Values::Words),
            ValueTable::Perfect(t) => t.get(id).map(Values::Bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn both_kinds_agree_with_binary_search() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let ids =
            crate::solver::layer::sort_dedup((0..200_000).map(|_| rng.gen::<u64>() >> 4).collect());
        let values: Vec<f64> = ids.iter().map(|&x| (x % 1000) as f64 / 7.0).collect();
        let tables = [
            ValueTable::Open(OpenTable::from_fn(&ids, |j| values[j], 1)),
            ValueTable::Perfect(PerfectTable::from_fn(&ids, |j| values[j], 1)),
        ];
        for t in &tables {
            for _ in 0..20_000 {
                let x = if rng.gen_bool(0.5) {
                    ids[rng.gen_range(0..ids.len())]
                } else {
                    rng.gen::<u64>() >> 4
                };
                let want = ids.binary_search(&x).ok().map(|i| values[i]);
                let got = t.get(x).map(|v| v.get(0));
                let mut hint = rng.gen_range(0..ids.len() as u32 / 512);
                t.prefetch(x, &mut hint);
                let stepped = t.at(t.locate(x, hint)).map(|v| v.get(0));
                assert_eq!(got.map(f64::to_bits), stepped.map(f64::to_bits));
                match (want, got) {
                    (Some(w), g) => assert_eq!(g.map(f64::to_bits), Some(w.to_bits())),
                    // An id outside: a perfect table may (1 in 2^16) mistake it.
                    (None, g) => assert!(g.is_none() || matches!(t, ValueTable::Perfect(_))),
                }
            }
        }
    }
}
