//! A solved board and variant opened for look-ups (the shape of a tablebase probe): a board
//! is normalised to its id, the id's age picks the memory-mapped age index, the index gives
//! ranks and afterstate values. Index files are opened on first use, validated (checksum,
//! structure) and checked to be the board, age and variant asked for; the manifest is checked
//! against the files first (sizes, no file missing or stray).

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::OnceLock;

use memmap2::Mmap;

use super::best::{evaluate, Evaluation};
use super::{QueryError, Result};
use crate::index::AgeIndex;
use crate::rules::board;
use crate::rules::{Game, Group, Shape, Variant};
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

/// The index file of one age (relative path) and, once opened, its index.
struct AgeSlot {
    file: String,
    open: OnceLock<AgeIndex<Mmap>>,
}

impl Tablebase {
    /// Opens the solve of `shape` and `variant` in `store`, after the store's cheap check of
    /// its files against the manifest (a missing, truncated or stray file is reported as
    /// damage, not as a board the solve did not reach).
    pub fn open(store: &Store, shape: Shape, variant: Variant) -> Result<Tablebase> {
        let manifest = crate::store::verify::trusted(store, shape, &variant.name())?;
        let group = Group::parse(&manifest.symmetry)?;
        let ages = manifest
            .ages
            .iter()
            .filter(|a| a.n_states > 0 || a.n_afterstates > 0)
            .map(|a| {
                let slot = AgeSlot {
                    file: a.index.file.clone(),
                    open: OnceLock::new(),
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

    pub fn variant(&self) -> &Variant {
        &self.variant
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The index of `age`, or `None` if the solve has no board of that age.
    pub fn index(&self, age: u32) -> Result<Option<&AgeIndex<Mmap>>> {
        let Some(slot) = self.ages.get(&age) else {
            return Ok(None);
        };
        if let Some(ix) = slot.open.get() {
            return Ok(Some(ix));
        }
        // Two threads may open the same file at once: both check it, one map is kept.
        let path: PathBuf = self.store.root().join(&slot.file);
        let file = File::open(&path).map_err(|e| StoreError::io(&path, e))?;
        // SAFETY: the map is read-only, and the store never rewrites a file in place (it writes
        // a temporary file and renames it over the old name), so the mapped bytes do not change
        // while we hold the map; a file replaced meanwhile keeps its old inode alive for us.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io(&path, e))?;
        let index_err = |source| QueryError::Index {
            path: path.clone(),
            source,
        };
        let ix = AgeIndex::from_bytes(map).map_err(index_err)?;
        let shape = self.game.shape();
        ix.expect(
            shape.rows() as u8,
            shape.cols() as u8,
            age,
            &self.variant.name(),
        )
        .map_err(index_err)?;
        let _ = slot.open.set(ix);
        Ok(slot.open.get())
    }

    /// The afterstates of `age` with their stored values, in ascending id order (none if the
    /// solve has no board of that age).
    pub fn afterstates(&self, age: u32) -> Result<impl Iterator<Item = (u64, f64)> + '_> {
        let index = self.index(age)?;
        Ok(index.into_iter().flat_map(|ix| {
            ix.afterstate_codes()
                .enumerate()
                .map(move |(i, code)| (code, ix.afterstate_value(i)))
        }))
    }

    /// The q-values, value and best move of a board (exactly as given: its orientation names
    /// the moves). `text` is how the board is shown in errors.
    pub fn evaluate(&self, code: u64, text: &str) -> Result<Evaluation> {
        let age = board::age(code);
        let index = self.index(age)?;
        evaluate(&self.game, &self.variant, index, code, text)
    }
}
