//! Retention: how long the store keeps what it holds ([`Period`]) and the
//! prune that removes what is older ([`prune`]).
//!
//! Each row goes by its own time: an event by when the observer received
//! it, an attempt by when it was made, a recovery by when it was sent, a
//! change by when it was made, a session once it was last active and
//! nothing of it is left. Kept past the period, for at most one more: the
//! sessions an open incident still counts (an event of theirs `missed` or
//! `pending` in it) or a recovery never finished, so that what an operator
//! is working on does not vanish under them ([`Rules`]). The rules are
//! documented table by table in `docs/store.md`.
//!
//! The prune runs in small transactions, each sized to hold the write lock
//! about [`TARGET_HOLD`] and followed by a pause at least as long, so a
//! running observer keeps filing events while it runs. Deleted content is
//! overwritten with zeros (`PRAGMA secure_delete`), not left in free pages.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, TransactionBehavior, params};

use super::{Store, StoreError};

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

/// The longest period accepted: 100 years.
const LONGEST_MS: i64 = 36_500 * DAY_MS;

/// How long one batch should hold the write lock.
pub const TARGET_HOLD: Duration = Duration::from_millis(8);
/// Least pause after a batch, however quick it was.
const LEAST_PAUSE: Duration = Duration::from_millis(2);
/// Rows a first batch looks at; later batches double or halve it to stay
/// near [`TARGET_HOLD`], within [`SMALLEST_BATCH`]..=[`LARGEST_BATCH`].
const FIRST_BATCH: usize = 256;
const SMALLEST_BATCH: usize = 16;
const LARGEST_BATCH: usize = 4096;

/// How long the store keeps what it holds: a whole number of days, hours
/// or minutes (`30d`, `12h`, `90m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Period {
    ms: i64,
}

/// A period that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PeriodError {
    #[error("`{0}`: give a whole number of days, hours or minutes, such as 30d, 12h or 90m")]
    Unreadable(String),
    #[error("`{0}`: a retention period is longer than zero")]
    Zero(String),
    #[error("`{0}` is longer than 100 years")]
    TooLong(String),
}

impl Period {
    /// Reads `30d`, `12h` or `90m` (surrounding spaces ignored).
    pub fn parse(text: &str) -> Result<Period, PeriodError> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let unreadable = || PeriodError::Unreadable(text.to_owned());
        let per = match unit {
            "d" => DAY_MS,
            "h" => HOUR_MS,
            "m" => MINUTE_MS,
            _ => return Err(unreadable()),
        };
        let count: i64 = number.parse().map_err(|_| {
            if number.is_empty() {
                unreadable()
            } else {
                PeriodError::TooLong(text.to_owned())
            }
        })?;
        if count == 0 {
            return Err(PeriodError::Zero(text.to_owned()));
        }
        let ms = count
            .checked_mul(per)
            .filter(|ms| *ms <= LONGEST_MS)
            .ok_or_else(|| PeriodError::TooLong(text.to_owned()))?;
        Ok(Period { ms })
    }

    pub fn as_millis(self) -> i64 {
        self.ms
    }

    pub fn as_duration(self) -> Duration {
        Duration::from_millis(self.ms.unsigned_abs())
    }
}

impl FromStr for Period {
    type Err = PeriodError;

    fn from_str(text: &str) -> Result<Period, PeriodError> {
        Period::parse(text)
    }
}

/// In the largest unit that divides it: `30d`, `36h`, `90m`.
impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ms % DAY_MS == 0 {
            write!(f, "{}d", self.ms / DAY_MS)
        } else if self.ms % HOUR_MS == 0 {
            write!(f, "{}h", self.ms / HOUR_MS)
        } else {
            write!(f, "{}m", self.ms / MINUTE_MS)
        }
    }
}

/// What one prune removes: rows older than `cutoff_ms`, but the rows of a
/// held session (see the module comment) only when older than
/// `hold_limit_ms` (one more period back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    pub cutoff_ms: i64,
    pub hold_limit_ms: i64,
}

impl Rules {
    /// The rules of a prune at `now_ms` keeping `period`.
    pub fn at(period: Period, now_ms: i64) -> Rules {
        let cutoff_ms = now_ms.saturating_sub(period.as_millis());
        Rules {
            cutoff_ms,
            hold_limit_ms: cutoff_ms.saturating_sub(period.as_millis()),
        }
    }

