//! Erasure (a data subject's request): everything the store holds about
//! one session or call, removed in one transaction ([`forget`]), then the
//! indexes keyed by session rebuilt (`erase_keys`: their interior pages
//! keep copies of deleted keys) and the write-ahead log emptied into the
//! main file ([`empty_wal`]) so no copy of the erased pages is left beside
//! it.
//!
//! Removed: its events and their outcome rows, its delivery attempts, its
//! recoveries, its `sessions` row, and the unfiled deliveries that name it
//! (session id, body or headers). Cleared: incident notes and change
//! details that name it (the rows stay: they are about a subscription),
//! and the count rows' example id where it is this session. Deleted
//! content is overwritten with zeros (`PRAGMA secure_delete`).
//!
//! An id is matched exactly, as a whole word in free text (`call_12`
//! does not match inside `call_123`); there is no prefix matching.

use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior, params};

use super::numbered_events::SESSION_EVENTS;
use super::retention::{Removed, Table};
use super::{BUSY_TIMEOUT, Store, StoreError};

/// The longest id accepted.
const LONGEST_ID: usize = 256;

/// What one erasure removed and cleared.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Forgotten {
    pub session_id: String,
    pub removed: Removed,
    /// Incident notes that named it, now empty.
    pub incident_notes: u64,
    /// Change details that named it, now replaced by a placeholder.
    pub change_details: u64,
    /// Count rows whose example was this session, now without one.
    pub count_examples: u64,
}

impl Forgotten {
    /// Whether the store held anything about it.
    pub fn found(&self) -> bool {
        self.removed.total() + self.incident_notes + self.change_details + self.count_examples > 0
    }
}

/// What a change's detail becomes when it named an erased session.
pub const ERASED_DETAIL: &str = "(erased: it named a forgotten session or call)";

/// Checks an id given for erasure: not empty, at most 256 characters, no
/// spaces or control characters.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("an empty id: give a session or call id".to_owned());
    }
    if id.chars().count() > LONGEST_ID {
        return Err(format!(
            "an id of {} characters: a session or call id has at most {LONGEST_ID}",
            id.chars().count()
        ));
    }
    if id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "{id:?} holds a space or control character: give one session or call id per argument"
        ));
    }
    Ok(())
}

/// Whether `haystack` names `id` as a whole word: not directly after or
/// before a letter, digit, `_` or `-`.
pub fn mentions(haystack: &[u8], id: &[u8]) -> bool {
    if id.is_empty() || haystack.len() < id.len() {
        return false;
    }
    let word = |byte: Option<&u8>| {
        byte.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
    };
    haystack
        .windows(id.len())
        .enumerate()
        .filter(|(_, window)| *window == id)
        .any(|(at, _)| {
            let before = at.checked_sub(1).and_then(|i| haystack.get(i));
            !word(before) && !word(haystack.get(at + id.len()))
        })
}

/// Erases what the store holds about `session_id` (see the module
/// comment), in one transaction.
pub fn forget(store: &mut Store, session_id: &str) -> Result<Forgotten, StoreError> {
    store.conn.pragma_update(None, "secure_delete", "ON")?;
    // Found before the write lock is taken: the scan of every unfiled
    // body would otherwise hold up the observer.
    let unfiled = unfiled_naming(&store.conn, session_id)?;
    let tx = store
        .conn
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut forgotten = Forgotten {
        session_id: session_id.to_owned(),
        ..Forgotten::default()
    };
    // The minutes and hours its rows are counted in: the count triggers
    // name the session as their example when its rows are deleted.
    let attempt_times = times(
        &tx,
        "SELECT DISTINCT created_ms FROM deliveries WHERE session_id = ?1",
        session_id,
    )?;
    let event_times = times(
        &tx,
        "SELECT DISTINCT occurred_ms FROM event_outcomes
         WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?1)",
        session_id,
    )?;
    let removed = &mut forgotten.removed;
    let delete_events =
        format!("DELETE FROM events WHERE seq IN (SELECT e.seq FROM {SESSION_EVENTS})");
    for (table, sql) in [
        (
            Table::EventOutcomes,
            "DELETE FROM event_outcomes
             WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?1)",
        ),
        (Table::Events, delete_events.as_str()),
        (
            Table::Deliveries,
            "DELETE FROM deliveries WHERE session_id = ?1",
        ),
        (
            Table::Recoveries,
            "DELETE FROM recoveries WHERE session_id = ?1",
        ),
        (
            Table::Sessions,
            "DELETE FROM sessions WHERE session_id = ?1",
        ),
    ] {
        // The free-text index's entries go with the event's row.
        let deleted = if table == Table::Events {
            super::event_words::erasing(&tx, || Ok(tx.execute(sql, [session_id])?))?
        } else {
            tx.execute(sql, [session_id])?
        };
        removed.add(table, deleted as u64);
    }
    let mut delete_unfiled = tx.prepare("DELETE FROM unfiled_events WHERE id = ?1")?;
    for id in unfiled {
        removed.add(Table::UnfiledEvents, delete_unfiled.execute([id])? as u64);
    }
    drop(delete_unfiled);
    forgotten.count_examples = clear_examples(&tx, session_id, &attempt_times, &event_times)?;
    forgotten.incident_notes = rewrite_naming(
        &tx,
        "SELECT rowid, note FROM incidents WHERE instr(note, ?1) > 0",
        "UPDATE incidents SET note = NULL WHERE rowid = ?1",
        session_id,
    )?;
    forgotten.change_details = rewrite_naming(
        &tx,
        "SELECT rowid, detail FROM changes WHERE instr(detail, ?1) > 0",
        &format!("UPDATE changes SET detail = '{ERASED_DETAIL}' WHERE rowid = ?1"),
        session_id,
    )?;
    tx.commit()?;
    Ok(forgotten)
}

