//! Known sessions and calls: learned by the observer, added by hand
//! (`earshot sessions add`), or viewed in the console; and which of them
//! the sweep should fetch next. The list is read from SQLite ([`list`])
//! or PostgreSQL ([`list_postgres`], [`POSTGRES_LIST`]), and so are the
//! sessions due for the sweep ([`due_for_sweep`], [`due_for_sweep_postgres`]);
//! ids are added to either ([`add`], [`add_postgres`]).

use rusqlite::params;

use super::Store;
use super::postgres::{PgError, PgStore};

/// After a session's newest event, how long it stays due for a sweep even
/// when nothing was pending: other subscriptions' first attempts may be
/// recorded a moment after the observer's.
pub const SETTLE_MS: i64 = 30_000;

/// Where an id came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Observer,
    Added,
    Console,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Observer => "observer",
            Source::Added => "added",
            Source::Console => "console",
        }
    }
}

/// One known session, with what the store holds about it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KnownSession {
    pub session_id: String,
    /// `session`, `call`, or `None` when only the id is known.
    pub kind: Option<String>,
    pub source: String,
    pub first_seen_ms: i64,
    pub last_event_ms: Option<i64>,
    pub last_swept_ms: Option<i64>,
    /// New, or had pending attempts at its last sweep.
    pub unsettled: bool,
    pub events: i64,
    /// The platform's attempts stored by the sweep; `None` (JSON `null`)
    /// where the store cannot know them: a PostgreSQL store holds no
    /// attempts yet.
    pub attempts: Option<i64>,
    /// Of them, the failed ones; `None` as `attempts`.
    pub failed_attempts: Option<i64>,
}

/// Adds ids not yet known; how many were new.
pub fn add(
    store: &mut Store,
    ids: &[String],
    source: Source,
    now_ms: i64,
) -> rusqlite::Result<usize> {
    let tx = store.conn.transaction()?;
    let mut added = 0;
    {
        let mut statement = tx.prepare_cached(
            "INSERT OR IGNORE INTO sessions (session_id, kind, source, first_seen_ms)
             VALUES (?1, ?2, ?3, ?4)",
        )?;
        for id in ids {
            let kind = id.starts_with("call_").then_some("call");
            added += statement.execute(params![id, kind, source.as_str(), now_ms])?;
        }
    }
    tx.commit()?;
    Ok(added)
}

/// [`add`]'s statement on PostgreSQL: an id already known is left as it
/// is (its source and first sighting kept).
const POSTGRES_ADD: &str = "
INSERT INTO earshot.sessions (session_id, kind, source, first_seen_ms)
VALUES ($1, $2, $3, $4) ON CONFLICT (session_id) DO NOTHING";

/// [`add`] on a PostgreSQL store, in one transaction; how many were new.
pub async fn add_postgres(
    store: &PgStore,
    ids: &[String],
    source: Source,
    now_ms: i64,
) -> Result<usize, PgError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await?;
    let statement = tx.prepare_cached(POSTGRES_ADD).await?;
    let mut added = 0;
    for id in ids {
        let kind = id.starts_with("call_").then_some("call");
        added += tx
            .execute(&statement, &[id, &kind, &source.as_str(), &now_ms])
            .await?;
    }
    tx.commit().await?;
    Ok(usize::try_from(added).unwrap_or(usize::MAX))
}

/// [`ids`]' statement on PostgreSQL (ties by id in byte order).
const POSTGRES_IDS: &str = "
SELECT session_id FROM earshot.sessions
ORDER BY coalesce(last_event_ms, first_seen_ms) DESC, session_id COLLATE \"C\" LIMIT $1";

/// [`ids`] on a PostgreSQL store.
pub async fn ids_postgres(store: &PgStore, limit: usize) -> Result<Vec<String>, PgError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_IDS).await?;
    client
        .query(&statement, &[&limit])
        .await?
        .iter()
        .map(|row| row.try_get(0).map_err(PgError::from))
        .collect()
}