    /// Whether a row of `time_ms`, of `session` (when it has one), goes.
    fn removes(&self, time_ms: i64, session: Option<&str>, held: &HashSet<String>) -> bool {
        time_ms < self.cutoff_ms
            && (time_ms < self.hold_limit_ms || !session.is_some_and(|id| held.contains(id)))
    }
}

/// The tables a prune or an erasure removes rows from, in the order they
/// are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Events,
    UnfiledEvents,
    EventOutcomes,
    Deliveries,
    Recoveries,
    Sessions,
    Incidents,
    Changes,
    DeliveryCounts,
    DeliveryCountsHourly,
    EventCounts,
    EventCountsHourly,
}

impl Table {
    pub const ALL: [Table; 12] = [
        Table::Events,
        Table::UnfiledEvents,
        Table::EventOutcomes,
        Table::Deliveries,
        Table::Recoveries,
        Table::Sessions,
        Table::Incidents,
        Table::Changes,
        Table::DeliveryCounts,
        Table::DeliveryCountsHourly,
        Table::EventCounts,
        Table::EventCountsHourly,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::UnfiledEvents => "unfiled_events",
            Table::EventOutcomes => "event_outcomes",
            Table::Deliveries => "deliveries",
            Table::Recoveries => "recoveries",
            Table::Sessions => "sessions",
            Table::Incidents => "incidents",
            Table::Changes => "changes",
            Table::DeliveryCounts => "delivery_counts",
            Table::DeliveryCountsHourly => "delivery_counts_hourly",
            Table::EventCounts => "event_counts",
            Table::EventCountsHourly => "event_counts_hourly",
        }
    }

    fn index(self) -> usize {
        Table::ALL
            .iter()
            .position(|table| *table == self)
            .unwrap_or_default()
    }
}

/// Rows removed, per table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    rows: [u64; Table::ALL.len()],
}

impl Removed {
    pub fn add(&mut self, table: Table, rows: u64) {
        self.rows[table.index()] += rows;
    }

    pub fn get(&self, table: Table) -> u64 {
        self.rows[table.index()]
    }

    pub fn total(&self) -> u64 {
        self.rows.iter().sum()
    }

    /// Every table with its count, in [`Table::ALL`] order.
    pub fn per_table(&self) -> impl Iterator<Item = (Table, u64)> + '_ {
        Table::ALL.iter().map(|table| (*table, self.get(*table)))
    }

    /// `{"events": 3, …}` with every table.
    pub fn to_json(&self) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .per_table()
            .map(|(table, rows)| (table.as_str().to_owned(), rows.into()))
            .collect();
        serde_json::Value::Object(map)
    }
}

/// What one prune did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PruneReport {
    pub rules: Option<Rules>,
    pub removed: Removed,
    /// Sessions kept past the period (an open incident or an unfinished
    /// recovery needs them).
    pub held_sessions: usize,
    /// Rows older than the period kept for them.
    pub kept_rows: u64,
    /// Transactions committed.
    pub batches: u64,
    /// The longest a batch held the write lock.
    pub longest_hold: Duration,
    /// Stopped before the end (asked to).
    pub stopped: bool,
    pub elapsed: Duration,
}

