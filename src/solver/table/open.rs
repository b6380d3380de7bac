//! The table of a small layer: open addressing over slots holding an id and its values, one
//! cache line a look-up (the layer's ids are stored, so a miss is always told apart). Values
//! are f64 whatever the [`Coding`] (the layers are small), quantised as they go in, so that
//! they read back as a perfect table in that coding reads them.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::super::layer::{prefetch, FIB, NO_ID};
use super::Coding;

/// An empty slot's word: [`NO_ID`], which no board is.
const EMPTY: u64 = NO_ID;

/// How many ids ahead [`super::ValueTable::new`] prefetches the slot of.
const BUILD_AHEAD: usize = 16;

/// From this many ids on, a [`OpenTable`] is built by all threads (below, one thread is
/// quicker than handing out the work).
const PARALLEL_BUILD: usize = 1 << 15;

/// Ids per task of a parallel [`OpenTable`] build.
const BUILD_CHUNK: usize = 1 << 12;

// `as_atomic` relies on this (true wherever `AtomicU64` exists with u64's alignment).
const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());

/// The words of a table under construction as atomics, so that threads can claim slots.
fn as_atomic(words: &mut [u64]) -> &[AtomicU64] {
    // SAFETY: `AtomicU64` has the size and bit validity of `u64`, and the same alignment
    // (asserted above); the exclusive borrow of `words` is held for as long as the atomic
    // view lives, so nothing else reads or writes the words meanwhile.
    unsafe { &*(words as *mut [u64] as *const [AtomicU64]) }
}

/// Maps the ids of one layer to their values (`k` per id, one per variant), one cache line a
/// lookup.
///
/// Linear probing at load [`load`] (1/2, or 3/4 for big layers) with a multiplicative
/// (Fibonacci) hash mapped onto the slots by a multiply-shift (Lemire's fast range reduction,
/// so the number of slots need not be a power of two): expected probes for a hit are
/// `(1 + 1/(1 − α))/2`, 1.5 at α = 1/2 and 2.5 at 3/4 (Knuth, TAOCP 6.4), neighbouring slots
/// mostly in the same cache line. A slot is the id followed by its `k` values (as bits),
/// padded to a power-of-two number of words so that no slot straddles a cache line: a lookup
/// reads one line where an id → rank table and a separate value array read two, which is most
/// of the cost of a backward pass whose layers outgrow the caches. With one variant a slot is
/// 16 bytes, so an id costs 32 bytes, or about 21 in a big table (when the slots were a power
/// of two: 32 to 64).
/// [`EMPTY`] marks an empty slot.
pub struct OpenTable {
    words: Vec<u64>,
    /// Number of slots (at least one more than the ids, so that a probe always ends).
    slots: usize,
    /// Words per slot: `k + 1` rounded up to a power of two.
    stride: usize,
    k: usize,
}

/// The load of a [`OpenTable`] (ids over slots) of `n` ids: 1/2, or 3/4 from [`BIG_TABLE`]
/// ids on. The load trades probes for bytes: a higher load makes small solves slower
/// (`reports/bench/profile.md`), and bytes matter only where the layers are big.
fn load(n: usize) -> f64 {
    if n >= BIG_TABLE {
        0.75
    } else {
        0.5
    }
}

/// From this many ids on, a [`OpenTable`] is filled to 3/4 ([`load`]).
const BIG_TABLE: usize = 1 << 24;

impl OpenTable {
    /// [`super::ValueTable::new`] with `value(rank * k + v)` the value of variant `v` of the id of
    /// rank `rank` (the values need not sit in a vector of their own), each as `coding` reads
    /// it back ([`Coding::quantise`]).
    pub fn from_fn(
        ids: &[u64],
        value: impl Fn(usize) -> f64 + Sync,
        k: usize,
        coding: Coding,
    ) -> OpenTable {
        match coding {
            Coding::F64 => OpenTable::with_load(ids, value, k, load(ids.len())),
            _ => OpenTable::with_load(ids, |j| coding.quantise(value(j)), k, load(ids.len())),
        }
    }

