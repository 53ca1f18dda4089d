//! The checks a path passes before earshot writes to it, none of which
//! writes: it is a regular file or missing (a device, FIFO or directory is
//! refused before SQLite opens it).

use std::path::Path;

use super::{StoreError, io_error};

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
