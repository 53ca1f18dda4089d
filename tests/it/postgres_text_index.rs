//! The free-text index (`events_by_text`, schema version 14,
//! `store/postgres/text_index.rs`) when `pg_trgm` cannot be installed: a
//! role without the right to create in the database (`CREATE EXTENSION`
//! of a trusted extension needs it) migrates to 14 through the real
//! binary, which says there is no text index and fails nothing; free text
//! then lists the same events by testing the window's rows (the Kelvin
//! sign, which Rust folds to `k`, included). When an operator installs the
//! extension afterwards, the next start builds the index (on the parent
//! only, then each partition concurrently) and free text reads along it
//! with the same answers.
//!
//! The extension cannot be made missing from the test cluster's server
//! (it is one installation for every cluster), so "not available" is the
//! same branch as "not permitted": the migration's `CREATE EXTENSION`
//! fails, its error is caught, and nothing else depends on it.

use earshot_core::store::now_ms;
use earshot_core::store::postgres::PG_SCHEMA_VERSION;
use earshot_testkit::postgres::PgCluster;

use crate::common::cli::{isolated, run, text};

const DATABASE: &str = "observed";
const ROLE: &str = "observer";
const ROLE_PASSWORD: &str = "observer-pw-7f3a";

/// `earshot ARGS --store URL` as the role, in `home`: exit code, stdout, stderr.
async fn earshot(home: &std::path::Path, url: &str, args: &[&str]) -> (i32, String, String) {
    let output = run(isolated(home)
        .args(args)
        .args(["--store", url])
        .env("PGPASSWORD", ROLE_PASSWORD))
    .await;
    (
        output.status.code().unwrap_or(-1),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// The ids `events --json --no-sweep WORDS` lists as the role.
async fn listed(home: &std::path::Path, url: &str, words: &[&str]) -> Vec<String> {
    let mut args = vec!["events", "--json", "--no-sweep"];
    args.extend_from_slice(words);
    let (code, stdout, stderr) = earshot(home, url, &args).await;
    assert_eq!(code, 0, "{words:?}: {stderr}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("JSON");
    rows.iter()
        .map(|row| row["event_id"].as_str().expect("an id").to_owned())
        .collect()
}

/// The free-text lists the test asks for, the same with the index and
/// without: a rare word in any case, a word whose folded form is not
/// ASCII, a word in no event, and two words found in eleven.
async fn lists_the_words(home: &std::path::Path, url: &str) {
    assert_eq!(listed(home, url, &["RARE-zq"]).await, ["evt-rare-zq"]);
    assert_eq!(listed(home, url, &["kelvin"]).await, ["evt-\u{212A}elvin"]);
    assert_eq!(
        listed(home, url, &["nothing-here"]).await,
        Vec::<String>::new()
    );
    assert_eq!(listed(home, url, &["call_1999", "ended"]).await.len(), 11);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_pg_trgm_the_migration_succeeds_and_free_text_scans_until_it_is_installed() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database(DATABASE).expect("database made");
    let psql = |sql: &str| cluster.psql(DATABASE, sql).expect("psql");
    // The role may create in the database for its first start (the
    // schema), then no more: as an operator who made the schema and
    // handed it over.
    psql(&format!(
        "CREATE ROLE {ROLE} LOGIN PASSWORD '{ROLE_PASSWORD}';
         GRANT CREATE ON DATABASE {DATABASE} TO {ROLE}"
    ));
    let url = format!("postgres://{ROLE}@127.0.0.1:{}/{DATABASE}", cluster.port());
    let home = tempfile::tempdir().expect("temp dir");
    let (code, _, stderr) = earshot(home.path(), &url, &["store", "migrate", "--json"]).await;
    assert_eq!(code, 0, "{stderr}");
    // Back to 13 without the extension, and the right to create taken away.
    psql(&format!(
        "DROP EXTENSION pg_trgm CASCADE;
         DROP INDEX earshot.event_outcomes_unsettled;
         DELETE FROM earshot.schema_version WHERE version >= 14;
         REVOKE CREATE ON DATABASE {DATABASE} FROM {ROLE}"
    ));
    let (code, stdout, stderr) = earshot(home.path(), &url, &["store", "migrate", "--json"]).await;
    assert_eq!(code, 0, "the migration does not fail for pg_trgm: {stderr}");
    let answer: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(
        (answer["from"].as_i64(), answer["to"].as_i64()),
        (Some(13), Some(i64::from(PG_SCHEMA_VERSION)))
    );
    assert_eq!(answer["text_index"], "unavailable", "{answer}");
    assert_eq!(
        psql("SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'"),
        "0"
    );
    assert_eq!(
        psql("SELECT to_regclass('earshot.events_by_text') IS NULL"),
        "t"
    );
    // The rest of version 14 is there.
    assert_eq!(
        psql("SELECT to_regclass('earshot.event_outcomes_unsettled') IS NOT NULL"),
        "t"
    );
    let (code, stdout, _) = earshot(home.path(), &url, &["store", "migrate"]).await;
    assert_eq!(code, 0);
    assert!(
        stdout.contains("text index: none, pg_trgm is not installed"),
        "{stdout}"
    );

    // Today's partitions, made at a command's start; then 20,000 events of
    // the last minute: a common word, a rare one, the Kelvin sign.
    assert!(listed(home.path(), &url, &[]).await.is_empty());
    let now = now_ms();
    let at = (now - now.rem_euclid(86_400_000)).max(now - 60_000);
    psql(&format!(
        "INSERT INTO earshot.events
             (event_id, event, session_id, occurred_ms, received_ms, headers, body)
         SELECT 'evt-' || g, 'call.ended', 'call_' || g, {at} + g / 1000, {at} + g / 1000,
                '[]', ''::bytea
         FROM generate_series(1, 20000) AS g;
         INSERT INTO earshot.events
             (event_id, event, session_id, occurred_ms, received_ms, headers, body)
         VALUES ('evt-rare-zq', 'session.ended', 'ses-1', {at} + 1000, {at} + 1000, '[]', ''),
                ('evt-\u{212A}elvin', 'session.ended', 'ses-2', {at} + 1001, {at} + 1001, '[]', '');
         ANALYZE earshot.events"
    ));
    lists_the_words(home.path(), &url).await;

    // An operator installs it; the next start builds the index.
    psql("CREATE EXTENSION pg_trgm WITH SCHEMA earshot");
    let (code, stdout, stderr) = earshot(home.path(), &url, &["store", "migrate", "--json"]).await;
    assert_eq!(code, 0, "{stderr}");
    let answer: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(answer["text_index"], "built", "{answer}");
    assert_eq!(
        psql(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'earshot.events_by_text'::regclass"
        ),
        "t"
    );
    let scans = || {
        psql(
            "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelid IN
                 (SELECT inhrelid FROM pg_inherits
                  WHERE inhparent = 'earshot.events_by_text'::regclass)",
        )
    };
    psql("ANALYZE earshot.events");
    let before = scans();
    lists_the_words(home.path(), &url).await;
    // Statistics reach the server's counters within a second or so.
    let mut after = scans();
    for _ in 0..50 {
        if after != before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        after = scans();
    }
    assert_ne!(after, before, "free text read along the index");
}
