//! Solve: runs the forward and backward passes for a board and a set of variants, and records
//! what they find through the store, resumably.
//!
//! Variants are grouped by [`ForwardClass`]; each class gets one forward pass and one backward
//! pass that values all its variants together. Progress is recorded after every finished age
//! (forward: the layers; backward: the outputs, then the state values the next age needs), so a
//! killed solve started again picks up after its last finished age and writes the same bytes.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::backward::{AgeOutput, Backward, Level, NO_MOVE};
use crate::board::{self, Dir, Shape};
use crate::error::{Error, Result};
use crate::forward::{self, AgeLayer, Start};
use crate::game::Game;
use crate::index::{encode_age_index, AgeIndex, AgeIndexMeta};
use crate::store::{
    self, AgeStats, FileEntry, IndexEntry, Manifest, StatesColumns, Store, Timings,
};
use crate::symmetry::Group;
use crate::variant::{ForwardClass, Kind, Variant};

/// What to solve.
#[derive(Clone, Debug)]
pub struct SolveConfig {
    pub shape: Shape,
    pub group: Group,
    pub variants: Vec<Variant>,
    pub data: PathBuf,
    /// Solve again even if the data directory already holds a complete solve.
    pub force: bool,
}

/// Progress events, for a progress bar.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// The forward pass finished an age.
    Forward {
        age: u32,
        states: usize,
        afterstates: usize,
    },
    /// The backward pass starts at `top` and will go down to `min_age`.
    BackwardStart { top: u32, min_age: u32 },
    /// The backward pass finished an age.
    Backward { age: u32 },
    /// Resumed after a finished age.
    Resumed { pass: &'static str, age: u32 },
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct WorkMeta {
    version: String,
    board: String,
    symmetry: String,
    class: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ForwardProgress {
    done_age: Option<u32>,
    min_age: Option<u32>,
    complete: bool,
    seconds: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct BackwardProgress {
    variants: Vec<String>,
    top: u32,
    done_age: Option<u32>,
    seconds: f64,
}

/// Test hook: `AGE2048_ABORT_AFTER_AGES=n` aborts the process (as a kill would) once `n` ages
/// have been finished by this run, so tests can resume from any point deterministically.
struct AbortHook {
    limit: Option<u64>,
    done: std::sync::atomic::AtomicU64,
}

impl AbortHook {
    fn from_env() -> AbortHook {
        AbortHook {
            limit: std::env::var("AGE2048_ABORT_AFTER_AGES")
                .ok()
                .and_then(|s| s.parse().ok()),
            done: Default::default(),
        }
    }
    fn finished_age(&self) {
        let done = self.done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if self.limit.is_some_and(|l| done >= l) {
            std::process::abort();
        }
    }
}

/// Seconds spent in each part of writing (summed over threads), printed with
/// `AGE2048_TIMINGS=1` to see where a solve's time goes.
static WRITE_NS: [std::sync::atomic::AtomicU64; 4] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 4];
const WRITE_PARTS: [&str; 4] = [
    "index",
    "states parquet",
    "afterstates parquet",
    "digest+files",
];

fn timed<T>(part: usize, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    WRITE_NS[part].fetch_add(
        t.elapsed().as_nanos() as u64,
        std::sync::atomic::Ordering::Relaxed,
    );
    r
}

/// One finished age of the backward pass, owned, on its way to the writer thread.
struct AgeJob {
    age: u32,
    states: Vec<u64>,
    afterstates: Vec<u64>,
    state_recs: Vec<crate::backward::StateRec>,
    after_values: Vec<f64>,
}

/// Solves every variant of `cfg`; returns one manifest per variant, in the order given.
pub fn solve(cfg: &SolveConfig, on_event: &(dyn Fn(Event) + Sync)) -> Result<Vec<Manifest>> {
    let store = Store::new(&cfg.data);
    let game = Game::new(cfg.shape, cfg.group);
    let mut classes: BTreeMap<ForwardClass, Vec<Variant>> = BTreeMap::new();
    for v in &cfg.variants {
        classes.entry(v.forward_class()).or_default().push(*v);
    }
    let mut manifests = Vec::new();
    for (class, variants) in classes {
        if !cfg.force {
            if let Some(done) = already_solved(&store, cfg.shape, cfg.group, &variants) {
                manifests.extend(done);
                continue;
            }
        }
        manifests.extend(solve_class(
            &store, &game, cfg.group, &class, &variants, on_event,
        )?);
    }
    let order = |m: &Manifest| cfg.variants.iter().position(|v| v.name() == m.variant);
    manifests.sort_by_key(order);
    Ok(manifests)
}

/// The manifests of a finished solve of these variants (same group and layout, every listed
/// file present with its size), so that solving again is a no-op; `None` otherwise.
fn already_solved(
    store: &Store,
    shape: Shape,
    group: Group,
    variants: &[Variant],
) -> Option<Vec<Manifest>> {
    let mut out = Vec::new();
    for v in variants {
        let m = store.read_manifest(shape, &v.name()).ok()?;
        if m.symmetry != group.name() || m.layout_version != store::LAYOUT_VERSION {
            return None;
        }
        let complete = m
            .files
            .iter()
            .all(|f| fs::metadata(store.root().join(&f.path)).is_ok_and(|md| md.len() == f.bytes));
        if !complete {
            return None;
        }
        out.push(m);
    }
    Some(out)
}

fn layer_path(work: &Path, age: u32) -> PathBuf {
    work.join("layers").join(format!("age={age}.ids"))
}

fn values_path(work: &Path, age: u32) -> PathBuf {
    work.join("values").join(format!("age={age}.f64"))
}

fn stats_path(work: &Path, age: u32) -> PathBuf {
    work.join("stats").join(format!("age={age}.json"))
}

/// One work file per age holds both layers: `[n_states, states…, afterstates…]`.
fn save_layers(work: &Path, layer: &AgeLayer) -> Result<()> {
    let mut words = Vec::with_capacity(1 + layer.states.len() + layer.afterstates.len());
    words.push(layer.states.len() as u64);
    words.extend_from_slice(&layer.states);
    words.extend_from_slice(&layer.afterstates);
    store::write_words(&layer_path(work, layer.age), &words)
}

/// The states and afterstates of an age (empty if the forward pass found none).
fn load_layers(work: &Path, age: u32) -> Result<(Vec<u64>, Vec<u64>)> {
    let path = layer_path(work, age);
    let Some(mut words) = store::read_words(&path)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let n = words.first().copied().unwrap_or(u64::MAX);
    if n >= words.len() as u64 {
        return Err(Error::Corrupt {
            path,
            what: "layer counts do not fit the file".into(),
        });
    }
    let afterstates = words.split_off(1 + n as usize);
    words.remove(0);
    Ok((words, afterstates))
}

/// Ages `age=<n>.<ext>` present in a work directory, ascending.
fn ages_in(dir: &Path) -> Result<Vec<u32>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut ages = Vec::new();
    for entry in rd {
        let name = entry.map_err(|e| Error::io(dir, e))?.file_name();
        let name = name.to_string_lossy();
        // `.tmp` files are unfinished writes: not an age.
        if let Some(age) = name
            .strip_prefix("age=")
            .and_then(|r| r.split_once('.'))
            .filter(|(_, ext)| !ext.ends_with("tmp"))
            .and_then(|(a, _)| a.parse().ok())
        {
            ages.push(age);
        }
    }
    ages.sort_unstable();
    Ok(ages)
}

fn solve_class(
    store: &Store,
    game: &Game,
    group: Group,
    class: &ForwardClass,
    variants: &[Variant],
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Vec<Manifest>> {
    let t0 = Instant::now();
    let hook = AbortHook::from_env();
    let shape = game.shape();
    let work = store.work_dir(shape, &class.key());
    let meta = WorkMeta {
        version: env!("CARGO_PKG_VERSION").to_string(),
        board: shape.to_string(),
        symmetry: group.name().to_string(),
        class: class.key(),
    };
    let meta_path = work.join("meta.json");
    if store::read_json::<WorkMeta>(&meta_path)?.as_ref() != Some(&meta) {
        // Work files of another group or tool version: not ours to resume from.
        if work.exists() {
            fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))?;
        }
        store::write_json(&meta_path, &meta)?;
    }

    // ---- forward: one layer file per finished age; `forward.json` once the pass is complete
    let fwd_path = work.join("forward.json");
    let mut fwd: ForwardProgress = store::read_json(&fwd_path)?.unwrap_or_default();
    if !fwd.complete {
        let t = Instant::now();
        let done = ages_in(&work.join("layers"))?;
        fwd.min_age = done.first().copied();
        let start = match done.last() {
            Some(&age) => {
                on_event(Event::Resumed {
                    pass: "forward",
                    age,
                });
                Start::After {
                    age,
                    afterstates: load_layers(&work, age)?.1,
                    afterstates_prev: load_layers(&work, age.saturating_sub(2))?.1,
                }
            }
            None => Start::Fresh,
        };
        let last = forward::run(game, class, start, |layer: AgeLayer| {
            save_layers(&work, &layer)?;
            fwd.min_age = Some(fwd.min_age.map_or(layer.age, |m| m.min(layer.age)));
            on_event(Event::Forward {
                age: layer.age,
                states: layer.states.len(),
                afterstates: layer.afterstates.len(),
            });
            hook.finished_age();
            Ok(())
        })?;
        fwd.done_age = Some(last);
        fwd.complete = true;
        fwd.seconds = t.elapsed().as_secs_f64();
        store::write_json(&fwd_path, &fwd)?;
    }
    let (Some(max_age), Some(min_age)) = (fwd.done_age, fwd.min_age) else {
        return Err(Error::Invalid(format!("board {shape}: no reachable state")));
    };

    // ---- backward
    let names: Vec<String> = variants.iter().map(Variant::name).collect();
    let bwd_path = work.join("backward.json");
    let mut bwd: BackwardProgress = store::read_json(&bwd_path)?.unwrap_or_default();
    // The backward pass's progress is the youngest age with a stats file (written last).
    bwd.done_age = ages_in(&work.join("stats"))?.first().copied();
    if bwd.variants != names || bwd.top != max_age {
        bwd = BackwardProgress {
            variants: names.clone(),
            top: max_age,
            done_age: None,
            seconds: 0.0,
        };
        store::write_json(&bwd_path, &bwd)?;
        for dir in ["values", "stats"] {
            let d = work.join(dir);
            if d.exists() {
                fs::remove_dir_all(&d).map_err(|e| Error::io(&d, e))?;
            }
        }
        for n in &names {
            store.clear_variant(shape, n)?;
        }
    }
    let k = variants.len();
    let backward = Backward::new(game, variants)?;
    if bwd.done_age != Some(min_age) {
        let t = Instant::now();
        let base_seconds = bwd.seconds;
        let (top, next) = match bwd.done_age {
            Some(done) => {
                on_event(Event::Resumed {
                    pass: "backward",
                    age: done,
                });
                let level = |age: u32| -> Result<Level> {
                    let ids = load_layers(&work, age)?.0;
                    let values: Vec<f64> = store::read_words(&values_path(&work, age))?
                        .unwrap_or_default()
                        .into_iter()
                        .map(f64::from_bits)
                        .collect();
                    if values.len() != ids.len() * k {
                        return Err(Error::Corrupt {
                            path: values_path(&work, age),
                            what: format!(
                                "{} values for {} states × {k} variants",
                                values.len(),
                                ids.len()
                            ),
                        });
                    }
                    Ok(Level::new(age, ids, values))
                };
                (done - 2, Some((level(done)?, level(done + 2)?)))
            }
            None => (max_age, None),
        };
        on_event(Event::BackwardStart { top, min_age });
        // Writing an age (Parquet, index, digests) runs on its own thread while the pass
        // values the next age; the progress record is written only after the age's files.
        let (tx, rx) = std::sync::mpsc::sync_channel::<AgeJob>(2);
        let bwd = &mut bwd;
        let (run, written) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| -> Result<f64> {
                let mut write_s = 0.0;
                for job in rx {
                    let tw = Instant::now();
                    let out = AgeOutput {
                        age: job.age,
                        states: &job.states,
                        afterstates: &job.afterstates,
                        state_recs: &job.state_recs,
                        after_values: &job.after_values,
                    };
                    let stats: Vec<AgeStats> = variants
                        .par_iter()
                        .enumerate()
                        .map(|(vi, v)| write_age(store, game, &out, k, vi, v))
                        .collect::<Result<_>>()?;
                    let bits: Vec<u64> = job.state_recs.iter().map(|r| r.value.to_bits()).collect();
                    store::write_words(&values_path(&work, job.age), &bits)?;
                    // Last: the stats file marks the age as finished.
                    store::write_json(&stats_path(&work, job.age), &stats)?;
                    bwd.done_age = Some(job.age);
                    bwd.seconds = base_seconds + t.elapsed().as_secs_f64();
                    // Resuming needs the values of the last two finished ages; the starting
                    // ages (≤ 8) are kept for the values at the initial states.
                    let old = values_path(&work, job.age + 4);
                    if job.age + 4 > 8 && old.exists() {
                        fs::remove_file(&old).map_err(|e| Error::io(&old, e))?;
                    }
                    write_s += tw.elapsed().as_secs_f64();
                    on_event(Event::Backward { age: job.age });
                    hook.finished_age();
                }
                Ok(write_s)
            });
            let run = backward.run(
                top,
                min_age,
                next,
                |age| load_layers(&work, age),
                |out: &AgeOutput, _level: &Level| {
                    let job = AgeJob {
                        age: out.age,
                        states: out.states.to_vec(),
                        afterstates: out.afterstates.to_vec(),
                        state_recs: out.state_recs.to_vec(),
                        after_values: out.after_values.to_vec(),
                    };
                    tx.send(job)
                        .map_err(|_| Error::Invalid("the writer stopped".into()))
                },
            );
            drop(tx);
            let written = writer
                .join()
                .unwrap_or_else(|_| Err(Error::Invalid("the writer thread panicked".into())));
            (run, written)
        });
        // The writer's own error says more than the pass's "the writer stopped".
        let write_s = written?;
        run?;
        if std::env::var_os("AGE2048_TIMINGS").is_some() {
            eprintln!(
                "backward: {:.2} s, writing {write_s:.2} s (overlapped)",
                t.elapsed().as_secs_f64()
            );
            for (name, ns) in WRITE_PARTS.iter().zip(&WRITE_NS) {
                let s = ns.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e9;
                eprintln!("  {name}: {s:.2} s");
            }
        }
    }

    // ---- finish: ages table, manifests, then drop the work files
    let starts = initial_values(game, &work, variants)?;
    let mut per_age: Vec<Vec<AgeStats>> = Vec::new();
    for age in ages_in(&work.join("stats"))? {
        let stats: Vec<AgeStats> = store::read_json(&stats_path(&work, age))?.unwrap_or_default();
        if stats.len() != k {
            return Err(Error::Corrupt {
                path: stats_path(&work, age),
                what: format!("{} variants recorded, {k} expected", stats.len()),
            });
        }
        per_age.push(stats);
    }
    let mut manifests = Vec::new();
    for (vi, v) in variants.iter().enumerate() {
        let name = v.name();
        let ages: Vec<AgeStats> = per_age
            .iter()
            .map(|s| s[vi].clone())
            .filter(|s| s.n_states > 0 || s.n_afterstates > 0)
            .collect();
        let ages_file = store.ages_file(shape, &name);
        let bytes = store::ages_parquet(&ages_file, &ages)?;
        let sha = store::atomic_write(&ages_file, &bytes)?;
        let mut files: Vec<FileEntry> = ages.iter().flat_map(|a| a.files.clone()).collect();
        files.push(FileEntry {
            path: store.relative(&ages_file),
            bytes: bytes.len() as u64,
            sha256: sha,
        });
        let max_tile = ages
            .iter()
            .filter(|a| a.n_states > 0)
            .map(|a| a.index.base.saturating_sub(1))
            .max()
            .map_or(0, |e| 1u32 << e);
        let manifest = Manifest {
            tool: "age2048".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            layout_version: store::LAYOUT_VERSION,
            board: shape.to_string(),
            variant: name.clone(),
            symmetry: group.name().into(),
            p4: v.p4,
            threads: rayon::current_num_threads(),
            n_states: ages.iter().map(|a| a.n_states).sum(),
            n_afterstates: ages.iter().map(|a| a.n_afterstates).sum(),
            n_terminal_states: ages.iter().map(|a| a.n_terminal_states).sum(),
            min_age,
            max_age,
            max_tile,
            value_two_2_tiles: starts[vi].0,
            value_initial: starts[vi].1,
            timings: Timings {
                forward_s: fwd.seconds,
                backward_s: bwd.seconds,
                total_s: t0.elapsed().as_secs_f64(),
            },
            peak_rss_bytes: peak_rss_bytes(),
            ages,
            files,
        };
        store::write_json(&store.manifest_file(shape, &name), &manifest)?;
        manifests.push(manifest);
    }
    fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    // Drop `.work/board=B` and `.work` too once empty (remove_dir refuses non-empty ones).
    for dir in work.ancestors().skip(1).take(2) {
        let _ = fs::remove_dir(dir);
    }
    Ok(manifests)
}

