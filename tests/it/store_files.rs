//! What `--store PATH` may name, through the real binary: a device, a
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
