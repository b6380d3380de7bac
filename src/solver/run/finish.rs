//! The finish of a solve: every age's record read (over several processes, every process's,
//! merged), the reach pass of a `--reach` policy solve, the values at the starts, then the
//! ages table and one manifest per variant written by the leader, and the work files removed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::forward::Forward;
use super::{checked_record, AgeRecord, Class};
use crate::rules::board;
use crate::rules::{ForwardClass, Game, Group, Kind, Restriction, Symmetry, Variant};
use crate::solver::exchange::Exchange;
use crate::solver::records::FigureSums;
use crate::solver::{Result, SolveError};
use crate::store::parquet::ages_parquet;
use crate::store::work::{BackwardProgress, WorkDir};
use crate::store::{AgeStats, FileEntry, Manifest, Timings, LAYOUT_VERSION};

/// Finishes the solve of `s` after its passes: returns its manifests, one per variant in the
/// order of the pass (every process returns them).
pub(super) fn run(
    s: &Class,
    fwd: &Forward,
    bwd: &BackwardProgress,
    t0: Instant,
) -> Result<Vec<Manifest>> {
    let (store, ex, work) = (s.store, s.ex, &s.work);
    let starts = initial_values(s.game, s.class, work, s.variants, ex)?;
    let records = load_records(s, fwd.min_age, fwd.max_age)?;
    // Over several processes: every process's records, merged age by age into the records
    // of the whole solve (their figures from the exact sums of each share).
    let mut records = merge_records(s, records)?;
    if !ex.is_leader() {
        // The leader writes the manifests; the others read them once it has.
        ex.barrier()?;
        let manifests = (s.variants.iter())
            .map(|v| Ok(store.read_manifest(s.shape(), &v.name())?))
            .collect::<Result<Vec<_>>>()?;
        work.remove()?;
        ex.barrier()?;
        return Ok(manifests);
    }
    // A policy solve kept over the reached states: the reach pass writes its files again.
    for (vi, v) in s.variants.iter().enumerate() {
        if s.storages[vi].reach {
            let mut slots: Vec<crate::solver::reach::AgeSlot<'_>> = records
                .iter_mut()
                .map(|r| crate::solver::reach::AgeSlot {
                    stats: &mut r.stats[vi],
                    files: &mut r.files[vi],
                })
                .collect();
            crate::solver::reach::reach(store, s.game, v, &mut slots)?;
        }
    }
    let mut manifests = Vec::new();
    for (vi, v) in s.variants.iter().enumerate() {
        let timings = Timings {
            forward_s: fwd.progress.seconds,
            backward_s: bwd.seconds,
            total_s: t0.elapsed().as_secs_f64(),
        };
        let manifest = manifest(s, fwd, (vi, v), &records, &starts[vi], timings)?;
        store.write_manifest(s.shape(), &manifest)?;
        manifests.push(manifest);
    }
    ex.barrier()?;
    work.remove()?;
    if !ex.is_single() {
        // Once every process removed its work files, the folders above them.
        ex.barrier()?;
        crate::store::work::WorkDir::remove_empty_parents(
            store.layout(),
            s.shape(),
            &s.class.key(),
        );
    }
    Ok(manifests)
}

/// One record per age of the pass, every one of them there (a missing one is damage).
fn load_records(s: &Class, min_age: u32, max_age: u32) -> Result<Vec<AgeRecord>> {
    let (work, k) = (&s.work, s.k());
    let mut records: Vec<AgeRecord> = Vec::new();
    for age in (min_age..=max_age).step_by(2) {
        records.push(checked_record(work, age, k)?);
    }
    Ok(records)
}

