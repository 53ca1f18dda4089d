//! Tables whose rows go by their own time (events, unfiled events,
//! attempts, recoveries, changes, sessions): each is described by a few
//! of its columns ([`Aged`]), from which one step ([`AgedStep`]) reads the
//! rows older than the cutoff after a cursor and removes them one by one,
//! checking the time again under the lock.

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, params};

use super::steps::{Candidate, Step, advance, limit, millis, text};
use super::{Removed, Rules, Table};

/// Where a table keeps what decides when its rows go.
#[derive(Clone, Copy)]
pub(super) struct Aged {
    table: Table,
    /// The row's integer key: `rowid`, or the column that is its alias.
    id: &'static str,
    /// The row's time: a column, or the expression the table is indexed on.
    time: &'static str,
    /// The row's session, when a held session keeps the row (see
    /// [`Rules`]).
    session: Option<&'static str>,
    /// Read in time order, the table being indexed on `time`; else in key
    /// order (a small table without that index).
    by_time: bool,
    /// What else must hold, under the lock, for a row to go (`AND …`).
    unless: &'static str,
    /// Rows of another table that go with each row removed, found by the
    /// row's session and a column of that name in both (the session first:
    /// outcome rows are keyed by it).
    dependents: Option<(&'static str, Table)>,
}

impl Aged {
    /// Rows of `table` keyed by `id` that go once `time` is older than the
    /// cutoff, whatever their session.
    pub(super) const fn new(table: Table, id: &'static str, time: &'static str) -> Aged {
        Aged {
            table,
            id,
            time,
            session: None,
            by_time: true,
            unless: "",
            dependents: None,
        }
    }

    /// Kept for a held session: the rows' `session_id` says whose they are.
    pub(super) const fn held_by_session(self) -> Aged {
        Aged {
            session: Some("session_id"),
            ..self
        }
    }

    /// Read in key order: the table has no index on its time.
    pub(super) const fn in_key_order(self) -> Aged {
        Aged {
            by_time: false,
            ..self
        }
    }

    /// A row goes only if `condition` (`AND …`) holds too.
    pub(super) const fn unless(self, condition: &'static str) -> Aged {
        Aged {
            unless: condition,
            ..self
        }
    }

    /// The rows of `table` of the same session whose `column` matches a
    /// removed row's go with it (the rows must be [`Aged::held_by_session`];
    /// `table` is keyed by the session's number, as `event_outcomes`).
    pub(super) const fn with_dependents(self, column: &'static str, table: Table) -> Aged {
        Aged {
            dependents: Some((column, table)),
            ..self
        }
    }

    /// The step that removes these rows.
    pub(super) fn step(self) -> AgedStep {
        let Aged { id, time, .. } = self;
        let table = self.table.as_str();
        let session = self.session.unwrap_or("NULL");
        let link = self.dependents.map_or("NULL", |(column, _)| column);
        // Bound: the cutoff, the cursor's time and key, the batch size.
        // The cursor is written `time >= ?2 AND (time > ?2 OR id > ?3)`
        // rather than as a row value, which SQLite does not seek with on
        // an expression index: so every batch starts in the index where
        // the last one stopped. In key order the cursor's time is unused.
        let select = if self.by_time {
            format!(
                "SELECT {id}, {time}, {session}, {link} FROM {table}
                 WHERE {time} < ?1 AND {time} >= ?2 AND ({time} > ?2 OR {id} > ?3)
                 ORDER BY {time}, {id} LIMIT ?4"
            )
        } else {
            format!(
                "SELECT {id}, {time}, {session}, {link} FROM {table}
                 WHERE {id} > ?3 AND {time} < ?1 ORDER BY {id} LIMIT ?4"
            )
        };
        AgedStep {
            select,
            delete: format!(
                "DELETE FROM {table} WHERE {id} = ?1 AND {time} < ?2 {}",
                self.unless
            ),
            dependents: self.dependents.map(|(column, table)| {
                (
                    format!(
                        "DELETE FROM {}
                         WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?2)
                           AND {column} = ?1",
                        table.as_str()
                    ),
                    table,
                )
            }),
            aged: self,
            after: (Value::Integer(i64::MIN), i64::MIN),
        }
    }
}

/// A cursor over a table with an integer key: the last row's time (as
/// stored, so a hand-edited real number is passed exactly) and key.
type Cursor = (Value, i64);

/// Removes the rows of one [`Aged`] table, oldest first.
pub(super) struct AgedStep {
    aged: Aged,
    /// `id, time, session, link` of the next rows after the cursor.
    select: String,
    /// Removes the row of key `?1` if still older than the cutoff `?2`.
    delete: String,
    /// Removes the dependents of link `?1` in session `?2`, counted as
    /// their table.
    dependents: Option<(String, Table)>,
    /// Where the last batch stopped (at first, before every row).
    after: Cursor,
}

impl Step for AgedStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        let (time, id) = self.after.clone();
        let mut statement = conn.prepare_cached(&self.select)?;
        let rows = statement.query_map(params![rules.cutoff_ms, time, id, limit(size)], |row| {
            let id: i64 = row.get(0)?;
            let time: Value = row.get(1)?;
            let link = match row.get(3)? {
                Value::Null => None,
                link => Some(link),
            };
            Ok((
                (time.clone(), id),
                Candidate {
                    key: vec![Value::Integer(id)],
                    time_ms: millis(ValueRef::from(&time)),
                    session: text(row.get_ref(2)?),
                    link,
                },
            ))
        })?;
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
            .prepare_cached(&self.delete)?
            .execute(params![row.key[0], rules.cutoff_ms])?;
        removed.add(self.aged.table, rows as u64);
        if rows > 0
            && let Some((sql, table)) = &self.dependents
            && let Some(link) = &row.link
        {
            let dependents = conn
                .prepare_cached(sql)?
                .execute(params![link, row.session])?;
            removed.add(*table, dependents as u64);
        }
        Ok(())
    }

    fn holds(&self) -> bool {
        self.aged.session.is_some()
    }
}
