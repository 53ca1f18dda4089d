//! Retention and erasure with the real binary: `earshot store prune`
//! removes what it says it removes (checked by the `sqlite3` shell reading
//! the file on its own), `earshot store forget` erases one call, its
//! caller's number included, from the store's files and a capture file
//! and leaves every other call as it was, and neither a prune by hand nor
//! the observer's own (`listen --retention`) loses an event the observer
//! acknowledged while it ran. Bad periods exit 2.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use crate::common::cli::{earshot, isolated, line_with, post_signed, run, run_within, text};

const SECRET: &str = "whsec_retention_0123456789abcdefghijklmn";
const DAY_MS: i64 = 86_400_000;

/// `sqlite3 -readonly DB SQL`'s output: the store read by a program other
/// than earshot. Without the shell the test fails, naming the package.
fn sqlite3(db: &Path, sql: &str) -> String {
    let output = match Command::new("sqlite3")
        .arg("-readonly")
        .arg(db)
        .arg(sql)
        .output()
    {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => panic!(
            "the sqlite3 shell is not installed: these tests read the store with it, apart from earshot (apt-get install sqlite3)"
        ),
        Err(error) => panic!("sqlite3 runs: {error}"),
    };
    assert!(
        output.status.success(),
        "sqlite3 {sql}: {}",
        text(&output.stderr)
    );
    text(&output.stdout).trim_end().to_owned()
}

/// The lines `sql` returns, through `sqlite3`.
fn lines(db: &Path, sql: &str) -> Vec<String> {
    sqlite3(db, sql).lines().map(str::to_owned).collect()
}

fn number(db: &Path, sql: &str) -> i64 {
    sqlite3(db, sql)
        .parse()
        .unwrap_or_else(|_| panic!("a number from {sql}"))
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// A new store at `db`, made by earshot (schema and all), then rows
/// written with plain SQL, as an older observer and sweep would have.
fn seed(db: &Path, sql: &str) {
    drop(earshot_core::store::Store::open(db).expect("a new store"));
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(sql).unwrap();
}

/// `count` call events `old_N` received `days` ago (each with an
/// outcome row, an attempt, its session), plus the same shapes of other
/// tables.
fn old_rows(prefix: &str, count: usize, days: i64) -> String {
    let at = now_ms() - days * DAY_MS;
    format!(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count})
         INSERT INTO events (event_id, event, session_id, occurred_ms, received_ms, headers, body)
         SELECT '{prefix}' || i, 'call.ended', 'call_{prefix}' || i, {at} + i, {at} + i, '[]',
                CAST('{{\"from_number\":\"+1555' || i || '\"}}' AS BLOB)
         FROM n;
         INSERT INTO deliveries (id, subscription_id, session_id, status, attempt_count,
             http_status_code, created_ms, delivered_ms, record)
         SELECT 'dlv_' || event_id, 'sub_1', session_id, 'delivered', 1, 200, received_ms,
                received_ms, '{{}}'
         FROM events WHERE event_id LIKE '{prefix}%';
         INSERT INTO sessions (session_id, kind, source, first_seen_ms, last_event_ms)
         SELECT session_id, 'call', 'observer', received_ms, received_ms
         FROM events WHERE event_id LIKE '{prefix}%';
         INSERT INTO event_outcomes (subscription_id, event_key, event_id, event, session_id,
             session_no, occurred_ms, state, attempts, http_status_code, error_class)
         SELECT 'sub_1', e.event_id, e.event_id, e.event, e.session_id, s.session_no,
                e.occurred_ms, 'delivered', 1, 0, ''
         FROM events e JOIN sessions s ON s.session_id = e.session_id
         WHERE e.event_id LIKE '{prefix}%';
         COMMIT;"
    )
}

