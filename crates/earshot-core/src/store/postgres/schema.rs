//! The PostgreSQL store's tables (in the schema `earshot`) and their
//! migrations, numbered in `earshot.schema_version` (one row per version
//! applied, with when and by whom). A migration runs in one transaction
//! that first takes a transaction-scoped advisory lock, so replicas that
//! start at once migrate once: the first applies what is missing and
//! commits, which frees the lock; the others then find the version
//! current and apply nothing. A database written by a newer earshot is
//! refused and left untouched. DDL is transactional in PostgreSQL, so a
//! failed migration leaves the database as it was.
//!
//! Version 1: `events`, partitioned by the day the event occurred (see
//! [`super::days`]), keyed by `(event_id, occurred_ms)`, and `sessions`.
//! Version 2: `unfiled_events`, the genuine deliveries `events` cannot
//! file, unique by `event_id` (SQLite's table of the same name).
//! Version 3: `leases`, one row a lease, with its holder and expiry on
//! the database's clock (see [`super::leases`]).
//! Version 4: the indexes `earshot events` lists along, in byte order as
//! SQLite's `BINARY` (`COLLATE "C"`, whatever the database's collation):
//! `events_by_time (occurred_ms, event_id)`, newest first and ties by id,
//! and `events_by_session_bytes (session_id, occurred_ms)`, for a session
//! prefix (see [`crate::store::event_list::postgres_query`]).
//! Version 5: `copy_cursors`, where `earshot store copy` has got to in
//! each table of each SQLite store it copies (see [`super::copy`]).
//! Version 6: the sweep's tables, `subscriptions`, `deliveries`,
//! `event_outcomes` and their minute and hour counts kept by triggers
//! (see [`super::counts`]).
//! Version 7: what a team shares, `incidents` (with who acknowledged
//! each, when and the note), `changes` (what earshot changed on the
//! platform) and `recoveries` (recover's log), SQLite's tables, and
//! `event_outcomes_failed`, the index an incident's events are counted
//! along (see `store::incidents`, `store::changes`).
//! Version 8: where a copied change or recover run came from
//! (`copied_from`, the copy's source, and `copied_id`, its id there),
//! unique together, so `earshot store copy` brings each once (see
//! [`super::copy_team`]); rows written here have neither.
//! Version 9: `rotations`, the staged rotation of a subscription in
//! flight, one row a subscription, so a second operator's `subs rotate`
//! of it is refused while the first checks and applies (see
//! [`super::rotations`]).
//! Version 10: `list_changes`, what a live event list re-reads whole on
//! (see `store::live_list`).
//! Version 11: `events_received_hourly`, the events received per hour,
//! kept by a trigger on `events` (see [`super::received`]).
//! Version 12: `events_by_type`, the index a `type:` filter reads along,
//! built in the migration on a small store and concurrently per
//! partition after it on a large one (see [`super::type_index`]).
//! Version 13: `sweep_figures`, the background sweep's figures per holder
//! that every replica's `/metrics` reads (see [`super::sweep_figures`]).
//! Version 14: `pg_trgm` when it can be had and `events_by_text`, the
//! trigram index free text finds its events along, built as version 12's
//! (see [`super::text_index`]); without the extension, no index. With
//! it `event_outcomes_unsettled`, the rows not delivered by state and
//! time, which `status:missed` reads (see [`super::outcome_keys`]).
//! Version 15: `events.filed_xid`, the filing transaction of each event,
//! indexed, and the forwarders' places, `relay_cursors` and `relay_sent`
//! (see [`super::relay`]).
//! Version 16: `probes`, each replica's probe of whether it can write the
//! store, for its `/healthz` (see [`super::probe`]).

use tokio_postgres::Transaction;

use super::PgError;

/// The schema this build writes and reads.
pub const PG_SCHEMA_VERSION: i32 = 16;

