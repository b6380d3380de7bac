//! Work files of an unfinished solve (`.work/board=B/<forward class>/`): the forward layers
//! of every age, the state values the backward pass needs to resume, the per-age records,
//! and the progress of both passes. Layers, values and records are written in batches (no
//! fsync each); the progress files are written durably after a `syncfs`, and they alone say
//! which ages are done. Every file carries a checksum or is parsed strictly, and is reported
//! as damaged rather than trusted; the whole folder is removed when the solve finishes.
//! Every file carries a CRC32 of its body (the JSON files too, in a small binary envelope),
//! so a damaged one is told from a good one; the solver checks them all on resume and redoes
//! the work from the last age whose files are intact.
//!
//! ```text
//! meta.json               who the files belong to (tool version, board, symmetry, class)
//! forward.json            forward progress: the last age whose layers are durable, and
//!                         every age with a layer file
//! backward.json           the variants being valued, the top age, the last age done
//! layers/age=N.ids        states and afterstates, compressed (`idcodec`: header with the
//!                         counts and format version, CRC32, blocks of ≈ 5 bits an id)
//! values/age=N.f64        state values of age N, k per state  (checksummed u64 words,
//!                         written streamed: `ValuesWriter`)
//! records/age=N.json      per-age figures and files written
//! asked/age=N.ids         over several processes: the afterstates of age N this process's
//!                         states move to that others own (what its backward pass asks
//!                         their owners for: read back where an age is valued in one
//!                         segment, made again a segment at a time otherwise; the plan
//!                         counts them), in the layer file's codec as its states; derived
//!                         data: where missing or damaged they count none and are made
//!                         again
//! ```

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::atomic::BatchedFile;
use super::error::{Result, StoreError};
use super::idcodec;
use super::layout::{ages_in, Layout};
use crate::rules::Shape;

const WORK_MAGIC: &[u8; 8] = b"A2048WRK";
/// The envelope of a JSON work file: magic, length, CRC32, then the JSON text.
const JSON_MAGIC: &[u8; 8] = b"A2048WKJ";

/// Who a work folder belongs to: files of another tool version, group or class are not
/// resumed from.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkMeta {
    pub version: String,
    pub board: String,
    pub symmetry: String,
    pub class: String,
}

/// Progress of the forward pass.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ForwardProgress {
    pub done_age: Option<u32>,
    /// Every age whose layer file was written, ascending (ages without states have none).
    #[serde(default)]
    pub ages: Vec<u32>,
    pub min_age: Option<u32>,
    /// Per age with a layer file: its states and afterstates (a streamed age's file keeps
    /// no afterstates; the backward pass makes them again).
    #[serde(default)]
    pub counts: Vec<(u32, u64, u64)>,
    pub complete: bool,
    pub seconds: f64,
}

/// What the backward pass is valuing.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BackwardProgress {
    pub variants: Vec<String>,
    /// How the finished ages were stored, per variant: a resume with another layout starts
    /// the pass over.
    #[serde(default)]
    pub storage: Vec<super::manifest::Storage>,
    /// How the pass's value tables hold values (`f64`, or `fixed32/F` at 2^-F): the values of
    /// finished ages came through them, so a resume holding them otherwise starts over.
    #[serde(default)]
    pub tables: String,
    pub top: u32,
    pub done_age: Option<u32>,
    pub seconds: f64,
}

/// The work folder of one board and forward class.
#[derive(Clone, Debug)]
pub struct WorkDir {
    dir: PathBuf,
    /// Folders above `dir` up to `.work` (removed with it once empty).
    above: usize,
}

impl WorkDir {
    pub fn new(layout: &Layout, board: Shape, class_key: &str) -> WorkDir {
        WorkDir {
            dir: layout.work_dir(board, class_key),
            above: 2,
        }
    }

