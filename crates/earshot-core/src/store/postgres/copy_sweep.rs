//! The sweep's tables in `earshot store copy` ([`super::copy`]): the
//! subscriptions, every attempt (`deliveries`), the outcome rows
//! (`event_outcomes`) and their minute and hour counts, read from the
//! SQLite source a batch at a time and written into PostgreSQL's tables of
//! schema version 6, both sides' SQL here.
//!
//! **The counts follow from the rows, by PostgreSQL's triggers**, and are
//! then *merged*, never added: a copied attempt or outcome row is counted in
//! by the trigger that counts every writer's rows (so the counts stay the
//! sum of the rows, whatever writes next: a replica's sweep, the
//! retention), and SQLite's count rows are merged in last with the
//! trigger's own rule for the newest time and its example session
//! (`last_ms`, `example_session_id`) and nothing added to `count`. The
//! merge is what makes the numbers SQLite's exactly: SQLite's `last_ms`
//! and example are those of the newest row *ever* counted in that bucket,
//! also one since counted out (an attempt that was `pending` and is now
//! `delivered`), which the rows copied cannot tell; and it brings SQLite's
//! buckets counted down to zero. Copying the counts as they are would
//! instead need the triggers off (`ALTER TABLE … DISABLE TRIGGER` stops
//! them for every session, a replica sweeping meanwhile too) and would add
//! to whatever a live replica had counted already.
//!
//! Cursors: the subscriptions and the attempts are read in rowid order
//! with the events' cursor rule ([`super::copy`]); the outcome rows
//! (`WITHOUT ROWID` since SQLite's version 9) and the count tables in key
//! order, the key of the last row copied kept as the cursor while a run is
//! in the table and cleared when it reaches the end, so the next run reads
//! them again: the counts must be merged after every row a run copies, and
//! an outcome row of a new session may sort before the key a finished run
//! stopped at.

use deadpool_postgres::Client;
use rusqlite::Connection;
use rusqlite::types::Value;
use tokio_postgres::types::ToSql;

use super::copy::CopyError;
use super::schema::{LOCK_CLASS, lock};
use crate::store::StoreError;

/// How a column is read from SQLite and sent to PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Int,
    /// SQLite's 0/1 as `boolean`.
    Bool,
}

impl Kind {
    pub(super) fn array_type(self) -> &'static str {
        match self {
            Kind::Text => "text[]",
            Kind::Int => "bigint[]",
            Kind::Bool => "boolean[]",
        }
    }
}

/// How a table's rows are followed from one run to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Order {
    /// By rowid, the first key column naming the row (kept between runs).
    Rowid,
    /// By the key (cleared when the table is read to its end).
    Key,
}

/// What a row the destination holds already gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OnConflict {
    /// Nothing: the destination's row stands.
    Keep,
    /// A count row: the newest time and its example merged, the count
    /// left to the triggers.
    MergeNewest,
    /// An incident: what the source knows more of (an acknowledgement,
    /// a resolution, a later failure) merged in ([`super::copy_team`]).
    MergeIncident,
    /// A row the destination numbers itself (a change, a recover run):
    /// keyed by the source and the source's id ([`super::copy_team`]).
    FromSource,
}

/// One of the sweep's tables as a copy sees it.
#[derive(Debug)]
pub(super) struct Spec {
    pub(super) table: &'static str,
    pub(super) columns: &'static [(&'static str, Kind)],
    pub(super) key: &'static [&'static str],
    /// The key a source's table is read along when it holds
    /// `session_no` (the outcome rows from SQLite's version 12 on, keyed
    /// by the session's number first); else `key`.
    pub(super) numbered_key: Option<&'static [&'static str]>,
    pub(super) order: Order,
    pub(super) on_conflict: OnConflict,
}

const DELIVERY_COUNT_COLUMNS: [(&str, Kind); 8] = [
    ("", Kind::Int),
    ("subscription_id", Kind::Text),
    ("status", Kind::Text),
    ("http_status_code", Kind::Int),
    ("error_class", Kind::Text),
    ("count", Kind::Int),
    ("last_ms", Kind::Int),
    ("example_session_id", Kind::Text),
];

