//! The states optimal play reaches (`solve --layout policy --reach`): after the backward
//! pass, a forward pass from the starts that follows one optimal move of each state, and
//! every age's policy file written again over the states it reached only.
//!
//! The backward pass of such a solve writes each age's file as the optimal moves' masks
//! (`index::policy`, 4 bits a state of two moves or more). This pass goes up from the
//! starting states (every canonical two-tile board the variant's spawns make), age by age:
//! the states of age `n` reached so far are complete once ages `n − 2` and `n − 4` are done;
//! each takes one optimal move, every spawn of its afterstate is reached (ages `n + 2` and
//! `n + 4`), and the age's file is written over those states, with the rank of the move
//! taken. A state without a move (terminal, or holding the goal) is reached and stores
//! nothing.
//!
//! Tie-breaks, chosen to keep the set small: a state with one optimal move takes it; among
//! several, a state takes one whose afterstate a state of the age with one optimal move
//! already takes (its spawns are reached anyway), else one that makes a goal variant's goal
//! (its spawns end the game and store nothing), else the one leaving the fewest empty cells
//! (the fewest spawns; in a lost position, the quickest end), then the smaller rank in the
//! file's order (the cheaper symbol). The choice depends on the age's reached states
//! alone, so the pass gives the same states and bytes whatever the thread count, and a pass
//! started again after a kill (some files already written over the reached states, whose
//! ranks are the moves it took) reaches the same states.
//!
//! Nothing in the files tells a board outside the set apart: its look-up answers some valid
//! move, not an optimal one (`query::Tablebase::reached_only` says so to the user).

use rayon::prelude::*;

use super::output::{moves_of, policy_entry};
use super::{forward, layer, Result, SolveError};
use crate::index::{encode_policy, Policy, PolicyMeta, PolicyStats, Stored};
use crate::rules::order::{rank_moves, Order};
use crate::rules::{board, Dir, ForwardClass, Game, Shape, Variant};
use crate::store::parts::Parts;
use crate::store::{AgeStats, FileEntry, Store, StoreError};
use std::path::PathBuf;

/// States a parallel task takes.
const CHUNK: usize = 4096;

/// One age's slot of the solve's records, for one variant: its figures and its files.
pub struct AgeSlot<'a> {
    pub stats: &'a mut AgeStats,
    pub files: &'a mut Vec<FileEntry>,
}

/// What the pass reached: states and the files' bytes, over all ages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    pub states: u64,
    pub file_bytes: u64,
}

/// The move each reached state of one age takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Per state, the rank of its move among its valid moves in [`Order::POLICY`] (0 for a
    /// state without a move).
    pub ranks: Vec<u8>,
    /// The canonical afterstates the states move to, sorted, each once.
    pub afterstates: Vec<u64>,
}

/// A state's move as the pass reads it: its optimal moves (a mask), or the move already
/// chosen (a file written over the reached states).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    Optimal(u8),
    Chosen(Dir),
}

