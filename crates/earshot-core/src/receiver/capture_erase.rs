//! Erasing sessions and calls from a capture file (`earshot store forget
//! --capture FILE`): the file is rewritten without every entry that names
//! one of the ids (anywhere in the line, or in a body that is only in
//! base64), read line by line within [`bounded_file::CAPTURE_LINE`], into
//! a temporary file beside it that replaces it by rename once synced.
//! Every other line is kept byte for byte; a file that names none of the
//! ids is not touched.
//!
//! A running `earshot listen --capture FILE` keeps appending to the file it
//! opened, which the rename takes away: stop it first. A file that grows
//! while it is rewritten is left as it was, and the error says why.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::capture::CaptureEntry;
use crate::bounded_file::{self, FileError};
use crate::store::forget::mentions;

/// What erasing ids from one capture file did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureErasure {
    /// For each id, in order: the entries that named it.
    pub per_id: Vec<u64>,
    /// Entries removed (an entry naming two ids counts once).
    pub removed: u64,
    /// Lines kept.
    pub kept: u64,
}

/// A capture file could not be rewritten; it is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum EraseError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("cannot write {}: {source}; the capture file was left as it was", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} changed while it was rewritten (is `earshot listen --capture` writing to it?); \
         it was left as it was: stop the listener and run again",
        path.display()
    )]
    Changed { path: PathBuf },
}

/// Rewrites the capture file at `path` without the entries naming any of
/// `ids` (see the module comment).
pub fn erase(path: &Path, ids: &[String]) -> Result<CaptureErasure, EraseError> {
    let file = bounded_file::open(path, bounded_file::CAPTURE_LINE)?;
    let io = |source| FileError::Io {
        what: bounded_file::CAPTURE_LINE.what,
        path: path.to_owned(),
        source,
    };
    let before = file.metadata().map_err(io)?;
    let temp = temp_path(path);
    let write_error = |source| EraseError::Write {
        path: temp.clone(),
        source,
    };
    let mut out = BufWriter::new(create_private(&temp, &before).map_err(write_error)?);
    let mut erasure = CaptureErasure {
        per_id: vec![0; ids.len()],
        ..CaptureErasure::default()
    };
    let copied = (|| -> Result<(), EraseError> {
        for line in bounded_file::Lines::new(BufReader::new(file), path, bounded_file::CAPTURE_LINE)
        {
            let (_, text) = line?;
            let named = names(&text, ids);
            if named.iter().any(|named| *named) {
                erasure.removed += 1;
                for (count, named) in erasure.per_id.iter_mut().zip(named) {
                    *count += u64::from(named);
                }
            } else {
                erasure.kept += 1;
                out.write_all(text.as_bytes())
                    .and_then(|()| out.write_all(b"\n"))
                    .map_err(write_error)?;
            }
        }
        let file = out
            .into_inner()
            .map_err(|error| write_error(error.into_error()))?;
        file.sync_all().map_err(write_error)
    })();
    let unchanged = std::fs::metadata(path).is_ok_and(|now| same_file_state(&before, &now));
    match copied {
        Err(error) => {
            let _ = std::fs::remove_file(&temp);
            Err(error)
        }
        Ok(()) if erasure.removed == 0 => {
            let _ = std::fs::remove_file(&temp);
            Ok(erasure)
        }
        Ok(()) if !unchanged => {
            let _ = std::fs::remove_file(&temp);
            Err(EraseError::Changed {
                path: path.to_owned(),
            })
        }
        Ok(()) => {
            std::fs::rename(&temp, path).map_err(|source| {
                let _ = std::fs::remove_file(&temp);
                EraseError::Write {
                    path: path.to_owned(),
                    source,
                }
            })?;
            sync_dir(path);
            Ok(erasure)
        }
    }
}

/// Which of `ids` a capture line names: in its text (the body when it is
/// UTF-8, the headers, the path), or in its body's bytes.
fn names(line: &str, ids: &[String]) -> Vec<bool> {
    let mut body: Option<Vec<u8>> = None;
    ids.iter()
        .map(|id| {
            mentions(line.as_bytes(), id.as_bytes()) || {
                let bytes = body.get_or_insert_with(|| {
                    serde_json::from_str::<CaptureEntry>(line)
                        .ok()
                        .and_then(|entry| entry.body_bytes().ok())
                        .unwrap_or_default()
                });
                mentions(bytes, id.as_bytes())
            }
        })
        .collect()
}

/// `.NAME.forget-PID.tmp` beside `path`.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "capture".to_owned());
    path.with_file_name(format!(".{name}.forget-{}.tmp", std::process::id()))
}

/// A new file at `path` with the mode of `like` (a capture file is 0600).
fn create_private(path: &Path, like: &std::fs::Metadata) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(like.permissions().mode() & 0o777);
    }
    #[cfg(not(unix))]
    let _ = like;
    options.open(path)
}

/// The same length and modification time: nothing was appended.
fn same_file_state(before: &std::fs::Metadata, now: &std::fs::Metadata) -> bool {
    before.len() == now.len() && before.modified().ok() == now.modified().ok()
}

/// Makes the rename durable (best effort).
fn sync_dir(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receiver::capture::{CaptureWriter, accepted_entry};

    #[test]
    fn entries_naming_an_id_go_and_the_rest_stay_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capture.jsonl");
        let mut writer = CaptureWriter::open(&path).unwrap();
        writer
            .append(&accepted_entry(br#"{"call":{"call_id":"call_a1"}}"#))
            .unwrap();
        writer
            .append(&accepted_entry(br#"{"call":{"call_id":"call_a11"}}"#))
            .unwrap();
        // Not UTF-8: only the base64 holds the id.
        writer
            .append(&accepted_entry(b"\xff call_a1 \xfe"))
            .unwrap();
        writer
            .append(&accepted_entry(br#"{"session":{"session_id":"ses_b2"}}"#))
            .unwrap();
        drop(writer);
        let before = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = before.lines().collect();

        let erasure = erase(&path, &["call_a1".to_owned(), "ses_zz".to_owned()]).unwrap();
        assert_eq!(erasure.per_id, vec![2, 0]);
        assert_eq!((erasure.removed, erasure.kept), (2, 2));
        let after = std::fs::read_to_string(&path).unwrap();
        assert_eq!(after, format!("{}\n{}\n", lines[1], lines[3]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left");
    }

    #[test]
    fn a_file_naming_no_id_is_not_touched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capture.jsonl");
        std::fs::write(&path, "not json\n\n").unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let erasure = erase(&path, &["call_a1".to_owned()]).unwrap();
        assert_eq!((erasure.removed, erasure.kept), (0, 2));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json\n\n");
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            modified
        );
    }
}
