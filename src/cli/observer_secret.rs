//! The observer's secret file: where it is by default, what an existing
//! one holds, and a new secret written 0600 whatever the umask, staged
//! beside the file and moved into place only once the platform has it
//! (a failed request leaves no file; a failed move leaves the staged copy,
//! named, so the secret is never lost).

use std::io::Write;
use std::path::{Path, PathBuf};

use earshot_core::redact::SecretString;

/// The file name of the default secret file, in the state directory.
pub(crate) const DEFAULT_FILE_NAME: &str = "observer.secret";

/// The mode of the secret file.
pub(crate) const FILE_MODE: u32 = 0o600;

/// What the secret file holds before setup.
pub(crate) enum Held {
    /// No file at the path.
    Missing,
    /// A file holding a secret that meets the platform's rule.
    Secret(SecretString),
    /// A regular file, not read (`--force` replaces it).
    Replaced,
}

/// Why the secret file cannot be used. Never quotes the secret.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SecretFileError {
    #[error(transparent)]
    Read(#[from] super::secret_arg::SecretArgError),
    #[error(
        "{path} does not hold a secret the platform takes ({rule}); give another --secret-file, \
         or pass --force to replace it with a generated one"
    )]
    Rule {
        path: String,
        rule: earshot_core::api::validate::ValidationError,
    },
    #[error("{path} is not a regular file; give --secret-file a file path")]
    NotAFile { path: String },
    #[error("cannot inspect {path}: {source}")]
    Inspect {
        path: String,
        source: std::io::Error,
    },
}

/// What the file at `path` holds; with `replace`, only that it is a
/// regular file or missing. An existing file readable by group or others
/// is narrowed to 0600 first, said on stderr.
pub(crate) fn inspect(path: &Path, replace: bool) -> Result<Held, SecretFileError> {
    let shown = || path.display().to_string();
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Held::Missing),
        Err(source) => {
            return Err(SecretFileError::Inspect {
                path: shown(),
                source,
            });
        }
    };
    if !metadata.is_file() {
        return Err(SecretFileError::NotAFile { path: shown() });
    }
    if replace {
        return Ok(Held::Replaced);
    }
    let secret = super::secret_arg::read_secret_file(path)?;
    earshot_core::api::validate::secret(secret.expose()).map_err(|rule| SecretFileError::Rule {
        path: shown(),
        rule,
    })?;
    // Only a file that holds a secret is narrowed, and never through a
    // link: a mode is changed on the file named, not on what it points to.
    narrow(path);
    Ok(Held::Secret(secret))
}

/// Removes group and other permissions from the secret file `path`,
/// through a descriptor opened without following a symbolic link (a link
/// is left alone, and said).
#[cfg(unix)]
fn narrow(path: &Path) {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            eprintln!(
                "warning: {} is a symbolic link; the mode of the file it points to is left as \
                 it is (make sure only you can read it)",
                path.display()
            );
            return;
        }
        Err(error) => {
            eprintln!(
                "warning: cannot open {} to check its mode: {error}",
                path.display()
            );
            return;
        }
    };
    let Ok(metadata) = file.metadata() else {
        return;
    };
    let from = metadata.permissions().mode() & 0o7777;
    let to = from & FILE_MODE;
    if from == to || !metadata.is_file() {
        return;
    }
    match file.set_permissions(std::fs::Permissions::from_mode(to)) {
        Ok(()) => eprintln!(
            "earshot: tightened {} from {from:04o} to {to:04o}: it holds the webhook secret",
            path.display()
        ),
        Err(error) => eprintln!(
            "warning: {} is {from:04o} and cannot be narrowed ({error}): it holds the webhook \
             secret; chmod 600 it yourself",
            path.display()
        ),
    }
}

#[cfg(not(unix))]
fn narrow(_path: &Path) {}

/// A new secret written beside its file, not yet in place.
pub(crate) struct Staged {
    temp: tempfile::NamedTempFile,
    path: PathBuf,
}

/// Why a staged secret did not reach its file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StageError {
    #[error("cannot write the secret beside {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    /// The platform has the secret; the staged copy was kept.
    #[error(
        "the platform has the new secret, but it could not be moved to {path} ({source}); it is \
         in {kept}: move it there yourself (mv {kept} {path})"
    )]
    Move {
        path: String,
        kept: String,
        source: std::io::Error,
    },
}

