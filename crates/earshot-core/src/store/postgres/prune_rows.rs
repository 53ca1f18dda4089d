//! What a prune of a PostgreSQL store removes row by row, and what it
//! keeps past the period, by SQLite's rules (`store::retention`): the
//! sessions an open incident or an unfinished recovery holds ([`HELD`],
//! SQLite's `held_sessions`), whether a day of events holds one of them
//! ([`day_holds`]), the outcome rows that go with a day
//! ([`day_outcomes`]), and each unpartitioned table's batch ([`ROW_TABLES`],
//! in SQLite's order: what counts a row goes before the counts, sessions
//! last). Each batch is a `DELETE` of at most `$2` rows, older than the
//! cutoff `$1`; where a held session keeps its rows, one more period back
//! (`$3`, the hold limit).

use crate::store::retention::Table;

/// Sessions whose rows are kept past the period: one of their outcome
/// rows is `missed` or `pending` inside an incident still open, or a
/// recovery of theirs was started and never finished.
pub(super) const HELD: &str = "
SELECT o.session_id FROM earshot.incidents i
JOIN earshot.event_outcomes o
  ON o.subscription_id = i.subscription_id
 AND o.http_status_code = i.http_status_code
 AND o.error_class = i.error_class
 AND o.last_failure_ms BETWEEN i.first_seen_ms AND i.last_seen_ms
WHERE i.resolved_ms IS NULL AND o.state IN ('missed', 'pending')
UNION
SELECT session_id FROM earshot.recoveries WHERE finished_ms IS NULL";

/// How many sessions [`HELD`] holds now.
pub(super) fn held_count() -> String {
    format!("SELECT count(*) FROM ({HELD}) held")
}

/// The rows of the day `partition` (a name checked by the caller) and how
/// many of them are a held session's: a day with one is kept whole until
/// its end passes the hold limit.
pub(super) fn day_holds(partition: &str) -> String {
    format!(
        "SELECT count(*), count(*) FILTER (WHERE e.session_id IN ({HELD})) \
         FROM earshot.{partition} e"
    )
}

/// The outcome rows of the events of the day `partition` (a name checked
/// by the caller), removed before the day goes: found by session along
/// the rows' key, so the table is never scanned.
pub(super) fn day_outcomes(partition: &str) -> String {
    format!(
        "DELETE FROM earshot.event_outcomes o USING earshot.{partition} e \
         WHERE o.session_id = e.session_id AND o.event_id = e.event_id"
    )
}

/// One unpartitioned table's batch.
pub(super) struct RowTable {
    pub(super) table: Table,
    pub(super) sql: String,
    /// Whether the statement takes the hold limit as `$3`.
    pub(super) holds: bool,
}

/// Every unpartitioned table, in the order a prune takes them.
pub(super) fn row_tables() -> Vec<RowTable> {
    let mut tables = vec![
        RowTable {
            table: Table::UnfiledEvents,
            sql: "DELETE FROM earshot.unfiled_events WHERE id IN (
                SELECT id FROM earshot.unfiled_events WHERE received_ms < $1
                ORDER BY received_ms LIMIT $2)"
                .to_owned(),
            holds: false,
        },
        // The rows of events never received, by their time (an observed
        // event's go with its day: [`day_outcomes`]).
        RowTable {
            table: Table::EventOutcomes,
            sql: format!(
                "DELETE FROM earshot.event_outcomes
                 WHERE (session_id, subscription_id, event_key) IN (
                    SELECT o.session_id, o.subscription_id, o.event_key
                    FROM earshot.event_outcomes o
                    WHERE o.event_id IS NULL AND o.occurred_ms < $1
                      AND (o.occurred_ms < $3 OR o.session_id NOT IN ({HELD}))
                    ORDER BY o.occurred_ms LIMIT $2 FOR UPDATE OF o SKIP LOCKED)"
            ),
            holds: true,
        },
        RowTable {
            table: Table::Deliveries,
            sql: format!(
                "DELETE FROM earshot.deliveries WHERE id IN (
                    SELECT d.id FROM earshot.deliveries d
                    WHERE d.created_ms < $1
                      AND (d.created_ms < $3 OR d.session_id NOT IN ({HELD}))
                    ORDER BY d.created_ms LIMIT $2 FOR UPDATE OF d SKIP LOCKED)"
            ),
            holds: true,
        },
        RowTable {
            table: Table::Recoveries,
            sql: format!(
                "DELETE FROM earshot.recoveries WHERE id IN (
                    SELECT r.id FROM earshot.recoveries r
                    WHERE r.started_ms < $1
                      AND (r.started_ms < $3 OR r.session_id NOT IN ({HELD}))
                    ORDER BY r.id LIMIT $2 FOR UPDATE OF r SKIP LOCKED)"
            ),
            holds: true,
        },
        RowTable {
            table: Table::Changes,
            sql: "DELETE FROM earshot.changes WHERE id IN (
                SELECT id FROM earshot.changes WHERE at_ms < $1 ORDER BY id LIMIT $2)"
                .to_owned(),
            holds: false,
        },
        // By its newest time: resolved ones older than the cutoff, open
        // ones older than the hold limit.
        RowTable {
            table: Table::Incidents,
            sql: "DELETE FROM earshot.incidents WHERE id IN (
                SELECT id FROM earshot.incidents
                WHERE greatest(last_seen_ms, coalesce(resolved_ms, 0),
                               coalesce(acknowledged_ms, 0))
                      < CASE WHEN resolved_ms IS NULL THEN $3::bigint ELSE $1::bigint END
                LIMIT $2 FOR UPDATE SKIP LOCKED)"
                .to_owned(),
            holds: true,
        },
        // Last active before the cutoff with nothing of theirs left.
        RowTable {
            table: Table::Sessions,
            sql: "DELETE FROM earshot.sessions WHERE session_id IN (
                SELECT s.session_id FROM earshot.sessions s
                WHERE coalesce(s.last_event_ms, s.first_seen_ms) < $1
                  AND NOT EXISTS (SELECT 1 FROM earshot.events e
                                  WHERE e.session_id = s.session_id)
                  AND NOT EXISTS (SELECT 1 FROM earshot.deliveries d
                                  WHERE d.session_id = s.session_id)
                  AND NOT EXISTS (SELECT 1 FROM earshot.event_outcomes o
                                  WHERE o.session_id = s.session_id)
                  AND NOT EXISTS (SELECT 1 FROM earshot.recoveries r
                                  WHERE r.session_id = s.session_id)
                LIMIT $2 FOR UPDATE SKIP LOCKED)"
                .to_owned(),
            holds: false,
        },
    ];
    // The minute and hour counts the triggers keep: whole buckets before
    // the cutoff that nothing counts any more (the rows deleted above were
    // counted out as they went).
    for (table, name, unit, unit_ms) in [
        (Table::DeliveryCounts, "delivery_counts", "minute", 60_000),
        (
            Table::DeliveryCountsHourly,
            "delivery_counts_hourly",
            "hour",
            3_600_000,
        ),
        (Table::EventCounts, "event_counts", "minute", 60_000),
        (
            Table::EventCountsHourly,
            "event_counts_hourly",
            "hour",
            3_600_000,
        ),
    ] {
        tables.push(RowTable {
            table,
            sql: format!(
                "DELETE FROM earshot.{name} WHERE ctid IN (
                    SELECT ctid FROM earshot.{name}
                    WHERE ({unit} + 1) * {unit_ms} <= $1 AND count <= 0
                    LIMIT $2 FOR UPDATE SKIP LOCKED)"
            ),
            holds: false,
        });
    }
    tables
}
