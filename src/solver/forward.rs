//! Forward pass: enumerate every reachable state and afterstate, age by increasing age.
//!
//! The age (sum of tiles) is kept by a move and raised by 2 or 4 by a spawn, so the states of
//! age `n` are complete once the afterstates of ages `n-2` and `n-4` are known. The pass keeps
//! the complete layer of age `n` and the partial layers `n+2` and `n+4` (Kaneko & Yamashita
//! 2025, §3.1): from the states of age `n` it makes the afterstates of age `n`, hands both to
//! the caller (who stores them), and spawns into `n+2` and `n+4`.
//!
//! Boards holding a tile at or above the class's absorbing tile are kept but not expanded:
//! goal variants stop there. A restricted class plays only the moves its caps allow and
//! stops at its requirement too ([`ForwardClass::moves`], [`ForwardClass::absorbs`]).

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::exchange::Exchange;
use super::layer;
use super::spill::Spilled;
use super::{Result, SolveError};
use crate::rules::board;
use crate::rules::{ForwardClass, Game};

/// Work items per rayon task: large enough to amortise the task, small enough to balance.
const CHUNK: usize = 2048;

/// Ids a batch of [`expand`] or [`spawn`] may make before they are deduplicated (2^25: 256 MiB;
/// fewer under a small budget, [`ForwardPlan::batch`]).
/// A big age's raw children are several times its layer (4x4 `goal-32`: ≈ 400 M ids, 3.4 GB,
/// for an age of 63 M states), so the pass makes them a batch at a time and adds each
/// batch's sorted, deduplicated ids to the runs its layer is grown from ([`layer::Runs`]:
/// the batches of an age grow with its layer, and merging each into the whole layer would
/// cost as the square of it).
pub const BATCH_IDS: usize = 1 << 25;

/// One finished age of the forward pass.
pub struct AgeLayer {
    pub age: u32,
    /// Canonical state ids, sorted and deduplicated (empty for a streamed age: see `encoded`).
    pub states: Vec<u64>,
    /// Canonical afterstate ids, sorted and deduplicated (empty for a streamed age).
    pub afterstates: Vec<u64>,
    /// A streamed age's layer file, its states only, encoded as they were made
    /// ([`crate::store::idcodec::LayerEncoder`]): no vector of the age's ids existed.
    pub encoded: Option<Vec<u8>>,
    /// Over several processes: the afterstates this process's states move to that others
    /// own, sorted (what the backward pass asks their owners for; empty in one process).
    pub asked: Vec<u64>,
    /// Over several processes, a streamed age's `asked`, encoded as a layer file of states as
    /// they were routed (`asked` is then empty).
    pub asked_encoded: Option<Vec<u8>>,
    pub n_states: usize,
    pub n_afterstates: usize,
}

impl AgeLayer {
    fn whole(age: u32, states: Vec<u64>, afterstates: Vec<u64>) -> AgeLayer {
        AgeLayer {
            age,
            n_states: states.len(),
            n_afterstates: afterstates.len(),
            states,
            afterstates,
            encoded: None,
            asked: Vec::new(),
            asked_encoded: None,
        }
    }
}

/// How the forward pass holds its layers ([`super::plan`]): ids held raw by a layer being grown
/// before its runs are packed ([`Spilled`]); an age whose layer was packed is streamed: its
/// states are read back in chunks, each encoded for its work file and expanded, and its
/// afterstates (grown the same way) spawn a chunk at a time; neither exists whole.
#[derive(Clone, Copy, Debug)]
pub struct ForwardPlan {
    pub cap: usize,
    /// Ids a batch of children may hold before they are deduplicated ([`BATCH_IDS`] at most).
    pub batch: usize,
}

impl ForwardPlan {
    /// Everything in memory, as without a budget.
    pub const UNBOUNDED: ForwardPlan = ForwardPlan {
        cap: usize::MAX,
        batch: BATCH_IDS,
    };
}

/// Where the pass starts.
pub enum Start {
    /// From the initial states.
    Fresh,
    /// After the finished age `age`, whose afterstates (and those of `age - 2`) are given:
    /// the partial layers `age + 2` and `age + 4` are rebuilt from them.
    After {
        age: u32,
        afterstates: Vec<u64>,
        afterstates_prev: Vec<u64>,
    },
}

