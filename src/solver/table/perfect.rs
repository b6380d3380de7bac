//! Values by id for the look-ups of the backward pass: a perfect hash of a layer's ids onto
//! slots that hold only a fingerprint and the values, about 11 bytes an id.
//!
//! Every look-up the pass makes is of an id the layer holds (the forward pass put every child
//! and every move's afterstate there), so the table need not store the ids to tell a hit
//! from a miss: a perfect hash sends each id of the layer to a slot of its own, and the slot
//! holds the id's values. The hash is PtrHash's (Groot Koerkamp, "PtrHash: Minimal Perfect
//! Hashing at RAM Throughput", SEA 2025), without its eviction and remapping, and with parts
//! that are runs of the layer's order rather than chosen by hash: part `p` holds the ids of
//! ranks `p·PART..(p+1)·PART` ([`PART`]), and the first id of each part is kept, so that a
//! look-up finds its part by searching those from the part of the look-up before it in the
//! same stream ([`PerfectTable::part_near`]). The backward pass's look-ups are close in the
//! layer's order from one to the next of a stream (a spawn of a given tile on a given cell,
//! a move in a given direction, over afterstates or states taken in their order): a part's
//! pilots (2 KB) are read from memory once and then from the core's cache for the stream's
//! next look-ups, where parts chosen by hash sent every look-up to a line of its own, two
//! misses a look-up (a pilot and a slot).
//!
//! A part's ids fall into buckets of about [`LAMBDA`] ids, and each bucket has a one-byte
//! *pilot* chosen when the table is built so that `slot(id) = reduce(h₂(id) ⊕ C·pilot)`
//! sends the bucket's ids to slots of the part no other id took (`h₂` a second hash of the
//! id, computed once, so that trying a pilot costs one multiplication a key). Buckets of two
//! need about 2.9 tries a key at load 0.9, of three 4.7, of four 8.8 (simulated). Buckets are
//! placed biggest first, into `m / ALPHA` slots for a part of `m` ids (a part whose buckets
//! do not all fit within 256 pilots gets more slots and is built again). A look-up reads the
//! bucket's pilot and then its slot; the backward pass does it in three steps over a block of
//! look-ups (part found and pilot asked for, then slot located and asked for, then read), so
//! that what misses there overlaps across the block.
//!
//! A slot is a 16-bit fingerprint of the id (bits of its hash that choose neither its bucket
//! nor its slot) followed by its `k` values (8 bytes each in f64, 4 in fixed point: see
//! [`Coding`]); a look-up of an id the layer does not hold finds a slot whose fingerprint
//! differs, but for 1 in 2^16 such ids, and answers `None` (the pass reports such a miss as
//! an inconsistency between the passes). A layer of `n` ids costs `(2 + wk) / ALPHA + 1 /
//! LAMBDA` bytes an id for values of `w` bytes, and 24 bytes a part (its first id, first
//! bucket and first slot): 11.6 with one variant in f64, 7.2 in fixed point, against 21 to 32
//! for an open-addressing table of ids and values ([`PerfectTable::bytes_per_id`]). Building
//! is parallel over parts and deterministic: a part's pilots and slots depend on its ids and
//! values only. The parts are built in rounds of a few per thread, from the whole layer
//! ([`PerfectTable::from_fn`]) or from its ids and values as they come ([`Builder`]), the
//! same rounds either way ([`Builder::round`]); the build holds nothing but the table and
//! the few parts of a round being built (and, for a [`Builder`], the ids and values pushed
//! since its last round). What a part is built in (its keys sorted by bucket, the slots
//! taken) is each thread's own from part to part and build to build, and a part's slots are
//! written in those of a part already appended, so that neither is paged in and zeroed anew
//! for every part. A pilot is tried on all the keys of its bucket before the one branch on
//! its outcome.

use rayon::prelude::*;

use super::super::layer::prefetch;
use super::{Coding, Values};

/// Ids per part (the last may have fewer): a part's pilots and slots take ≈ 48 KB with one
/// variant, and the parts' first ids 8 bytes a part (33 KB for 17 M afterstates, within a
/// core's L2), which a look-up outside its stream's last part searches.
///
/// Bigger parts mean fewer first ids to search and more of a stream's look-ups in its last
/// part; 2^12 was quicker than 2^10 and 2^11, and 2^13 no quicker (`reports/bench/profile.md`).
const PART: usize = 1 << 12;

/// Parts a thread builds in a round of a build.
const GROUP_PER_THREAD: usize = 64;

/// Ids per bucket (on average). Buckets of two need 2.9 tries of a pilot a key at load 0.9,
/// buckets of three 4.7 (simulated over parts of 2^14 and 2^16 random keys): the build's
/// search takes a third fewer tries for a byte of pilot every two ids where three ids had two.
const LAMBDA: usize = 2;

/// A bucket's pilot: a byte, as in PtrHash. At [`LAMBDA`] = 2 and load 0.9 the last buckets
/// placed (pairs at a load of 0.8, single ids at 0.9) find a pilot within 256 tries but for
/// about one part in fifty of 2^10 keys (172 of 8,192 for 8 Mi random ids), which is then
/// built again with a sixteenth more slots.
type Pilot = u8;

/// Ids over slots of a part.
const ALPHA: f64 = 0.9;

/// Bytes of a slot's fingerprint.
const FP: usize = 2;

/// Bits of a slot's fingerprint.
const FP_BITS: u32 = 8 * FP as u32;

/// A xor-shift-multiply finaliser (shifts `s`, multipliers `m`): a bijection of `u64` whose
/// output bits each depend on every input bit.
#[inline(always)]
fn finalise(mut x: u64, s: [u32; 3], m: [u64; 2]) -> u64 {
    x ^= x >> s[0];
    x = x.wrapping_mul(m[0]);
    x ^= x >> s[1];
    x = x.wrapping_mul(m[1]);
    x ^ (x >> s[2])
}

