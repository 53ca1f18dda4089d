//! The store's tables and their migrations, keyed by `PRAGMA user_version`.
//!
//! Version 1 is the first schema. A migration runs inside one immediate
//! transaction, so two processes opening a new file at once cannot both
//! apply it, and a failure leaves the file as it was. `PRAGMA
//! application_id` marks the file as earshot's: a SQLite file of another
//! program is refused rather than written to.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// The schema this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// Migration `i` brings the file from version `i` to `i + 1`.
const MIGRATIONS: [fn() -> String; SCHEMA_VERSION as usize] = [version_1];

/// "EARS": marks a SQLite file as an earshot store.
const APPLICATION_ID: i64 = 0x4541_5253;

/// The coarse error class a failure is counted under in `delivery_counts`:
/// empty when the status code says it all, else the start of the error
/// (`timeout`, `connection error`, `HTTP 401`), enough to diagnose.
fn error_class(row: &str) -> String {
    format!(
        "CASE WHEN {row}.http_status_code IS NOT NULL OR {row}.error IS NULL THEN '' \
         WHEN {row}.error LIKE 'timeout%' THEN 'timeout' \
         WHEN {row}.error LIKE 'connection error%' THEN 'connection error' \
         ELSE substr({row}.error, 1, 8) END"
    )
}

/// Adds `delta` to the bucket of `row` (`NEW` or `OLD`) in `table`, whose
/// time column `unit` holds `created_ms / per_ms`.
fn count_into_bucket(row: &str, delta: i64, table: &str, unit: &str, per_ms: i64) -> String {
    let class = error_class(row);
    format!(
        "INSERT INTO {table}
             ({unit}, subscription_id, status, http_status_code, error_class, count, last_ms,
              example_session_id)
         VALUES ({row}.created_ms / {per_ms}, {row}.subscription_id, {row}.status,
                 coalesce({row}.http_status_code, 0), {class}, {delta}, {row}.created_ms,
                 {row}.session_id)
         ON CONFLICT ({unit}, subscription_id, status, http_status_code, error_class)
         DO UPDATE SET count = count + {delta},
             example_session_id = CASE WHEN excluded.last_ms >= last_ms
                 THEN excluded.example_session_id ELSE example_session_id END,
             last_ms = max(last_ms, excluded.last_ms);"
    )
}

/// The same change to the minute and the hour counts.
fn count_into_buckets(row: &str, delta: i64) -> String {
    [
        count_into_bucket(row, delta, "delivery_counts", "minute", 60_000),
        count_into_bucket(row, delta, "delivery_counts_hourly", "hour", 3_600_000),
    ]
    .join("\n    ")
}

/// A counts table: one row per time unit and outcome, time first so a
/// window is one range of the key.
fn counts_table(table: &str, unit: &str) -> String {
    format!(
        "CREATE TABLE {table} (
    {unit}              INTEGER NOT NULL,
    subscription_id     TEXT NOT NULL,
    status              TEXT NOT NULL,
    http_status_code    INTEGER NOT NULL,
    error_class         TEXT NOT NULL,
    count               INTEGER NOT NULL,
    last_ms             INTEGER NOT NULL,
    example_session_id  TEXT NOT NULL,
    PRIMARY KEY ({unit}, subscription_id, status, http_status_code, error_class)
) WITHOUT ROWID;"
    )
}

fn version_1() -> String {
    let insert_new = count_into_buckets("NEW", 1);
    let remove_old = count_into_buckets("OLD", -1);
    let minute_counts = counts_table("delivery_counts", "minute");
    let hourly_counts = counts_table("delivery_counts_hourly", "hour");
    format!(
        "
CREATE TABLE events (
    event_id     TEXT PRIMARY KEY,
    event        TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    occurred_ms  INTEGER NOT NULL,
    received_ms  INTEGER NOT NULL,
    delivery_id  TEXT,
    headers      TEXT NOT NULL,
    body         BLOB NOT NULL
);
CREATE INDEX events_by_session ON events (session_id, occurred_ms);
CREATE INDEX events_by_time ON events (occurred_ms);

CREATE TABLE sessions (
    session_id     TEXT PRIMARY KEY,
    kind           TEXT,
    source         TEXT NOT NULL,
    first_seen_ms  INTEGER NOT NULL,
    last_event_ms  INTEGER,
    last_swept_ms  INTEGER,
    unsettled      INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX sessions_by_activity ON sessions (coalesce(last_event_ms, first_seen_ms));

CREATE TABLE subscriptions (
    id              TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    enabled         INTEGER NOT NULL,
    secret_version  INTEGER NOT NULL,
    seen_ms         INTEGER NOT NULL,
    record          TEXT NOT NULL
);

CREATE TABLE deliveries (
    id                TEXT PRIMARY KEY,
    subscription_id   TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    status            TEXT NOT NULL,
    attempt_count     INTEGER NOT NULL,
    http_status_code  INTEGER,
    error             TEXT,
    created_ms        INTEGER NOT NULL,
    next_retry_ms     INTEGER,
    delivered_ms      INTEGER,
    record            TEXT NOT NULL
);
CREATE INDEX deliveries_by_session ON deliveries (session_id, subscription_id);
CREATE INDEX deliveries_failed ON deliveries (subscription_id, created_ms)
    WHERE status = 'failed';
CREATE INDEX deliveries_retrying ON deliveries (next_retry_ms)
    WHERE next_retry_ms IS NOT NULL;

{minute_counts}
{hourly_counts}

CREATE TRIGGER deliveries_counted AFTER INSERT ON deliveries BEGIN
    {insert_new}
END;
CREATE TRIGGER deliveries_recounted
AFTER UPDATE OF subscription_id, status, http_status_code, error, created_ms ON deliveries
BEGIN
    {remove_old}
    {insert_new}
END;
CREATE TRIGGER deliveries_uncounted AFTER DELETE ON deliveries BEGIN
    {remove_old}
END;

CREATE TABLE recoveries (
    id                INTEGER PRIMARY KEY,
    subscription_id   TEXT NOT NULL,
    event_id          TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    started_ms        INTEGER NOT NULL,
    finished_ms       INTEGER,
    http_status_code  INTEGER,
    error             TEXT,
    latency_ms        INTEGER,
    delivered         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX recoveries_by_event ON recoveries (subscription_id, event_id);
"
    )
}

/// Brings the file to [`SCHEMA_VERSION`], or refuses it untouched.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let refuse = |detail: &str| StoreError::NotAStore {
        path: path.to_owned(),
        detail: detail.to_owned(),
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|error| super::classify(path, error))?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let application: i64 = tx.query_row("PRAGMA application_id", [], |row| row.get(0))?;
    let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerVersion {
            path: path.to_owned(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if application != APPLICATION_ID && tables > 0 {
        return Err(refuse("it holds another program's tables"));
    }
    if application == APPLICATION_ID && version == 0 {
        return Err(refuse("marked as earshot's but has no schema version"));
    }
    let applied = usize::try_from(version).unwrap_or(0);
    for migration in MIGRATIONS.iter().skip(applied) {
        tx.execute_batch(&migration())?;
    }
    if version < SCHEMA_VERSION {
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(())
}
