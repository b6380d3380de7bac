//! One age as files: the `states` Parquet part of each variant that keeps the age in Parquet,
//! its `afterstates` part and its index (in the policy layout, its policy file instead), with the age's figures (a row of the `ages` table,
//! computed from every board whatever the layout); written as the backward pass values a big
//! age, after it for a small one ([`AgeFiles`]). The files reach the disk under temporary
//! names and are renamed into place without a sync: the caller syncs before it records the
//! age as done.

use rayon::prelude::*;

use super::backward::{AfterFigures, Afterstates, AgeOutput, AgeWriter, Wants};
use super::records::{clamp_for, state_figures, FigureSums, StateRec, NO_MOVE};
use super::{Result, SolveError};
use crate::index::{
    encode_age_index_with_stats, max_exponent, AgeIndexMeta, Compaction, IndexOptions, MovesOf,
    PolicyBuilder, PolicyMeta, PolicyStats, ValueCoding,
};
use crate::rules::board;
use crate::rules::order::Order;
use crate::rules::{ForwardClass, Game, Rules, Shape, Variant};
use crate::store::{
    AgeStats, FileEntry, FileMeta, IndexEntry, PartWriter, PolicyEntry, PolicySymbols,
    StatesColumns, Storage, Store, TempFile, ROWS_PER_GROUP,
};

/// The number of valid moves of a state id for the policy file (0 for a state without a
/// move: no valid move, or absorbed by the class's goal), as the backward pass counts them.
pub fn moves_of(game: &Game, class: ForwardClass) -> MovesOf {
    let rules = Rules::new(game.shape());
    std::sync::Arc::new(move |id| {
        if super::forward::absorbed(&class, id) {
            0
        } else {
            class
                .moves(&rules, id)
                .iter()
                .filter(|m| m.is_some())
                .count() as u8
        }
    })
}

/// [`PolicySymbols`] as counted: states by valid moves, tied, and by first optimal move and
/// smallest optimal rank under [`Order::POLICY`], for states of two to four moves. (The other
/// rules of `rules::order` are not counted: ranking every state seven times took a third of a
/// policy solve; `reports/bench/policy.md` keeps what they came to.)
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SymbolCounts {
    by_moves: [u64; 5],
    tied: u64,
    first: [[u64; 4]; 3],
    ranks: [[u64; 4]; 3],
}

impl SymbolCounts {
    /// Counts a state of `moves` valid moves, `optimal` ones and the `rank` stored under
    /// [`Order::POLICY`] (as the backward pass found them: [`StateRec`]).
    #[inline]
    fn add(&mut self, moves: u8, optimal: u8, rank: u8) {
        let m = if optimal == 0 { 0 } else { usize::from(moves) };
        self.by_moves[m] += 1;
        if optimal.count_ones() >= 2 {
            self.tied += 1;
        }
        if m < 2 {
            return;
        }
        self.first[m - 2][optimal.trailing_zeros() as usize] += 1;
        self.ranks[m - 2][usize::from(rank)] += 1;
    }

    /// Adds the counts of another share of the age's states.
    fn merge(&mut self, o: &SymbolCounts) {
        let add = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
        add(&mut self.by_moves, &o.by_moves);
        self.tied += o.tied;
        for (a, b) in self.first.iter_mut().zip(&o.first) {
            add(a, b);
        }
        for (a, b) in self.ranks.iter_mut().zip(&o.ranks) {
            add(a, b);
        }
    }

    /// As the manifest records them.
    pub fn symbols(&self) -> PolicySymbols {
        let rows = |x: &[[u64; 4]; 3]| x.iter().map(|r| r.to_vec()).collect();
        PolicySymbols {
            by_moves: self.by_moves.to_vec(),
            tied: self.tied,
            first: rows(&self.first),
            ranks: [(Order::POLICY.name().to_string(), rows(&self.ranks))].into(),
        }
    }
}

/// States a task of [`policy_symbols`] counts.
const SYMBOLS_TASK: usize = 1 << 13;