/// The hash that picks a key's part, bucket and fingerprint: Murmur3's 64-bit finaliser.
#[inline(always)]
fn mix(x: u64) -> u64 {
    finalise(
        x,
        [33, 33, 33],
        [0xff51_afd7_ed55_8ccd, 0xc4ce_b9fe_1a85_ec53],
    )
}

/// The second hash, which picks a key's slot: SplitMix64's finaliser (Steele, Lea & Flood,
/// "Fast splittable pseudorandom number generators", OOPSLA 2014), other shifts and constants
/// than [`mix`]'s, so that the slot is independent of the part, bucket and fingerprint.
#[inline(always)]
fn mix2(x: u64) -> u64 {
    finalise(
        x,
        [30, 27, 31],
        [0xbf58_476d_1ce4_e5b9, 0x94d0_49bb_1331_11eb],
    )
}

/// `x · n / 2^64`: uniform over `0..n` when `x` is uniform over `u64` (Lemire's reduction).
#[inline(always)]
fn reduce(x: u64, n: usize) -> usize {
    ((u128::from(x) * n as u128) >> 64) as usize
}

/// What a pilot contributes to a slot: `C · pilot` (PtrHash's pilot hash), whose high bits,
/// which [`reduce`] reads, vary with every bit of the pilot.
#[inline(always)]
fn pilot_hash(pilot: Pilot) -> u64 {
    u64::from(pilot).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// The slot (within its part of `slots` slots) of the id of second hash `h2` ([`mix2`]) under
/// `pilot`.
#[inline(always)]
fn slot_of(h2: u64, pilot: Pilot, slots: usize) -> usize {
    reduce(h2 ^ pilot_hash(pilot), slots)
}

/// The bucket (within its part of `buckets` buckets) of the id of hash `h`: from its low 32
/// bits.
#[inline(always)]
fn bucket_of(h: u64, buckets: usize) -> usize {
    (((h & 0xffff_ffff) * buckets as u64) >> 32) as usize
}

/// The fingerprint of the id of hash `h`: bits 32 to 47, which do not choose its bucket (the
/// low 32).
#[inline(always)]
fn fingerprint(h: u64) -> u16 {
    (h >> 32) as u16
}

/// Maps the ids of one big layer to their values (`k` per id, one per variant). See the
/// module documentation.
pub struct PerfectTable {
    /// `first[p]`: the first id of part `p` (the smallest of its ids).
    first: Vec<u64>,
    /// `bucket_start[p]`: the first bucket of part `p` (one more entry: the end).
    bucket_start: Vec<usize>,
    /// `slot_start[p]`: the first slot of part `p` (one more entry: the end).
    slot_start: Vec<usize>,
    pilots: Vec<Pilot>,
    /// Slots of `stride` bytes: fingerprint (little-endian), then `k` values (their bits, or
    /// their fixed-point codes, little-endian).
    ///
    /// Slots of one value are 10 bytes one after another, so that one in seven or so crosses a
    /// cache line's end and its look-up reads two lines, the second not prefetched. Six slots a
    /// line (none crossing) saved CPU time but no wall time, for 7 % more bytes a slot, and was
    /// not kept (`reports/bench/profile.md`).
    slots: Vec<u8>,
    stride: usize,
    k: usize,
    coding: Coding,
    /// What a unit of a fixed-point code is worth (`2^-fraction_bits`; 1 in f64).
    unit: f64,
}

impl PerfectTable {
    /// The table of a layer `ids` (sorted, deduplicated) with `values[i * k + v]` the value of
    /// id `i` under variant `v`, in f64.
    #[cfg(test)]
    pub fn new(ids: &[u64], values: &[f64], k: usize) -> PerfectTable {
        debug_assert_eq!(values.len(), ids.len() * k);
        PerfectTable::from_fn(ids, |j| values[j], k, Coding::F64)
    }

    /// [`super::ValueTable::new`] with `value(rank * k + v)` the value of variant `v` of the id of
    /// rank `rank` (the values need not sit in a vector of their own), stored in `coding`.
    pub fn from_fn(
        ids: &[u64],
        value: impl Fn(usize) -> f64 + Sync,
        k: usize,
        coding: Coding,
    ) -> PerfectTable {
        debug_assert!(
            super::super::layer::is_layer(ids),
            "a layer must be sorted and deduplicated"
        );
        let n = ids.len();
        let mut b = Builder::new(n, k, coding);
        let round = b.group * PART;
        let mut at = 0;
        loop {
            let end = (at + round).min(n);
            b.round(&ids[at..end], |j| value(at * k + j));
            at = end;
            if at == n {
                break;
            }
        }
        b.pushed = n;
        b.finish()
    }

    /// Bytes an id a table of `k` values an id in `coding` is planned to take: its slots
    /// (`(FP + width · k) / ALPHA`), pilots (`1 / LAMBDA`) and parts (24 bytes every [`PART`]
    /// ids), for a memory planner. A built table takes a little more (a part's slots rounded
    /// up; a part in fifty or so rebuilt with a sixteenth more slots), and a small one more
    /// still (a part of fewer ids than `PART` costs 24 bytes all the same). The build holds
    /// besides a round of parts being built (`GROUP_PER_THREAD` parts a thread, as built and
    /// as appended) and the slots' room beyond what is written (never resident).
    pub fn bytes_per_id(k: usize, coding: Coding) -> f64 {
        let stride = FP + coding.width() * k;
        let parts = (std::mem::size_of::<u64>() + 2 * std::mem::size_of::<usize>()) as f64;
        stride as f64 / ALPHA
            + std::mem::size_of::<Pilot>() as f64 / LAMBDA as f64
            + parts / PART as f64
    }

    /// The values `b` of a slot ([`PerfectTable::get`], [`PerfectTable::at_packed`]) as the
    /// table's coding reads them.
    #[inline(always)]
    pub fn values<'a>(&self, b: &'a [u8]) -> Values<'a> {
        match self.coding {
            Coding::F64 => Values::Bytes(b),
            Coding::Fixed32 { .. } => Values::Fixed(b, self.unit),
        }
    }

    /// The part that holds `id` if the layer does (the last whose first id is at most `id`;
    /// part 0 for an id below them all), searched from the part `hint` (a look-up's part
    /// before it in the same stream), which then becomes it. Close ids are in close parts:
    /// the common case, a look-up in its stream's last part, costs two comparisons; one
    /// `d` parts away, about `4 log₂ d` (a gallop then a binary search).
    #[inline(always)]
    pub fn part_near(&self, id: u64, hint: &mut u32) -> usize {
        let first = &self.first[..];
        let parts = first.len();
        let mut p = (*hint as usize).min(parts - 1);
        if first[p] <= id {
            if p + 1 < parts && first[p + 1] <= id {
                // Right: first[lo] <= id < first[hi] (or hi the end).
                let (mut lo, mut step) = (p + 1, 1);
                let mut hi = lo + 1;
                while hi < parts && first[hi] <= id {
                    lo = hi;
                    step *= 2;
                    hi = lo + step;
                }
                let hi = hi.min(parts);
                p = lo + first[lo + 1..hi].partition_point(|&f| f <= id);
            }
        } else if p > 0 {
            // Left: first[hi] > id, and first[lo] <= id unless lo is 0.
            let (mut hi, mut step) = (p, 1);
            let mut lo = hi - 1;
            while lo > 0 && first[lo] > id {
                hi = lo;
                step *= 2;
                lo = hi.saturating_sub(step);
            }
            p = lo + first[lo + 1..hi].partition_point(|&f| f <= id);
        }
        debug_assert!(p < parts);
        *hint = p as u32;
        p
    }

    /// The bucket of `id` in part `p`, and its hash.
    #[inline(always)]
    fn bucket(&self, id: u64, p: usize) -> (usize, u64) {
        let h = mix(id);
        let b0 = self.bucket_start[p];
        (b0 + bucket_of(h, self.bucket_start[p + 1] - b0), h)
    }

    /// Asks the CPU to start loading the pilot a look-up of `id` reads first, so that a batch
    /// of look-ups overlaps its cache misses instead of paying them one after another; the
    /// first step of a look-up. `hint` is the stream's part, as [`PerfectTable::part_near`]
    /// takes it, and becomes the part of `id`, which the second step
    /// ([`PerfectTable::locate_packed`]) takes.
    #[inline(always)]
    pub fn prefetch(&self, id: u64, hint: &mut u32) {
        let p = self.part_near(id, hint);
        if let Some(x) = self.pilots.get(self.bucket(id, p).0) {
            prefetch(x);
        }
    }

    /// The slot of `id` in part `p` (where its values are if the layer holds it) and its
    /// fingerprint.
    #[inline(always)]
    fn locate(&self, id: u64, p: usize) -> Option<(usize, u16)> {
        let (b, h) = self.bucket(id, p);
        let pilot = *self.pilots.get(b)?;
        let s0 = self.slot_start[p];
        let s = s0 + slot_of(mix2(id), pilot, self.slot_start[p + 1] - s0);
        Some((s, fingerprint(h)))
    }

    /// The values in slot `s` if its fingerprint is `fp` (from [`PerfectTable::locate`]).
    #[inline(always)]
    fn at(&self, (s, fp): (usize, u16)) -> Option<&[u8]> {
        let slot = self.slots.get(s * self.stride..(s + 1) * self.stride)?;
        if u16::from_le_bytes([slot[0], slot[1]]) != fp {
            return None;
        }
        Some(&slot[FP..])
    }

    /// Where the values of `id` are if the layer holds it, in one word (`slot << 16 |
    /// fingerprint`), with the slot's line asked for: the second step of a look-up whose
    /// first ([`PerfectTable::prefetch`]) found `id` in part `p`.
    #[inline(always)]
    pub fn locate_packed(&self, id: u64, p: u32) -> u64 {
        debug_assert!(
            (p as usize) < self.first.len(),
            "part {p} of a table of {} parts: not a first step's",
            self.first.len()
        );
        let Some((s, fp)) = self.locate(id, p as usize) else {
            return u64::MAX;
        };
        if let Some(b) = self.slots.get(s * self.stride) {
            prefetch(b);
        }
        ((s as u64) << FP_BITS) | u64::from(fp)
    }

    /// [`PerfectTable::at`] of a word from [`PerfectTable::locate_packed`].
    #[inline(always)]
    pub fn at_packed(&self, loc: u64) -> Option<&[u8]> {
        if loc == u64::MAX {
            return None;
        }
        self.at(((loc >> FP_BITS) as usize, loc as u16))
    }

    /// The values of `id` (one per variant), if `id` is in the layer (see the module
    /// documentation: an id outside it is told apart but for 1 in 2^16).
    #[inline]
    pub fn get(&self, id: u64) -> Option<&[u8]> {
        let p = self.first.partition_point(|&f| f <= id).saturating_sub(1);
        self.at(self.locate(id, p)?)
    }

    /// Bytes the table holds.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.slots.len() + std::mem::size_of_val(&self.pilots[..]) + 24 * self.bucket_start.len()
    }

    /// Everything the table holds, to compare two builds byte for byte.
    #[cfg(test)]
    #[allow(clippy::type_complexity)]
    pub fn raw(&self) -> (&[u64], &[usize], &[usize], &[Pilot], &[u8], usize, Coding) {
        (
            &self.first,
            &self.bucket_start,
            &self.slot_start,
            &self.pilots,
            &self.slots,
            self.stride,
            self.coding,
        )
    }
}