/// Removes what `store` holds that is older than `period` at `now_ms`
/// (see the module comment), batch by batch. `stop` is read between
/// batches: once set, the prune ends after the batch in flight, keeping
/// what it removed. `progress` sees the running totals after each batch.
pub fn prune(
    store: &mut Store,
    period: Period,
    now_ms: i64,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Removed),
) -> Result<PruneReport, StoreError> {
    let started = Instant::now();
    let rules = Rules::at(period, now_ms);
    store.conn.pragma_update(None, "secure_delete", "ON")?;
    let held = held_sessions(&store.conn)?;
    let mut report = PruneReport {
        rules: Some(rules),
        held_sessions: held.len(),
        ..PruneReport::default()
    };
    let mut steps: Vec<Box<dyn Step>> = vec![
        Box::new(EventsStep::default()),
        Box::new(UnfiledStep::default()),
        Box::new(DeliveriesStep::default()),
        Box::new(UnobservedOutcomesStep::default()),
        Box::new(RecoveriesStep::default()),
        Box::new(ChangesStep::default()),
        Box::new(IncidentsStep::default()),
        Box::new(SessionsStep::default()),
    ];
    for counts in COUNTS_TABLES {
        steps.push(Box::new(ZeroCountsStep { counts }));
    }
    let mut size = FIRST_BATCH;
    'steps: for step in &mut steps {
        loop {
            if stop.load(Ordering::Relaxed) {
                report.stopped = true;
                break 'steps;
            }
            let tx = store
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let locked = Instant::now();
            let batch = step.batch(&tx, &rules, &held, size, &mut report.removed)?;
            tx.commit()?;
            let hold = locked.elapsed();
            report.batches += 1;
            report.kept_rows += batch.kept;
            report.longest_hold = report.longest_hold.max(hold);
            progress(&report.removed);
            size = next_size(size, hold);
            std::thread::sleep(hold.max(LEAST_PAUSE));
            if batch.done {
                break;
            }
        }
    }
    // Copy what the prune wrote into the main file where no reader is in
    // the way; never waits for anyone.
    let _ = store
        .conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    report.elapsed = started.elapsed();
    Ok(report)
}

/// The next batch's size: doubled when the last one held the lock under
/// half the target, halved when over twice.
fn next_size(size: usize, hold: Duration) -> usize {
    if hold < TARGET_HOLD / 2 {
        (size * 2).min(LARGEST_BATCH)
    } else if hold > TARGET_HOLD * 2 {
        (size / 2).max(SMALLEST_BATCH)
    } else {
        size
    }
}

/// Sessions whose rows are kept past the period: one of their events is
/// `missed` or `pending` for a subscription, inside an incident that is
/// still open; or a recovery of theirs was started and never finished.
pub fn held_sessions(conn: &Connection) -> rusqlite::Result<HashSet<String>> {
    let mut statement = conn.prepare(
        "SELECT o.session_id FROM incidents i
         JOIN event_outcomes o
           ON o.subscription_id = i.subscription_id
          AND o.http_status_code = i.http_status_code
          AND o.error_class = i.error_class
          AND o.last_failure_ms BETWEEN i.first_seen_ms AND i.last_seen_ms
         WHERE i.resolved_ms IS NULL AND o.state IN ('missed', 'pending')
         UNION
         SELECT session_id FROM recoveries WHERE finished_ms IS NULL",
    )?;
    let rows = statement.query_map([], |row| Ok(text(row.get_ref(0)?)))?;
    let mut held = HashSet::new();
    for row in rows {
        if let Some(id) = row? {
            held.insert(id);
        }
    }
    Ok(held)
}

/// A column read as text whatever its type (a hand-edited store may hold
/// a number where an id belongs); `None` for NULL.
fn text(value: ValueRef<'_>) -> Option<String> {
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
fn millis(value: ValueRef<'_>) -> i64 {
    match value {
        ValueRef::Integer(ms) => ms,
        ValueRef::Real(ms) => ms as i64,
        _ => i64::MIN,
    }
}

/// How one batch went.
struct Batch {
    /// Rows older than the period kept for a held session.
    kept: u64,
    /// Nothing more to look at in this table.
    done: bool,
}

/// One table's part of a prune: batches that each look at up to `size`
/// rows older than the cutoff, after a cursor the step keeps.
trait Step {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch>;
}

fn limit(size: usize) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// A cursor over a table with a rowid: the last row's time (as stored,
/// so a hand-edited real number is passed exactly) and rowid.
type Cursor = (Value, i64);

/// Before every row.
fn first() -> Cursor {
    (Value::Integer(i64::MIN), i64::MIN)
}

/// A candidate row of a table with a rowid: its rowid, time and session.
struct Candidate {
    rowid: i64,
    time: Value,
    time_ms: i64,
    session: Option<String>,
    /// Another column the step needs (the `event_id` of an event).
    extra: Value,
}

/// The candidates `sql` selects (`rowid, time, session, extra` after a
/// `(time, rowid)` cursor). The cursor is written `time >= ?2 AND (time >
/// ?2 OR rowid > ?3)` rather than as a row value, which SQLite does not
/// seek with on an expression index: so every batch starts in the index
/// where the last one stopped.
fn candidates(
    conn: &Connection,
    sql: &str,
    cutoff_ms: i64,
    after: &Cursor,
    size: usize,
) -> rusqlite::Result<Vec<Candidate>> {
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map(params![cutoff_ms, after.0, after.1, limit(size)], |row| {
        Ok(Candidate {
            rowid: row.get(0)?,
            time: row.get(1)?,
            time_ms: millis(row.get_ref(1)?),
            session: text(row.get_ref(2)?),
            extra: row.get(3)?,
        })
    })?;
    rows.collect()
}

/// Events by when they were received, each with its outcome rows.
#[derive(Default)]
struct EventsStep {
    after: Option<Cursor>,
}

impl Step for EventsStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let after = self.after.get_or_insert_with(first).clone();
        let rows = candidates(
            conn,
            "SELECT rowid, received_ms, session_id, event_id FROM events
             WHERE received_ms < ?1 AND received_ms >= ?2 AND (received_ms > ?2 OR rowid > ?3)
             ORDER BY received_ms, rowid LIMIT ?4",
            rules.cutoff_ms,
            &after,
            size,
        )?;
        let mut kept = 0;
        let mut delete = conn.prepare_cached("DELETE FROM events WHERE rowid = ?1")?;
        let mut outcomes = conn.prepare_cached("DELETE FROM event_outcomes WHERE event_id = ?1")?;
        for row in &rows {
            self.after = Some((row.time.clone(), row.rowid));
            if rules.removes(row.time_ms, row.session.as_deref(), held) {
                removed.add(Table::Events, delete.execute([row.rowid])? as u64);
                removed.add(Table::EventOutcomes, outcomes.execute([&row.extra])? as u64);
            } else {
                kept += 1;
            }
        }
        Ok(Batch {
            kept,
            done: rows.len() < size,
        })
    }
}

