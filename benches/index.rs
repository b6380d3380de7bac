//! Elias–Fano build and look-up against a plain sorted `Vec<u64>` with binary search, on
//! random ids below 2^40 (the size of compact ids of large ages).
//!
//! Run: `cargo bench --no-default-features --bench index`. Bits per id are printed per size.

#[path = "harness/mod.rs"]
mod harness;

use std::hint::black_box;

use age2048::index::EliasFano;
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

fn main() {
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
