//! SQLite's share of a long-running process's memory. Every connection
//! keeps a page cache of its own (up to 2,000 KiB by default), and the
//! console opens one per task: in a process that runs for days (the demo)
//! their sum rises with the store, and glibc's heaps keep the extent of
//! the highest peak (`docs/performance.md`, "Memory and idle CPU"). One
//! soft limit, for the whole process, makes SQLite reuse its cached pages
//! instead of taking more once it is reached; nothing fails at the limit.

use rusqlite::Connection;

use super::StoreError;

/// SQLite's memory for every connection of a process that runs for days:
/// a few page caches of the demo's store, and its largest query's sort.
pub const ENDLESS_PROCESS_SOFT_LIMIT: i64 = 4 * 1024 * 1024;

/// Sets SQLite's soft heap limit for the whole process to `bytes` (0 lifts
/// it); the limit now in force.
pub fn soft_limit(bytes: i64) -> Result<i64, StoreError> {
    let conn = Connection::open_in_memory()?;
    let limit = conn.pragma_update_and_check(None, "soft_heap_limit", bytes, |row| row.get(0))?;
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite holds now, across every connection of the process.
    fn sqlite_bytes_in_use() -> i64 {
        // SAFETY: sqlite3_memory_used reads SQLite's own counter; it takes
        // no argument and touches no connection.
        unsafe { rusqlite::ffi::sqlite3_memory_used() }
    }

    #[test]
    fn a_connection_asking_for_a_large_cache_stays_near_the_soft_limit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn = Connection::open(dir.path().join("big.db")).expect("open");
        conn.execute_batch(
            "CREATE TABLE t (body BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 8000)
             INSERT INTO t SELECT randomblob(4000) FROM n;",
        )
        .expect("fill");
        // 64 MiB of cache asked for, 32 MB of pages read through it.
        conn.pragma_update(None, "cache_size", -65_536)
            .expect("cache");
        let limit = soft_limit(ENDLESS_PROCESS_SOFT_LIMIT).expect("limit");
        let read: i64 = conn
            .query_row("SELECT sum(length(body)) FROM t", [], |row| row.get(0))
            .expect("read");
        let in_use = sqlite_bytes_in_use();
        soft_limit(0).expect("limit lifted");
        // Other tests of this binary use SQLite at the same time: the
        // bound leaves them room, and is still half of what was read.
        assert!(in_use < 16 * 1024 * 1024, "SQLite holds {in_use} bytes");
        assert_eq!(limit, ENDLESS_PROCESS_SOFT_LIMIT);
        assert_eq!(read, 8000 * 4000);
    }
}