    /// The work files of process `part` of a solve over `count` processes. Its
    /// [`WorkDir::remove`] leaves the folders above alone (the other processes create and
    /// remove theirs there at the same time): [`WorkDir::remove_empty_parents`] removes them
    /// once every process removed its own.
    pub fn of_part(
        layout: &Layout,
        board: Shape,
        class_key: &str,
        part: u32,
        count: u32,
    ) -> WorkDir {
        WorkDir {
            dir: layout.work_part_dir(board, class_key, part, count),
            above: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn layer_path(&self, age: u32) -> PathBuf {
        self.dir.join("layers").join(format!("age={age}.ids"))
    }

    fn asked_path(&self, age: u32) -> PathBuf {
        self.dir.join("asked").join(format!("age={age}.ids"))
    }

    fn values_path(&self, age: u32) -> PathBuf {
        self.dir.join("values").join(format!("age={age}.f64"))
    }

    fn record_path(&self, age: u32) -> PathBuf {
        self.dir.join("records").join(format!("age={age}.json"))
    }

    /// Reads `meta.json`, `forward.json` or `backward.json`.
    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        read_json(&self.dir.join(name))
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        write_json(&self.dir.join(name), value)
    }

    /// Removes everything (work files of someone else, or of a finished solve), and the
    /// empty folders above it.
    pub fn remove(&self) -> Result<()> {
        remove_dir(&self.dir)?;
        // Drop `.work/board=B` and `.work` too once empty (remove_dir refuses non-empty ones).
        for dir in self.dir.ancestors().skip(1).take(self.above) {
            let _ = fs::remove_dir(dir);
        }
        Ok(())
    }

    /// Removes the work folder of a class and the folders above it, those that are empty.
    pub fn remove_empty_parents(layout: &Layout, board: Shape, class_key: &str) {
        let dir = layout.work_dir(board, class_key);
        for d in dir.ancestors().take(3) {
            let _ = fs::remove_dir(d);
        }
    }

    /// Removes the backward pass's files (values and records).
    pub fn clear_backward(&self) -> Result<()> {
        for sub in ["values", "records"] {
            remove_dir(&self.dir.join(sub))?;
        }
        Ok(())
    }

    /// One work file per age holds both layers, compressed ([`super::idcodec`]: ≈ 5 bits an
    /// id, where the ids themselves take 64).
    pub fn save_layers(&self, age: u32, states: &[u64], afterstates: &[u64]) -> Result<()> {
        self.write_layers(age, &Self::encode_layers(age, states, afterstates))
    }

    /// The layer file of an age, encoded in memory: its length is what a free-disk check
    /// before [`Self::write_layers`] needs.
    pub fn encode_layers(age: u32, states: &[u64], afterstates: &[u64]) -> Vec<u8> {
        idcodec::encode(age, states, afterstates)
    }

    /// Writes a layer file made by [`Self::encode_layers`] (batched: the caller syncs).
    pub fn write_layers(&self, age: u32, bytes: &[u8]) -> Result<()> {
        super::atomic::write_batched(&self.layer_path(age), bytes).map(|_| ())
    }

    /// Writes the afterstates of an age that this process's states move to and others own
    /// (sorted, distinct), encoded by [`Self::encode_layers`] as its states (batched: the
    /// caller syncs).
    pub fn write_asked(&self, age: u32, bytes: &[u8]) -> Result<()> {
        super::atomic::write_batched(&self.asked_path(age), bytes).map(|_| ())
    }

    /// How many afterstates [`Self::write_asked`] wrote for an age, the file checked (header,
    /// checksum, block sizes) but not decoded: `None` where it is missing or damaged (they
    /// are derived data, and the caller makes them again).
    pub fn asked_count(&self, age: u32) -> Option<u64> {
        let bytes = read_file(&self.asked_path(age)).ok()??;
        match idcodec::check(&bytes, age).ok()? {
            (asked, 0) => Some(asked),
            _ => None,
        }
    }

    /// The afterstates [`Self::write_asked`] wrote for an age, decoded and checked (the
    /// header's counts, checksum, blocks, strictly increasing ids): `None` where the file is
    /// missing or damaged (derived data: the caller makes them again rather than trust it).
    pub fn load_asked(&self, age: u32) -> Option<Vec<u64>> {
        let bytes = read_file(&self.asked_path(age)).ok()??;
        match idcodec::decode(&bytes, age).ok()? {
            (asked, after) if after.is_empty() => Some(asked),
            _ => None,
        }
    }

    /// Checks the layer file of an age (its header, checksum and block sizes) without
    /// decoding it. A missing file, or one of another format version, is damaged too.
    pub fn check_layers(&self, age: u32) -> Result<()> {
        let path = self.layer_path(age);
        match read_file(&path)? {
            Some(bytes) => idcodec::check(&bytes, age)
                .map(|_| ())
                .map_err(|e| StoreError::corrupt(path, e.to_string())),
            None => Err(StoreError::corrupt(path, "missing")),
        }
    }

    /// The layer file of an age, checked (header, checksum, block sizes) and kept encoded, to
    /// decode a chunk at a time; `None` if the age has none.
    pub fn open_layers(&self, age: u32) -> Result<Option<idcodec::LayerFile>> {
        let path = self.layer_path(age);
        match read_file(&path)? {
            Some(bytes) => idcodec::LayerFile::open(bytes, age)
                .map(Some)
                .map_err(|e| StoreError::corrupt(path, e.to_string())),
            None => Ok(None),
        }
    }

    /// The states and afterstates of an age (empty if the forward pass found none).
    pub fn load_layers(&self, age: u32) -> Result<(Vec<u64>, Vec<u64>)> {
        let path = self.layer_path(age);
        match read_file(&path)? {
            Some(bytes) => {
                idcodec::decode(&bytes, age).map_err(|e| StoreError::corrupt(path, e.to_string()))
            }
            None => Ok((Vec::new(), Vec::new())),
        }
    }

    /// Bytes of the work folder's files.
    pub fn bytes(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            let Ok(entries) = fs::read_dir(dir) else {
                return 0;
            };
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    _ => e.metadata().map_or(0, |m| m.len()),
                })
                .sum()
        }
        walk(&self.dir)
    }

    /// Removes the layer files of the ages above `above` (the backward pass's: no later step
    /// reads them); the forward progress still lists them, and a resume checks only the rest.
    pub fn retire_layers(&self, above: u32) -> Result<()> {
        for age in self.layer_ages().into_iter().filter(|&a| a > above) {
            for p in [self.layer_path(age), self.asked_path(age)] {
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(StoreError::io(p, e)),
                }
            }
        }
        Ok(())
    }

    /// Boards (states and afterstates) in the layer file of an age, from its header alone (0
    /// if it has none): for progress, not to be trusted as data.
    pub fn layer_boards(&self, age: u32) -> u64 {
        let mut header = Vec::with_capacity(64);
        let read = fs::File::open(self.layer_path(age))
            .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 64), &mut header));
        read.ok()
            .and_then(|_| idcodec::counts(&header))
            .map_or(0, |(s, a)| s.saturating_add(a))
    }

    /// Ages with a layer file, ascending.
    pub fn layer_ages(&self) -> Vec<u32> {
        ages_in(&self.dir.join("layers"), ".ids")
            .into_iter()
            .map(|(a, _)| a)
            .collect()
    }

    pub fn save_values(&self, age: u32, values: &[f64]) -> Result<()> {
        let mut w = self.values_writer(age, values.len())?;
        w.push(values)?;
        w.finish()
    }

    /// The values file of an age, written piece by piece: the `count` values pushed in order
    /// make the file [`Self::save_values`] of them all makes (batched: the caller syncs).
    pub fn values_writer(&self, age: u32, count: usize) -> Result<ValuesWriter> {
        Ok(ValuesWriter(WordsWriter::create(
            &self.values_path(age),
            count,
        )?))
    }

    /// State values of an age (`None` if not saved).
    pub fn load_values(&self, age: u32) -> Result<Option<Vec<f64>>> {
        Ok(
            read_words(&self.values_path(age))?
                .map(|w| w.into_iter().map(f64::from_bits).collect()),
        )
    }

    /// The path of an age's layer file (to name it in the error of a damaged chunk of
    /// [`Self::open_layers`]).
    pub fn layer_path_of(&self, age: u32) -> PathBuf {
        self.layer_path(age)
    }

    /// The state values of an age read `chunk` at a time (`None` if not saved): a big age's
    /// values need not be in memory at once.
    pub fn values_chunks(&self, age: u32, chunk: usize) -> Result<Option<ValuesReader>> {
        use std::io::Read;
        let path = self.values_path(age);
        let file = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(path, e)),
        };
        let len = file.metadata().map_err(|e| StoreError::io(&path, e))?.len();
        let mut file = std::io::BufReader::with_capacity(1 << 20, file);
        let mut head = [0u8; ENVELOPE_BYTES];
        if len < ENVELOPE_BYTES as u64
            || file.read_exact(&mut head).is_err()
            || &head[..8] != WORK_MAGIC
        {
            return Err(StoreError::corrupt(
                path,
                "not a work file (bad magic or too short)",
            ));
        }
        let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
        let (count, crc) = (word(8), word(CRC_AT));
        if len - ENVELOPE_BYTES as u64 != count.saturating_mul(8) {
            return Err(StoreError::corrupt(path, "truncated"));
        }
        Ok(Some(ValuesReader {
            path,
            file,
            count,
            left: count,
            crc: crc32fast::Hasher::new(),
            want: crc,
            chunk: chunk.max(1),
        }))
    }

    pub fn values_path_of(&self, age: u32) -> PathBuf {
        self.values_path(age)
    }

    pub fn remove_values(&self, age: u32) -> Result<()> {
        let p = self.values_path(age);
        match fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(p, e)),
        }
    }

    /// Saves the record of a finished age (durable after the next sync).
    pub fn save_record<T: Serialize>(&self, age: u32, record: &T) -> Result<()> {
        let path = self.record_path(age);
        super::atomic::write_batched(&path, &encode_json(&path, record)?).map(|_| ())
    }

    pub fn load_record<T: DeserializeOwned>(&self, age: u32) -> Result<Option<T>> {
        read_json(&self.record_path(age))
    }

    pub fn record_path_of(&self, age: u32) -> PathBuf {
        self.record_path(age)
    }
}

