//! Keeping a long-running process (`earshot demo`, `earshot emulator
//! --traffic`) from growing: SQLite's caches under one soft limit, and the
//! allocator's free pages handed back to the system by a thread that calls glibc's
//! `malloc_trim` every period until dropped. glibc keeps memory freed in
//! the middle of its heaps (and in each thread's arena) as part of the
//! process's resident set: the demo's grew in steps while its live heap
//! stayed flat (docs/performance.md, "Memory and idle CPU"). Elsewhere
//! than glibc it does nothing. Such processes also cap glibc's arenas and
//! fix its mmap threshold ([`tune_allocator`]) before their threads start.

use std::sync::mpsc::{self, RecvTimeoutError};

use earshot_core::store::memory::{self, ENDLESS_PROCESS_SOFT_LIMIT};
use std::time::Duration;

/// How often the demo and `emulator --traffic` trim (each trim walks the arenas' free lists).
const PERIOD: Duration = Duration::from_secs(30);

/// The trimming thread; dropping it stops the thread at once.
pub(crate) struct HeapTrim {
    _stop: mpsc::Sender<()>,
}

/// What a process that runs for days (the demo, `emulator --traffic`)
/// does about its memory, before its threads start: holds SQLite's caches
/// to [`ENDLESS_PROCESS_SOFT_LIMIT`] together, caps the arenas, fixes the
/// mmap threshold and trims every [`PERIOD`] until the returned handle is
/// dropped.
pub(crate) fn for_endless_process() -> Option<HeapTrim> {
    if let Err(error) = memory::soft_limit(ENDLESS_PROCESS_SOFT_LIMIT) {
        tracing::warn!(%error, "SQLite's caches could not be limited");
    }
    tune_allocator();
    start(PERIOD)
}

/// Starts trimming every `period`; `None` when the thread cannot start
/// (the process runs on without it).
fn start(period: Duration) -> Option<HeapTrim> {
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("earshot-heap-trim".into())
        .spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                trim();
            }
        })
        .ok()?;
    Some(HeapTrim { _stop: stop })
}

/// Arenas glibc may make for a long-running process's threads: each
/// thread that meets a locked arena gets another (up to 8 a core), and
/// memory freed in one is reused only by the threads that allocate there.
const LONG_RUNNING_ARENAS: i32 = 2;

/// Blocks from this size up get a mapping of their own, handed back whole
/// when freed. glibc starts there but raises its threshold (up to 32 MiB)
/// each time such a block is freed, after which buffers of that size come
/// from the heaps and stay in them; a threshold set by hand stays put
/// (the demo's growth halved: `docs/performance.md`, "Memory and idle CPU").
const LONG_RUNNING_MMAP_THRESHOLD: i32 = 128 * 1024;

/// Caps the allocator's arenas and fixes its mmap threshold, before the
/// threads start; whether both were taken (never on other allocators).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() -> bool {
    // SAFETY: mallopt sets one of the allocator's own tunables; it takes
    // no pointer from us.
    let arenas = unsafe { libc::mallopt(libc::M_ARENA_MAX, LONG_RUNNING_ARENAS) == 1 };
    // SAFETY: as above.
    let threshold =
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, LONG_RUNNING_MMAP_THRESHOLD) == 1 };
    arenas && threshold
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() -> bool {
    false
}

/// Returns the free pages of every arena to the system; whether any were.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn trim() -> bool {
    // SAFETY: malloc_trim only walks the allocator's own free lists, under
    // the arenas' locks; it takes no pointer from us.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn trim() -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn the_arena_cap_and_the_mmap_threshold_are_taken() {
        assert!(tune_allocator());
    }

    #[test]
    fn freed_blocks_below_a_live_one_are_handed_back() {
        // 8 MiB in 1 KiB blocks (under the mmap threshold: on a heap),
        // then all freed but the last, which keeps the heap from shrinking
        // at its top: only a trim releases the pages below it.
        let mut blocks: Vec<Box<[u8]>> = (0..8192)
            .map(|i| vec![u8::try_from(i % 251).unwrap_or(0); 1024].into_boxed_slice())
            .collect();
        let pinned = blocks.pop();
        drop(blocks);
        assert!(trim(), "nothing was handed back");
        assert!(pinned.is_some_and(|block| block.len() == 1024));
    }
}
