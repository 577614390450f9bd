//! Memory freed after load, given back to the system.
//!
//! glibc's malloc keeps what a burst of connections freed in its arenas for reuse: a
//! soak of 10,000 hostile connections against `agui serve` left its resident size 37 %
//! above where it started, a plateau, not a leak (mimalloc, tried instead, ended 29 %
//! above a start 44 % higher). `malloc_trim(0)` returns the arenas' free pages; it walks
//! their free lists, so it runs only when over [`TRIM_ABOVE`] is free, at most every
//! [`TRIM_EVERY`], on a thread of its own. A library user chooses their own allocator
//! and policy; this is the `agui` binary's.

use std::time::Duration;

/// How often the heap is looked at.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
pub(crate) const TRIM_EVERY: Duration = Duration::from_secs(2);

/// How much must be free in the heap for a trim.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
pub(crate) const TRIM_ABOVE: usize = 1 << 20;

/// Starts the thread that gives freed memory back (glibc on Linux; elsewhere the
/// allocator returns memory itself, and nothing starts).
pub(crate) fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Err(e) = std::thread::Builder::new()
        .name("agui-trim".into())
        .spawn(|| loop {
            std::thread::sleep(TRIM_EVERY);
            if free_in_heap() > TRIM_ABOVE {
                trim();
            }
        })
    {
        tracing::warn!(error = %e, "no thread to give freed memory back");
    }
}

/// Bytes the allocator holds free, in every arena.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn free_in_heap() -> usize {
    // SAFETY: mallinfo2 takes no pointers and only reads the allocator's statistics
    // (glibc 2.33 and later).
    unsafe { libc::mallinfo2() }.fordblks
}

/// Returns the arenas' free pages to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() {
    // SAFETY: malloc_trim takes no pointers; glibc locks each arena while it walks it.
    unsafe {
        libc::malloc_trim(0);
    }
}
