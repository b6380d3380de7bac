//! Elias–Fano build and lookup versus a plain sorted `Vec<u64>` with binary search, on
//! random ids below 2^40 (the size of compact ids of large ages).
//!
//! Run: `cargo bench --bench index`. Bits per id are printed before each size.

use age2048::index::EliasFano;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Duration;

const UNIVERSE: u64 = 1 << 40;
/// Enough queries that the touched cache lines do not all stay cached between rounds.
const QUERIES: usize = 1 << 20;

fn random_ids(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut v: Vec<u64> = (0..n).map(|_| rng.gen_range(0..UNIVERSE)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn bench_index(c: &mut Criterion) {
    for &(n, label) in &[(1_000_000usize, "1e6"), (10_000_000, "1e7")] {
        let ids = random_ids(n, 42);
        let ef = EliasFano::from_sorted(&ids).expect("sorted ids");
        println!(
            "elias-fano {label}: {} ids, {} bytes, {:.3} bits/id (sorted Vec: 64 bits/id)",
            ef.len(),
            ef.size_bytes(),
            ef.bits_per_element()
        );
        let mut rng = StdRng::seed_from_u64(7);
        let present: Vec<u64> = (0..QUERIES)
            .map(|_| ids[rng.gen_range(0..ids.len())])
            .collect();
        let random: Vec<u64> = (0..QUERIES).map(|_| rng.gen_range(0..UNIVERSE)).collect();

        let mut g = c.benchmark_group("index_build");
        g.sample_size(10).measurement_time(Duration::from_secs(8));
        g.bench_function(BenchmarkId::new("elias_fano", label), |b| {
            b.iter(|| EliasFano::from_sorted(black_box(&ids)).expect("sorted ids"))
        });
        g.finish();

        let mut g = c.benchmark_group("index_rank_of");
        g.measurement_time(Duration::from_secs(4));
        let mut i = 0usize;
        g.bench_function(BenchmarkId::new("elias_fano_present", label), |b| {
            b.iter(|| {
                i = (i + 1) & (QUERIES - 1);
                black_box(ef.rank_of(black_box(present[i])))
            })
        });
        g.bench_function(BenchmarkId::new("elias_fano_random", label), |b| {
            b.iter(|| {
                i = (i + 1) & (QUERIES - 1);
                black_box(ef.rank_of(black_box(random[i])))
            })
        });
        g.bench_function(BenchmarkId::new("sorted_vec_present", label), |b| {
            b.iter(|| {
                i = (i + 1) & (QUERIES - 1);
                black_box(ids.binary_search(&black_box(present[i])).ok())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench_index);
criterion_main!(benches);
