//! What `--store PATH` may name, through the real binary: another
//! program's SQLite file is refused byte for byte untouched; a device, a
//! directory or a FIFO is refused with exit 2 before SQLite opens it; a
//! damaged page stops the command that reads it with an error naming
//! `earshot store check`, which finds it (opening reads only the header);
//! and a write
//! the store refuses while `listen` runs is said on stderr with SQLite's
//! reason.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

use chrono::{TimeZone, Utc};
use earshot_core::store::Store;
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::writer::Writer;

use crate::bounded_files::{fifo, within_10s};
use crate::common::cli::{earshot, listen_with_store, post_signed, run, text};

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

/// A `session.started` event with `id`, at `at_ms`.
fn event(id: &str, at_ms: i64) -> ObservedEvent {
    let at = Utc.timestamp_millis_opt(at_ms).unwrap().to_rfc3339();
    let body = format!(
        r#"{{"event_id":"{id}","event":"session.started","timestamp":"{at}","session":{{"session_id":"ses_{id}"}}}}"#
    );
    ObservedEvent::from_delivery(body.as_bytes(), vec![], None, at_ms).unwrap()
}

/// A store at `db` with `count` observed events, checkpointed (no WAL).
pub(crate) async fn store_with_events(db: &Path, count: usize) {
    store_with_events_at(db, count, Utc::now().timestamp_millis(), 1).await;
}

/// A store at `db` with `count` observed events received `every_ms` apart
/// from `first_ms` on, checkpointed (no WAL).
pub(crate) async fn store_with_events_at(db: &Path, count: usize, first_ms: i64, every_ms: i64) {
    let (writer, thread) = Writer::start(Store::open(db).unwrap()).unwrap();
    for n in 0..count {
        writer
            .write(event(&format!("e{n}"), first_ms + n as i64 * every_ms))
            .await
            .unwrap();
    }
    drop(writer);
    thread.join().unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

/// Overwrites the root page of table or index `name` with garbage.
pub(crate) fn damage_root_page(db: &Path, name: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let page_size: i64 = conn
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .unwrap();
    let root: i64 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [name],
            |row| row.get(0),
        )
        .unwrap();
    drop(conn);
    let (root, page_size) = (root as u64, page_size as u64);
    let mut file = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    file.seek(SeekFrom::Start((root - 1) * page_size)).unwrap();
    file.write_all(&vec![0xA5; page_size as usize]).unwrap();
}

/// A store of 200 events whose index by receive time is damaged: what
/// `health` reads (it counts the events in its window with it).
pub(crate) async fn store_with_damaged_events(db: &Path) {
    store_with_events(db, 200).await;
    damage_root_page(db, "events_by_received");
}

#[tokio::test]
async fn a_damaged_page_a_command_reads_stops_it_naming_the_check_and_the_check_finds_it() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("earshot.db");
    store_with_damaged_events(&db).await;
    let before = std::fs::read(&db).unwrap();
    let path = db.to_str().unwrap();

    let health = within_10s(home.path(), &["health", "--no-sweep", "--store", path]);
    let stderr = text(&health.stderr);
    assert_eq!(health.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("damaged where this command read it")
            && stderr.contains("earshot store check"),
        "{stderr}"
    );
    assert!(
        !text(&health.stdout).contains("DELIVERED"),
        "no board from a damaged store: {}",
        text(&health.stdout)
    );

    let check = within_10s(home.path(), &["store", "check", "--store", path]);
    let stdout = text(&check.stdout);
    assert_eq!(
        check.status.code(),
        Some(1),
        "{stdout}{}",
        text(&check.stderr)
    );
    assert!(
        stdout.starts_with(&format!("{path}: DAMAGED (quick_check of ")),
        "{stdout}"
    );
    let json = within_10s(home.path(), &["store", "check", "--json", "--store", path]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["sound"], false, "{json}");
    assert!(!json["problems"].as_array().unwrap().is_empty(), "{json}");
    assert!(std::fs::read(&db).unwrap() == before, "the file changed");

    // The observer answers at once on it, and says what its background
    // check found.
    let (mut child, _url, lines) = listen_with_store(SECRET, &db);
    let said = lines
        .iter()
        .find(|line| line.contains("store check:"))
        .unwrap_or_default();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        said.contains("DAMAGED") && said.contains("earshot store check"),
        "{said}"
    );
}

#[tokio::test]
async fn a_sound_store_opens_without_the_whole_file_check_and_store_check_says_sound() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("earshot.db");
    store_with_events(&db, 50).await;
    // A damaged page no command reads: `health` is unaffected, since
    // opening reads only the header; `store check` finds it.
    let path = db.to_str().unwrap();
    let sound = within_10s(home.path(), &["store", "check", "--store", path]);
    assert_eq!(sound.status.code(), Some(0), "{}", text(&sound.stderr));
    assert!(
        text(&sound.stdout).contains(": sound (quick_check of "),
        "{}",
        text(&sound.stdout)
    );
    damage_root_page(&db, "events_by_session");
    let health = within_10s(
        home.path(),
        &["health", "--no-sweep", "--json", "--store", path],
    );
    let board: serde_json::Value = serde_json::from_slice(&health.stdout)
        .unwrap_or_else(|_| panic!("{}", text(&health.stderr)));
    assert_eq!(board["observer"]["events_in_window"], 50, "{board}");
    let check = within_10s(home.path(), &["store", "check", "--store", path]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stdout));
}

#[tokio::test]
async fn a_write_the_store_refuses_is_said_on_stderr_with_sqlites_reason() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    drop(Store::open(&db).unwrap());
    // A store that opens and checks fine, but refuses every event.
    let edit = rusqlite::Connection::open(&db).unwrap();
    edit.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON events
         BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END;",
    )
    .unwrap();
    drop(edit);
    let (mut child, url, lines) = listen_with_store(SECRET, &db);

    let body = event(
        "00000000-0000-4000-8000-000000000001",
        Utc::now().timestamp_millis(),
    )
    .body;
    let (status, _) = post_signed(&url, SECRET, &body).await;
    // The line reaches stderr after the answer: wait for it (10 s at most).
    let mut stderr = String::new();
    while let Ok(line) = lines.recv_timeout(std::time::Duration::from_secs(10)) {
        stderr.push_str(&line);
        stderr.push('\n');
        if line.contains("not stored") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(status, 503, "{stderr}");
    assert!(
        stderr.contains("not stored") && stderr.contains("refused by a test trigger"),
        "{stderr}"
    );
    assert!(!stderr.contains("ses_"), "no body on stderr: {stderr}");
}

/// A refused store in WAL mode (another program's, or an earshot store of
/// a newer schema) is left as it was found: the `-wal` and `-shm` that
/// reading its header made are gone again.
#[tokio::test]
async fn a_refused_store_in_wal_mode_leaves_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-wal.db");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    let newer = dir.path().join("newer.db");
    drop(Store::open(&newer).unwrap());
    let conn = rusqlite::Connection::open(&newer).unwrap();
    conn.execute_batch("PRAGMA user_version = 999;").unwrap();
    drop(conn);
    for db in [&other, &newer] {
        assert_eq!(side_files(db), Vec::<PathBuf>::new(), "clean to begin with");
        let out = health(db).await;
        assert!(!out.status.success(), "{}", text(&out.stderr));
        assert_eq!(side_files(db), Vec::<PathBuf>::new(), "{}", db.display());
    }
}