/// Per variant: (value from two 2-tiles, value over the real initial distribution).
fn initial_values(
    game: &Game,
    work: &std::path::Path,
    variants: &[Variant],
) -> Result<Vec<(Option<f64>, Option<f64>)>> {
    let k = variants.len();
    let mut levels: BTreeMap<u32, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for age in [4u32, 6, 8] {
        let ids = load_layers(work, age)?.0;
        let vals = store::read_words(&values_path(work, age))?.unwrap_or_default();
        if vals.len() != ids.len() * k {
            return Err(Error::Corrupt {
                path: values_path(work, age),
                what: "values do not match the layer".into(),
            });
        }
        levels.insert(age, (ids, vals));
    }
    let value = |b: u64, vi: usize| -> Option<f64> {
        let (ids, vals) = levels.get(&board::age(b))?;
        let r = ids.binary_search(&game.canon(b)).ok()?;
        Some(f64::from_bits(vals[r * k + vi]))
    };
    Ok(variants
        .iter()
        .enumerate()
        .map(|(vi, v)| {
            let fold = |starts: Vec<(u64, f64)>| -> Option<f64> {
                if starts.is_empty() {
                    return None;
                }
                let vals: Option<Vec<(f64, f64)>> = starts
                    .iter()
                    .map(|&(b, p)| value(b, vi).map(|x| (x, p)))
                    .collect();
                let vals = vals?;
                Some(match v.kind {
                    Kind::Guaranteed(_) => vals.iter().map(|x| x.0).fold(f64::INFINITY, f64::min),
                    _ => vals.iter().map(|(x, p)| x * p).sum(),
                })
            };
            let two = if v.p4 < 1.0 {
                fold(game.starts(0.0))
            } else {
                None
            };
            (two, fold(game.starts(v.p4)))
        })
        .collect())
}