/// Deliveries `events` could not file, by when they were received.
#[derive(Default)]
struct UnfiledStep {
    after: Option<Cursor>,
}

impl Step for UnfiledStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        _held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let after = self.after.get_or_insert_with(first).clone();
        let rows = candidates(
            conn,
            "SELECT id, received_ms, session_id, NULL FROM unfiled_events
             WHERE received_ms < ?1 AND received_ms >= ?2 AND (received_ms > ?2 OR id > ?3)
             ORDER BY received_ms, id LIMIT ?4",
            rules.cutoff_ms,
            &after,
            size,
        )?;
        let mut delete = conn.prepare_cached("DELETE FROM unfiled_events WHERE id = ?1")?;
        for row in &rows {
            self.after = Some((row.time.clone(), row.rowid));
            removed.add(Table::UnfiledEvents, delete.execute([row.rowid])? as u64);
        }
        Ok(Batch {
            kept: 0,
            done: rows.len() < size,
        })
    }
}

/// Delivery attempts, by when they were made.
#[derive(Default)]
struct DeliveriesStep {
    after: Option<Cursor>,
}

impl Step for DeliveriesStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let after = self.after.get_or_insert_with(first).clone();
        let rows = candidates(
            conn,
            "SELECT rowid, created_ms, session_id, NULL FROM deliveries
             WHERE created_ms < ?1 AND created_ms >= ?2 AND (created_ms > ?2 OR rowid > ?3)
             ORDER BY created_ms, rowid LIMIT ?4",
            rules.cutoff_ms,
            &after,
            size,
        )?;
        let mut kept = 0;
        let mut delete = conn.prepare_cached("DELETE FROM deliveries WHERE rowid = ?1")?;
        for row in &rows {
            self.after = Some((row.time.clone(), row.rowid));
            if rules.removes(row.time_ms, row.session.as_deref(), held) {
                removed.add(Table::Deliveries, delete.execute([row.rowid])? as u64);
            } else {
                kept += 1;
            }
        }
        Ok(Batch {
            kept,
            done: rows.len() < size,
        })
    }
}

/// Event rows of events the observer never received (their time is their
/// first attempt's); the others went with their event.
#[derive(Default)]
struct UnobservedOutcomesStep {
    after: Option<(Value, Value, Value)>,
}

