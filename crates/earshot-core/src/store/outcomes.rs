//! Events, not attempts: how each event a subscription should have
//! received ended for it (DESIGN §10). One row of `event_outcomes` per
//! subscription and event: its attempt chain ([`super::chains`]) matched to
//! the observed event, in one [`EventState`].
//!
//! The rows are kept as records and events arrive, never recomputed per
//! refresh: the observer adds an `unknown` row per listening subscription
//! when it stores an event ([`observed`]); each sweep of a session rebuilds
//! that session's rows from every stored attempt, event and recovery
//! ([`rebuild_sessions`], in `outcome_rebuild`, by the rule of
//! `outcome_rule`, on either backend); a recovery that got a 2xx turns
//! `missed` into `recovered` ([`recovered`]). Triggers keep minute and hour
//! counts (`event_counts`, `event_counts_hourly`), so the Health board
//! reads a few thousand rows whatever the number of events; the board's
//! reads are here for SQLite and, `*_postgres`, for PostgreSQL.

use rusqlite::{Connection, OptionalExtension, params};

use super::cells::Cells;
use super::events::ObservedEvent;
pub(crate) use super::outcome_rebuild::{rebuild_all, rebuild_sessions};
use super::postgres::{PgError, PgStore};
use super::{Store, incidents};

/// How one event ended for one subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventState {
    /// An attempt got a 2xx.
    Delivered,
    /// An attempt in flight, or a retry scheduled.
    Pending,
    /// Failed for good (no retry left or coming) and not recovered.
    Missed,
    /// Missed, then re-sent by earshot with a 2xx answer.
    Recovered,
    /// The observer holds the event; its attempts for this subscription
    /// were not swept yet.
    Unknown,
}

impl EventState {
    pub const ALL: [EventState; 5] = [
        EventState::Delivered,
        EventState::Pending,
        EventState::Missed,
        EventState::Recovered,
        EventState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventState::Delivered => "delivered",
            EventState::Pending => "pending",
            EventState::Missed => "missed",
            EventState::Recovered => "recovered",
            EventState::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<EventState> {
        EventState::ALL
            .into_iter()
            .find(|state| state.as_str() == text)
    }
}

/// Events of one subscription (the board's row, a timeline's bucket) by
/// the state they are in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventTotals {
    pub delivered: i64,
    pub missed: i64,
    pub recovered: i64,
    pub pending: i64,
    pub unknown: i64,
}

impl EventTotals {
    pub fn total(&self) -> i64 {
        self.delivered + self.missed + self.recovered + self.pending + self.unknown
    }

    /// Adds `other`'s events, state by state.
    pub fn absorb(&mut self, other: &EventTotals) {
        for (state, count) in [
            (EventState::Delivered, other.delivered),
            (EventState::Missed, other.missed),
            (EventState::Recovered, other.recovered),
            (EventState::Pending, other.pending),
            (EventState::Unknown, other.unknown),
        ] {
            self.add(state, count);
        }
    }

    pub(crate) fn add(&mut self, state: EventState, count: i64) {
        let slot = match state {
            EventState::Delivered => &mut self.delivered,
            EventState::Missed => &mut self.missed,
            EventState::Recovered => &mut self.recovered,
            EventState::Pending => &mut self.pending,
            EventState::Unknown => &mut self.unknown,
        };
        *slot = slot.saturating_add(count);
    }
}

/// The coarse class a failure is grouped under: empty when the status code
/// says it all, else the start of the error (`timeout`, `connection error`,
/// the first 8 characters of another), `unknown` when there is neither.
/// The same rule as the attempt counts' SQL (`schema::error_class`).
pub(crate) fn error_class(http_status_code: Option<u16>, error: Option<&str>) -> String {
    match (http_status_code, error) {
        (Some(_), _) => String::new(),
        (None, None) => "unknown".to_owned(),
        (None, Some(error)) if error.starts_with("timeout") => "timeout".to_owned(),
        (None, Some(error)) if error.starts_with("connection error") => {
            "connection error".to_owned()
        }
        (None, Some(error)) => error.chars().take(8).collect(),
    }
}

/// One row of `event_outcomes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub subscription_id: String,
    /// The `event_id`, or `delivery:<first attempt id>` when the observer
    /// never received the event.
    pub event_key: String,
    /// `None`: not observed (its bytes are not held; it cannot be re-sent).
    pub event_id: Option<String>,
    /// The event type, when known (observed, or the only one the session's
    /// other events leave).
    pub event: Option<String>,
    pub session_id: String,
    /// The event's timestamp, or its first attempt's when not observed.
    pub occurred_ms: i64,
    pub state: EventState,
    pub attempts: i64,
    /// The last failed attempt's status code (0 when none) and error class
    /// (empty when the code says it all, or when nothing failed).
    pub http_status_code: u16,
    pub error_class: String,
    pub first_failure_ms: Option<i64>,
    pub last_failure_ms: Option<i64>,
    /// When the 2xx came (delivered or recovered).
    pub settled_ms: Option<i64>,
}

