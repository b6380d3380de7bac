//! Where everything lives in a data directory: the one definition of every path and the one
//! walker of `key=value` partition folders.
//!
//! ```text
//! states/board=B/variant=V/age=N/part-0.parquet
//! afterstates/board=B/variant=V/age=N/part-0.parquet
//! ages/board=B/variant=V/part-0.parquet
//! index/board=B/variant=V/age=N.a2i
//! policy/board=B/variant=V/age=N.a2p      (the policy layout, instead of index/)
//!
//! a solve of P parts (P processes, `store::parts`): part R of every age
//! states/board=B/variant=V/age=N/part-R.parquet      (and afterstates/ alike)
//! index/board=B/variant=V/age=N/part-R.a2i           (policy/…/age=N/part-R.a2p)
//! manifest/board=B/variant=V.json
//! .work/board=B/<forward class>/          work files of an unfinished solve
//! .lock                                    held by the process writing the directory
//! .seals/board=B/variant=V.json            when each file's SHA-256 was last checked
//! ```
//!
//! Partition values are written the way Hive (and DuckDB, and Polars) read them: characters
//! outside `[A-Za-z0-9._-]` are percent-encoded, so a variant name with `=` in it
//! (`expectation-p4=0.2`) is the folder `variant=expectation-p4%3D0.2` and reads back as its
//! name. Ages are not zero-padded, so readers infer integers.

use std::fs;
use std::path::{Path, PathBuf};

use super::parts::Parts;
use crate::rules::Shape;

/// The folders holding `board=B/variant=V` partitions: every file of a solved board and
/// variant but its manifest lies in one of them.
pub const VARIANT_FOLDERS: [&str; 5] = ["states", "afterstates", "ages", "index", "policy"];

/// The name of every Parquet part (one per partition).
pub const PART: &str = "part-0.parquet";

/// Percent-encodes a partition value (Hive's escaping of path values).
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes of a partition value.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `key=value` with the value escaped.
fn kv(key: &str, value: &str) -> String {
    format!("{key}={}", escape(value))
}

/// The value of a `key=value` folder or file name (without `suffix`), unescaped.
pub fn parse_kv(name: &str, key: &str, suffix: &str) -> Option<String> {
    let v = name.strip_prefix(key)?.strip_prefix('=')?;
    let v = v.strip_suffix(suffix)?;
    Some(unescape(v))
}

/// Paths of one data directory, as the writer of one part of a solve sees them (part 0 of one
/// unless [`Layout::with_part`] says otherwise): `states_file`, `index_file` and the like
/// name that part's files; the `*_of` forms name any part's.
#[derive(Clone, Debug)]
pub struct Layout {
    root: PathBuf,
    part: u32,
    parts: Parts,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Layout {
        Layout {
            root: root.into(),
            part: 0,
            parts: Parts::ONE,
        }
    }

    /// The layout as the writer of part `part` of `parts` sees it.
    pub fn with_part(mut self, part: u32, parts: Parts) -> Layout {
        self.part = part;
        self.parts = parts;
        self
    }

