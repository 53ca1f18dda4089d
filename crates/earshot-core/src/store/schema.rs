//! The store's tables and their migrations, keyed by `PRAGMA user_version`.
//!
//! Version 1 is the first schema; version 2 adds what an operator counts
//! in events (`event_outcomes`, its counts, `incidents`); version 3 adds
//! `unfiled_events` (genuine deliveries `events` cannot file); version 4
//! indexes attempts by time, for the retention prune; version 5 keeps why
//! an incident was resolved (`resolved_reason`); version 6 adds the state
//! to the failed events' index, so incidents are counted from it; version
//! 7 adds the free-text index (`event_words`), empty on a migrated store
//! until filled in batches after the migration; version 8 indexes events
//! by type, so a rare type is listed without reading the window (a few
//! seconds to build on a store of 1.4 million events), counts the
//! changes to what an event list shows (`list_changes`, see
//! [`super::mark::list_state`]) and the events received per hour
//! (`events_received_hourly`, see [`super::events::received_since`]);
//! version 9 keys the outcome rows by session first, so filing an event
//! writes one leaf of them, not six; version 10 keeps where a forwarder
//! from the store stopped (`relay_cursors`, see [`super::relay`]);
//! version 11 keys events by time (see [`super::event_key`]); version 12
//! numbers sessions in order of first sight and keys the outcome rows by
//! that number (see [`super::session_number`]). A
//! migration runs inside one
//! immediate transaction, so two processes opening a new file at once cannot both
//! apply it, and a failure leaves the file as it was. `PRAGMA
//! application_id` marks the file as earshot's: a SQLite file of another
//! program is refused rather than written to.

use std::path::Path;
use std::sync::OnceLock;

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// The schema this build writes and reads.
pub const SCHEMA_VERSION: i64 = 13;

/// Migration `i` brings the file from version `i` to `i + 1`.
pub(super) const MIGRATIONS: [fn() -> String; SCHEMA_VERSION as usize] = [
    version_1,
    version_2,
    version_3,
    version_4,
    version_5,
    version_6,
    super::event_words::schema,
    version_8,
    version_9,
    super::relay::schema,
    super::event_key::schema,
    super::session_number::schema,
    super::numbered_events::schema,
];

/// The version whose migration rewrites the largest table (version 11,
/// the events with their bodies); every store below it takes long once.
const EVENTS_REWRITTEN: i64 = 11;

/// The version whose migration rewrites the outcome rows (version 12).
const OUTCOMES_NUMBERED: i64 = 12;

/// How a migration that takes long says it is starting.
static SAY_SLOW_MIGRATION: OnceLock<fn(&str)> = OnceLock::new();

/// Says through `say` (the command line: on stderr) that a store is being
/// upgraded by a migration that takes long, before it starts; unset, it is
/// logged (`tracing`; the console's log). The first call wins.
pub fn say_slow_migrations_with(say: fn(&str)) {
    let _ = SAY_SLOW_MIGRATION.set(say);
}

/// Says that the store at `path`, at `version`, is being upgraded, and
/// what is rewritten: its events (below version 11), its outcome rows
/// (below 12) or its index of events by session.
fn say_slow_migration(path: &Path, version: i64) {
    let rewritten = if version < EVENTS_REWRITTEN {
        "its events are rewritten once (about 2 min a million events, needing free disk \
         space twice the size of the store while it runs)"
    } else if version < OUTCOMES_NUMBERED {
        "its outcome rows are rewritten once (about 30 s a million events)"
    } else {
        "its index of events by session is built again once (about 10 s a million events)"
    };
    let text = format!(
        "upgrading the store {} to schema {SCHEMA_VERSION}: {rewritten}; earshot goes on (an \
         observer starts listening) once it is done; later commands start at once",
        path.display()
    );
    match SAY_SLOW_MIGRATION.get() {
        Some(say) => say(&text),
        None => tracing::warn!("{text}"),
    }
}

/// "EARS": marks a SQLite file as an earshot store.
pub(super) const APPLICATION_ID: i64 = 0x4541_5253;

/// The coarse error class a failure is counted under in `delivery_counts`:
/// empty when the status code says it all, else the start of the error
/// (`timeout`, `connection error`, `HTTP 401`), enough to diagnose.
fn error_class(row: &str) -> String {
    error_class_sql(row, &format!("{row}.error"))
}