/// An observed event's `unknown` row for every enabled subscription that
/// listens to its type (nothing is known of its attempts until a sweep),
/// under its session's number.
pub(crate) fn observed(
    conn: &Connection,
    event: &ObservedEvent,
    session_no: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO event_outcomes
             (session_no, subscription_id, event_key, event_id, event, session_id, occurred_ms,
              state, attempts, http_status_code, error_class)
         SELECT ?5, s.id, ?1, ?1, ?2, ?3, ?4, 'unknown', 0, 0, ''
         FROM subscriptions s
         WHERE s.enabled = 1 AND EXISTS (SELECT 1 FROM json_each(s.events) WHERE value = ?2)",
    )?
    .execute(params![
        event.event_id,
        event.event,
        event.session_id,
        event.occurred_ms,
        session_no
    ])?;
    Ok(())
}

/// Turns the `missed` row for `subscription_id` of event `event_id` (of
/// session `session_id`) into `recovered` (earshot re-sent it and the
/// receiver answered 2xx at `at_ms`).
pub(crate) fn recovered(
    conn: &Connection,
    subscription_id: &str,
    (session_id, event_id): (&str, &str),
    at_ms: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE event_outcomes SET state = 'recovered', settled_ms = ?4
         WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?1)
           AND subscription_id = ?2 AND event_key = ?3 AND state = 'missed'",
    )?
    .execute(params![session_id, subscription_id, event_id, at_ms])?;
    incidents::settle(conn, subscription_id, at_ms)
}

/// [`recovered`] on PostgreSQL, in the caller's transaction.
pub(crate) async fn recovered_postgres(
    tx: &tokio_postgres::Transaction<'_>,
    subscription_id: &str,
    (session_id, event_id): (&str, &str),
    at_ms: i64,
) -> Result<(), PgError> {
    tx.execute(
        "UPDATE earshot.event_outcomes SET state = 'recovered', settled_ms = $4
         WHERE session_id = $1 AND subscription_id = $2 AND event_key = $3
           AND state = 'missed'",
        &[&session_id, &subscription_id, &event_id, &at_ms],
    )
    .await?;
    incidents::settle_postgres(tx, subscription_id, at_ms).await
}

/// Events of one subscription with one state, summed over a window and
/// grouped by type and the last failure's diagnosis.
#[derive(Clone, Debug, PartialEq)]
pub struct EventCount {
    pub subscription_id: String,
    pub state: EventState,
    /// Empty when the type is not known.
    pub event: String,
    pub http_status_code: Option<u16>,
    pub error_class: String,
    pub count: i64,
    /// The newest event counted.
    pub last_ms: i64,
    pub example_session_id: String,
}

/// Every subscription's event counts since `since_ms` (to the minute),
/// whole hours from the hourly counts and the minutes around them from the
/// minute counts, as the attempt counts are read.
pub fn counts_since(store: &Store, since_ms: i64) -> rusqlite::Result<Vec<EventCount>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT subscription_id, state, event, http_status_code, error_class, total(count),
                max(last_ms), example_session_id
         FROM (
             SELECT subscription_id, state, event, http_status_code, error_class, count,
                    last_ms, example_session_id
             FROM event_counts WHERE minute >= ?1 AND minute < ?2 * 60
             UNION ALL
             SELECT subscription_id, state, event, http_status_code, error_class, count,
                    last_ms, example_session_id
             FROM event_counts_hourly WHERE hour >= ?2
         )
         GROUP BY subscription_id, state, event, http_status_code, error_class
         HAVING total(count) > 0",
    )?;
    let first_minute = since_ms.div_euclid(60_000);
    let first_whole_hour = (first_minute + 59).div_euclid(60);
    let rows = statement.query_map(params![first_minute, first_whole_hour], |row| {
        let state: String = row.get(1)?;
        let code: i64 = row.get(3)?;
        Ok(EventCount {
            subscription_id: row.get(0)?,
            state: EventState::parse(&state).unwrap_or(EventState::Unknown),
            event: row.get(2)?,
            http_status_code: u16::try_from(code).ok().filter(|code| *code != 0),
            error_class: row.get(4)?,
            count: super::summed_count(row, 5)?,
            last_ms: row.get(6)?,
            example_session_id: row.get(7)?,
        })
    })?;
    super::readable(rows)
}

/// [`counts_since`] on PostgreSQL: the same buckets and groups; the
/// example is the newest counted row's, as SQLite's bare column beside
/// `max(last_ms)` is.
const POSTGRES_COUNTS_SINCE: &str = "
SELECT subscription_id, state, event, http_status_code, error_class, sum(count)::bigint,
       max(last_ms), (array_agg(example_session_id ORDER BY last_ms DESC))[1]