impl Step for UnobservedOutcomesStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let after = self
            .after
            .get_or_insert_with(|| {
                (
                    Value::Integer(i64::MIN),
                    Value::Text(String::new()),
                    Value::Text(String::new()),
                )
            })
            .clone();
        let mut statement = conn.prepare_cached(
            "SELECT subscription_id, event_key, session_id, occurred_ms FROM event_outcomes
             WHERE event_id IS NULL AND occurred_ms < ?1
               AND (occurred_ms, subscription_id, event_key) > (?2, ?3, ?4)
             ORDER BY occurred_ms, subscription_id, event_key LIMIT ?5",
        )?;
        let rows: Vec<(Value, Value, Option<String>, Value)> = statement
            .query_map(
                params![rules.cutoff_ms, after.0, after.1, after.2, limit(size)],
                |row| Ok((row.get(0)?, row.get(1)?, text(row.get_ref(2)?), row.get(3)?)),
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut kept = 0;
        let mut delete = conn.prepare_cached(
            "DELETE FROM event_outcomes WHERE subscription_id = ?1 AND event_key = ?2",
        )?;
        for (subscription, key, session, occurred) in &rows {
            self.after = Some((occurred.clone(), subscription.clone(), key.clone()));
            let occurred_ms = millis(ValueRef::from(occurred));
            if rules.removes(occurred_ms, session.as_deref(), held) {
                removed.add(
                    Table::EventOutcomes,
                    delete.execute(params![subscription, key])? as u64,
                );
            } else {
                kept += 1;
            }
        }
        Ok(Batch {
            kept,
            done: rows.len() < size,
        })
    }
}

/// Recover's log, by when each send started.
#[derive(Default)]
struct RecoveriesStep {
    after: i64,
}

impl Step for RecoveriesStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let mut statement = conn.prepare_cached(
            "SELECT id, started_ms, session_id FROM recoveries
             WHERE id > ?1 AND started_ms < ?2 ORDER BY id LIMIT ?3",
        )?;
        let rows: Vec<(i64, i64, Option<String>)> = statement
            .query_map(params![self.after, rules.cutoff_ms, limit(size)], |row| {
                Ok((row.get(0)?, millis(row.get_ref(1)?), text(row.get_ref(2)?)))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut kept = 0;
        let mut delete = conn.prepare_cached("DELETE FROM recoveries WHERE id = ?1")?;
        for (id, started_ms, session) in &rows {
            self.after = *id;
            if rules.removes(*started_ms, session.as_deref(), held) {
                removed.add(Table::Recoveries, delete.execute([id])? as u64);
            } else {
                kept += 1;
            }
        }
        Ok(Batch {
            kept,
            done: rows.len() < size,
        })
    }
}

/// The log of what earshot changed on the platform, by when.
#[derive(Default)]
struct ChangesStep {
    after: Option<Cursor>,
}

impl Step for ChangesStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        _held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let after = self.after.get_or_insert_with(first).clone();
        let rows = candidates(
            conn,
            "SELECT id, at_ms, NULL, NULL FROM changes
             WHERE at_ms < ?1 AND at_ms >= ?2 AND (at_ms > ?2 OR id > ?3)
             ORDER BY at_ms, id LIMIT ?4",
            rules.cutoff_ms,
            &after,
            size,
        )?;
        let mut delete = conn.prepare_cached("DELETE FROM changes WHERE id = ?1")?;
        for row in &rows {
            self.after = Some((row.time.clone(), row.rowid));
            removed.add(Table::Changes, delete.execute([row.rowid])? as u64);
        }
        Ok(Batch {
            kept: 0,
            done: rows.len() < size,
        })
    }
}

/// Incidents by their newest time (last failure, resolution,
/// acknowledgement): resolved ones older than the cutoff, open ones older
/// than the hold limit.
#[derive(Default)]
struct IncidentsStep {
    after: i64,
}

impl Step for IncidentsStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        _held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let mut statement = conn.prepare_cached(
            "SELECT rowid FROM incidents
             WHERE rowid > ?1
               AND max(last_seen_ms, coalesce(resolved_ms, 0), coalesce(acknowledged_ms, 0))
                   < CASE WHEN resolved_ms IS NULL THEN ?3 ELSE ?2 END
             ORDER BY rowid LIMIT ?4",
        )?;
        let rows: Vec<i64> = statement
            .query_map(
                params![
                    self.after,
                    rules.cutoff_ms,
                    rules.hold_limit_ms,
                    limit(size)
                ],
                |row| row.get(0),
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut delete = conn.prepare_cached("DELETE FROM incidents WHERE rowid = ?1")?;
        for rowid in &rows {
            self.after = *rowid;
            removed.add(Table::Incidents, delete.execute([rowid])? as u64);
        }
        Ok(Batch {
            kept: 0,
            done: rows.len() < size,
        })
    }
}

