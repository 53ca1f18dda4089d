//! The checks a path passes before earshot writes to it, none of which
//! writes: it is a regular file or missing (a device, FIFO or directory is
//! refused before SQLite opens it), and an existing file, opened read-only,
//! is empty or an earshot store of a schema this build knows that passes
//! `PRAGMA quick_check`. A refused file keeps every byte (no journal mode
//! is set); only a file already in WAL mode gets the `-wal` and `-shm` any
//! reader makes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::{BUSY_TIMEOUT, StoreError, classify, io_error, schema};

/// Most problems `PRAGMA quick_check` reports in a refusal.
const MAX_PROBLEMS: usize = 3;

/// Stores that passed `quick_check` in this process: it reads the whole
/// file (about 0.1 s for 100,000 events), and the console opens its store
/// for every refresh.
static CHECKED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Whether `path` exists; an error if it is there but not a regular file.
pub(super) fn regular_or_missing(path: &Path) -> Result<bool, StoreError> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_file() => Ok(true),
        Ok(metadata) => Err(StoreError::NotAFile {
            path: path.to_owned(),
            kind: crate::bounded_file::kind_name(&metadata.file_type()),
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(io_error(path, error)),
    }
}

/// Checks the existing file at `path` on a read-only connection.
pub(super) fn existing(path: &Path) -> Result<(), StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let fail = |error| classify(path, error);
    let conn = Connection::open_with_flags(path, flags).map_err(fail)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    let header = schema::Header::read(&conn).map_err(fail)?;
    header.judge(path)?;
    if header.tables > 0 {
        once_per_process(path, || quick_check(&conn, path))?;
    }
    Ok(())
}

/// Runs `check` unless it passed for `path` before in this process.
fn once_per_process(
    path: &Path,
    check: impl FnOnce() -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let passed = |checked: &BTreeSet<PathBuf>| checked.contains(&key);
    // A poisoned lock only means a check panicked: the set is still valid.
    if passed(&CHECKED.lock().unwrap_or_else(|poison| poison.into_inner())) {
        return Ok(());
    }
    check()?;
    CHECKED
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .insert(key);
    Ok(())
}

/// `PRAGMA quick_check`: the structure of every table and index page and
/// the format of every record (unlike `integrity_check`, not whether each
/// index matches its table).
fn quick_check(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let damaged = |detail: String| StoreError::Damaged {
        path: path.to_owned(),
        detail,
    };
    let problems = quick_check_rows(conn).map_err(|error| match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => damaged(error.to_string()),
        _ => classify(path, error),
    })?;
    match problems.as_slice() {
        [ok] if ok == "ok" => Ok(()),
        _ => Err(damaged(one_line(&problems))),
    }
}

/// quick_check's rows on one line, without its `*** in database main ***`
/// headings.
fn one_line(problems: &[String]) -> String {
    let lines = problems.iter().flat_map(|problem| problem.lines());
    let kept: Vec<&str> = lines.filter(|line| !line.starts_with("***")).collect();
    kept.join("; ")
}

/// The rows `PRAGMA quick_check` returns: `ok`, or up to [`MAX_PROBLEMS`].
fn quick_check_rows(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(&format!("PRAGMA quick_check({MAX_PROBLEMS})"))?;
    let rows = statement.query_map([], |row| row.get(0))?;
    rows.collect()
}