/// The sweep's tables in the order they are copied: rows first, then the
/// counts merged over them.
pub(super) const SPECS: [Spec; 7] = [
    Spec {
        table: "subscriptions",
        columns: &[
            ("id", Kind::Text),
            ("url", Kind::Text),
            ("events", Kind::Text),
            ("enabled", Kind::Bool),
            ("secret_version", Kind::Int),
            ("seen_ms", Kind::Int),
            ("record", Kind::Text),
        ],
        key: &["id"],
        numbered_key: None,
        order: Order::Rowid,
        on_conflict: OnConflict::Keep,
    },
    Spec {
        table: "deliveries",
        columns: &[
            ("id", Kind::Text),
            ("subscription_id", Kind::Text),
            ("session_id", Kind::Text),
            ("status", Kind::Text),
            ("attempt_count", Kind::Int),
            ("http_status_code", Kind::Int),
            ("error", Kind::Text),
            ("created_ms", Kind::Int),
            ("next_retry_ms", Kind::Int),
            ("delivered_ms", Kind::Int),
            ("record", Kind::Text),
        ],
        key: &["id"],
        numbered_key: None,
        order: Order::Rowid,
        on_conflict: OnConflict::Keep,
    },
    Spec {
        table: "event_outcomes",
        columns: &[
            ("session_id", Kind::Text),
            ("subscription_id", Kind::Text),
            ("event_key", Kind::Text),
            ("event_id", Kind::Text),
            ("event", Kind::Text),
            ("occurred_ms", Kind::Int),
            ("state", Kind::Text),
            ("attempts", Kind::Int),
            ("http_status_code", Kind::Int),
            ("error_class", Kind::Text),
            ("first_failure_ms", Kind::Int),
            ("last_failure_ms", Kind::Int),
            ("settled_ms", Kind::Int),
        ],
        key: &["session_id", "subscription_id", "event_key"],
        numbered_key: Some(&["session_no", "subscription_id", "event_key"]),
        order: Order::Key,
        on_conflict: OnConflict::Keep,
    },
    counts_spec("delivery_counts", &DELIVERY_MINUTES, &DELIVERY_MINUTE_KEY),
    counts_spec(
        "delivery_counts_hourly",
        &DELIVERY_HOURS,
        &DELIVERY_HOUR_KEY,
    ),
    counts_spec("event_counts", &EVENT_MINUTES, &EVENT_MINUTE_KEY),
    counts_spec("event_counts_hourly", &EVENT_HOURS, &EVENT_HOUR_KEY),
];

/// A count table: merged, never added to (see the module's doc).
const fn counts_spec(
    table: &'static str,
    columns: &'static [(&'static str, Kind)],
    key: &'static [&'static str],
) -> Spec {
    Spec {
        table,
        columns,
        key,
        numbered_key: None,
        order: Order::Key,
        on_conflict: OnConflict::MergeNewest,
    }
}

const DELIVERY_MINUTE_KEY: [&str; 5] = [
    "minute",
    "subscription_id",
    "status",
    "http_status_code",
    "error_class",
];
const DELIVERY_HOUR_KEY: [&str; 5] = [
    "hour",
    "subscription_id",
    "status",
    "http_status_code",
    "error_class",
];
const EVENT_MINUTE_KEY: [&str; 6] = [
    "minute",
    "subscription_id",
    "state",
    "event",
    "http_status_code",
    "error_class",
];
const EVENT_HOUR_KEY: [&str; 6] = [
    "hour",
    "subscription_id",
    "state",
    "event",
    "http_status_code",
    "error_class",
];

const DELIVERY_MINUTES: [(&str, Kind); 8] = with_unit(DELIVERY_COUNT_COLUMNS, "minute");
const DELIVERY_HOURS: [(&str, Kind); 8] = with_unit(DELIVERY_COUNT_COLUMNS, "hour");
const EVENT_MINUTES: [(&str, Kind); 9] = with_unit(EVENT_COUNT_COLUMNS, "minute");
const EVENT_HOURS: [(&str, Kind); 9] = with_unit(EVENT_COUNT_COLUMNS, "hour");

const EVENT_COUNT_COLUMNS: [(&str, Kind); 9] = [
    ("", Kind::Int),
    ("subscription_id", Kind::Text),
    ("state", Kind::Text),
    ("event", Kind::Text),
    ("http_status_code", Kind::Int),
    ("error_class", Kind::Text),
    ("count", Kind::Int),
    ("last_ms", Kind::Int),
    ("example_session_id", Kind::Text),
];

