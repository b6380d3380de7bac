//! Elias–Fano build and look-up against a plain sorted `Vec<u64>` with binary search, on
//! random ids below 2^40 (the size of compact ids of large ages); the encoding of one age's
//! index file as the compact layout writes it (4x3 boards of one age, values in fixed point);
//! and the encoding of one age's policy file as the policy layout writes it (ranks skewed as
//! the solves' are), on one thread and on all, per state.
//!
//! Run: `cargo bench --no-default-features --bench index`. Bits per id are printed per size.

#[path = "harness/mod.rs"]
mod harness;

use std::hint::black_box;

use std::sync::Arc;

use age2048::index::{
    encode_age_index_with_stats, encode_policy, AgeIndexMeta, EliasFano, IndexOptions, MovesOf,
    PolicyMeta, ValueCoding,
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

/// An age's policy file: `boards` 4x3 boards of one age, each with 0 to 4 valid moves drawn
/// from its id and a rank skewed as a solve's (3x3 expectation: 1.24 bits a state), per
/// state, in `rounds` rounds. Two million ids are several shards; fifty thousand are one, the
/// size of a 3x3 age (which the age writer's thread builds alone).
fn policy_case(boards: usize, rounds: usize) {
    let age = 300;
    let ids = boards_of_age(boards, age, 5);
    let moves_of: MovesOf = Arc::new(|id: u64| {
        let x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
        [0u8, 1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4][(x & 15) as usize]
    });
    let mut rng = Rng(17);
    let ranks: Vec<u8> = ids
        .iter()
        .map(|&id| {
            let m = moves_of(id);
            if m < 2 || rng.below(100) < 75 {
                0
            } else {
                rng.below(u64::from(m)) as u8
            }
        })
        .collect();
    let meta = PolicyMeta {
        rows: 4,
        cols: 3,
        age: age as u32,
        variant: "goal-128".into(),
        order: 6,
        reached: false,
        masks: false,
    };
    let n = ids.len();
    let encode = || encode_policy(&meta, black_box(&ids), &ranks, moves_of.clone()).expect("ranks");
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    one.install(|| {
        time(
            &format!("encode a policy file, 1 thread ({n} ids)"),
            rounds,
            n,
            encode,
        )
    });
    let threads = rayon::current_num_threads();
    time(
        &format!("encode a policy file, {threads} threads ({n} ids)"),
        rounds,
        n,
        encode,
    );
    let (bytes, stats) = encode();
    println!(
        "policy file: {} bytes, {:.3} bits a state, keys at levels {:?}",
        bytes.len(),
        bytes.len() as f64 * 8.0 / n as f64,
        stats.levels
    );
}

fn main() {
    policy_case(50_000, 41);
    policy_case(2_000_000, 5);
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
