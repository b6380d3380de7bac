//! One finished age as files: the `states` and `afterstates` Parquet parts (in the compact
//! layout only at the ages it keeps in Parquet) and the age index of each variant, with the
//! age's figures (a row of the `ages` table, computed from every board whatever the layout).
//! The files are written in a batch: the caller syncs before it records the age as done.

use super::backward::{AgeOutput, StateRec, NO_MOVE};
use super::{Result, SolveError};
use crate::index::{encode_age_index_with_stats, AgeIndexMeta, IndexOptions, ValueCoding};
use crate::rules::board;
use crate::rules::{Game, Variant};
use crate::store::parquet::{self, StatesColumns};
use crate::store::{AgeStats, FileEntry, IndexEntry, Storage, Store};

/// What the index files of `storage` hold.
pub fn index_options(storage: &Storage) -> IndexOptions {
    IndexOptions {
        state_ids: storage.state_ids(),
        values: match storage.value_fraction_bits {
            Some(fraction_bits) => ValueCoding::Fixed { fraction_bits },
            None => ValueCoding::F64,
        },
    }
}

/// A finished age on its way to the writer: the pass's output and, at an age no variant
/// keeps in Parquet, its state figures and values in place of the 24-byte records (which only
/// the `states` Parquet needs), so that an age waiting for the writer holds less.
pub struct Job {
    pub out: AgeOutput,
    pub summary: Option<Summary>,
}

/// What the writer needs of an age's state records when it writes no `states` Parquet.
pub struct Summary {
    /// Per variant, in the order of the pass.
    pub figures: Vec<StateFigures>,
    /// `values[i * k + v]`, as the pass found them (unclamped).
    pub values: Vec<f64>,
}

/// The figures of one age's states for one variant (part of its row of the `ages` table).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StateFigures {
    pub n_terminal_states: u64,
    pub mean_state_value: Option<f64>,
    pub mean_action_gap: Option<f64>,
    pub frac_gap_lt_1: Option<f64>,
}

/// Probabilities are stored in [0, 1], whatever the rounding of the sums behind them (the pass
/// itself keeps the unrounded sums).
fn clamp_for(v: &Variant) -> impl Fn(f64) -> f64 {
    let scored = v.scored();
    move |x: f64| if scored { x } else { x.clamp(0.0, 1.0) }
}

/// The state figures of variant `vi` of `k`, from `recs[i * k + vi]` (`n` states), summed in
/// row order (the same bits on every run).
pub fn state_figures(
    recs: &[StateRec],
    n: usize,
    k: usize,
    vi: usize,
    v: &Variant,
) -> StateFigures {
    let clamp = clamp_for(v);
    let recs = || (0..n).map(|i| recs[i * k + vi]);
    let mut f = StateFigures {
        n_terminal_states: recs().filter(|r| r.terminal).count() as u64,
        ..Default::default()
    };
    if n > 0 {
        f.mean_state_value = Some(recs().map(|r| clamp(r.value)).sum::<f64>() / n as f64);
    }
    let gaps = || recs().filter(|r| r.moves >= 2).map(|r| r.gap);
    let n_gaps = gaps().count();
    if n_gaps > 0 {
        f.mean_action_gap = Some(gaps().sum::<f64>() / n_gaps as f64);
        f.frac_gap_lt_1 = Some(gaps().filter(|&g| g < 1.0).count() as f64 / n_gaps as f64);
    }
    f
}

impl Job {
    /// The job of `out`: summarised if no variant keeps its age in Parquet.
    pub fn new(mut out: AgeOutput, variants: &[Variant], storages: &[Storage]) -> Job {
        if storages.iter().any(|s| s.parquet_at(out.age)) {
            return Job { out, summary: None };
        }
        let (n, k) = (out.states.len(), variants.len());
        let figures = variants
            .iter()
            .enumerate()
            .map(|(vi, v)| state_figures(&out.state_recs, n, k, vi, v))
            .collect();
        let values = out.state_recs.iter().map(|r| r.value).collect();
        out.state_recs = Vec::new();
        Job {
            out,
            summary: Some(Summary { figures, values }),
        }
    }

    /// The bytes the job holds.
    pub fn bytes(&self) -> usize {
        self.out.bytes()
            + self
                .summary
                .as_ref()
                .map_or(0, |s| s.values.len() * std::mem::size_of::<f64>())
    }

    /// The state values, `[i * k + v]` (taken out of a summary).
    pub fn take_state_values(&mut self) -> Vec<f64> {
        match &mut self.summary {
            Some(s) => std::mem::take(&mut s.values),
            None => self.out.state_recs.iter().map(|r| r.value).collect(),
        }
    }
}