/// Known sessions, most recently active first; at most `limit`.
pub fn list(store: &Store, limit: usize) -> rusqlite::Result<Vec<KnownSession>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT s.session_id, s.kind, s.source, s.first_seen_ms, s.last_event_ms,
                s.last_swept_ms, s.unsettled,
                (SELECT count(*) FROM events e WHERE e.session_no = s.session_no)
                  + (SELECT count(*) FROM events e
                     WHERE e.session_no IS NULL AND e.session_id = s.session_id),
                (SELECT count(*) FROM deliveries d WHERE d.session_id = s.session_id),
                (SELECT count(*) FROM deliveries d
                  WHERE d.session_id = s.session_id AND d.status = 'failed')
         FROM sessions s
         ORDER BY coalesce(s.last_event_ms, s.first_seen_ms) DESC, s.session_id
         LIMIT ?1",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = statement.query_map([limit], |row| {
        Ok(KnownSession {
            session_id: row.get(0)?,
            kind: row.get(1)?,
            source: row.get(2)?,
            first_seen_ms: row.get(3)?,
            last_event_ms: row.get(4)?,
            last_swept_ms: row.get(5)?,
            unsettled: row.get(6)?,
            events: row.get(7)?,
            attempts: Some(row.get(8)?),
            failed_attempts: Some(row.get(9)?),
        })
    })?;
    super::readable(rows)
}

/// [`list`]'s statement on PostgreSQL: the same order (ties by id in
/// byte order, as SQLite's `BINARY`), each session's stored events
/// counted; no attempts, which only the sweep stores (on SQLite so far).
pub const POSTGRES_LIST: &str = "
SELECT s.session_id, s.kind, s.source, s.first_seen_ms, s.last_event_ms,
       s.last_swept_ms, s.unsettled,
       (SELECT count(*) FROM earshot.events e WHERE e.session_id = s.session_id)
FROM earshot.sessions s
ORDER BY coalesce(s.last_event_ms, s.first_seen_ms) DESC, s.session_id COLLATE \"C\"
LIMIT $1";

/// [`list`] on a PostgreSQL store: attempts unknown (`None`).
pub async fn list_postgres(store: &PgStore, limit: usize) -> Result<Vec<KnownSession>, PgError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_LIST).await?;
    let mut known = Vec::new();
    for row in client.query(&statement, &[&limit]).await? {
        known.push(KnownSession {
            session_id: row.try_get(0)?,
            kind: row.try_get(1)?,
            source: row.try_get(2)?,
            first_seen_ms: row.try_get(3)?,
            last_event_ms: row.try_get(4)?,
            last_swept_ms: row.try_get(5)?,
            unsettled: row.try_get(6)?,
            events: row.try_get(7)?,
            attempts: None,
            failed_attempts: None,
        });
    }
    Ok(known)
}

/// Whether the sweep wrote the outcome rows of event `(occurred_ms,
/// event_id)` on PostgreSQL: its session was swept at or after the event
/// was received. `None` when the store holds no such event. (SQLite's
/// observer files an `unknown` row per listening subscription with the
/// event; PostgreSQL's rows come from the sweep alone, so before it an
/// event has none, for want of knowing.)
const POSTGRES_SWEPT_SINCE_FILED: &str = "
SELECT coalesce(s.last_swept_ms >= e.received_ms, false)
FROM earshot.events e LEFT JOIN earshot.sessions s ON s.session_id = e.session_id
WHERE e.occurred_ms = $1 AND e.event_id = $2";

/// [`POSTGRES_SWEPT_SINCE_FILED`]'s answer.
pub async fn swept_since_filed_postgres(
    store: &PgStore,
    occurred_ms: i64,
    event_id: &str,
) -> Result<Option<bool>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_SWEPT_SINCE_FILED).await?;
    let row = client
        .query_opt(&statement, &[&occurred_ms, &event_id])
        .await?;
    Ok(row.map(|row| row.try_get(0)).transpose()?)
}

/// When each of `sessions` was last swept on PostgreSQL (a session never
/// swept, or not known, is left out): an event received before its
/// session's sweep has the rows the sweep learned, none meaning none
/// listens.
pub async fn swept_ms_postgres(
    store: &PgStore,
    sessions: &[&str],
) -> Result<std::collections::HashMap<String, i64>, PgError> {
    let client = store.client().await?;
    let statement = client
        .prepare_cached(
            "SELECT session_id, last_swept_ms FROM earshot.sessions
             WHERE session_id = ANY($1) AND last_swept_ms IS NOT NULL",
        )
        .await?;
    let mut swept = std::collections::HashMap::new();
    for row in client.query(&statement, &[&sessions]).await? {
        swept.insert(row.try_get(0)?, row.try_get(1)?);
    }
    Ok(swept)
}

