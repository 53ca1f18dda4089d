//! Incidents: one subscription's failure group (one diagnosis: the status
//! code and error class of its events' last failed attempts) over one
//! period. An incident opens with the first such event, grows while
//! events fail the same way, and is resolved on its own once a later
//! event to that subscription was delivered and none of its events is
//! missed or still retrying. A failure after that opens a new incident.
//! An incident also ends with its subscription: deleting or pausing it
//! resolves its open incidents with the reason ([`end_with_subscription`]),
//! and failures from before that end, swept later, open none.
//! Operators acknowledge one, with a note, so a second console on the
//! same store sees who is on it.
//!
//! Events delivered by a platform retry are not counted: a retry that
//! worked needs no one.

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::Store;
use super::outcomes::{EventState, Outcome};

/// One incident, with its events counted.
#[derive(Clone, Debug, PartialEq)]
pub struct IncidentRow {
    /// 8 hex characters, stable for the incident's life.
    pub id: String,
    pub subscription_id: String,
    /// 0 when the failure had no status code.
    pub http_status_code: u16,
    pub error_class: String,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
    pub resolved_ms: Option<i64>,
    /// What resolved it, when not its own recovery: `subscription deleted`,
    /// `subscription paused`.
    pub resolved_reason: Option<String>,
    pub acknowledged_by: Option<String>,
    pub acknowledged_ms: Option<i64>,
    pub note: Option<String>,
    pub missed: i64,
    pub recovered: i64,
    /// Failed, with a retry still to come.
    pub retrying: i64,
}

/// Whether an event belongs to an incident: it failed, and no platform
/// retry delivered it.
pub(crate) fn counts(row: &Outcome) -> bool {
    row.last_failure_ms.is_some() && row.state != EventState::Delivered
}

fn incident_id(subscription_id: &str, code: u16, class: &str, first_ms: i64) -> String {
    let digest = Sha256::digest(format!("{subscription_id}\n{code}\n{class}\n{first_ms}"));
    digest
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Why a subscription's incidents ended with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionEnd {
    Deleted,
    Paused,
}

impl SubscriptionEnd {
    /// The reason kept with each incident it resolved.
    pub fn reason(self) -> &'static str {
        match self {
            SubscriptionEnd::Deleted => "subscription deleted",
            SubscriptionEnd::Paused => "subscription paused",
        }
    }
}

/// A subscription was deleted or paused (by earshot, or seen so by a
/// sweep's listing): its open incidents are resolved at `now_ms` with the
/// reason, and the stored subscription follows (a deleted one leaves the
/// board, a paused one shows paused). How many incidents it resolved.
pub fn end_subscription(
    store: &Store,
    subscription_id: &str,
    end: SubscriptionEnd,
    now_ms: i64,
) -> rusqlite::Result<usize> {
    end_with_subscription(&store.conn, subscription_id, end, now_ms)
}

/// [`end_subscription`] inside a transaction (a sweep's listing).
pub(crate) fn end_with_subscription(
    conn: &Connection,
    subscription_id: &str,
    end: SubscriptionEnd,
    now_ms: i64,
) -> rusqlite::Result<usize> {
    let resolved = conn
        .prepare_cached(
            "UPDATE incidents SET resolved_ms = ?2, resolved_reason = ?3
             WHERE subscription_id = ?1 AND resolved_ms IS NULL",
        )?
        .execute(params![subscription_id, now_ms, end.reason()])?;
    let follow = match end {
        SubscriptionEnd::Deleted => "DELETE FROM subscriptions WHERE id = ?1",
        SubscriptionEnd::Paused => {
            "UPDATE subscriptions SET enabled = 0, record = json_set(record, '$.enabled', json('false'))
             WHERE id = ?1"
        }
    };
    conn.prepare_cached(follow)?.execute([subscription_id])?;
    Ok(resolved)
}

