//! The checks a path passes before earshot writes to it, none of which
//! writes: it is a regular file or missing (a device, FIFO or directory is
//! refused before SQLite opens it), and an existing file, opened read-only,
//! is empty or an earshot store of a schema this build knows. A refused
//! file keeps every byte: no journal mode set, no side file left.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{BUSY_TIMEOUT, StoreError, classify, io_error, schema};

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
    schema::Header::read(&conn).map_err(fail)?.judge(path)
}
