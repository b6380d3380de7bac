//! Hot-loop benchmarks: moves, normalisation, hash look-ups, and a whole 2x4 solve.
//! Run with `cargo bench --no-default-features --bench solver`; the 3x3 solve against the
//! reference solver is timed by `benches/solve.sh` (`make bench`).

#[path = "harness/mod.rs"]
mod harness;

use std::hint::black_box;

use age2048::rules::{Dir, Game, Group, Shape, Variant};
use age2048::solver::forward::{AgeLayer, Start};
use age2048::solver::layer::{sort_dedup, sort_dedup_pieces, union, Runs};
use age2048::solver::table::ValueTable;
use age2048::solver::{solve, SolveConfig, StorageRequest, DEFAULT_WRITE_AHEAD};
use age2048::store::Store;
use harness::{time, Rng};

fn boards(n: usize) -> Vec<u64> {
    boards_of(n, 9)
}

fn boards_of(n: usize, cells: usize) -> Vec<u64> {
    let mut rng = Rng(1);
    (0..n)
        .map(|_| (0..cells).fold(0u64, |acc, i| acc | (rng.below(8) << (4 * i))))
        .collect()
}

/// Boards with about half their cells empty (as afterstates of the middle ages are).
fn sparse_boards(n: usize, cells: usize) -> Vec<u64> {
    let mut rng = Rng(2);
    (0..n)
        .map(|_| {
            (0..cells).fold(0u64, |acc, i| {
                let e = if rng.below(2) == 0 {
                    0
                } else {
                    1 + rng.below(7)
                };
                acc | (e << (4 * i))
            })
        })
        .collect()
}

/// The values of `ids` summed, looked up as the backward pass does: in blocks of 64 (every
/// part found and pilot asked for, then every slot located and asked for, then read), the
/// `j`-th id in stream `j % streams`.
fn blocked(table: &ValueTable, ids: &[u64], streams: usize) -> f64 {
    const B: usize = 64;
    let mut hint = vec![0u32; streams];
    let (mut part, mut loc) = ([0u32; B], [0u64; B]);
    let mut sum = 0.0;
    for (b, block) in ids.chunks(B).enumerate() {
        for (j, &x) in block.iter().enumerate() {
            let h = &mut hint[(b * B + j) % streams];
            table.prefetch(black_box(x), h);
            part[j] = *h;
        }
        for (j, &x) in block.iter().enumerate() {
            loc[j] = table.locate(x, part[j]);
        }
        for &l in &loc[..block.len()] {
            sum += table.at(l).map_or(0.0, |v| v.get(0));
        }
    }
    sum
}

/// What this machine's memory gives, the bound the backward pass is measured against
/// (`reports/bench/time.md`): a sequential read of `data` (a power of two of u64) on every
/// thread, and reads of random 8-byte words of it (a cache line each), eight independent
/// reads in flight a thread (as the look-ups' prefetched blocks are). Prints GB/s and
/// million lines a second over all threads.
fn memory_case(data: &[u64], label: &str) {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    let ns = time(
        &format!("memory: sequential read, {label}, per 8 bytes"),
        5,
        data.len(),
        || {
            data.par_chunks(1 << 16)
                .map(|c| c.iter().fold(0u64, |a, &x| a.wrapping_add(x)))
                .reduce(|| 0, u64::wrapping_add)
        },
    );
    println!("  = {:.1} GB/s on {threads} threads", 8.0 / ns);
    let reads = 1usize << 24;
    let mask = (data.len() - 1) as u64;
    let ns = time(
        &format!("memory: random lines, {label}, per line"),
        5,
        reads,
        || {
            (0..reads / 8)
                .into_par_iter()
                .with_min_len(1 << 12)
                .map(|i| {
                    let mut rng = Rng(i as u64);
                    (0..8).fold(0u64, |a, _| {
                        a.wrapping_add(data[(rng.next_u64() & mask) as usize])
                    })
                })
                .reduce(|| 0, u64::wrapping_add)
        },
    );
    println!(
        "  = {:.0} M lines/s, {:.1} GB/s of lines on {threads} threads",
        1e3 / ns,
        64.0 / ns
    );
}

/// All four moves of every board at once, as the solver's passes ask for them.
fn all_moves(game: &Game, bs: &[u64]) -> u64 {
    let mut acc = 0u64;
    for &x in bs {
        for (a, r) in game.rules.moves(black_box(x)).into_iter().flatten() {
            acc = acc.wrapping_add(a ^ u64::from(r));
        }
    }
    acc
}