fn remove_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(dir, e)),
    }
}

/// Writes u64 words (ids or f64 bits) as a checksummed work file (durable after a sync).
pub fn write_words(path: &Path, words: &[u64]) -> Result<()> {
    let mut w = WordsWriter::create(path, words.len())?;
    w.push_with(words.len(), words.iter().copied())?;
    w.finish()
}

/// A state values file being written ([`WorkDir::values_writer`]): under its temporary name
/// until [`ValuesWriter::finish`] renames it into place; dropped before, it leaves nothing (a
/// file already at the path stays as it was).
pub struct ValuesWriter(WordsWriter);

impl ValuesWriter {
    /// The next values; more than the count in all is an error (and writes none of them).
    pub fn push(&mut self, values: &[f64]) -> Result<()> {
        self.0
            .push_with(values.len(), values.iter().map(|v| v.to_bits()))
    }

    /// Puts the file in place (durable after the next sync); an error if fewer values than
    /// the count were pushed.
    pub fn finish(self) -> Result<()> {
        self.0.finish()
    }
}

/// A file of [`write_words`]'s format streamed in one pass: the envelope's CRC (which comes
/// before the body) is patched in at the end, so the body is never in memory (a big age's
/// values are gigabytes).
struct WordsWriter {
    file: BatchedFile,
    count: u64,
    written: u64,
    /// A write failed: the file is not finished.
    failed: bool,
    crc: crc32fast::Hasher,
    /// Words as bytes, for the CRC and the file.
    buf: Vec<u8>,
}

