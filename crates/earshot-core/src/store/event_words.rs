//! The free-text index of events (`event_words`, schema 7): an FTS5 table
//! with the trigram tokenizer over exactly what free text searches (the
//! event id and session id lower-cased as SQLite's `lower` does, and the
//! type as stored), so a word of three characters or more is found by the
//! index where it was found by `instr` before, with the same results.
//!
//! Kept by triggers on `events` (insert, update, delete), keyed by the
//! event's rowid; FTS5's own `secure-delete` is on, so a deleted event's
//! entries leave the index's pages at once (not only a tombstone), and
//! `PRAGMA secure_delete` zeroes what they leave. A store migrated from an
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
    "
CREATE VIRTUAL TABLE event_words USING fts5(
    event_id UNINDEXED, id_text, session_text, type_text,
    tokenize = 'trigram case_sensitive 1', columnsize = 0
);
INSERT INTO event_words (event_words, rank) VALUES ('secure-delete', 1);
CREATE TRIGGER events_worded AFTER INSERT ON events BEGIN
    INSERT INTO event_words (rowid, event_id, id_text, session_text, type_text)
    VALUES (NEW.rowid, NEW.event_id, lower(NEW.event_id), lower(NEW.session_id), NEW.event);
END;
CREATE TRIGGER events_reworded AFTER UPDATE OF event_id, session_id, event ON events BEGIN
    DELETE FROM event_words WHERE rowid = OLD.rowid;
    INSERT INTO event_words (rowid, event_id, id_text, session_text, type_text)
    VALUES (NEW.rowid, NEW.event_id, lower(NEW.event_id), lower(NEW.session_id), NEW.event);
END;
CREATE TRIGGER events_unworded AFTER DELETE ON events BEGIN
    DELETE FROM event_words WHERE rowid = OLD.rowid;
END;
CREATE TABLE event_words_fill (
    next_rowid  INTEGER NOT NULL,
    last_rowid  INTEGER NOT NULL
);
INSERT INTO event_words_fill SELECT 1, m FROM (SELECT max(rowid) AS m FROM events) WHERE m IS NOT NULL;
"
    .to_owned()
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
    // index already (its trigger put it there).
    let added = tx.execute(
        "INSERT INTO event_words (rowid, event_id, id_text, session_text, type_text)
         SELECT e.rowid, e.event_id, lower(e.event_id), lower(e.session_id), e.event
         FROM events e
         WHERE e.rowid BETWEEN ?1 AND ?2
           AND NOT EXISTS (SELECT 1 FROM event_words w WHERE w.rowid = e.rowid)",
        params![next, end],
    )?;
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
