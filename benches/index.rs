//! Elias–Fano build and look-up against a plain sorted `Vec<u64>` with binary search, on
//! random ids below 2^40 (the size of compact ids of large ages); and the encoding of one age's
//! index file as the compact layout writes it (4x3 boards of one age, values in fixed point).
//!
//! Run: `cargo bench --no-default-features --bench index`. Bits per id are printed per size.

#[path = "harness/mod.rs"]
mod harness;

use std::hint::black_box;

use age2048::index::{
    encode_age_index_with_stats, AgeIndexMeta, EliasFano, IndexOptions, ValueCoding,
};
use harness::{time, Rng};

const UNIVERSE: u64 = 1 << 40;
/// Enough queries that the touched cache lines do not all stay cached between rounds.
const QUERIES: usize = 1 << 20;

fn random_ids(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut v: Vec<u64> = (0..n).map(|_| rng.below(UNIVERSE)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `n` distinct 4x3 board codes of tile sum `age` (tiles up to 128, cells drawn at random),
/// sorted: what one age of a 4x3 goal-128 solve holds.
fn boards_of_age(n: usize, age: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let (mut rest, mut code, mut empty) = (age, 0u64, (1u64 << 12) - 1);
        while rest > 0 && empty != 0 {
            let free: Vec<u32> = (0..12).filter(|&i| empty >> i & 1 == 1).collect();
            let cell = free[rng.below(free.len() as u64) as usize];
            let top = (63 - u64::from(rest.leading_zeros())).min(7);
            let e = 1 + rng.below(top);
            code |= e << (4 * cell);
            empty &= !(1 << cell);
            rest -= 1 << e;
        }
        if rest == 0 {
            v.push(code);
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// An age's index as the compact layout encodes it: afterstate ids only, values at 2^-32.
fn encode_case() {
    let age = 300;
    let codes = boards_of_age(4_000_000, age, 9);
    let mut rng = Rng(3);
    let values: Vec<f64> = codes
        .iter()
        .map(|_| rng.below(1 << 40) as f64 / (1u64 << 40) as f64)
        .collect();
    let meta = AgeIndexMeta {
        rows: 4,
        cols: 3,
        age: age as u32,
        variant: "goal-128".into(),
    };
    let options = IndexOptions {
        state_ids: false,
        values: ValueCoding::Fixed { fraction_bits: 32 },
    };
    let n = codes.len();
    time(
        &format!("encode a compact age index ({n} ids)"),
        9,
        n,
        || {
            encode_age_index_with_stats(&meta, &[], black_box(&codes), &values, options)
                .expect("an age's codes")
        },
    );
}

fn main() {
    encode_case();
    for &(n, label) in &[(1_000_000usize, "1e6"), (10_000_000, "1e7")] {
        let ids = random_ids(n, 42);
        let ef = EliasFano::from_sorted(&ids).expect("sorted ids");
        println!(
            "elias-fano {label}: {} ids, {} bytes, {:.3} bits/id (sorted Vec: 64 bits/id)",
            ef.len(),
            ef.size_bytes(),
            ef.bits_per_element()
        );
        let mut rng = Rng(7);
        let present: Vec<u64> = (0..QUERIES)
            .map(|_| ids[rng.below(ids.len() as u64) as usize])
            .collect();
        let random: Vec<u64> = (0..QUERIES).map(|_| rng.below(UNIVERSE)).collect();
        time(&format!("build elias-fano {label}"), 5, 1, || {
            EliasFano::from_sorted(black_box(&ids)).expect("sorted ids")
        });
        time(&format!("rank_of present {label}"), 5, QUERIES, || {
            present
                .iter()
                .filter_map(|&x| ef.rank_of(black_box(x)))
                .count()
        });
        time(&format!("rank_of random {label}"), 5, QUERIES, || {
            random
                .iter()
                .filter_map(|&x| ef.rank_of(black_box(x)))
                .count()
        });
        time(
            &format!("sorted vec binary search {label}"),
            5,
            QUERIES,
            || {
                present
                    .iter()
                    .filter_map(|&x| ids.binary_search(&black_box(x)).ok())
                    .count()
            },
        );
    }
}