/// `columns` with the time unit's name in its first slot.
const fn with_unit<const N: usize>(
    mut columns: [(&'static str, Kind); N],
    unit: &'static str,
) -> [(&'static str, Kind); N] {
    columns[0].0 = unit;
    columns
}

/// One column of a batch, as PostgreSQL's `unnest` takes it.
#[derive(Debug)]
pub(super) enum Column {
    Text(Vec<Option<String>>),
    Int(Vec<Option<i64>>),
    Bool(Vec<bool>),
}

impl Column {
    fn new(kind: Kind) -> Column {
        match kind {
            Kind::Text => Column::Text(Vec::new()),
            Kind::Int => Column::Int(Vec::new()),
            Kind::Bool => Column::Bool(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Text(values) => values.len(),
            Column::Int(values) => values.len(),
            Column::Bool(values) => values.len(),
        }
    }

    fn as_sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Column::Text(values) => values,
            Column::Int(values) => values,
            Column::Bool(values) => values,
        }
    }
}

/// A batch of one sweep table: its columns, and where the cursor moves.
#[derive(Debug)]
pub(super) struct SweepBatch {
    pub(super) columns: Vec<Column>,
    /// The last row's rowid (0 in key order) and key as the cursor keeps
    /// it: the first key column's text for rowid order, a JSON array of
    /// the key's values for key order.
    pub(super) last: Option<(i64, String)>,
    /// Where the next batch starts.
    pub(super) next: After,
}

impl SweepBatch {
    pub(super) fn len(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }
}

/// Where a run starts in a table.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum After {
    Start,
    Rowid(i64),
    Key(Vec<Value>),
}

/// The row-value placeholders of a key of `count` columns: `(?1, ?2, ?3)`.
fn placeholders(count: usize) -> String {
    let params: Vec<String> = (1..=count).map(|n| format!("?{n}")).collect();
    format!("({})", params.join(", "))
}

impl Spec {
    fn select_list(&self) -> String {
        self.columns
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The source's select list: a column an older store's table lacks
    /// (`incidents.resolved_reason` before SQLite's version 5) read as
    /// NULL.
    fn source_list(&self, conn: &Connection) -> Result<String, StoreError> {
        let mut statement = conn.prepare(&format!("PRAGMA table_info({})", self.table))?;
        let held: Vec<String> = statement
            .query_map([], |row| row.get(1))?
            .collect::<Result<_, _>>()?;
        Ok(self
            .columns
            .iter()
            .map(|(name, _)| {
                if held.iter().any(|column| column == name) {
                    (*name).to_owned()
                } else {
                    format!("NULL AS {name}")
                }
            })
            .collect::<Vec<_>>()
            .join(", "))
    }

    fn key_list(&self) -> String {
        self.key.join(", ")
    }

    /// The key the source's table is read along ([`Spec::numbered_key`]).
    fn source_key(&self, conn: &Connection) -> Result<&'static [&'static str], StoreError> {
        let Some(numbered) = self.numbered_key else {
            return Ok(self.key);
        };
        let holds: bool = conn.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = 'session_no'",
            [self.table],
            |row| row.get(0),
        )?;
        Ok(if holds { numbered } else { self.key })
    }

    /// At most `limit` rows after `after`, in this table's order.
    pub(super) fn read(
        &self,
        conn: &Connection,
        after: &After,
        limit: usize,
    ) -> Result<SweepBatch, StoreError> {
        let mut columns: Vec<Column> = self.columns.iter().map(|(_, k)| Column::new(*k)).collect();
        if !has_table(conn, self.table)? {
            return Ok(SweepBatch {
                columns,
                last: None,
                next: after.clone(),
            });
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let select = self.source_list(conn)?;
        let key = self.source_key(conn)?;
        let keys = key.join(", ");
        let (sql, mut params): (String, Vec<Value>) = match (self.order, after) {
            (Order::Rowid, after) => (
                format!(
                    "SELECT {}, rowid FROM {} WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
                    select, self.table
                ),
                vec![Value::Integer(match after {
                    After::Rowid(rowid) => *rowid,
                    _ => 0,
                })],
            ),
            (Order::Key, After::Key(after)) => (
                format!(
                    "SELECT {select}, {keys} FROM {} WHERE ({keys}) > {} ORDER BY {keys} LIMIT ?{}",
                    self.table,
                    placeholders(key.len()),
                    key.len() + 1
                ),
                after.clone(),
            ),
            (Order::Key, _) => (
                format!(
                    "SELECT {select}, {keys} FROM {} ORDER BY {keys} LIMIT ?1",
                    self.table
                ),
                Vec::new(),
            ),
        };
        params.push(Value::Integer(limit));
        let mut statement = conn.prepare(&sql)?;
        let mut rows = statement.query(rusqlite::params_from_iter(params))?;
        let mut last = None;
        let mut next = after.clone();
        while let Some(row) = rows.next()? {
            for (index, column) in columns.iter_mut().enumerate() {
                match column {
                    Column::Text(values) => values.push(row.get(index)?),
                    Column::Int(values) => values.push(row.get(index)?),
                    Column::Bool(values) => values.push(row.get::<_, i64>(index)? != 0),
                }
            }
            last = Some(match self.order {
                Order::Rowid => {
                    let rowid: i64 = row.get(self.columns.len())?;
                    next = After::Rowid(rowid);
                    (rowid, key_text(row.get(0)?))
                }
                Order::Key => {
                    // The key's columns follow the copied ones.
                    let key = (0..key.len())
                        .map(|index| row.get::<_, Value>(self.columns.len() + index))
                        .collect::<Result<Vec<_>, _>>()?;
                    let kept = key.iter().cloned().map(json_value).collect();
                    next = After::Key(key);
                    (0, serde_json::Value::Array(kept).to_string())
                }
            });
        }
        Ok(SweepBatch {
            columns,
            last,
            next,
        })
    }

    /// Rows at or before the cursor: copied by earlier runs.
    pub(super) fn count_through(
        &self,
        conn: &Connection,
        after: &After,
    ) -> Result<u64, StoreError> {
        if !has_table(conn, self.table)? {
            return Ok(0);
        }
        let (sql, params) = match after {
            After::Start => return Ok(0),
            After::Rowid(rowid) => (
                format!("SELECT count(*) FROM {} WHERE rowid <= ?1", self.table),
                vec![Value::Integer(*rowid)],
            ),
            After::Key(after) => {
                let key = self.source_key(conn)?;
                (
                    format!(
                        "SELECT count(*) FROM {} WHERE ({}) <= {}",
                        self.table,
                        key.join(", "),
                        placeholders(key.len())
                    ),
                    after.clone(),
                )
            }
        };
        let rows: i64 =
            conn.query_row(&sql, rusqlite::params_from_iter(params), |row| row.get(0))?;
        Ok(rows.max(0) as u64)
    }

    /// Every row of the table (0 when an older store has no such table).
    pub(super) fn count(&self, conn: &Connection) -> Result<u64, StoreError> {
        if !has_table(conn, self.table)? {
            return Ok(0);
        }
        let rows: i64 =
            conn.query_row(&format!("SELECT count(*) FROM {}", self.table), [], |row| {
                row.get(0)
            })?;
        Ok(rows.max(0) as u64)
    }

    /// Where an earlier run's cursor `(rowid, key)` lets this run start:
    /// after it when the source still holds that row there (rowid order),
    /// after that key (key order); `None` when it cannot be trusted.
    pub(super) fn resume(
        &self,
        conn: &Connection,
        rowid: i64,
        key: &str,
    ) -> Result<Option<After>, StoreError> {
        match self.order {
            Order::Rowid => {
                if !has_table(conn, self.table)? {
                    return Ok(None);
                }
                let found: Option<Value> = rusqlite::OptionalExtension::optional(conn.query_row(
                    &format!(
                        "SELECT {} FROM {} WHERE rowid = ?1",
                        self.key[0], self.table
                    ),
                    [rowid],
                    |row| row.get(0),
                ))?;
                let found = found.map(key_text);
                Ok((found.as_deref() == Some(key)).then_some(After::Rowid(rowid)))
            }
            Order::Key => {
                let parsed: Option<Vec<serde_json::Value>> = serde_json::from_str(key).ok();
                let source_key = self.source_key(conn)?;
                // A cursor kept along the other key (the source upgraded
                // between runs) is not trusted: a number is not an id.
                let numbered = source_key.first() == Some(&"session_no");
                Ok(parsed
                    .filter(|values| values.len() == source_key.len())
                    .filter(|values| {
                        self.numbered_key.is_none()
                            || values.first().is_some_and(serde_json::Value::is_number) == numbered
                    })
                    .and_then(|values| values.into_iter().map(sqlite_value).collect())
                    .map(After::Key))
            }
        }
    }

    /// The destination's statement for a batch: `INSERT … SELECT FROM
    /// unnest(…)` with this table's conflict rule; returns `xmax = 0` per
    /// row written (true: new).
    fn insert_sql(&self) -> String {
        if matches!(
            self.on_conflict,
            OnConflict::MergeIncident | OnConflict::FromSource
        ) {
            return super::copy_team::insert_sql(self);
        }
        let names = self.select_list();
        let arrays: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(index, (_, kind))| format!("${}::{}", index + 1, kind.array_type()))
            .collect();
        let action = match self.on_conflict {
            OnConflict::Keep | OnConflict::MergeIncident | OnConflict::FromSource => {
                "DO NOTHING".to_owned()
            }
            // The triggers' rule for the newest and its example, with
            // nothing added: written only when it changes something.
            OnConflict::MergeNewest => "DO UPDATE SET
                example_session_id = excluded.example_session_id,
                last_ms = excluded.last_ms
            WHERE excluded.last_ms > c.last_ms
               OR (excluded.last_ms = c.last_ms
                   AND excluded.example_session_id <> c.example_session_id)"
                .to_owned(),
        };
        let values = match self.on_conflict {
            OnConflict::Keep | OnConflict::MergeIncident | OnConflict::FromSource => "*".to_owned(),
            // A bucket the destination lacks comes with no count: the rows
            // counted in it are the triggers'.
            OnConflict::MergeNewest => self
                .columns
                .iter()
                .map(|(name, _)| {
                    if *name == "count" {
                        "0".to_owned()
                    } else {
                        format!("u.{name}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
        };
        format!(
            "INSERT INTO earshot.{table} AS c ({names})
             SELECT {values} FROM unnest({arrays}) AS u ({names})
             ON CONFLICT ({key}) {action}
             RETURNING xmax = 0",
            table = self.table,
            arrays = arrays.join(", "),
            key = self.key_list(),
        )
    }

    /// Writes `batch` and moves (or, at the table's end in key order,
    /// clears) the cursor, in one transaction under the copy lock; the
    /// rows new to the destination.
    pub(super) async fn write(
        &self,
        client: &mut Client,
        source: &str,
        batch: &SweepBatch,
        last_batch: bool,
    ) -> Result<u64, CopyError> {
        let tx = client.transaction().await?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&LOCK_CLASS, &lock::COPY],
        )
        .await?;
        crate::store::sweep_store::take_turn(&tx).await?;
        let statement = tx.prepare_cached(&self.insert_sql()).await?;
        let mut params: Vec<&(dyn ToSql + Sync)> =
            batch.columns.iter().map(Column::as_sql).collect();
        if self.on_conflict == OnConflict::FromSource {
            params.push(&source);
        }
        let mut new = 0;
        for row in tx.query(&statement, &params).await? {
            if row.try_get::<_, bool>(0)? {
                new += 1;
            }
        }
        match (&batch.last, self.order, last_batch) {
            (_, Order::Key, true) => {
                tx.execute(super::copy::CLEAR_CURSOR, &[&source, &self.table])
                    .await?;
            }
            (Some((rowid, key)), _, _) => {
                tx.execute(
                    super::copy::MOVE_CURSOR,
                    &[&source, &self.table, rowid, key],
                )
                .await?;
            }
            (None, _, _) => {}
        }
        tx.commit().await?;
        Ok(new)
    }
}

fn has_table(conn: &Connection, table: &str) -> Result<bool, StoreError> {
    Ok(conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |row| row.get::<_, i64>(0),
    )? > 0)
}

/// A rowid table's key as its cursor keeps it: the text, or an integer id
/// in decimal.
fn key_text(value: Value) -> String {
    match value {
        Value::Text(text) => text,
        Value::Integer(n) => n.to_string(),
        Value::Real(x) => x.to_string(),
        Value::Null | Value::Blob(_) => String::new(),
    }
}

/// A key value as the cursor keeps it.
fn json_value(value: Value) -> serde_json::Value {
    match value {
        Value::Integer(n) => serde_json::Value::from(n),
        Value::Text(text) => serde_json::Value::String(text),
        Value::Real(x) => serde_json::Value::from(x),
        Value::Null | Value::Blob(_) => serde_json::Value::Null,
    }
}

/// A kept key value bound back into SQLite; `None` for what no key holds.
fn sqlite_value(value: serde_json::Value) -> Option<Value> {
    match value {
        serde_json::Value::String(text) => Some(Value::Text(text)),
        serde_json::Value::Number(n) => n.as_i64().map(Value::Integer),
        _ => None,
    }
}

/// Clears a finished key-order table's cursor outside a batch (its last
/// batch was exactly full, so the run found the end on the next read).
pub(super) async fn clear_cursor(
    client: &Client,
    source: &str,
    spec: &Spec,
) -> Result<(), CopyError> {
    if spec.order == Order::Key {
        client
            .execute(super::copy::CLEAR_CURSOR, &[&source, &spec.table])
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_rows_are_read_along_the_sources_own_key_and_an_old_cursor_is_not_trusted() {
        let Some(outcomes) = SPECS.iter().find(|spec| spec.table == "event_outcomes") else {
            panic!("the outcome rows are copied");
        };
        let numbered = Connection::open_in_memory().expect("a source");
        numbered
            .execute_batch(
                "CREATE TABLE event_outcomes (session_no INTEGER, session_id TEXT,
                     subscription_id TEXT, event_key TEXT,
                     PRIMARY KEY (session_no, subscription_id, event_key)) WITHOUT ROWID;
                 INSERT INTO event_outcomes VALUES (2, 'call_a', 'sub_1', 'e1'),
                     (1, 'call_b', 'sub_1', 'e2'), (3, 'call_0', 'sub_1', 'e3');",
            )
            .expect("version 12's rows");
        let by_id = Connection::open_in_memory().expect("a source");
        by_id
            .execute_batch(
                "CREATE TABLE event_outcomes (session_id TEXT, subscription_id TEXT,
                     event_key TEXT, PRIMARY KEY (session_id, subscription_id, event_key));",
            )
            .expect("version 11's rows");
        let id_cursor = r#"["call_b","sub_1","e2"]"#;
        let number_cursor = r#"[1,"sub_1","e2"]"#;
        assert!(matches!(
            outcomes.resume(&numbered, 0, number_cursor),
            Ok(Some(After::Key(_)))
        ));
        assert!(matches!(outcomes.resume(&numbered, 0, id_cursor), Ok(None)));
        assert!(matches!(
            outcomes.resume(&by_id, 0, id_cursor),
            Ok(Some(After::Key(_)))
        ));
        assert!(matches!(
            outcomes.resume(&by_id, 0, number_cursor),
            Ok(None)
        ));
        // After session 1's row: the rows of sessions 2 and 3, in number
        // order (not by id), the cursor at the last.
        let Ok(Some(after)) = outcomes.resume(&numbered, 0, number_cursor) else {
            panic!("resumed");
        };
        let batch = outcomes.read(&numbered, &after, 10).expect("read");
        let Column::Text(sessions) = &batch.columns[0] else {
            panic!("the session ids first");
        };
        assert_eq!(
            sessions,
            &[Some("call_a".to_owned()), Some("call_0".to_owned())]
        );
        assert_eq!(
            batch.last.map(|(_, key)| key).as_deref(),
            Some(r#"[3,"sub_1","e3"]"#)
        );
    }

    #[test]
    fn a_count_table_is_merged_without_adding_to_its_count() {
        let sql = SPECS[3].insert_sql();
        assert!(sql.contains("SELECT u.minute, u.subscription_id"), "{sql}");
        assert!(sql.contains(", 0, u.last_ms"), "{sql}");
        assert!(!sql.contains("count ="), "{sql}");
        assert!(
            sql.contains("ON CONFLICT (minute, subscription_id, status"),
            "{sql}"
        );
        let rows = SPECS[1].insert_sql();
        assert!(rows.contains("ON CONFLICT (id) DO NOTHING"), "{rows}");
        assert!(rows.contains("$11::text[]"), "{rows}");
    }

    #[test]
    fn every_count_table_names_its_unit_first() {
        for spec in &SPECS[3..] {
            assert_eq!(spec.columns[0].0, spec.key[0], "{}", spec.table);
            assert!(spec.columns.iter().any(|(name, _)| *name == "count"));
        }
    }
}
