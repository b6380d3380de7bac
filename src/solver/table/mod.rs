//! Values by id for the look-ups of the backward pass, one table per layer it reads.
//!
//! A small layer gets an open-addressing table of ids and values ([`open`]: one cache line a
//! look-up, 21 to 32 bytes an id); from [`PERFECT_FROM`] ids on, a layer gets a perfect hash
//! onto slots of a fingerprint and the values ([`perfect`]: two dependent reads a look-up,
//! mostly from the caches since its parts follow the layer's order, about 11.6 bytes an id
//! with one variant). The big layers are where memory goes, so they take the perfect table's
//! half of the bytes; the small ones, where the look-ups are most of the time and the tables
//! sit in the caches anyway, keep the open table's one read a look-up (perfect tables there
//! made small solves slower: `reports/bench/profile.md`).
//!
//! A table stores its values in a [`Coding`]: every bit of the f64 ([`Coding::F64`]), or in
//! fixed point, a u32 a value ([`Coding::Fixed32`]), for a solve held to a memory budget. A
//! perfect table's slot is then 2 + 4k bytes where it was 2 + 8k:
//! [`PerfectTable::bytes_per_id`] plans ≈ 11.6 bytes an id with one variant in f64 and
//! ≈ 7.2 in fixed point (6.6 and 11.1 more for each further variant). An open table keeps
//! f64 whatever the coding (its layers are small), each value quantised as it goes in, so a
//! table answers the same values whichever kind it is.
//!
//! A table is built from the whole layer at once ([`ValueTable::from_fn_coded`]) or from
//! its ids and values in order, a run at a time ([`TableBuilder`]), which holds only the
//! table so far and the ids and values of the parts not yet built: the layer's ids and
//! values need not exist as whole vectors.
//!
//! Linear probing over fingerprints (its look-ups ran past their cache line too often) and
//! building a table in the buffers of the one let go before it (no quicker, a higher peak)
//! were tried and not kept: `reports/bench/profile.md`.

mod open;
mod perfect;

use open::OpenTable;
pub use perfect::PerfectTable;

/// From this many ids on, a layer's table is a [`PerfectTable`].
pub const PERFECT_FROM: usize = 1 << 22;

/// How a table stores its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// Every bit of the f64 (8 bytes a value).
    F64,
    /// Fixed point, 4 bytes a value: `v` stored as the u32 `min(round(v · 2^fraction_bits),
    /// u32::MAX)` ([`Coding::encode`]) and read back as that times `2^-fraction_bits`, exactly
    /// (an f64 holds any u32 times a power of two). Values must be ≥ 0 (they are in this
    /// solver); a value read back is within `2^-(fraction_bits + 1)` of the value written
    /// unless it was clamped at `u32::MAX`.
    Fixed32 { fraction_bits: u8 },
}

impl Coding {
    /// The coding as the backward pass's progress file records it: `f64` or `fixed32/F`.
    pub fn name(self) -> String {
        match self {
            Coding::F64 => "f64".into(),
            Coding::Fixed32 { fraction_bits } => format!("fixed32/{fraction_bits}"),
        }
    }

    /// [`Coding::name`] read back (`None` if it is no coding's).
    pub fn parse(name: &str) -> Option<Coding> {
        match name {
            "f64" => Some(Coding::F64),
            _ => name
                .strip_prefix("fixed32/")
                .and_then(|f| f.parse().ok())
                .filter(|&f: &u8| f <= 63)
                .map(|fraction_bits| Coding::Fixed32 { fraction_bits }),
        }
    }

    /// Bytes a value takes in a slot of a [`PerfectTable`].
    pub fn width(self) -> usize {
        match self {
            Coding::F64 => 8,
            Coding::Fixed32 { .. } => 4,
        }
    }

    /// The u32 code of `v` in [`Coding::Fixed32`] with `fraction_bits`: `v · 2^fraction_bits`
    /// (exact: a power of two) rounded to the nearest integer, halves up (as `f64::round`
    /// rounds values ≥ 0), then clamped at `u32::MAX`. The rounding is integer arithmetic
    /// (truncate, then compare what was cut off with 1/2, itself exact below 2^32), so it is
    /// the same on every platform and makes no call into libm. A value below 0 (which
    /// `debug_assert`s) or NaN codes as 0.
    #[inline]
    pub fn encode(fraction_bits: u8, v: f64) -> u32 {
        debug_assert!(v >= 0.0, "a fixed-point value must be ≥ 0, not {v}");
        let x = v * pow2(i32::from(fraction_bits));
        if x >= u32::MAX as f64 {
            return u32::MAX;
        }
        // 0 ≤ t ≤ x < 2^32 - 1 (t = 0 for x below 0 or NaN, as the cast saturates), and x − t
        // is exact: t = 0, or x ≥ 1 and t > x / 2 (Sterbenz).
        let t = x as u32;
        t + u32::from(x - f64::from(t) >= 0.5)
    }

