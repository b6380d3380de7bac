//! Hot-loop benchmarks: moves, normalisation, hash look-ups, and a whole 2x4 solve.
//! Run with `cargo bench --no-default-features --bench solver`; the 3x3 solve is timed by
//! `benches/solve.sh` (`make bench`).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};

use age2048::board::{Dir, Shape};
use age2048::game::Game;
use age2048::layer::{sort_dedup, RankIndex};
use age2048::solve::{solve, SolveConfig};
use age2048::symmetry::Group;
use age2048::variant::Variant;

fn boards(n: usize) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    (0..n)
        .map(|_| (0..9).fold(0u64, |acc, i| acc | (rng.gen_range(0..8u64) << (4 * i))))
        .collect()
}

fn bench(c: &mut Criterion) {
    let game = Game::new(Shape::new(3, 3).unwrap(), Group::Full);
    let bs = boards(4096);
    c.bench_function("3x3 four moves x4096", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for &x in &bs {
                for d in Dir::ALL {
                    if let Some((a, r)) = game.rules.apply(x, d) {
                        acc = acc.wrapping_add(a ^ u64::from(r));
                    }
                }
            }
            black_box(acc)
        })
    });
    c.bench_function("3x3 canon x4096", |b| {
        b.iter(|| {
            bs.iter()
                .fold(0u64, |acc, &x| acc ^ game.canon(black_box(x)))
        })
    });
    let ids = sort_dedup(boards(300_000));
    let index = RankIndex::new(&ids);
    c.bench_function("rank index get x4096 (300k ids)", |b| {
        b.iter(|| bs.iter().filter_map(|&x| index.get(black_box(x))).count())
    });
    let mut g = c.benchmark_group("solve");
    g.sample_size(10);
    g.bench_function("2x4 expectation, written", |b| {
        b.iter(|| {
            let dir = tempfile::tempdir().unwrap();
            let cfg = SolveConfig {
                shape: Shape::new(2, 4).unwrap(),
                group: Group::Full,
                variants: vec![Variant::expectation()],
                data: dir.path().to_path_buf(),
                force: false,
            };
            solve(&cfg, &|_| {}).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