/// The manifest of variant `v` (the `vi`-th of the pass), its ages table written first.
fn manifest(
    s: &Class,
    fwd: &Forward,
    (vi, v): (usize, &Variant),
    records: &[AgeRecord],
    starts: &StartValues,
    timings: Timings,
) -> Result<Manifest> {
    let (store, shape, group) = (s.store, s.shape(), s.group);
    let name = v.name();
    let restriction = v.limits.and_then(|l| Restriction::from_limits(shape, l));
    let ages: Vec<AgeStats> = records
        .iter()
        .map(|r| AgeStats {
            state_sums: Vec::new(),
            ..r.stats[vi].clone()
        })
        .filter(|s| s.n_states > 0 || s.n_afterstates > 0)
        .collect();
    let mut files: Vec<FileEntry> = records
        .iter()
        .flat_map(|r| r.files[vi].iter().cloned())
        .collect();
    let ages_file = store.layout().ages_file(shape, &name);
    let bytes = ages_parquet(
        &ages_file,
        &ages,
        &crate::solver::output::file_meta(shape, v),
    )?;
    files.push(store.write_file(&ages_file, &bytes)?);
    let max_tile = ages
        .iter()
        .filter(|a| a.n_states > 0)
        .map(|a| a.index.base.saturating_sub(1))
        .max()
        .map_or(0, |e| 1u32 << e);
    Ok(Manifest {
        tool: "age2048".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        layout_version: LAYOUT_VERSION,
        board: shape.to_string(),
        variant: name.clone(),
        symmetry: group.name(),
        p4: v.p4,
        discount: v.discount,
        threads: rayon::current_num_threads(),
        n_states: ages.iter().map(|a| a.n_states).sum(),
        n_afterstates: ages.iter().map(|a| a.n_afterstates).sum(),
        n_terminal_states: ages.iter().map(|a| a.n_terminal_states).sum(),
        min_age: fwd.min_age,
        max_age: fwd.max_age,
        max_tile,
        value_two_2_tiles: starts.two_2_tiles,
        value_initial: starts.initial,
        value_initial_distinct: starts.distinct,
        value_empty: starts.empty,
        arithmetic: v.arith.name().into(),
        caps: restriction.as_ref().map(Restriction::caps_text),
        require: restriction.as_ref().and_then(Restriction::require_text),
        timings,
        peak_rss_bytes: crate::solver::memory::peak_rss_bytes(),
        storage: s.storages[vi].clone(),
        parts: s.ex.parts(),
        ages,
        files,
        manifest_sha256: String::new(),
    })
}

/// The records of the solve, age by age, from every process's (every process has a record of
/// every age of the pass): counts summed, figures from the merged exact sums, the largest
/// afterstate value and compaction base the largest of the shares, every share's files, and
/// over several processes the age's look-up entry naming the folder of its parts. In one
/// process the figures too are made again from the exact sums: the floats of a record read
/// back from its JSON may be an ulp off (serde_json's parser is not correctly rounded), its
/// integers are not.
fn merge_records(s: &Class, mine: Vec<AgeRecord>) -> Result<Vec<AgeRecord>> {
    let ex = s.ex;
    let shares: Vec<Vec<AgeRecord>> = ex.gather_values(mine)?;
    let mine = &shares[ex.rank() as usize];
    if shares.iter().any(|s| s.len() != mine.len()) {
        return Err(SolveError::Internal(
            "the processes recorded different ages".into(),
        ));
    }
    let mut out = Vec::with_capacity(mine.len());
    for i in 0..mine.len() {
        let mut rec = AgeRecord::default();
        for (vi, v) in s.variants.iter().enumerate() {
            let parts: Vec<AgeStats> = shares.iter().map(|s| s[i].stats[vi].clone()).collect();
            rec.stats.push(merge_stats(s, vi, v, &parts)?);
            rec.files
                .push(shares.iter().flat_map(|s| s[i].files[vi].clone()).collect());
        }
        out.push(rec);
    }
    Ok(out)
}