/// Writes one age of one variant: states and afterstates Parquet (if `storage` keeps this age
/// in Parquet), the age index. Returns the age's figures with the files' digests. The state
/// figures come from `job`'s summary, or from its records.
pub fn write_age(
    store: &Store,
    game: &Game,
    job: &Job,
    k: usize,
    vi: usize,
    v: &Variant,
    storage: &Storage,
) -> Result<(AgeStats, Vec<FileEntry>)> {
    let out = &job.out;
    let shape = game.shape();
    let cells = game.cells();
    let name = v.name();
    let age = out.age;
    let clamp = clamp_for(v);
    // The records of this variant, read in place (a copy would hold 24 bytes a state).
    let n = out.states.len();
    let rec = |i: usize| {
        let r = out.state_recs[i * k + vi];
        StateRec {
            value: clamp(r.value),
            ..r
        }
    };
    let after_values: Vec<f64> = out
        .after_values
        .iter()
        .skip(vi)
        .step_by(k)
        .map(|&x| clamp(x))
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
        return Ok((st, Vec::new())); // an age no board has: nothing to write
    }
    let figures = match &job.summary {
        Some(s) => s.figures[vi],
        None => {
            debug_assert_eq!(out.state_recs.len(), n * k);
            state_figures(&out.state_recs, n, k, vi, v)
        }
    };
    st.n_terminal_states = figures.n_terminal_states;
    st.mean_state_value = figures.mean_state_value;
    st.mean_action_gap = figures.mean_action_gap;
    st.frac_gap_lt_1 = figures.frac_gap_lt_1;
    if !after_empty.is_empty() {
        st.mean_empty_cells_afterstates =
            Some(after_empty.iter().map(|&e| f64::from(e)).sum::<f64>() / after_empty.len() as f64);
        st.best_afterstate_value = after_values.iter().copied().reduce(f64::max);
    }

    let layout = store.layout();
    let index_path = layout.index_file(shape, &name, age);
    let states_path = layout.states_file(shape, &name, age);
    let after_path = layout.afterstates_file(shape, &name, age);
    let (index, (states_pq, after_pq)) = rayon::join(
        || -> Result<(Vec<u8>, IndexEntry)> {
            {
                let meta = AgeIndexMeta {
                    rows: shape.rows() as u8,
                    cols: shape.cols() as u8,
                    age,
                    variant: name.clone(),
                };
                let index_err = |source| SolveError::Index {
                    path: index_path.clone(),
                    source,
                };
                let (bytes, s) = encode_age_index_with_stats(
                    &meta,
                    &out.states,
                    &out.afterstates,
                    &after_values,
                    index_options(storage),
                )
                .map_err(index_err)?;
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
            }
        },
        || {
            if !storage.parquet_at(age) {
                return (Ok(Vec::new()), Ok(Vec::new()));
            }
            debug_assert_eq!(
                out.state_recs.len(),
                n * k,
                "records of an age kept in Parquet"
            );
            rayon::join(
                || {
                    {
                        parquet::states_parquet(&states_path, n, |range| {
                            let recs = || range.clone().map(rec);
                            StatesColumns {
                                id: out.states[range.clone()].to_vec(),
                                value: recs().map(|r| r.value).collect(),
                                terminal: recs().map(|r| r.terminal).collect(),
                                moves: recs().map(|r| r.moves).collect(),
                                best: recs()
                                    .map(|r| {
                                        (r.best != NO_MOVE)
                                            .then(|| ["L", "R", "U", "D"][r.best as usize])
                                    })
                                    .collect(),
                                gap: recs().map(|r| (r.moves >= 2).then_some(r.gap)).collect(),
                                empty: out.states[range.clone()]
                                    .iter()
                                    .map(|&s| board::count_empty(s, cells) as u8)
                                    .collect(),
                            }
                        })
                    }
                },
                || {
                    parquet::afterstates_parquet(&after_path, out.afterstates.len(), |range| {
                        (
                            out.afterstates[range.clone()].to_vec(),
                            after_values[range.clone()].to_vec(),
                            after_empty[range].to_vec(),
                        )
                    })
                },
            )
        },
    );
    let (index_bytes, index_entry) = index?;
    let states_pq = states_pq?;
    let after_pq = after_pq?;
    let mut files = Vec::with_capacity(3);
    let parquet = storage.parquet_at(age);
    for (path, bytes, keep) in [
        (&states_path, &states_pq, parquet),
        (&after_path, &after_pq, parquet),
        (&index_path, &index_bytes, true),
    ] {
        if keep {
            files.push(store.write_file_batched(path, bytes)?);
        }
    }
    st.index = index_entry;
    Ok((st, files))
}
