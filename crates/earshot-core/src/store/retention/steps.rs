//! The steps of a prune, one a table or kind of row ([`Step`]): each reads
//! its next candidates outside the write lock and removes them one by one
//! inside a batch's transaction. Most tables' rows go by their own time
//! ([`super::aged`]); here are the others (event rows of events never
//! received, incidents) and what every step shares; the order a prune
//! takes them in is [`all`].

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, params};

use super::aged::Aged;
use super::counts;
use super::{Removed, Rules, Table};

/// Every step, in the order a prune takes them: events before the rows
/// that count them, sessions once nothing of theirs is left.
pub(super) fn all() -> Vec<Box<dyn Step>> {
    let mut steps: Vec<Box<dyn Step>> = vec![
        Box::new(
            Aged::new(Table::Events, "rowid", "received_ms")
                .held_by_session()
                .with_dependents("event_id", Table::EventOutcomes)
                .step(),
        ),
        Box::new(Aged::new(Table::UnfiledEvents, "id", "received_ms").step()),
        Box::new(
            Aged::new(Table::Deliveries, "rowid", "created_ms")
                .held_by_session()
                .step(),
        ),
        Box::new(UnobservedOutcomesStep::new()),
        Box::new(
            Aged::new(Table::Recoveries, "id", "started_ms")
                .held_by_session()
                .in_key_order()
                .step(),
        ),
        Box::new(Aged::new(Table::Changes, "id", "at_ms").step()),
        Box::new(IncidentsStep::default()),
        Box::new(
            Aged::new(Table::Sessions, "rowid", SESSION_ACTIVE)
                .held_by_session()
                .unless(SESSION_EMPTY)
                .step(),
        ),
    ];
    steps.extend(counts::steps());
    steps
}

/// When a session was last active.
const SESSION_ACTIVE: &str = "coalesce(last_event_ms, first_seen_ms)";

/// Nothing of the session is left (checked under the lock: an event may
/// have come since it was read).
const SESSION_EMPTY: &str =
    "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session_no = sessions.session_no)
     AND NOT EXISTS (SELECT 1 FROM events e
                     WHERE e.session_no IS NULL AND e.session_id = sessions.session_id)
     AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.session_id = sessions.session_id)
     AND NOT EXISTS (SELECT 1 FROM event_outcomes o WHERE o.session_no = sessions.session_no)
     AND NOT EXISTS (SELECT 1 FROM recoveries r WHERE r.session_id = sessions.session_id)";

/// A row a step may remove, as read outside the write lock: the values
/// its removal binds, its time and session (for the hold), and what its
/// dependents are found by (an event's `event_id`: its outcome rows go
/// with it).
pub(super) struct Candidate {
    pub(super) key: Vec<Value>,
    pub(super) time_ms: i64,
    pub(super) session: Option<String>,
    pub(super) link: Option<Value>,
}

impl Candidate {
    /// A row that goes by `key` alone, whatever its time or session.
    pub(super) fn keyed(key: Vec<Value>) -> Candidate {
        Candidate {
            key,
            time_ms: i64::MIN,
            session: None,
            link: None,
        }
    }
}

/// One table's part of a prune. [`select`](Step::select) reads the next
/// rows older than the cutoff after a cursor the step keeps, outside the
/// write lock (so reading cold pages never holds up the observer);
/// [`remove`](Step::remove) deletes one of them inside the batch's
/// transaction, checking again what may have changed since it was read.
pub(super) trait Step {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>>;

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()>;

    /// Whether a held session's rows are kept (see [`Rules`]).
    fn holds(&self) -> bool {
        true
    }
}

pub(super) fn limit(size: usize) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// A column read as text whatever its type (a hand-edited store may hold
/// a number where an id belongs); `None` for NULL.
pub(super) fn text(value: ValueRef<'_>) -> Option<String> {
    match value {
        ValueRef::Null => None,
        ValueRef::Integer(number) => Some(number.to_string()),
        ValueRef::Real(number) => Some(number.to_string()),
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
    }
}

/// A time column as milliseconds: a real number (a hand edit) is cut to
/// a whole one. Only numbers are ever selected (`time < cutoff` is false
/// for text in SQLite's ordering).
pub(super) fn millis(value: ValueRef<'_>) -> i64 {
    match value {
        ValueRef::Integer(ms) => ms,
        ValueRef::Real(ms) => ms as i64,
        _ => i64::MIN,
    }
}

