//! A solved board and variant opened for look-ups (the shape of a tablebase probe): a board
//! is normalised to its id, the id's age picks the memory-mapped age index, the index gives
//! ranks and afterstate values. Index files are opened on first use, validated (checksum,
//! structure) and checked to be the board, age and variant asked for; the manifest is checked
//! against the files first (sizes, no file missing or stray). A solve in the policy layout has
//! a policy file an age instead, which gives the best move only ([`Tablebase::best_move`]).

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::OnceLock;

use memmap2::Mmap;

use super::best::{evaluate, Answer, Evaluation};
use super::{QueryError, Result};
use crate::index::{AgeIndex, IndexError, Policy, Stored};
use crate::rules::board;
use crate::rules::order::{rank_moves, Order};
use crate::rules::{Dir, Game, Group, Shape, Variant};
use crate::store::{Manifest, Store, StoreError};

/// One solved board and variant.
pub struct Tablebase {
    store: Store,
    game: Game,
    variant: Variant,
    manifest: Manifest,
    /// Ages that have states: their index file, opened on first use. A probe reads an opened
    /// index without a lock (games on every core probe all the time).
    ages: HashMap<u32, AgeSlot>,
}

/// The look-up files of one age (relative paths: the age's one file, or in a solve of
/// several parts one a part, `None` for a part without boards of the age) and, once opened,
/// their indexes or policies.
struct AgeSlot {
    files: Vec<Option<String>>,
    open: Vec<OnceLock<AgeIndex<Mmap>>>,
    policy: Vec<OnceLock<Policy<Mmap>>>,
}

impl Tablebase {
    /// Opens the solve of `shape` and `variant` in `store`, after the store's cheap check of
    /// its files against the manifest (a missing, truncated or stray file is reported as
    /// damage, not as a board the solve did not reach).
    pub fn open(store: &Store, shape: Shape, variant: Variant) -> Result<Tablebase> {
        let manifest = crate::store::verify::trusted(store, shape, &variant.name())?;
        let group = Group::parse(&manifest.symmetry)?;
        let parts = manifest.parts;
        let layout = store.layout();
        let listed: std::collections::HashSet<&str> =
            manifest.files.iter().map(|f| f.path.as_str()).collect();
        let name = variant.name();
        let has_index = manifest.storage.has_index();
        let ages = manifest
            .ages
            .iter()
            .filter(|a| a.n_states > 0 || a.n_afterstates > 0)
            .map(|a| {
                let files: Vec<Option<String>> = if parts.is_one() {
                    let file = if has_index {
                        &a.index.file
                    } else {
                        &a.policy.file
                    };
                    vec![Some(file.clone())]
                } else {
                    (0..parts.count)
                        .map(|p| {
                            let path = if has_index {
                                layout.index_file_of(shape, &name, a.age, p, parts)
                            } else {
                                layout.policy_file_of(shape, &name, a.age, p, parts)
                            };
                            let rel = layout.relative(&path);
                            listed.contains(rel.as_str()).then_some(rel)
                        })
                        .collect()
                };
                let slot = AgeSlot {
                    open: files.iter().map(|_| OnceLock::new()).collect(),
                    policy: files.iter().map(|_| OnceLock::new()).collect(),
                    files,
                };
                (a.age, slot)
            })
            .collect();
        Ok(Tablebase {
            store: store.clone(),
            game: Game::new(shape, group),
            variant,
            manifest,
            ages,
        })
    }

    pub fn game(&self) -> &Game {
        &self.game
    }

    /// The moves the solved variant plays from `code` (L, R, U, D): every valid one, but in a
    /// restricted solve none into a tile above its cell's cap unless it wins.
    pub fn moves(&self, code: u64) -> [Option<(u64, u32)>; 4] {
        self.variant.forward_class().moves(&self.game.rules, code)
    }