/// Sessions last active before the cutoff of which nothing is left.
#[derive(Default)]
struct SessionsStep {
    after: Option<Cursor>,
}

impl Step for SessionsStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let after = self.after.get_or_insert_with(first).clone();
        let rows = candidates(
            conn,
            "SELECT rowid, coalesce(last_event_ms, first_seen_ms), session_id, session_id
             FROM sessions
             WHERE coalesce(last_event_ms, first_seen_ms) < ?1
               AND coalesce(last_event_ms, first_seen_ms) >= ?2
               AND (coalesce(last_event_ms, first_seen_ms) > ?2 OR rowid > ?3)
             ORDER BY coalesce(last_event_ms, first_seen_ms), rowid LIMIT ?4",
            rules.cutoff_ms,
            &after,
            size,
        )?;
        let mut left = conn.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM events WHERE session_id = ?1)
                 OR EXISTS (SELECT 1 FROM deliveries WHERE session_id = ?1)
                 OR EXISTS (SELECT 1 FROM event_outcomes WHERE session_id = ?1)
                 OR EXISTS (SELECT 1 FROM recoveries WHERE session_id = ?1)",
        )?;
        let mut delete = conn.prepare_cached("DELETE FROM sessions WHERE rowid = ?1")?;
        let mut kept = 0;
        for row in &rows {
            self.after = Some((row.time.clone(), row.rowid));
            let removes = rules.removes(row.time_ms, row.session.as_deref(), held);
            if removes && !left.query_row([&row.extra], |found| found.get::<_, bool>(0))? {
                removed.add(Table::Sessions, delete.execute([row.rowid])? as u64);
            } else if !removes {
                kept += 1;
            }
        }
        Ok(Batch {
            kept,
            done: rows.len() < size,
        })
    }
}

/// A table of minute or hour counts kept by triggers, and its key.
#[derive(Clone, Copy)]
struct CountsTable {
    table: Table,
    unit: &'static str,
    unit_ms: i64,
    key: &'static str,
}

const DELIVERY_KEY: &str = "subscription_id, status, http_status_code, error_class";
const EVENT_KEY: &str = "subscription_id, state, event, http_status_code, error_class";

const COUNTS_TABLES: [CountsTable; 4] = [
    CountsTable {
        table: Table::DeliveryCounts,
        unit: "minute",
        unit_ms: MINUTE_MS,
        key: DELIVERY_KEY,
    },
    CountsTable {
        table: Table::DeliveryCountsHourly,
        unit: "hour",
        unit_ms: HOUR_MS,
        key: DELIVERY_KEY,
    },
    CountsTable {
        table: Table::EventCounts,
        unit: "minute",
        unit_ms: MINUTE_MS,
        key: EVENT_KEY,
    },
    CountsTable {
        table: Table::EventCountsHourly,
        unit: "hour",
        unit_ms: HOUR_MS,
        key: EVENT_KEY,
    },
];

/// Count rows of whole minutes or hours before the cutoff that nothing
/// counts any more (the triggers took their rows' counts back down to
/// zero), with the example session id they name.
struct ZeroCountsStep {
    counts: CountsTable,
}

impl Step for ZeroCountsStep {
    fn batch(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        _held: &HashSet<String>,
        size: usize,
        removed: &mut Removed,
    ) -> rusqlite::Result<Batch> {
        let CountsTable {
            table,
            unit,
            unit_ms,
            key,
        } = self.counts;
        let name = table.as_str();
        let sql = format!(
            "DELETE FROM {name} WHERE ({unit}, {key}) IN
                 (SELECT {unit}, {key} FROM {name} WHERE {unit} < ?1 AND count <= 0 LIMIT ?2)"
        );
        let first_kept = rules.cutoff_ms.div_euclid(unit_ms);
        let deleted = conn
            .prepare_cached(&sql)?
            .execute(params![first_kept, limit(size)])?;
        removed.add(table, deleted as u64);
        Ok(Batch {
            kept: 0,
            done: deleted < size,
        })
    }
}

#[cfg(test)]
mod tests;
