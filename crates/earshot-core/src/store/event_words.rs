//! The free-text index of events (`event_words`, schema 7): an FTS5 table
//! with the trigram tokenizer over exactly what free text searches (the
//! event id, session id and type, each folded to lower case by [`crate::query::fold`],
//! Unicode-aware), so a word of three characters or more is found by the
//! index where the scan's `instr` finds it, with the same results.
//!
//! Kept by triggers on `events`, keyed by the event's rowid: a delete
//! removes the event's entries; an insert notes the event as pending
//! (`event_words_pending`), and the writer puts pending events in the
//! index between batches: a trickle at once, a flood as it ebbs
//! ([`index_pending`], [`super::writer`]), so a flood is filed at the rate
//! of the tables, not of FTS5's merges, which grow with the index. A delete
//! leaves FTS5's tombstone (the deleted rowid's entries are dropped when
//! their segments are merged) and its copy of the text is zeroed (`PRAGMA
//! secure_delete`); a `store forget` deletes in FTS5's `secure-delete`
//! mode ([`erasing`]), which rewrites the index's pages at once. Not the
//! prune: that mode costs about 1.5 ms an event (30 s for 20,000), where a
//! tombstone costs 15 µs. A store migrated from an
//! older version starts with an empty index and fills it in batches
//! ([`fill`]: `earshot store index`, or the observer in the background);
//! until it is complete, free text scans as before ([`is_complete`]).

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{Store, StoreError};

/// The shortest word the index can find: one trigram.
pub const SHORTEST_INDEXED: usize = 3;

/// Version 7 of the schema: the index, its triggers, and how far a
/// migrated store's events have been put in it.
pub(super) fn schema() -> String {
    format!(
        "
CREATE VIRTUAL TABLE event_words USING fts5(
    event_id UNINDEXED, id_text, session_text, type_text,
    tokenize = 'trigram case_sensitive 1', columnsize = 0
);
CREATE TABLE event_words_pending (event_rowid INTEGER PRIMARY KEY);
{TRIGGERS}
CREATE TABLE event_words_fill (
    next_rowid  INTEGER NOT NULL,
    last_rowid  INTEGER NOT NULL
);
INSERT INTO event_words_fill SELECT 1, m FROM (SELECT max(rowid) AS m FROM events) WHERE m IS NOT NULL;
"
    )
}

/// The triggers on `events` that keep the index (made again by version
/// 11, which rewrites the table).
pub(super) const TRIGGERS: &str = "
CREATE TRIGGER events_worded AFTER INSERT ON events BEGIN
    INSERT OR IGNORE INTO event_words_pending VALUES (NEW.rowid);
END;
CREATE TRIGGER events_reworded AFTER UPDATE OF event_id, session_id, event ON events BEGIN
    DELETE FROM event_words WHERE rowid = OLD.rowid;
    INSERT OR IGNORE INTO event_words_pending VALUES (NEW.rowid);
END;
CREATE TRIGGER events_unworded AFTER DELETE ON events BEGIN
    DELETE FROM event_words WHERE rowid = OLD.rowid;
    DELETE FROM event_words_pending WHERE event_rowid = OLD.rowid;
END;
";

/// Makes [`crate::query::fold`] the SQL function `fold(text)` on `conn`, for the index
/// and the scan alike. NULL folds to NULL.
pub(super) fn register_fold(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "fold",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |context| {
            let folded = match context.get_raw(0) {
                rusqlite::types::ValueRef::Text(bytes) => {
                    Some(crate::query::fold(&String::from_utf8_lossy(bytes)).into_owned())
                }
                _ => None,
            };
            Ok(folded)
        },
    )
}

/// Puts the oldest `most` events noted as pending by the triggers in the
/// index, in one statement (FTS5 writes a segment per statement that adds
/// to it: one per event from a trigger, one per call here). How many
/// events it added (one indexed already is only taken off the list). The
/// writer calls it between batches ([`super::writer`]); until then, and
/// for events written by another program, the list checks pending events
/// by scanning them.
pub(crate) fn index_pending(conn: &Connection, most: i64) -> rusqlite::Result<usize> {
    let last: Option<i64> = conn
        .prepare_cached(
            "SELECT max(event_rowid) FROM
                 (SELECT event_rowid FROM event_words_pending ORDER BY event_rowid LIMIT ?1)",
        )?
        .query_row([most], |row| row.get(0))?;
    let Some(last) = last else {
        return Ok(0);
    };
    let added = conn
        .prepare_cached(
            "INSERT INTO event_words (rowid, event_id, id_text, session_text, type_text)
             SELECT e.rowid, e.event_id, fold(e.event_id), fold(e.session_id), fold(e.event)
             FROM event_words_pending p CROSS JOIN events e ON e.rowid = p.event_rowid
             WHERE p.event_rowid <= ?1
               AND NOT EXISTS (SELECT 1 FROM event_words_content c WHERE c.id = e.rowid)",
        )?
        .execute([last])?;
    conn.prepare_cached("DELETE FROM event_words_pending WHERE event_rowid <= ?1")?
        .execute([last])?;
    Ok(added)
}

