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
//! about [`TARGET_HOLD`] and followed by a pause twice as long, in which it
//! also checkpoints what it wrote, so a running observer keeps filing
//! events (and its commits stay free of the prune's checkpoints) while it
//! runs. Candidates are read before the lock is taken. Deleted content is
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
pub const TARGET_HOLD: Duration = Duration::from_millis(4);
/// The pause after a batch, per time it held the lock.
const PAUSE_PER_HOLD: u32 = 2;
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
        Box::new(PlainStep::unfiled()),
        Box::new(PlainStep::deliveries()),
        Box::new(UnobservedOutcomesStep::default()),
        Box::new(RecoveriesStep::default()),
        Box::new(PlainStep::changes()),
        Box::new(IncidentsStep::default()),
        Box::new(SessionsStep::default()),
    ];
    for counts in COUNTS_TABLES {
        steps.push(Box::new(ZeroCountsStep { counts }));
    }
    // The prune's own checkpoints run in its pauses (below), not inside
    // its commits, where they would count as holding the lock.
    store.conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    let outcome = run_steps(
        store,
        &mut steps,
        &rules,
        &held,
        stop,
        progress,
        &mut report,
    );
    store
        .conn
        .pragma_update(None, "wal_autocheckpoint", DEFAULT_AUTOCHECKPOINT)?;
    outcome?;
    checkpoint(&store.conn);
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Batches between two of the prune's checkpoints: often enough that the
/// log stays under SQLite's 1,000-page threshold, at which the observer's
/// own commits would checkpoint the prune's pages (with an fsync) while
/// events wait.
const CHECKPOINT_EVERY: u64 = 4;
/// SQLite's default `wal_autocheckpoint`, in pages.
const DEFAULT_AUTOCHECKPOINT: i64 = 1000;

/// Runs every step to its end (or to `stop`), batch by batch: candidates
/// read without the lock, removed in one immediate transaction, then a
/// pause [`PAUSE_PER_HOLD`] times as long as the lock was held, which
/// includes a checkpoint every [`CHECKPOINT_EVERY`] batches.
fn run_steps(
    store: &mut Store,
    steps: &mut [Box<dyn Step>],
    rules: &Rules,
    held: &HashSet<String>,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Removed),
    report: &mut PruneReport,
) -> Result<(), StoreError> {
    let mut size = FIRST_BATCH;
    for step in steps {
        loop {
            if stop.load(Ordering::Relaxed) {
                report.stopped = true;
                return Ok(());
            }
            let rows = step.select(&store.conn, rules, size)?;
            let done = rows.len() < size;
            let (doomed, kept): (Vec<&Candidate>, Vec<&Candidate>) = rows.iter().partition(|row| {
                !step.holds() || rules.removes(row.time_ms, row.session.as_deref(), held)
            });
            report.kept_rows += kept.len() as u64;
            if !doomed.is_empty() {
                let tx = store
                    .conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)?;
                let locked = Instant::now();
                for row in doomed {
                    step.remove(&tx, row, rules, &mut report.removed)?;
                }
                tx.commit()?;
                let hold = locked.elapsed();
                report.batches += 1;
                report.longest_hold = report.longest_hold.max(hold);
                // A checkpoint that takes long is a disk behind with its
                // writes (the observer's among them): wait as long again
                // before adding more.
                let mut backlog = Duration::ZERO;
                if report.batches.is_multiple_of(CHECKPOINT_EVERY) {
                    let started = Instant::now();
                    checkpoint(&store.conn);
                    backlog = started.elapsed();
                }
                size = next_size(size, hold);
                std::thread::sleep((hold * PAUSE_PER_HOLD).max(LEAST_PAUSE) + backlog);
                progress(&report.removed);
            }
            if done {
                break;
            }
        }
    }
    Ok(())
}

/// Copies what is in the write-ahead log into the main file as far as no
/// reader is in the way; never waits for anyone.
fn checkpoint(conn: &Connection) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
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

