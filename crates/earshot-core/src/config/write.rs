//! [`write_atomic`]: how every file that may hold a key is written (private
//! mode, temp file in the same directory, fsync, rename).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::ConfigError;

/// Writes `contents` to `path` atomically with permissions `mode` (unix):
/// creates missing parent directories (0700), writes a temp file in the same
/// directory whose mode is set *before* any content goes in, fsyncs it, and
/// renames it over `path`. A reader sees the old file or the new one, never a
/// mix; a failure leaves the old file untouched.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), ConfigError> {
    let err = |source: std::io::Error| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_private_dir_all(&dir).map_err(err)?;

    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(err)?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    tmp.write_all(contents).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    // Make the rename itself durable; not every platform can fsync a directory.
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}