/// The candidates of `rows`, each read with where it leaves the step's
/// cursor; `after` is moved past the last of them.
pub(super) fn advance<C>(
    rows: impl Iterator<Item = rusqlite::Result<(C, Candidate)>>,
    after: &mut C,
) -> rusqlite::Result<Vec<Candidate>> {
    let mut selected = Vec::new();
    for row in rows {
        let (at, candidate) = row?;
        *after = at;
        selected.push(candidate);
    }
    Ok(selected)
}

/// Runs `sql` with the candidate's key; rows deleted.
pub(super) fn delete(conn: &Connection, sql: &str, row: &Candidate) -> rusqlite::Result<u64> {
    let deleted = conn
        .prepare_cached(sql)?
        .execute(rusqlite::params_from_iter(&row.key))?;
    Ok(deleted as u64)
}

/// Event rows of events the observer never received (their time is their
/// first attempt's); the others went with their event.
struct UnobservedOutcomesStep {
    /// The last row's time, subscription and key (at first, before every
    /// row).
    after: (Value, Value, Value),
}

impl UnobservedOutcomesStep {
    fn new() -> Self {
        Self {
            after: (
                Value::Integer(i64::MIN),
                Value::Text(String::new()),
                Value::Text(String::new()),
            ),
        }
    }
}

impl Step for UnobservedOutcomesStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        let after = self.after.clone();
        let mut statement = conn.prepare_cached(
            "SELECT subscription_id, event_key, session_id, occurred_ms, session_no
             FROM event_outcomes
             WHERE event_id IS NULL AND occurred_ms < ?1
               AND (occurred_ms, subscription_id, event_key) > (?2, ?3, ?4)
             ORDER BY occurred_ms, subscription_id, event_key LIMIT ?5",
        )?;
        let rows = statement.query_map(
            params![rules.cutoff_ms, after.0, after.1, after.2, limit(size)],
            |row| {
                let (subscription, key): (Value, Value) = (row.get(0)?, row.get(1)?);
                let occurred: Value = row.get(3)?;
                Ok((
                    (occurred.clone(), subscription.clone(), key.clone()),
                    Candidate {
                        // The row's key, its session by number.
                        key: vec![subscription, key, row.get(4)?],
                        time_ms: millis(ValueRef::from(&occurred)),
                        session: text(row.get_ref(2)?),
                        link: None,
                    },
                ))
            },
        )?;
        advance(rows, &mut self.after)
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        _rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        let rows = delete(
            conn,
            "DELETE FROM event_outcomes
             WHERE session_no = ?3 AND subscription_id = ?1 AND event_key = ?2
               AND event_id IS NULL",
            row,
        )?;
        removed.add(Table::EventOutcomes, rows);
        Ok(())
    }
}

/// Incidents by their newest time (last failure, resolution,
/// acknowledgement): resolved ones older than the cutoff, open ones older
/// than the hold limit.
#[derive(Default)]
struct IncidentsStep {
    after: i64,
}

/// Whether an incident (`rowid ?1`) goes at cutoff `?2`, hold limit `?3`.
const INCIDENT_GOES: &str =
    "max(last_seen_ms, coalesce(resolved_ms, 0), coalesce(acknowledged_ms, 0))
         < CASE WHEN resolved_ms IS NULL THEN ?3 ELSE ?2 END";

impl Step for IncidentsStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        let mut statement = conn.prepare_cached(&format!(
            "SELECT rowid FROM incidents WHERE rowid > ?1 AND {INCIDENT_GOES}
             ORDER BY rowid LIMIT ?4"
        ))?;
        let rows = statement.query_map(
            params![
                self.after,
                rules.cutoff_ms,
                rules.hold_limit_ms,
                limit(size)
            ],
            |row| {
                let rowid: i64 = row.get(0)?;
                Ok((rowid, Candidate::keyed(vec![Value::Integer(rowid)])))
            },
        )?;
        advance(rows, &mut self.after)
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        let rows = conn
            .prepare_cached(&format!(
                "DELETE FROM incidents WHERE rowid = ?1 AND {INCIDENT_GOES}"
            ))?
            .execute(params![row.key[0], rules.cutoff_ms, rules.hold_limit_ms])?;
        removed.add(Table::Incidents, rows as u64);
        Ok(())
    }

    fn holds(&self) -> bool {
        false
    }
}