/// A row a step may remove, as read outside the write lock: the values
/// its removal binds, its time and session (for the hold), and the
/// `event_id` of an event (its outcome rows go with it).
struct Candidate {
    key: Vec<Value>,
    time_ms: i64,
    session: Option<String>,
    event_id: Option<Value>,
}

/// One table's part of a prune. [`select`](Step::select) reads the next
/// rows older than the cutoff after a cursor the step keeps, outside the
/// write lock (so reading cold pages never holds up the observer);
/// [`remove`](Step::remove) deletes one of them inside the batch's
/// transaction, checking again what may have changed since it was read.
trait Step {
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

/// The rows `sql` selects (`rowid, time, session, event_id` after a
/// `(time, rowid)` cursor, which it moves past them). The cursor is written
/// `time >= ?2 AND (time > ?2 OR rowid > ?3)` rather than as a row value,
/// which SQLite does not seek with on an expression index: so every batch
/// starts in the index where the last one stopped.
fn select_after(
    conn: &Connection,
    sql: &str,
    cutoff_ms: i64,
    cursor: &mut Option<Cursor>,
    size: usize,
) -> rusqlite::Result<Vec<Candidate>> {
    let after = cursor.get_or_insert_with(first).clone();
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map(params![cutoff_ms, after.0, after.1, limit(size)], |row| {
        let rowid: i64 = row.get(0)?;
        let time: Value = row.get(1)?;
        Ok((
            (time.clone(), rowid),
            Candidate {
                key: vec![Value::Integer(rowid)],
                time_ms: millis(ValueRef::from(&time)),
                session: text(row.get_ref(2)?),
                event_id: Some(row.get(3)?),
            },
        ))
    })?;
    let mut selected = Vec::new();
    for row in rows {
        let (at, candidate) = row?;
        *cursor = Some(at);
        selected.push(candidate);
    }
    Ok(selected)
}

/// Runs `sql` with the candidate's key; rows deleted.
fn delete(conn: &Connection, sql: &str, row: &Candidate) -> rusqlite::Result<u64> {
    let deleted = conn
        .prepare_cached(sql)?
        .execute(rusqlite::params_from_iter(&row.key))?;
    Ok(deleted as u64)
}

/// Events by when they were received, each with its outcome rows.
#[derive(Default)]
struct EventsStep {
    after: Option<Cursor>,
}

impl Step for EventsStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        select_after(
            conn,
            "SELECT rowid, received_ms, session_id, event_id FROM events
             WHERE received_ms < ?1 AND received_ms >= ?2 AND (received_ms > ?2 OR rowid > ?3)
             ORDER BY received_ms, rowid LIMIT ?4",
            rules.cutoff_ms,
            &mut self.after,
            size,
        )
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        _rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        let events = delete(conn, "DELETE FROM events WHERE rowid = ?1", row)?;
        removed.add(Table::Events, events);
        if events > 0
            && let Some(event_id) = &row.event_id
        {
            let outcomes = conn
                .prepare_cached("DELETE FROM event_outcomes WHERE event_id = ?1")?
                .execute([event_id])?;
            removed.add(Table::EventOutcomes, outcomes as u64);
        }
        Ok(())
    }
}

/// A table whose old rows simply go: read after a `(time, rowid)` cursor
/// by `select` ([`select_after`]'s shape) and removed by `delete` with
/// the rowid, counted as `table`.
struct PlainStep {
    select: &'static str,
    delete: &'static str,
    table: Table,
    /// Whether a held session keeps these rows (see [`Rules`]).
    held: bool,
    after: Option<Cursor>,
}

impl PlainStep {
    /// Deliveries `events` could not file, by when they were received.
    fn unfiled() -> PlainStep {
        PlainStep {
            select: "SELECT id, received_ms, session_id, NULL FROM unfiled_events
                 WHERE received_ms < ?1 AND received_ms >= ?2 AND (received_ms > ?2 OR id > ?3)
                 ORDER BY received_ms, id LIMIT ?4",
            delete: "DELETE FROM unfiled_events WHERE id = ?1",
            table: Table::UnfiledEvents,
            held: false,
            after: None,
        }
    }