/// [`error_class`]'s rule for either backend: `folded` is the error as
/// `LIKE` tests it. SQLite's `LIKE` ignores ASCII case, so there it is the
/// error itself; PostgreSQL's does not, so there it is the error with its
/// ASCII letters lowered (`lower(… COLLATE "C")`), the same test.
pub(crate) fn error_class_sql(row: &str, folded: &str) -> String {
    format!(
        "CASE WHEN {row}.http_status_code IS NOT NULL OR {row}.error IS NULL THEN '' \
         WHEN {folded} LIKE 'timeout%' THEN 'timeout' \
         WHEN {folded} LIKE 'connection error%' THEN 'connection error' \
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
    {SESSION_DETAILS}
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

/// Adds `delta` to the event-count bucket of `row` (`NEW` or `OLD`) of
/// `event_outcomes` in `table`, whose time column `unit` holds
/// `occurred_ms / per_ms`.
fn count_event_into_bucket(row: &str, delta: i64, table: &str, unit: &str, per_ms: i64) -> String {
    format!(
        "INSERT INTO {table}
             ({unit}, subscription_id, state, event, http_status_code, error_class, count,
              last_ms, example_session_id)
         VALUES ({row}.occurred_ms / {per_ms}, {row}.subscription_id, {row}.state,
                 coalesce({row}.event, ''), {row}.http_status_code, {row}.error_class, {delta},
                 {row}.occurred_ms, {row}.session_id)
         ON CONFLICT ({unit}, subscription_id, state, event, http_status_code, error_class)
         DO UPDATE SET count = count + {delta},
             example_session_id = CASE WHEN excluded.last_ms >= last_ms
                 THEN excluded.example_session_id ELSE example_session_id END,
             last_ms = max(last_ms, excluded.last_ms);"
    )
}

fn count_event_into_buckets(row: &str, delta: i64) -> String {
    [
        count_event_into_bucket(row, delta, "event_counts", "minute", 60_000),
        count_event_into_bucket(row, delta, "event_counts_hourly", "hour", 3_600_000),
    ]
    .join("\n    ")
}

fn event_counts_table(table: &str, unit: &str) -> String {
    format!(
        "CREATE TABLE {table} (
    {unit}              INTEGER NOT NULL,
    subscription_id     TEXT NOT NULL,
    state               TEXT NOT NULL,
    event               TEXT NOT NULL,
    http_status_code    INTEGER NOT NULL,
    error_class         TEXT NOT NULL,
    count               INTEGER NOT NULL,
    last_ms             INTEGER NOT NULL,
    example_session_id  TEXT NOT NULL,
    PRIMARY KEY ({unit}, subscription_id, state, event, http_status_code, error_class)
) WITHOUT ROWID;"
    )
}

/// The triggers that keep `event_counts` and `event_counts_hourly` as
/// outcome rows come, change and go.
fn outcome_count_triggers() -> String {
    let insert_new = count_event_into_buckets("NEW", 1);
    let remove_old = count_event_into_buckets("OLD", -1);
    format!(
        "
CREATE TRIGGER event_outcomes_counted AFTER INSERT ON event_outcomes BEGIN
    {insert_new}
END;
CREATE TRIGGER event_outcomes_recounted
AFTER UPDATE OF subscription_id, state, event, http_status_code, error_class, occurred_ms
ON event_outcomes
BEGIN
    {remove_old}
    {insert_new}
END;
CREATE TRIGGER event_outcomes_uncounted AFTER DELETE ON event_outcomes BEGIN
    {remove_old}
END;"
    )
}

/// Events, not attempts: one row per event a subscription should have
/// received (its attempt chain, `history::chains`), kept as records and
/// events arrive, with minute and hour counts kept by triggers; and the
/// incidents (failure groups) operators acknowledge; and the changes
/// earshot made on the platform.
fn version_2() -> String {
    let count_triggers = outcome_count_triggers();
    let minute_counts = event_counts_table("event_counts", "minute");
    let hourly_counts = event_counts_table("event_counts_hourly", "hour");
    format!(
        "
CREATE TABLE event_outcomes (
    subscription_id   TEXT NOT NULL,
    event_key         TEXT NOT NULL,
    event_id          TEXT,
    event             TEXT,
    session_id        TEXT NOT NULL,
    occurred_ms       INTEGER NOT NULL,
    state             TEXT NOT NULL,
    attempts          INTEGER NOT NULL,
    http_status_code  INTEGER NOT NULL,
    error_class       TEXT NOT NULL,
    first_failure_ms  INTEGER,
    last_failure_ms   INTEGER,
    settled_ms        INTEGER,
    PRIMARY KEY (subscription_id, event_key)
) WITHOUT ROWID;
CREATE INDEX event_outcomes_by_session ON event_outcomes (session_id);
CREATE INDEX event_outcomes_by_event ON event_outcomes (event_id) WHERE event_id IS NOT NULL;
CREATE INDEX event_outcomes_by_state ON event_outcomes (subscription_id, state, occurred_ms);
CREATE INDEX event_outcomes_by_state_time
    ON event_outcomes (state, occurred_ms, event_id, subscription_id, event, session_id);
CREATE INDEX event_outcomes_failed
    ON event_outcomes (subscription_id, http_status_code, error_class, last_failure_ms)
    WHERE last_failure_ms IS NOT NULL;
CREATE INDEX event_outcomes_unobserved ON event_outcomes (occurred_ms)
    WHERE event_id IS NULL;
CREATE INDEX events_by_received ON events (received_ms);
CREATE INDEX deliveries_delivered ON deliveries (subscription_id, created_ms)
    WHERE status = 'delivered';
CREATE INDEX recoveries_by_session ON recoveries (session_id);

{minute_counts}
{hourly_counts}

{count_triggers}

CREATE TABLE incidents (
    id                TEXT PRIMARY KEY,
    subscription_id   TEXT NOT NULL,
    http_status_code  INTEGER NOT NULL,
    error_class       TEXT NOT NULL,
    first_seen_ms     INTEGER NOT NULL,
    last_seen_ms      INTEGER NOT NULL,
    resolved_ms       INTEGER,
    acknowledged_by   TEXT,
    acknowledged_ms   INTEGER,
    note              TEXT
);
CREATE INDEX incidents_by_group
    ON incidents (subscription_id, http_status_code, error_class, first_seen_ms);

CREATE TABLE changes (
    id               INTEGER PRIMARY KEY,
    at_ms            INTEGER NOT NULL,
    operator         TEXT NOT NULL,
    subscription_id  TEXT,
    action           TEXT NOT NULL,
    detail           TEXT NOT NULL
);
CREATE INDEX changes_by_time ON changes (at_ms);
CREATE INDEX changes_by_subscription ON changes (subscription_id, at_ms);
"
    )
}

/// Genuine, signed deliveries the `events` table cannot file (no readable
/// timestamp, type or session): their exact bytes, what could be read, and
/// why, so that nothing answered 2xx is lost.
fn version_3() -> String {
    "
CREATE TABLE unfiled_events (
    id           INTEGER PRIMARY KEY,
    received_ms  INTEGER NOT NULL,
    event_id     TEXT UNIQUE,
    event        TEXT,
    session_id   TEXT,
    occurred_ms  INTEGER,
    delivery_id  TEXT,
    headers      TEXT NOT NULL,
    body         BLOB NOT NULL,
    reason       TEXT NOT NULL
);
CREATE INDEX unfiled_events_by_received ON unfiled_events (received_ms);
"
    .to_owned()
}

/// Attempts by their time: the retention prune (`store::retention`) finds
/// the oldest ones without reading the whole table.
fn version_4() -> String {
    "CREATE INDEX deliveries_by_created ON deliveries (created_ms);".to_owned()
}

/// Why an incident was resolved: empty (NULL) when on its own (a later
/// event delivered), else what ended it (`subscription deleted`,
/// `subscription paused`).
fn version_5() -> String {
    "ALTER TABLE incidents ADD COLUMN resolved_reason TEXT;".to_owned()
}

/// Version 6: the failed events' index carries their state, so an
/// incident's events are counted by state from the index alone (an
/// incident of 100,000 events: one range of it, no row read).
fn version_6() -> String {
    "DROP INDEX event_outcomes_failed;
     CREATE INDEX event_outcomes_failed
         ON event_outcomes (subscription_id, http_status_code, error_class, last_failure_ms, state)
         WHERE last_failure_ms IS NOT NULL;"
        .to_owned()
}

fn version_8() -> String {
    let mut sql = format!(
        "CREATE INDEX events_by_type ON events (event, occurred_ms);
         CREATE TABLE list_changes (n INTEGER NOT NULL);
         INSERT INTO list_changes VALUES (0);
         CREATE TABLE events_received_hourly (hour INTEGER PRIMARY KEY, count INTEGER NOT NULL);
         INSERT INTO events_received_hourly
             SELECT received_ms / 3600000, count(*) FROM events GROUP BY 1;
         {EVENTS_RECEIVED_TRIGGERS}"
    );
    // What an event list shows: the events, their outcome rows, and the
    // subscriptions' records (which name the outcomes). A sweep that
    // re-lists unchanged subscriptions or notes when it checked a session
    // leaves the count alone.
    for (table, change, when) in [
        ("events", "INSERT", ""),
        ("events", "UPDATE", ""),
        ("events", "DELETE", ""),
        ("event_outcomes", "INSERT", ""),
        ("event_outcomes", "UPDATE", ""),
        ("event_outcomes", "DELETE", ""),
        ("subscriptions", "INSERT", ""),
        ("subscriptions", "DELETE", ""),
        (
            "subscriptions",
            "UPDATE",
            "WHEN OLD.record IS NOT NEW.record OR OLD.enabled IS NOT NEW.enabled",
        ),
    ] {
        sql.push_str(&listed_trigger(table, change, when));
    }
    sql
}

/// The triggers on `events` that keep `events_received_hourly` (made
/// again by version 11, which rewrites the table).
pub(super) const EVENTS_RECEIVED_TRIGGERS: &str = "
CREATE TRIGGER events_received_counted AFTER INSERT ON events BEGIN
    INSERT INTO events_received_hourly VALUES (NEW.received_ms / 3600000, 1)
    ON CONFLICT (hour) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER events_received_uncounted AFTER DELETE ON events BEGIN
    UPDATE events_received_hourly SET count = count - 1
    WHERE hour = OLD.received_ms / 3600000;
END;
CREATE TRIGGER events_received_recounted AFTER UPDATE OF received_ms ON events BEGIN
    UPDATE events_received_hourly SET count = count - 1
    WHERE hour = OLD.received_ms / 3600000;
    INSERT INTO events_received_hourly VALUES (NEW.received_ms / 3600000, 1)
    ON CONFLICT (hour) DO UPDATE SET count = count + 1;
END;
";

/// A trigger counting a `change` to `table` (`when` it matters) in
/// `list_changes`.
pub(super) fn listed_trigger(table: &str, change: &str, when: &str) -> String {
    let name = format!("{table}_listed_{}", change.to_lowercase());
    format!(
        "CREATE TRIGGER {name} AFTER {change} ON {table} {when}
         BEGIN UPDATE list_changes SET n = n + 1; END;"
    )
}

/// Version 9: a session's outcome rows side by side, keyed (session,
/// subscription, event). Keyed by subscription and event, with indexes
/// by session and by event, each filed event wrote six leaves at random
/// places in a large store (two rows, three keys each); keyed by session
/// first, its rows share one leaf, and what asked by event or by
/// subscription and event asks with the event's session. The table is
/// rewritten (about 40 s for 3.6 million rows), its other indexes and
/// triggers made again; `list_changes` no longer counts an event filed.
fn version_9() -> String {
    let columns = "session_id, subscription_id, event_key, event_id, event, occurred_ms, state,
        attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms";
    let mut sql = format!(
        "
{}
INSERT INTO event_outcomes_9 ({columns})
    SELECT {columns} FROM event_outcomes ORDER BY session_id, subscription_id, event_key;
DROP TABLE event_outcomes;
ALTER TABLE event_outcomes_9 RENAME TO event_outcomes;
",
        outcome_table("event_outcomes_9", "session_id")
    );
    // A filed event and the unswept rows it starts with are new rows, which
    // a live list reads after its newest (`mark::ListState`), not changes.
    sql.push_str("DROP TRIGGER events_listed_insert;");
    sql.push_str(&outcome_indexes_and_triggers());
    sql
}

/// The columns of `sessions` after its key and id (version 1's, kept by
/// version 12).
pub(super) const SESSION_DETAILS: &str = "kind           TEXT,
    source         TEXT NOT NULL,
    first_seen_ms  INTEGER NOT NULL,
    last_event_ms  INTEGER,
    last_swept_ms  INTEGER,
    unsettled      INTEGER NOT NULL DEFAULT 1";

/// `event_outcomes` made as `table`, keyed by the session first: its id
/// (`session_id`, versions 9 to 11) or its number (`session_no`, from
/// version 12, the id a column beside it).
pub(super) fn outcome_table(table: &str, session_key: &str) -> String {
    let number = if session_key == "session_no" {
        "session_no        INTEGER NOT NULL,\n    "
    } else {
        ""
    };
    format!(
        "CREATE TABLE {table} (
    {number}session_id        TEXT NOT NULL,
    subscription_id   TEXT NOT NULL,
    event_key         TEXT NOT NULL,
    event_id          TEXT,
    event             TEXT,
    occurred_ms       INTEGER NOT NULL,
    state             TEXT NOT NULL,
    attempts          INTEGER NOT NULL,
    http_status_code  INTEGER NOT NULL,
    error_class       TEXT NOT NULL,
    first_failure_ms  INTEGER,
    last_failure_ms   INTEGER,
    settled_ms        INTEGER,
    PRIMARY KEY ({session_key}, subscription_id, event_key)
) WITHOUT ROWID;"
    )
}