/// Whether a failure at `last_ms` of `subscription_id` happened before its
/// subscription ended (or it was deleted): it opens no incident.
fn before_end(conn: &Connection, subscription_id: &str, last_ms: i64) -> rusqlite::Result<bool> {
    let (ended_ms, deleted): (Option<i64>, bool) = conn
        .prepare_cached(
            "SELECT max(resolved_ms), coalesce(max(resolved_reason = ?2), 0) FROM incidents
             WHERE subscription_id = ?1 AND resolved_reason IS NOT NULL",
        )?
        .query_row(
            params![subscription_id, SubscriptionEnd::Deleted.reason()],
            |found| Ok((found.get(0)?, found.get(1)?)),
        )?;
    Ok(deleted || ended_ms.is_some_and(|ended| last_ms <= ended))
}

/// Folds one failed event into its group's current incident, or opens one.
pub(crate) fn note_failure(conn: &Connection, row: &Outcome) -> rusqlite::Result<()> {
    let (Some(first), Some(last)) = (row.first_failure_ms, row.last_failure_ms) else {
        return Ok(());
    };
    let newest: Option<(String, i64, Option<i64>)> = conn
        .prepare_cached(
            "SELECT id, last_seen_ms, resolved_ms FROM incidents
             WHERE subscription_id = ?1 AND http_status_code = ?2 AND error_class = ?3
             ORDER BY first_seen_ms DESC LIMIT 1",
        )?
        .query_row(
            params![row.subscription_id, row.http_status_code, row.error_class],
            |found| Ok((found.get(0)?, found.get(1)?, found.get(2)?)),
        )
        .optional()?;
    match newest {
        Some((id, _, None)) => {
            conn.prepare_cached(
                "UPDATE incidents SET first_seen_ms = min(first_seen_ms, ?2),
                     last_seen_ms = max(last_seen_ms, ?3)
                 WHERE id = ?1",
            )?
            .execute(params![id, first, last])?;
        }
        // Already part of an incident that has since been resolved.
        Some((_, last_seen, Some(_))) if last <= last_seen => {}
        _ if before_end(conn, &row.subscription_id, last)? => {}
        _ => {
            let id = incident_id(
                &row.subscription_id,
                row.http_status_code,
                &row.error_class,
                first,
            );
            conn.prepare_cached(
                "INSERT OR IGNORE INTO incidents
                     (id, subscription_id, http_status_code, error_class, first_seen_ms,
                      last_seen_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                id,
                row.subscription_id,
                row.http_status_code,
                row.error_class,
                first,
                last
            ])?;
        }
    }
    Ok(())
}

/// Marks resolved, at `now_ms`, every open incident of `subscription_id`
/// that a later delivered event ended and that has nothing missed or
/// retrying left.
pub(crate) fn settle(
    conn: &Connection,
    subscription_id: &str,
    now_ms: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE incidents SET resolved_ms = ?2
         WHERE subscription_id = ?1 AND resolved_ms IS NULL
           AND EXISTS (SELECT 1 FROM event_outcomes o
                       WHERE o.subscription_id = ?1 AND o.state = 'delivered'
                         AND o.occurred_ms > incidents.last_seen_ms)
           AND NOT EXISTS (SELECT 1 FROM event_outcomes o
                       WHERE o.subscription_id = ?1
                         AND o.http_status_code = incidents.http_status_code
                         AND o.error_class = incidents.error_class
                         AND o.last_failure_ms BETWEEN incidents.first_seen_ms
                                                   AND incidents.last_seen_ms
                         AND o.state IN ('missed', 'pending'))",
    )?
    .execute(params![subscription_id, now_ms])?;
    Ok(())
}