/// Builds a [`PerfectTable`] a round of parts at a time, from the whole layer
/// ([`PerfectTable::from_fn`]) or from its ids and values as they are pushed
/// ([`Builder::push`], [`super::TableBuilder`]): a round builds its parts in parallel, from
/// their own ids and values, and appends them in order, so that the table depends neither on
/// how the layer was cut into rounds (nor pushes) nor on the threads.
pub struct Builder {
    /// The parts built so far, appended in order (`first`, `bucket_start` and `slot_start`
    /// up to the parts built).
    table: PerfectTable,
    /// Ids of the layer.
    n: usize,
    /// Parts of the layer (one, empty, for a layer of none).
    parts: usize,
    /// Parts built.
    built: usize,
    /// Ids pushed.
    pushed: usize,
    /// Parts a round.
    group: usize,
    /// The slots of parts already appended, for the next parts to build in: fresh ones for
    /// every part would each be paged in and zeroed by the kernel.
    spare: std::sync::Mutex<Vec<Vec<u8>>>,
    /// The ids pushed and not yet built (fewer than a round's), and their values.
    ids: Vec<u64>,
    values: Vec<f64>,
}

impl Builder {
    /// A table of a layer of `n` ids, `k` values an id, stored in `coding`.
    pub fn new(n: usize, k: usize, coding: Coding) -> Builder {
        // Parts a round: built in parallel, then appended in order (a round's parts exist
        // twice, as built and as appended, so a round is kept to a few MB).
        let group = (GROUP_PER_THREAD * rayon::current_num_threads()).max(16);
        Builder::with_group(n, k, coding, group)
    }