/// The moves of `states` (one age's reached states, sorted) given what `known` says of each
/// (called for states with a valid move only, with their number of valid moves), with the
/// tie-breaks of this module.
pub fn step(
    game: &Game,
    class: &ForwardClass,
    states: &[u64],
    known: impl Fn(u64, u8) -> Result<Known> + Sync,
) -> Result<Step> {
    let cells = game.cells();
    // First pass: per state its valid moves, and the move of those with one choice.
    struct Seen {
        /// The chosen move, or the optimal ones to choose among.
        chosen: Option<Dir>,
        optimal: u8,
    }
    let seen: Vec<Option<Seen>> = states
        .par_chunks(CHUNK)
        .map(|part| {
            part.iter()
                .map(|&s| -> Result<Option<Seen>> {
                    if forward::absorbed(class, s) {
                        return Ok(None);
                    }
                    let moves = class.moves(&game.rules, s);
                    let valid = moves.iter().filter(|m| m.is_some()).count() as u8;
                    if valid == 0 {
                        return Ok(None);
                    }
                    let (chosen, optimal) = match known(s, valid)? {
                        Known::Chosen(d) => (Some(d), 0),
                        Known::Optimal(mask) => {
                            let mask = mask & valid_mask(&moves);
                            if mask == 0 {
                                return Err(SolveError::Internal(format!(
                                    "state {s:#x}: no valid optimal move"
                                )));
                            }
                            if mask.count_ones() == 1 {
                                (Some(Dir::ALL[mask.trailing_zeros() as usize]), 0)
                            } else {
                                (None, mask)
                            }
                        }
                    };
                    Ok(Some(Seen { chosen, optimal }))
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let after_of = |s: u64, d: Dir| -> u64 {
        let (a, _) = game.rules.apply(s, d).expect("a valid move");
        game.canon(a)
    };
    // The afterstates taken without a choice.
    let forced: Vec<u64> = layer::sort_dedup(
        states
            .par_iter()
            .zip(&seen)
            .filter_map(|(&s, x)| x.as_ref().and_then(|x| x.chosen).map(|d| after_of(s, d)))
            .collect(),
    );
    let choose = |s: u64, optimal: u8| -> Dir {
        let moves = class.moves(&game.rules, s);
        let ranked = rank_moves(Order::POLICY, &moves, game.shape());
        let candidates = || {
            ranked
                .moves()
                .iter()
                .copied()
                .filter(|&d| optimal >> (d as u8) & 1 == 1)
        };
        if let Some(d) = candidates().find(|&d| forced.binary_search(&after_of(s, d)).is_ok()) {
            return d;
        }
        // A move that makes the goal (its spawns end the game), else the fewest empty cells
        // after the move; the first in the order among equals.
        candidates()
            .min_by_key(|&d| {
                let (a, _) = moves[d as usize].expect("a valid move");
                (!forward::absorbed(class, a), board::count_empty(a, cells))
            })
            .expect("a state with tied moves has some")
    };
    let taken: Vec<(u8, Option<u64>)> = states
        .par_iter()
        .zip(&seen)
        .map(|(&s, x)| {
            let Some(x) = x else {
                return Ok((0, None));
            };
            let d = x.chosen.unwrap_or_else(|| choose(s, x.optimal));
            let ranked = rank_moves(Order::POLICY, &class.moves(&game.rules, s), game.shape());
            let rank = ranked.rank_of(d).ok_or_else(|| {
                SolveError::Internal(format!("state {s:#x}: the move {d:?} is not valid"))
            })?;
            Ok((rank, Some(after_of(s, d))))
        })
        .collect::<Result<_>>()?;
    let ranks = taken.iter().map(|t| t.0).collect();
    let afterstates = layer::sort_dedup(taken.into_iter().filter_map(|t| t.1).collect());
    Ok(Step { ranks, afterstates })
}

/// The valid moves of `moves` as a mask.
fn valid_mask(moves: &[Option<(u64, u32)>; 4]) -> u8 {
    (0..4)
        .filter(|&d| moves[d].is_some())
        .fold(0, |m, d| m | 1 << d)
}

/// The spawns of `afterstates` (canonical), by the class's tiles: the children of age
/// `age + 2` (a 2) and `age + 4` (a 4), canonical, unsorted.
pub fn spawns(game: &Game, class: &ForwardClass, afterstates: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let cells = game.cells();
    let parts: Vec<(Vec<u64>, Vec<u64>)> = afterstates
        .par_chunks(CHUNK)
        .map(|part| {
            let (mut two, mut four) = (Vec::new(), Vec::new());
            for &a in part {
                for i in (0..cells).filter(|&i| board::cell(a, i) == 0) {
                    if class.spawn2 {
                        two.push(game.canon(board::place(a, i, 1)));
                    }
                    if class.spawn4 {
                        four.push(game.canon(board::place(a, i, 2)));
                    }
                }
            }
            (two, four)
        })
        .collect();
    let (mut two, mut four) = (Vec::new(), Vec::new());
    for (t, f) in parts {
        two.extend(t);
        four.extend(f);
    }
    (two, four)
}

/// The pass over one variant's solve: `ages` are its records, one an age of the pass in
/// increasing order. Each age's policy file is read (masks, or ranks of a pass started
/// before), written again over the reached states, and its record updated (its policy entry,
/// its file's entry, the states reached).
pub fn reach(
    store: &Store,
    game: &Game,
    variant: &Variant,
    ages: &mut [AgeSlot<'_>],
) -> Result<Reached> {
    let shape = game.shape();
    let name = variant.name();
    let class = variant.forward_class();
    let moves = moves_of(game, class);
    // A solve over several processes wrote an age's file in parts; the pass reads them all.
    let (_, parts) = store.layout().part();
    let mut pending: std::collections::BTreeMap<u32, Vec<u64>> = forward::seeds(game, &class);
    let mut total = Reached::default();
    for slot in ages.iter_mut() {
        let age = slot.stats.age;
        let states = layer::sort_dedup(pending.remove(&age).unwrap_or_default());
        let has_file = slot.stats.n_states > 0 || slot.stats.n_afterstates > 0;
        if !has_file {
            if !states.is_empty() {
                return Err(SolveError::Internal(format!(
                    "the reach pass reached {} states of age {age}, which has none",
                    states.len()
                )));
            }
            continue;
        }
        let files = PartFiles::read(store, shape, &name, age, parts)?;
        let order = files.order()?;
        let step = step(game, &class, &states, |s, valid| {
            let (policy, path) = files.of(s, shape)?;
            let damaged = |what: String| SolveError::from(StoreError::corrupt(path, what));
            match policy.stored(s, valid) {
                Some(Stored::Mask(m)) => Ok(Known::Optimal(m)),
                Some(Stored::Rank(r)) => {
                    let ranked = rank_moves(order, &class.moves(&game.rules, s), game.shape());
                    ranked
                        .moves()
                        .get(usize::from(r))
                        .map(|&d| Known::Chosen(d))
                        .ok_or_else(|| damaged(format!("rank {r} of state {s:#x}")))
                }
                Some(Stored::Move(d)) => Ok(Known::Chosen(Dir::ALL[usize::from(d & 3)])),
                None => Err(damaged(format!("no move for state {s:#x}"))),
            }
        })?;
        let had = files.present();
        drop(files);
        let (two, four) = spawns(game, &class, &step.afterstates);
        for (a, kids) in [(age + 2, two), (age + 4, four)] {
            if !kids.is_empty() {
                pending.entry(a).or_default().extend(kids);
            }
        }
        let meta = PolicyMeta {
            rows: shape.rows() as u8,
            cols: shape.cols() as u8,
            age,
            variant: name.clone(),
            order: Order::POLICY.id(),
            reached: true,
            masks: false,
        };
        // Each part's file again, over its own reached states (in id order, as `states`).
        let mut merged: Option<PolicyStats> = None;
        let mut entry_file = None;
        // Each state's part once; a part's states stay in id order.
        let count = parts.count.max(1) as usize;
        let mut by_part: Vec<(Vec<u64>, Vec<u8>)> = vec![(Vec::new(), Vec::new()); count];
        for (&s, &r) in states.iter().zip(&step.ranks) {
            let p = &mut by_part[parts.of(s, shape) as usize];
            p.0.push(s);
            p.1.push(r);
        }
        for ((part, had), (ids, ranks)) in (0..count as u32).zip(had).zip(by_part) {
            if !had && ids.is_empty() {
                continue;
            }
            let path = store
                .layout()
                .policy_file_of(shape, &name, age, part, parts);
            let index_err = |source| SolveError::Index {
                path: path.clone(),
                source,
            };
            let (bytes, s) =
                encode_policy(&meta, &ids, &ranks, moves.clone()).map_err(index_err)?;
            let file = store.write_file_batched(&path, &bytes)?;
            total.file_bytes += s.file_bytes;
            merged = Some(match merged {
                None => s,
                Some(m) => plus(m, &s),
            });
            match slot.files.iter_mut().find(|f| f.path == file.path) {
                Some(f) => *f = file.clone(),
                None => slot.files.push(file.clone()),
            }
            entry_file = Some(file);
        }
        let (Some(s), Some(file)) = (merged, entry_file) else {
            return Err(SolveError::Internal(format!(
                "age {age}: no policy file of any part to write over the reached states"
            )));
        };
        total.states += states.len() as u64;
        let symbols = slot.stats.policy.symbols.take();
        let mut entry = policy_entry(&file, &s, symbols);
        if !parts.is_one() {
            // A solve of several parts names the age's folder of parts, as the pass did.
            entry.file = std::mem::take(&mut slot.stats.policy.file);
        }
        slot.stats.policy = entry;
        slot.stats.n_reached = Some(states.len() as u64);
    }
    if let Some((age, kids)) = pending.iter().find(|(_, v)| !v.is_empty()) {
        return Err(SolveError::Internal(format!(
            "the reach pass reached {} states of age {age}, past the solve's ages",
            kids.len()
        )));
    }
    // The files are durable before the manifest that lists them.
    store.sync()?;
    Ok(total)
}

/// The policy files of one age, one a part (`None` for a part that wrote none), each checked
/// against the board, the age and the variant.
struct PartFiles {
    parts: Parts,
    files: Vec<(PathBuf, Option<Policy<Vec<u8>>>)>,
}

impl PartFiles {
    fn read(store: &Store, shape: Shape, name: &str, age: u32, parts: Parts) -> Result<PartFiles> {
        let (rows, cols) = (shape.rows() as u8, shape.cols() as u8);
        let mut files = Vec::new();
        for part in 0..parts.count.max(1) {
            let path = store.layout().policy_file_of(shape, name, age, part, parts);
            if !parts.is_one() && !path.exists() {
                files.push((path, None));
                continue;
            }
            let bytes = store.read_file(&path)?;
            let damaged = |what: String| SolveError::from(StoreError::corrupt(&path, what));
            let policy = Policy::from_bytes(bytes).map_err(|e| damaged(e.to_string()))?;
            policy
                .expect(rows, cols, age, name)
                .map_err(|e| damaged(e.to_string()))?;
            files.push((path, Some(policy)));
        }
        Ok(PartFiles { parts, files })
    }

    /// The order of moves the files' ranks follow (the same in every part).
    fn order(&self) -> Result<Order> {
        let mut order = None;
        for (path, policy) in &self.files {
            let Some(policy) = policy else { continue };
            let o = match policy.header().order.map(Order::from_id) {
                Some(Some(o)) => o,
                _ => {
                    return Err(
                        StoreError::corrupt(path, "no order of moves this solver knows").into(),
                    )
                }
            };
            if order.is_some_and(|x| x != o) {
                return Err(StoreError::corrupt(
                    path,
                    "another order of moves than its age's other parts",
                )
                .into());
            }
            order = Some(o);
        }
        order.ok_or_else(|| SolveError::Internal("an age without a policy file".into()))
    }

    /// The file holding state `s`, and its path.
    fn of(&self, s: u64, shape: Shape) -> Result<(&Policy<Vec<u8>>, &PathBuf)> {
        let (path, policy) = &self.files[self.parts.of(s, shape) as usize];
        let policy = policy.as_ref().ok_or_else(|| {
            StoreError::corrupt(path, format!("missing, and state {s:#x} is its part's"))
        })?;
        Ok((policy, path))
    }

    /// Which parts had a file.
    fn present(&self) -> Vec<bool> {
        self.files.iter().map(|(_, p)| p.is_some()).collect()
    }
}

/// The sizes of two parts' files together.
fn plus(a: PolicyStats, b: &PolicyStats) -> PolicyStats {
    let mut levels = a.levels;
    for (x, y) in levels.iter_mut().zip(b.levels) {
        *x += y;
    }
    PolicyStats {
        keys: a.keys + b.keys,
        shards: a.shards + b.shards,
        file_bytes: a.file_bytes + b.file_bytes,
        states: a.states + b.states,
        levels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::variant::Given;
    use crate::rules::{Group, Shape};
    use std::collections::{BTreeMap, BTreeSet};

    /// Every start, and every spawn after every move a step takes, is reached; a naive
    /// breadth-first walk with the same choices finds the same states.
    #[test]
    fn the_reached_set_holds_the_starts_and_is_closed() {
        let game = Game::new(Shape::new(2, 3).unwrap(), Group::Full);
        let v = Variant::parse("goal-32", Given::default()).unwrap();
        let class = v.forward_class();
        // Optimal moves: all valid ones count as tied, so the tie-breaks choose every move.
        let known = |_: u64, _: u8| Ok(Known::Optimal(0b1111));
        let mut pending: BTreeMap<u32, Vec<u64>> = forward::seeds(&game, &class);
        let starts: BTreeSet<u64> = pending.values().flatten().copied().collect();
        let mut reached: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        let mut age = 2;
        while age < 200 {
            let states = layer::sort_dedup(pending.remove(&age).unwrap_or_default());
            let s = step(&game, &class, &states, known).unwrap();
            assert_eq!(s.ranks.len(), states.len());
            let (two, four) = spawns(&game, &class, &s.afterstates);
            pending.entry(age + 2).or_default().extend(two);
            pending.entry(age + 4).or_default().extend(four);
            // Naive: each state's own move and its spawns, one at a time.
            for (&st, &r) in states.iter().zip(&s.ranks) {
                let ranked = rank_moves(Order::POLICY, &game.rules.moves(st), game.shape());
                if ranked.len == 0 || forward::absorbed(&class, st) {
                    assert_eq!(r, 0);
                    continue;
                }
                let d = ranked.moves()[usize::from(r)];
                let a = game.canon(game.rules.apply(st, d).unwrap().0);
                assert!(s.afterstates.binary_search(&a).is_ok());
                for i in (0..6).filter(|&i| board::cell(a, i) == 0) {
                    for (e, next) in [(1u8, age + 2), (2, age + 4)] {
                        let kid = game.canon(board::place(a, i, e));
                        assert!(pending[&next].contains(&kid), "{kid:#x} of {st:#x}");
                    }
                }
            }
            reached.insert(age, states);
            age += 2;
        }
        let all: BTreeSet<u64> = reached.values().flatten().copied().collect();
        assert!(starts.is_subset(&all));
        assert!(pending.values().all(Vec::is_empty));
    }

    /// A state with one optimal move takes it; tied ones prefer an afterstate another state
    /// takes, then the fewest empty cells; a move already chosen is kept.
    #[test]
    fn tie_breaks_keep_the_set_small() {
        let game = Game::new(Shape::new(3, 3).unwrap(), Group::Full);
        let v = Variant::parse("expectation", Given::default()).unwrap();
        let class = v.forward_class();
        let shape = game.shape();
        let b = |t: &str| game.canon(crate::rules::parse_board(t, shape).unwrap());
        let one = b("2 2 ./. . ./. . 4");
        let tied = b("4 . ./. . ./. . 2");
        let states = layer::sort_dedup(vec![one, tied]);
        let optimal = |s: u64| if s == one { 0b0001 } else { 0b1111 };
        let got = step(&game, &class, &states, |s, _| {
            Ok(Known::Optimal(optimal(s)))
        })
        .unwrap();
        for (&s, &r) in states.iter().zip(&got.ranks) {
            let moves = class.moves(&game.rules, s);
            let d = rank_moves(Order::POLICY, &moves, game.shape()).moves()[usize::from(r)];
            assert!(optimal(s) >> (d as u8) & 1 == 1, "{s:#x} takes {d:?}");
            if s == tied {
                // No move of the tied board makes the other's afterstate: the fewest empty
                // cells decide (every move of it keeps 7).
                let empties: Vec<u32> = moves
                    .iter()
                    .flatten()
                    .map(|&(a, _)| board::count_empty(a, 9))
                    .collect();
                let (a, _) = moves[d as usize].unwrap();
                assert_eq!(board::count_empty(a, 9), *empties.iter().min().unwrap());
            }
        }
        // A move already chosen is kept (the last valid one in L, R, U, D here).
        let last = |s: u64| {
            *rank_moves(Order::Fixed, &game.rules.moves(s), game.shape())
                .moves()
                .last()
                .unwrap()
        };
        let kept = step(&game, &class, &states, |s, _| Ok(Known::Chosen(last(s)))).unwrap();
        for (&s, &r) in states.iter().zip(&kept.ranks) {
            let m = rank_moves(Order::POLICY, &game.rules.moves(s), game.shape());
            assert_eq!(m.moves()[usize::from(r)], last(s), "{s:#x}");
        }
        // An invalid one is refused, not followed.
        let invalid = |s: u64| {
            let moves = class.moves(&game.rules, s);
            Dir::ALL.into_iter().find(|&d| moves[d as usize].is_none())
        };
        if let Some(s) = states.iter().copied().find(|&s| invalid(s).is_some()) {
            let d = invalid(s).unwrap();
            assert!(step(&game, &class, &[s], |_, _| Ok(Known::Chosen(d))).is_err());
        }
    }
}