/// Of the records `recs` (`[i * k + v]`) of variant `vi`: their counts, and each state's
/// symbol (its optimal moves' mask if `reach`, else its rank) and valid moves, what the
/// policy builder takes. On all threads for a big segment: the pass's thread would otherwise
/// do it alone, the other core idle (the counts are integers, the same whatever the split).
fn policy_symbols(
    recs: &[StateRec],
    k: usize,
    vi: usize,
    reach: bool,
) -> (SymbolCounts, Vec<u8>, Vec<u8>) {
    let symbol = |r: &StateRec| (if reach { r.optimal } else { r.rank }, r.moves);
    let count = |recs: &[StateRec]| {
        let mut c = SymbolCounts::default();
        for r in recs.iter().skip(vi).step_by(k) {
            c.add(r.moves, r.optimal, r.rank);
        }
        c
    };
    if recs.len() <= SYMBOLS_TASK * k {
        let (symbols, moves) = recs.iter().skip(vi).step_by(k).map(symbol).unzip();
        return (count(recs), symbols, moves);
    }
    let (counts, (symbols, moves)) = rayon::join(
        || {
            recs.par_chunks(SYMBOLS_TASK * k).map(count).reduce(
                SymbolCounts::default,
                |mut a, b| {
                    a.merge(&b);
                    a
                },
            )
        },
        || {
            recs.par_chunks_exact(k)
                .with_min_len(SYMBOLS_TASK)
                .map(|rec| symbol(&rec[vi]))
                .unzip()
        },
    );
    (counts, symbols, moves)
}

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

/// The files of one age, for every variant of a pass.
///
/// A big age is written as the pass values it: each segment of records becomes a row group
/// of the `states` parts at once, and the rest when the age is valued (so an age's records
/// never exist at once). A small one is deferred: the pass hands over its records whole and
/// [`AgeFiles::finish`] returns the files unwritten ([`Files::Deferred`]), for a thread of the
/// caller's to write while the pass values the next ages (both cores stay busy through the
/// many small ages of a board, whose files would otherwise be encoded one after the other).
pub struct AgeFiles<'a> {
    store: &'a Store,
    game: &'a Game,
    variants: &'a [Variant],
    storages: &'a [Storage],
    age: u32,
    /// Whether the age is written after the pass ([`Files::Deferred`]).
    defer: bool,
    /// Per variant, if it keeps this age in Parquet: its `states` part, once the first row
    /// group came.
    states: Vec<Option<Option<PartWriter<TempFile>>>>,
    /// A deferred age's records, `[i * k + v]`.
    records: Vec<StateRec>,
    /// Per variant stored in the policy layout, its policy file being built from each
    /// segment's ids and the ranks of their optimal moves, a shard at a time, and the
    /// counts of its symbols.
    policy: Vec<Option<(PolicyBuilder, SymbolCounts)>>,
    /// Per variant, the age's files but its `states` parts, once written
    /// ([`AgeWriter::afterstates`]: before the states are valued).
    after: Option<Vec<AfterFiles>>,
    /// Rows of the parts' row groups ([`AgeFiles::in_groups_of`]).
    rows: usize,
}

/// What [`AgeFiles::finish`] came to.
pub enum Files<'a> {
    /// Per variant, the age's figures and files.
    Written(Vec<(AgeStats, Vec<FileEntry>)>),
    /// To be written by [`AgeFiles::write`].
    Deferred(AgeFiles<'a>),
}