fn main() {
    // 1 GiB, far beyond the caches, and 4 MiB, about what three ages' tables of 3x3 hold.
    let words = 1 << 27;
    let data: Vec<u64> = (0..words as u64).collect();
    memory_case(&data, "1 GiB");
    memory_case(&data[..1 << 19], "4 MiB");
    drop(data);
    let game = Game::new(Shape::new(3, 3).unwrap(), Group::Full);
    let bs = boards(1 << 16);
    time("3x3 four moves, one at a time (apply)", 9, bs.len(), || {
        let mut acc = 0u64;
        for &x in &bs {
            for d in Dir::ALL {
                if let Some((a, r)) = game.rules.apply(x, d) {
                    acc = acc.wrapping_add(a ^ u64::from(r));
                }
            }
        }
        acc
    });
    time("3x3 all four moves at once", 9, bs.len(), || {
        all_moves(&game, &bs)
    });
    let game4 = Game::new(Shape::new(4, 4).unwrap(), Group::Full);
    let bs4 = boards_of(1 << 16, 16);
    time("4x4 all four moves at once", 9, bs4.len(), || {
        all_moves(&game4, &bs4)
    });
    // What the forward's spawn and the backward's afterstates do per afterstate: its images,
    // then every child (a 2 or a 4 in each empty cell) normalised from them.
    let children = |game: &Game, bs: &[u64]| {
        let mut acc = 0u64;
        for &a in bs {
            let img = game.sym.images_of(black_box(a)).expect("images");
            for i in age2048::rules::board::empty_cells(a, game.cells()) {
                acc ^= game.sym.spawn_canon(&img, i, 1) ^ game.sym.spawn_canon(&img, i, 2);
            }
        }
        acc
    };
    let (sparse3, sparse4) = (sparse_boards(1 << 16, 9), sparse_boards(1 << 16, 16));
    let per_board = "spawn children normalised, per board";
    time(&format!("3x3 {per_board}"), 9, sparse3.len(), || {
        children(&game, &sparse3)
    });
    time(&format!("4x4 {per_board}"), 9, sparse4.len(), || {
        children(&game4, &sparse4)
    });
    time("3x3 canon", 9, bs.len(), || {
        bs.iter()
            .fold(0u64, |acc, &x| acc ^ game.canon(black_box(x)))
    });
    // A forward batch's children: 2^24 ids in 512 pieces, each id ≈ 3 times. The sort takes
    // its pieces by value, so each round's figure includes one copy of them (128 MiB).
    let mut rng = Rng(5);
    let distinct: Vec<u64> = (0..1 << 22).map(|_| rng.next_u64() >> 16).collect();
    let pieces: Vec<Vec<u64>> = (0..512)
        .map(|_| {
            (0..1 << 15)
                .map(|_| distinct[rng.below(1 << 22) as usize])
                .collect()
        })
        .collect();
    time(
        "sort and deduplicate 2^24 ids in pieces, per id",
        5,
        1 << 24,
        || sort_dedup_pieces(pieces.clone()).len(),
    );
    // The same on real ids: the spawn children (a 2 in each empty cell, normalised) of the
    // afterstates of 3x3's age 800, in pieces of 2048 afterstates as the forward pass makes them.
    let class = Variant::expectation().forward_class();
    let mut real: Vec<u64> = Vec::new();
    let _ = age2048::solver::forward::run(&game, &class, Start::Fresh, |l: AgeLayer| {
        if l.age < 800 {
            return Ok(());
        }
        real = l.afterstates;
        // Stops the pass: the later ages are not needed.
        Err(age2048::solver::SolveError::Internal("enough".into()))
    });
    let real_pieces: Vec<Vec<u64>> = real
        .chunks(2048)
        .map(|chunk| {
            let mut out = Vec::new();
            for &a in chunk {
                let img = game.sym.images_of(a).expect("images");
                for i in age2048::rules::board::empty_cells(a, game.cells()) {
                    out.push(game.sym.spawn_canon(&img, i, 1));
                }
            }
            out
        })
        .collect();
    let n_real: usize = real_pieces.iter().map(Vec::len).sum();
    time(
        &format!("sort and deduplicate 3x3 spawn children ({n_real} ids), per id"),
        9,
        n_real,
        || sort_dedup_pieces(real_pieces.clone()).len(),
    );
    // A pending layer grown from k batches' sorted runs (drawn from 2^22 ids, three draws an
    // id, so that an id is in about three runs and the layer holds 95 % of them), merged into
    // the whole layer a run at a time or held as `Runs`: the first costs as k times the
    // layer, the second as log2(k) times. Figures are per id of the 2^22; each round's
    // includes one copy of the runs.
    let mut rng = Rng(11);
    let distinct: Vec<u64> = (0..1 << 22).map(|_| rng.next_u64() >> 16).collect();
    for k in [4usize, 16, 64] {
        let runs: Vec<Vec<u64>> = (0..k)
            .map(|_| {
                sort_dedup(
                    (0..3 * (1 << 22) / k)
                        .map(|_| distinct[rng.below(1 << 22) as usize])
                        .collect(),
                )
            })
            .collect();
        time(
            &format!("a layer from {k} runs, a union a run, per id"),
            5,
            1 << 22,
            || runs.clone().into_iter().fold(Vec::new(), union).len(),
        );
        time(
            &format!("a layer from {k} runs, held as Runs, per id"),
            5,
            1 << 22,
            || {
                runs.clone()
                    .into_iter()
                    .collect::<Runs>()
                    .into_layer()
                    .len()
            },
        );
    }
    let ids = sort_dedup(boards(300_000));
    let values: Vec<f64> = (0..ids.len()).map(|i| i as f64).collect();
    let table = ValueTable::new(&ids, &values, 1);
    time("value table get (300k ids)", 9, bs.len(), || {
        bs.iter()
            .filter_map(|&x| table.get(black_box(x)).map(|v| v.get(0)))
            .count()
    });
    // A table as big as the backward's large layers get (perfect hash from 2^22 ids on).
    let mut rng = Rng(7);
    let big = sort_dedup((0..1 << 23).map(|_| rng.next_u64() >> 8).collect());
    let big_values: Vec<f64> = (0..big.len()).map(|i| i as f64).collect();
    let mut perfect = None;
    time(
        "perfect value table build (8 Mi ids), per id",
        9,
        big.len(),
        || {
            perfect = Some(ValueTable::new(&big, &big_values, 1));
        },
    );
    let perfect = perfect.expect("built");
    let probe: Vec<u64> = (0..1 << 20).map(|i| big[(i * 7919) % big.len()]).collect();
    time(
        "perfect value table get, its part by binary search (8 Mi ids)",
        5,
        probe.len(),
        || {
            probe
                .iter()
                .filter_map(|&x| perfect.get(black_box(x)).map(|v| v.get(0)))
                .count()
        },
    );
    // The backward pass's way: blocks of look-ups in streams, each near its stream's last in
    // the layer's order 85 % of the time, else anywhere (as the spawns of a tile on a cell
    // over afterstates in their order: `reports/bench/profile.md`); then the same look-ups
    // (the probes above) in no order.
    let streams = 16;
    let mut rng = Rng(9);
    let mut last = vec![0usize; streams];
    let near: Vec<u64> = (0..1 << 20)
        .map(|i| {
            let s = i % streams;
            last[s] = if rng.below(100) < 85 {
                (last[s] + rng.below(8) as usize).min(big.len() - 1)
            } else {
                rng.below(big.len() as u64) as usize
            };
            big[last[s]]
        })
        .collect();
    for (order, ids) in [("near their stream's last", &near), ("in no order", &probe)] {
        let name = format!("perfect value table, blocks of look-ups {order} (8 Mi ids)");
        time(&name, 5, ids.len(), || blocked(&perfect, ids, streams));
    }
    time("2x4 expectation solve, written", 3, 1, || {
        let dir = std::env::temp_dir().join(format!("age2048-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = SolveConfig {
            shape: Shape::new(2, 4).unwrap(),
            group: Group::Full,
            variants: vec![Variant::expectation()],
            force: true,
            min_free: 0,
            storage: StorageRequest::FULL,
            write_ahead: DEFAULT_WRITE_AHEAD,
            budget: age2048::solver::plan::MemoryBudget::resolve(None, None, 1).unwrap(),
            stream_cap: None,
            trace_memory: false,
            checkpoint_every: None,
        };
        let m = solve(&Store::new(&dir), &cfg, &|_| {}).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        m
    });
}