    /// Delivery attempts, by when they were made.
    fn deliveries() -> PlainStep {
        PlainStep {
            select: "SELECT rowid, created_ms, session_id, NULL FROM deliveries
                 WHERE created_ms < ?1 AND created_ms >= ?2 AND (created_ms > ?2 OR rowid > ?3)
                 ORDER BY created_ms, rowid LIMIT ?4",
            delete: "DELETE FROM deliveries WHERE rowid = ?1",
            table: Table::Deliveries,
            held: true,
            after: None,
        }
    }

    /// The log of what earshot changed on the platform, by when.
    fn changes() -> PlainStep {
        PlainStep {
            select: "SELECT id, at_ms, NULL, NULL FROM changes
                 WHERE at_ms < ?1 AND at_ms >= ?2 AND (at_ms > ?2 OR id > ?3)
                 ORDER BY at_ms, id LIMIT ?4",
            delete: "DELETE FROM changes WHERE id = ?1",
            table: Table::Changes,
            held: false,
            after: None,
        }
    }
}

impl Step for PlainStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        select_after(conn, self.select, rules.cutoff_ms, &mut self.after, size)
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        _rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        let rows = delete(conn, self.delete, row)?;
        removed.add(self.table, rows);
        Ok(())
    }

    fn holds(&self) -> bool {
        self.held
    }
}

/// Event rows of events the observer never received (their time is their
/// first attempt's); the others went with their event.
#[derive(Default)]
struct UnobservedOutcomesStep {
    after: Option<(Value, Value, Value)>,
}

impl Step for UnobservedOutcomesStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
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
        let rows = statement.query_map(
            params![rules.cutoff_ms, after.0, after.1, after.2, limit(size)],
            |row| {
                let (subscription, key): (Value, Value) = (row.get(0)?, row.get(1)?);
                let occurred: Value = row.get(3)?;
                Ok((
                    (occurred.clone(), subscription.clone(), key.clone()),
                    Candidate {
                        key: vec![subscription, key],
                        time_ms: millis(ValueRef::from(&occurred)),
                        session: text(row.get_ref(2)?),
                        event_id: None,
                    },
                ))
            },
        )?;
        let mut selected = Vec::new();
        for row in rows {
            let (at, candidate) = row?;
            self.after = Some(at);
            selected.push(candidate);
        }
        Ok(selected)
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
             WHERE subscription_id = ?1 AND event_key = ?2 AND event_id IS NULL",
            row,
        )?;
        removed.add(Table::EventOutcomes, rows);
        Ok(())
    }
}

/// Recover's log, by when each send started.
#[derive(Default)]
struct RecoveriesStep {
    after: i64,
}

impl Step for RecoveriesStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        let mut statement = conn.prepare_cached(
            "SELECT id, started_ms, session_id FROM recoveries
             WHERE id > ?1 AND started_ms < ?2 ORDER BY id LIMIT ?3",
        )?;
        let rows =
            statement.query_map(params![self.after, rules.cutoff_ms, limit(size)], |row| {
                let id: i64 = row.get(0)?;
                Ok(Candidate {
                    key: vec![Value::Integer(id)],
                    time_ms: millis(row.get_ref(1)?),
                    session: text(row.get_ref(2)?),
                    event_id: None,
                })
            })?;
        let mut selected = Vec::new();
        for row in rows {
            let candidate = row?;
            if let Some(Value::Integer(id)) = candidate.key.first() {
                self.after = *id;
            }
            selected.push(candidate);
        }
        Ok(selected)
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        _rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        let rows = delete(conn, "DELETE FROM recoveries WHERE id = ?1", row)?;
        removed.add(Table::Recoveries, rows);
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
            |row| row.get::<_, i64>(0),
        )?;
        let mut selected = Vec::new();
        for rowid in rows {
            let rowid = rowid?;
            self.after = rowid;
            selected.push(Candidate {
                key: vec![Value::Integer(rowid)],
                time_ms: i64::MIN,
                session: None,
                event_id: None,
            });
        }
        Ok(selected)
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

