//! Where `earshot demo` keeps its store (personal-looking data, its Inbox
//! filled by the demo traffic) and its Probe sample: one private temp
//! directory named `earshot-demo-history-<pid>-<random>`, 0700, removed
//! when the demo ends (it quits, or SIGINT, SIGTERM or SIGHUP stops the
//! console; a closed terminal too, whose writes no longer fail the exit).
//! A demo killed outright leaves its directory: the next demo removes
//! every one whose pid is no longer running ([`remove_stale`]).

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// The start of a demo history directory's name; the pid follows.
pub(crate) const PREFIX: &str = "earshot-demo-history-";

/// Creates this demo's directory in `root` (the system temp directory),
/// 0700 whatever the umask; removed when the answer drops.
pub(crate) fn create(root: &Path) -> std::io::Result<TempDir> {
    let prefix = format!("{PREFIX}{}-", std::process::id());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(earshot_core::store::private::DIR_MODE);
        builder.permissions(private.clone());
        let dir = builder.tempdir_in(root)?;
        std::fs::set_permissions(dir.path(), private)?;
        Ok(dir)
    }
    #[cfg(not(unix))]
    builder.tempdir_in(root)
}

/// Removes the demo history directories in `root` left by demos that are
/// no longer running (their pid is gone), if they are this user's: the
/// paths removed. Nothing is removed where running processes cannot be
/// told (no `/proc`).
pub(crate) fn remove_stale(root: &Path) -> Vec<PathBuf> {
    let Some(own_uid) = own_uid() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(demo_pid) else {
            continue;
        };
        let path = entry.path();
        // Not followed: a symlink or a file with the name is not ours.
        let ours = std::fs::symlink_metadata(&path)
            .is_ok_and(|metadata| metadata.is_dir() && uid(&metadata) == Some(own_uid));
        if ours && !running(pid) && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// The pid in a demo history directory's name
/// (`earshot-demo-history-<pid>` or `…-<pid>-<random>`).
fn demo_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let digits = rest.split_once('-').map_or(rest, |(pid, _)| pid);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&pid| pid != 0)
}

/// Whether process `pid` is running (its `/proc` entry exists).
fn running(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// This process's user, from `/proc/self`; `None` where there is no
/// `/proc` to tell running processes by.
fn own_uid() -> Option<u32> {
    uid(&std::fs::metadata("/proc/self").ok()?)
}

#[cfg(unix)]
fn uid(metadata: &std::fs::Metadata) -> Option<u32> {
    Some(std::os::unix::fs::MetadataExt::uid(metadata))
}

#[cfg(not(unix))]
fn uid(_metadata: &std::fs::Metadata) -> Option<u32> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// The pid of a process that has ended (and been reaped).
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn the_demo_directory_is_created_0700_and_removed_on_drop() {
        let root = tempfile::tempdir().unwrap();
        let dir = create(root.path()).unwrap();
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(format!("{mode:04o}"), "0700");
        let name = dir.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(demo_pid(&name), Some(std::process::id()), "{name}");
        let path = dir.path().to_owned();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn a_directory_left_by_a_demo_no_longer_running_is_removed_others_kept() {
        let root = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let stale = root.path().join(format!("{PREFIX}{dead}"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("earshot.db"), b"personal data").unwrap();
        let stale_random = root.path().join(format!("{PREFIX}{dead}-a1B2c3"));
        std::fs::create_dir(&stale_random).unwrap();
        let kept = [
            // A running demo's (this process stands in for it).
            format!("{PREFIX}{}-x9Y8z7", std::process::id()),
            // Not a demo history directory.
            format!("earshot-demo-{dead}"),
            format!("{PREFIX}pid-{dead}"),
            format!("{PREFIX}0"),
        ]
        .map(|name| root.path().join(name));
        for dir in &kept {
            std::fs::create_dir(dir).unwrap();
        }
        let a_file = root.path().join(format!("{PREFIX}{dead}-file"));
        std::fs::write(&a_file, b"").unwrap();

        let mut removed = remove_stale(root.path());
        removed.sort();
        assert_eq!(removed, vec![stale.clone(), stale_random.clone()]);
        assert!(!stale.exists() && !stale_random.exists());
        for dir in &kept {
            assert!(dir.is_dir(), "kept: {}", dir.display());
        }
        assert!(a_file.is_file(), "a file is not a demo directory");
        assert_eq!(remove_stale(root.path()), Vec::<PathBuf>::new());
    }
}