FROM (
    SELECT subscription_id, state, event, http_status_code, error_class, count,
           last_ms, example_session_id
    FROM earshot.event_counts WHERE minute >= $1::bigint AND minute < $2::bigint * 60
    UNION ALL
    SELECT subscription_id, state, event, http_status_code, error_class, count,
           last_ms, example_session_id
    FROM earshot.event_counts_hourly WHERE hour >= $2
) AS counted
GROUP BY subscription_id, state, event, http_status_code, error_class
HAVING sum(count) > 0";

/// An event count from the columns of [`counts_since`]'s statements.
fn event_count<R: Cells>(row: &R) -> Result<EventCount, R::Error> {
    let state = row.text(1)?;
    Ok(EventCount {
        subscription_id: row.text(0)?,
        state: EventState::parse(&state).unwrap_or(EventState::Unknown),
        event: row.text(2)?,
        http_status_code: u16::try_from(row.int(3)?).ok().filter(|code| *code != 0),
        error_class: row.text(4)?,
        count: row.int(5)?,
        last_ms: row.int(6)?,
        example_session_id: row.text(7)?,
    })
}

/// [`counts_since`] on a PostgreSQL store.
pub async fn counts_since_postgres(
    store: &PgStore,
    since_ms: i64,
) -> Result<Vec<EventCount>, PgError> {
    let first_minute = since_ms.div_euclid(60_000);
    let first_whole_hour = (first_minute + 59).div_euclid(60);
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_COUNTS_SINCE).await?;
    let rows = client
        .query(&statement, &[&first_minute, &first_whole_hour])
        .await?;
    rows.iter().map(event_count).collect()
}

/// [`last_success_ms`] on PostgreSQL, which holds no recoveries yet: the
/// newest delivered attempt.
const POSTGRES_LAST_SUCCESS: &str = "
SELECT greatest(
    coalesce((SELECT max(created_ms) FROM earshot.deliveries
              WHERE subscription_id = $1 AND status = 'delivered'), 0),
    coalesce((SELECT max(finished_ms) FROM earshot.recoveries
              WHERE subscription_id = $1 AND delivered), 0))";

/// [`first_failure_after`]'s statement on PostgreSQL.
const POSTGRES_FIRST_FAILURE: &str = "
SELECT min(created_ms) FROM earshot.deliveries
WHERE subscription_id = $1 AND status = 'failed' AND created_ms > $2";

const POSTGRES_NEWEST_UNOBSERVED: &str =
    "SELECT max(occurred_ms) FROM earshot.event_outcomes WHERE event_id IS NULL";

/// [`last_success_ms`] on a PostgreSQL store.
pub async fn last_success_ms_postgres(
    store: &PgStore,
    subscription_id: &str,
) -> Result<Option<i64>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_LAST_SUCCESS).await?;
    let row = client.query_one(&statement, &[&subscription_id]).await?;
    Ok(row.try_get::<_, Option<i64>>(0)?.filter(|ms| *ms > 0))
}

/// [`first_failure_after`] on a PostgreSQL store.
pub async fn first_failure_after_postgres(
    store: &PgStore,
    subscription_id: &str,
    after_ms: Option<i64>,
) -> Result<Option<i64>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_FIRST_FAILURE).await?;
    let after = after_ms.unwrap_or(i64::MIN);
    let row = client
        .query_one(&statement, &[&subscription_id, &after])
        .await?;
    Ok(row.try_get(0)?)
}

/// [`newest_unobserved_ms`] on a PostgreSQL store.
pub async fn newest_unobserved_ms_postgres(store: &PgStore) -> Result<Option<i64>, PgError> {
    let client = store.client().await?;
    let row = client.query_one(POSTGRES_NEWEST_UNOBSERVED, &[]).await?;
    Ok(row.try_get(0)?)
}

/// When `subscription_id` last had a 2xx: a delivered attempt, or an
/// event earshot re-sent.
pub fn last_success_ms(store: &Store, subscription_id: &str) -> rusqlite::Result<Option<i64>> {
    store
        .conn
        .prepare_cached(
            "SELECT max(
                 coalesce((SELECT max(created_ms) FROM deliveries
                  WHERE subscription_id = ?1 AND status = 'delivered'), 0),
                 coalesce((SELECT max(finished_ms) FROM recoveries
                  WHERE subscription_id = ?1 AND delivered = 1), 0))",
        )?
        .query_row([subscription_id], |row| row.get::<_, Option<i64>>(0))
        .map(|at| at.filter(|ms| *ms > 0))
}

