//! A solved board and variant opened for look-ups (the shape of a tablebase probe): a board
//! is normalised to its id, the id's age picks the memory-mapped age index, the index gives
//! ranks and afterstate values. Index files are opened on first use, validated (checksum,
//! structure) and checked to be the board, age and variant asked for; the manifest is checked
//! against the files first (sizes, no file missing or stray).

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
    /// Ages that have states, with their index file (relative path).
    index_files: HashMap<u32, String>,
    open: Mutex<HashMap<u32, Arc<AgeIndex<Mmap>>>>,
}

impl Tablebase {
    /// Opens the solve of `shape` and `variant` in `store`, after the store's cheap check of
    /// its files against the manifest (a missing, truncated or stray file is reported as
    /// damage, not as a board the solve did not reach).
    pub fn open(store: &Store, shape: Shape, variant: Variant) -> Result<Tablebase> {
        let manifest = crate::store::verify::trusted(store, shape, &variant.name())?;
        let group = Group::parse(&manifest.symmetry)?;
        let index_files = manifest
            .ages
            .iter()
            .filter(|a| a.n_states > 0 || a.n_afterstates > 0)
            .map(|a| (a.age, a.index.file.clone()))
            .collect();
        Ok(Tablebase {
            store: store.clone(),
            game: Game::new(shape, group),
            variant,
            manifest,
            index_files,
            open: Mutex::new(HashMap::new()),
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
    pub fn index(&self, age: u32) -> Result<Option<Arc<AgeIndex<Mmap>>>> {
        let Some(rel) = self.index_files.get(&age) else {
            return Ok(None);
        };
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ix) = open.get(&age) {
            return Ok(Some(ix.clone()));
        }
        let path: PathBuf = self.store.root().join(rel);
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
        let ix = Arc::new(ix);
        open.insert(age, ix.clone());
        Ok(Some(ix))
    }

    /// The q-values, value and best move of a board (exactly as given: its orientation names
    /// the moves). `text` is how the board is shown in errors.
    pub fn evaluate(&self, code: u64, text: &str) -> Result<Evaluation> {
        let age = board::age(code);
        let index = self.index(age)?;
        evaluate(&self.game, &self.variant, index.as_deref(), code, text)
    }
}