impl WordsWriter {
    fn create(path: &Path, count: usize) -> Result<WordsWriter> {
        let mut file = BatchedFile::create(path)?;
        let count = count as u64;
        file.write_all(&envelope_header(WORK_MAGIC, count, 0))
            .map_err(|e| StoreError::io(path, e))?;
        Ok(WordsWriter {
            file,
            count,
            written: 0,
            failed: false,
            crc: crc32fast::Hasher::new(),
            buf: Vec::with_capacity(1 << 16),
        })
    }

    fn refused(&self, what: String) -> StoreError {
        StoreError::io(
            self.file.path(),
            std::io::Error::new(std::io::ErrorKind::InvalidInput, what),
        )
    }

    /// Appends the `n` words of `words`.
    fn push_with(&mut self, n: usize, words: impl Iterator<Item = u64>) -> Result<()> {
        if self.failed {
            return Err(self.refused("an earlier write failed".into()));
        }
        if self.written + n as u64 > self.count {
            return Err(self.refused(format!(
                "{} words pushed to a file of {}",
                self.written + n as u64,
                self.count
            )));
        }
        let mut words = words.take(n);
        let mut pushed = 0;
        loop {
            self.buf.clear();
            for w in words.by_ref().take(1 << 13) {
                self.buf.extend_from_slice(&w.to_le_bytes());
            }
            if self.buf.is_empty() {
                break;
            }
            pushed += self.buf.len() / 8;
            self.crc.update(&self.buf);
            if let Err(e) = self.file.write_all(&self.buf) {
                self.failed = true;
                return Err(StoreError::io(self.file.path(), e));
            }
        }
        debug_assert_eq!(pushed, n, "the iterator yields its count");
        self.written += pushed as u64;
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        if self.failed {
            return Err(self.refused("an earlier write failed".into()));
        }
        if self.written != self.count {
            return Err(self.refused(format!("{} words of {} pushed", self.written, self.count)));
        }
        let crc = std::mem::take(&mut self.crc).finalize();
        self.file
            .patch(CRC_AT as u64, &u64::from(crc).to_le_bytes())?;
        self.file.commit()
    }
}

