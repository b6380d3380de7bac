//! Checking a data directory against its manifests: the store's word on whether the files of
//! a solve are the ones it wrote.
//!
//! Three depths. [`Depth::Sizes`] reads no file's bytes: every manifest is checked against the
//! layout (its board, variant and layout version; it lists exactly the files the layout gives
//! for its ages, each once; its totals add up), every listed file is there with its size, and
//! no file of that board and variant is on disk that the manifest does not list.
//! [`Depth::Changed`] adds the SHA-256 of every file changed since its digest was last found
//! right: the *seal* of a board and variant (`.seals/board=B/variant=V.json`, written with the
//! manifest and after every clean check) holds each file's size, inode, modification and
//! change times as they were then, and a file whose status differs is hashed again. It costs
//! a `stat` per file when nothing changed, so every reader runs it before trusting a solve and
//! `solve` runs it before reusing one: a byte written into a file changes its times, so it is
//! caught (damage that leaves the times alone, such as a failing disk, takes a full check).
//! [`Depth::Digests`] hashes every file (in parallel), and checks the contents the manifest
//! vouches for: the `ages` table holds the manifest's per-age counts, and each age's Parquet
//! parts hold as many rows as the `ages` table says.
//!
//! Over a whole directory ([`check_store`]) it also finds partitions without a manifest (an
//! unfinished solve: a killed one, or one running now) and boards solved under more than one
//! symmetry group.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::error::{Result, StoreError};
use super::layout::{Partition, VARIANT_FOLDERS};
use super::manifest::{self, Manifest, LAYOUT_VERSION};
pub use super::problem::{Problem, What};
use super::seal::{self, Seal, Stamp};
use super::{atomic, Store};
use crate::rules::Shape;

/// How deep to look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Manifests against the layout, files against their listed sizes: no file is read.
    Sizes,
    /// Also the SHA-256 of every file changed since its digest was last found right.
    Changed,
    /// Also every file's SHA-256, and the `ages` table against the per-age files.
    Digests,
}

/// Which boards and variants to check (all when `None`).
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub board: Option<Shape>,
    pub variant: Option<String>,
}

impl Filter {
    fn admits(&self, board: &str, variant: &str) -> bool {
        self.board.is_none_or(|b| b.to_string() == board)
            && self.variant.as_deref().is_none_or(|v| v == variant)
    }
}

/// What [`check_store`] looked at and found.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Finished solves (manifests) checked.
    pub solves: usize,
    /// Files listed by those manifests.
    pub files: usize,
    /// Their bytes (as listed).
    pub bytes: u64,
    pub problems: Vec<Problem>,
}

/// Bytes of the files [`check_store`] will hash at [`Depth::Digests`] (for a progress bar).
pub fn bytes_to_hash(store: &Store, filter: &Filter) -> u64 {
    store
        .manifests()
        .into_iter()
        .filter(|(p, _)| filter.admits(&p.board, &p.variant))
        .filter_map(|(_, m)| m.ok())
        .map(|m| m.total_bytes())
        .sum()
}

/// Checks one board and variant: its manifest (read from the store) and its files.
pub fn check_variant(store: &Store, shape: Shape, variant: &str, depth: Depth) -> Vec<Problem> {
    check_variant_with(store, shape, variant, depth, &|_| {})
}