/// Known session ids, most recently active first; at most `limit`.
pub fn ids(store: &Store, limit: usize) -> rusqlite::Result<Vec<String>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT session_id FROM sessions
         ORDER BY coalesce(last_event_ms, first_seen_ms) DESC, session_id LIMIT ?1",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = statement.query_map([limit], |row| row.get(0))?;
    super::readable(rows)
}

/// How many sessions are known.
pub fn count(store: &Store) -> rusqlite::Result<i64> {
    store
        .conn
        .query_row("SELECT count(*) FROM sessions", [], |row| row.get(0))
}

/// The condition that makes a session due for the sweep (`$1` is
/// [`SETTLE_MS`]), shared by [`due_for_sweep`] and [`count_due`]; the same
/// words on both backends (`unsettled` is an integer on SQLite, a boolean
/// on PostgreSQL).
macro_rules! due_for_sweep_where {
    (sqlite) => {
        "unsettled = 1 OR last_swept_ms IS NULL
         OR last_swept_ms < coalesce(last_event_ms, 0) + $1"
    };
    (postgres) => {
        "unsettled OR last_swept_ms IS NULL
         OR last_swept_ms < coalesce(last_event_ms, 0) + $1"
    };
}

/// [`due_for_sweep`]'s order, after the rows of the table `$table` that
/// are due (see there); ties by id in byte order.
macro_rules! due_for_sweep_query {
    ($backend:tt, $table:literal, $id_order:literal) => {
        concat!(
            "SELECT session_id FROM (
                SELECT session_id, first_seen_ms, last_event_ms, last_swept_ms,
                       last_swept_ms IS NOT NULL
                       AND last_swept_ms >= coalesce(last_event_ms, 0) + $1 AS recheck
                FROM ",
            $table,
            " WHERE ",
            due_for_sweep_where!($backend),
            ") AS due
             ORDER BY recheck,
                CASE WHEN recheck THEN last_swept_ms
                     ELSE -coalesce(last_event_ms, first_seen_ms) END,
                session_id",
            $id_order,
            "
             LIMIT $2"
        )
    };
}

const SQLITE_DUE: &str = due_for_sweep_query!(sqlite, "sessions", "");
const POSTGRES_DUE: &str = due_for_sweep_query!(postgres, "earshot.sessions", " COLLATE \"C\"");
const SQLITE_COUNT_DUE: &str = concat!(
    "SELECT count(*) FROM sessions WHERE ",
    due_for_sweep_where!(sqlite)
);
const POSTGRES_COUNT_DUE: &str = concat!(
    "SELECT count(*) FROM earshot.sessions WHERE ",
    due_for_sweep_where!(postgres)
);

/// Sessions the sweep should fetch: never swept, pending attempts at the
/// last sweep, or an event within [`SETTLE_MS`] before the last sweep.
///
/// Order: sessions with something new (never swept, or an event since)
/// first, most recently active first; then the re-checks of sessions whose
/// attempts were pending, the one swept longest ago first. A session whose
/// retries go on for hours is fetched again in its turn rather than on
/// every sweep ahead of older ones, so none waits for ever while new
/// traffic keeps coming (the demo's does).
pub(crate) fn due_for_sweep(store: &Store, limit: usize) -> rusqlite::Result<Vec<String>> {
    let mut statement = store.conn.prepare_cached(SQLITE_DUE)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = statement.query_map(params![SETTLE_MS, limit], |row| row.get(0))?;
    super::readable(rows)
}

/// [`due_for_sweep`] on a PostgreSQL store.
pub(crate) async fn due_for_sweep_postgres(
    store: &PgStore,
    limit: usize,
) -> Result<Vec<String>, PgError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_DUE).await?;
    let rows = client.query(&statement, &[&SETTLE_MS, &limit]).await?;
    rows.iter()
        .map(|row| row.try_get(0).map_err(PgError::from))
        .collect()
}

/// How many sessions [`due_for_sweep`] would offer with no limit.
pub(crate) fn count_due(store: &Store) -> rusqlite::Result<i64> {
    store
        .conn
        .query_row(SQLITE_COUNT_DUE, [SETTLE_MS], |row| row.get(0))
}

/// [`count_due`] on a PostgreSQL store.
pub(crate) async fn count_due_postgres(store: &PgStore) -> Result<i64, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_COUNT_DUE).await?;
    Ok(client
        .query_one(&statement, &[&SETTLE_MS])
        .await?
        .try_get(0)?)
}
