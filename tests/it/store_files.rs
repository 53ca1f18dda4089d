//! What `--store PATH` may name, through the real binary: another
//! program's SQLite file is refused byte for byte untouched; a device, a
//! directory or a FIFO is refused with exit 2 before SQLite opens it.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::bounded_files::{fifo, within_10s};
use crate::common::cli::{earshot, run, text};

const SECRET: &str = "whsec-store-files-0123456789abcdefghijkl";

/// The SQLite side files of `db` that exist.
fn side_files(db: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm", "-journal"]
        .into_iter()
        .map(|suffix| {
            let mut name = db.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        })
        .filter(|path| path.exists())
        .collect()
}

/// `earshot health --no-sweep --store DB`.
async fn health(db: &Path) -> Output {
    run(earshot().args(["health", "--no-sweep", "--store"]).arg(db)).await
}

#[tokio::test]
async fn another_programs_sqlite_file_is_refused_and_not_one_byte_changes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("other.db");
    let other = rusqlite::Connection::open(&db).unwrap();
    other
        .execute_batch(
            "PRAGMA journal_mode = DELETE; CREATE TABLE t (x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
    drop(other);
    let before = std::fs::read(&db).unwrap();
    assert_eq!(
        before[18..20],
        [1, 1],
        "a rollback-journal file to begin with"
    );

    let out = health(&db).await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("left untouched") && stderr.contains("other.db"),
        "{stderr}"
    );
    let after = std::fs::read(&db).unwrap();
    assert_eq!(
        (&after[18..20], &after[24..28]),
        (&before[18..20], &before[24..28]),
        "the write/read versions and the change counter"
    );
    assert!(after == before, "the file changed");
    assert_eq!(side_files(&db), Vec::<PathBuf>::new());
}

/// Exit 2, naming the path and what it is.
fn assert_not_a_file(out: &Output, path: &str, kind: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(path) && stderr.contains(&format!("not a regular file ({kind})")),
        "expected {path} and {kind} in: {stderr}"
    );
}

#[tokio::test]
async fn a_device_a_directory_or_a_fifo_is_refused_as_a_store_before_sqlite_opens_it() {
    for device in ["/dev/null", "/dev/full"] {
        let out = health(Path::new(device)).await;
        assert_not_a_file(&out, device, "a character device");
        assert_eq!(side_files(Path::new(device)), Vec::<PathBuf>::new());
    }
    let home = tempfile::tempdir().unwrap();
    let directory = home.path().join("a-directory");
    std::fs::create_dir(&directory).unwrap();
    let out = health(&directory).await;
    assert_not_a_file(&out, directory.to_str().unwrap(), "a directory");
    assert_eq!(side_files(&directory), Vec::<PathBuf>::new());

    let pipe = fifo(home.path(), "store.fifo");
    for args in [
        &["health", "--no-sweep", "--store", &pipe][..],
        &["listen", "--secret", SECRET, "--store", &pipe],
    ] {
        let out = within_10s(home.path(), args);
        assert_not_a_file(&out, &pipe, "a FIFO");
    }
    assert_eq!(side_files(Path::new(&pipe)), Vec::<PathBuf>::new());
}