/// Incidents seen since `since_ms`, newest first: the open and
/// acknowledged ones, and with `all` the resolved ones too.
pub fn list(store: &Store, since_ms: i64, all: bool) -> rusqlite::Result<Vec<IncidentRow>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT id, subscription_id, http_status_code, error_class, first_seen_ms, last_seen_ms,
                resolved_ms, acknowledged_by, acknowledged_ms, note, resolved_reason
         FROM incidents
         WHERE last_seen_ms >= ?1 AND (?2 OR resolved_ms IS NULL)
         ORDER BY last_seen_ms DESC, id",
    )?;
    let rows = statement.query_map(params![since_ms, all], incident_row)?;
    let mut incidents: Vec<IncidentRow> = super::readable(rows)?;
    for incident in &mut incidents {
        count_events(store, incident)?;
    }
    Ok(incidents)
}

/// Incidents whose id starts with `prefix`.
pub fn find(store: &Store, prefix: &str) -> rusqlite::Result<Vec<IncidentRow>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT id, subscription_id, http_status_code, error_class, first_seen_ms, last_seen_ms,
                resolved_ms, acknowledged_by, acknowledged_ms, note, resolved_reason
         FROM incidents WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT 10",
    )?;
    let rows = statement.query_map([prefix], incident_row)?;
    let mut incidents: Vec<IncidentRow> = super::readable(rows)?;
    for incident in &mut incidents {
        count_events(store, incident)?;
    }
    Ok(incidents)
}

/// Records that `by` acknowledged incident `id` at `now_ms`, with a note
/// (replacing an earlier acknowledgement).
pub fn acknowledge(
    store: &Store,
    id: &str,
    by: &str,
    note: Option<&str>,
    now_ms: i64,
) -> rusqlite::Result<bool> {
    let changed = store.conn.execute(
        "UPDATE incidents SET acknowledged_by = ?2, acknowledged_ms = ?3, note = ?4 WHERE id = ?1",
        params![id, by, now_ms, note],
    )?;
    Ok(changed == 1)
}

fn incident_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<IncidentRow> {
    Ok(IncidentRow {
        id: row.get(0)?,
        subscription_id: row.get(1)?,
        http_status_code: row.get(2)?,
        error_class: row.get(3)?,
        first_seen_ms: row.get(4)?,
        last_seen_ms: row.get(5)?,
        resolved_ms: row.get(6)?,
        acknowledged_by: row.get(7)?,
        acknowledged_ms: row.get(8)?,
        note: row.get(9)?,
        resolved_reason: row.get(10)?,
        missed: 0,
        recovered: 0,
        retrying: 0,
    })
}

/// An incident's events by state: one range of `event_outcomes_failed`,
/// which holds the state, so no row is read (100,000 events: ~10 ms).
const COUNT_EVENTS: &str = "SELECT state, count(*) FROM event_outcomes
     WHERE subscription_id = ?1 AND http_status_code = ?2 AND error_class = ?3
       AND last_failure_ms BETWEEN ?4 AND ?5
     GROUP BY state";

/// The incident's events by state.
fn count_events(store: &Store, incident: &mut IncidentRow) -> rusqlite::Result<()> {
    let mut statement = store.conn.prepare_cached(COUNT_EVENTS)?;
    let rows = statement.query_map(
        params![
            incident.subscription_id,
            incident.http_status_code,
            incident.error_class,
            incident.first_seen_ms,
            incident.last_seen_ms
        ],
        |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
    )?;
    for (state, count) in super::readable::<_, Vec<(String, i64)>>(rows)? {
        match EventState::parse(&state) {
            Some(EventState::Missed) => incident.missed = count,
            Some(EventState::Recovered) => incident.recovered = count,
            Some(EventState::Pending) => incident.retrying = count,
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod plan_tests {
    use super::COUNT_EVENTS;
    use crate::store::tests::temp_store;

    #[test]
    fn an_incidents_events_are_counted_from_the_index_alone() {
        let (_dir, store) = temp_store();
        let plan: Vec<String> = store
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {COUNT_EVENTS}"))
            .unwrap()
            .query_map(rusqlite::params!["s", 401, "", 0, 1], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("USING COVERING INDEX event_outcomes_failed")),
            "{plan:?}"
        );
    }
}