/// Writes `secret` (and a newline) to a new file beside `path`, 0600 from
/// its creation on, synced; missing directories are made 0700.
pub(crate) fn stage(path: &Path, secret: &SecretString) -> Result<Staged, StageError> {
    let error = |source| StageError::Write {
        path: path.display().to_string(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    earshot_core::store::private::create_dir(&dir).map_err(error)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".observer-secret-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(FILE_MODE));
    }
    let mut temp = builder.tempfile_in(&dir).map_err(error)?;
    // The umask may have narrowed the mode further; never widened.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
            .map_err(error)?;
    }
    temp.write_all(secret.expose().as_bytes()).map_err(error)?;
    temp.write_all(b"\n").map_err(error)?;
    temp.as_file().sync_all().map_err(error)?;
    Ok(Staged {
        temp,
        path: path.to_owned(),
    })
}

impl Staged {
    /// Moves the secret to its file: over an existing one when `replace`,
    /// else only if none appeared meanwhile.
    pub(crate) fn commit(self, replace: bool) -> Result<(), StageError> {
        let Staged { temp, path } = self;
        let persisted = if replace {
            temp.persist(&path)
        } else {
            temp.persist_noclobber(&path)
        };
        match persisted {
            Ok(_) => {
                sync_dir(&path);
                Ok(())
            }
            Err(failed) => {
                let source = failed.error;
                let kept = match failed.file.keep() {
                    Ok((_, kept)) => kept.display().to_string(),
                    Err(error) => format!("(lost: {})", error.error),
                };
                Err(StageError::Move {
                    path: path.display().to_string(),
                    kept,
                    source,
                })
            }
        }
    }
}

/// Makes a rename in `path`'s directory durable, where the platform can.
fn sync_dir(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty())
        && let Ok(handle) = std::fs::File::open(dir)
    {
        let _ = handle.sync_all();
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const SECRET: &str = "whsec_observer_secret_tests_0123456789abc";

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_staged_secret_reaches_its_file_0600_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deeper").join("observer.secret");
        let staged = stage(&path, &SecretString::new(SECRET)).unwrap();
        assert!(!path.exists(), "nothing in place before the commit");
        staged.commit(false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{SECRET}\n")
        );
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let names = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(names, 1, "no staged copy left behind");
    }

    #[test]
    fn a_dropped_stage_leaves_nothing_and_noclobber_keeps_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("observer.secret");
        drop(stage(&path, &SecretString::new(SECRET)).unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        std::fs::write(&path, "someone else's\n").unwrap();
        let error = stage(&path, &SecretString::new(SECRET))
            .unwrap()
            .commit(false)
            .unwrap_err();
        let StageError::Move { kept, .. } = &error else {
            panic!("{error}")
        };
        assert_eq!(
            std::fs::read_to_string(kept).unwrap(),
            format!("{SECRET}\n")
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone else's\n");
        assert!(!error.to_string().contains(SECRET), "{error}");
    }

    #[test]
    fn an_existing_file_is_read_checked_and_narrowed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("observer.secret");
        assert!(matches!(inspect(&path, false), Ok(Held::Missing)));
        std::fs::write(&path, format!("{SECRET}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let Ok(Held::Secret(secret)) = inspect(&path, false) else {
            panic!("a secret")
        };
        assert_eq!(secret.expose(), SECRET);
        assert_eq!(mode(&path), 0o600);
        std::fs::write(&path, "too short\n").unwrap();
        let error = inspect(&path, false).err().unwrap();
        assert!(error.to_string().contains("--force"), "{error}");
        assert!(!error.to_string().contains("too short"), "{error}");
        assert!(matches!(inspect(&path, true), Ok(Held::Replaced)));
        assert!(matches!(
            inspect(dir.path(), true),
            Err(SecretFileError::NotAFile { .. })
        ));
    }

    /// A link to a file that is not a secret (0644) is neither narrowed
    /// nor read as one; a link to a secret is read, and its target's mode
    /// left alone; a file that holds no secret keeps its mode.
    #[test]
    fn a_symbolic_link_never_has_its_target_narrowed() {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "shopping list\n").unwrap();
        std::fs::set_permissions(&notes, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("observer.secret");
        std::os::unix::fs::symlink(&notes, &link).unwrap();
        assert!(inspect(&link, false).is_err(), "not a secret");
        assert_eq!(mode(&notes), 0o644, "the target's mode is kept");
        assert!(inspect(&notes, false).is_err());
        assert_eq!(mode(&notes), 0o644, "no secret in it: left alone");

        std::fs::write(&notes, format!("{SECRET}\n")).unwrap();
        let Ok(Held::Secret(secret)) = inspect(&link, false) else {
            panic!("the secret, read through the link")
        };
        assert_eq!(secret.expose(), SECRET);
        assert_eq!(mode(&notes), 0o644, "not changed through the link");
    }
}
