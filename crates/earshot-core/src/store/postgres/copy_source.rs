//! The SQLite side of `earshot store copy` ([`super::copy`]): the source
//! store opened read-only and judged as every command judges a store, its
//! rows read in rowid order a batch at a time, column by column (as the
//! destination's `unnest` takes them), and the tables it holds that
//! PostgreSQL does not yet, with their row counts. Nothing here writes.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::{StoreError, check};

/// A table a copy moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyTable {
    Events,
    Sessions,
    Unfiled,
}

impl CopyTable {
    /// In the order they are copied: events first, so a session is
    /// copied after the events that name it.
    pub const ALL: [CopyTable; 3] = [CopyTable::Events, CopyTable::Sessions, CopyTable::Unfiled];

    /// The table's name, the same on both backends.
    pub fn name(self) -> &'static str {
        match self {
            CopyTable::Events => "events",
            CopyTable::Sessions => "sessions",
            CopyTable::Unfiled => "unfiled_events",
        }
    }

    /// The column whose value, with the rowid, names a row for the cursor.
    fn key_column(self) -> &'static str {
        match self {
            CopyTable::Events => "event_id",
            CopyTable::Sessions => "session_id",
            CopyTable::Unfiled => "coalesce(event_id, '') || '@' || received_ms",
        }
    }

    /// The rowid: `unfiled_events.id` is an alias of it; the others are
    /// keyed by text and have one of their own.
    fn rowid_column(self) -> &'static str {
        match self {
            CopyTable::Unfiled => "id",
            _ => "rowid",
        }
    }
}

/// A table of the source a copy leaves behind, and its rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotCopied {
    pub table: String,
    pub rows: u64,
}

/// Tables that are not data of their own: indexes of `events` (the words
/// index and its shadow tables, hourly counts, the list's change counter),
/// rebuilt from the rows on the destination's side when it has them.
const DERIVED: [&str; 3] = ["events_received_hourly", "list_changes", "event_words"];

/// The source store, read-only.
pub struct CopySource {
    conn: Connection,
    identity: String,
}

/// The rowid and key of a batch's last row: where the cursor moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Last {
    pub rowid: i64,
    pub key: String,
}

/// Rows read from the source, column by column.
#[derive(Debug)]
pub struct Batch {
    pub rows: Rows,
    /// `None` when the table had no more rows.
    pub last: Option<Last>,
}

impl Batch {
    pub fn len(&self) -> usize {
        match &self.rows {
            Rows::Events(rows) => rows.event_id.len(),
            Rows::Sessions(rows) => rows.session_id.len(),
            Rows::Unfiled(rows) => rows.received_ms.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug)]
pub enum Rows {
    Events(EventRows),
    Sessions(SessionRows),
    Unfiled(UnfiledRows),
}

#[derive(Debug, Default)]
pub struct EventRows {
    pub event_id: Vec<String>,
    pub event: Vec<String>,
    pub session_id: Vec<String>,
    pub occurred_ms: Vec<i64>,
    pub received_ms: Vec<i64>,
    pub delivery_id: Vec<Option<String>>,
    pub headers: Vec<String>,
    pub body: Vec<Vec<u8>>,
}

#[derive(Debug, Default)]
pub struct SessionRows {
    pub session_id: Vec<String>,
    pub kind: Vec<Option<String>>,
    pub source: Vec<String>,
    pub first_seen_ms: Vec<i64>,
    pub last_event_ms: Vec<Option<i64>>,
    pub last_swept_ms: Vec<Option<i64>>,
    pub unsettled: Vec<bool>,
}

#[derive(Debug, Default)]
pub struct UnfiledRows {
    pub received_ms: Vec<i64>,
    pub event_id: Vec<Option<String>>,
    pub event: Vec<Option<String>>,
    pub session_id: Vec<Option<String>>,
    pub occurred_ms: Vec<Option<i64>>,
    pub delivery_id: Vec<Option<String>>,
    pub headers: Vec<String>,
    pub body: Vec<Vec<u8>>,
    pub reason: Vec<String>,
}

impl CopySource {
    /// Opens the store at `path` read-only, refusing what every command
    /// refuses (not a regular file, missing, another program's file, a
    /// newer schema; a missing file fails to open). `identity` names it for the cursor: this host's name
    /// and the file's canonical path.
    pub fn open(path: &Path) -> Result<CopySource, StoreError> {
        check::regular_or_missing(path)?;
        let conn = check::read_only(path)?;
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
        Ok(CopySource {
            conn,
            identity: format!("{}:{}", super::host_name(), canonical.display()),
        })
    }

    /// The source's connection (read only), for the sweep's tables
    /// ([`super::copy_sweep`]).
    pub(super) fn connection(&self) -> &Connection {
        &self.conn
    }

