//! The one way the store puts a file on disk: write a temporary sibling, rename it over the
//! real name. A reader (or a resumed solve) sees the old file or the new one, never half a
//! file.
//!
//! [`write`] also fsyncs the file and its directory, so the file survives a crash once it
//! returns. A solve writes thousands of files, so it uses [`write_batched`] (no fsync) for the
//! files of an age and makes a whole batch durable at once with [`sync_fs`] before it records
//! the batch as done: the record is the only thing resuming trusts. A file too big to hold
//! in memory is streamed through a [`BatchedFile`] (batched the same way).

use std::fs;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::{Result, StoreError};

/// The temporary name `path` is written under (`name.tmp`, in the same directory).
pub fn temp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

/// True if `name` is a temporary file of [`write`] (an unfinished write, never data).
pub fn is_temp(name: &str) -> bool {
    name.ends_with(".tmp")
}

/// Writes `bytes` to `path` atomically but without waiting for the disk; returns the SHA-256
/// of the bytes. The file is durable after the next [`sync_fs`].
pub fn write_batched(path: &Path, bytes: &[u8]) -> Result<String> {
    write_batched_with(path, |w| w.write_all(bytes))?;
    Ok(sha256_hex(bytes))
}

/// The directory `path` goes in (`.` for a bare name), created if missing.
fn make_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))
}

/// [`write_batched`] of the bytes `body` writes (through a buffer), for a file too big to
/// hold twice: nothing is hashed.
pub fn write_batched_with(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut f = BatchedFile::create(path)?;
    body(&mut f).map_err(|e| StoreError::io(&f.tmp, e))?;
    f.commit()
}

/// A file streamed under its temporary name, renamed into place by [`BatchedFile::commit`]
/// (durable after the next [`sync_fs`], like [`write_batched`]), removed if dropped before.
/// Bytes already written can be [patched](BatchedFile::patch): a header field known only
/// at the end (a checksum) without holding the file in memory. The one owner of the
/// temporary-then-rename of a streamed file ([`write_batched_with`] and [`TempFile`] are
/// made of it).
pub struct BatchedFile {
    path: PathBuf,
    tmp: PathBuf,
    /// `None` once committed.
    file: Option<BufWriter<fs::File>>,
}

impl BatchedFile {
    /// Creates `path`'s temporary sibling (and the directories above it), written through a
    /// buffer of 1 MiB.
    pub fn create(path: &Path) -> Result<BatchedFile> {
        BatchedFile::with_buffer(path, 1 << 20)
    }

    fn with_buffer(path: &Path, capacity: usize) -> Result<BatchedFile> {
        make_parent(path)?;
        let tmp = temp_path(path);
        let file = fs::File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
        Ok(BatchedFile {
            path: path.to_path_buf(),
            tmp,
            file: Some(BufWriter::with_capacity(capacity, file)),
        })
    }

    /// The name the file will have.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn file(&mut self) -> &mut BufWriter<fs::File> {
        self.file.as_mut().expect("a file until committed")
    }

    /// Overwrites bytes already written, from `offset` on; later writes go on at the end.
    pub fn patch(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let f = self.file();
        // (BufWriter's seek writes its buffer out first.)
        let put = |f: &mut BufWriter<fs::File>| -> std::io::Result<()> {
            let end = f.seek(SeekFrom::End(0))?;
            debug_assert!(
                offset + bytes.len() as u64 <= end,
                "patching unwritten bytes"
            );
            f.seek(SeekFrom::Start(offset))?;
            f.write_all(bytes)?;
            f.seek(SeekFrom::Start(end)).map(drop)
        };
        put(f).map_err(|e| StoreError::io(&self.tmp, e))
    }

    /// Renames the file into place (durable after the next [`sync_fs`]); on an error the
    /// temporary file is removed.
    pub fn commit(mut self) -> Result<()> {
        let file = self.file.take().expect("a file until committed");
        let put = file
            .into_inner()
            .map_err(|e| StoreError::io(&self.tmp, e.into_error()))
            .and_then(|_| {
                fs::rename(&self.tmp, &self.path).map_err(|e| StoreError::io(&self.path, e))
            });
        if put.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        put
    }
}

impl Write for BatchedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file().write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file().flush()
    }
}

impl Drop for BatchedFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            // Never committed: an unfinished write is not data.
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// A file being written piece by piece under its temporary name, hashed as it goes; put in
/// place by [`TempFile::commit_batched`] (a [`BatchedFile`]), removed if dropped before.
pub struct TempFile {
    file: BatchedFile,
    sha: Sha256,
    bytes: u64,
}

impl TempFile {
    /// Creates `path`'s temporary sibling (and the directories above it).
    pub fn create(path: &Path) -> Result<TempFile> {
        Ok(TempFile {
            // A small buffer for the headers between the big writes (which go through
            // whole); from the allocator's heap, not pages mapped afresh for every file.
            file: BatchedFile::with_buffer(path, 64 << 10)?,
            sha: Sha256::new(),
            bytes: 0,
        })
    }