/// The first key of earshot's advisory locks: "EARS", as SQLite's
/// `application_id`.
pub(crate) const LOCK_CLASS: i32 = 0x4541_5253;
/// The second keys of earshot's advisory locks, one a kind of work, all
/// here so that no two kinds share one (a prune and a copy did).
pub(crate) mod lock {
    /// Migrating the schema.
    pub(crate) const MIGRATION: i32 = 1;
    /// Making a day's partition (`days.rs`).
    pub(crate) const DAYS: i32 = 2;
    /// One prune at a time (`prune.rs`), held for the whole run.
    pub(crate) const PRUNE: i32 = 3;
    /// A copy's batch (`copy.rs`): two copies of one source at once take
    /// turns and share its cursor.
    pub(crate) const COPY: i32 = 4;
    /// A sweep's write transaction (`sweep_store.rs`), held to its
    /// commit: sweeps by hand (consoles, `health`) and the replica's take
    /// turns rather than deadlock on the count rows their triggers share.
    pub(crate) const SWEEP: i32 = 5;
    /// Building `events_by_type` on each partition, concurrently, after
    /// the migration (`type_index.rs`): one process at a time.
    pub(crate) const TYPE_INDEX: i32 = 6;
    /// Building `events_by_text` on each partition, likewise
    /// (`text_index.rs`).
    pub(crate) const TEXT_INDEX: i32 = 7;
}

/// Migration `i` brings the database from version `i` to `i + 1`.
fn migrations() -> [String; PG_SCHEMA_VERSION as usize] {
    [
        VERSION_1.to_owned(),
        VERSION_2.to_owned(),
        VERSION_3.to_owned(),
        VERSION_4.to_owned(),
        VERSION_5.to_owned(),
        super::counts::version_6(),
        VERSION_7.to_owned(),
        VERSION_8.to_owned(),
        VERSION_9.to_owned(),
        VERSION_10.to_owned(),
        super::received::VERSION_11.to_owned(),
        super::type_index::version_12(),
        super::sweep_figures::VERSION_13.to_owned(),
        format!(
            "{}{}",
            super::text_index::version_14(),
            super::outcome_keys::VERSION_14
        ),
        super::relay::VERSION_15.to_owned(),
        super::probe::VERSION_16.to_owned(),
    ]
}

const VERSION_1: &str = "
CREATE TABLE earshot.events (
    event_id     text   NOT NULL,
    event        text   NOT NULL,
    session_id   text   NOT NULL,
    occurred_ms  bigint NOT NULL,
    received_ms  bigint NOT NULL,
    delivery_id  text,
    headers      text   NOT NULL,
    body         bytea  NOT NULL,
    PRIMARY KEY (event_id, occurred_ms)
) PARTITION BY RANGE (occurred_ms);
CREATE INDEX events_by_session ON earshot.events (session_id, occurred_ms);
CREATE INDEX events_by_received ON earshot.events (received_ms);

CREATE TABLE earshot.sessions (
    session_id     text PRIMARY KEY,
    kind           text,
    source         text    NOT NULL,
    first_seen_ms  bigint  NOT NULL,
    last_event_ms  bigint,
    last_swept_ms  bigint,
    unsettled      boolean NOT NULL DEFAULT true
);
";

const VERSION_2: &str = "
CREATE TABLE earshot.unfiled_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_ms  bigint NOT NULL,
    event_id     text UNIQUE,
    event        text,
    session_id   text,
    occurred_ms  bigint,
    delivery_id  text,
    headers      text   NOT NULL,
    body         bytea  NOT NULL,
    reason       text   NOT NULL
);
CREATE INDEX unfiled_events_by_received ON earshot.unfiled_events (received_ms);
";

const VERSION_3: &str = "
CREATE TABLE earshot.leases (
    name        text PRIMARY KEY,
    holder      text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    since       timestamptz NOT NULL
);
";