    /// [`Builder::new`] with rounds of `group` parts.
    fn with_group(n: usize, k: usize, coding: Coding, group: usize) -> Builder {
        let parts = n.div_ceil(PART).max(1);
        let stride = FP + coding.width() * k;
        let mut bucket_start = Vec::with_capacity(parts + 1);
        bucket_start.push(0);
        let mut slot_start = Vec::with_capacity(parts + 1);
        slot_start.push(0);
        let pilots: Vec<Pilot> = super::super::huge::with_capacity(n.div_ceil(LAMBDA) + parts);
        // Room for a part in eight to be built again with more slots (a sixteenth more each
        // time): a vector of a few hundred MB that outgrew its room was copied whole into
        // one twice its size (4x3 `goal-256`, age 382: 300 MB more at the build's peak). Room
        // never written is never resident.
        let planned = (n as f64 / ALPHA) as usize;
        let slots: Vec<u8> =
            super::super::huge::with_capacity((planned + planned / 8 + 2 * parts) * stride);
        let unit = match coding {
            Coding::F64 => 1.0,
            Coding::Fixed32 { fraction_bits } => Coding::decode(fraction_bits, 1),
        };
        Builder {
            table: PerfectTable {
                first: Vec::with_capacity(parts),
                bucket_start,
                slot_start,
                pilots,
                slots,
                stride,
                k,
                coding,
                unit,
            },
            n,
            parts,
            built: 0,
            pushed: 0,
            group,
            spare: std::sync::Mutex::default(),
            ids: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Builds the parts of `ids`, the next ids of the layer from the first of a part not yet
    /// built on (whole parts, but for the layer's last), `value(i * k + v)` the value of
    /// variant `v` of `ids[i]`: in parallel, then appended in order.
    fn round(&mut self, ids: &[u64], value: impl Fn(usize) -> f64 + Sync) {
        let count = ids.len().div_ceil(PART).max(1);
        debug_assert!(self.built + count <= self.parts);
        debug_assert!(ids.len().is_multiple_of(PART) || self.built + count == self.parts);
        let t = &mut self.table;
        let (k, coding, stride, spare) = (t.k, t.coding, t.stride, &self.spare);
        let built: Vec<Part> = (0..count)
            .into_par_iter()
            .map(|q| {
                let keys = q * PART..((q + 1) * PART).min(ids.len());
                let spare = spare.lock().ok().and_then(|mut r| r.pop());
                Part::build(&ids[keys.clone()], keys.start, &value, k, coding, spare)
            })
            .collect();
        for (q, part) in built.into_iter().enumerate() {
            let p = self.built + q;
            t.first.push(ids.get(q * PART).copied().unwrap_or(0));
            t.bucket_start.push(t.bucket_start[p] + part.pilots.len());
            t.slot_start
                .push(t.slot_start[p] + part.slots.len() / stride);
            t.pilots.extend_from_slice(&part.pilots);
            t.slots.extend_from_slice(&part.slots);
            if let Ok(mut r) = spare.lock() {
                r.push(part.slots);
            }
        }
        self.built += count;
    }

    /// The next ids of the layer and their values (`values[i * k + v]`): a round is built as
    /// soon as its parts' ids are all in, straight from `ids` where a whole round lies
    /// there, the rest kept for the next push.
    pub fn push(&mut self, mut ids: &[u64], mut values: &[f64]) {
        let k = self.table.k;
        assert_eq!(values.len(), ids.len() * k, "values of the ids pushed");
        self.pushed += ids.len();
        assert!(
            self.pushed <= self.n,
            "{} ids pushed into a table of {}",
            self.pushed,
            self.n
        );
        let round = self.group * PART;
        if !self.ids.is_empty() {
            let take = (round - self.ids.len()).min(ids.len());
            self.ids.extend_from_slice(&ids[..take]);
            self.values.extend_from_slice(&values[..take * k]);
            (ids, values) = (&ids[take..], &values[take * k..]);
            if self.ids.len() == round {
                let (held, held_values) = (
                    std::mem::take(&mut self.ids),
                    std::mem::take(&mut self.values),
                );
                self.round(&held, |j| held_values[j]);
                // Their room, for the next ids held.
                (self.ids, self.values) = (held, held_values);
                self.ids.clear();
                self.values.clear();
            }
        }
        while ids.len() >= round {
            let (now, later) = ids.split_at(round);
            let (now_values, later_values) = values.split_at(round * k);
            self.round(now, |j| now_values[j]);
            (ids, values) = (later, later_values);
        }
        self.ids.extend_from_slice(ids);
        self.values.extend_from_slice(values);
    }

    /// The table, once the layer's `n` ids are in: the parts not yet built, as a last round.
    pub fn finish(mut self) -> PerfectTable {
        if self.built < self.parts {
            let (held, held_values) = (
                std::mem::take(&mut self.ids),
                std::mem::take(&mut self.values),
            );
            self.round(&held, |j| held_values[j]);
        }
        assert_eq!(self.pushed, self.n, "ids pushed into a table of {}", self.n);
        debug_assert_eq!(self.table.first.len(), self.parts);
        self.table
    }
}

/// A key of a part being built: its hashes ([`mix`], [`mix2`]) and where its values are
/// among the part's.
#[derive(Clone, Copy, Default)]
struct Key {
    h: u64,
    h2: u64,
    at: u32,
}

/// One built part: its pilots and its slots.
struct Part {
    pilots: Vec<Pilot>,
    slots: Vec<u8>,
}

/// What building a part needs besides what it gives (its pilots and slots), kept by each
/// thread from part to part: made anew for each part, these vectors (≈ 90 bytes a key) were
/// most of a build's page faults when parts held 2^16 keys (freed blocks that big go back to
/// the kernel and come back zeroed), and are still an allocation each a part saved.
#[derive(Default)]
struct Scratch {
    keys: Vec<Key>,
    sorted: Vec<Key>,
    start: Vec<usize>,
    fill: Vec<usize>,
    order: Vec<usize>,
    taken: Vec<u64>,
    slot_of_key: Vec<usize>,
    /// Each key's slot by its place in the part's order (`Key::at`).
    slot_at: Vec<u32>,
    used: Vec<u64>,
}

thread_local! {
    /// This thread's [`Scratch`].
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// `v` holding `len` copies of `x` (its room kept).
fn refill<T: Copy>(v: &mut Vec<T>, len: usize, x: T) {
    v.clear();
    v.resize(len, x);
}

impl Part {
    /// The part of `ids` (of ranks `rank0..` among the ids `value` knows, the value of
    /// variant `v` of rank `r` at `value(r * k + v)`), its values stored in `coding`: pilots
    /// found bucket by bucket, biggest first; if a bucket finds none, the part is built again
    /// with more slots. Its slots are written in `spare` if given (a vector of an earlier
    /// part's).
    fn build(
        ids: &[u64],
        rank0: usize,
        value: &impl Fn(usize) -> f64,
        k: usize,
        coding: Coding,
        spare: Option<Vec<u8>>,
    ) -> Part {
        SCRATCH
            .with_borrow_mut(|scratch| Part::build_in(ids, rank0, value, k, coding, scratch, spare))
    }

    /// [`Part::build`] in `scratch`.
    fn build_in(
        ids: &[u64],
        rank0: usize,
        value: &impl Fn(usize) -> f64,
        k: usize,
        coding: Coding,
        scratch: &mut Scratch,
        spare: Option<Vec<u8>>,
    ) -> Part {
        let Scratch {
            keys,
            sorted,
            start,
            fill,
            order,
            taken,
            slot_of_key,
            slot_at,
            used,
        } = scratch;
        // Each key's two hashes, computed once.
        keys.clear();
        keys.extend(ids.iter().enumerate().map(|(at, &id)| Key {
            h: mix(id),
            h2: mix2(id),
            at: at as u32,
        }));
        let m = keys.len();
        let buckets = m.div_ceil(LAMBDA).max(1);
        // Keys by bucket (counting sort), then buckets by decreasing size (ties by index).
        refill(start, buckets + 1, 0);
        for key in keys.iter() {
            start[bucket_of(key.h, buckets) + 1] += 1;
        }
        for b in 0..buckets {
            start[b + 1] += start[b];
        }
        fill.clear();
        fill.extend_from_slice(start);
        refill(sorted, m, Key::default());
        for &key in keys.iter() {
            let b = bucket_of(key.h, buckets);
            sorted[fill[b]] = key;
            fill[b] += 1;
        }
        by_decreasing_size(start, order);
        let mut n_slots = ((m as f64 / ALPHA).ceil() as usize).max(m).max(1);
        let pilots = loop {
            if let Some(found) = place(sorted, start, order, n_slots, taken, slot_of_key) {
                break found;
            }
            n_slots += n_slots / 16 + 1;
        };
        let width = coding.width();
        let stride = FP + width * k;
        let mut slots = spare.unwrap_or_default();
        refill(&mut slots, n_slots * stride, 0);
        // The slots are filled in the keys' own order, so that their values are read in
        // order (from the layer's, a sequential read) and only the slots are written out of
        // it.
        refill(slot_at, m, 0);
        for (key, &s) in sorted.iter().zip(slot_of_key.iter()) {
            slot_at[key.at as usize] = s as u32;
        }
        for (i, (key, &s)) in keys.iter().zip(slot_at.iter()).enumerate() {
            let s = s as usize;
            let slot = &mut slots[s * stride..(s + 1) * stride];
            slot[..FP].copy_from_slice(&fingerprint(key.h).to_le_bytes());
            let at = |v: usize| FP + width * v..FP + width * (v + 1);
            for v in 0..k {
                let x = value((rank0 + i) * k + v);
                match coding {
                    Coding::F64 => slot[at(v)].copy_from_slice(&x.to_bits().to_le_bytes()),
                    Coding::Fixed32 { fraction_bits } => {
                        slot[at(v)].copy_from_slice(&Coding::encode(fraction_bits, x).to_le_bytes())
                    }
                }
            }
        }
        // An empty slot's fingerprint is that of none of its part's ids where possible, so
        // that a look-up of an id outside the layer landing there is told apart.
        refill(used, 1 << 10, 0);
        for key in sorted.iter() {
            let f = usize::from(fingerprint(key.h));
            used[f / 64] |= 1 << (f % 64);
        }
        let free_fp = (0..=u16::MAX)
            .find(|&f| used[usize::from(f) / 64] & (1 << (f % 64)) == 0)
            .unwrap_or(0);
        // `taken` is place's map of the slots its keys took.
        for s in 0..n_slots {
            if is_taken(taken, s) == 0 {
                slots[s * stride..s * stride + FP].copy_from_slice(&free_fp.to_le_bytes());
            }
        }
        Part { pilots, slots }
    }
}

/// The buckets (`start[b]..start[b + 1]` each) by decreasing size, ties by index, into
/// `order`: a counting sort by size (sizes are small: ≈ [`LAMBDA`] keys a bucket), the order
/// of a stable sort of the buckets by decreasing size.
fn by_decreasing_size(start: &[usize], order: &mut Vec<usize>) {
    let size = |b: usize| start[b + 1] - start[b];
    let buckets = start.len() - 1;
    let largest = (0..buckets).map(size).max().unwrap_or(0);
    // at[z]: where the buckets of size z begin, sizes from the largest down.
    let mut at = vec![0usize; largest + 2];
    for b in 0..buckets {
        at[largest - size(b) + 1] += 1;
    }
    for z in 0..=largest {
        at[z + 1] += at[z];
    }
    refill(order, buckets, 0);
    for b in 0..buckets {
        let z = largest - size(b);
        order[at[z]] = b;
        at[z] += 1;
    }
}

/// Pilots for the buckets of a part (`sorted` keys grouped by bucket, bucket `b` at
/// `start[b]..start[b + 1]`, placed in `order`) into `n_slots` slots, each key's slot into
/// `slot_of_key` and the slots taken into the bit map `taken`; `None` if some bucket finds
/// no pilot.
fn place(
    sorted: &[Key],
    start: &[usize],
    order: &[usize],
    n_slots: usize,
    taken: &mut Vec<u64>,
    slot_of_key: &mut Vec<usize>,
) -> Option<Vec<Pilot>> {
    let buckets = start.len() - 1;
    // Slots taken, a bit each: a part's map (≈ 150 bytes) stays in L1 while pilots are tried.
    refill(taken, n_slots.div_ceil(64), 0);
    refill(slot_of_key, sorted.len(), 0);
    let mut pilots = vec![0; buckets];
    let mut tried = [0usize; 64];
    for &b in order {
        let keys = &sorted[start[b]..start[b + 1]];
        if keys.is_empty() {
            continue;
        }
        debug_assert!(keys.len() <= 64, "a bucket of {} ids", keys.len());
        pilots[b] = pilot_for(keys, taken, n_slots, &mut tried)?;
        for (j, &s) in tried[..keys.len()].iter().enumerate() {
            taken[s / 64] |= 1 << (s % 64);
            slot_of_key[start[b] + j] = s;
        }
    }
    Some(pilots)
}

/// The first pilot that sends each key of a bucket to a free slot of its own (their slots
/// then in `tried`), or `None`: [`first_pilot`] for buckets of up to 6 keys (all but one in
/// 200 at [`LAMBDA`] = 2), [`first_pilot_any`] beyond.
#[inline(always)]
fn pilot_for(
    keys: &[Key],
    taken: &[u64],
    n_slots: usize,
    tried: &mut [usize; 64],
) -> Option<Pilot> {
    match keys.len() {
        1 => first_pilot::<1>(keys, taken, n_slots, tried),
        2 => first_pilot::<2>(keys, taken, n_slots, tried),
        3 => first_pilot::<3>(keys, taken, n_slots, tried),
        4 => first_pilot::<4>(keys, taken, n_slots, tried),
        5 => first_pilot::<5>(keys, taken, n_slots, tried),
        6 => first_pilot::<6>(keys, taken, n_slots, tried),
        _ => first_pilot_any(keys, taken, n_slots, tried),
    }
}

/// Whether slot `s` is taken (1) or free (0) in the bit map `taken`.
#[inline(always)]
fn is_taken(taken: &[u64], s: usize) -> u64 {
    (taken[s / 64] >> (s % 64)) & 1
}

/// The first pilot that sends each of the `N` keys of a bucket to a free slot of its own
/// (their slots then in `tried[..N]`), or `None`. All `N` slots of a pilot are computed and
/// tested before the one branch on the outcome: a branch a key on whether its slot is taken
/// goes either way as often as not once the part fills, and each wrong guess cost more than
/// the few keys' tests it saved. The pilot is the same as [`first_pilot_any`]'s.
#[inline(always)]
fn first_pilot<const N: usize>(
    keys: &[Key],
    taken: &[u64],
    n_slots: usize,
    tried: &mut [usize; 64],
) -> Option<Pilot> {
    debug_assert_eq!(keys.len(), N);
    let h2: [u64; N] = std::array::from_fn(|j| keys[j].h2);
    for pilot in 0..=Pilot::MAX {
        let s: [usize; N] = std::array::from_fn(|j| slot_of(h2[j], pilot, n_slots));
        let mut busy = 0u64;
        for j in 0..N {
            busy |= is_taken(taken, s[j]);
            for i in 0..j {
                busy |= u64::from(s[i] == s[j]);
            }
        }
        if busy == 0 {
            tried[..N].copy_from_slice(&s);
            return Some(pilot);
        }
    }
    None
}

/// [`first_pilot`] for a bucket of any size (the rare big ones): a key at a time, the next
/// pilot as soon as one key's slot is taken.
fn first_pilot_any(
    keys: &[Key],
    taken: &[u64],
    n_slots: usize,
    tried: &mut [usize; 64],
) -> Option<Pilot> {
    'pilot: for pilot in 0..=Pilot::MAX {
        for (j, key) in keys.iter().enumerate() {
            let s = slot_of(key.h2, pilot, n_slots);
            if is_taken(taken, s) != 0 || tried[..j].contains(&s) {
                continue 'pilot;
            }
            tried[j] = s;
        }
        return Some(pilot);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn every_id_finds_its_values_and_others_are_told_apart() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for n in [0usize, 1, 5, 1000, PART * 3 + 17] {
            let ids = super::super::super::layer::sort_dedup(
                (0..n).map(|_| rng.gen::<u64>() >> 8).collect(),
            );
            let k = 2;
            let values: Vec<f64> = (0..ids.len() * k).map(|j| j as f64 * 0.5 - 3.0).collect();
            let t = PerfectTable::new(&ids, &values, k);
            for (i, &id) in ids.iter().enumerate() {
                let v = super::super::Values::Bytes(t.get(id).expect("an id of the layer"));
                assert_eq!(v.get(0).to_bits(), values[i * k].to_bits());
                assert_eq!(v.get(1).to_bits(), values[i * k + 1].to_bits());
            }
            // Ids outside the layer: almost all answer None.
            let outside = (0..10_000)
                .map(|_| rng.gen::<u64>() | (1 << 63))
                .filter(|&x| t.get(x).is_some())
                .count();
            assert!(outside <= 5, "{outside} of 10,000 outside ids found");
            if n > 0 {
                let per_id = t.bytes() as f64 / ids.len() as f64;
                let pilot = std::mem::size_of::<Pilot>() as f64;
                let bound = (FP + 8 * k) as f64 / ALPHA + pilot / LAMBDA as f64 + 0.5;
                assert!(n < PART || per_id < bound, "{per_id} bytes an id");
            }
        }
    }

    #[test]
    fn a_part_is_found_from_any_hint_as_by_binary_search() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for n in [1usize, PART, PART + 1, PART * 37 + 13] {
            let ids = super::super::super::layer::sort_dedup(
                (0..n).map(|_| rng.gen::<u64>() >> 4).collect(),
            );
            let t = PerfectTable::new(&ids, &vec![0.0; ids.len()], 1);
            let parts = t.first.len();
            assert_eq!(parts, ids.len().div_ceil(PART));
            let naive = |id: u64| t.first.partition_point(|&f| f <= id).saturating_sub(1);
            for _ in 0..20_000 {
                // Ids of the layer, ids between them, below and above them all, and the
                // first id of a part; hints anywhere, beyond the last part too.
                let id = match rng.gen_range(0..5) {
                    0 => ids[rng.gen_range(0..ids.len())],
                    1 => rng.gen::<u64>() >> 4,
                    2 => ids[0].saturating_sub(rng.gen_range(0..3)),
                    3 => t.first[rng.gen_range(0..parts)],
                    _ => u64::MAX - rng.gen_range(0..3),
                };
                let mut hint = rng.gen_range(0..parts as u32 + 3);
                let from = hint;
                let p = t.part_near(id, &mut hint);
                assert_eq!(p, naive(id), "id {id} from part {from} of {parts}");
                assert_eq!(hint as usize, p);
            }
            // Every id is found in the part that holds its rank.
            for (r, &id) in ids.iter().enumerate() {
                let mut hint = 0;
                assert_eq!(t.part_near(id, &mut hint), r / PART);
            }
        }
    }

    #[test]
    fn buckets_come_biggest_first_ties_by_index() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        for buckets in [0usize, 1, 2, 17, 5000] {
            let mut start = vec![0usize];
            for _ in 0..buckets {
                let last = *start.last().unwrap();
                start.push(last + rng.gen_range(0..9));
            }
            let mut naive: Vec<usize> = (0..buckets).collect();
            naive.sort_by_key(|&b| std::cmp::Reverse(start[b + 1] - start[b]));
            let mut order = vec![7; 3];
            by_decreasing_size(&start, &mut order);
            assert_eq!(order, naive, "{buckets} buckets");
        }
    }