impl<'a> AgeFiles<'a> {
    /// The files of age `age` of `variants`, stored as `storages` say (one each); `defer`
    /// says whether they are written after the pass ([`Files::Deferred`]).
    pub fn new(
        store: &'a Store,
        game: &'a Game,
        age: u32,
        variants: &'a [Variant],
        storages: &'a [Storage],
        defer: bool,
        n_states: usize,
    ) -> Result<AgeFiles<'a>> {
        debug_assert_eq!(variants.len(), storages.len());
        let shape = game.shape();
        let policy = variants
            .iter()
            .zip(storages)
            .map(|(v, s)| {
                if s.has_index() {
                    return Ok(None);
                }
                let meta = PolicyMeta {
                    rows: shape.rows() as u8,
                    cols: shape.cols() as u8,
                    age,
                    variant: v.name(),
                    order: Order::POLICY.id(),
                    reached: false,
                    // A solve kept over the reached states writes the optimal moves' masks
                    // first: the reach pass chooses among them and writes the ranks.
                    masks: s.reach,
                };
                let path = store.layout().policy_file(shape, &v.name(), age);
                PolicyBuilder::new(meta, n_states)
                    .map(|b| Some((b, SymbolCounts::default())))
                    .map_err(|source| SolveError::Index { path, source })
            })
            .collect::<Result<_>>()?;
        Ok(AgeFiles {
            store,
            game,
            variants,
            storages,
            age,
            defer,
            states: storages
                .iter()
                .map(|s| s.parquet_at(age).then_some(None))
                .collect(),
            records: Vec::new(),
            policy,
            after: None,
            rows: ROWS_PER_GROUP,
        })
    }

    /// The files with row groups of `rows` rows ([`crate::store::rows_per_group`] of a
    /// process of a solve over several), where one process's are of [`ROWS_PER_GROUP`]: the
    /// states come to the writer a group at a time.
    pub fn in_groups_of(mut self, rows: usize) -> AgeFiles<'a> {
        self.rows = rows.max(1);
        self
    }

    /// At most the bytes an age of `boards` states and afterstates holds until a writer
    /// thread has written it after the pass (`k` variants): a board's id, its values (of a
    /// state or an afterstate) and, were it a state, its records.
    pub fn deferred_bytes(boards: u64, k: usize) -> u64 {
        use std::mem::size_of;
        let per_board = size_of::<u64>() + k * (size_of::<f64>() + size_of::<StateRec>());
        boards.saturating_mul(per_board as u64)
    }

    /// Whether the age is written after the pass ([`Files::Deferred`]).
    pub fn deferred(&self) -> bool {
        self.defer
    }

    /// The bytes a deferred age's records hold.
    pub fn bytes(&self) -> usize {
        self.records.len() * std::mem::size_of::<StateRec>()
    }

    /// Writes the age's files: per variant (in parallel) its `afterstates` part and index,
    /// meanwhile a deferred age's `states` parts; then the `states` parts are closed.
    pub fn write(mut self, out: &AgeOutput) -> Result<Vec<(AgeStats, Vec<FileEntry>)>> {
        let k = self.variants.len();
        let whole = self.wants() == Wants::Whole;
        let records = std::mem::take(&mut self.records);
        let policy = std::mem::take(&mut self.policy);
        let after = self.after.take();
        let AgeFiles {
            store,
            game,
            variants,
            storages,
            age,
            mut states,
            rows,
            ..
        } = self;
        debug_assert_eq!(out.age, age);
        let n = out.states.len();
        if out.boards == 0 {
            // An age no board has: nothing to write.
            let stats = AgeStats {
                age,
                ..Default::default()
            };
            return Ok(vec![(stats, Vec::new()); k]);
        }
        let (pushed, rest) = rayon::join(
            || -> Result<Vec<FigureSums>> {
                if !whole {
                    return Ok(out.summary.figures.clone());
                }
                // A whole age's records come unfolded: their figures are summed here.
                debug_assert_eq!(records.len(), n * k);
                let figures = (0..k)
                    .into_par_iter()
                    .map(|vi| state_figures(&records, n, k, vi, &variants[vi]))
                    .collect();
                for (ids, recs) in out.states.chunks(rows).zip(records.chunks(rows * k)) {
                    push_states(store, game, variants, age, &mut states, ids, recs)?;
                }
                Ok(figures)
            },
            || match after {
                Some(written) => Ok(written),
                None => all_after_files(store, game, variants, storages, out.afterstates(), rows),
            },
        );
        let figures = pushed?;
        drop(records);
        let rest = rest?;
        let policies = policy_files(store, game, variants, age, policy)?;
        let mut written = Vec::with_capacity(k);
        for (((slot, v), (figures, after)), policy) in states
            .iter_mut()
            .zip(variants)
            .zip(figures.into_iter().zip(rest))
            .zip(policies)
        {
            let AfterFiles {
                mut stats,
                after,
                index,
            } = after;
            // The sums go with the figures: a distributed solve merges its processes' shares.
            stats.state_sums = figures.to_words();
            let figures = figures.figures();
            stats.n_terminal_states = figures.n_terminal_states;
            stats.mean_state_value = figures.mean_state_value;
            stats.mean_action_gap = figures.mean_action_gap;
            stats.frac_gap_lt_1 = figures.frac_gap_lt_1;
            let mut files = Vec::with_capacity(3);
            if let Some(slot) = slot.as_mut() {
                // An age of states that made no row group (none) still has its part.
                let part = states_part(store, game, v, age, slot)?;
                files.push(store.commit_part(part)?);
            }
            files.extend(after);
            files.extend(index);
            if let Some((entry, file)) = policy {
                stats.policy = entry;
                files.push(file);
            }
            written.push((stats, files));
        }
        Ok(written)
    }
}