    /// The value a [`Coding::Fixed32`] code `x` stands for: `x · 2^-fraction_bits`, exactly.
    #[inline]
    pub fn decode(fraction_bits: u8, x: u32) -> f64 {
        f64::from(x) * pow2(-i32::from(fraction_bits))
    }

    /// `v` as a table in this coding reads it back: itself in f64, its code decoded in fixed
    /// point.
    #[inline]
    pub fn quantise(self, v: f64) -> f64 {
        match self {
            Coding::F64 => v,
            Coding::Fixed32 { fraction_bits } => {
                Coding::decode(fraction_bits, Coding::encode(fraction_bits, v))
            }
        }
    }
}

/// `2^e` for `e` in `-1022..=1023`, exactly (built from its bits, not by libm's `exp2`).
#[inline(always)]
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((1023 + e) as u64) << 52)
}

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
    /// Each value's [`Coding::Fixed32`] code (little-endian), and what a unit of code is
    /// worth (`2^-fraction_bits`).
    Fixed(&'a [u8], f64),
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
            Values::Fixed(b, unit) => {
                let mut x = [0u8; 4];
                x.copy_from_slice(&b[4 * v..4 * v + 4]);
                f64::from(u32::from_le_bytes(x)) * unit
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
        ValueTable::from_fn_coded(ids, value, k, perfect_from, Coding::F64)
    }

    /// [`ValueTable::from_fn_at`] with the values stored in `coding` (and read back as
    /// [`Coding::quantise`] has them, whichever kind of table the layer gets).
    pub fn from_fn_coded(
        ids: &[u64],
        value: impl Fn(usize) -> f64 + Sync,
        k: usize,
        perfect_from: usize,
        coding: Coding,
    ) -> ValueTable {
        if ids.len() >= perfect_from {
            ValueTable::Perfect(PerfectTable::from_fn(ids, value, k, coding))
        } else {
            ValueTable::Open(OpenTable::from_fn(ids, value, k, coding))
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
            ValueTable::Perfect(t) => t.at_packed(loc).map(|b| t.values(b)),
        }
    }

    /// The values of `id` (one per variant), if `id` is in the layer (a perfect table tells
    /// an id outside its layer apart but for 1 in 2^16: see [`perfect`]).
    #[inline]
    pub fn get(&self, id: u64) -> Option<Values<'_>> {
        match self {
            ValueTable::Open(t) => t.get(id).map(Values::Words),
            ValueTable::Perfect(t) => t.get(id).map(|b| t.values(b)),
        }
    }
}

/// Builds the [`ValueTable`] of a layer from its ids and values in order, a run at a time,
/// into the very table [`ValueTable::from_fn_coded`] builds from the whole layer: a perfect
/// table's parts are built (in parallel rounds) as soon as their ids are all in, so that
/// what the builder holds is the table so far and the ids and values of the parts not yet
/// built (fewer than a round's: [`PerfectTable`]'s `GROUP_PER_THREAD` parts of 4096 ids a
/// thread, ≈ 2 MB of ids a thread, and their values), never the layer's. A small layer
/// (below `perfect_from`) is collected whole and built at [`TableBuilder::finish`].
pub struct TableBuilder {
    kind: BuilderKind,
    /// Ids the layer has.
    n: usize,
    /// Ids pushed so far.
    pushed: usize,
    /// The last id pushed, to check the order.
    last: Option<u64>,
}

enum BuilderKind {
    /// A small layer's ids and values, kept until the end.
    Collect {
        ids: Vec<u64>,
        values: Vec<f64>,
        k: usize,
        coding: Coding,
    },
    Perfect(Box<perfect::Builder>),
}

impl TableBuilder {
    /// A table of a layer of `n` ids (known up front), `k` values an id, in `coding`, a
    /// [`PerfectTable`] from `perfect_from` ids on.
    pub fn new(n: usize, k: usize, perfect_from: usize, coding: Coding) -> TableBuilder {
        let kind = if n >= perfect_from {
            BuilderKind::Perfect(Box::new(perfect::Builder::new(n, k, coding)))
        } else {
            BuilderKind::Collect {
                ids: Vec::with_capacity(n),
                values: Vec::with_capacity(n * k),
                k,
                coding,
            }
        };
        TableBuilder {
            kind,
            n,
            pushed: 0,
            last: None,
        }
    }

