//! Handing the allocator's free pages back to the system while a
//! long-running process (`earshot demo`, `earshot emulator --traffic`)
//! works: a thread that calls glibc's
//! `malloc_trim` every period until dropped. glibc keeps memory freed in
//! the middle of its heaps (and in each thread's arena) as part of the
//! process's resident set: the demo's grew in steps while its live heap
//! stayed flat (docs/performance.md, "Memory and idle CPU"). Elsewhere
//! than glibc it does nothing. Such processes also cap glibc's arenas
//! ([`cap_arenas`]) before their threads start.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the demo and `emulator --traffic` trim (each trim walks the arenas' free lists).
const PERIOD: Duration = Duration::from_secs(30);

/// The trimming thread; dropping it stops the thread at once.
pub(crate) struct HeapTrim {
    _stop: mpsc::Sender<()>,
}

/// What a process that runs for days (the demo, `emulator --traffic`)
/// does about its memory, before its threads start: caps the arenas and
/// trims every [`PERIOD`] until the returned handle is dropped.
pub(crate) fn for_endless_process() -> Option<HeapTrim> {
    cap_arenas(LONG_RUNNING_ARENAS);
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

/// Caps the allocator's arenas at `arenas`, before the threads start;
/// whether the cap was taken (never on other allocators).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn cap_arenas(arenas: i32) -> bool {
    // SAFETY: mallopt sets one of the allocator's own tunables; it takes
    // no pointer from us.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn cap_arenas(_arenas: i32) -> bool {
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
    fn the_arena_cap_is_taken() {
        assert!(cap_arenas(LONG_RUNNING_ARENAS));
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