fn check_variant_with(
    store: &Store,
    shape: Shape,
    variant: &str,
    depth: Depth,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<Problem> {
    let layout = store.layout();
    let board = shape.to_string();
    let path = layout.manifest_file(shape, variant);
    let rel = layout.relative(&path);
    if !path.exists() {
        let dirs = layout.variant_dirs(shape, variant);
        let what = if dirs.is_empty() {
            What::NotSolved
        } else {
            What::Unfinished
        };
        let at = dirs.first().map_or(rel, |d| layout.relative(d));
        return vec![Problem::new(&board, variant, at, what)];
    }
    match manifest::read_path(&path) {
        Ok(m) => check_manifest_with(store, shape, variant, &m, depth, progress),
        Err(e) => vec![Problem::new(
            &board,
            variant,
            rel,
            What::Manifest(format!("not a readable manifest: {}", error_text(&e))),
        )],
    }
}

/// Checks the files of a manifest already read (e.g. by a reader about to use it).
pub fn check_manifest(
    store: &Store,
    shape: Shape,
    variant: &str,
    m: &Manifest,
    depth: Depth,
) -> Vec<Problem> {
    check_manifest_with(store, shape, variant, m, depth, &|_| {})
}

fn check_manifest_with(
    store: &Store,
    shape: Shape,
    variant: &str,
    m: &Manifest,
    depth: Depth,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<Problem> {
    let layout = store.layout();
    let board = shape.to_string();
    let mrel = layout.relative(&layout.manifest_file(shape, variant));
    let bad = |s: String| Problem::new(&board, variant, mrel.clone(), What::Manifest(s));
    if m.board != board || m.variant != variant {
        return vec![bad(format!(
            "names board {}, variant {}, but lies where board {board}, variant {variant} belongs",
            m.board, m.variant
        ))];
    }
    if m.layout_version != LAYOUT_VERSION {
        return vec![bad(format!(
            "layout version {} (this tool writes and reads {LAYOUT_VERSION}): `age2048 solve` solves it again",
            m.layout_version
        ))];
    }
    let mut problems = Vec::new();

    // The files the layout gives for the manifest's ages, against the files it lists. A
    // solve of several parts lists each part's files of an age, but for a part without
    // boards of that age: they may be listed (`allowed`), and its age entries name the
    // folder of the parts.
    let mut expected: BTreeSet<String> = BTreeSet::new();
    let mut allowed: BTreeSet<String> = BTreeSet::new();
    let parts = m.parts;
    for a in m.ages.iter().filter(|_| !parts.is_one()) {
        let policy = !m.storage.has_index();
        for p in 0..parts.count {
            let lookup = if policy {
                layout.policy_file_of(shape, variant, a.age, p, parts)
            } else {
                layout.index_file_of(shape, variant, a.age, p, parts)
            };
            allowed.insert(layout.relative(&lookup));
            if m.storage.parquet_at(a.age) {
                for f in [
                    layout.states_file_of(shape, variant, a.age, p),
                    layout.afterstates_file_of(shape, variant, a.age, p),
                ] {
                    allowed.insert(layout.relative(&f));
                }
            }
        }
        let dir = layout.relative(&layout.lookup_dir(shape, variant, a.age, policy));
        let (named, other) = if policy {
            (&a.policy.file, &a.index.file)
        } else {
            (&a.index.file, &a.policy.file)
        };
        if *named != dir || !other.is_empty() {
            problems.push(bad(format!(
                "age {} names the files '{}' and '{}', the layout's folder of its parts is {dir}",
                a.age, a.index.file, a.policy.file
            )));
        }
    }
    for a in m.ages.iter().filter(|_| parts.is_one()) {
        let lookup = if m.storage.has_index() {
            layout.index_file(shape, variant, a.age)
        } else {
            layout.policy_file(shape, variant, a.age)
        };
        expected.insert(layout.relative(&lookup));
        if m.storage.parquet_at(a.age) {
            for p in [
                layout.states_file(shape, variant, a.age),
                layout.afterstates_file(shape, variant, a.age),
            ] {
                expected.insert(layout.relative(&p));
            }
        }
        let lookup = layout.relative(&lookup);
        let (named, other) = if m.storage.has_index() {
            (&a.index.file, &a.policy.file)
        } else {
            (&a.policy.file, &a.index.file)
        };
        if *named != lookup || !other.is_empty() {
            problems.push(bad(format!(
                "age {} names the files '{}' and '{}', the layout's is {lookup}",
                a.age, a.index.file, a.policy.file
            )));
        }
    }
    expected.insert(layout.relative(&layout.ages_file(shape, variant)));
    allowed.extend(expected.iter().cloned());
    let mut listed: BTreeSet<&str> = BTreeSet::new();
    let mut usable = Vec::new();
    for f in &m.files {
        if !listed.insert(f.path.as_str()) {
            problems.push(bad(format!("lists {} twice", f.path)));
        } else if !allowed.contains(&f.path) {
            // Never opened: a manifest names only the files of its own partitions.
            problems.push(bad(format!(
                "lists '{}', which is not a file of board {board}, variant {variant} at its ages",
                f.path
            )));
        } else {
            usable.push(f);
        }
    }
    for e in &expected {
        if !listed.contains(e.as_str()) {
            problems.push(bad(format!("does not list {e}, a file of its ages")));
        }
    }
    let sum = |g: fn(&manifest::AgeStats) -> u64| m.ages.iter().map(g).sum::<u64>();
    for (name, total, parts) in [
        ("n_states", m.n_states, sum(|a| a.n_states)),
        ("n_afterstates", m.n_afterstates, sum(|a| a.n_afterstates)),
        (
            "n_terminal_states",
            m.n_terminal_states,
            sum(|a| a.n_terminal_states),
        ),
    ] {
        if total != parts {
            problems.push(bad(format!(
                "{name} is {total}, its ages add up to {parts}"
            )));
        }
    }

    // Every listed file at its size (and with its digest).
    let sealed = if depth == Depth::Changed {
        seal::read(store.layout(), store.memory_seals(), shape, variant)
    } else {
        Seal::default()
    };
    let checked: Vec<(Option<Problem>, Option<Stamp>, bool)> = usable
        .par_iter()
        .map(|f| {
            let p = store.root().join(&f.path);
            let pb = |what| {
                (
                    Some(Problem::new(&board, variant, f.path.clone(), what)),
                    None,
                    false,
                )
            };
            let md = match fs::metadata(&p) {
                Ok(md) if md.is_file() => md,
                Ok(_) => return pb(What::Missing),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return pb(What::Missing),
                Err(e) => return pb(What::Unreadable(e.to_string())),
            };
            let found = md.len();
            if found != f.bytes {
                return pb(What::Size {
                    listed: f.bytes,
                    found,
                });
            }
            let stamp = Stamp::of(&md, &f.sha256);
            let hash = match depth {
                Depth::Sizes => false,
                Depth::Changed => sealed.files.get(&f.path) != Some(&stamp),
                Depth::Digests => true,
            };
            if hash {
                match sha256_file(&p, progress) {
                    Ok(d) if d == f.sha256 => {}
                    Ok(_) => return pb(What::Digest),
                    Err(e) => return pb(What::Unreadable(e.to_string())),
                }
            }
            (None, Some(stamp), hash)
        })
        .collect();
    let damaged: BTreeSet<String> = checked
        .iter()
        .filter_map(|c| c.0.as_ref())
        .map(|p| p.path.clone())
        .collect();
    let rehashed = checked.iter().any(|c| c.2);
    let stamps: BTreeMap<String, Stamp> = usable
        .iter()
        .zip(&checked)
        .filter_map(|(f, c)| Some((f.path.clone(), c.1.clone()?)))
        .collect();
    problems.extend(checked.into_iter().filter_map(|c| c.0));

    // Files of this board and variant that the manifest does not list.
    for dir in layout.variant_dirs(shape, variant) {
        for file in files_under(&dir) {
            let rel = layout.relative(&file);
            if !listed.contains(rel.as_str()) {
                problems.push(Problem::new(&board, variant, rel, What::Unlisted));
            }
        }
    }

    if depth == Depth::Digests {
        problems.extend(check_ages(store, shape, variant, m, &damaged));
    }
    if problems.is_empty() && rehashed {
        // Every file hashed right: seal them, so the next check hashes none of them again.
        seal::write(
            store.layout(),
            store.memory_seals(),
            shape,
            variant,
            &Seal { files: stamps },
        );
    }
    problems
}

/// One age's (age, states, afterstates, terminal states), as the `ages` table or the
/// manifest gives them.
type AgeCounts = (Option<u64>, Option<u64>, Option<u64>, Option<u64>);

/// The `ages` table against the manifest's per-age figures, and each age's parts against the
/// table's counts (files already found damaged are not read again).
fn check_ages(
    store: &Store,
    shape: Shape,
    variant: &str,
    m: &Manifest,
    damaged: &BTreeSet<String>,
) -> Vec<Problem> {
    let layout = store.layout();
    let board = shape.to_string();
    let mut problems = Vec::new();
    let ages_path = layout.ages_file(shape, variant);
    let ages_rel = layout.relative(&ages_path);
    if damaged.contains(&ages_rel) || !ages_path.exists() {
        return problems;
    }
    let pb = |path: &str, s: String| Problem::new(&board, variant, path, What::Ages(s));
    let cols = match super::parquet::read_columns(
        &ages_path,
        &["age", "n_states", "n_afterstates", "n_terminal_states"],
    ) {
        Ok(c) => c,
        Err(e) => {
            problems.push(Problem::new(
                &board,
                variant,
                ages_rel,
                What::Unreadable(error_text(&e)),
            ));
            return problems;
        }
    };
    let as_u64 = |c: &super::parquet::ColumnData| match c {
        super::parquet::ColumnData::U64(v) => v.clone(),
        _ => Vec::new(),
    };
    let [age, ns, na, nt] = [&cols[0], &cols[1], &cols[2], &cols[3]].map(as_u64);
    let table: Vec<AgeCounts> = (0..age.len())
        .map(|i| {
            (
                age[i],
                ns.get(i).copied().flatten(),
                na.get(i).copied().flatten(),
                nt.get(i).copied().flatten(),
            )
        })
        .collect();
    let listed: Vec<AgeCounts> = m
        .ages
        .iter()
        .map(|a| {
            (
                Some(u64::from(a.age)),
                Some(a.n_states),
                Some(a.n_afterstates),
                Some(a.n_terminal_states),
            )
        })
        .collect();
    if table != listed {
        let first = table
            .iter()
            .zip(&listed)
            .position(|(a, b)| a != b)
            .unwrap_or(table.len().min(listed.len()));
        problems.push(pb(
            &ages_rel,
            format!(
                "{} rows, the manifest lists {} ages; they differ from row {} on (age, states, afterstates, terminal)",
                table.len(),
                listed.len(),
                first + 1
            ),
        ));
        return problems;
    }
    for a in &m.ages {
        for (states, want) in [(true, a.n_states), (false, a.n_afterstates)] {
            // Rows over the parts there are (one in a single-process solve).
            let mut rows = 0;
            let mut first = None;
            for p in 0..m.parts.count.max(1) {
                let path = if states {
                    layout.states_file_of(shape, variant, a.age, p)
                } else {
                    layout.afterstates_file_of(shape, variant, a.age, p)
                };
                let rel = layout.relative(&path);
                if damaged.contains(&rel) {
                    // Reported already; the other parts' rows cannot add up to the count.
                    first = None;
                    break;
                }
                if !path.exists() {
                    continue;
                }
                first.get_or_insert(rel.clone());
                match parquet_rows(&path) {
                    Ok(n) => rows += n,
                    Err(e) => {
                        problems.push(Problem::new(&board, variant, rel, What::Unreadable(e)));
                        first = None;
                        break;
                    }
                }
            }
            if let Some(rel) = first {
                if rows != want {
                    problems.push(pb(
                        &rel,
                        format!("{rows} rows, the ages table says {want} at age {}", a.age),
                    ));
                }
            }
        }
    }
    problems
}

/// Checks every finished solve of the directory that `filter` admits, and finds unfinished
/// ones and boards of mixed symmetry groups. `progress` is told the bytes of each file hashed.
pub fn check_store(
    store: &Store,
    filter: &Filter,
    depth: Depth,
    progress: &(dyn Fn(u64) + Sync),
) -> Summary {
    let layout = store.layout();
    let mut summary = Summary::default();
    let manifests: Vec<Partition> = layout
        .manifests()
        .into_iter()
        .filter(|p| filter.admits(&p.board, &p.variant))
        .collect();
    let finished: BTreeSet<(String, String)> = manifests
        .iter()
        .map(|p| (p.board.clone(), p.variant.clone()))
        .collect();
    // board -> (symmetry -> first variant solved under it)
    let mut groups: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for p in &manifests {
        let rel = layout.relative(&p.dir);
        let Ok(shape) = Shape::parse(&p.board) else {
            summary.problems.push(Problem::new(
                &p.board,
                &p.variant,
                rel,
                What::Manifest(format!("'{}' is not a board size", p.board)),
            ));
            continue;
        };
        summary.solves += 1;
        match manifest::read_path(&p.dir) {
            Ok(m) => {
                summary.files += m.files.len();
                summary.bytes += m.total_bytes();
                // A restricted solve is identified by the symmetries that keep its caps,
                // and compared with no other: it has a group of its own.
                if m.caps.is_none() {
                    groups
                        .entry(p.board.clone())
                        .or_default()
                        .entry(m.symmetry.clone())
                        .or_insert_with(|| p.variant.clone());
                }
                summary.problems.extend(check_manifest_with(
                    store, shape, &p.variant, &m, depth, progress,
                ));
            }
            Err(e) => summary.problems.push(Problem::new(
                &p.board,
                &p.variant,
                rel,
                What::Manifest(format!("not a readable manifest: {}", error_text(&e))),
            )),
        }
    }
    for (board, by_group) in &groups {
        if by_group.len() > 1 {
            let list: Vec<String> = by_group
                .iter()
                .map(|(g, v)| format!("{v} under {g}"))
                .collect();
            summary.problems.push(Problem::new(
                board,
                "",
                layout.relative(&layout.manifest_dir().join(format!("board={board}"))),
                What::MixedSymmetry(format!(
                    "board {board} is solved under more than one symmetry group ({}): its variants cannot be compared; solve them again under one group with --force",
                    list.join(", ")
                )),
            ));
        }
    }
    // Partitions of boards and variants without a manifest.
    let mut unfinished: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    for t in VARIANT_FOLDERS {
        for p in layout.partitions(t) {
            let key = (p.board.clone(), p.variant.clone());
            if filter.admits(&p.board, &p.variant) && !finished.contains(&key) {
                unfinished.entry(key).or_insert(p.dir);
            }
        }
    }
    for ((board, variant), dir) in unfinished {
        summary.problems.push(Problem::new(
            &board,
            &variant,
            layout.relative(&dir),
            What::Unfinished,
        ));
    }
    summary.problems.sort_by(|a, b| a.path.cmp(&b.path));
    summary
}

/// Every file under `dir` except the temporary files of unfinished writes.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(_) => {
                    if !atomic::is_temp(&e.file_name().to_string_lossy()) {
                        out.push(p);
                    }
                }
                Err(_) => out.push(p),
            }
        }
    }
    out.sort();
    out
}