    /// [`OpenTable::from_fn`] at load `alpha` (at least one slot stays empty whatever `alpha`).
    ///
    /// A big table is filled by all threads at once: each claims a slot for its id with a
    /// compare-and-swap on the slot's first word (empty → id), then writes the values. Which
    /// slot an id lands in then depends on the order of the inserts, but every id still sits
    /// after an unbroken run of full slots from its home (slots only ever fill), which is all
    /// [`OpenTable::get`] needs: a look-up finds the same values whatever the threads did.
    fn with_load(
        ids: &[u64],
        value: impl Fn(usize) -> f64 + Sync,
        k: usize,
        alpha: f64,
    ) -> OpenTable {
        debug_assert!(
            super::super::layer::is_layer(ids),
            "a layer must be sorted and deduplicated"
        );
        debug_assert!(alpha > 0.0 && alpha <= 1.0);
        let slots = ((ids.len() as f64 / alpha).ceil() as usize)
            .max(ids.len() + 1)
            .max(16);
        let stride = (k + 1).next_power_of_two();
        let mut words = super::super::huge::filled(stride * slots, EMPTY);
        let cells = as_atomic(&mut words);
        // Inserts the ids of chunk `c`; the chunks may go in any order, on any thread.
        let insert = |(c, chunk): (usize, &[u64])| {
            for (i, &id) in chunk.iter().enumerate() {
                debug_assert_ne!(id, EMPTY);
                // The ids are sorted, their slots scattered: ask for the slot of an id a few
                // places ahead, so that its cache miss overlaps the inserts in between.
                if let Some(&ahead) = chunk.get(i + BUILD_AHEAD) {
                    prefetch(&cells[home(ahead, slots) * stride]);
                }
                let mut h = home(id, slots);
                while cells[h * stride]
                    .compare_exchange(EMPTY, id, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {
                    h = next(h, slots);
                }
                let rank = c * BUILD_CHUNK + i;
                for v in 0..k {
                    cells[h * stride + 1 + v]
                        .store(value(rank * k + v).to_bits(), Ordering::Relaxed);
                }
            }
        };
        if ids.len() < PARALLEL_BUILD {
            ids.chunks(BUILD_CHUNK).enumerate().for_each(insert);
        } else {
            // The threads join before `words` is read again: what they stored is visible.
            ids.par_chunks(BUILD_CHUNK).enumerate().for_each(insert);
        }
        OpenTable {
            words,
            slots,
            stride,
            k,
        }
    }

    /// Asks the CPU to start loading the slot a lookup of `id` reads first, so that a batch of
    /// lookups overlaps its cache misses instead of paying them one after another.
    #[inline(always)]
    pub fn prefetch(&self, id: u64) {
        prefetch(&self.words[home(id, self.slots) * self.stride]);
    }

    /// The values of `id` (one per variant), if `id` is in the layer.
    #[inline]
    pub fn get(&self, id: u64) -> Option<&[u64]> {
        let mut h = home(id, self.slots);
        loop {
            let at = h * self.stride;
            let key = self.words[at];
            if key == id {
                return Some(&self.words[at + 1..at + 1 + self.k]);
            }
            if key == EMPTY {
                return None;
            }
            h = next(h, self.slots);
        }
    }
}

/// The first slot of `id` among `slots`: the high half of the product of its Fibonacci hash
/// and the number of slots (uniform over `0..slots` when the hash is uniform over `u64`).
#[inline(always)]
fn home(id: u64, slots: usize) -> usize {
    let h = id.wrapping_mul(FIB);
    ((u128::from(h) * slots as u128) >> 64) as usize
}

/// The slot after `h`, wrapping around.
#[inline(always)]
fn next(h: usize, slots: usize) -> usize {
    if h + 1 == slots {
        0
    } else {
        h + 1
    }
}
