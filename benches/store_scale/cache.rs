//! The cold cache of every store benchmark: the store's own file (and its
//! `-wal`) dropped from the page cache, nothing else on the machine.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Drops the pages of `path` (and its `-wal`) from the page cache.
pub fn evict(path: &Path) {
    for file in [path.to_owned(), side(path, "-wal")] {
        if let Ok(open) = std::fs::File::open(&file) {
            // SAFETY: advice on an open descriptor; it changes no memory.
            unsafe {
                libc::posix_fadvise(open.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
}

fn side(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
