//! The queries behind the Health board: attempt counts per subscription in
//! a window, read from `delivery_counts` and `delivery_counts_hourly` (kept
//! by triggers, one row per minute or hour, subscription and outcome), so a
//! refresh reads a few thousand rows whatever the number of records; and
//! the retries still to come.

use rusqlite::params;

use super::Store;
use super::cells::Cells;
use super::postgres::{PgError, PgStore};

/// Attempts of one subscription with one outcome, summed over the window.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeCount {
    pub subscription_id: String,
    /// `pending`, `delivered`, `failed`.
    pub status: String,
    /// The receiver's status code, if it answered.
    pub http_status_code: Option<u16>,
    /// `timeout`, `connection error`, or the start of another error with no
    /// status; empty when the status code says it all.
    pub error_class: String,
    pub count: i64,
    /// The newest attempt counted.
    pub last_ms: i64,
    /// A session of that newest attempt, to open.
    pub example_session_id: String,
}

/// Every outcome of every subscription since `since_ms` (to the minute):
/// whole hours from the hourly counts, the minutes before the first whole
/// hour from the minute counts, so a 24 h window reads about 24 rows per
/// subscription and outcome, not 1,440.
pub fn outcomes_since(store: &Store, since_ms: i64) -> rusqlite::Result<Vec<OutcomeCount>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT subscription_id, status, http_status_code, error_class, total(count),
                max(last_ms), example_session_id
         FROM (
             SELECT subscription_id, status, http_status_code, error_class, count, last_ms,
                    example_session_id
             FROM delivery_counts WHERE minute >= ?1 AND minute < ?2 * 60
             UNION ALL
             SELECT subscription_id, status, http_status_code, error_class, count, last_ms,
                    example_session_id
             FROM delivery_counts_hourly WHERE hour >= ?2
         )
         WHERE count > 0
         GROUP BY subscription_id, status, http_status_code, error_class
         ORDER BY subscription_id, status, http_status_code, error_class",
    )?;
    let first_minute = since_ms.div_euclid(60_000);
    let first_whole_hour = (first_minute + 59).div_euclid(60);
    let rows = statement.query_map([first_minute, first_whole_hour], |row| {
        let code: i64 = row.get(2)?;
        Ok(OutcomeCount {
            subscription_id: row.get(0)?,
            status: row.get(1)?,
            http_status_code: u16::try_from(code).ok().filter(|code| *code != 0),
            error_class: row.get(3)?,
            count: super::summed_count(row, 4)?,
            last_ms: row.get(5)?,
            example_session_id: row.get(6)?,
        })
    })?;
    super::readable(rows)
}

/// Retries the platform has scheduled after `now_ms`, per subscription.
#[derive(Clone, Debug, PartialEq)]
pub struct RetriesDue {
    pub subscription_id: String,
    pub count: i64,
    pub next_ms: i64,
}

pub fn retries_due(store: &Store, now_ms: i64) -> rusqlite::Result<Vec<RetriesDue>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT subscription_id, count(*), min(next_retry_ms) FROM deliveries
         WHERE next_retry_ms IS NOT NULL AND next_retry_ms > ?1
         GROUP BY subscription_id",
    )?;
    let rows = statement.query_map(params![now_ms], |row| {
        Ok(RetriesDue {
            subscription_id: row.get(0)?,
            count: row.get(1)?,
            next_ms: row.get(2)?,
        })
    })?;
    super::readable(rows)
}

/// [`outcomes_since`] on PostgreSQL: the same buckets, rows and order
/// (ids in byte order); the example is the newest counted row's.
const POSTGRES_OUTCOMES_SINCE: &str = "
SELECT subscription_id, status, http_status_code, error_class, sum(count)::bigint,
       max(last_ms), (array_agg(example_session_id ORDER BY last_ms DESC))[1]
FROM (
    SELECT subscription_id, status, http_status_code, error_class, count, last_ms,
           example_session_id
    FROM earshot.delivery_counts WHERE minute >= $1::bigint AND minute < $2::bigint * 60
    UNION ALL
    SELECT subscription_id, status, http_status_code, error_class, count, last_ms,
           example_session_id
    FROM earshot.delivery_counts_hourly WHERE hour >= $2
) AS counted
WHERE count > 0
GROUP BY subscription_id, status, http_status_code, error_class
ORDER BY subscription_id COLLATE \"C\", status COLLATE \"C\", http_status_code,
         error_class COLLATE \"C\"";

/// An attempt count from the columns of [`outcomes_since`]'s statements.
fn outcome_count<R: Cells>(row: &R) -> Result<OutcomeCount, R::Error> {
    Ok(OutcomeCount {
        subscription_id: row.text(0)?,
        status: row.text(1)?,
        http_status_code: u16::try_from(row.int(2)?).ok().filter(|code| *code != 0),
        error_class: row.text(3)?,
        count: row.int(4)?,
        last_ms: row.int(5)?,
        example_session_id: row.text(6)?,
    })
}

/// [`outcomes_since`] on a PostgreSQL store.
pub async fn outcomes_since_postgres(
    store: &PgStore,
    since_ms: i64,
) -> Result<Vec<OutcomeCount>, PgError> {
    let first_minute = since_ms.div_euclid(60_000);
    let first_whole_hour = (first_minute + 59).div_euclid(60);
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_OUTCOMES_SINCE).await?;
    let rows = client
        .query(&statement, &[&first_minute, &first_whole_hour])
        .await?;
    rows.iter().map(outcome_count).collect()
}

const POSTGRES_RETRIES_DUE: &str = "
SELECT subscription_id, count(*), min(next_retry_ms) FROM earshot.deliveries
WHERE next_retry_ms IS NOT NULL AND next_retry_ms > $1
GROUP BY subscription_id";

/// [`retries_due`] on a PostgreSQL store.
pub async fn retries_due_postgres(
    store: &PgStore,
    now_ms: i64,
) -> Result<Vec<RetriesDue>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_RETRIES_DUE).await?;
    let mut due = Vec::new();
    for row in client.query(&statement, &[&now_ms]).await? {
        due.push(RetriesDue {
            subscription_id: row.try_get(0)?,
            count: row.try_get(1)?,
            next_ms: row.try_get(2)?,
        });
    }
    Ok(due)
}