/// One age's figures of variant `v` (the `vi`-th of the pass) from every process's share.
fn merge_stats(s: &Class, vi: usize, v: &Variant, parts: &[AgeStats]) -> Result<AgeStats> {
    let age = parts[0].age;
    let mut st = AgeStats {
        age,
        ..Default::default()
    };
    let mut sums = FigureSums::new(v);
    let mut empty_cells = 0u64;
    let mut weighted = (0.0, 0.0);
    for p in parts {
        st.n_states += p.n_states;
        st.n_afterstates += p.n_afterstates;
        if !p.state_sums.is_empty() {
            let share = FigureSums::from_words(&p.state_sums).ok_or_else(|| {
                SolveError::Internal(format!("age {age}: damaged sums from a process"))
            })?;
            sums.merge(&share);
        }
        // The share's empty cells, an integer below 2^51 its mean was divided from:
        // its product with the count rounds back to it.
        if let Some(mean) = p.mean_empty_cells_afterstates {
            empty_cells += (mean * p.n_afterstates as f64).round() as u64;
        }
        st.best_afterstate_value = match (st.best_afterstate_value, p.best_afterstate_value) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let ix = &p.index;
        st.index.base = st.index.base.max(ix.base);
        st.index.file_bytes += ix.file_bytes;
        st.index.state_id_bytes += ix.state_id_bytes;
        st.index.afterstate_id_bytes += ix.afterstate_id_bytes;
        weighted.0 += ix.bits_per_afterstate_id * p.n_afterstates as f64;
        weighted.1 += ix.bits_per_state_id * p.n_states as f64;
        st.policy.file_bytes += p.policy.file_bytes;
        st.policy.keys += p.policy.keys;
        st.policy.shards += p.policy.shards;
    }
    if st.n_afterstates > 0 {
        st.mean_empty_cells_afterstates = Some(empty_cells as f64 / st.n_afterstates as f64);
        st.index.bits_per_afterstate_id = weighted.0 / st.n_afterstates as f64;
    }
    if st.n_states > 0 {
        st.index.bits_per_state_id = weighted.1 / st.n_states as f64;
    }
    // Records without sums: of work files an older build wrote, in one process.
    let exact = parts
        .iter()
        .all(|p| p.n_states == 0 || !p.state_sums.is_empty());
    if exact {
        let figures = sums.figures();
        st.n_terminal_states = figures.n_terminal_states;
        st.mean_state_value = figures.mean_state_value;
        st.mean_action_gap = figures.mean_action_gap;
        st.frac_gap_lt_1 = figures.frac_gap_lt_1;
    } else if parts.len() == 1 {
        let p = &parts[0];
        st.n_terminal_states = p.n_terminal_states;
        st.mean_state_value = p.mean_state_value;
        st.mean_action_gap = p.mean_action_gap;
        st.frac_gap_lt_1 = p.frac_gap_lt_1;
    } else {
        return Err(SolveError::Internal(format!(
            "age {age}: a process recorded no sums of its states' figures"
        )));
    }
    let policy = !s.storages[vi].has_index();
    if parts.len() == 1 {
        st.index = parts[0].index.clone();
        st.policy = parts[0].policy.clone();
    } else {
        let layout = s.store.layout();
        let dir = layout.relative(&layout.lookup_dir(s.shape(), &v.name(), age, policy));
        if policy {
            st.policy.file = dir;
        } else {
            st.index.file = dir;
        }
    }
    Ok(st)
}

/// The values of one variant at the starts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct StartValues {
    /// From two 2-tiles, averaged over their placements (none if a 2 never spawns).
    two_2_tiles: Option<f64>,
    /// Over the real initial distribution (the worst start for `guaranteed-T`).
    initial: Option<f64>,
    /// The unweighted mean over the distinct initial states.
    distinct: Option<f64>,
    /// Slizkov's start: the empty board with the computer to move (a spawn, the player's
    /// move of the one tile, a spawn, then the solved states).
    empty: Option<f64>,
}