    pub fn variant(&self) -> &Variant {
        &self.variant
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Whether the solve keeps values (q-values, regrets): every layout but the policy one.
    pub fn has_values(&self) -> bool {
        self.manifest.storage.has_values()
    }

    /// The error of asking a policy solve for values: `what` needs them.
    pub fn lacks_values(&self, what: &str) -> QueryError {
        QueryError::NoValues {
            board: self.game.shape().to_string(),
            variant: self.variant.name(),
            what: what.to_string(),
        }
    }

    /// The part of the solve holding board `id` (0 in a single-process solve).
    fn part_of(&self, id: u64) -> usize {
        self.manifest.parts.of(id, self.game.shape()) as usize
    }

    /// The index of `age` holding board `id` (the age's, or its part's), or `None` if the
    /// solve has no board of that age there; an error for a solve in the policy layout, which
    /// has no index.
    pub fn index(&self, age: u32, id: u64) -> Result<Option<&AgeIndex<Mmap>>> {
        self.index_part(age, self.part_of(id))
    }

    /// Part `part`'s index of `age` (part 0: a single-process solve's).
    fn index_part(&self, age: u32, part: usize) -> Result<Option<&AgeIndex<Mmap>>> {
        if !self.has_values() {
            return Err(self.lacks_values("q-values and state values"));
        }
        self.opened(
            age,
            part,
            |s| &s.open,
            AgeIndex::from_bytes,
            |ix, r, c, a, v| ix.expect(r, c, a, v),
        )
    }

    /// The policy file of `age` holding board `id` (the policy layout), or `None` if the
    /// solve has no board of that age there.
    fn policy(&self, age: u32, id: u64) -> Result<Option<&Policy<Mmap>>> {
        self.opened(
            age,
            self.part_of(id),
            |s| &s.policy,
            Policy::from_bytes,
            |p, r, c, a, v| p.expect(r, c, a, v),
        )
    }

    /// The look-up file of `age`, opened once into `cell` of its slot: mapped, read by
    /// `parse` (which checks every byte) and checked by `expect` to be this board, age and
    /// variant; `None` if the solve has no board of that age.
    fn opened<T>(
        &self,
        age: u32,
        part: usize,
        cell: impl Fn(&AgeSlot) -> &[OnceLock<T>],
        parse: impl Fn(Mmap) -> std::result::Result<T, IndexError>,
        expect: impl Fn(&T, u8, u8, u32, &str) -> std::result::Result<(), IndexError>,
    ) -> Result<Option<&T>> {
        let Some(slot) = self.ages.get(&age) else {
            return Ok(None);
        };
        let (Some(cell), Some(Some(file))) = (cell(slot).get(part), slot.files.get(part)) else {
            return Ok(None);
        };
        if let Some(x) = cell.get() {
            return Ok(Some(x));
        }
        let (map, path) = self.map(file)?;
        let damaged = |source| QueryError::Index {
            path: path.clone(),
            source,
        };
        let x = parse(map).map_err(damaged)?;
        let shape = self.game.shape();
        let (rows, cols) = (shape.rows() as u8, shape.cols() as u8);
        expect(&x, rows, cols, age, &self.variant.name()).map_err(damaged)?;
        let _ = cell.set(x);
        Ok(cell.get())
    }

    /// A read-only map of the file `rel` of the data directory, and its path. Two threads may
    /// open the same file at once: both check it, one map is kept.
    fn map(&self, rel: &str) -> Result<(Mmap, PathBuf)> {
        let path: PathBuf = self.store.root().join(rel);
        let file = File::open(&path).map_err(|e| StoreError::io(&path, e))?;
        // SAFETY: the map is read-only, and the store never rewrites a file in place (it writes
        // a temporary file and renames it over the old name), so the mapped bytes do not change
        // while we hold the map; a file replaced meanwhile keeps its old inode alive for us.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io(&path, e))?;
        Ok((map, path))
    }

    /// What `best` answers of a board (exactly as given) in every layout: q-values, value and
    /// best move where the solve has values, the best move alone in the policy layout.
    pub fn answer(&self, code: u64, text: &str) -> Result<Answer> {
        if self.has_values() {
            Ok(Answer::of(self.evaluate(code, text)?, &self.variant))
        } else {
            Ok(Answer::move_only(self.best_move(code, text)?))
        }
    }

    /// The best move of a board (exactly as given), in every layout: `None` at a board without
    /// a move (or holding a goal variant's goal tile). In the policy layout a board the solve
    /// did not reach (or, kept over the reached states only, one optimal play does not reach)
    /// gets some valid move, or is refused as unreachable when its age has no policy.
    pub fn best_move(&self, code: u64, text: &str) -> Result<Option<Dir>> {
        if self.has_values() {
            return Ok(self.evaluate(code, text)?.best);
        }
        if self
            .variant
            .goal()
            .is_some_and(|g| board::max_exp(code) >= g)
        {
            return Ok(None);
        }
        // No move: a terminal board, one whose every move a restriction bars, or one at the
        // restriction's required configuration.
        if self.variant.forward_class().absorbs(code)
            || self.moves(code).iter().all(Option::is_none)
        {
            return Ok(None);
        }
        let rules = &self.game.rules;
        let age = board::age(code);
        let unreachable = || QueryError::Unreachable {
            text: text.to_string(),
            board: self.game.shape().to_string(),
            variant: self.variant.name(),
            age,
        };
        let id = self.game.canon(code);
        let policy = self.policy(age, id)?.ok_or_else(unreachable)?;
        // The moves the solve played (under caps, the ones they allow), as its pass ranked them.
        let moves = self.moves(id);
        let valid = moves.iter().filter(|m| m.is_some()).count() as u8;
        let stored = match policy.stored(id, valid).ok_or_else(unreachable)? {
            Stored::Move(d) => Dir::ALL[usize::from(d & 3)],
            // A file of masks is a reach pass's input, never a finished solve's.
            Stored::Mask(_) => {
                return Err(self.damaged_policy(age, id, "masks of optimal moves, not a policy"))
            }
            Stored::Rank(r) => {
                // The rank is among the canonical board's valid moves in the file's order.
                let order = policy
                    .header()
                    .order
                    .and_then(Order::from_id)
                    .ok_or_else(|| {
                        self.damaged_policy(age, id, "an order of moves this reader does not know")
                    })?;
                *rank_moves(order, &moves, self.game.shape())
                    .moves()
                    .get(usize::from(r))
                    .ok_or_else(unreachable)?
            }
        };
        // The move is the canonical board's: the board's own move is the first that makes the
        // same afterstate up to symmetry with the same reward (the same q, so as good).
        let (after, reward) = rules.apply(id, stored).ok_or_else(unreachable)?;
        let target = self.game.canon(after);
        Dir::ALL
            .into_iter()
            .find(|&d| {
                rules
                    .apply(code, d)
                    .is_some_and(|(a, r)| r == reward && self.game.canon(a) == target)
            })
            .map(Some)
            .ok_or_else(unreachable)
    }

    /// The error of the policy file of `age` that holds `id`, saying `what`.
    fn damaged_policy(&self, age: u32, id: u64, what: &str) -> QueryError {
        let file = self
            .ages
            .get(&age)
            .and_then(|s| s.files.get(self.part_of(id))?.as_deref())
            .unwrap_or("");
        QueryError::Index {
            path: self.store.root().join(file),
            source: IndexError::Corrupted { what: what.into() },
        }
    }

    /// Whether the solve keeps the moves of the states optimal play reaches only (`solve
    /// --reach`): a board outside them gets a move that is not an optimal one, and nothing in
    /// the files tells such a board apart.
    pub fn reached_only(&self) -> bool {
        self.manifest.storage.reach
    }

    /// The afterstates of `age` with their stored values, in ascending id order (none if the
    /// solve has no board of that age; an error in the policy layout). A solve of several
    /// parts has them in every part: merged.
    pub fn afterstates(&self, age: u32) -> Result<Box<dyn Iterator<Item = (u64, f64)> + '_>> {
        fn of(ix: &AgeIndex<Mmap>) -> impl Iterator<Item = (u64, f64)> + '_ {
            ix.afterstate_codes()
                .enumerate()
                .map(move |(i, code)| (code, ix.afterstate_value(i)))
        }
        if self.manifest.parts.is_one() {
            let index = self.index_part(age, 0)?;
            return Ok(Box::new(index.into_iter().flat_map(of)));
        }
        let mut all = Vec::new();
        for part in 0..self.manifest.parts.count as usize {
            if let Some(ix) = self.index_part(age, part)? {
                all.extend(of(ix));
            }
        }
        all.sort_unstable_by_key(|x| x.0);
        Ok(Box::new(all.into_iter()))
    }

    /// The q-values, value and best move of a board (exactly as given: its orientation names
    /// the moves). `text` is how the board is shown in errors.
    pub fn evaluate(&self, code: u64, text: &str) -> Result<Evaluation> {
        let age = board::age(code);
        evaluate(
            &self.game,
            &self.variant,
            &|id| self.index(age, id),
            code,
            text,
        )
    }
}