/// A values file read a chunk at a time ([`WorkDir::values_chunks`]): its header checked at
/// once, its CRC when the last chunk has been read (the last item is then an error if the file
/// is damaged, so that what was built from the chunks is thrown away).
pub struct ValuesReader {
    path: PathBuf,
    file: std::io::BufReader<fs::File>,
    count: u64,
    left: u64,
    crc: crc32fast::Hasher,
    want: u64,
    chunk: usize,
}

impl ValuesReader {
    /// Values the file holds (its header's count, its length checked against it).
    pub fn total(&self) -> u64 {
        self.count
    }
}

impl Iterator for ValuesReader {
    type Item = Result<Vec<f64>>;

    fn next(&mut self) -> Option<Result<Vec<f64>>> {
        use std::io::Read;
        if self.left == 0 {
            return None;
        }
        let n = (self.chunk as u64).min(self.left) as usize;
        let mut bytes = vec![0u8; n * 8];
        if let Err(e) = self.file.read_exact(&mut bytes) {
            self.left = 0;
            return Some(Err(StoreError::io(&self.path, e)));
        }
        self.crc.update(&bytes);
        self.left -= n as u64;
        if self.left == 0 && u64::from(self.crc.clone().finalize()) != self.want {
            return Some(Err(StoreError::corrupt(&self.path, "checksum mismatch")));
        }
        Some(Ok(bytes
            .chunks_exact(8)
            .map(|w| f64::from_bits(u64::from_le_bytes(w.try_into().expect("8 bytes"))))
            .collect()))
    }
}