/// What `event_outcomes` has beside its rows, made again by each version
/// that rewrites it (9, 12): its indexes, the count triggers, and the
/// triggers counting its changes to a list (`list_changes`; a filed
/// event's unswept rows are new rows, not changes).
pub(super) fn outcome_indexes_and_triggers() -> String {
    let mut sql = format!(
        "
CREATE INDEX event_outcomes_by_state ON event_outcomes (subscription_id, state, occurred_ms);
CREATE INDEX event_outcomes_by_state_time
    ON event_outcomes (state, occurred_ms, event_id, subscription_id, event, session_id);
CREATE INDEX event_outcomes_failed
    ON event_outcomes (subscription_id, http_status_code, error_class, last_failure_ms, state)
    WHERE last_failure_ms IS NOT NULL;
CREATE INDEX event_outcomes_unobserved ON event_outcomes (occurred_ms)
    WHERE event_id IS NULL;
{}
",
        outcome_count_triggers()
    );
    sql.push_str(&listed_trigger(
        "event_outcomes",
        "INSERT",
        "WHEN NOT (NEW.state = 'unknown' AND NEW.attempts = 0 AND NEW.event_id IS NOT NULL)",
    ));
    for change in ["UPDATE", "DELETE"] {
        sql.push_str(&listed_trigger("event_outcomes", change, ""));
    }
    sql
}