/// How many events wait to be put in the index.
pub(crate) fn pending(conn: &Connection) -> rusqlite::Result<usize> {
    let pending: i64 = conn.query_row("SELECT count(*) FROM event_words_pending", [], |row| {
        row.get(0)
    })?;
    Ok(usize::try_from(pending).unwrap_or(0))
}

/// Runs `erase` with FTS5's `secure-delete` mode on, in the caller's
/// transaction: the deleted events' entries leave the index's pages, not
/// only the list of what the index holds.
pub(crate) fn erasing<T>(
    conn: &Connection,
    erase: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mode = "INSERT INTO event_words (event_words, rank) VALUES ('secure-delete', ?1)";
    conn.execute(mode, [1])?;
    let erased = erase()?;
    conn.execute(mode, [0])?;
    Ok(erased)
}

/// Whether every event is in the index (a new store's always are; a
/// migrated store's once [`fill`] has reached its last event).
pub fn is_complete(conn: &Connection) -> rusqlite::Result<bool> {
    let left: Option<(i64, i64)> = conn
        .prepare_cached("SELECT next_rowid, last_rowid FROM event_words_fill")?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    Ok(left.is_none_or(|(next, last)| next > last))
}

/// [`is_complete`] for an open store.
pub fn index_complete(store: &Store) -> Result<bool, StoreError> {
    Ok(is_complete(&store.conn)?)
}

/// How far filling the index of a migrated store has come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FillProgress {
    /// Events put in the index by this call.
    pub added: u64,
    /// Of the rowids the migration found, how many are behind.
    pub done_rowids: i64,
    pub all_rowids: i64,
    pub complete: bool,
}

/// Puts the next events of a migrated store in the index: at most
/// `batch` rowids in one short write transaction, so a running observer
/// waits for one batch at most. Call until [`FillProgress::complete`].
pub fn fill(store: &mut Store, batch: i64) -> Result<FillProgress, StoreError> {
    let tx = store
        .conn
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    let left: Option<(i64, i64)> = tx
        .query_row(
            "SELECT next_rowid, last_rowid FROM event_words_fill",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let Some((next, last)) = left else {
        return Ok(FillProgress {
            complete: true,
            ..FillProgress::default()
        });
    };
    let end = last.min(next.saturating_add(batch.max(1)) - 1);
    // An event filed since the migration under a reused rowid is in the
    // index already (the writer put it there). Asked of FTS5's content
    // table: a rowid lookup through the FTS5 table in a subquery reads it
    // all.
    let added = tx.execute(
        "INSERT INTO event_words (rowid, event_id, id_text, session_text, type_text)
         SELECT e.rowid, e.event_id, fold(e.event_id), fold(e.session_id), fold(e.event)
         FROM events e
         WHERE e.rowid BETWEEN ?1 AND ?2
           AND NOT EXISTS (SELECT 1 FROM event_words_content c WHERE c.id = e.rowid)",
        params![next, end],
    )?;
    let added = added + index_pending(&tx, batch.max(1))?;
    let complete = end >= last;
    if complete {
        tx.execute("DELETE FROM event_words_fill", [])?;
    } else {
        tx.execute(
            "UPDATE event_words_fill SET next_rowid = ?1",
            params![end + 1],
        )?;
    }
    tx.commit()?;
    Ok(FillProgress {
        added: u64::try_from(added).unwrap_or(0),
        done_rowids: end,
        all_rowids: last,
        complete,
    })
}

/// Whether `word` can be looked up in the index (three characters or
/// more); a shorter one is checked by scanning.
pub fn indexable(word: &str) -> bool {
    word.chars().count() >= SHORTEST_INDEXED
}

/// The FTS5 query finding rows where every word is a substring of one of
/// the indexed columns: each word a quoted phrase (a `"` doubled), so FTS5
/// syntax in a word (`*`, `-`, `NEAR`, `AND`, `:`) is only text.
pub fn match_expression<'w>(words: impl IntoIterator<Item = &'w str>) -> String {
    words
        .into_iter()
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" AND ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_quoted_phrases_joined_by_and() {
        assert_eq!(match_expression(["abc"]), "\"abc\"");
        assert_eq!(
            match_expression(["a\"b*", "near", "-x:y"]),
            "\"a\"\"b*\" AND \"near\" AND \"-x:y\""
        );
    }

    #[test]
    fn three_characters_not_bytes_make_a_word_indexable() {
        assert!(indexable("abc"));
        assert!(indexable("été"));
        assert!(!indexable("ét"));
        assert!(!indexable("ab"));
    }
}