/// Bytes of an envelope before its body: magic, count, CRC.
const ENVELOPE_BYTES: usize = 24;
/// Where an envelope's CRC is.
const CRC_AT: usize = 16;

/// The head of an envelope: `magic`, `count`, `crc` (the CRC32 of the body).
fn envelope_header(magic: &[u8; 8], count: u64, crc: u32) -> [u8; ENVELOPE_BYTES] {
    let mut h = [0u8; ENVELOPE_BYTES];
    h[..8].copy_from_slice(magic);
    h[8..CRC_AT].copy_from_slice(&count.to_le_bytes());
    h[CRC_AT..].copy_from_slice(&u64::from(crc).to_le_bytes());
    h
}

/// `magic`, `count`, the CRC32 of `body`, then `body`.
fn envelope(magic: &[u8; 8], count: u64, body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(ENVELOPE_BYTES + body.len());
    bytes.extend_from_slice(&envelope_header(magic, count, crc32fast::hash(body)));
    bytes.extend_from_slice(body);
    bytes
}

/// The body of an envelope of `count` units of `unit` bytes, checked (magic, length, CRC).
fn open_envelope<'a>(path: &Path, magic: &[u8; 8], bytes: &'a [u8], unit: u64) -> Result<&'a [u8]> {
    let corrupt = |what: &str| StoreError::corrupt(path, what);
    let word = |i: usize| -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[i..i + 8]);
        u64::from_le_bytes(w)
    };
    if bytes.len() < ENVELOPE_BYTES || &bytes[..8] != magic {
        return Err(corrupt("not a work file (bad magic or too short)"));
    }
    let (n, crc) = (word(8), word(CRC_AT));
    let body = &bytes[ENVELOPE_BYTES..];
    if (body.len() as u64) != n.saturating_mul(unit) {
        return Err(corrupt("truncated"));
    }
    if u64::from(crc32fast::hash(body)) != crc {
        return Err(corrupt("checksum mismatch"));
    }
    Ok(body)
}