/// What a file is judged by before anything is written to it.
pub(super) struct Header {
    version: i64,
    application: i64,
    /// Entries in `sqlite_master`: 0 for an empty file.
    pub(super) tables: i64,
}

impl Header {
    pub(super) fn read(conn: &Connection) -> rusqlite::Result<Header> {
        Ok(Header {
            version: conn.query_row("PRAGMA user_version", [], |row| row.get(0))?,
            application: conn.query_row("PRAGMA application_id", [], |row| row.get(0))?,
            tables: conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))?,
        })
    }

    /// Refuses a newer schema, another program's tables, or a file marked
    /// as earshot's without a version.
    pub(super) fn judge(&self, path: &Path) -> Result<(), StoreError> {
        let refuse = |detail: &str| StoreError::NotAStore {
            path: path.to_owned(),
            detail: detail.to_owned(),
        };
        if self.version > SCHEMA_VERSION {
            return Err(StoreError::NewerVersion {
                path: path.to_owned(),
                found: self.version,
                supported: SCHEMA_VERSION,
            });
        }
        if self.application != APPLICATION_ID && self.tables > 0 {
            return Err(refuse("it holds another program's tables"));
        }
        if self.application == APPLICATION_ID && self.version == 0 {
            return Err(refuse("marked as earshot's but has no schema version"));
        }
        Ok(())
    }
}

/// Brings the file to [`SCHEMA_VERSION`], or refuses it untouched.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|error| super::classify(path, error))?;
    let header = Header::read(&tx)?;
    header.judge(path)?;
    let version = header.version;
    if (1..EVENTS_REWRITTEN).contains(&version) {
        super::event_key::room_to_rewrite(&tx, path)?;
    }
    if (1..SCHEMA_VERSION).contains(&version) {
        say_slow_migration(path, version);
    }
    let applied = usize::try_from(version).unwrap_or(0);
    for migration in MIGRATIONS.iter().skip(applied) {
        tx.execute_batch(&migration())?;
    }
    if (1..2).contains(&version) {
        // A store written before event rows existed: build them once.
        super::outcomes::rebuild_all(&tx, super::now_ms())?;
    }
    if version < SCHEMA_VERSION {
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(())
}