    #[test]
    fn every_bucket_size_finds_the_pilot_of_the_one_key_at_a_time_search() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        for n_slots in [7usize, 64, 1000, 72_818] {
            for load in [0.0, 0.5, 0.9, 0.99] {
                let mut taken = vec![0u64; n_slots.div_ceil(64)];
                for s in 0..n_slots {
                    if rng.gen_bool(load) {
                        taken[s / 64] |= 1 << (s % 64);
                    }
                }
                for size in 1..=9 {
                    let keys: Vec<Key> = (0..size)
                        .map(|at| Key {
                            h: rng.gen(),
                            h2: rng.gen(),
                            at,
                        })
                        .collect();
                    let (mut fast, mut slow) = ([0usize; 64], [0usize; 64]);
                    let got = pilot_for(&keys, &taken, n_slots, &mut fast);
                    let want = first_pilot_any(&keys, &taken, n_slots, &mut slow);
                    let case = format!("{size} keys, {n_slots} slots at load {load}");
                    assert_eq!(got, want, "{case}");
                    let size = size as usize;
                    if let Some(pilot) = got {
                        assert_eq!(fast[..size], slow[..size], "{case}");
                        for (j, key) in keys.iter().enumerate() {
                            let s = slot_of(key.h2, pilot, n_slots);
                            assert_eq!(s, fast[j]);
                            assert_eq!(is_taken(&taken, s), 0, "{case}: a taken slot");
                            assert!(!fast[..j].contains(&s), "{case}: a slot twice");
                        }
                    }
                }
            }
        }
    }

    /// A layer of `n` random ids below 2^60.
    fn layer(rng: &mut impl Rng, n: usize) -> Vec<u64> {
        let mut ids = super::super::super::layer::sort_dedup(
            (0..n + n / 64 + 8).map(|_| rng.gen::<u64>() >> 4).collect(),
        );
        ids.truncate(n);
        assert_eq!(ids.len(), n);
        ids
    }

    /// `ids` and `values` pushed into `b` in runs of `chunk` ids (random lengths up to 3 ·
    /// `chunk` if `random`).
    fn push_all(b: &mut Builder, ids: &[u64], values: &[f64], k: usize, chunk: usize, seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut at = 0;
        while at < ids.len() {
            let len = if seed == 0 {
                chunk
            } else {
                rng.gen_range(0..=3 * chunk)
            };
            let end = (at + len).min(ids.len());
            b.push(&ids[at..end], &values[at * k..end * k]);
            at = end;
        }
    }

    #[test]
    fn a_builder_builds_the_same_bytes_however_the_layer_is_pushed() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let codings = [Coding::F64, Coding::Fixed32 { fraction_bits: 24 }];
        for (n, group) in [
            (0usize, 2usize),
            (1, 2),
            (PART - 1, 2),
            (PART, 2),
            (PART + 1, 2),
            (2 * PART, 2),
            (2 * PART + 1, 2),
            (4 * PART, 2),
            (5 * PART - 3, 2),
            (7 * PART + 5, 3),
            (3 * PART + 17, 16),
        ] {
            let ids = layer(&mut rng, n);
            for (c, &coding) in codings.iter().enumerate() {
                let k = 1 + c;
                let values: Vec<f64> = (0..n * k).map(|_| rng.gen::<f64>() * 3.0).collect();
                let want = PerfectTable::from_fn(&ids, |j| values[j], k, coding);
                for (chunk, seed) in [(1, 0), (7, 0), (PART, 0), (5000, 0), (n.max(1), 0)]
                    .into_iter()
                    .chain([(1, 1), (100, 2), (3000, 3)])
                {
                    let mut b = Builder::with_group(n, k, coding, group);
                    push_all(&mut b, &ids, &values, k, chunk, seed);
                    let got = b.finish();
                    let case = format!(
                        "{n} ids, {coding:?}, rounds of {group}, pushes of {chunk} ({seed})"
                    );
                    assert!(got.raw() == want.raw(), "{case}");
                }
            }
        }
    }

    #[test]
    fn rounds_and_threads_change_no_byte() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(10);
        // Past two rounds of the default size on two threads (128 parts a round).
        let n = 300 * PART + 77;
        let ids = layer(&mut rng, n);
        let values: Vec<f64> = (0..n).map(|_| rng.gen::<f64>()).collect();
        let coding = Coding::Fixed32 { fraction_bits: 30 };
        let want = PerfectTable::from_fn(&ids, |j| values[j], 1, coding);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (whole, pushed) = pool.install(|| {
                let whole = PerfectTable::from_fn(&ids, |j| values[j], 1, coding);
                let mut b = Builder::new(n, 1, coding);
                push_all(&mut b, &ids, &values, 1, 50_000, 4);
                (whole, b.finish())
            });
            assert!(whole.raw() == want.raw(), "{threads} threads");
            assert!(pushed.raw() == want.raw(), "{threads} threads, pushed");
        }
    }

    #[test]
    fn bytes_per_id_plans_what_a_table_takes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        let n = 64 * PART;
        let ids = layer(&mut rng, n);
        let values = vec![0.25; 2 * n];
        for coding in [Coding::F64, Coding::Fixed32 { fraction_bits: 16 }] {
            for k in [1, 2] {
                let t = PerfectTable::from_fn(&ids, |j| values[j], k, coding);
                let planned = PerfectTable::bytes_per_id(k, coding);
                let per_id = t.bytes() as f64 / n as f64;
                assert!(
                    per_id >= planned && per_id < planned * 1.01,
                    "{coding:?}, k = {k}: {per_id} bytes an id, {planned} planned"
                );
            }
        }
        let f64_1 = PerfectTable::bytes_per_id(1, Coding::F64);
        let fixed_1 = PerfectTable::bytes_per_id(1, Coding::Fixed32 { fraction_bits: 20 });
        assert!((f64_1 - 11.617).abs() < 0.01, "{f64_1}");
        assert!((fixed_1 - 7.172).abs() < 0.01, "{fixed_1}");
    }

    #[test]
    fn build_is_deterministic() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let ids =
            super::super::super::layer::sort_dedup((0..50_000).map(|_| rng.gen::<u64>()).collect());
        let values: Vec<f64> = ids.iter().map(|&x| x as f64).collect();
        let a = PerfectTable::new(&ids, &values, 1);
        let b = PerfectTable::new(&ids, &values, 1);
        assert_eq!(a.pilots, b.pilots);
        assert_eq!(a.slots, b.slots);
    }
}