/// Rows of `unfiled_events` naming `session_id` in their session id, body
/// or headers.
fn unfiled_naming(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<i64>> {
    let mut statement = conn.prepare(
        "SELECT id, session_id, body, headers FROM unfiled_events
         WHERE session_id = ?1 OR instr(body, ?2) > 0 OR instr(headers, ?1) > 0",
    )?;
    let id = session_id.as_bytes();
    let rows = statement.query_map(params![session_id, id], |row| {
        let bytes = |index: usize| -> rusqlite::Result<Vec<u8>> {
            Ok(match row.get_ref(index)? {
                rusqlite::types::ValueRef::Text(bytes) | rusqlite::types::ValueRef::Blob(bytes) => {
                    bytes.to_vec()
                }
                _ => Vec::new(),
            })
        };
        let named = bytes(1)? == id || mentions(&bytes(2)?, id) || mentions(&bytes(3)?, id);
        Ok((row.get::<_, i64>(0)?, named))
    })?;
    let mut found = Vec::new();
    for row in rows {
        let (rowid, named) = row?;
        if named {
            found.push(rowid);
        }
    }
    Ok(found)
}

/// The distinct times one query returns.
fn times(conn: &Connection, sql: &str, session_id: &str) -> rusqlite::Result<Vec<i64>> {
    let mut statement = conn.prepare(sql)?;
    let rows = statement.query_map([session_id], |row| row.get::<_, Option<i64>>(0))?;
    let mut times = Vec::new();
    for row in rows {
        times.extend(row?);
    }
    Ok(times)
}

/// Clears `session_id` as the example of the minute and hour count rows
/// of `attempt_times` (attempt counts) and `event_times` (event counts).
fn clear_examples(
    conn: &Connection,
    session_id: &str,
    attempt_times: &[i64],
    event_times: &[i64],
) -> rusqlite::Result<u64> {
    let mut cleared = 0;
    for (table, unit, unit_ms, times) in [
        ("delivery_counts", "minute", 60_000, attempt_times),
        ("delivery_counts_hourly", "hour", 3_600_000, attempt_times),
        ("event_counts", "minute", 60_000, event_times),
        ("event_counts_hourly", "hour", 3_600_000, event_times),
    ] {
        let mut buckets: Vec<i64> = times.iter().map(|ms| ms.div_euclid(unit_ms)).collect();
        buckets.sort_unstable();
        buckets.dedup();
        let mut clear = conn.prepare(&format!(
            "UPDATE {table} SET example_session_id = '' WHERE {unit} = ?1 AND example_session_id = ?2"
        ))?;
        for bucket in buckets {
            cleared += clear.execute(params![bucket, session_id])? as u64;
        }
    }
    Ok(cleared)
}

/// Runs `update` on each row `select` finds (`rowid, text`) whose text
/// names `session_id` as a whole word; how many.
fn rewrite_naming(
    conn: &Connection,
    select: &str,
    update: &str,
    session_id: &str,
) -> rusqlite::Result<u64> {
    let mut statement = conn.prepare(select)?;
    let rows = statement.query_map([session_id], |row| {
        Ok((row.get::<_, i64>(0)?, row.get::<_, Option<String>>(1)?))
    })?;
    let mut naming = Vec::new();
    for row in rows {
        let (rowid, text) = row?;
        if text.is_some_and(|text| mentions(text.as_bytes(), session_id.as_bytes())) {
            naming.push(rowid);
        }
    }
    let mut update = conn.prepare(update)?;
    for rowid in &naming {
        update.execute([rowid])?;
    }
    Ok(naming.len() as u64)
}

/// Copies the write-ahead log into the main file and truncates it, so the
/// erased pages' old copies are gone from both files. Waits at most
/// `wait` for readers on older snapshots (holding up writers meanwhile);
/// whether it got through.
pub fn empty_wal(store: &mut Store, wait: Duration) -> Result<bool, StoreError> {
    store.conn.busy_timeout(wait)?;
    let busy = store
        .conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
            row.get::<_, i64>(0)
        });
    store.conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(busy? == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_matched_as_a_whole_word() {
        let id = b"call_12";
        assert!(mentions(b"call_12", id));
        assert!(mentions(br#"{"call_id":"call_12"}"#, id));
        assert!(mentions(b"see call_12.", id));
        assert!(!mentions(b"call_123", id));
        assert!(!mentions(b"xcall_12", id));
        assert!(!mentions(b"call_12-b", id));
        assert!(mentions(b"call_123 and call_12", id));
        assert!(!mentions(b"", id));
    }

    #[test]
    fn ids_with_spaces_or_nothing_are_refused() {
        assert!(check_id("call_1").is_ok());
        assert!(check_id("").is_err());
        assert!(check_id("a b").is_err());
        assert!(check_id("a\nb").is_err());
        assert!(check_id(&"x".repeat(257)).is_err());
    }
}