/// The bytes of a file; `None` if it does not exist.
fn read_file(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Reads a work file written by [`write_words`]; `None` if it does not exist.
pub fn read_words(path: &Path) -> Result<Option<Vec<u64>>> {
    let Some(bytes) = read_file(path)? else {
        return Ok(None);
    };
    let body = open_envelope(path, WORK_MAGIC, &bytes, 8)?;
    Ok(Some(
        body.chunks_exact(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect(),
    ))
}

fn encode_json<T: Serialize>(path: &Path, value: &T) -> Result<Vec<u8>> {
    let text = serde_json::to_vec_pretty(value)
        .map_err(|e| StoreError::corrupt(path, format!("cannot encode: {e}")))?;
    Ok(envelope(JSON_MAGIC, text.len() as u64, &text))
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    super::atomic::write(path, &encode_json(path, value)?).map(|_| ())
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match fs::read(path) {
        Ok(b) => {
            let body = open_envelope(path, JSON_MAGIC, &b, 1)?;
            serde_json::from_slice(body)
                .map(Some)
                .map_err(|e| StoreError::corrupt(path, e.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_files_round_trip_and_detect_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.ids");
        write_words(&p, &[1, 5, 9]).unwrap();
        assert_eq!(read_words(&p).unwrap(), Some(vec![1, 5, 9]));
        let mut b = fs::read(&p).unwrap();
        b[30] ^= 1;
        fs::write(&p, &b).unwrap();
        assert!(matches!(read_words(&p), Err(StoreError::Corrupt { .. })));
        fs::write(&p, &b[..20]).unwrap();
        assert!(matches!(read_words(&p), Err(StoreError::Corrupt { .. })));
        assert_eq!(read_words(&dir.path().join("none")).unwrap(), None);

        // Layer files: round trip, counts from the header, and every damage is Corrupt: a
        // flipped byte, a truncation, a file of the raw-word format before (redone).
        let layout = Layout::new(dir.path());
        let work = WorkDir::new(&layout, Shape::parse("2x2").unwrap(), "spawn24");
        let (s, a) = (vec![0x21, 0x1002, 0x2001], vec![0x12, 0x1002]);
        work.save_layers(6, &s, &a).unwrap();
        assert_eq!(work.load_layers(6).unwrap(), (s.clone(), a.clone()));
        assert_eq!(work.layer_boards(6), 5);
        work.check_layers(6).unwrap();
        let lp = work.layer_path(6);
        let good = fs::read(&lp).unwrap();
        assert_eq!(good, WorkDir::encode_layers(6, &s, &a));
        let f = work.open_layers(6).unwrap().unwrap();
        assert_eq!((f.states(), f.afterstates()), (3, 2));
        let chunks: Vec<Vec<u64>> = f.state_chunks(1).map(|c| c.unwrap()).collect();
        assert_eq!(chunks, std::slice::from_ref(&s));
        let chunks: Vec<Vec<u64>> = f.afterstate_chunks(1).map(|c| c.unwrap()).collect();
        assert_eq!(chunks, std::slice::from_ref(&a));
        let damaged = |bytes: &[u8]| {
            fs::write(&lp, bytes).unwrap();
            matches!(work.check_layers(6), Err(StoreError::Corrupt { .. }))
                && matches!(work.load_layers(6), Err(StoreError::Corrupt { .. }))
                && matches!(work.open_layers(6), Err(StoreError::Corrupt { .. }))
        };
        let mut b = good.clone();
        let mid = b.len() / 2;
        b[mid] ^= 1;
        assert!(damaged(&b));
        assert!(damaged(&good[..good.len() - 1]));
        write_words(&lp, &[3, 0x21, 0x1002, 0x2001, 0x12, 0x1002]).unwrap();
        assert!(damaged(&fs::read(&lp).unwrap()));
        fs::remove_file(&lp).unwrap();
        assert!(matches!(
            work.check_layers(6),
            Err(StoreError::Corrupt { .. })
        ));
        assert_eq!(work.load_layers(6).unwrap(), (vec![], vec![]));
        assert!(work.open_layers(6).unwrap().is_none());
        assert_eq!(work.layer_boards(6), 0);

        // JSON work files too: a changed digit is caught, not read as another number.
        let j = dir.path().join("x.json");
        let fwd = ForwardProgress {
            done_age: Some(40),
            ages: vec![4, 6],
            ..Default::default()
        };
        write_json(&j, &fwd).unwrap();
        let back: ForwardProgress = read_json(&j).unwrap().unwrap();
        assert_eq!((back.done_age, back.ages), (Some(40), vec![4, 6]));
        let mut b = fs::read(&j).unwrap();
        let at = b.windows(2).position(|w| w == b"40").unwrap();
        b[at] = b'9';
        fs::write(&j, &b).unwrap();
        assert!(matches!(
            read_json::<ForwardProgress>(&j),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn asked_afterstates_are_counted_read_back_and_none_when_missing_or_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let work = WorkDir::new(&layout, Shape::parse("2x2").unwrap(), "spawn24");
        assert_eq!(work.asked_count(6), None);
        assert_eq!(work.load_asked(6), None);
        let asked = vec![0x12, 0x1002, 0x2001];
        work.write_asked(6, &WorkDir::encode_layers(6, &asked, &[]))
            .unwrap();
        assert_eq!(work.asked_count(6), Some(3));
        assert_eq!(work.load_asked(6), Some(asked.clone()));
        // Another age's file is not this age's.
        fs::copy(work.asked_path(6), work.asked_path(8)).unwrap();
        assert_eq!(work.asked_count(8), None);
        assert_eq!(work.load_asked(8), None);
        let p = work.asked_path(6);
        let mut b = fs::read(&p).unwrap();
        let mid = b.len() / 2;
        b[mid] ^= 1;
        fs::write(&p, &b).unwrap();
        assert_eq!(work.asked_count(6), None);
        assert_eq!(work.load_asked(6), None);
        // A file with afterstates is not one `write_asked` made.
        work.write_asked(6, &WorkDir::encode_layers(6, &asked, &asked))
            .unwrap();
        assert_eq!(work.asked_count(6), None);
        assert_eq!(work.load_asked(6), None);
        // Retired with the layers above an age.
        work.save_layers(6, &asked, &[]).unwrap();
        work.write_asked(6, &WorkDir::encode_layers(6, &asked, &[]))
            .unwrap();
        work.retire_layers(4).unwrap();
        assert!(!p.exists());
    }

    #[test]
    fn streamed_values_make_the_file_save_values_makes() {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};
        let dir = tempfile::tempdir().unwrap();
        let work = WorkDir::new(
            &Layout::new(dir.path()),
            Shape::parse("2x2").unwrap(),
            "spawn24",
        );
        let mut rng = StdRng::seed_from_u64(0xf64);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        // More than the writer's buffers (64 Ki words, 1 MiB) hold; NaN and -0 keep their bits.
        for n in [0usize, 1, 3, 1 << 13, 300_000] {
            let mut v: Vec<f64> = (0..n).map(|_| rng.gen::<f64>() * 1e4 - 5.0).collect();
            if n > 2 {
                v[1] = f64::NAN;
                v[2] = -0.0;
            }
            work.save_values(1, &v).unwrap();
            let want = fs::read(work.values_path_of(1)).unwrap();
            work.remove_values(2).unwrap();
            let mut w = work.values_writer(2, n).unwrap();
            let mut at = 0;
            while at < n || rng.gen_bool(0.3) {
                let most = 1 << rng.gen_range(0..18);
                let k = rng.gen_range(0..=(n - at).min(most));
                w.push(&v[at..at + k]).unwrap();
                at += k;
            }
            assert!(!work.values_path_of(2).exists(), "not before finish");
            w.finish().unwrap();
            assert_eq!(fs::read(work.values_path_of(2)).unwrap(), want, "{n}");
            assert_eq!(bits(&work.load_values(2).unwrap().unwrap()), bits(&v));
        }

        // More values than the count: refused, and none of them written.
        let v: Vec<f64> = (0..10).map(f64::from).collect();
        work.save_values(1, &v).unwrap();
        let want = fs::read(work.values_path_of(1)).unwrap();
        let mut w = work.values_writer(3, 10).unwrap();
        w.push(&v[..6]).unwrap();
        assert!(w.push(&[1.0; 5]).is_err());
        w.push(&v[6..]).unwrap();
        assert!(w.push(&[1.0]).is_err());
        w.finish().unwrap();
        assert_eq!(fs::read(work.values_path_of(3)).unwrap(), want);

        // Fewer: refused at finish, leaving no file (nor a temporary one).
        let path = work.values_path_of(4);
        let mut w = work.values_writer(4, 10).unwrap();
        w.push(&v[..9]).unwrap();
        assert!(w.finish().is_err());
        assert!(!path.exists() && !super::super::atomic::temp_path(&path).exists());
        assert_eq!(work.load_values(4).unwrap(), None);

        // Dropped unfinished: nothing at the path, or the file there before, untouched.
        let mut w = work.values_writer(4, 2).unwrap();
        w.push(&[1.0, 2.0]).unwrap();
        drop(w);
        assert!(!path.exists() && !super::super::atomic::temp_path(&path).exists());
        work.save_values(4, &v).unwrap();
        let mut w = work.values_writer(4, 2).unwrap();
        w.push(&[1.0, 2.0]).unwrap();
        drop(w);
        assert_eq!(work.load_values(4).unwrap(), Some(v.clone()));
        assert!(!super::super::atomic::temp_path(&path).exists());
    }
}
