//! A small timing harness for the micro-benchmarks (no dependency, so that benchmarks do not
//! change the features the library is built with): each case runs a few rounds and reports
//! the median time per iteration.

use std::time::Instant;

/// Times `f` (which runs `iters` iterations) over `rounds` rounds; prints and returns the
/// median nanoseconds per iteration.
pub fn time<R>(name: &str, rounds: usize, iters: usize, mut f: impl FnMut() -> R) -> f64 {
    let mut per: Vec<f64> = (0..rounds.max(1))
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_nanos() as f64 / iters.max(1) as f64
        })
        .collect();
    per.sort_by(f64::total_cmp);
    let med = per[per.len() / 2];
    println!(
        "{name:<44} {med:>12.1} ns/iter  (min {:.1}, max {:.1}, {} rounds)",
        per[0],
        per[per.len() - 1],
        per.len()
    );
    med
}

/// A deterministic stream of pseudo-random numbers (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