    /// The name the file will have.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Renames the file into place; returns its length and SHA-256.
    pub fn commit_batched(self) -> Result<(u64, String)> {
        self.file.commit()?;
        let d = self.sha.finalize();
        Ok((self.bytes, d.iter().map(|b| format!("{b:02x}")).collect()))
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Bytes an unprivileged writer may still use on the file system holding `dir`
/// (`statvfs`: available blocks × fragment size).
pub fn free_bytes(dir: &Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        StoreError::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "path holds a NUL byte"),
        )
    })?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a NUL-terminated path that outlives the call; `st` is a writable
    // `statvfs` that the call fills in full when it returns 0 (and is zeroed otherwise).
    let r = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if r != 0 {
        return Err(StoreError::io(dir, std::io::Error::last_os_error()));
    }
    // SAFETY: `statvfs` returned 0, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    // `fsblkcnt_t` and `c_ulong` are 32 bits wide on some targets.
    #[allow(clippy::useless_conversion)]
    Ok(u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
}

/// Makes every file written so far on the file system holding `dir` durable (with their
/// renames): one `syncfs` instead of an fsync per file.
pub fn sync_fs(dir: &Path) -> Result<()> {
    let d = fs::File::open(dir).map_err(|e| StoreError::io(dir, e))?;
    sync_file_system(&d).map_err(|e| StoreError::io(dir, e))
}

#[cfg(target_os = "linux")]
fn sync_file_system(d: &fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `syncfs` only reads the descriptor, which `d` keeps open for the whole call.
    let r = unsafe { libc::syncfs(d.as_raw_fd()) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn sync_file_system(_d: &fs::File) -> std::io::Result<()> {
    // SAFETY: `sync` takes no arguments and cannot fail.
    unsafe { libc::sync() };
    Ok(())
}

#[cfg(not(unix))]
fn sync_file_system(d: &fs::File) -> std::io::Result<()> {
    d.sync_all()
}

/// Writes `bytes` to `path` durably and atomically; returns the SHA-256 of the bytes.
pub fn write(path: &Path, bytes: &[u8]) -> Result<String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let tmp = temp_path(path);
    let put = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    };
    if let Err(e) = put() {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io(&tmp, e));
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io(path, e));
    }
    sync_dir(dir)?;
    Ok(sha256_hex(bytes))
}

/// Puts a file another writer produced at `tmp` (e.g. a PNG a plotting library wrote) in
/// place: fsync it, rename it over `path`, fsync the directory.
pub fn commit(tmp: &Path, path: &Path) -> Result<()> {
    let f = fs::OpenOptions::new()
        .write(true)
        .open(tmp)
        .map_err(|e| StoreError::io(tmp, e))?;
    f.sync_all().map_err(|e| StoreError::io(tmp, e))?;
    drop(f);
    fs::rename(tmp, path).map_err(|e| StoreError::io(path, e))?;
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => sync_dir(d),
        _ => sync_dir(Path::new(".")),
    }
}

/// Makes the entries of `dir` (a rename, a removal) durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    // Directories can be opened for fsync on Unix; elsewhere a rename is still atomic.
    if let Ok(d) = fs::File::open(dir) {
        d.sync_all().map_err(|e| StoreError::io(dir, e))?;
    }
    Ok(())
}

/// Lower-case hexadecimal SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_atomically_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/x.bin");
        let sha = write(&p, b"abc").unwrap();
        assert_eq!(
            sha,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        write(&p, b"second").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second");
        assert!(!temp_path(&p).exists());
    }

    #[test]
    fn a_temp_file_is_hashed_as_written_and_gone_unless_committed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/x.bin");
        let mut f = TempFile::create(&p).unwrap();
        f.write_all(b"a").unwrap();
        f.write_all(b"bc").unwrap();
        assert!(temp_path(&p).exists() && !p.exists());
        let (n, sha) = f.commit_batched().unwrap();
        assert_eq!((n, sha), (3, sha256_hex(b"abc")));
        assert_eq!(fs::read(&p).unwrap(), b"abc");
        assert!(!temp_path(&p).exists());
        let mut f = TempFile::create(&p).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert!(!temp_path(&p).exists());
        assert_eq!(fs::read(&p).unwrap(), b"abc", "the old file stays");
    }

    #[test]
    fn a_batched_file_is_patched_in_place_and_gone_unless_committed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/y.bin");
        let mut f = BatchedFile::create(&p).unwrap();
        f.write_all(b"hello").unwrap();
        f.patch(0, b"J").unwrap();
        // Past the buffer: the patch reaches bytes already on disk.
        let big = vec![7u8; 3 << 20];
        f.write_all(&big).unwrap();
        f.patch(1, b"E").unwrap();
        f.write_all(b"!").unwrap();
        assert!(!p.exists());
        f.commit().unwrap();
        let b = fs::read(&p).unwrap();
        assert_eq!(b.len(), 5 + big.len() + 1);
        assert_eq!((&b[..5], b[b.len() - 1]), (&b"JEllo"[..], b'!'));
        assert!(b[5..b.len() - 1].iter().all(|&x| x == 7));
        assert!(!temp_path(&p).exists());
        let mut f = BatchedFile::create(&p).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert!(!temp_path(&p).exists());
        assert_eq!(fs::read(&p).unwrap().len(), b.len(), "the old file stays");
    }
}