/// A call event's body; `with_time: false` leaves the timestamp out (an
/// unfiled delivery).
fn call_event(event_id: &str, call_id: &str, from: &str, with_time: bool) -> Vec<u8> {
    let mut event = json!({
        "event_id": event_id,
        "event": "call.ended",
        "call": {
            "call_id": call_id, "session_id": call_id, "account_id": 7,
            "agent_id": "0000de30-0000-4000-8000-000000000001", "status": "ended",
            "direction": "inbound", "from_number": from, "to_number": "+15559990000",
            "created_at": "2026-11-25T01:00:00Z", "ended_at": "2026-11-25T01:05:00Z",
            "recording_url": format!("https://recordings.example/{call_id}.wav?sig=abc"),
            "transcript_url": format!("https://recordings.example/{call_id}.json?sig=abc"),
        }
    });
    if with_time {
        event["timestamp"] = json!(Utc::now().to_rfc3339());
    }
    event.to_string().into_bytes()
}

/// A running `earshot listen`: the child, its URL, its stderr by line.
struct Listening {
    child: Child,
    url: String,
    stderr: Receiver<String>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Listening {
    fn start(mut command: Command, args: &[&str]) -> Listening {
        let mut child = command
            .arg("listen")
            .args(["--secret", SECRET])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("earshot listen starts");
        let url = crate::common::cli::listening_url(&mut child);
        let lines = crate::common::cli::stderr_lines(&mut child);
        Listening {
            child,
            url,
            stderr: lines,
        }
    }

    /// The first stderr line containing `needle` within `within`, and
    /// every line read before it.
    fn wait_for(&self, needle: &str, within: Duration) -> (Option<String>, Vec<String>) {
        line_with(&self.stderr, needle, within)
    }
}

/// Posts new events (`new_N`) from `tasks` concurrent senders until `done`
/// is set (and at least `least` each); the event ids answered 2xx, and
/// how many got another answer.
async fn post_until(
    url: String,
    tasks: usize,
    least: usize,
    done: Arc<AtomicBool>,
) -> (BTreeSet<String>, usize) {
    let mut senders = Vec::new();
    for task in 0..tasks {
        let (url, done) = (url.clone(), done.clone());
        senders.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let mut refused = 0;
            let mut n = 0;
            while n < least || !done.load(Ordering::Relaxed) {
                let id = format!("new_{task}_{n}");
                let body = call_event(&id, &format!("call_{id}"), "+15550000000", true);
                let (status, _) = post_signed(&url, SECRET, &body).await;
                if (200..300).contains(&status) {
                    acknowledged.push(id);
                } else {
                    refused += 1;
                }
                n += 1;
            }
            (acknowledged, refused)
        }));
    }
    let mut acknowledged = BTreeSet::new();
    let mut refused = 0;
    for sender in senders {
        let (ids, bad) = sender.await.unwrap();
        acknowledged.extend(ids);
        refused += bad;
    }
    (acknowledged, refused)
}

/// `removed` counts of a prune's text summary, by table.
fn removed_counts(stdout: &str) -> Vec<(String, i64)> {
    stdout
        .lines()
        .filter(|line| line.starts_with("  "))
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let table = words.next()?.to_owned();
            let count = words.next()?.replace(',', "").parse().ok()?;
            Some((table, count))
        })
        .collect()
}