/// True if the board holds a tile the class treats as absorbing (or, restricted, the
/// requirement: [`ForwardClass::absorbs`]).
#[inline]
pub fn absorbed(class: &ForwardClass, code: u64) -> bool {
    class.absorbs(code)
}

/// The canonical two-tile starting states, by age.
pub fn seeds(game: &Game, class: &ForwardClass) -> BTreeMap<u32, Vec<u64>> {
    let mut by_age: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let p4 = match (class.spawn2, class.spawn4) {
        (true, true) => 0.5, // any value in (0, 1): only which boards occur matters here
        (true, false) => 0.0,
        (false, true) => 1.0,
        (false, false) => return by_age,
    };
    for (b, _) in game.starts(p4) {
        by_age.entry(board::age(b)).or_default().push(game.canon(b));
    }
    by_age
        .into_iter()
        .map(|(a, v)| (a, layer::sort_dedup(v)))
        .collect()
}

/// Afterstates of a layer of states (absorbed states are not expanded), made a batch of
/// states at a time (at most four afterstates a state).
pub fn expand(game: &Game, class: &ForwardClass, states: &[u64]) -> Vec<u64> {
    expand_in(game, class, states, BATCH_IDS)
}

/// [`expand`] in batches of at most `batch` afterstates.
fn expand_in(game: &Game, class: &ForwardClass, states: &[u64], batch: usize) -> Vec<u64> {
    states
        .chunks((batch / 4).max(1))
        .map(|batch| expand_batch(game, class, batch))
        .collect::<layer::Runs>()
        .into_layer()
}

/// [`expand`] of one batch of states: each task cuts the afterstates it makes into the
/// ranges of splitters taken from the afterstates of a sample of the states, as it makes them
/// ([`layer::Cuts`]), but for the repeats its [`layer::RecentIds`] drops, and the ranges are
/// then sorted in parallel.
fn expand_batch(game: &Game, class: &ForwardClass, states: &[u64]) -> Vec<u64> {
    let ranges = layer::Cuts::ranges_for_threads();
    let mut sample = Vec::new();
    for &s in states.iter().step_by((states.len() / (ranges * 32)).max(1)) {
        moves_of(game, class, s, |a| sample.push(a));
    }
    let cuts = layer::Cuts::from_sample(sample, ranges);
    let cut: Vec<Vec<Vec<u64>>> = states
        .par_chunks(CHUNK)
        .map_init(layer::RecentIds::default, |seen, chunk| {
            let mut out = cuts.parts(chunk.len() * 3);
            for &s in chunk {
                moves_of(game, class, s, |a| {
                    if seen.insert(a) {
                        out[cuts.range_of(a)].push(a);
                    }
                });
            }
            out
        })
        .collect();
    layer::sort_dedup_cut(cut)
}

/// The canonical afterstates of the valid moves of state `s` (none if it is absorbed), to
/// `out`.
#[inline(always)]
fn moves_of(game: &Game, class: &ForwardClass, s: u64, mut out: impl FnMut(u64)) {
    if absorbed(class, s) {
        return;
    }
    for (a, _) in class.moves(&game.rules, s).into_iter().flatten() {
        out(game.canon(a));
    }
}

/// States spawned from a layer of afterstates, a batch of afterstates at a time (a batch
/// makes at most `batch` children, counted by the empty cells of its afterstates):
/// `add` receives each batch's layers of children spawning a 2 and a 4 (runs of their ages).
fn spawn_batches(
    game: &Game,
    class: &ForwardClass,
    afterstates: &[u64],
    batch: usize,
    mut add: impl FnMut(Vec<u64>, Vec<u64>) -> Result<()>,
) -> Result<()> {
    let kinds = usize::from(class.spawn2) + usize::from(class.spawn4);
    // Children of each tile per chunk of afterstates (their empty cells), then chunks
    // gathered into batches.
    let empties: Vec<usize> = afterstates
        .par_chunks(CHUNK)
        .map(|chunk| {
            chunk
                .iter()
                .filter(|&&a| !absorbed(class, a))
                .map(|&a| board::count_empty(a, game.cells()) as usize)
                .sum()
        })
        .collect();
    let mut first = 0; // the batch's first chunk
    let mut ids = 0;
    for (c, &n) in empties.iter().enumerate() {
        ids += n * kinds;
        let end = ((c + 1) * CHUNK).min(afterstates.len());
        if ids >= batch || end == afterstates.len() {
            let batch = &afterstates[first * CHUNK..end];
            let (two, four) = spawn(game, class, batch, &empties[first..=c]);
            add(two, four)?;
            first = c + 1;
            ids = 0;
        }
    }
    Ok(())
}

