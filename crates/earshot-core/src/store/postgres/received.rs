//! The events received per hour on PostgreSQL (schema version 11), what
//! `health` counts its window by instead of reading a day of `events`:
//! `events_received_hourly (day, hour, backend, count)`, kept by a
//! statement trigger on `events` in the filing transaction.
//!
//! A count row is written only by one server process (`backend`,
//! `pg_backend_pid()`): a process runs one transaction at a time, so two
//! filings at once never wait on one row's lock, whichever replicas they
//! come from; an hour has a row for each connection that filed in it
//! (tens). `day` is the day partition the events are in
//! (`occurred_ms` in days), so the retention deletes a dropped day's
//! rows with it and the counts stay exact. The trigger reads the
//! statement's inserted rows (`REFERENCING NEW TABLE`: a repeat that
//! `ON CONFLICT DO NOTHING` skips is not among them), one upsert per
//! statement, so a copy's batch of thousands costs one.
//!
//! The migration counts the events already stored into rows of
//! `backend` 0, in its transaction (one read of `events`; filing waits
//! for it: about a second per million events).

/// The table, the trigger and the count of the events already there.
pub(super) const VERSION_11: &str = "
CREATE TABLE earshot.events_received_hourly (
    day      bigint NOT NULL,
    hour     bigint NOT NULL,
    backend  integer NOT NULL,
    count    bigint NOT NULL,
    PRIMARY KEY (hour, day, backend)
);
CREATE INDEX events_received_hourly_by_day ON earshot.events_received_hourly (day);

CREATE FUNCTION earshot.events_received_counted() RETURNS trigger LANGUAGE plpgsql AS $counted$
BEGIN
    INSERT INTO earshot.events_received_hourly AS c (day, hour, backend, count)
    SELECT floor(occurred_ms / 86400000.0)::bigint, received_ms / 3600000, pg_backend_pid(),
           count(*)
    FROM filed GROUP BY 1, 2
    ON CONFLICT (hour, day, backend) DO UPDATE SET count = c.count + excluded.count;
    RETURN NULL;
END
$counted$;
CREATE TRIGGER events_received_counted AFTER INSERT ON earshot.events
REFERENCING NEW TABLE AS filed
FOR EACH STATEMENT EXECUTE FUNCTION earshot.events_received_counted();

INSERT INTO earshot.events_received_hourly (day, hour, backend, count)
SELECT floor(occurred_ms / 86400000.0)::bigint, received_ms / 3600000, 0, count(*)
FROM earshot.events GROUP BY 1, 2;
";

/// The events of the day partition of day number `$1` (its start in
/// days), exact as the counts are.
pub(super) const DAY_COUNT: &str = "SELECT coalesce(sum(count), 0)::bigint \
     FROM earshot.events_received_hourly WHERE day = $1::bigint";

/// Forgets the counts of the day partition starting at `day_start_ms`
/// (dropped by the retention).
pub(super) const FORGET_DAY: &str =
    "DELETE FROM earshot.events_received_hourly WHERE day = $1::bigint";
