//! `earshot store copy --from PATH.db --to postgres://…` through the real
//! binary, into the test kit's throwaway cluster, from stores made by
//! earshot's own writer: every row of events, sessions and unfiled
//! deliveries equal on both sides (read from outside earshot: rusqlite and
//! psql), the source's bytes unchanged, a second run copying nothing; a
//! run killed with SIGKILL midway resumed by the next, which copies fewer
//! rows than all; events filed live into the destination during a copy
//! all kept, each once; bad input refused with exit 2.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use earshot_core::store::events::{Filing, UnfiledEvent, Unreadable};
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, StoreHandle, now_ms};
use earshot_testkit::postgres::{PgCluster, server_bindir};

use crate::common::cli::{earshot, run, text};
use crate::store_suite::event;

pub(crate) const DATABASE: &str = "copied";
const DAY_MS: i64 = 86_400_000;

/// A cluster with the database copies go into.
pub(crate) fn cluster() -> PgCluster {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database(DATABASE).expect("database made");
    cluster
}

/// When event `index` of a test occurred: one of the twelve days before
/// `base`.
fn occurred(index: usize, base: i64) -> i64 {
    base - (index % 12) as i64 * DAY_MS - index as i64
}

/// A SQLite store at `dir/earshot.db` holding `events` events over the
/// twelve days before `base` ([`occurred`]; through earshot's writer, as
/// `listen --store` files them) and three unfiled deliveries, two without
/// an `event_id`.
async fn source_store(dir: &Path, events: usize, base: i64) -> PathBuf {
    let path = dir.join("earshot.db");
    let store = Store::open(&path).expect("the store opens");
    let (writer, thread) = Writer::start(store).expect("the writer starts");
    let handle: StoreHandle = writer.into();
    let mut filed = Vec::new();
    for chunk in (0..events).collect::<Vec<_>>().chunks(200) {
        let filings = chunk.iter().map(|&index| {
            let handle = handle.clone();
            async move { handle.file(event(index, occurred(index, base))).await }
        });
        for result in futures_util::future::join_all(filings).await {
            filed.push(result.expect("filed"));
        }
    }
    assert!(filed.iter().all(|new| *new), "every event new");
    for (index, event_id) in [Some("unf-1"), None, None].into_iter().enumerate() {
        let unfiled = UnfiledEvent {
            event_id: event_id.map(str::to_owned),
            event: None,
            session_id: None,
            occurred_ms: None,
            received_ms: base + index as i64,
            delivery_id: Some(format!("dlv-unf-{index}")),
            headers: vec![("content-type".into(), "application/json".into())],
            body: format!("{{\"n\":{index}}}").into_bytes(),
            reasons: vec![Unreadable::NoTimestamp],
        };
        assert!(handle.file(Filing::Unfiled(unfiled)).await.expect("kept"));
    }
    drop(handle);
    // The writer's last act is closing the file (a checkpoint): done
    // before the test reads its bytes.
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .expect("joined")
        .expect("the writer ends");
    path
}

/// `earshot store copy --from SOURCE --to URL ARGS`, its password in
/// PGPASSWORD.
pub(crate) fn copy_command(
    cluster: &PgCluster,
    source: &Path,
    args: &[&str],
) -> std::process::Command {
    let mut command = earshot();
    command
        .args(["store", "copy", "--from"])
        .arg(source)
        .args(["--to", &cluster.url(DATABASE)])
        .args(args)
        .env("PGPASSWORD", cluster.password());
    command
}