    /// The next ids of the layer (strictly increasing, also across calls) and their values,
    /// `values[i * k + v]` that of `ids[i]` under variant `v`. The table does not depend on
    /// how the layer is cut into pushes.
    pub fn push(&mut self, ids: &[u64], values: &[f64]) {
        self.pushed += ids.len();
        assert!(
            self.pushed <= self.n,
            "{} ids pushed into a table of {}",
            self.pushed,
            self.n
        );
        debug_assert!(
            super::layer::is_layer(ids) && self.last.zip(ids.first()).is_none_or(|(a, &b)| a < b),
            "a layer's ids must come strictly increasing"
        );
        self.last = ids.last().copied().or(self.last);
        match &mut self.kind {
            BuilderKind::Collect {
                ids: all,
                values: all_values,
                k,
                ..
            } => {
                assert_eq!(values.len(), ids.len() * *k, "values of the ids pushed");
                all.extend_from_slice(ids);
                all_values.extend_from_slice(values);
            }
            BuilderKind::Perfect(b) => b.push(ids, values),
        }
    }

    /// The table, once exactly the `n` ids of the layer are in: the same (for a perfect
    /// table, byte for byte) as [`ValueTable::from_fn_coded`] builds from the whole layer.
    pub fn finish(self) -> ValueTable {
        assert_eq!(self.pushed, self.n, "ids pushed into a table of {}", self.n);
        match self.kind {
            BuilderKind::Collect {
                ids,
                values,
                k,
                coding,
            } => ValueTable::Open(OpenTable::from_fn(&ids, |j| values[j], k, coding)),
            BuilderKind::Perfect(b) => ValueTable::Perfect((*b).finish()),
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
            ValueTable::Open(OpenTable::from_fn(&ids, |j| values[j], 1, Coding::F64)),
            ValueTable::Perfect(PerfectTable::from_fn(&ids, |j| values[j], 1, Coding::F64)),
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

    /// `v` in fixed point as the naive reading of [`Coding::Fixed32`] has it.
    fn naive(v: f64, fraction_bits: u8) -> f64 {
        let scale = f64::from(fraction_bits).exp2();
        (v * scale).round().min(f64::from(u32::MAX)) / scale
    }

    #[test]
    fn fixed_point_codes_round_as_f64_round_does() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        for f in [0u8, 1, 16, 31, 32, 52, 60] {
            let scale = f64::from(f).exp2();
            let top = f64::from(u32::MAX) / scale;
            let mut cases = vec![0.0, f64::MIN_POSITIVE, 1.0, top, top * 2.0, f64::MAX];
            cases.push(f64::INFINITY);
            for _ in 0..20_000 {
                let x: f64 = match rng.gen_range(0..4) {
                    // Halves and their neighbours.
                    0 => {
                        let h = (rng.gen_range(0..u32::MAX) as f64 + 0.5) / scale;
                        [h, h.next_down(), h.next_up()][rng.gen_range(0..3)]
                    }
                    1 => rng.gen::<f64>() * top * 1.1,
                    2 => rng.gen::<f64>(),
                    _ => rng.gen::<f64>() / scale * 4.0,
                };
                cases.push(x);
            }
            for v in cases {
                let want = (v * scale).round().min(f64::from(u32::MAX)) as u32;
                assert_eq!(Coding::encode(f, v), want, "{v:e} at 2^-{f}");
                let back = Coding::decode(f, want);
                assert_eq!(
                    back * scale,
                    f64::from(want),
                    "{v:e} at 2^-{f}: decoded inexactly"
                );
                let q = Coding::Fixed32 { fraction_bits: f }.quantise(v);
                assert_eq!(q.to_bits(), naive(v, f).to_bits());
            }
        }
        assert_eq!(Coding::F64.quantise(0.1).to_bits(), 0.1f64.to_bits());
    }

    #[test]
    fn fixed_point_tables_of_both_kinds_read_back_the_quantised_values() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(14);
        let ids =
            crate::solver::layer::sort_dedup((0..50_000).map(|_| rng.gen::<u64>() >> 4).collect());
        let k = 3;
        for f in [10u8, 24, 40] {
            let coding = Coding::Fixed32 { fraction_bits: f };
            // Probabilities, some big values (clamped at 40 bits), exact halves of a unit.
            let values: Vec<f64> = (0..ids.len() * k)
                .map(|j| match j % 3 {
                    0 => rng.gen::<f64>(),
                    1 => rng.gen::<f64>() * 1e4,
                    _ => (rng.gen_range(0..1u64 << 20) as f64 + 0.5) / f64::from(f).exp2(),
                })
                .collect();
            let tables = [
                ValueTable::from_fn_coded(&ids, |j| values[j], k, usize::MAX, coding),
                ValueTable::from_fn_coded(&ids, |j| values[j], k, 0, coding),
            ];
            assert!(matches!(tables[0], ValueTable::Open(_)));
            assert!(matches!(tables[1], ValueTable::Perfect(_)));
            for t in &tables {
                for (i, &id) in ids.iter().enumerate() {
                    let got = t.get(id).expect("an id of the layer");
                    let mut hint = 0;
                    t.prefetch(id, &mut hint);
                    let stepped = t.at(t.locate(id, hint)).expect("an id of the layer");
                    for v in 0..k {
                        let want = naive(values[i * k + v], f);
                        assert_eq!(got.get(v).to_bits(), want.to_bits(), "2^-{f}, id {i}");
                        assert_eq!(stepped.get(v).to_bits(), want.to_bits());
                    }
                }
                let found = (0..10_000)
                    .map(|_| rng.gen::<u64>() | (1 << 63))
                    .filter(|&x| t.get(x).is_some())
                    .count();
                let most = if matches!(t, ValueTable::Open(_)) {
                    0
                } else {
                    5
                };
                assert!(found <= most, "{found} of 10,000 outside ids found");
            }
        }
    }

