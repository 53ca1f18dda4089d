//! Reading a file the operator names, bounded: only regular files (not a
//! device such as `/dev/zero`, a FIFO or a directory), never more than a
//! stated limit, and line by line with a per-line limit for JSON-lines
//! files. Every error names the file, the limit and what to do.
//!
//! Used for every whole-file read of the command line and the console:
//! body files (`sign`, `verify`, the Signatures pane), secret and key
//! files, the config file, id files, themes, capture files and TLS
//! certificate and key files.

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// What is read and how much of it may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The file's role, for messages ("body file", "API key file").
    pub what: &'static str,
    /// Most bytes (for a line-by-line read: per line).
    pub max: u64,
}

/// An audio file to stream to the platform (dictation, sync, upload):
/// opened, never read whole here, so `max` only names the role; the
/// platform's own size limits are checked where it is sent.
pub const AUDIO_FILE: Limit = Limit {
    what: "audio file",
    max: u64::MAX,
};

/// A request body (`--body-file`, the Signatures pane's `file:`): the
/// largest body a receiver accepts (`receiver::listen::MAX_BODY_BYTES`).
pub const BODY_FILE: Limit = Limit {
    what: "body file",
    max: 10 * 1024 * 1024,
};
/// A file holding one secret or API key.
pub const SECRET_FILE: Limit = Limit {
    what: "secret file",
    max: 64 * 1024,
};
/// A TLS certificate chain in PEM (`listen --tls-cert`): a leaf and a
/// few intermediates take a few KiB.
pub const TLS_CERT_FILE: Limit = Limit {
    what: "TLS certificate file",
    max: 1024 * 1024,
};
/// A TLS private key in PEM (`listen --tls-key`).
pub const TLS_KEY_FILE: Limit = Limit {
    what: "TLS key file",
    max: 64 * 1024,
};
/// `api_key_file` of a profile.
pub const API_KEY_FILE: Limit = Limit {
    what: "API key file",
    max: 64 * 1024,
};
/// The config file.
pub const CONFIG_FILE: Limit = Limit {
    what: "config file",
    max: 1024 * 1024,
};
/// A theme file.
pub const THEME_FILE: Limit = Limit {
    what: "theme file",
    max: 1024 * 1024,
};
/// A list of job ids, one a line.
pub const IDS_FILE: Limit = Limit {
    what: "ids file",
    max: 4 * 1024 * 1024,
};
/// One line of a capture file: an entry with a body of up to 10 MiB in
/// base64 and as JSON text.
pub const CAPTURE_LINE: Limit = Limit {
    what: "capture file",
    max: 64 * 1024 * 1024,
};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(
        "cannot read the {what} {}: {source}",
        path.display()
    )]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the {what} {} is not a regular file ({kind}): give a regular file, \
         not a device, pipe or directory",
        path.display()
    )]
    NotRegular {
        what: &'static str,
        path: PathBuf,
        kind: &'static str,
    },
    #[error(
        "the {what} {} is larger than {} ({} bytes), the most earshot reads: \
         give a smaller file",
        path.display(),
        human(*max),
        max
    )]
    TooLarge {
        what: &'static str,
        path: PathBuf,
        max: u64,
    },
    #[error(
        "line {line} of the {what} {} is longer than {} ({} bytes), the most \
         earshot reads in one line: is it the right file?",
        path.display(),
        human(*max),
        max
    )]
    LineTooLong {
        what: &'static str,
        path: PathBuf,
        line: usize,
        max: u64,
    },
}