// Built in the migration's transaction, which holds filing back on a
// large table while it builds: PostgreSQL stores are new in this version,
// so none is large yet (a later index on a large table is built
// `CONCURRENTLY`, partition by partition, as docs/postgres.md says).
const VERSION_4: &str = "
CREATE INDEX events_by_time ON earshot.events (occurred_ms, event_id COLLATE \"C\");
CREATE INDEX events_by_session_bytes ON earshot.events (session_id COLLATE \"C\", occurred_ms);
";

// The source is named by its host and canonical path; the row and key
// are the source's rowid and key of the last row copied.
const VERSION_5: &str = "
CREATE TABLE earshot.copy_cursors (
    source      text        NOT NULL,
    table_name  text        NOT NULL,
    last_rowid  bigint      NOT NULL,
    last_key    text        NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (source, table_name)
);
";

// SQLite's tables and indexes, `bigint` for its `INTEGER`. An incident's
// events are counted along `event_outcomes_failed` (its state included,
// so no row is read), as SQLite's version 6 counts them.
const VERSION_7: &str = "
CREATE TABLE earshot.incidents (
    id                text   PRIMARY KEY,
    subscription_id   text   NOT NULL,
    http_status_code  bigint NOT NULL,
    error_class       text   NOT NULL,
    first_seen_ms     bigint NOT NULL,
    last_seen_ms      bigint NOT NULL,
    resolved_ms       bigint,
    resolved_reason   text,
    acknowledged_by   text,
    acknowledged_ms   bigint,
    note              text
);
CREATE INDEX incidents_by_group
    ON earshot.incidents (subscription_id, http_status_code, error_class, first_seen_ms);
CREATE INDEX incidents_by_last_seen ON earshot.incidents (last_seen_ms);
CREATE INDEX event_outcomes_failed
    ON earshot.event_outcomes (subscription_id, http_status_code, error_class, last_failure_ms)
    INCLUDE (state) WHERE last_failure_ms IS NOT NULL;

CREATE TABLE earshot.changes (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms            bigint NOT NULL,
    operator         text   NOT NULL,
    subscription_id  text,
    action           text   NOT NULL,
    detail           text   NOT NULL
);
CREATE INDEX changes_by_time ON earshot.changes (at_ms);
CREATE INDEX changes_by_subscription ON earshot.changes (subscription_id, at_ms);

CREATE TABLE earshot.recoveries (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id   text   NOT NULL,
    event_id          text   NOT NULL,
    session_id        text   NOT NULL,
    started_ms        bigint NOT NULL,
    finished_ms       bigint,
    http_status_code  bigint,
    error             text,
    latency_ms        bigint,
    delivered         boolean NOT NULL DEFAULT false
);
CREATE INDEX recoveries_by_event ON earshot.recoveries (subscription_id, event_id);
CREATE INDEX recoveries_by_session ON earshot.recoveries (session_id);
";

// A copied row's origin; NULL for the rows written here, which a unique
// index never makes clash.
const VERSION_8: &str = "
ALTER TABLE earshot.changes ADD COLUMN copied_from text, ADD COLUMN copied_id bigint;
CREATE UNIQUE INDEX changes_copied ON earshot.changes (copied_from, copied_id);
ALTER TABLE earshot.recoveries ADD COLUMN copied_from text, ADD COLUMN copied_id bigint;
CREATE UNIQUE INDEX recoveries_copied ON earshot.recoveries (copied_from, copied_id);
";

// A rotation in flight: who holds it (the process), for whom, since when,
// and until when at the latest (a process that died frees it then), on
// the database's clock.
const VERSION_9: &str = "
CREATE TABLE earshot.rotations (
    subscription_id  text        PRIMARY KEY,
    holder           text        NOT NULL,
    operator         text        NOT NULL,
    started_ms       bigint      NOT NULL,
    expires_at       timestamptz NOT NULL
);
";

// What an event list shows changed other than by filing (SQLite's
// `list_changes`, its version 8): an outcome row made, changed or removed,
// a subscription's record or state changed. A live list that read a
// different number reads the whole list again (`store::live_list`). Row
// triggers, so a sweep's upsert that changes nothing leaves it alone; only
// the sweep writes these tables, on one replica at a time (its lease), so
// the one row's lock holds nobody up.
const VERSION_10: &str = "
CREATE TABLE earshot.list_changes (n bigint NOT NULL);
INSERT INTO earshot.list_changes VALUES (0);
CREATE FUNCTION earshot.list_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE earshot.list_changes SET n = n + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER event_outcomes_listed AFTER INSERT OR DELETE ON earshot.event_outcomes
    FOR EACH ROW EXECUTE FUNCTION earshot.list_changed();
CREATE TRIGGER event_outcomes_listed_update AFTER UPDATE ON earshot.event_outcomes
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION earshot.list_changed();
CREATE TRIGGER subscriptions_listed AFTER INSERT OR DELETE ON earshot.subscriptions
    FOR EACH ROW EXECUTE FUNCTION earshot.list_changed();
CREATE TRIGGER subscriptions_listed_update AFTER UPDATE ON earshot.subscriptions
    FOR EACH ROW WHEN (OLD.record IS DISTINCT FROM NEW.record
                       OR OLD.enabled IS DISTINCT FROM NEW.enabled)
    EXECUTE FUNCTION earshot.list_changed();
";

/// What a migration did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The version found (0: a database earshot had not used).
    pub from: i32,
    /// The version now, [`PG_SCHEMA_VERSION`].
    pub to: i32,
    /// Whether the type index serves reads yet (see
    /// [`super::type_index::finish`]); `Building` until the migration's
    /// caller finished it.
    pub type_index: super::type_index::TypeIndex,
    /// Whether the free-text index serves reads, likewise (see
    /// [`super::text_index::finish`]), or cannot be had.
    pub text_index: super::text_index::TextIndex,
}

/// Brings the database to [`PG_SCHEMA_VERSION`] under the migration lock,
/// in `tx` (committed by the caller); `by` is kept with each version
/// applied (host and process).
pub(crate) async fn migrate(tx: &Transaction<'_>, by: &str) -> Result<Migrated, PgError> {
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &lock::MIGRATION],
    )
    .await?;
    let from = version(tx).await?;
    if from > PG_SCHEMA_VERSION {
        return Err(PgError::NewerVersion {
            found: from,
            supported: PG_SCHEMA_VERSION,
        });
    }
    if from == 0 {
        tx.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS earshot;
             CREATE TABLE earshot.schema_version (
                 version      integer PRIMARY KEY,
                 migrated_at  timestamptz NOT NULL DEFAULT now(),
                 migrated_by  text NOT NULL
             );",
        )
        .await?;
    }
    for (index, migration) in migrations().iter().enumerate().skip(from as usize) {
        let to = index as i32 + 1;
        tx.batch_execute(migration).await?;
        tx.execute(
            "INSERT INTO earshot.schema_version (version, migrated_by) VALUES ($1, $2)",
            &[&to, &by],
        )
        .await?;
    }
    Ok(Migrated {
        from,
        to: PG_SCHEMA_VERSION,
        type_index: super::type_index::TypeIndex::Building,
        text_index: super::text_index::TextIndex::Building,
    })
}

/// The version of the database `tx` reads: 0 without earshot's tables.
pub(crate) async fn version(tx: &Transaction<'_>) -> Result<i32, PgError> {
    let row = tx
        .query_one(
            "SELECT to_regclass('earshot.schema_version') IS NOT NULL",
            &[],
        )
        .await?;
    if !row.try_get::<_, bool>(0)? {
        return Ok(0);
    }
    let row = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM earshot.schema_version",
            &[],
        )
        .await?;
    Ok(row.try_get(0)?)
}