/// Writes one age of one variant: states and afterstates Parquet, the age index. Returns the
/// age's figures with the files' digests.
fn write_age(
    store: &Store,
    game: &Game,
    out: &AgeOutput,
    k: usize,
    vi: usize,
    v: &Variant,
) -> Result<AgeStats> {
    let shape = game.shape();
    let cells = game.cells();
    let name = v.name();
    let age = out.age;
    let recs: Vec<_> = out.state_recs.iter().skip(vi).step_by(k).copied().collect();
    let after_values: Vec<f64> = out
        .after_values
        .iter()
        .skip(vi)
        .step_by(k)
        .copied()
        .collect();
    let after_empty: Vec<u8> = out
        .afterstates
        .iter()
        .map(|&a| board::count_empty(a, cells) as u8)
        .collect();

    let mut st = AgeStats {
        age,
        n_states: out.states.len() as u64,
        n_afterstates: out.afterstates.len() as u64,
        ..Default::default()
    };
    if out.states.is_empty() && out.afterstates.is_empty() {
        return Ok(st); // an age no board has: nothing to write
    }
    st.n_terminal_states = recs.iter().filter(|r| r.terminal).count() as u64;
    if !after_empty.is_empty() {
        st.mean_empty_cells_afterstates =
            Some(after_empty.iter().map(|&e| f64::from(e)).sum::<f64>() / after_empty.len() as f64);
        st.best_afterstate_value = after_values.iter().copied().reduce(f64::max);
    }
    if !recs.is_empty() {
        st.mean_state_value = Some(recs.iter().map(|r| r.value).sum::<f64>() / recs.len() as f64);
    }
    let gaps: Vec<f64> = recs
        .iter()
        .filter(|r| r.moves >= 2)
        .map(|r| r.gap)
        .collect();
    if !gaps.is_empty() {
        st.mean_action_gap = Some(gaps.iter().sum::<f64>() / gaps.len() as f64);
        st.frac_gap_lt_1 =
            Some(gaps.iter().filter(|&&g| g < 1.0).count() as f64 / gaps.len() as f64);
    }

    let index_path = store.index_file(shape, &name, age);
    let states_path = store.states_file(shape, &name, age);
    let after_path = store.afterstates_file(shape, &name, age);
    let (index, (states_pq, after_pq)) = rayon::join(
        || -> Result<(Vec<u8>, IndexEntry)> {
            timed(0, || {
                let meta = AgeIndexMeta {
                    rows: shape.rows() as u8,
                    cols: shape.cols() as u8,
                    age,
                    variant: name.clone(),
                };
                let bytes = encode_age_index(&meta, out.states, out.afterstates, &after_values)
                    .map_err(|e| Error::Invalid(format!("{}: {e}", index_path.display())))?;
                let s = AgeIndex::from_bytes(&bytes[..])
                    .map_err(|e| Error::Corrupt {
                        path: index_path.clone(),
                        what: e.to_string(),
                    })?
                    .stats();
                let entry = IndexEntry {
                    file: store.relative(&index_path),
                    file_bytes: s.file_bytes,
                    base: u32::from(s.base),
                    state_id_bytes: s.state_id_bytes,
                    afterstate_id_bytes: s.afterstate_id_bytes,
                    bits_per_afterstate_id: s.bits_per_afterstate_id,
                    bits_per_state_id: s.bits_per_state_id,
                };
                Ok((bytes, entry))
            })
        },
        || {
            rayon::join(
                || {
                    timed(1, || {
                        store::states_parquet(
                            &states_path,
                            StatesColumns {
                                id: out.states.to_vec(),
                                value: recs.iter().map(|r| r.value).collect(),
                                terminal: recs.iter().map(|r| r.terminal).collect(),
                                moves: recs.iter().map(|r| r.moves).collect(),
                                best: recs
                                    .iter()
                                    .map(|r| {
                                        (r.best != NO_MOVE)
                                            .then(|| ["L", "R", "U", "D"][r.best as usize])
                                    })
                                    .collect(),
                                gap: recs
                                    .iter()
                                    .map(|r| (r.moves >= 2).then_some(r.gap))
                                    .collect(),
                                empty: out
                                    .states
                                    .iter()
                                    .map(|&s| board::count_empty(s, cells) as u8)
                                    .collect(),
                            },
                        )
                    })
                },
                || {
                    timed(2, || {
                        store::afterstates_parquet(
                            &after_path,
                            out.afterstates.to_vec(),
                            after_values.clone(),
                            after_empty.clone(),
                        )
                    })
                },
            )
        },
    );
    let (index_bytes, index_entry) = index?;
    let states_pq = states_pq?;
    let after_pq = after_pq?;
    for (path, bytes) in [
        (&states_path, &states_pq),
        (&after_path, &after_pq),
        (&index_path, &index_bytes),
    ] {
        let sha = timed(3, || store::atomic_write(path, bytes))?;
        st.files.push(FileEntry {
            path: store.relative(path),
            bytes: bytes.len() as u64,
            sha256: sha,
        });
    }
    st.index = index_entry;
    Ok(st)
}

/// Peak resident set size of this process (VmHWM), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Unused-move marker check for the `best` letters.
pub fn dir_letter(i: u8) -> Option<char> {
    (i != NO_MOVE).then(|| Dir::ALL[i as usize].letter())
}
