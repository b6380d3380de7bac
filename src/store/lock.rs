//! One writer per data directory: an advisory lock (`flock`) on `DIR/.lock`, held by the
//! process that writes the directory (`solve`) for its whole run, with that process's id in
//! the file so a second writer can say who holds it.
//!
//! The lock file is removed when the lock is released (a directory left by a finished solve
//! holds no trace of it). Removing a lock file is racy unless done with care: a waiter may
//! have opened the old file just before it went. So the holder removes the file *while it
//! still holds the lock*, and whoever acquires a lock checks that the path still names the
//! file it locked; if not, it tries again on the new file. A writer that is killed leaves a
//! stale file with its id, but the kernel drops its lock, so the next writer takes it.
//!
//! Readers take no lock: a manifest appears by an atomic rename and is written last, so a
//! reader sees a finished solve or none.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::error::{Result, StoreError};
use super::layout::Layout;

/// How long a writer retries a lock held only briefly (e.g. by [`holder`] peeking at it)
/// before it reports the directory as busy.
const GRACE: Duration = Duration::from_millis(300);

/// Whether a writer finding the directory busy waits for it or gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Fail at once with [`StoreError::Busy`].
    No,
    /// Block until the holder is done.
    Yes,
}

/// The writer's lock of a data directory; released (and its file removed) when dropped.
#[derive(Debug)]
pub struct WriterLock {
    file: Option<File>,
    path: PathBuf,
}

impl WriterLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Remove the file while the lock is still held (see the module comment), then close it,
        // which releases the lock. Nothing useful can be done about a failure here: a stale
        // file is harmless, as the next writer locks it again.
        let _ = fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

/// Takes the writer's lock of the data directory (creating the directory if needed).
///
/// With [`Wait::No`] a directory another process is writing gives [`StoreError::Busy`] naming
/// that process; with [`Wait::Yes`] `on_wait` is told who holds it, and the call blocks until
/// the lock is free.
pub fn lock_writer(
    layout: &Layout,
    wait: Wait,
    on_wait: &dyn Fn(Option<u32>),
) -> Result<WriterLock> {
    let root = layout.root();
    fs::create_dir_all(root).map_err(|e| StoreError::io(root, e))?;
    let path = layout.lock_file();
    let mut told = false;
    let start = Instant::now();
    loop {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        match sys::try_lock(&file, sys::Mode::Exclusive).map_err(|e| StoreError::io(&path, e))? {
            true => {}
            false if start.elapsed() < GRACE => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            false => {
                let pid = read_pid(&mut file);
                match wait {
                    Wait::No => {
                        return Err(StoreError::Busy {
                            dir: root.to_path_buf(),
                            pid,
                        })
                    }
                    Wait::Yes => {
                        if !told {
                            on_wait(pid);
                            told = true;
                        }
                        sys::lock(&file).map_err(|e| StoreError::io(&path, e))?;
                    }
                }
            }
        }
        // The lock is ours, but the holder before us may have removed the file meanwhile:
        // then a newer file is the lock, and we must lock that one.
        if !sys::same_file(&file, &path) {
            continue;
        }
        let pid = std::process::id();
        let put = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            writeln!(f, "{pid}")?;
            f.flush()
        };
        put(&mut file).map_err(|e| StoreError::io(&path, e))?;
        return Ok(WriterLock {
            file: Some(file),
            path,
        });
    }
}

/// The process holding the writer's lock of the data directory, if any: `Some(None)` when it
/// is held by a process that has not written its id yet, `None` when nobody writes the
/// directory.
pub fn holder(layout: &Layout) -> Option<Option<u32>> {
    let path = layout.lock_file();
    let mut file = File::open(&path).ok()?;
    match sys::try_lock(&file, sys::Mode::Shared) {
        Ok(true) => {
            drop(file); // releases the shared lock at once
            None
        }
        Ok(false) => Some(read_pid(&mut file)),
        Err(_) => None,
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut s = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut s).ok()?;
    s.trim().parse().ok()
}

#[cfg(unix)]
mod sys {
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    #[derive(Clone, Copy)]
    pub enum Mode {
        Shared,
        Exclusive,
    }

    /// `flock` without blocking: `Ok(false)` if another process holds a conflicting lock.
    pub fn try_lock(file: &File, mode: Mode) -> std::io::Result<bool> {
        let op = match mode {
            Mode::Shared => libc::LOCK_SH,
            Mode::Exclusive => libc::LOCK_EX,
        } | libc::LOCK_NB;
        loop {
            // SAFETY: `flock` only reads the descriptor, which `file` keeps open for the call.
            let r = unsafe { libc::flock(file.as_raw_fd(), op) };
            if r == 0 {
                return Ok(true);
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EWOULDBLOCK) => return Ok(false),
                Some(libc::EINTR) => continue,
                _ => return Err(e),
            }
        }
    }

    /// `flock`, blocking until the exclusive lock is ours.
    pub fn lock(file: &File) -> std::io::Result<()> {
        loop {
            // SAFETY: as in `try_lock`.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if r == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    /// True if `path` still names the open `file`.
    pub fn same_file(file: &File, path: &Path) -> bool {
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
}

#[cfg(not(unix))]
mod sys {
    //! Elsewhere, the standard library's file locks (the same advisory semantics).
    use std::fs::File;
    use std::path::Path;

    #[derive(Clone, Copy)]
    pub enum Mode {
        Shared,
        Exclusive,
    }

    pub fn try_lock(file: &File, mode: Mode) -> std::io::Result<bool> {
        let r = match mode {
            Mode::Shared => file.try_lock_shared(),
            Mode::Exclusive => file.try_lock(),
        };
        match r {
            Ok(()) => Ok(true),
            Err(std::fs::TryLockError::WouldBlock) => Ok(false),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    pub fn lock(file: &File) -> std::io::Result<()> {
        file.lock()
    }

    /// Without inode numbers: the file is there (a removed lock file cannot be reopened on
    /// these systems while it is open, so the race of the Unix version does not arise).
    pub fn same_file(_file: &File, path: &Path) -> bool {
        path.exists()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_then_admitted_and_the_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path().join("data"));
        let first = lock_writer(&layout, Wait::No, &|_| {}).unwrap();
        let pid = std::process::id();
        assert_eq!(
            fs::read_to_string(layout.lock_file()).unwrap().trim(),
            pid.to_string()
        );
        assert_eq!(holder(&layout), Some(Some(pid)));
        // flock locks belong to the open file, so a second open in this process conflicts.
        match lock_writer(&layout, Wait::No, &|_| {}) {
            Err(StoreError::Busy { pid: Some(p), .. }) => assert_eq!(p, pid),
            other => panic!("expected Busy, got {other:?}"),
        }
        drop(first);
        assert!(!layout.lock_file().exists());
        assert_eq!(holder(&layout), None);
        let again = lock_writer(&layout, Wait::No, &|_| {}).unwrap();
        drop(again);
    }

    #[test]
    fn a_waiting_writer_gets_the_lock_when_the_holder_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let first = lock_writer(&layout, Wait::No, &|_| {}).unwrap();
        let told = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                lock_writer(&layout, Wait::Yes, &|_| {
                    told.store(true, std::sync::atomic::Ordering::SeqCst)
                })
            });
            while !told.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            drop(first);
            let second = waiter.join().unwrap().unwrap();
            assert!(layout.lock_file().exists());
            drop(second);
        });
        assert!(!layout.lock_file().exists());
    }
}