#[tokio::test]
async fn store_prune_removes_what_it_says_and_nothing_recent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let (old, recent) = (now_ms() - 40 * DAY_MS, now_ms() - DAY_MS);
    seed(
        &db,
        &format!(
            "{}{}
             INSERT INTO unfiled_events (received_ms, headers, body, reason)
                 VALUES ({old}, '[]', x'00', 'no timestamp'), ({recent}, '[]', x'00', 'no timestamp');
             INSERT INTO changes (at_ms, operator, subscription_id, action, detail)
                 VALUES ({old}, 'ann', 'sub_1', 'pause', ''), ({recent}, 'bob', 'sub_1', 'resume', '');
             INSERT INTO recoveries (subscription_id, event_id, session_id, started_ms, finished_ms,
                 delivered) VALUES ('sub_1', 'old_1', 'call_old_1', {old}, {old}, 1);",
            old_rows("old_", 3000, 40),
            old_rows("recent_", 40, 1),
        ),
    );
    let tables = [
        "events",
        "unfiled_events",
        "event_outcomes",
        "deliveries",
        "recoveries",
        "sessions",
        "changes",
    ];
    let before: Vec<i64> = tables
        .iter()
        .map(|table| number(&db, &format!("SELECT count(*) FROM {table}")))
        .collect();

    let out = run(earshot()
        .args(["store", "prune", "--older-than", "30d", "--store"])
        .arg(&db))
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let said = removed_counts(&stdout);
    for (table, before) in tables.iter().zip(before) {
        let after = number(&db, &format!("SELECT count(*) FROM {table}"));
        let reported = said
            .iter()
            .find(|(name, _)| name == table)
            .map(|(_, count)| *count)
            .unwrap_or_else(|| panic!("{table} in the summary: {stdout}"));
        assert_eq!(reported, before - after, "{table}: {stdout}");
    }
    assert_eq!(
        lines(&db, "SELECT DISTINCT substr(event_id, 1, 7) FROM events"),
        ["recent_"]
    );
    assert_eq!(number(&db, "SELECT count(*) FROM events"), 40);
    assert_eq!(number(&db, "SELECT count(*) FROM deliveries"), 40);
    assert_eq!(number(&db, "SELECT count(*) FROM sessions"), 40);
    assert_eq!(lines(&db, "SELECT operator FROM changes"), ["bob"]);
    assert_eq!(number(&db, "SELECT count(*) FROM recoveries"), 0);
    assert_eq!(
        number(
            &db,
            &format!("SELECT count(*) FROM unfiled_events WHERE received_ms = {recent}")
        ),
        1
    );
    // The counts the board reads went down with the attempts: no attempt
    // is counted that is not in `deliveries`.
    assert_eq!(
        number(
            &db,
            "SELECT coalesce(sum(count), 0) FROM delivery_counts_hourly"
        ),
        40
    );

    // Again, as JSON: nothing left to remove.
    let out = run(earshot()
        .args(["store", "prune", "--older-than", "30d", "--json", "--store"])
        .arg(&db))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(summary["total"], 0, "{summary}");
    assert_eq!(summary["older_than"], "30d");
}