/// Lower-case hexadecimal SHA-256 of a file, read in chunks.
pub fn sha256_file(path: &Path, progress: &(dyn Fn(u64) + Sync)) -> std::io::Result<String> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        progress(n as u64);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Rows of a Parquet part, from its footer.
fn parquet_rows(path: &Path) -> Result<u64, String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let f = File::open(path).map_err(|e| e.to_string())?;
    let r = SerializedFileReader::new(f).map_err(|e| e.to_string())?;
    u64::try_from(r.metadata().file_metadata().num_rows())
        .map_err(|_| "a negative row count".to_string())
}

/// An error and its sources on one line.
fn error_text(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let m = x.to_string();
        if !s.ends_with(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = x.source();
    }
    s
}

/// The manifest of one board and variant, for a reader: [`StoreError::NotSolved`] if there is
/// none, [`StoreError::Damaged`] naming the first problem a [`Depth::Changed`] check finds.
pub fn trusted(store: &Store, shape: Shape, variant: &str) -> Result<Manifest> {
    let m = store.read_manifest(shape, variant)?;
    match check_manifest(store, shape, variant, &m, Depth::Changed).first() {
        None => Ok(m),
        Some(p) => Err(StoreError::damaged(store.root(), p)),
    }
}

/// A finished solve, checked for readers.
#[derive(Clone, Debug)]
pub struct Solved {
    pub shape: Shape,
    pub board: String,
    pub variant: String,
    pub manifest: Manifest,
}

/// Every finished solve of the directory for a reader, with the unfinished ones (partitions
/// without a manifest, which readers leave out). A [`Depth::Changed`] problem of any finished
/// solve, or boards of mixed groups, give [`StoreError::Damaged`] naming the first problem.
pub fn trusted_all(store: &Store) -> Result<(Vec<Solved>, Vec<Problem>)> {
    let summary = check_store(store, &Filter::default(), Depth::Changed, &|_| {});
    let (unfinished, damage): (Vec<Problem>, Vec<Problem>) = summary
        .problems
        .into_iter()
        .partition(|p| p.what == What::Unfinished);
    if let Some(p) = damage.first() {
        return Err(StoreError::damaged(store.root(), p));
    }
    let mut solved = Vec::new();
    for (p, m) in store.manifests() {
        let shape =
            Shape::parse(&p.board).map_err(|e| StoreError::corrupt(&p.dir, e.to_string()))?;
        solved.push(Solved {
            shape,
            board: p.board,
            variant: p.variant,
            manifest: m?,
        });
    }
    Ok((solved, unfinished))
}