/// States spawned from a batch of afterstates: `(age + 2, age + 4)` layers. As in
/// [`expand_batch`], each task cuts the children it makes into ranges as it makes them, with
/// splitters (one set a tile) from the children of a sample of the afterstates. `empties`
/// holds the empty cells of the afterstates not absorbed, by chunk of [`CHUNK`]: the children
/// of each tile a chunk makes.
fn spawn(
    game: &Game,
    class: &ForwardClass,
    afterstates: &[u64],
    empties: &[usize],
) -> (Vec<u64>, Vec<u64>) {
    debug_assert_eq!(empties.len(), afterstates.len().div_ceil(CHUNK));
    let ranges = layer::Cuts::ranges_for_threads();
    let mut sample = [Vec::new(), Vec::new()];
    for &a in afterstates
        .iter()
        .step_by((afterstates.len() / (ranges * 16)).max(1))
    {
        children_of(game, class, a, |t, c| sample[t].push(c));
    }
    let [two, four] = sample;
    let cuts = [
        layer::Cuts::from_sample(two, ranges),
        layer::Cuts::from_sample(four, ranges),
    ];
    let spawns = [class.spawn2, class.spawn4];
    let parts: Vec<[Vec<Vec<u64>>; 2]> = afterstates
        .par_chunks(CHUNK)
        .zip(empties)
        .map_init(<[layer::RecentIds; 2]>::default, |seen, (chunk, &made)| {
            let mut out = [0, 1].map(|t| cuts[t].parts(if spawns[t] { made } else { 0 }));
            for &a in chunk {
                children_of(game, class, a, |t, c| {
                    if seen[t].insert(c) {
                        out[t][cuts[t].range_of(c)].push(c);
                    }
                });
            }
            out
        })
        .collect();
    let (two, four): (Vec<_>, Vec<_>) = parts.into_iter().map(|[t, f]| (t, f)).unzip();
    (layer::sort_dedup_cut(two), layer::sort_dedup_cut(four))
}

/// The canonical children of afterstate `a` (none if it is absorbed), to `out` with their
/// tile: 0 for a 2, 1 for a 4, each made where its spawn can happen. Their ids come from the
/// afterstate's images where the group has them ([`crate::rules::symmetry`]).
#[inline(always)]
pub(super) fn children_of(
    game: &Game,
    class: &ForwardClass,
    a: u64,
    mut out: impl FnMut(usize, u64),
) {
    if absorbed(class, a) {
        return;
    }
    let images = game.sym.images_of(a);
    let child = |i: usize, e: u8| match &images {
        Some(img) => game.sym.spawn_canon(img, i, e),
        None => game.canon(board::place(a, i, e)),
    };
    for i in board::empty_cells(a, game.cells()) {
        if class.spawn2 {
            out(0, child(i, 1));
        }
        if class.spawn4 {
            out(1, child(i, 2));
        }
    }
}

/// Adds a batch's children of age `age` to the pending layers.
fn add_run(
    pending: &mut BTreeMap<u32, Spilled>,
    plan: ForwardPlan,
    age: u32,
    ids: Vec<u64>,
) -> Result<()> {
    if !ids.is_empty() {
        pending
            .entry(age)
            .or_insert_with(|| Spilled::new(age, plan.cap))
            .push(ids)?;
    }
    Ok(())
}