#[tokio::test]
async fn store_forget_erases_one_call_from_the_files_and_leaves_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let wal_path = dir.path().join("earshot.db-wal");
    let capture = dir.path().join("capture.jsonl");
    let (gone, kept) = ("call_forget_0001", "call_keep_0002");
    let (gone_number, kept_number) = ("+15550001111", "+15550002222");
    let listening = Listening::start(
        earshot(),
        &[
            "--store",
            db.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
        ],
    );
    for (n, (call, number)) in [(gone, gone_number), (kept, kept_number)]
        .into_iter()
        .enumerate()
    {
        for step in 0..3 {
            let id = format!("00000000-0000-4000-8000-00000000{n}{step:03}");
            let body = call_event(&id, call, number, true);
            assert_eq!(post_signed(&listening.url, SECRET, &body).await.0, 200);
        }
    }
    // A delivery without a timestamp: kept in unfiled_events.
    let body = call_event(
        "00000000-0000-4000-8000-000000000999",
        gone,
        gone_number,
        false,
    );
    assert_eq!(post_signed(&listening.url, SECRET, &body).await.0, 200);
    // What the sweep and the console would have written.
    let at = now_ms();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(&format!(
            "INSERT INTO deliveries (id, subscription_id, session_id, status, attempt_count,
                 http_status_code, created_ms, record)
             VALUES ('dlv_gone', 'sub_1', '{gone}', 'failed', 1, 500, {at}, '{{}}'),
                    ('dlv_kept', 'sub_1', '{kept}', 'failed', 1, 500, {at}, '{{}}');
             INSERT INTO recoveries (subscription_id, event_id, session_id, started_ms)
             VALUES ('sub_1', 'x', '{gone}', {at});
             INSERT INTO incidents (id, subscription_id, http_status_code, error_class,
                 first_seen_ms, last_seen_ms, note)
             VALUES ('0000aaaa', 'sub_1', 500, '', {at}, {at}, 'caller of {gone} complained'),
                    ('0000bbbb', 'sub_1', 404, '', {at}, {at}, 'see {kept}');"
        ))
        .unwrap();
    let bytes_of = |paths: &[&Path]| -> Vec<u8> {
        paths
            .iter()
            .flat_map(|path| std::fs::read(path).unwrap_or_default())
            .collect()
    };
    let holds = |bytes: &[u8], needle: &str| {
        bytes
            .windows(needle.len())
            .any(|window| window == needle.as_bytes())
    };
    assert!(
        holds(&bytes_of(&[&wal_path]), gone_number),
        "the running observer's write-ahead log holds the number before the erasure"
    );
    let of_kept = |db: &Path| -> Vec<String> {
        ["events", "deliveries", "sessions", "event_outcomes"]
            .iter()
            .map(|table| {
                sqlite3(
                    db,
                    &format!("SELECT count(*) FROM {table} WHERE session_id = '{kept}'"),
                )
            })
            .collect()
    };
    let kept_before = of_kept(&db);

    // Erased while the observer still runs.
    let out = run(earshot()
        .args(["store", "forget", gone, "--store"])
        .arg(&db))
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("{gone}: removed 3 events"))
            && stdout.contains("1 unfiled_events")
            && stdout.contains("1 deliveries")
            && stdout.contains("1 recoveries")
            && stdout.contains("1 sessions")
            && stdout.contains("1 incident notes cleared")
            && stdout.contains("write-ahead log was emptied"),
        "{stdout}"
    );
    for table in [
        "events",
        "deliveries",
        "sessions",
        "event_outcomes",
        "recoveries",
    ] {
        assert_eq!(
            number(
                &db,
                &format!("SELECT count(*) FROM {table} WHERE session_id = '{gone}'")
            ),
            0,
            "{table}"
        );
    }
    assert_eq!(
        number(
            &db,
            &format!("SELECT count(*) FROM unfiled_events WHERE instr(body, '{gone}') > 0")
        ),
        0
    );
    assert_eq!(
        lines(
            &db,
            "SELECT id || ':' || coalesce(note, '-') FROM incidents ORDER BY id"
        ),
        ["0000aaaa:-".to_owned(), format!("0000bbbb:see {kept}")]
    );
    assert_eq!(of_kept(&db), kept_before, "the other call is untouched");
    // Gone from the bytes of the store's files too, the observer still
    // holding them open (the other call's number is there: the search
    // finds what is there).
    let bytes = bytes_of(&[&db, &wal_path]);
    assert!(holds(&bytes, kept_number));
    assert!(
        !holds(&bytes, gone_number),
        "the erased number is still in the files"
    );
    assert!(
        !holds(&bytes, gone),
        "the erased call id is still in the files"
    );

    // The capture file, once its listener stopped.
    drop(listening);
    let capture_before = std::fs::read_to_string(&capture).unwrap();
    assert_eq!(capture_before.lines().count(), 7);
    let out = run(earshot()
        .args(["store", "forget", gone, "--capture"])
        .arg(&capture)
        .arg("--store")
        .arg(&db))
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("{gone}: removed 4 capture entries")),
        "{stdout}"
    );
    let capture_after = std::fs::read_to_string(&capture).unwrap();
    assert_eq!(capture_after.lines().count(), 3);
    assert!(!capture_after.contains(gone) && !capture_after.contains(gone_number));
    assert!(capture_after.contains(kept_number));

    // Nothing is held any more: not found, exit 1, as an unknown id is.
    let out = run(earshot()
        .args(["store", "forget", gone, "--capture"])
        .arg(&capture)
        .arg("--store")
        .arg(&db))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("nothing held about {gone} (not found)")),
        "{}",
        text(&out.stderr)
    );
    let out = run(earshot().args(["store", "forget", "", "--store"]).arg(&db)).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_by_hand_during_ingestion_loses_no_acknowledged_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    seed(&db, &old_rows("old_", 20_000, 40));
    let listening = Listening::start(earshot(), &["--store", db.to_str().unwrap()]);
    let done = Arc::new(AtomicBool::new(false));
    let posting = tokio::spawn(post_until(listening.url.clone(), 4, 50, done.clone()));
    // 20,000 events pruned by the debug build while four posters write:
    // about 55 s alone on a 2-core machine, so a minute is no hang guard.
    let out = run_within(
        earshot()
            .args(["store", "prune", "--older-than", "30d", "--store"])
            .arg(&db),
        Duration::from_secs(180),
    )
    .await;
    done.store(true, Ordering::Relaxed);
    let (acknowledged, refused) = posting.await.unwrap();
    drop(listening);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        removed_counts(&stdout).contains(&("events".to_owned(), 20_000)),
        "{stdout}"
    );
    assert_eq!(refused, 0, "every delivery is acknowledged during a prune");
    let stored: BTreeSet<String> = lines(&db, "SELECT event_id FROM events")
        .into_iter()
        .collect();
    let lost: Vec<&String> = acknowledged.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged, not in the store: {lost:?}");
    assert_eq!(stored.len(), acknowledged.len(), "and no old event is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_prunes_on_its_own_and_keeps_what_it_acknowledges() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    seed(&db, &old_rows("old_", 5_000, 40));
    let listening = Listening::start(
        earshot(),
        &["--store", db.to_str().unwrap(), "--retention", "30d"],
    );
    let done = Arc::new(AtomicBool::new(false));
    let posting = tokio::spawn(post_until(listening.url.clone(), 2, 20, done.clone()));
    let (said, before) = tokio::task::block_in_place(|| {
        listening.wait_for("rows older than 30d", Duration::from_secs(120))
    });
    done.store(true, Ordering::Relaxed);
    let (acknowledged, refused) = posting.await.unwrap();
    drop(listening);
    let said = said.unwrap_or_else(|| panic!("no prune said on stderr: {before:?}"));
    assert!(said.contains("events 5,000"), "{said}");
    assert!(
        before.iter().any(|line| line.contains("keeping 30d")),
        "{before:?}"
    );
    assert_eq!(refused, 0);
    let stored: BTreeSet<String> = lines(&db, "SELECT event_id FROM events")
        .into_iter()
        .collect();
    assert_eq!(
        stored, acknowledged,
        "every acknowledged event and no old one"
    );
}