/// What the Parquet files of variant `v` say of themselves: a restricted solve's caps and
/// requirement.
pub fn file_meta(shape: Shape, v: &Variant) -> FileMeta {
    match v
        .limits
        .and_then(|l| crate::rules::Restriction::from_limits(shape, l))
    {
        Some(r) => FileMeta {
            caps: Some(r.caps_text()),
            require: r.require_text(),
        },
        None => FileMeta::default(),
    }
}

/// The `states` part of variant `v`, created if no row group came yet.
fn states_part(
    store: &Store,
    game: &Game,
    v: &Variant,
    age: u32,
    slot: &mut Option<PartWriter<TempFile>>,
) -> Result<PartWriter<TempFile>> {
    match slot.take() {
        Some(part) => Ok(part),
        None => {
            let path = store.layout().states_file(game.shape(), &v.name(), age);
            Ok(store.states_part(&path, &file_meta(game.shape(), v))?)
        }
    }
}

/// One row group of each variant's `states` part (variants in parallel).
fn push_states(
    store: &Store,
    game: &Game,
    variants: &[Variant],
    age: u32,
    states: &mut [Option<Option<PartWriter<TempFile>>>],
    ids: &[u64],
    recs: &[StateRec],
) -> Result<()> {
    let k = variants.len();
    let cells = game.cells();
    debug_assert_eq!(recs.len(), ids.len() * k);
    states
        .par_iter_mut()
        .zip(variants.par_iter())
        .enumerate()
        .filter_map(|(vi, (slot, v))| slot.as_mut().map(|slot| (vi, slot, v)))
        .try_for_each(|(vi, slot, v)| -> Result<()> {
            let clamp = clamp_for(v);
            let rec = |i: usize| recs[i * k + vi];
            let recs = || (0..ids.len()).map(rec);
            let columns = StatesColumns {
                id: ids.to_vec(),
                value: recs().map(|r| clamp(r.value)).collect(),
                terminal: recs().map(|r| r.terminal).collect(),
                moves: recs().map(|r| r.moves).collect(),
                best: recs()
                    .map(|r| (r.best != NO_MOVE).then(|| ["L", "R", "U", "D"][r.best as usize]))
                    .collect(),
                gap: recs().map(|r| (r.moves >= 2).then_some(r.gap)).collect(),
                empty: ids
                    .iter()
                    .map(|&s| board::count_empty(s, cells) as u8)
                    .collect(),
            };
            let mut part = states_part(store, game, v, age, slot)?;
            part.push_states(columns)?;
            *slot = Some(part);
            Ok(())
        })
}

impl<'a> AgeWriter for AgeFiles<'a> {
    type Written = Files<'a>;

    /// A row group's worth, or a deferred age whole.
    fn wants(&self) -> Wants {
        let parquet = self.states.iter().any(Option::is_some);
        let moves = self.policy.iter().any(Option::is_some);
        if parquet && self.defer {
            Wants::Whole
        } else if parquet || moves {
            Wants::Segments(self.rows)
        } else {
            Wants::Figures
        }
    }

    /// The policy layout's rule, if a variant is stored in it.
    fn order(&self) -> Option<Order> {
        self.policy
            .iter()
            .any(Option::is_some)
            .then_some(Order::POLICY)
    }

    fn states(&mut self, ids: &[u64], recs: &mut Vec<StateRec>) -> Result<()> {
        let k = self.variants.len();
        let n = ids.len() * k;
        for (vi, policy) in self.policy.iter_mut().enumerate() {
            if let Some((policy, counts)) = policy {
                // The pass ranked the optimal moves under `order()` and counted each state's
                // valid moves as `moves_of` does; a solve kept over the reached states stores
                // the masks.
                let reach = self.storages[vi].reach;
                let (counted, symbols, moves) = policy_symbols(&recs[..n], k, vi, reach);
                counts.merge(&counted);
                policy
                    .push(ids, &symbols, &moves)
                    .map_err(|source| SolveError::Index {
                        path: self.store.layout().policy_file(
                            self.game.shape(),
                            &self.variants[vi].name(),
                            self.age,
                        ),
                        source,
                    })?;
            }
        }
        if self.wants() == Wants::Whole {
            debug_assert!(
                self.records.is_empty(),
                "a deferred age comes in one segment"
            );
            self.records = std::mem::take(recs);
            self.records.truncate(n);
            return Ok(());
        }
        push_states(
            self.store,
            self.game,
            self.variants,
            self.age,
            &mut self.states,
            ids,
            &recs[..n],
        )
    }