/// A copy run to its end; its JSON summary.
pub(crate) async fn copy_json(
    cluster: &PgCluster,
    source: &Path,
    args: &[&str],
) -> serde_json::Value {
    let mut command = copy_command(cluster, source, args);
    command.arg("--json");
    let output = run(&mut command).await;
    assert!(
        output.status.success(),
        "{:?}: {}",
        output.status,
        text(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// `table`'s counts in a summary: (source rows, copied, already, by
/// earlier runs).
pub(crate) fn counts(summary: &serde_json::Value, table: &str) -> (u64, u64, u64, u64) {
    let row = summary["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|row| row["table"] == table)
        .unwrap_or_else(|| panic!("{table} in {summary}"));
    let n = |key: &str| row[key].as_u64().unwrap_or_else(|| panic!("{key}: {row}"));
    (
        n("source_rows"),
        n("copied"),
        n("already"),
        n("by_earlier_runs"),
    )
}

/// Each table's rows as text lines, in one order, as SQLite holds them.
fn sqlite_rows(path: &Path, table: &str) -> Vec<String> {
    let sql = match table {
        "events" => {
            "SELECT event_id, event, session_id, occurred_ms, received_ms,
                    coalesce(delivery_id, '-'), headers, hex(body)
             FROM events ORDER BY event_id"
        }
        "sessions" => {
            "SELECT session_id, coalesce(kind, '-'), source, first_seen_ms,
                    coalesce(last_event_ms, -1), coalesce(last_swept_ms, -1), unsettled
             FROM sessions ORDER BY session_id"
        }
        _ => {
            "SELECT received_ms, coalesce(event_id, '-'), coalesce(delivery_id, '-'), headers,
                    hex(body), reason
             FROM unfiled_events ORDER BY received_ms, hex(body)"
        }
    };
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("the source opens");
    let mut statement = conn.prepare(sql).expect("prepared");
    let columns = statement.column_count();
    statement
        .query_map([], |row| {
            let mut fields = Vec::new();
            for column in 0..columns {
                let value: rusqlite::types::Value = row.get(column)?;
                fields.push(match value {
                    rusqlite::types::Value::Integer(n) => n.to_string(),
                    rusqlite::types::Value::Text(text) => text,
                    other => format!("{other:?}"),
                });
            }
            Ok(fields.join("|"))
        })
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows read")
}

/// The same, as PostgreSQL holds them (read with psql).
fn postgres_rows(cluster: &PgCluster, table: &str) -> Vec<String> {
    let sql = match table {
        "events" => {
            "SELECT event_id, event, session_id, occurred_ms, received_ms,
                    coalesce(delivery_id, '-'), headers, upper(encode(body, 'hex'))
             FROM earshot.events ORDER BY event_id COLLATE \"C\""
        }
        "sessions" => {
            "SELECT session_id, coalesce(kind, '-'), source, first_seen_ms,
                    coalesce(last_event_ms, -1), coalesce(last_swept_ms, -1), unsettled::int
             FROM earshot.sessions ORDER BY session_id COLLATE \"C\""
        }
        _ => {
            "SELECT received_ms, coalesce(event_id, '-'), coalesce(delivery_id, '-'), headers,
                    upper(encode(body, 'hex')), reason
             FROM earshot.unfiled_events ORDER BY received_ms, upper(encode(body, 'hex'))"
        }
    };
    let out = cluster.psql(DATABASE, sql).expect("psql");
    out.lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

pub(crate) fn pg_count(cluster: &PgCluster, sql: &str) -> u64 {
    let out = cluster.psql(DATABASE, sql).expect("psql");
    out.parse()
        .unwrap_or_else(|_| panic!("not a count: {out:?}"))
}

/// An advisory lock no earshot code takes, for a test's gate.
const GATE_LOCK: u32 = 99;

/// A psql of the test's own holding the lock a copy's batches commit
/// under (`0x45415253, 4`), once it holds it: the next batch stalls.
pub(crate) fn hold_copy_lock(cluster: &PgCluster, deadline: Instant) -> std::process::Child {
    hold_lock(cluster, 4, deadline)
}

/// A psql of the test's own holding advisory lock `(0x45415253, objid)`,
/// once it holds it.
fn hold_lock(cluster: &PgCluster, objid: u32, deadline: Instant) -> std::process::Child {
    let mut holder = std::process::Command::new(server_bindir().expect("bindir").join("psql"));
    holder
        .args(["--no-psqlrc", "-h"])
        .arg(cluster.socket_dir())
        .args([
            "-p",
            &cluster.port().to_string(),
            "-U",
            earshot_testkit::postgres::PG_USER,
            "-d",
            DATABASE,
            "-c",
        ])
        .arg(format!(
            "BEGIN; SELECT pg_advisory_xact_lock(1161908819, {objid}), pg_sleep(60);"
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env("PGPASSWORD", cluster.password());
    let holder = holder.spawn().expect("psql starts");
    let held = format!(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
         WHERE l.locktype = 'advisory' AND l.objid = {objid} AND l.granted
           AND a.query LIKE '%pg_sleep(60)%'"
    );
    while pg_count(cluster, &held) == 0 {
        assert!(Instant::now() < deadline, "the holder took no lock");
        std::thread::sleep(Duration::from_millis(5));
    }
    holder
}

/// Ends a [`hold_lock`] (or [`hold_copy_lock`]) holder's session,
/// freeing its lock.
pub(crate) fn release_lock(cluster: &PgCluster, mut holder: std::process::Child) {
    let _ = cluster.psql(
        DATABASE,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()",
    );
    let _ = holder.kill();
    let _ = holder.wait();
}

/// Migrates the cluster's database, so a test can count rows from the
/// start.
pub(crate) async fn migrate(cluster: &PgCluster) {
    let migrated = run(earshot()
        .args(["store", "migrate", "--store", &cluster.url(DATABASE)])
        .env("PGPASSWORD", cluster.password()))
    .await;
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
}

/// Waits until the destination holds at least `rows` events.
fn wait_for_rows(
    cluster: &PgCluster,
    rows: u64,
    child: &mut std::process::Child,
    deadline: Instant,
) {
    while pg_count(cluster, "SELECT count(*) FROM earshot.events") < rows {
        assert!(Instant::now() < deadline, "no batch committed within 30 s");
        assert!(child.try_wait().expect("waits").is_none(), "ended too soon");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("the source reads")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_is_copied_row_for_row_and_a_second_run_copies_nothing() {
    let cluster = cluster();
    let dir = tempfile::tempdir().expect("a temp dir");
    let source = source_store(dir.path(), 1_500, now_ms()).await;
    // A forwarder's cursor: translated into PostgreSQL's place once, then
    // "already there" (what it means is postgres_relay_copy's test).
    rusqlite::Connection::open(&source)
        .expect("opens")
        .execute(
            "INSERT INTO relay_cursors (app, after_seq, at_ms) VALUES ('app-1', 3, 1)",
            [],
        )
        .expect("a relay cursor row");
    let before = file_bytes(&source);

    let first = copy_json(&cluster, &source, &["--batch", "400"]).await;
    assert_eq!(counts(&first, "events"), (1_500, 1_500, 0, 0), "{first}");
    assert_eq!(counts(&first, "sessions"), (7, 7, 0, 0), "{first}");
    assert_eq!(counts(&first, "unfiled_events"), (3, 3, 0, 0), "{first}");
    assert_eq!(first["stopped"], false);
    assert_eq!(counts(&first, "relay_cursors"), (1, 1, 0, 0), "{first}");
    let left = first["not_copied"].as_array().expect("not_copied");
    assert!(
        left.iter().all(|row| row["table"] != "relay_cursors"),
        "{first}"
    );
    for table in ["events", "sessions", "unfiled_events"] {
        let expected = sqlite_rows(&source, table);
        assert!(!expected.is_empty());
        assert_eq!(postgres_rows(&cluster, table), expected, "{table}");
    }
    // Twelve days of events: twelve day partitions made (or more: today's
    // and tomorrow's are made at connect).
    assert!(
        pg_count(
            &cluster,
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'earshot.events'::regclass"
        ) >= 12
    );

    let second = copy_json(&cluster, &source, &[]).await;
    assert_eq!(counts(&second, "events"), (1_500, 0, 0, 1_500), "{second}");
    assert_eq!(counts(&second, "sessions"), (7, 0, 0, 7), "{second}");
    assert_eq!(counts(&second, "unfiled_events"), (3, 0, 0, 3), "{second}");
    assert_eq!(counts(&second, "relay_cursors"), (1, 0, 1, 0), "{second}");
    assert_eq!(
        pg_count(&cluster, "SELECT count(*) FROM earshot.events"),
        1_500
    );
    assert_eq!(
        pg_count(&cluster, "SELECT count(*) FROM earshot.unfiled_events"),
        3
    );

    // The text summary says the same.
    let output = run(&mut copy_command(&cluster, &source, &[])).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let summary = text(&output.stdout);
    assert!(summary.contains("relay_cursors"), "{summary}");
    assert_eq!(file_bytes(&source), before, "the source was not written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_killed_midway_is_resumed_by_the_next_run_without_doubling() {
    let cluster = cluster();
    let dir = tempfile::tempdir().expect("a temp dir");
    let total = 3_000;
    let source = source_store(dir.path(), total, now_ms()).await;
    migrate(&cluster).await;

    // A gate of the test's own: once 200 events are in, the next batch's
    // insert waits for a lock a psql of the test's holds (however fast
    // the copy runs), and the copy is killed with that batch in flight,
    // as one killed at any moment would be.
    let deadline = Instant::now() + Duration::from_secs(30);
    let gate = hold_lock(&cluster, GATE_LOCK, deadline);
    let gated = format!(
        "CREATE FUNCTION earshot.gate() RETURNS trigger LANGUAGE plpgsql AS
         $$ BEGIN
             IF (SELECT count(*) FROM earshot.events) >= 200 THEN
                 PERFORM pg_advisory_xact_lock(1161908819, {GATE_LOCK});
             END IF;
             RETURN NULL;
         END $$;
         CREATE TRIGGER gate BEFORE INSERT ON earshot.events
         FOR EACH STATEMENT EXECUTE FUNCTION earshot.gate()"
    );
    cluster.psql(DATABASE, &gated).expect("the gate");
    let mut copy = copy_command(&cluster, &source, &["--batch", "50"]);
    copy.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = copy.spawn().expect("the copy starts");
    let waiting_at_gate = format!(
        "SELECT count(*) FROM pg_locks
         WHERE locktype = 'advisory' AND objid = {GATE_LOCK} AND NOT granted"
    );
    while pg_count(&cluster, &waiting_at_gate) == 0 {
        assert!(
            Instant::now() < deadline,
            "no batch reached the gate within 30 s"
        );
        assert!(child.try_wait().expect("waits").is_none(), "ended too soon");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    release_lock(&cluster, gate);
    cluster
        .psql(DATABASE, "DROP TRIGGER gate ON earshot.events")
        .expect("the gate dropped");
    let kept = pg_count(&cluster, "SELECT count(*) FROM earshot.events");
    assert_eq!(
        kept, 200,
        "the batches before the gate, not the one in flight"
    );

    let resumed = copy_json(&cluster, &source, &["--batch", "50"]).await;
    let (rows, copied, already, earlier) = counts(&resumed, "events");
    assert_eq!(rows, total as u64);
    assert_eq!(
        earlier, kept,
        "resumed after the last committed batch: {resumed}"
    );
    assert_eq!(copied, total as u64 - kept, "{resumed}");
    assert_eq!(already, 0, "{resumed}");
    assert_eq!(
        postgres_rows(&cluster, "events"),
        sqlite_rows(&source, "events")
    );
    assert_eq!(
        postgres_rows(&cluster, "sessions"),
        sqlite_rows(&source, "sessions")
    );
    assert_eq!(
        postgres_rows(&cluster, "unfiled_events"),
        sqlite_rows(&source, "unfiled_events")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_stopped_by_sigint_keeps_its_last_batch_says_so_and_exits_130() {
    let cluster = cluster();
    let dir = tempfile::tempdir().expect("a temp dir");
    let total = 1_000;
    let source = source_store(dir.path(), total, now_ms()).await;
    migrate(&cluster).await;
    // A row a transaction: the 980 left after the first 20 take longer than
    // starting the lock's holder (with 50 a batch a loaded machine's copy
    // could end first, and exit 0).
    let mut copy = copy_command(&cluster, &source, &["--batch", "1", "--json"]);
    copy.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = copy.spawn().expect("the copy starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    wait_for_rows(&cluster, 20, &mut child, deadline);
    // A batch stalled on the lock when SIGINT comes: it is finished, and
    // nothing after it is started.
    let holder = hold_copy_lock(&cluster, deadline);
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: the pid is our own unreaped child's.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    release_lock(&cluster, holder);
    let output = child.wait_with_output().expect("the copy ends");
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("stopped by SIGINT"),
        "{}",
        text(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(summary["stopped"], true, "{summary}");
    let kept = pg_count(&cluster, "SELECT count(*) FROM earshot.events");
    let (_, copied, _, _) = counts(&summary, "events");
    assert_eq!(
        copied, kept,
        "the summary counts what was committed: {summary}"
    );
    assert!(kept < total as u64, "{kept}");

    let resumed = copy_json(&cluster, &source, &[]).await;
    assert_eq!(
        counts(&resumed, "events"),
        (total as u64, total as u64 - kept, 0, kept),
        "{resumed}"
    );
    assert_eq!(
        postgres_rows(&cluster, "events"),
        sqlite_rows(&source, "events")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_filed_live_into_the_destination_during_a_copy_are_all_kept_once() {
    let cluster = cluster();
    let dir = tempfile::tempdir().expect("a temp dir");
    let total = 2_000;
    let base = now_ms();
    let source = source_store(dir.path(), total, base).await;
    let sources = cluster.password_sources();
    let target = PgTarget::parse(&cluster.url(DATABASE)).expect("a URL");
    let live = PgStore::connect(target, &sources).await.expect("connects");
    let live: StoreHandle = live.into();
    // A replica files 300 events while the copy runs: 150 the source
    // holds too (the platform delivered them to both), 150 only it has.
    let filer = tokio::spawn(async move {
        let mut filed = 0;
        for n in 0..300 {
            // Even: an event of the source, with its key (id and time).
            let index = if n % 2 == 0 { n * 6 } else { 10_000 + n };
            live.file(event(index, occurred(index, base)))
                .await
                .expect("filed live");
            filed += 1;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        filed
    });
    let copied = copy_json(&cluster, &source, &["--batch", "100"]).await;
    assert_eq!(filer.await.expect("the filer ends"), 300);
    let (rows, new, already, _) = counts(&copied, "events");
    assert_eq!(rows, total as u64);
    assert_eq!(new + already, total as u64, "{copied}");
    assert_eq!(
        pg_count(&cluster, "SELECT count(*) FROM earshot.events"),
        total as u64 + 150,
        "every event once: the source's and the live ones"
    );
    assert_eq!(
        pg_count(
            &cluster,
            "SELECT count(DISTINCT event_id) FROM earshot.events"
        ),
        total as u64 + 150
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_exit_2_and_a_newer_store_is_left_untouched() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let source = source_store(dir.path(), 10, now_ms()).await;
    let url = "postgres://earshot@127.0.0.1:1/none";
    let refused = |args: Vec<String>| async move {
        let output = run(earshot().args(["store", "copy"]).args(&args)).await;
        (output.status.code(), text(&output.stderr))
    };
    let src = source.display().to_string();
    let missing = dir.path().join("missing.db").display().to_string();
    for (args, says) in [
        (
            vec!["--from".into(), missing, "--to".into(), url.into()],
            "cannot read",
        ),
        (
            vec![
                "--from".into(),
                src.clone(),
                "--to".into(),
                "/tmp/other.db".into(),
            ],
            "--to takes a PostgreSQL store",
        ),
        (
            vec!["--from".into(), src.clone(), "--to".into(), src.clone()],
            "same store",
        ),
        (
            vec![
                "--from".into(),
                src.clone(),
                "--to".into(),
                "postgres://earshot:secret@127.0.0.1:1/none".into(),
            ],
            "password",
        ),
    ] {
        let (code, stderr) = refused(args.clone()).await;
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("secret"), "{stderr}");
    }
    // Unreachable: a failure, exit 1, naming the store.
    let (code, stderr) = refused(vec![
        "--from".into(),
        src.clone(),
        "--to".into(),
        url.into(),
    ])
    .await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("127.0.0.1:1"), "{stderr}");
    // A store of a newer schema is refused and keeps every byte.
    rusqlite::Connection::open(&source)
        .expect("opens")
        .pragma_update(None, "user_version", 999)
        .expect("set");
    let before = file_bytes(&source);
    let (code, stderr) = refused(vec!["--from".into(), src, "--to".into(), url.into()]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("newer"), "{stderr}");
    assert_eq!(file_bytes(&source), before);
}
