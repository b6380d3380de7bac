//! Big buffers on huge pages: a vector of many megabytes asks the kernel for transparent huge
//! pages (2 MiB) before it is first written, so that the backward pass's random look-ups into
//! gigabyte tables stop paying a page walk (a TLB miss) on top of each cache miss.
//!
//! Linux offers such pages on request (`madvise(MADV_HUGEPAGE)`) when
//! `/sys/kernel/mm/transparent_hugepage/enabled` says `madvise` (the common default) or
//! `always`; elsewhere the request is refused or ignored and the vector is an ordinary one.
//! The request is advice only: it changes no byte the vector holds.
//!
//! [`trim`] hands what the allocator keeps of freed blocks back to the kernel: glibc leaves
//! freed blocks below its mapping threshold in its arenas, gigabytes of them after a big
//! forward pass. [`keep_freed`] is its opposite for the blocks a solve allocates and frees
//! again age after age: they stay in the arenas for the next age instead of going back to the
//! kernel, to be faulted in and zeroed anew. [`hand_back`] is for a solve held to a budget it
//! was given. The runs behind the thresholds are in `reports/bench/profile.md` ("The
//! allocator's thresholds").

/// From this many bytes on a vector asks for huge pages (smaller ones would round up to whole
/// 2 MiB pages for little gain).
const HUGE_FROM: usize = 8 << 20;

/// Hands the allocator's free memory back to the kernel (glibc keeps freed mid-size blocks in
/// its arenas: after the forward pass, gigabytes of them).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns pages of free blocks to the kernel; it touches no
    // live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Blocks up to this size come from the allocator's arenas, not from mappings of their own,
/// and an arena keeps twice this much of free memory at its top before handing it back: the
/// values glibc's own sliding thresholds end at (its largest mapping threshold on 64-bit
/// systems, and twice it), set at once.
const KEEP_BLOCKS: usize = 32 << 20;

/// Sets the allocator's thresholds to `KEEP_BLOCKS`, for a process that solves. glibc starts
/// with blocks of 128 KiB and up mapped for themselves and raises the threshold only as such a
/// block is freed, so the tables, columns and sort buffers of one age after another would be
/// mapped, faulted in a page at a time (the kernel zeroing each page) and unmapped, and freed
/// memory at an arena's top would go back to the kernel as soon as it passed 128 KiB. Big
/// ages still hand their memory back (`trim`).
///
/// One of `processes` that each hold a share of every age keeps [`kept_blocks`]: the same
/// blocks of an age as one process, in proportion to its share.
pub fn keep_freed(processes: u32) {
    set_thresholds(kept_blocks(processes));
}

/// The threshold of [`keep_freed`] for one of `processes` processes: `KEEP_BLOCKS` over their
/// number, never below [`hand_back`]'s. Each process's vectors are its share of the age's,
/// and what an arena keeps free is per process: one process's thresholds in each would keep
/// N times as much a state of its share.
pub fn kept_blocks(processes: u32) -> usize {
    (KEEP_BLOCKS / processes.max(1) as usize).max(HAND_BACK_BLOCKS)
}

/// Blocks from `blocks` bytes on mapped for themselves, and at most twice that kept free at
/// an arena's top (fixed: glibc stops sliding either).
fn set_thresholds(blocks: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` sets two of the allocator's thresholds, which say only where later
    // blocks come from and when free memory goes back; no live allocation is touched.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, blocks as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, (2 * blocks) as libc::c_int);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = blocks;
}

/// Blocks from this size on are mapped for themselves, and an arena keeps at most twice this
/// much free memory at its top, under a budget the user gave ([`hand_back`]).
const HAND_BACK_BLOCKS: usize = 1 << 20;

/// [`keep_freed`]'s opposite, for a solve held to a budget it was given (`solve --memory`):
/// blocks of a MiB and more are mapped for themselves and unmapped when freed, and little free
/// memory stays at an arena's top, so that what the solve holds is what it uses (each thread
/// allocates from an arena of its own, and blocks one keeps free another does not reuse).
pub fn hand_back() {
    set_thresholds(HAND_BACK_BLOCKS);
}

/// A vector of `len` copies of `fill`, on huge pages where the kernel grants them.
pub fn filled<T: Copy>(len: usize, fill: T) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    advise(&mut v);
    v.resize(len, fill);
    v
}

/// An empty vector with room for `capacity` elements, on huge pages where the kernel grants
/// them.
pub fn with_capacity<T>(capacity: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(capacity);
    advise(&mut v);
    v
}

/// Asks for huge pages under the spare capacity of `v` (the pages not yet written are the
/// ones the advice can still place).
fn advise<T>(v: &mut Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_FROM {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = v.as_mut_ptr() as usize;
        let first = start.next_multiple_of(PAGE);
        let end = (start + bytes) & !(PAGE - 1);
        if end > first {
            // SAFETY: `[first, end)` lies inside the allocation `v` owns (page-aligned inward
            // from its ends), and `MADV_HUGEPAGE` only tells the kernel how to back those pages:
            // it neither frees nor changes memory, so no Rust reference can observe it. A
            // refusal (no THP in this kernel) is harmless and ignored.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thresholds shrink with the share of each process, down to those of a given budget.
    #[test]
    fn a_process_keeps_blocks_in_proportion_to_its_share() {
        assert_eq!(kept_blocks(1), KEEP_BLOCKS);
        assert_eq!(kept_blocks(0), KEEP_BLOCKS);
        assert_eq!(kept_blocks(2), KEEP_BLOCKS / 2);
        assert_eq!(kept_blocks(8), KEEP_BLOCKS / 8);
        assert_eq!(kept_blocks(1000), HAND_BACK_BLOCKS);
    }

    #[test]
    fn advice_keeps_contents() {
        for len in [0, 1, 1000, (HUGE_FROM / 8) + 3] {
            let v = filled(len, 7u64);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == 7));
            let mut w: Vec<u32> = with_capacity(len);
            w.extend((0..len as u32).rev());
            assert!(w
                .iter()
                .enumerate()
                .all(|(i, &x)| x as usize == len - 1 - i));
        }
    }
}
