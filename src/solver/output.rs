//! One finished age as files: the `states` and `afterstates` Parquet parts (in the compact
//! layout only at the ages it keeps in Parquet) and the age index of each variant, with the
//! age's figures (a row of the `ages` table, computed from every board whatever the layout).
//! The files are written in a batch: the caller syncs before it records the age as done.

use super::backward::AgeOutput;
use super::records::{clamp_for, StateRec, NO_MOVE};
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

/// Writes one age of one variant: states and afterstates Parquet (if `storage` keeps this age
/// in Parquet), the age index. Returns the age's figures with the files' digests. The state
/// figures come from the pass's summary, or from its records.
pub fn write_age(
    store: &Store,
    game: &Game,
    out: &AgeOutput,
    k: usize,
    vi: usize,
    v: &Variant,
    storage: &Storage,
) -> Result<(AgeStats, Vec<FileEntry>)> {
    let shape = game.shape();
    let cells = game.cells();
    let name = v.name();
    let age = out.age;
    let clamp = clamp_for(v);
    // The records of this variant, read in place (a copy would hold 19 bytes a state).
    let n = out.states.len();
    let recs = out.records().unwrap_or_default();
    let rec = |i: usize| {
        let r = recs[i * k + vi];
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
    let figures = out.figures(k, vi, v);
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
            debug_assert_eq!(recs.len(), n * k, "records of an age kept in Parquet");
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