    /// A big age's afterstate files are written at once; a deferred age's wait for it.
    fn afterstates(&mut self, a: Afterstates<'_>) -> Result<bool> {
        if self.defer || (a.states.is_empty() && a.ids.is_empty()) {
            return Ok(false);
        }
        self.after = Some(all_after_files(
            self.store,
            self.game,
            self.variants,
            self.storages,
            a,
            self.rows,
        )?);
        Ok(true)
    }

    /// A streamed age's afterstates as figures: its stats without files (the policy layout
    /// writes none of its afterstates).
    fn afterstate_figures(&mut self, fig: &AfterFigures) -> Result<()> {
        let mut after = Vec::with_capacity(self.variants.len());
        for (vi, storage) in self.storages.iter().enumerate() {
            if storage.has_index() || storage.parquet_at(self.age) {
                return Err(SolveError::Internal(format!(
                    "age {}: a streamed age is written in the policy layout only",
                    self.age
                )));
            }
            let mut stats = AgeStats {
                age: self.age,
                n_states: fig.states,
                n_afterstates: fig.afterstates,
                ..Default::default()
            };
            if fig.afterstates > 0 {
                stats.mean_empty_cells_afterstates =
                    Some(fig.empty_cells as f64 / fig.afterstates as f64);
                stats.best_afterstate_value = fig.best[vi];
            }
            stats.index = IndexEntry {
                base: u32::from(Compaction::base_above(fig.max_exponent)),
                ..Default::default()
            };
            after.push(AfterFiles {
                stats,
                after: None,
                index: None,
            });
        }
        self.after = Some(after);
        Ok(())
    }

    fn finish(self, out: &AgeOutput) -> Result<Files<'a>> {
        if self.defer {
            return Ok(Files::Deferred(self));
        }
        self.write(out).map(Files::Written)
    }
}

/// One variant's files of an age besides its `states` part and policy file, and the age's
/// figures but the state ones.
struct AfterFiles {
    stats: AgeStats,
    /// The `afterstates` part, if the age is kept in Parquet.
    after: Option<FileEntry>,
    /// The index, but in the policy layout.
    index: Option<FileEntry>,
}

/// The policy file of each variant stored in the policy layout (`None` for the others), from
/// its builder (every state of the age pushed).
fn policy_files(
    store: &Store,
    game: &Game,
    variants: &[Variant],
    age: u32,
    policy: Vec<Option<(PolicyBuilder, SymbolCounts)>>,
) -> Result<Vec<Option<(PolicyEntry, FileEntry)>>> {
    let shape = game.shape();
    variants
        .iter()
        .zip(policy)
        .map(|(v, builder)| {
            let Some((builder, counts)) = builder else {
                return Ok(None);
            };
            let path = store.layout().policy_file(shape, &v.name(), age);
            let (bytes, s) = builder.finish().map_err(|source| SolveError::Index {
                path: path.clone(),
                source,
            })?;
            let file = store.write_file_batched(&path, &bytes)?;
            let entry = policy_entry(&file, &s, Some(counts.symbols()));
            Ok(Some((entry, file)))
        })
        .collect()
}

/// The manifest's entry of a policy file written as `file` with sizes `s`.
pub fn policy_entry(
    file: &FileEntry,
    s: &PolicyStats,
    symbols: Option<PolicySymbols>,
) -> PolicyEntry {
    PolicyEntry {
        file: file.path.clone(),
        file_bytes: s.file_bytes,
        keys: s.keys,
        shards: s.shards,
        states: s.states,
        levels: s.levels.to_vec(),
        order: Order::POLICY.name().to_string(),
        symbols,
    }
}

/// [`after_files`] of every variant, in parallel.
fn all_after_files(
    store: &Store,
    game: &Game,
    variants: &[Variant],
    storages: &[Storage],
    a: Afterstates<'_>,
    rows: usize,
) -> Result<Vec<AfterFiles>> {
    (0..variants.len())
        .into_par_iter()
        .map(|vi| after_files(store, game, a, variants, &storages[vi], vi, rows))
        .collect()
}

