//! What earshot changed on the platform (create, update, pause, resume,
//! rotate, delete, recover runs): when, by whom, on which subscription,
//! what — never a secret (a rotation records the version), so "what
//! changed at 14:05?" has an answer during an incident. The command line
//! and the console word a change's detail with one function ([`detail`])
//! and record it with one ([`record_with_retry`]; on either backend,
//! [`record_in`]). A PostgreSQL store keeps the same rows
//! (`earshot.changes`, schema version 7), so every console and command on
//! it reads one log; each statement's PostgreSQL twin is beside SQLite's.

use std::fmt::Display;
use std::time::Duration;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::postgres::{PgError, PgStore};
use super::{Store, StoreError, StoreReader};
use crate::api::types::agents::Subscription;

/// One change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Unix milliseconds.
    pub at_ms: i64,
    /// The operator's login name.
    pub operator: String,
    pub subscription_id: Option<String>,
    /// `create`, `update`, `pause`, `resume`, `rotate`, `delete`, `recover`.
    pub action: String,
    /// "secret version 3", "url https://a… → https://b…", "23 re-sent, 23 delivered".
    pub detail: String,
}

impl Change {
    /// A change to `subscription_id` made now by `operator`.
    pub fn now(operator: String, subscription_id: &str, action: &str, detail: String) -> Change {
        Change {
            at_ms: super::now_ms(),
            operator,
            subscription_id: Some(subscription_id.to_owned()),
            action: action.to_owned(),
            detail,
        }
    }
}

/// What a change did to a subscription, from its record before (`None`
/// for a create) and after (`None` for a delete): `https://a/x for
/// call.ended,call.failed` (created), `https://a/x` (deleted), else what
/// differs, `; `-separated: `url https://a/x → https://b/y`, `events a → a,b`,
/// `state enabled → paused`, `secret version 1 → 2`. A URL's query (which
/// may hold a token) is left out, and a secret is never in a record.
pub fn detail(before: Option<&Subscription>, after: Option<&Subscription>) -> String {
    let state = |record: &Subscription| if record.enabled { "enabled" } else { "paused" };
    match (before, after) {
        (None, None) => String::new(),
        (None, Some(after)) => format!(
            "{} for {}{}",
            url_text(&after.url),
            after.events.join(","),
            if after.enabled { "" } else { " (paused)" }
        ),
        (Some(before), None) => url_text(&before.url),
        (Some(before), Some(after)) => {
            let mut parts = Vec::new();
            if before.url != after.url {
                parts.push(format!(
                    "url {} → {}",
                    url_text(&before.url),
                    url_text(&after.url)
                ));
            }
            if before.events != after.events {
                parts.push(format!(
                    "events {} → {}",
                    before.events.join(","),
                    after.events.join(",")
                ));
            }
            if before.enabled != after.enabled {
                parts.push(format!("state {} → {}", state(before), state(after)));
            }
            if before.secret_version != after.secret_version {
                parts.push(format!(
                    "secret version {} → {}",
                    before.secret_version, after.secret_version
                ));
            }
            if parts.is_empty() {
                "nothing changed".to_owned()
            } else {
                parts.join("; ")
            }
        }
    }
}

/// A recover run's detail: `23 re-sent, 23 delivered`.
pub fn recover_detail(sent: usize, delivered: usize) -> String {
    format!("{sent} re-sent, {delivered} delivered")
}

/// A URL as a change's detail shows it: without its query (`?…`).
fn url_text(url: &str) -> String {
    match url.split_once('?') {
        Some((base, _)) => format!("{base}?…"),
        None => url.to_owned(),
    }
}

/// How long [`record_with_retry`] waits before its second try.
const RETRY_AFTER: Duration = Duration::from_millis(100);

/// Opens the store with `open` and records `change`, once more after
/// 100 ms if that fails: the audit trail is worth a second try, as two
/// changes made at once can meet a store one of them is still creating,
/// or busy. Blocks (the console calls it on the blocking pool). The error
/// of the second try, in words.
pub fn record_with_retry<E: Display>(
    open: impl Fn() -> Result<Store, E>,
    change: &Change,
) -> Result<(), String> {
    twice(|| {
        let store = open().map_err(|error| error.to_string())?;
        record(&store, change).map_err(|error| error.to_string())
    })
}

/// [`record_with_retry`] in a store already open.
pub fn record_twice(store: &Store, change: &Change) -> Result<(), String> {
    twice(|| record(store, change).map_err(|error| error.to_string()))
}

/// `attempt`, and once more after [`RETRY_AFTER`] if it fails.
fn twice(attempt: impl Fn() -> Result<(), String>) -> Result<(), String> {
    attempt().or_else(|first| {
        tracing::debug!(error = %first, "recording the change again");
        std::thread::sleep(RETRY_AFTER);
        attempt()
    })
}