/// A config file with one profile `p` holding `retention = VALUE`, in a
/// fresh home; the home's guard and the file.
fn profile_with_retention(value: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("earshot.toml");
    std::fs::write(
        &path,
        format!("default_profile = \"p\"\n\n[profiles.p]\nurl = \"http://127.0.0.1:9\"\nretention = {value}\n"),
    )
    .unwrap();
    (home, path)
}

#[tokio::test]
async fn the_profile_gives_the_period_and_the_flag_beats_it() {
    let (home, config) = profile_with_retention("\"12h\"");
    let db = home.path().join("earshot.db");
    let mut command = isolated(home.path());
    command.arg("--config").arg(&config);
    let listening = Listening::start(command, &["--store", db.to_str().unwrap()]);
    let (said, before) = listening.wait_for("keeping", Duration::from_secs(20));
    assert!(
        said.as_deref()
            .is_some_and(|line| line.starts_with("keeping 12h")),
        "{said:?} {before:?}"
    );
    drop(listening);
    let mut command = isolated(home.path());
    command.arg("--config").arg(&config);
    let listening = Listening::start(
        command,
        &["--store", db.to_str().unwrap(), "--retention", "2d"],
    );
    let (said, _) = listening.wait_for("keeping", Duration::from_secs(20));
    assert!(
        said.as_deref()
            .is_some_and(|line| line.starts_with("keeping 2d")),
        "{said:?}"
    );
    drop(listening);
    let out = run(isolated(home.path())
        .arg("--config")
        .arg(&config)
        .args(["config", "show"]))
    .await;
    assert!(
        text(&out.stdout).contains("retention:   12h"),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test]
async fn bad_periods_exit_2_and_say_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let db = db.to_str().unwrap();
    for args in [
        vec![
            "listen",
            "--secret",
            SECRET,
            "--store",
            db,
            "--retention",
            "3x",
        ],
        vec![
            "listen",
            "--secret",
            SECRET,
            "--store",
            db,
            "--retention",
            "0d",
        ],
        vec!["store", "prune", "--older-than", "30", "--store", db],
        vec!["store", "prune", "--older-than", "1.5w", "--store", db],
    ] {
        let out = run(earshot().args(&args)).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("30d, 12h, 90m, 90s or 1h30m") || stderr.contains("longer than zero"),
            "{args:?}: {stderr}"
        );
    }
    // One grammar for every duration: what `--since` takes, the prune and
    // the retention take (seconds, combined units).
    let other = dir.path().join("other.db");
    let other = other.to_str().unwrap();
    for period in ["90s", "1h30m", "1.5d"] {
        for args in [
            vec!["store", "prune", "--older-than", period, "--store", other],
            vec!["events", "--no-sweep", "--since", period, "--store", other],
        ] {
            let out = run(earshot().args(&args)).await;
            assert_eq!(
                out.status.code(),
                Some(0),
                "{args:?}: {}",
                text(&out.stderr)
            );
        }
    }
    // --retention is for the observer: without --store it is refused.
    let out = run(earshot().args(["listen", "--secret", SECRET, "--retention", "30d"])).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--store"),
        "{}",
        text(&out.stderr)
    );

    // A bad value in the profile names the line and the field.
    let (home, config) = profile_with_retention("\"forever\"");
    let out = run(isolated(home.path())
        .arg("--config")
        .arg(&config)
        .args(["listen", "--secret", SECRET, "--store", db]))
    .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 5") && stderr.contains("profiles.p.retention"),
        "{stderr}"
    );
    assert!(
        !Path::new(db).exists(),
        "nothing is opened before the period is known"
    );
    let out = run(isolated(home.path())
        .arg("--config")
        .arg(&config)
        .args(["config", "show"]))
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("profiles.p.retention"));
}