/// The value of an afterstate whose children, one per empty cell in order, are worth
/// `(spawning a 2, spawning a 4)` (`None` where that tile never spawns), under `v`'s spawn
/// rule: the backward pass's ([`crate::solver::backward`]), summed in the same order.
fn spawn_value(v: &Variant, kids: &[(Option<f64>, Option<f64>)]) -> f64 {
    if let Some(r) = v.rigor() {
        // Exact integer terms, floored once.
        let sum: u128 = kids.iter().map(|&(v2, v4)| r.terms(v2, v4)).sum();
        return r.grid.mean(sum, kids.len() as u64);
    }
    let (mut x0, mut x1) = match v.kind {
        Kind::Expectation | Kind::Goal(_) => (0.0, 0.0),
        Kind::Optimistic => (f64::NEG_INFINITY, f64::NEG_INFINITY),
        Kind::Pessimistic | Kind::Guaranteed(_) => (f64::INFINITY, f64::INFINITY),
    };
    for &(v2, v4) in kids {
        match v.kind {
            Kind::Expectation | Kind::Goal(_) => {
                if let Some(v2) = v2 {
                    x0 += v.p2() * v2;
                }
                if let Some(v4) = v4 {
                    x0 += v.p4 * v4;
                }
            }
            Kind::Optimistic => {
                v2.inspect(|&c| x0 = x0.max(c));
                v4.inspect(|&c| x1 = x1.max(c));
            }
            Kind::Pessimistic => {
                v2.inspect(|&c| x0 = x0.min(c));
                v4.inspect(|&c| x1 = x1.min(c));
            }
            Kind::Guaranteed(_) => {
                for c in [v2, v4].into_iter().flatten() {
                    x0 = x0.min(c);
                }
            }
        }
    }
    match v.kind {
        Kind::Expectation | Kind::Goal(_) => x0 / kids.len() as f64,
        Kind::Optimistic | Kind::Pessimistic => {
            let mut s = 0.0;
            if v.p4 < 1.0 {
                s += v.p2() * x0;
            }
            if v.p4 > 0.0 {
                s += v.p4 * x1;
            }
            s
        }
        Kind::Guaranteed(_) => x0,
    }
}

/// The value of board `a` before a spawn whose children are worth `f` (`None` if one is not
/// known), by `v`'s spawn rule: the initial distribution is two of these from the empty board.
fn two_tile_start(game: &Game, v: &Variant, f: &dyn Fn(u64) -> Option<f64>, a: u64) -> Option<f64> {
    let mut kids = Vec::new();
    for i in board::empty_cells(a, game.cells()) {
        let tile = |e: u8, can: bool| -> Option<Option<f64>> {
            if can {
                f(board::place(a, i, e)).map(Some)
            } else {
                Some(None)
            }
        };
        kids.push((tile(1, v.p4 < 1.0)?, tile(2, v.p4 > 0.0)?));
    }
    (!kids.is_empty()).then(|| spawn_value(v, &kids))
}

/// The value of the empty board with the computer to move, given the values of the two-tile
/// states (`two`): its spawn makes a one-tile state, whose player moves the tile (the moves
/// the class allows; none is a loss), then a spawn makes a two-tile state.
fn empty_start_value(
    game: &Game,
    class: &ForwardClass,
    v: &Variant,
    two: &dyn Fn(u64) -> Option<f64>,
) -> Option<f64> {
    let cells = game.cells();
    let spawns = |a: u64, f: &dyn Fn(u64) -> Option<f64>| -> Option<f64> {
        let mut kids = Vec::new();
        for i in board::empty_cells(a, cells) {
            let tile = |e: u8, can: bool| can.then(|| f(board::place(a, i, e))).flatten();
            let (v2, v4) = (tile(1, v.p4 < 1.0), tile(2, v.p4 > 0.0));
            if (v.p4 < 1.0 && v2.is_none()) || (v.p4 > 0.0 && v4.is_none()) {
                return None;
            }
            kids.push((v2, v4));
        }
        (!kids.is_empty()).then(|| spawn_value(v, &kids))
    };
    let after = |a: u64| -> Option<f64> {
        if class.absorbs(a) {
            Some(1.0)
        } else {
            spawns(a, two)
        }
    };
    let one_tile = |s: u64| -> Option<f64> {
        if class.absorbs(s) {
            return Some(1.0);
        }
        let mut best: Option<f64> = None;
        for (a, r) in class.moves(&game.rules, s).into_iter().flatten() {
            let q = v.q(r, after(a)?);
            best = Some(best.map_or(q, |b: f64| b.max(q)));
        }
        Some(best.unwrap_or(0.0))
    };
    spawns(0, &one_tile)
}