    /// What the destination's cursor is keyed by.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn has_table(&self, table: &str) -> Result<bool, StoreError> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |row| row.get::<_, i64>(0),
        )? > 0)
    }

    /// The rows of `table` (0 when an older store has no such table).
    pub fn count(&self, table: CopyTable) -> Result<u64, StoreError> {
        self.count_through(table, i64::MAX)
    }

    /// The rows of `table` at or before `rowid`.
    pub fn count_through(&self, table: CopyTable, rowid: i64) -> Result<u64, StoreError> {
        if !self.has_table(table.name())? {
            return Ok(0);
        }
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {} <= ?1",
            table.name(),
            table.rowid_column()
        );
        let rows: i64 = self.conn.query_row(&sql, [rowid], |row| row.get(0))?;
        Ok(rows.max(0) as u64)
    }

    /// Whether the row at `rowid` of `table` is still the one named `key`.
    pub fn holds(&self, table: CopyTable, rowid: i64, key: &str) -> Result<bool, StoreError> {
        if !self.has_table(table.name())? {
            return Ok(false);
        }
        let sql = format!(
            "SELECT {} FROM {} WHERE {} = ?1",
            table.key_column(),
            table.name(),
            table.rowid_column()
        );
        let found: Option<String> = self
            .conn
            .query_row(&sql, [rowid], |row| row.get(0))
            .optional()?;
        Ok(found.as_deref() == Some(key))
    }

    /// At most `limit` rows of `table` after `rowid`, in rowid order.
    pub fn read(
        &mut self,
        table: CopyTable,
        after: i64,
        limit: usize,
    ) -> Result<Batch, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if !self.has_table(table.name())? {
            return Ok(Batch {
                rows: Rows::Events(EventRows::default()),
                last: None,
            });
        }
        let tx = self.conn.transaction()?;
        let mut last = None;
        let rows = match table {
            CopyTable::Events => {
                let mut rows = EventRows::default();
                let mut statement = tx.prepare(
                    "SELECT rowid, event_id, event, session_id, occurred_ms, received_ms,
                            delivery_id, headers, body
                     FROM events WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
                )?;
                let mut found = statement.query(params![after, limit])?;
                while let Some(row) = found.next()? {
                    let event_id: String = row.get(1)?;
                    last = Some(Last {
                        rowid: row.get(0)?,
                        key: event_id.clone(),
                    });
                    rows.event_id.push(event_id);
                    rows.event.push(row.get(2)?);
                    rows.session_id.push(row.get(3)?);
                    rows.occurred_ms.push(row.get(4)?);
                    rows.received_ms.push(row.get(5)?);
                    rows.delivery_id.push(row.get(6)?);
                    rows.headers.push(row.get(7)?);
                    rows.body.push(row.get(8)?);
                }
                Rows::Events(rows)
            }
            CopyTable::Sessions => {
                let mut rows = SessionRows::default();
                let mut statement = tx.prepare(
                    "SELECT rowid, session_id, kind, source, first_seen_ms, last_event_ms,
                            last_swept_ms, unsettled
                     FROM sessions WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
                )?;
                let mut found = statement.query(params![after, limit])?;
                while let Some(row) = found.next()? {
                    let session_id: String = row.get(1)?;
                    last = Some(Last {
                        rowid: row.get(0)?,
                        key: session_id.clone(),
                    });
                    rows.session_id.push(session_id);
                    rows.kind.push(row.get(2)?);
                    rows.source.push(row.get(3)?);
                    rows.first_seen_ms.push(row.get(4)?);
                    rows.last_event_ms.push(row.get(5)?);
                    rows.last_swept_ms.push(row.get(6)?);
                    rows.unsettled.push(row.get::<_, i64>(7)? != 0);
                }
                Rows::Sessions(rows)
            }
            CopyTable::Unfiled => {
                let mut rows = UnfiledRows::default();
                let mut statement = tx.prepare(
                    "SELECT id, received_ms, event_id, event, session_id, occurred_ms,
                            delivery_id, headers, body, reason
                     FROM unfiled_events WHERE id > ?1 ORDER BY id LIMIT ?2",
                )?;
                let mut found = statement.query(params![after, limit])?;
                while let Some(row) = found.next()? {
                    let received_ms: i64 = row.get(1)?;
                    let event_id: Option<String> = row.get(2)?;
                    last = Some(Last {
                        rowid: row.get(0)?,
                        key: format!("{}@{received_ms}", event_id.as_deref().unwrap_or("")),
                    });
                    rows.received_ms.push(received_ms);
                    rows.event_id.push(event_id);
                    rows.event.push(row.get(3)?);
                    rows.session_id.push(row.get(4)?);
                    rows.occurred_ms.push(row.get(5)?);
                    rows.delivery_id.push(row.get(6)?);
                    rows.headers.push(row.get(7)?);
                    rows.body.push(row.get(8)?);
                    rows.reason.push(row.get(9)?);
                }
                Rows::Unfiled(rows)
            }
        };
        Ok(Batch { rows, last })
    }

    /// The source's tables a copy leaves behind, with their rows: every
    /// table but the copied ones, SQLite's own and those derived from
    /// `events`.
    pub fn not_copied(&self) -> Result<Vec<NotCopied>, StoreError> {
        let names: Vec<String> = {
            let mut statement = self.conn.prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                 ORDER BY name",
            )?;
            statement
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()?
        };
        let mut out = Vec::new();
        for name in names {
            let copied = CopyTable::ALL.iter().any(|table| table.name() == name)
                || super::copy_sweep::SPECS
                    .iter()
                    .chain(&super::copy_team::SPECS)
                    .any(|spec| spec.table == name)
                || name == super::copy_relay::TABLE;
            let derived = DERIVED.iter().any(|derived| name.starts_with(derived));
            if copied || derived {
                continue;
            }
            // The name comes from the file's own schema: quoted as an
            // identifier.
            let sql = format!("SELECT count(*) FROM \"{}\"", name.replace('"', "\"\""));
            let rows: i64 = self.conn.query_row(&sql, [], |row| row.get(0))?;
            out.push(NotCopied {
                table: name,
                rows: rows.max(0) as u64,
            });
        }
        Ok(out)
    }
}