/// `store forget` of 30 of 3,000 calls leaves none of their ids anywhere in
/// the file's bytes (deleting alone leaves copies in the interior pages of
/// the indexes keyed by session), and every other call's id is still there.
#[tokio::test]
async fn store_forget_of_30_of_3000_calls_leaves_no_copy_of_their_ids() {
    use earshot_core::store::Store;
    use earshot_core::store::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let id = |n: usize| format!("call_{n:06}_to_forget");
    let (writer, thread) = Writer::start(Store::open(&db).unwrap()).unwrap();
    let at = now_ms() - 3_600_000;
    for n in 0..3_000 {
        let observed = crate::store_hand_edits::event(&format!("e{n}"), &id(n), at + n as i64);
        writer.write(observed).await.unwrap();
    }
    drop(writer);
    thread.join().unwrap();
    let erased: Vec<String> = (0..3_000).step_by(100).map(id).collect();
    let out = run(earshot()
        .args(["store", "forget"])
        .args(&erased)
        .arg("--store")
        .arg(&db))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut bytes = std::fs::read(&db).unwrap();
    bytes.extend(std::fs::read(dir.path().join("earshot.db-wal")).unwrap_or_default());
    let held = |ids: &[String]| -> Vec<String> {
        ids.iter()
            .filter(|id| bytes.windows(id.len()).any(|w| w == id.as_bytes()))
            .cloned()
            .collect()
    };
    assert_eq!(held(&erased), Vec::<String>::new());
    let kept: Vec<String> = (50..3_000).step_by(100).map(id).collect();
    assert_eq!(held(&kept), kept);
}

#[tokio::test]
async fn a_prune_with_erase_leaves_no_pruned_call_id_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    seed(
        &db,
        &format!(
            "{}{}",
            old_rows("gone_", 3_000, 40),
            old_rows("kept_", 30, 1)
        ),
    );
    let out = run(earshot()
        .args([
            "store",
            "prune",
            "--older-than",
            "30d",
            "--erase",
            "--store",
        ])
        .arg(&db))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("the write-ahead log is emptied"),
        "{}",
        text(&out.stderr)
    );
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes.extend(std::fs::read(&wal).unwrap_or_default());
    // Every `call_gone_N` and `call_kept_N` in the bytes, in one pass.
    let ids_after = |marker: &[u8]| -> BTreeSet<String> {
        bytes
            .windows(marker.len())
            .enumerate()
            .filter(|(_, window)| *window == marker)
            .map(|(at, _)| {
                let digits: String = bytes[at + marker.len()..]
                    .iter()
                    .take_while(|byte| byte.is_ascii_digit())
                    .map(|byte| char::from(*byte))
                    .collect();
                format!("{}{digits}", String::from_utf8_lossy(marker))
            })
            .collect()
    };
    let left = ids_after(b"call_gone_");
    assert!(left.is_empty(), "{} pruned ids left: {left:?}", left.len());
    assert_eq!(
        ids_after(b"call_kept_").len(),
        30,
        "what is kept is still there"
    );
}