/// Per variant, its values at the starts, from the state values of ages 4, 6 and 8 (over
/// several processes, every process's share of them).
fn initial_values(
    game: &Game,
    class: &ForwardClass,
    work: &WorkDir,
    variants: &[Variant],
    ex: &Exchange,
) -> Result<Vec<StartValues>> {
    let k = variants.len();
    let mut levels: BTreeMap<u32, (Vec<u64>, Vec<f64>)> = BTreeMap::new();
    for age in [4u32, 6, 8] {
        let ids = work.load_layers(age)?.0;
        let vals = work.load_values(age)?.unwrap_or_default();
        if vals.len() != ids.len() * k {
            return Err(crate::store::StoreError::corrupt(
                work.values_path_of(age),
                "values do not match the layer",
            )
            .into());
        }
        levels.insert(age, ex.gather_layer(ids, vals, k)?);
    }
    let value = |b: u64, vi: usize| -> Option<f64> {
        let (ids, vals) = levels.get(&board::age(b))?;
        let r = ids.binary_search(&game.canon(b)).ok()?;
        Some(vals[r * k + vi])
    };
    // Distinct initial states: one board per orbit of the full group, whatever group the
    // solve identifies boards by, so that the mean does not depend on `--symmetry` (under a
    // restriction, of the group that keeps it: the others change the values).
    let full = Symmetry::new(
        game.shape(),
        if class.limits.is_some() {
            game.sym.group()
        } else {
            Group::Full
        },
    );
    let distinct_starts = |p4: f64| -> Vec<u64> {
        let set: BTreeSet<u64> = game
            .starts(p4)
            .into_iter()
            .map(|(b, _)| full.canon(b))
            .collect();
        set.into_iter().collect()
    };
    Ok(variants
        .iter()
        .enumerate()
        .map(|(vi, v)| {
            // Probabilities are recorded in [0, 1], as they are stored.
            let clamp = |x: f64| if v.scored() { x } else { x.clamp(0.0, 1.0) };
            let fold = |starts: Vec<(u64, f64)>| -> Option<f64> {
                if starts.is_empty() {
                    return None;
                }
                let vals: Option<Vec<(f64, f64)>> = starts
                    .iter()
                    .map(|&(b, p)| value(b, vi).map(|x| (x, p)))
                    .collect();
                let vals = vals?;
                let x = match v.kind {
                    Kind::Guaranteed(_) => vals.iter().map(|x| x.0).fold(f64::INFINITY, f64::min),
                    _ => vals.iter().map(|(x, p)| x * p).sum(),
                };
                Some(clamp(x))
            };
            let distinct_vals = || -> Option<Vec<f64>> {
                let boards = distinct_starts(v.p4);
                let vals: Option<Vec<f64>> = boards.iter().map(|&b| value(b, vi)).collect();
                vals.filter(|x| !x.is_empty())
            };
            let empty = empty_start_value(game, class, v, &|b| value(b, vi)).map(clamp);
            if v.rigor().is_some() {
                // Rigorous: two spawns on the empty board, each floored; the mean floored.
                let two_spawns = |p4: f64| {
                    let plain = Variant { p4, ..*v };
                    let one_tile = |b: u64| two_tile_start(game, &plain, &|c| value(c, vi), b);
                    two_tile_start(game, &plain, &one_tile, 0)
                };
                let grid = v.rigor().map(|r| r.grid);
                return StartValues {
                    two_2_tiles: if v.p4 < 1.0 { two_spawns(0.0) } else { None },
                    initial: two_spawns(v.p4),
                    distinct: distinct_vals().zip(grid).map(|(x, g)| {
                        let sum: u128 = x.iter().map(|&y| u128::from(g.code(y))).sum();
                        g.mean(sum << g.bits(), x.len() as u64)
                    }),
                    empty,
                };
            }
            let two = if v.p4 < 1.0 {
                fold(game.starts(0.0))
            } else {
                None
            };
            // Summed in the order of the boards' ids: the same bits on every run.
            let distinct = distinct_vals().map(|x| clamp(x.iter().sum::<f64>() / x.len() as f64));
            StartValues {
                two_2_tiles: two,
                initial: fold(game.starts(v.p4)),
                distinct,
                empty,
            }
        })
        .collect())
}