impl FileError {
    /// The file was not there (callers with a default treat it apart).
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

fn human(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Opens `path` for reading if it is a regular file. The type is checked
/// before opening (opening a FIFO waits for a writer, opening a device may
/// act on it), and again on the open file, opened non-blocking so that a
/// FIFO swapped in between cannot hang it either.
pub fn open(path: &Path, limit: Limit) -> Result<File, FileError> {
    let io = |source| FileError::Io {
        what: limit.what,
        path: path.to_owned(),
        source,
    };
    regular(
        std::fs::metadata(path).map_err(io)?.file_type(),
        path,
        limit,
    )?;
    let file = open_nonblocking(path).map_err(io)?;
    regular(file.metadata().map_err(io)?.file_type(), path, limit)?;
    Ok(file)
}

/// `path` opened for reading without waiting (`O_NONBLOCK`, which changes
/// nothing for a regular file).
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

/// Refuses anything but a regular file.
fn regular(kind: std::fs::FileType, path: &Path, limit: Limit) -> Result<(), FileError> {
    if kind.is_file() {
        return Ok(());
    }
    Err(FileError::NotRegular {
        what: limit.what,
        path: path.to_owned(),
        kind: kind_name(&kind),
    })
}

/// What a file that is not regular is ("a FIFO", "a directory").
pub(crate) fn kind_name(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// The whole file, at most `limit.max` bytes.
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, FileError> {
    let file = open(path, limit)?;
    read_from(file, path, limit)
}

/// The whole file as UTF-8 text, at most `limit.max` bytes.
pub fn read_to_string(path: &Path, limit: Limit) -> Result<String, FileError> {
    let bytes = read(path, limit)?;
    String::from_utf8(bytes).map_err(|error| FileError::Io {
        what: limit.what,
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, error.utf8_error()),
    })
}

/// At most `limit.max` bytes from `reader` (a file, or standard input
/// named `path` in messages); more is an error, not a cut.
pub fn read_from(reader: impl Read, path: &Path, limit: Limit) -> Result<Vec<u8>, FileError> {
    let mut bytes = Vec::new();
    reader
        .take(limit.max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| FileError::Io {
            what: limit.what,
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > limit.max {
        return Err(FileError::TooLarge {
            what: limit.what,
            path: path.to_owned(),
            max: limit.max,
        });
    }
    Ok(bytes)
}

/// The lines of a file (numbered from 1, without their `\n` / `\r\n`),
/// each at most `limit.max` bytes.
pub struct Lines<R> {
    reader: R,
    path: PathBuf,
    limit: Limit,
    line: usize,
    done: bool,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `reader`, named `path` in messages.
    pub fn new(reader: R, path: &Path, limit: Limit) -> Lines<R> {
        Lines {
            reader,
            path: path.to_owned(),
            limit,
            line: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = Result<(usize, String), FileError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.line += 1;
        let mut bytes = Vec::new();
        let read = (&mut self.reader)
            .take(self.limit.max.saturating_add(1))
            .read_until(b'\n', &mut bytes);
        let io = |source| FileError::Io {
            what: self.limit.what,
            path: self.path.clone(),
            source,
        };
        match read {
            Err(source) => {
                self.done = true;
                return Some(Err(io(source)));
            }
            Ok(0) => {
                self.done = true;
                return None;
            }
            Ok(_) => {}
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
        } else if bytes.len() as u64 > self.limit.max {
            self.done = true;
            return Some(Err(FileError::LineTooLong {
                what: self.limit.what,
                path: self.path.clone(),
                line: self.line,
                max: self.limit.max,
            }));
        }
        let line = self.line;
        Some(
            String::from_utf8(bytes)
                .map(|text| (line, text))
                .map_err(|error| {
                    self.done = true;
                    io(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("line {line} is not UTF-8: {}", error.utf8_error()),
                    ))
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const SMALL: Limit = Limit {
        what: "test file",
        max: 16,
    };

    #[test]
    fn a_device_is_refused_before_reading() {
        let error = read(Path::new("/dev/zero"), BODY_FILE).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, FileError::NotRegular { .. }), "{message}");
        assert!(message.contains("/dev/zero") && message.contains("character device"));
    }

    #[test]
    fn a_file_over_the_limit_is_an_error_naming_it_and_the_limit() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&[b'a'; 17]).unwrap();
        let message = read(file.path(), SMALL).unwrap_err().to_string();
        assert!(message.contains("larger than 16 bytes"), "{message}");
        assert!(message.contains(&file.path().display().to_string()));
        file.as_file().set_len(16).unwrap();
        assert_eq!(read(file.path(), SMALL).unwrap().len(), 16);
    }

    #[test]
    fn lines_are_numbered_and_a_line_over_the_limit_stops_the_read() {
        let text = "one\r\n\ntwo\n0123456789abcdefXYZ\nnever";
        let mut lines = Lines::new(text.as_bytes(), Path::new("t.jsonl"), SMALL);
        assert_eq!(lines.next().unwrap().unwrap(), (1, "one".to_owned()));
        assert_eq!(lines.next().unwrap().unwrap(), (2, String::new()));
        assert_eq!(lines.next().unwrap().unwrap(), (3, "two".to_owned()));
        let error = lines.next().unwrap().unwrap_err();
        assert!(
            matches!(error, FileError::LineTooLong { line: 4, .. }),
            "{error}"
        );
        assert!(lines.next().is_none());
        // A last line without a newline is a line.
        let mut lines = Lines::new("a\nb".as_bytes(), Path::new("t"), SMALL);
        assert_eq!(lines.nth(1).unwrap().unwrap(), (2, "b".to_owned()));
    }
}
