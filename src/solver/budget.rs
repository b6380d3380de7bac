//! How far the backward pass may run ahead of its writer, in bytes: the ages handed over and
//! not yet written hold their ids, records and values (about 32 bytes a state and 16 an
//! afterstate with one variant), and on a board whose ages hold tens of millions of states a
//! queue of ages — not the pass's own tables — was most of the peak memory (4x4 `goal-32`:
//! four ages of ≈ 2.5 GB each in flight).
//!
//! Invariants:
//! - an age is handed over when the bytes in flight plus its own stay within the limit, or
//!   when nothing is in flight: one age of any size always goes, so the pass never waits for
//!   itself, and at most one age over the limit is in flight (the pass then values the next
//!   age while the writer writes it, and waits for the writer before handing that one over);
//! - the writer releases an age's bytes once the age is written; when the writer stops (an
//!   error, the end, a panic), [`Budget::close`] runs from a guard's `drop` and wakes a waiting
//!   pass, which then gets `false` instead of waiting for ever.

use std::sync::{Condvar, Mutex, MutexGuard};

/// A byte budget shared by one producer and one consumer.
pub struct Budget {
    limit: usize,
    /// Bytes in flight, and whether the consumer has stopped.
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Budget {
    /// A budget of `limit` bytes in flight.
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit,
            state: Mutex::new((0, false)),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (usize, bool)> {
        // A poisoned lock only means a thread panicked while holding it; the counts it
        // guards are updated in single statements, so they are still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `bytes` more may go with `in_flight` bytes in flight: they fit the limit, or
    /// nothing is in flight.
    fn fits(&self, in_flight: usize, bytes: usize) -> bool {
        in_flight == 0 || in_flight.saturating_add(bytes) <= self.limit
    }

    /// Waits until `bytes` more fit (or nothing is in flight) and counts them in flight;
    /// `false` if the consumer has stopped.
    pub fn acquire(&self, bytes: usize) -> bool {
        let mut s = self.lock();
        while !s.1 && !self.fits(s.0, bytes) {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.1 {
            return false;
        }
        s.0 += bytes;
        true
    }

    /// [`Budget::acquire`] if it would not wait: `None` while `bytes` more do not fit.
    pub fn try_acquire(&self, bytes: usize) -> Option<bool> {
        let mut s = self.lock();
        if s.1 {
            return Some(false);
        }
        if !self.fits(s.0, bytes) {
            return None;
        }
        s.0 += bytes;
        Some(true)
    }

    /// The consumer is done with `bytes` it was handed.
    pub fn release(&self, bytes: usize) {
        let mut s = self.lock();
        debug_assert!(s.0 >= bytes, "released more than was acquired");
        s.0 = s.0.saturating_sub(bytes);
        self.changed.notify_all();
    }

    /// The consumer has stopped: a waiting or later [`Budget::acquire`] returns `false`.
    pub fn close(&self) {
        self.lock().1 = true;
        self.changed.notify_all();
    }

    /// A guard that closes the budget when dropped (however the consumer's scope ends).
    pub fn closer(&self) -> Closer<'_> {
        Closer(self)
    }
}

/// Closes its [`Budget`] on drop.
pub struct Closer<'a>(&'a Budget);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;
    use std::time::Duration;

    #[test]
    fn one_item_of_any_size_goes_when_nothing_is_in_flight() {
        let b = Budget::new(10);
        assert!(b.acquire(100));
        b.release(100);
        assert!(b.acquire(4));
        assert!(b.acquire(6));
    }

    /// The producer waits while the bytes in flight would pass the limit, and goes on once the
    /// consumer releases them; the peak in flight is what the invariant allows.
    #[test]
    fn producer_waits_for_the_consumer() {
        let b = Budget::new(10);
        let (tx, rx) = sync_channel::<usize>(100);
        let peak = std::thread::scope(|s| {
            let consumer = s.spawn(|| {
                let _closer = b.closer();
                let mut peak = 0;
                for bytes in rx {
                    peak = peak.max(b.lock().0);
                    std::thread::sleep(Duration::from_millis(2));
                    b.release(bytes);
                }
                peak
            });
            for bytes in [3, 4, 3, 12, 2, 9, 9, 1] {
                assert!(b.acquire(bytes));
                tx.send(bytes).unwrap();
            }
            drop(tx);
            consumer.join().unwrap()
        });
        assert!(peak <= 12, "{peak} bytes in flight");
        assert_eq!(b.lock().0, 0);
    }

    /// `try_acquire` says what `acquire` would do without waiting: `None` where it would wait.
    #[test]
    fn try_acquire_takes_what_fits_and_says_none_where_acquire_would_wait() {
        let b = Budget::new(10);
        assert_eq!(
            b.try_acquire(100),
            Some(true),
            "nothing in flight: any size goes"
        );
        assert_eq!(b.try_acquire(1), None);
        b.release(100);
        assert_eq!(b.try_acquire(4), Some(true));
        assert_eq!(b.try_acquire(6), Some(true));
        assert_eq!(b.try_acquire(1), None);
        assert_eq!(b.lock().0, 10);
        b.close();
        assert_eq!(b.try_acquire(1), Some(false));
    }

    /// A consumer that stops (here: drops its closer without releasing) wakes a waiting
    /// producer, which gets `false`.
    #[test]
    fn a_stopped_consumer_releases_a_waiting_producer() {
        let b = Budget::new(10);
        assert!(b.acquire(8));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.acquire(8));
            std::thread::sleep(Duration::from_millis(20));
            drop(b.closer());
            assert!(!waiter.join().unwrap());
        });
        assert!(!b.acquire(1));
    }
}
