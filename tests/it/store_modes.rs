//! The store holds personal data, so it is private at rest, through the real
//! binary started under a permissive umask: a new store is 0600 (its `-wal`
//! and `-shm` too) in a directory made 0700; an existing store with wider
//! modes is narrowed on open and said on stderr; a directory the user chose
//! keeps its mode, earshot's own state directory is narrowed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::cli::{isolate, listening_url, text};

const SECRET: &str = "whsec-store-modes-0123456789abcdefghijkl";

/// `earshot ARGS` isolated in `home`, started by `sh` after `umask MASK`.
fn under_umask(home: &Path, mask: &str, args: &[&str]) -> Command {
    let mut command = Command::new("sh");
    isolate(&mut command, home)
        .env("EARSHOT_CONFIG", home.join("config.toml"))
        .arg("-c")
        .arg(format!("umask {mask}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_earshot"))
        .args(args)
        .stdin(Stdio::null());
    command
}

/// `earshot health --no-sweep --store DB` under `umask MASK`.
fn health(home: &Path, mask: &str, db: &Path) -> Output {
    let db = db.to_str().expect("a UTF-8 temp path");
    under_umask(home, mask, &["health", "--no-sweep", "--store", db])
        .output()
        .expect("run earshot")
}

/// The permission bits of `path`, in octal (`0600`).
fn mode(path: &Path) -> String {
    let metadata =
        std::fs::metadata(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    format!("{:04o}", metadata.permissions().mode() & 0o777)
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `db` with `suffix` appended (`-wal`, `-shm`).
fn side(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether the health run read the store (it has no subscriptions: exit 3).
fn assert_ran(out: &Output) {
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("error:"), "{stderr}");
    assert_eq!(out.status.code(), Some(3), "{stderr}");
}

#[test]
fn a_new_store_is_0600_in_a_directory_made_0700_whatever_the_umask() {
    for mask in ["022", "000"] {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("new").join("history");
        let db = dir.join("earshot.db");
        let out = health(home.path(), mask, &db);
        assert_ran(&out);
        assert_eq!(mode(&db), "0600", "umask {mask}: the store");
        for suffix in ["-wal", "-shm"] {
            let file = side(&db, suffix);
            if file.exists() {
                assert_eq!(mode(&file), "0600", "umask {mask}: {}", file.display());
            }
        }
        assert_eq!(mode(&dir), "0700", "umask {mask}: the store's directory");
        assert_eq!(
            mode(&home.path().join("new")),
            "0700",
            "umask {mask}: its parent"
        );
        assert!(
            !text(&out.stderr).contains("tightened"),
            "nothing to narrow"
        );
    }
}

#[test]
fn the_wal_and_shm_of_a_running_observer_are_0600() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("live").join("earshot.db");
    let db_arg = db.to_str().unwrap();
    let mut child = under_umask(
        home.path(),
        "022",
        &["listen", "--secret", SECRET, "--store", db_arg],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("earshot listen starts");
    // Listening: the store is open.
    let url = listening_url(&mut child);
    let modes = ["", "-wal", "-shm"].map(|suffix| {
        let file = side(&db, suffix);
        (file.exists().then(|| mode(&file)), suffix)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(url.starts_with("http://"), "{url:?}");
    assert_eq!(
        modes,
        [
            (Some("0600".into()), ""),
            (Some("0600".into()), "-wal"),
            (Some("0600".into()), "-shm")
        ]
    );
    assert_eq!(mode(&home.path().join("live")), "0700");
}

#[test]
fn an_existing_store_with_wider_modes_is_narrowed_on_open_and_said() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("chosen");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o755);
    let db = dir.join("earshot.db");
    assert_ran(&health(home.path(), "022", &db));
    // Another reader keeps the -wal and -shm there, as an old earshot's
    // (or the sqlite3 shell's) 0644 files.
    let reader = rusqlite::Connection::open(&db).unwrap();
    reader
        .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .unwrap();
    let files = [db.clone(), side(&db, "-wal"), side(&db, "-shm")];
    for file in &files {
        chmod(file, 0o644);
    }

    let out = health(home.path(), "022", &db);
    assert_ran(&out);
    let stderr = text(&out.stderr);
    for file in &files {
        assert_eq!(mode(file), "0600", "{}", file.display());
        let notice = format!(
            "tightened {} from 0644 to 0600: it holds personal data",
            file.display()
        );
        assert_eq!(stderr.matches(&notice).count(), 1, "{notice} in: {stderr}");
    }
    assert_eq!(
        stderr.lines().filter(|l| l.contains("tightened")).count(),
        3
    );
    assert_eq!(
        mode(&dir),
        "0755",
        "a directory the user chose is left as it is"
    );

    let again = health(home.path(), "022", &db);
    assert_ran(&again);
    assert!(!text(&again.stderr).contains("tightened"), "said once");
    drop(reader);
}

#[test]
fn earshots_own_state_directory_is_narrowed_when_the_default_store_opens() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state").join("earshot");
    std::fs::create_dir_all(&state).unwrap();
    chmod(&state, 0o755);
    let out = under_umask(home.path(), "022", &["health", "--no-sweep"])
        .output()
        .unwrap();
    assert_ran(&out);
    assert_eq!(mode(&state.join("earshot.db")), "0600");
    assert_eq!(mode(&state), "0700");
    let notice = format!(
        "tightened {} from 0755 to 0700: it holds personal data",
        state.display()
    );
    assert!(text(&out.stderr).contains(&notice), "{}", text(&out.stderr));
}