/// Runs the forward pass, handing each finished age to `sink` in increasing order.
/// Returns the largest age with any state (0 if none).
pub fn run(
    game: &Game,
    class: &ForwardClass,
    start: Start,
    sink: impl FnMut(AgeLayer) -> Result<()>,
) -> Result<u32> {
    run_planned(game, class, start, ForwardPlan::UNBOUNDED, sink)
}

/// [`run`] within a plan: an age whose layer outgrew the plan's cap is streamed (its
/// [`AgeLayer`] carries its encoded states, not its ids).
pub fn run_planned(
    game: &Game,
    class: &ForwardClass,
    start: Start,
    plan: ForwardPlan,
    sink: impl FnMut(AgeLayer) -> Result<()>,
) -> Result<u32> {
    let single = Exchange::single(game.shape());
    run_exchanged(game, class, start, plan, &single, sink)
}

/// [`run_planned`] as one of the processes of `ex`: each age's states and afterstates are the
/// ones this process owns, routed to it by [`Exchange::route`] from whichever process made
/// them (in one process, all of them). Every process goes through the same ages.
pub fn run_exchanged(
    game: &Game,
    class: &ForwardClass,
    start: Start,
    plan: ForwardPlan,
    ex: &Exchange,
    mut sink: impl FnMut(AgeLayer) -> Result<()>,
) -> Result<u32> {
    // The partial layers of the ages to come, each grown from its batches' runs.
    let mut pending: BTreeMap<u32, Spilled> = BTreeMap::new();
    // Each process starts from the initial states it owns; the rest come from the routes.
    for (age, mut ids) in seeds(game, class) {
        ids.retain(|&id| ex.mine(id));
        add_run(&mut pending, plan, age, ids)?;
    }
    let mut max_age = 0;
    if let Start::After {
        age,
        afterstates,
        afterstates_prev,
    } = start
    {
        pending.retain(|&a, _| a > age);
        spawn_batches(game, class, &afterstates, plan.batch, |two, four| {
            add_run(&mut pending, plan, age + 2, two)?;
            add_run(&mut pending, plan, age + 4, four)
        })?;
        drop(afterstates);
        // Of the children of age - 2, only those spawning a 4 (age + 2) are still to come.
        spawn_batches(game, class, &afterstates_prev, plan.batch, |_, four| {
            add_run(&mut pending, plan, age + 2, four)
        })?;
        max_age = age;
    }
    // The next age any process has boards of (in one process, its own next age).
    while let Some(age) = next_age(ex, &pending)? {
        let layer = pending
            .remove(&age)
            .unwrap_or_else(|| Spilled::new(age, plan.cap));
        // Streamed if any process's layer outgrew its cap: every process then routes its
        // afterstates a chunk at a time, in step.
        if ex.agree_any(layer.spilled())? {
            if !ex.parts().spawns_stay_home() {
                return Err(SolveError::Budget(format!(
                    "age {age} does not fit the memory budget whole, and a solve over several \
                     processes by {} values every age whole: give each process more memory, or \
                     split the boards by tiles (--parts tiles)",
                    ex.parts().scheme.name()
                )));
            }
            let done = streamed_age(game, class, plan, age, layer, &mut pending, ex)?;
            max_age = age;
            sink(done)?;
            continue;
        }
        // Where every spawn child is its afterstate's owner's, the layer is already this
        // process's own (every process skips the route alike).
        let states = if ex.parts().spawns_stay_home() {
            let states = layer.into_layer()?;
            debug_assert!(states.iter().all(|&id| ex.mine(id)));
            states
        } else {
            ex.route(layer.into_layer()?)?
        };
        debug_assert!(layer::is_layer(&states));
        let (afterstates, asked) = ex.route_keeping(expand_in(game, class, &states, plan.batch))?;
        spawn_batches(game, class, &afterstates, plan.batch, |two, four| {
            add_run(&mut pending, plan, age + 2, two)?;
            add_run(&mut pending, plan, age + 4, four)
        })?;
        max_age = age;
        sink(AgeLayer {
            asked,
            ..AgeLayer::whole(age, states, afterstates)
        })?;
    }
    Ok(max_age)
}