/// The `afterstates` part (if the age is kept in Parquet) and the index of variant `vi` of
/// `variants` (stored as `storage`).
fn after_files(
    store: &Store,
    game: &Game,
    a: Afterstates<'_>,
    variants: &[Variant],
    storage: &Storage,
    vi: usize,
    rows: usize,
) -> Result<AfterFiles> {
    let (k, v) = (variants.len(), &variants[vi]);
    let shape = game.shape();
    let cells = game.cells();
    let name = v.name();
    let age = a.age;
    let clamp = clamp_for(v);
    let mut stats = AgeStats {
        age,
        n_states: a.states.len() as u64,
        n_afterstates: a.ids.len() as u64,
        ..Default::default()
    };
    // The values of this variant as stored: the pass's own when they are already (one
    // variant, none out of range), else a copy (8 bytes an afterstate at the age's peak).
    let after_values: std::borrow::Cow<[f64]> =
        if k == 1 && a.values.iter().all(|&x| clamp(x).to_bits() == x.to_bits()) {
            std::borrow::Cow::Borrowed(a.values)
        } else {
            a.values
                .iter()
                .skip(vi)
                .step_by(k)
                .map(|&x| clamp(x))
                .collect()
        };
    let empty = |id: u64| board::count_empty(id, cells) as u8;
    if !a.ids.is_empty() {
        stats.mean_empty_cells_afterstates =
            Some(a.ids.iter().map(|&id| f64::from(empty(id))).sum::<f64>() / a.ids.len() as f64);
        stats.best_afterstate_value = after_values.iter().copied().reduce(f64::max);
    }

    let layout = store.layout();
    let index_path = layout.index_file(shape, &name, age);
    let after_path = layout.afterstates_file(shape, &name, age);
    let (index, after) = rayon::join(
        || -> Result<(Vec<u8>, IndexEntry)> {
            if !storage.has_index() {
                // No index: only its base, from which the manifest's largest tile comes.
                let most = max_exponent(a.states.iter().chain(a.ids).copied());
                let entry = IndexEntry {
                    base: u32::from(Compaction::base_above(most)),
                    ..Default::default()
                };
                return Ok((Vec::new(), entry));
            }
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
                a.states,
                a.ids,
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
        },
        || -> Result<Option<FileEntry>> {
            if !storage.parquet_at(age) {
                return Ok(None);
            }
            let mut part = store.afterstates_part(&after_path, &file_meta(shape, v))?;
            for (ids, values) in a.ids.chunks(rows).zip(after_values.chunks(rows)) {
                part.push_afterstates(
                    ids.to_vec(),
                    values.to_vec(),
                    ids.iter().map(|&id| empty(id)).collect(),
                )?;
            }
            Ok(Some(store.commit_part(part)?))
        },
    );
    let (index_bytes, index_entry) = index?;
    let after = after?;
    let index = if storage.has_index() {
        Some(store.write_file_batched(&index_path, &index_bytes)?)
    } else {
        None
    };
    stats.index = index_entry;
    Ok(AfterFiles {
        stats,
        after,
        index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counted and listed on all threads (segments above [`SYMBOLS_TASK`] states), a
    /// variant's symbols are those of one pass over its records in order.
    #[test]
    fn policy_symbols_in_parallel_are_the_serial_ones() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [0, 1, SYMBOLS_TASK, SYMBOLS_TASK + 1, 2 * SYMBOLS_TASK + 333] {
            for k in 1..=3 {
                let recs: Vec<StateRec> = (0..n * k)
                    .map(|_| {
                        let moves = (next() % 5) as u8;
                        let optimal = if moves == 0 {
                            0
                        } else {
                            (next() % 15 + 1) as u8
                        };
                        StateRec {
                            moves,
                            optimal,
                            rank: if moves >= 2 {
                                (next() % moves as u64) as u8
                            } else {
                                0
                            },
                            ..StateRec::default()
                        }
                    })
                    .collect();
                for vi in 0..k {
                    for reach in [false, true] {
                        let mut counts = SymbolCounts::default();
                        let (mut symbols, mut moves) = (Vec::new(), Vec::new());
                        for r in recs.iter().skip(vi).step_by(k) {
                            counts.add(r.moves, r.optimal, r.rank);
                            symbols.push(if reach { r.optimal } else { r.rank });
                            moves.push(r.moves);
                        }
                        let got = policy_symbols(&recs, k, vi, reach);
                        assert_eq!(got, (counts, symbols, moves), "{n} × {k}, variant {vi}");
                    }
                }
            }
        }
    }
}