    /// The part this layout writes, and the parts of its solve.
    pub fn part(&self) -> (u32, Parts) {
        (self.part, self.parts)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `TABLE/board=B/variant=V`.
    pub fn partition(&self, table: &str, board: Shape, variant: &str) -> PathBuf {
        self.root
            .join(table)
            .join(kv("board", &board.to_string()))
            .join(kv("variant", variant))
    }

    /// The existing partition folders of a board and variant (see [`VARIANT_FOLDERS`]).
    pub fn variant_dirs(&self, board: Shape, variant: &str) -> Vec<PathBuf> {
        VARIANT_FOLDERS
            .iter()
            .map(|t| self.partition(t, board, variant))
            .filter(|d| d.is_dir())
            .collect()
    }

    pub fn states_file(&self, board: Shape, variant: &str, age: u32) -> PathBuf {
        self.states_file_of(board, variant, age, self.part)
    }

    pub fn afterstates_file(&self, board: Shape, variant: &str, age: u32) -> PathBuf {
        self.afterstates_file_of(board, variant, age, self.part)
    }

    /// Part `part`'s `states` file of an age (`part-0.parquet` of a single-process solve).
    pub fn states_file_of(&self, board: Shape, variant: &str, age: u32, part: u32) -> PathBuf {
        self.partition("states", board, variant)
            .join(format!("age={age}"))
            .join(format!("part-{part}.parquet"))
    }

    /// Part `part`'s `afterstates` file of an age.
    pub fn afterstates_file_of(&self, board: Shape, variant: &str, age: u32, part: u32) -> PathBuf {
        self.partition("afterstates", board, variant)
            .join(format!("age={age}"))
            .join(format!("part-{part}.parquet"))
    }

    pub fn ages_file(&self, board: Shape, variant: &str) -> PathBuf {
        self.partition("ages", board, variant).join(PART)
    }

    pub fn index_dir(&self, board: Shape, variant: &str) -> PathBuf {
        self.partition("index", board, variant)
    }

    pub fn index_file(&self, board: Shape, variant: &str, age: u32) -> PathBuf {
        self.index_file_of(board, variant, age, self.part, self.parts)
    }

    /// The policy file of an age (the policy layout).
    pub fn policy_file(&self, board: Shape, variant: &str, age: u32) -> PathBuf {
        self.policy_file_of(board, variant, age, self.part, self.parts)
    }

    /// The index of an age, or (a solve of several parts) part `part`'s.
    pub fn index_file_of(
        &self,
        board: Shape,
        variant: &str,
        age: u32,
        part: u32,
        parts: Parts,
    ) -> PathBuf {
        age_file(self.index_dir(board, variant), age, "a2i", part, parts)
    }

    /// The policy file of an age, or (a solve of several parts) part `part`'s.
    pub fn policy_file_of(
        &self,
        board: Shape,
        variant: &str,
        age: u32,
        part: u32,
        parts: Parts,
    ) -> PathBuf {
        age_file(
            self.partition("policy", board, variant),
            age,
            "a2p",
            part,
            parts,
        )
    }

    /// The folder of an age's look-up parts (index or policy) in a solve of several parts:
    /// what its manifest's age entry names.
    pub fn lookup_dir(&self, board: Shape, variant: &str, age: u32, policy: bool) -> PathBuf {
        let table = if policy { "policy" } else { "index" };
        self.partition(table, board, variant)
            .join(format!("age={age}"))
    }

    pub fn manifest_dir(&self) -> PathBuf {
        self.root.join("manifest")
    }

    pub fn manifest_file(&self, board: Shape, variant: &str) -> PathBuf {
        self.manifest_dir()
            .join(kv("board", &board.to_string()))
            .join(format!("{}.json", kv("variant", variant)))
    }

    pub fn work_root(&self) -> PathBuf {
        self.root.join(".work")
    }

    pub fn work_dir(&self, board: Shape, class_key: &str) -> PathBuf {
        self.work_root()
            .join(kv("board", &board.to_string()))
            .join(class_key)
    }

    /// The work files of process `part` of a solve over `count` processes.
    pub fn work_part_dir(&self, board: Shape, class_key: &str, part: u32, count: u32) -> PathBuf {
        self.work_dir(board, class_key)
            .join(format!("part-{part}-of-{count}"))
    }

    /// The process counts of the unfinished solves whose work files lie in a class's work
    /// folder: 1 for a single process's (its `meta.json` there), N for `part-R-of-N` folders.
    pub fn work_process_counts(&self, board: Shape, class_key: &str) -> Vec<u32> {
        let dir = self.work_dir(board, class_key);
        let mut out: Vec<u32> = dir_entries(&dir)
            .into_iter()
            .filter_map(|(name, _)| {
                if name == "meta.json" {
                    return Some(1);
                }
                name.strip_prefix("part-")?
                    .split_once("-of-")?
                    .1
                    .parse()
                    .ok()
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    pub fn lock_file(&self) -> PathBuf {
        self.root.join(".lock")
    }

    /// The seal of a solved board and variant: the file status (size, inode, times) of each
    /// of its files when its SHA-256 was last found right (see `store::verify`).
    pub fn seal_file(&self, board: Shape, variant: &str) -> PathBuf {
        self.root
            .join(".seals")
            .join(kv("board", &board.to_string()))
            .join(format!("{}.json", kv("variant", variant)))
    }

    /// Path relative to the data directory, with `/` separators (as in manifests).
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Every `board=B/variant=V` folder of `table` (values unescaped), sorted.
    pub fn partitions(&self, table: &str) -> Vec<Partition> {
        let root = self.root.join(table);
        let mut out = Vec::new();
        for (bname, bpath) in dir_entries(&root) {
            let Some(board) = parse_kv(&bname, "board", "") else {
                continue;
            };
            for (vname, vpath) in dir_entries(&bpath) {
                let Some(variant) = parse_kv(&vname, "variant", "") else {
                    continue;
                };
                if vpath.is_dir() {
                    out.push(Partition {
                        board: board.clone(),
                        variant,
                        dir: vpath,
                    });
                }
            }
        }
        out.sort_by(|a, b| (&a.board, &a.variant).cmp(&(&b.board, &b.variant)));
        out
    }

    /// Every manifest `manifest/board=B/variant=V.json`, sorted by board and variant.
    pub fn manifests(&self) -> Vec<Partition> {
        let mut out = Vec::new();
        for (bname, bpath) in dir_entries(&self.manifest_dir()) {
            let Some(board) = parse_kv(&bname, "board", "") else {
                continue;
            };
            for (vname, vpath) in dir_entries(&bpath) {
                if let Some(variant) = parse_kv(&vname, "variant", ".json") {
                    out.push(Partition {
                        board: board.clone(),
                        variant,
                        dir: vpath,
                    });
                }
            }
        }
        out.sort_by(|a, b| (&a.board, &a.variant).cmp(&(&b.board, &b.variant)));
        out
    }
}

/// One `board=B/variant=V` partition (or, for manifests, the manifest file as `dir`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub board: String,
    pub variant: String,
    pub dir: PathBuf,
}

/// An age's look-up file in `dir`: `age=N.EXT`, or (a solve of several parts) part `part`'s,
/// `age=N/part-R.EXT`.
fn age_file(dir: PathBuf, age: u32, ext: &str, part: u32, parts: Parts) -> PathBuf {
    if parts.is_one() {
        dir.join(format!("age={age}.{ext}"))
    } else {
        dir.join(format!("age={age}"))
            .join(format!("part-{part}.{ext}"))
    }
}

/// `(age, path)` of every `age=N` entry of a partition folder with the given suffix (`""` for
/// folders, `".a2i"` for index files), sorted by age; temporary files are skipped.
pub fn ages_in(dir: &Path, suffix: &str) -> Vec<(u32, PathBuf)> {
    let mut out: Vec<(u32, PathBuf)> = dir_entries(dir)
        .into_iter()
        .filter(|(name, _)| !super::atomic::is_temp(name))
        .filter_map(|(name, path)| {
            let age = parse_kv(&name, "age", suffix)?.parse().ok()?;
            Some((age, path))
        })
        .collect();
    out.sort();
    out
}

/// The Parquet parts of an age folder (`part-R.parquet`: one, or one a process of a
/// distributed solve), by part; temporary files are skipped.
pub fn part_files(age_dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<(u32, PathBuf)> = dir_entries(age_dir)
        .into_iter()
        .filter(|(name, _)| !super::atomic::is_temp(name))
        .filter_map(|(name, path)| {
            let r = name.strip_prefix("part-")?.strip_suffix(".parquet")?;
            Some((r.parse().ok()?, path))
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, p)| p).collect()
}

/// `(file name, path)` of the entries of `dir` (none if it cannot be read).
fn dir_entries(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_and_keeps_plain_names() {
        for v in [
            "expectation",
            "goal-1024",
            "expectation-p4=0.2",
            "goal-32-discount=0.95",
            "a b%c/d",
        ] {
            assert_eq!(unescape(&escape(v)), v);
            assert_eq!(escape(v).matches('=').count(), 0);
        }
        assert_eq!(escape("goal-1024"), "goal-1024");
        assert_eq!(escape("expectation-p4=0.2"), "expectation-p4%3D0.2");
        assert_eq!(
            parse_kv("variant=expectation-p4%3D0.2.json", "variant", ".json").as_deref(),
            Some("expectation-p4=0.2")
        );
        assert_eq!(parse_kv("age=12", "age", ""), Some("12".into()));
        assert_eq!(parse_kv("agex=12", "age", ""), None);
    }
}