/// Sessions last active before the cutoff of which nothing is left.
#[derive(Default)]
struct SessionsStep {
    after: Option<Cursor>,
}

impl Step for SessionsStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        select_after(
            conn,
            "SELECT rowid, coalesce(last_event_ms, first_seen_ms), session_id, NULL
             FROM sessions
             WHERE coalesce(last_event_ms, first_seen_ms) < ?1
               AND coalesce(last_event_ms, first_seen_ms) >= ?2
               AND (coalesce(last_event_ms, first_seen_ms) > ?2 OR rowid > ?3)
             ORDER BY coalesce(last_event_ms, first_seen_ms), rowid LIMIT ?4",
            rules.cutoff_ms,
            &mut self.after,
            size,
        )
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        // Checked again under the lock: an event may have come since.
        let rows = conn
            .prepare_cached(
                "DELETE FROM sessions
                 WHERE rowid = ?1 AND coalesce(last_event_ms, first_seen_ms) < ?2
                   AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session_id = sessions.session_id)
                   AND NOT EXISTS (SELECT 1 FROM deliveries d
                                   WHERE d.session_id = sessions.session_id)
                   AND NOT EXISTS (SELECT 1 FROM event_outcomes o
                                   WHERE o.session_id = sessions.session_id)
                   AND NOT EXISTS (SELECT 1 FROM recoveries r
                                   WHERE r.session_id = sessions.session_id)",
            )?
            .execute(params![row.key[0], rules.cutoff_ms])?;
        removed.add(Table::Sessions, rows as u64);
        Ok(())
    }
}

/// A table of minute or hour counts kept by triggers, and its key.
#[derive(Clone, Copy)]
struct CountsTable {
    table: Table,
    unit: &'static str,
    unit_ms: i64,
    key: [&'static str; 5],
}

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

/// The key of a count row after its time unit (an unused slot is empty).
const DELIVERY_KEY: [&str; 5] = [
    "subscription_id",
    "status",
    "http_status_code",
    "error_class",
    "",
];
const EVENT_KEY: [&str; 5] = [
    "subscription_id",
    "state",
    "event",
    "http_status_code",
    "error_class",
];

impl CountsTable {
    /// `minute, subscription_id, …`.
    fn columns(&self) -> Vec<&'static str> {
        std::iter::once(self.unit)
            .chain(self.key.iter().copied().filter(|column| !column.is_empty()))
            .collect()
    }
}

/// Count rows of whole minutes or hours before the cutoff that nothing
/// counts any more (the triggers took their rows' counts back down to
/// zero), with the example session id they name.
struct ZeroCountsStep {
    counts: CountsTable,
}

impl Step for ZeroCountsStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        let columns = self.counts.columns();
        let sql = format!(
            "SELECT {} FROM {} WHERE {} < ?1 AND count <= 0 LIMIT ?2",
            columns.join(", "),
            self.counts.table.as_str(),
            self.counts.unit
        );
        let first_kept = rules.cutoff_ms.div_euclid(self.counts.unit_ms);
        let mut statement = conn.prepare_cached(&sql)?;
        let rows = statement.query_map(params![first_kept, limit(size)], |row| {
            let key = (0..columns.len())
                .map(|index| row.get::<_, Value>(index))
                .collect::<rusqlite::Result<_>>()?;
            Ok(Candidate {
                key,
                time_ms: i64::MIN,
                session: None,
                event_id: None,
            })
        })?;
        rows.collect()
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        _rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        let matches: Vec<String> = self
            .counts
            .columns()
            .iter()
            .enumerate()
            .map(|(index, column)| format!("{column} = ?{}", index + 1))
            .collect();
        let sql = format!(
            "DELETE FROM {} WHERE {} AND count <= 0",
            self.counts.table.as_str(),
            matches.join(" AND ")
        );
        removed.add(self.counts.table, delete(conn, &sql, row)?);
        Ok(())
    }

    fn holds(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