/// The smallest age with pending boards in any process, `None` once there is none.
fn next_age(ex: &Exchange, pending: &BTreeMap<u32, Spilled>) -> Result<Option<u32>> {
    let mine = pending.keys().next().map_or(u64::MAX, |&a| u64::from(a));
    let age = ex.agree_min(mine)?;
    Ok((age != u64::MAX).then_some(age as u32))
}

/// One age whose layer was packed: its states streamed in chunks, each encoded for the work
/// file and expanded into the afterstates' runs; then the afterstates streamed, encoded for
/// the work file and spawned.
///
/// Over several processes (under parts whose spawns stay home, so that the states are all
/// this process's own), the afterstates it made are routed to their owners a chunk at a time
/// ([`route_streamed`]), and those others own are kept, encoded, for the backward pass.
fn streamed_age(
    game: &Game,
    class: &ForwardClass,
    plan: ForwardPlan,
    age: u32,
    layer: Spilled,
    pending: &mut BTreeMap<u32, Spilled>,
    ex: &Exchange,
) -> Result<AgeLayer> {
    let mut file = crate::store::idcodec::LayerEncoder::new(age);
    let mut after = Spilled::new(age, plan.cap);
    let mut n_states = 0;
    for chunk in layer.stream() {
        let chunk = chunk?;
        n_states += chunk.len();
        file.push_states(&chunk);
        after.push(expand_in(game, class, &chunk, plan.batch))?;
    }
    let (after, asked) = if ex.is_single() {
        (after, None)
    } else {
        let (mine, asked) = route_streamed(ex, age, plan.cap, after)?;
        let mut encoded = crate::store::idcodec::LayerEncoder::new(age);
        for chunk in asked.stream() {
            encoded.push_states(&chunk?);
        }
        (mine, Some(encoded.finish()))
    };
    let mut n_afterstates = 0;
    for chunk in after.stream() {
        let chunk = chunk?;
        n_afterstates += chunk.len();
        // Kept in the work file (about 0.6 bytes an afterstate) so that the backward pass
        // reads them a chunk at a time instead of making them again from the states.
        file.push_afterstates(&chunk);
        spawn_batches(game, class, &chunk, plan.batch, |two, four| {
            add_run(pending, plan, age + 2, two)?;
            add_run(pending, plan, age + 4, four)
        })?;
    }
    Ok(AgeLayer {
        age,
        states: Vec::new(),
        afterstates: Vec::new(),
        encoded: Some(file.finish()),
        asked: Vec::new(),
        asked_encoded: asked,
        n_states,
        n_afterstates,
    })
}

/// Over several processes: the afterstates this process made (`made`, some of them others')
/// sent to their owners a chunk of its stream at a time, as many rounds as the process with
/// the most chunks (the others send nothing in the rounds past their own): the layer of those
/// this process owns that any process made, and of those of `made` that others own, each
/// grown within `cap` ids held raw. Collective.
fn route_streamed(
    ex: &Exchange,
    age: u32,
    cap: usize,
    made: Spilled,
) -> Result<(Spilled, Spilled)> {
    let mut mine = Spilled::new(age, cap);
    let mut asked = Spilled::new(age, cap);
    let mut chunks = made.stream();
    loop {
        let chunk = chunks.next().transpose()?;
        if !ex.agree_any(chunk.is_some())? {
            break;
        }
        // Each process's chunks come in increasing order, so what it sends a process over
        // the rounds is sorted; a board two processes made comes twice, and a layer grown
        // from runs keeps it once.
        let (got, others) = ex.route_keeping(chunk.unwrap_or_default())?;
        mine.push(got)?;
        asked.push(others)?;
    }
    Ok((mine, asked))
}

/// The afterstates of a layer given as chunks of states (a streamed age's work file), grown
/// within `cap` ids held raw: what the backward pass and a resumed forward pass make again
/// where the work files do not keep them.
pub fn afterstates_of(
    game: &Game,
    class: &ForwardClass,
    age: u32,
    states: impl Iterator<Item = Result<Vec<u64>>>,
    cap: usize,
) -> Result<Spilled> {
    let mut after = Spilled::new(age, cap);
    for chunk in states {
        after.push(expand(game, class, &chunk?))?;
    }
    Ok(after)
}