/// Records `change`.
pub fn record(store: &Store, change: &Change) -> rusqlite::Result<()> {
    store.conn.execute(
        SQLITE_RECORD,
        params![
            change.at_ms,
            change.operator,
            change.subscription_id,
            change.action,
            change.detail
        ],
    )?;
    Ok(())
}

const SQLITE_RECORD: &str = "INSERT INTO changes (at_ms, operator, subscription_id, action, detail)
     VALUES (?1, ?2, ?3, ?4, ?5)";
const POSTGRES_RECORD: &str =
    "INSERT INTO earshot.changes (at_ms, operator, subscription_id, action, detail)
     VALUES ($1, $2, $3, $4, $5)";

/// [`record`] on a PostgreSQL store: committed when it returns.
pub async fn record_postgres(store: &PgStore, change: &Change) -> Result<(), PgError> {
    let client = store.client().await?;
    client
        .execute(
            POSTGRES_RECORD,
            &[
                &change.at_ms,
                &change.operator,
                &change.subscription_id,
                &change.action,
                &change.detail,
            ],
        )
        .await?;
    Ok(())
}

/// Records `change` on either backend, once more after 100 ms if that
/// fails (as [`record_with_retry`]); the error of the second try, in
/// words.
pub async fn record_in(store: &StoreReader, change: &Change) -> Result<(), String> {
    match store {
        StoreReader::Sqlite(store) => record_twice(store, change),
        StoreReader::Postgres(store) => record_postgres_twice(store, change).await,
    }
}

/// [`record_postgres`], once more after 100 ms if that fails.
pub async fn record_postgres_twice(store: &PgStore, change: &Change) -> Result<(), String> {
    match record_postgres(store, change).await {
        Ok(()) => Ok(()),
        Err(first) => {
            tracing::debug!(error = %first, "recording the change again");
            tokio::time::sleep(RETRY_AFTER).await;
            record_postgres(store, change)
                .await
                .map_err(|error| error.to_string())
        }
    }
}

/// Changes since `since_ms`, newest first.
pub fn since(store: &Store, since_ms: i64) -> rusqlite::Result<Vec<Change>> {
    let mut statement = store.conn.prepare_cached(SQLITE_SINCE)?;
    let rows = statement.query_map([since_ms], change_row)?;
    super::readable(rows)
}

const SQLITE_SINCE: &str = "SELECT at_ms, operator, subscription_id, action, detail FROM changes
     WHERE at_ms >= ?1 ORDER BY at_ms DESC, id DESC";
const POSTGRES_SINCE: &str = "SELECT at_ms, operator, subscription_id, action, detail
     FROM earshot.changes WHERE at_ms >= $1 ORDER BY at_ms DESC, id DESC";

/// [`since`] on a PostgreSQL store.
pub async fn since_postgres(store: &PgStore, since_ms: i64) -> Result<Vec<Change>, PgError> {
    let client = store.client().await?;
    let mut listed = Vec::new();
    for row in client.query(POSTGRES_SINCE, &[&since_ms]).await? {
        listed.push(change_of_postgres(&row)?);
    }
    Ok(listed)
}

/// [`since`] on either backend.
pub async fn since_in(store: &StoreReader, since_ms: i64) -> Result<Vec<Change>, StoreError> {
    match store {
        StoreReader::Sqlite(store) => Ok(since(store, since_ms)?),
        StoreReader::Postgres(store) => Ok(since_postgres(store, since_ms).await?),
    }
}

/// The newest change to `subscription_id`.
pub fn latest_for(store: &Store, subscription_id: &str) -> rusqlite::Result<Option<Change>> {
    store
        .conn
        .prepare_cached(
            "SELECT at_ms, operator, subscription_id, action, detail FROM changes
             WHERE subscription_id = ?1 ORDER BY at_ms DESC, id DESC LIMIT 1",
        )?
        .query_row([subscription_id], change_row)
        .optional()
}

/// [`latest_for`] on a PostgreSQL store.
pub async fn latest_for_postgres(
    store: &PgStore,
    subscription_id: &str,
) -> Result<Option<Change>, PgError> {
    let client = store.client().await?;
    let row = client
        .query_opt(
            "SELECT at_ms, operator, subscription_id, action, detail FROM earshot.changes
             WHERE subscription_id = $1 ORDER BY at_ms DESC, id DESC LIMIT 1",
            &[&subscription_id],
        )
        .await?;
    row.as_ref().map(change_of_postgres).transpose()
}

/// The id of the newest change recorded by anyone (the CLI, a console):
/// a cheap read a console polls to learn that what it shows was changed
/// elsewhere. `None` while no change was recorded.
pub fn newest_id(store: &Store) -> rusqlite::Result<Option<i64>> {
    store
        .conn
        .prepare_cached("SELECT MAX(id) FROM changes")?
        .query_row([], |row| row.get(0))
}

