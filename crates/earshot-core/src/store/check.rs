//! The checks a path passes before earshot writes to it, none of which
//! writes: it is a regular file or missing (a device, FIFO or directory is
//! refused before SQLite opens it), and an existing file, opened read-only,
//! is empty or an earshot store of a schema this build knows. These read
//! the header pages only, so opening costs the same on a 5 GB store as on
//! an empty one. A refused file keeps every byte (no journal mode is set),
//! and the `-wal` and `-shm` a reader of a file in WAL mode makes are
//! removed again when the file is refused.
//!
//! The whole-file check ([`whole_file`]: `PRAGMA quick_check`, or
//! `integrity_check`) reads every page, a minute on a large cold store, so
//! it is not part of opening: `earshot store check` runs it, and the
//! observer runs it in the background once it is answering. A damaged page
//! a command does read is still never a wrong answer: SQLite reports the
//! corruption on that read, and [`StoreError::DamagedRead`] names the
//! check to run.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, InterruptHandle, OpenFlags};

use super::{BUSY_TIMEOUT, StoreError, classify, io_error, schema};

/// Most problems the whole-file check reports.
const MAX_PROBLEMS: usize = 10;

/// The file at `path`, or `None` when it is missing; an error if it is
/// there but not a regular file.
pub(super) fn regular_or_missing(path: &Path) -> Result<Option<std::fs::Metadata>, StoreError> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_file() => Ok(Some(metadata)),
        Ok(metadata) => Err(StoreError::NotAFile {
            path: path.to_owned(),
            kind: crate::bounded_file::kind_name(&metadata.file_type()),
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(path, error)),
    }
}

/// Checks the existing file at `path` on a read-only connection.
pub(super) fn existing(path: &Path) -> Result<(), StoreError> {
    read_only(path).map(drop)
}

/// A read-only connection to the existing store at `path`, once its
/// header is judged (a newer schema or another program's file refused).
pub(super) fn read_only(path: &Path) -> Result<Connection, StoreError> {
    let side_files = SideFiles::before_open(path);
    let judged = (|| {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let fail = |error| classify(path, error);
        let conn = Connection::open_with_flags(path, flags).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        schema::Header::read(&conn).map_err(fail)?.judge(path)?;
        Ok(conn)
    })();
    if judged.is_err() {
        side_files.remove_made();
    }
    judged
}

/// The `-wal` and `-shm` a reader of a file in WAL mode makes beside it:
/// which were missing before the open, so a refused store is left as it
/// was found, with nothing new beside it.
struct SideFiles {
    made_by_this_open: Vec<std::path::PathBuf>,
}

impl SideFiles {
    fn before_open(path: &Path) -> SideFiles {
        let missing = ["-wal", "-shm"]
            .into_iter()
            .map(|suffix| super::private::side_file(path, suffix))
            .filter(|side| !side.exists())
            .collect();
        SideFiles {
            made_by_this_open: missing,
        }
    }

    /// Removes the side files this open made; a `-wal` that holds anything
    /// (another process wrote to it meanwhile) is kept.
    fn remove_made(self) {
        for side in self.made_by_this_open {
            let empty_or_index = std::fs::metadata(&side)
                .is_ok_and(|meta| meta.len() == 0 || side.to_string_lossy().ends_with("-shm"));
            if empty_or_index {
                let _ = std::fs::remove_file(&side);
            }
        }
    }
}

/// How thorough [`whole_file`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// `PRAGMA quick_check`: the structure of every table and index page
    /// and the format of every record.
    Quick,
    /// `PRAGMA integrity_check`: that too, and whether every index holds
    /// exactly its table's rows (slower).
    Full,
}

/// What [`whole_file`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The file's size in bytes.
    pub bytes: u64,
    pub elapsed: Duration,
    /// Empty when the store is sound; else SQLite's findings, at most
    /// [`MAX_PROBLEMS`].
    pub problems: Vec<String>,
}

impl Checked {
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Reads every page of the store at `path` on a read-only connection (it
/// never writes, and a running observer goes on filing meanwhile).
pub fn whole_file(path: &Path, depth: Depth) -> Result<Checked, StoreError> {
    whole_file_with(path, depth, |_| {})
}

/// [`whole_file`], handing `opened` the connection's interrupt handle
/// first, so another thread can end a long check.
pub fn whole_file_with(
    path: &Path,
    depth: Depth,
    opened: impl FnOnce(InterruptHandle),
) -> Result<Checked, StoreError> {
    let started = Instant::now();
    let Some(file) = regular_or_missing(path)? else {
        return Err(io_error(path, std::io::ErrorKind::NotFound.into()));
    };
    let conn = read_only(path)?;
    opened(conn.get_interrupt_handle());
    let problems = match check_rows(&conn, depth) {
        Ok(rows) if rows.len() == 1 && rows[0] == "ok" => Vec::new(),
        Ok(rows) => one_line(&rows),
        Err(error) => match error.sqlite_error_code() {
            // The check could not even walk the file: that is its finding.
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => vec![error.to_string()],
            _ => return Err(classify(path, error)),
        },
    };
    Ok(Checked {
        bytes: file.len(),
        elapsed: started.elapsed(),
        problems,
    })
}

/// The check's findings, one per line, without its `*** in database main
/// ***` headings.
fn one_line(problems: &[String]) -> Vec<String> {
    let lines = problems.iter().flat_map(|problem| problem.lines());
    lines
        .filter(|line| !line.starts_with("***") && !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The rows the check returns: `ok`, or up to [`MAX_PROBLEMS`] findings.
fn check_rows(conn: &Connection, depth: Depth) -> rusqlite::Result<Vec<String>> {
    let pragma = match depth {
        Depth::Quick => "quick_check",
        Depth::Full => "integrity_check",
    };
    let mut statement = conn.prepare(&format!("PRAGMA {pragma}({MAX_PROBLEMS})"))?;
    let rows = statement.query_map([], |row| row.get(0))?;
    rows.collect()
}
