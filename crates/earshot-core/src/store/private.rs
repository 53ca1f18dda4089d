//! The store holds personal data (callers' numbers, presigned recording
//! links), so it is private at rest whatever the umask: the file and
//! SQLite's side files (`-wal`, `-shm`, `-journal`) are 0600, and a
//! directory earshot creates for it is 0700. Wider modes found on an
//! existing store are narrowed ([`Tightened`]); a directory the user chose
//! is left as it is, earshot's own state directory is tightened too
//! ([`tighten_dir`]).

use std::path::{Path, PathBuf};

/// The mode of the store file and its side files.
pub const FILE_MODE: u32 = 0o600;

/// The mode of a directory earshot creates for a store.
pub const DIR_MODE: u32 = 0o700;

/// The side files SQLite keeps beside a database.
const SIDE_SUFFIXES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// A file or directory whose group and other permissions earshot removed,
/// or tried to: said on stderr (the console logs it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tightened {
    pub path: PathBuf,
    /// The permission bits found.
    pub from: u32,
    /// The permission bits wanted.
    pub to: u32,
    /// Why the change failed (the mode is still `from`), if it did.
    pub failed: Option<String>,
}

impl std::fmt::Display for Tightened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, from, to) = (self.path.display(), self.from, self.to);
        match &self.failed {
            None => write!(
                f,
                "tightened {path} from {from:04o} to {to:04o}: it holds personal data"
            ),
            Some(why) => write!(
                f,
                "cannot tighten {path} from {from:04o} to {to:04o} ({why}): it holds personal \
                 data; chmod {to:o} it yourself"
            ),
        }
    }
}

/// Creates `dir` and its missing parents, each 0700 whatever the umask;
/// an existing directory is left as it is.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut next = Some(dir);
    while let Some(path) = next.filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::symlink_metadata(path) {
            Ok(_) => break,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => missing.push(path),
            Err(error) => return Err(error),
        }
        next = path.parent();
    }
    for path in missing.into_iter().rev() {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
        match builder.create(path) {
            Ok(()) => set_mode(path, DIR_MODE)?,
            // Another process made it first: theirs, left as it is.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Creates the empty store file `path`, 0600 whatever the umask, for
/// SQLite to open; one made meanwhile by another process is kept.
pub(super) fn create_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    match options.open(path) {
        Ok(file) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
            }
            #[cfg(not(unix))]
            drop(file);
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

/// The SQLite side file of the store at `path`: `suffix` appended to its
/// file name (`earshot.db-wal`).
pub fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Narrows the store file at `path` and its side files that exist to
/// 0600 (group and other permissions removed): what changed, or failed.
pub(super) fn tighten_files(path: &Path) -> Vec<Tightened> {
    let side = SIDE_SUFFIXES.iter().map(|suffix| side_file(path, suffix));
    std::iter::once(path.to_owned())
        .chain(side)
        .filter_map(|file| tighten(&file, FILE_MODE))
        .collect()
}

/// Narrows the directory `dir` to 0700: for earshot's own state directory,
/// never for one the user chose. `None` when it is private already (or
/// missing).
pub fn tighten_dir(dir: &Path) -> Option<Tightened> {
    tighten(dir, DIR_MODE)
}

/// Removes from `path`'s mode every bit outside `allowed`; `None` when
/// there was none (or `path` is missing).
#[cfg(unix)]
fn tighten(path: &Path, allowed: u32) -> Option<Tightened> {
    use std::os::unix::fs::PermissionsExt;
    let from = std::fs::metadata(path).ok()?.permissions().mode() & 0o7777;
    let to = from & allowed;
    if from == to {
        return None;
    }
    let failed = set_mode(path, to).err().map(|error| error.to_string());
    let tightened = Tightened {
        path: path.to_owned(),
        from,
        to,
        failed,
    };
    tracing::warn!(%tightened, "store permissions");
    Some(tightened)
}

#[cfg(not(unix))]
fn tighten(_path: &Path, _allowed: u32) -> Option<Tightened> {
    None
}

/// chmod `mode` (not subject to the umask).
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn create_dir_makes_each_missing_parent_0700_and_leaves_existing_ones() {
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = root.path().join("a").join("b");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(root.path()), 0o755, "an existing directory kept");
        create_dir(&dir).unwrap();
    }

    #[test]
    fn tighten_removes_group_and_other_bits_only() {
        let root = tempfile::tempdir().unwrap();
        let db = root.path().join("earshot.db");
        std::fs::write(&db, b"").unwrap();
        let wal = root.path().join("earshot.db-wal");
        std::fs::write(&wal, b"").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o400)).unwrap();
        let tightened = tighten_files(&db);
        assert_eq!(tightened.len(), 1, "{tightened:?}");
        assert_eq!(
            tightened[0].to_string(),
            format!(
                "tightened {} from 0644 to 0600: it holds personal data",
                db.display()
            )
        );
        assert_eq!((mode(&db), mode(&wal)), (0o600, 0o400), "never widened");
        assert_eq!(tighten_files(&db), Vec::new());
    }
}