    /// Every id of `ids` and some outside it read the same values from `a` and `b`; and if
    /// both are perfect, they hold the same bytes.
    fn assert_same(a: &ValueTable, b: &ValueTable, ids: &[u64], k: usize, case: &str) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(15);
        let outside = (0..1000).map(|_| rng.gen::<u64>() | (1 << 63));
        for id in ids.iter().copied().chain(outside) {
            let (x, y) = (a.get(id), b.get(id));
            assert_eq!(x.is_some(), y.is_some(), "{case}: id {id}");
            if let (Some(x), Some(y)) = (x, y) {
                for v in 0..k {
                    assert_eq!(x.get(v).to_bits(), y.get(v).to_bits(), "{case}: id {id}");
                }
            }
        }
        match (a, b) {
            (ValueTable::Perfect(a), ValueTable::Perfect(b)) => {
                assert!(a.raw() == b.raw(), "{case}: other bytes")
            }
            (ValueTable::Open(_), ValueTable::Open(_)) => {}
            _ => panic!("{case}: tables of two kinds"),
        }
    }

    #[test]
    fn a_table_builder_builds_what_from_fn_coded_builds() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(16);
        let perfect_from = 5000;
        for n in [0usize, 1, 4095, 4096, 4097, 4999, 5000, 5001, 8192, 20_000] {
            let ids = crate::solver::layer::sort_dedup(
                (0..n * 2 + 8).map(|_| rng.gen::<u64>() >> 4).collect(),
            )[..n]
                .to_vec();
            for coding in [Coding::F64, Coding::Fixed32 { fraction_bits: 20 }] {
                let k = 2;
                let values: Vec<f64> = (0..n * k).map(|_| rng.gen::<f64>() * 2.0).collect();
                let want = ValueTable::from_fn_coded(&ids, |j| values[j], k, perfect_from, coding);
                for chunk in [1usize, 7, 4096, 5000, 0] {
                    let mut b = TableBuilder::new(n, k, perfect_from, coding);
                    let mut at = 0;
                    while at < n {
                        // Chunk 0: random lengths, empty pushes among them.
                        let len = if chunk == 0 {
                            rng.gen_range(0..3000)
                        } else {
                            chunk
                        };
                        let end = (at + len).min(n);
                        b.push(&ids[at..end], &values[at * k..end * k]);
                        at = end;
                    }
                    let got = b.finish();
                    let case = format!("{n} ids, {coding:?}, pushes of {chunk}");
                    assert_same(&got, &want, &ids, k, &case);
                }
            }
        }
        // F64 as it was: from_fn_at is from_fn_coded in f64.
        let ids: Vec<u64> = (0..6000).map(|i| i * 3 + 1).collect();
        let values: Vec<f64> = (0..6000).map(|i| i as f64 / 7.0).collect();
        for perfect_from in [0, usize::MAX] {
            let a = ValueTable::from_fn_at(&ids, |j| values[j], 1, perfect_from);
            let b = ValueTable::from_fn_coded(&ids, |j| values[j], 1, perfect_from, Coding::F64);
            assert_same(&a, &b, &ids, 1, "from_fn_at");
            for (i, &id) in ids.iter().enumerate() {
                assert_eq!(a.get(id).unwrap().get(0).to_bits(), values[i].to_bits());
            }
        }
    }
}
