//! The seals of a data directory: per board and variant, each file's status (size, inode,
//! modification and change times) when its SHA-256 was last found right, so that a check at
//! [`Depth::Changed`](super::verify::Depth::Changed) hashes again only the files changed
//! since. A read-only store keeps them in its process's memory instead of on disk.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::atomic;
use super::layout::Layout;
use super::manifest::Manifest;
use crate::rules::Shape;

/// Seals kept in memory, by seal file: their JSON as it would be on disk.
pub(crate) type MemorySeals = Mutex<HashMap<PathBuf, Vec<u8>>>;

/// What a file's status was when its SHA-256 was last found right.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Stamp {
    sha256: String,
    bytes: u64,
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    #[cfg(unix)]
    pub(super) fn of(md: &fs::Metadata, sha256: &str) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            sha256: sha256.to_string(),
            bytes: md.len(),
            dev: md.dev(),
            ino: md.ino(),
            mtime_ns: ns(md.mtime(), md.mtime_nsec()),
            ctime_ns: ns(md.ctime(), md.ctime_nsec()),
        }
    }

    #[cfg(not(unix))]
    pub(super) fn of(md: &fs::Metadata, sha256: &str) -> Stamp {
        let ns = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(-1, |d| d.as_nanos() as i128)
        };
        Stamp {
            sha256: sha256.to_string(),
            bytes: md.len(),
            dev: 0,
            ino: 0,
            mtime_ns: ns(md.modified()),
            ctime_ns: ns(md.created()),
        }
    }
}

/// The seal of a board and variant: a [`Stamp`] per file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct Seal {
    pub(super) files: BTreeMap<String, Stamp>,
}

/// The seal on disk; an empty one if there is none or it cannot be read (every file is then
/// hashed: a seal only ever spares work).
pub(super) fn read(
    layout: &Layout,
    memory: Option<&MemorySeals>,
    shape: Shape,
    variant: &str,
) -> Seal {
    let path = layout.seal_file(shape, variant);
    let kept = memory.and_then(|m| m.lock().ok()?.get(&path).cloned());
    kept.or_else(|| fs::read(&path).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Writes a seal, if it can: a directory a reader may not write keeps its old seal (and its
/// files are hashed again next time). A read-only store keeps it in memory instead.
pub(super) fn write(
    layout: &Layout,
    memory: Option<&MemorySeals>,
    shape: Shape,
    variant: &str,
    seal: &Seal,
) {
    if let Ok(bytes) = serde_json::to_vec(seal) {
        let path = layout.seal_file(shape, variant);
        match memory {
            Some(m) => {
                if let Ok(mut m) = m.lock() {
                    m.insert(path, bytes);
                }
            }
            None => {
                let _ = atomic::write_batched(&path, &bytes);
            }
        }
    }
}

/// Seals the files of a manifest just written (their digests were computed from the bytes
/// written): called by [`Store::write_manifest`](super::Store::write_manifest).
pub(super) fn manifest(layout: &Layout, memory: Option<&MemorySeals>, shape: Shape, m: &Manifest) {
    let files = m
        .files
        .iter()
        .filter_map(|f| {
            let md = fs::metadata(layout.root().join(&f.path)).ok()?;
            (md.len() == f.bytes).then(|| (f.path.clone(), Stamp::of(&md, &f.sha256)))
        })
        .collect();
    write(layout, memory, shape, &m.variant, &Seal { files });
}