/// [`newest_id`] on a PostgreSQL store. Ids are taken in insert order,
/// not commit order: a change committed after a later-numbered one does
/// not move the maximum, so a poller learns of it with the next change.
pub async fn newest_id_postgres(store: &PgStore) -> Result<Option<i64>, PgError> {
    let client = store.client().await?;
    let row = client
        .query_one("SELECT max(id) FROM earshot.changes", &[])
        .await?;
    Ok(row.try_get(0)?)
}

/// The newest change of `action` (`rotate`, …) to `subscription_id`.
pub fn latest_of(
    store: &Store,
    subscription_id: &str,
    action: &str,
) -> rusqlite::Result<Option<Change>> {
    store
        .conn
        .prepare_cached(
            "SELECT at_ms, operator, subscription_id, action, detail FROM changes
             WHERE subscription_id = ?1 AND action = ?2 ORDER BY at_ms DESC, id DESC LIMIT 1",
        )?
        .query_row([subscription_id, action], change_row)
        .optional()
}

/// [`latest_of`]'s statement on PostgreSQL.
const POSTGRES_LATEST_OF: &str = "
SELECT at_ms, operator, subscription_id, action, detail FROM earshot.changes
WHERE subscription_id = $1 AND action = $2 ORDER BY at_ms DESC, id DESC LIMIT 1";

/// [`latest_of`] on a PostgreSQL store.
pub async fn latest_of_postgres(
    store: &PgStore,
    subscription_id: &str,
    action: &str,
) -> Result<Option<Change>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_LATEST_OF).await?;
    let row = client
        .query_opt(&statement, &[&subscription_id, &action])
        .await?;
    row.as_ref().map(change_of_postgres).transpose()
}

/// A change from PostgreSQL's row of the five columns [`change_row`] reads.
fn change_of_postgres(row: &tokio_postgres::Row) -> Result<Change, PgError> {
    Ok(Change {
        at_ms: row.try_get(0)?,
        operator: row.try_get(1)?,
        subscription_id: row.try_get(2)?,
        action: row.try_get(3)?,
        detail: row.try_get(4)?,
    })
}

fn change_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Change> {
    Ok(Change {
        at_ms: row.get(0)?,
        operator: row.get(1)?,
        subscription_id: row.get(2)?,
        action: row.get(3)?,
        detail: row.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::temp_store;

    fn record(url: &str, events: &[&str], enabled: bool, version: u32) -> Subscription {
        Subscription {
            id: "sub_1".into(),
            url: url.into(),
            events: events.iter().map(|event| (*event).to_owned()).collect(),
            agent_id: None,
            enabled,
            secret_version: version,
            extra: Default::default(),
        }
    }

    #[test]
    fn a_detail_says_what_differs_and_never_a_query() {
        let a = record("https://a.example/x?token=s3cret", &["call.ended"], true, 1);
        let b = record(
            "https://b.example/y",
            &["call.ended", "call.failed"],
            false,
            2,
        );
        assert_eq!(
            detail(None, Some(&a)),
            "https://a.example/x?… for call.ended"
        );
        assert_eq!(detail(Some(&b), None), "https://b.example/y");
        assert_eq!(
            detail(Some(&a), Some(&b)),
            "url https://a.example/x?… → https://b.example/y; events call.ended → \
             call.ended,call.failed; state enabled → paused; secret version 1 → 2"
        );
        assert_eq!(detail(Some(&a), Some(&a)), "nothing changed");
        assert!(!detail(Some(&a), Some(&b)).contains("s3cret"));
        assert_eq!(
            detail(None, Some(&b)),
            "https://b.example/y for call.ended,call.failed (paused)"
        );
    }

    #[test]
    fn a_change_is_recorded_on_the_second_try_when_the_first_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        let tries = std::cell::Cell::new(0);
        let open = || {
            tries.set(tries.get() + 1);
            if tries.get() == 1 {
                Err("the store is being created")
            } else {
                Store::open(&path).map_err(|_| "cannot open")
            }
        };
        let change = Change::now(
            "bob".into(),
            "sub_1",
            "pause",
            "state enabled → paused".into(),
        );
        assert_eq!(record_with_retry(open, &change), Ok(()));
        assert_eq!(tries.get(), 2);
        let store = Store::open(&path).unwrap();
        assert_eq!(since(&store, 0).unwrap(), vec![change]);
    }

    #[test]
    fn the_newest_change_id_grows_with_each_change_recorded() {
        let (_dir, store) = temp_store();
        assert_eq!(newest_id(&store).expect("read"), None);
        let change = |action: &str| Change::now("ops".into(), "sub_1", action, String::new());
        super::record(&store, &change("update")).expect("record");
        let first = newest_id(&store).expect("read").expect("one change");
        super::record(&store, &change("rotate")).expect("record");
        let second = newest_id(&store).expect("read").expect("two changes");
        assert!(second > first, "{second} after {first}");
    }
}
