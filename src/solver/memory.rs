//! The process's resident memory as Linux counts it, and its peak phase by phase.
//!
//! `VmHWM` in `/proc/self/status` is the most the process has held resident since it started
//! or since the peak was last reset; writing `5` to `/proc/self/clear_refs` resets it to what
//! is resident now (proc(5), Linux 4.0 and later). Reading it at the end of each phase of a
//! solve and resetting it gives the peak of each phase ([`phase_peak`]): what
//! `solve --trace-memory` records (`reports/bench/memory.md`).
//!
//! A reset forgets the peak before it, so every peak read before a reset is kept here, and
//! [`peak_rss_bytes`] answers the larger of that and the kernel's: a solve's recorded peak is
//! its whole peak, traced or not. Where `/proc/self/status` cannot be read (not Linux),
//! nothing is known and the peak is 0.

use std::sync::atomic::{AtomicU64, Ordering};

/// The largest peak read before a reset ([`phase_peak`]).
static PEAK_BEFORE_RESET: AtomicU64 = AtomicU64::new(0);

/// Resident memory of the process, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resident {
    /// The most held since the start or the last reset (`VmHWM`).
    pub peak: u64,
    /// Held now (`VmRSS`).
    pub now: u64,
}

/// The process's resident memory now, if the system says (`/proc/self/status`).
pub fn resident() -> Option<Resident> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = |key: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    Some(Resident {
        peak: kib("VmHWM:")?,
        now: kib("VmRSS:")?,
    })
}

/// Peak resident set size of this process over its whole life (across the resets of
/// [`phase_peak`]), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    let now = resident().map_or(0, |r| r.peak);
    now.max(PEAK_BEFORE_RESET.load(Ordering::Relaxed))
}

/// Resets the kernel's peak to what is resident now; false if the system refuses.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Whether [`phase_peak`] can tell phases apart here (the peak can be read and reset).
pub fn can_trace() -> bool {
    match resident() {
        Some(r) => {
            PEAK_BEFORE_RESET.fetch_max(r.peak, Ordering::Relaxed);
            reset_peak()
        }
        None => false,
    }
}

/// The peak since the last call (or the start of the process), and what is resident now;
/// the peak is then reset, so that the next call gives the peak of the next phase. `None`
/// where the memory cannot be read.
pub fn phase_peak() -> Option<Resident> {
    let r = resident()?;
    PEAK_BEFORE_RESET.fetch_max(r.peak, Ordering::Relaxed);
    reset_peak();
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Touches `bytes` bytes of a new vector (so that they are resident) and returns it.
    fn resident_block(bytes: usize) -> Vec<u8> {
        let mut v = vec![0u8; bytes];
        for b in v.iter_mut().step_by(4096) {
            *b = 1;
        }
        std::hint::black_box(&mut v);
        v
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_phase_sees_its_own_peak_and_the_whole_peak_survives_resets() {
        assert!(can_trace(), "Linux resets the peak (clear_refs 5)");
        // Big enough that no other test running meanwhile in this process comes near it.
        let big = 512 << 20;
        let block = resident_block(big);
        drop(block);
        let first = phase_peak().expect("Linux says");
        // The block was resident during this phase and is gone now.
        assert!(
            first.peak >= first.now + big as u64 / 2,
            "{first:?}: the freed block's peak"
        );
        // The next phase holds nothing big: its peak is below the first's.
        let second = phase_peak().expect("Linux says");
        assert!(second.peak < first.peak, "{second:?} after {first:?}");
        assert!(second.peak >= second.now);
        // The process's peak is still the first phase's, though the kernel's was reset.
        assert!(peak_rss_bytes() >= first.peak);
    }
}