/// The first failed attempt of `subscription_id` after `after_ms` (its
/// last success, or the beginning): when the current run of failures
/// began, or `None` when nothing failed since.
pub fn first_failure_after(
    store: &Store,
    subscription_id: &str,
    after_ms: Option<i64>,
) -> rusqlite::Result<Option<i64>> {
    store
        .conn
        .prepare_cached(
            "SELECT min(created_ms) FROM deliveries
             WHERE subscription_id = ?1 AND status = 'failed' AND created_ms > ?2",
        )?
        .query_row(
            params![subscription_id, after_ms.unwrap_or(i64::MIN)],
            |row| row.get(0),
        )
}

/// The newest event the sweep found attempts for that the observer never
/// received: traffic the observer did not see.
pub fn newest_unobserved_ms(store: &Store) -> rusqlite::Result<Option<i64>> {
    store
        .conn
        .prepare_cached("SELECT max(occurred_ms) FROM event_outcomes WHERE event_id IS NULL")?
        .query_row([], |row| row.get(0))
}

const SQLITE_OF_SUBSCRIPTION: &str = "
    SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
           attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms
    FROM event_outcomes
    WHERE subscription_id = ?1 AND state = ?2 AND occurred_ms >= ?3
    ORDER BY occurred_ms, event_key";
/// [`SQLITE_OF_SUBSCRIPTION`] on PostgreSQL: keys in byte order, as SQLite's.
const POSTGRES_OF_SUBSCRIPTION: &str = "
    SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
           attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms
    FROM earshot.event_outcomes
    WHERE subscription_id = $1 AND state = $2 AND occurred_ms >= $3
    ORDER BY occurred_ms, event_key COLLATE \"C\"";

/// The rows of one subscription in one state since `since_ms`, oldest
/// first.
pub fn of_subscription(
    store: &Store,
    subscription_id: &str,
    state: EventState,
    since_ms: i64,
) -> rusqlite::Result<Vec<Outcome>> {
    let mut statement = store.conn.prepare_cached(SQLITE_OF_SUBSCRIPTION)?;
    let rows = statement.query_map(
        params![subscription_id, state.as_str(), since_ms],
        outcome_row,
    )?;
    super::readable(rows)
}

/// [`of_subscription`] on a PostgreSQL store.
pub async fn of_subscription_postgres(
    store: &PgStore,
    subscription_id: &str,
    state: EventState,
    since_ms: i64,
) -> Result<Vec<Outcome>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_OF_SUBSCRIPTION).await?;
    let rows = client
        .query(&statement, &[&subscription_id, &state.as_str(), &since_ms])
        .await?;
    let mut outcomes = Vec::with_capacity(rows.len());
    for row in &rows {
        outcomes.push(super::outcome_rebuild::outcome_from(row)?);
    }
    Ok(outcomes)
}

const SQLITE_OF_EVENT: &str = "
    SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
           attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms
    FROM event_outcomes
    WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?1) AND event_id = ?2
    ORDER BY subscription_id";
/// [`SQLITE_OF_EVENT`] on PostgreSQL: ids in byte order, as SQLite's.
const POSTGRES_OF_EVENT: &str = "
    SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
           attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms
    FROM earshot.event_outcomes
    WHERE session_id = $1 AND event_id = $2
    ORDER BY subscription_id COLLATE \"C\"";

/// Every subscription's row for event `event_id` of session `session_id`.
pub fn of_event(store: &Store, session_id: &str, event_id: &str) -> rusqlite::Result<Vec<Outcome>> {
    let mut statement = store.conn.prepare_cached(SQLITE_OF_EVENT)?;
    let rows = statement.query_map([session_id, event_id], outcome_row)?;
    super::readable(rows)
}

/// [`of_event`] on a PostgreSQL store.
pub async fn of_event_postgres(
    store: &PgStore,
    session_id: &str,
    event_id: &str,
) -> Result<Vec<Outcome>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_OF_EVENT).await?;
    let rows = client.query(&statement, &[&session_id, &event_id]).await?;
    let mut outcomes = Vec::with_capacity(rows.len());
    for row in &rows {
        outcomes.push(super::outcome_rebuild::outcome_from(row)?);
    }
    Ok(outcomes)
}

/// One subscription's row for event `event_key` of session `session_id`,
/// if any.
pub fn get(
    store: &Store,
    subscription_id: &str,
    (session_id, event_key): (&str, &str),
) -> rusqlite::Result<Option<Outcome>> {
    store
        .conn
        .prepare_cached(
            "SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
                    attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                    settled_ms
             FROM event_outcomes
             WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?1)
               AND subscription_id = ?2 AND event_key = ?3",
        )?
        .query_row(params![session_id, subscription_id, event_key], outcome_row)
        .optional()
}

pub(crate) fn outcome_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Outcome> {
    super::outcome_rebuild::outcome_from(row)
}
