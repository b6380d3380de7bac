//! Checkpoints off the writer's thread: making finished ages durable (a `syncfs`, then the
//! progress file that vouches for them) takes as long as the disk needs to take the dirty
//! pages, and a writer that waited for it would stall the pass behind it (the queue between
//! them holds two ages). A [`Checkpointer`] runs each checkpoint on a thread of its own while
//! the writer goes on writing later ages.
//!
//! Invariants:
//! - a checkpoint job is handed a snapshot of the progress at the moment it is due; every
//!   file that progress vouches for was written (its `write` returned) before the job was
//!   handed over, so the job's `syncfs` makes it durable before the job records it;
//! - at most one job is under way: [`Checkpointer::idle`] says whether another may be
//!   handed over now (else the writer tries again after its next age), so jobs run one after
//!   another, in the order they were due, and progress files only move forward;
//! - [`Checkpointer::finish`] waits for the job under way; only after it may the writer record
//!   its final progress (which a late job would otherwise overwrite with an older one).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

use super::{Result, SolveError};

/// Runs checkpoint jobs (`run(job)`) one at a time on a scoped thread.
pub struct Checkpointer<'scope, J: Send + 'scope> {
    tx: Option<SyncSender<J>>,
    /// Jobs handed over and not yet done.
    pending: Arc<AtomicUsize>,
    thread: ScopedJoinHandle<'scope, Result<()>>,
}

impl<'scope, J: Send + 'scope> Checkpointer<'scope, J> {
    /// Starts the thread, which runs `run` on every job handed over; the first error stops it
    /// (and is returned by [`Checkpointer::submit`] or [`Checkpointer::finish`]).
    pub fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        mut run: impl FnMut(J) -> Result<()> + Send + 'scope,
    ) -> Self {
        let (tx, rx) = sync_channel::<J>(1);
        let pending = Arc::new(AtomicUsize::new(0));
        let count = pending.clone();
        let thread = scope.spawn(move || -> Result<()> {
            for job in rx {
                let done = run(job);
                count.fetch_sub(1, Ordering::AcqRel);
                done?;
            }
            Ok(())
        });
        Checkpointer {
            tx: Some(tx),
            pending,
            thread,
        }
    }

    /// True if no job is under way or waiting (one may be handed over and start at once).
    pub fn idle(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }

    /// Hands a job over (waiting while another one waits to start). False if the thread
    /// stopped on an error, which [`Checkpointer::finish`] returns.
    #[must_use]
    pub fn submit(&mut self, job: J) -> bool {
        let Some(tx) = &self.tx else {
            return false;
        };
        self.pending.fetch_add(1, Ordering::AcqRel);
        if tx.send(job).is_ok() {
            return true;
        }
        self.tx = None;
        false
    }

    /// Waits for the job under way and stops the thread; its first error, if any.
    pub fn finish(mut self) -> Result<()> {
        self.tx = None;
        self.thread.join().unwrap_or_else(|_| {
            Err(SolveError::Internal(
                "the checkpoint thread panicked".into(),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn jobs_run_in_order_one_at_a_time_and_finish_waits_for_them() {
        let log = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let mut cp = Checkpointer::start(s, |j: u32| {
                std::thread::sleep(Duration::from_millis(20));
                log.lock().unwrap().push(j);
                Ok(())
            });
            assert!(cp.idle());
            assert!(cp.submit(1));
            assert!(!cp.idle(), "a job was handed over and cannot be done yet");
            assert!(cp.submit(2));
            assert!(cp.submit(3));
            cp.finish().unwrap();
        });
        assert_eq!(*log.lock().unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn the_first_error_stops_the_thread_and_is_returned() {
        std::thread::scope(|s| {
            let mut cp = Checkpointer::start(s, |j: u32| {
                if j == 2 {
                    Err(SolveError::Internal(format!("job {j} failed")))
                } else {
                    Ok(())
                }
            });
            assert!(cp.submit(1));
            assert!(cp.submit(2));
            // The thread may or may not have stopped yet: a later job is refused or never
            // run; finish says what went wrong.
            let _ = cp.submit(3);
            std::thread::sleep(Duration::from_millis(50));
            assert!(!cp.submit(4), "the thread stopped at job 2");
            let e = cp.finish().unwrap_err();
            assert!(e.to_string().contains("job 2 failed"), "{e}");
        });
    }
}
