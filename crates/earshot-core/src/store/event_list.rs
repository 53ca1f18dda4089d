//! Observed events, newest first, filtered (the SQL behind
//! `history::event_list`): what `earshot events` and the Events pane list,
//! on SQLite ([`list`], a builder over its indexes) and on PostgreSQL
//! ([`list_postgres`], a small builder, [`postgres_query`]); both return the same
//! [`ListedEvent`] rows in the same order for the same events.

use rusqlite::types::Value;
use rusqlite::{OptionalExtension, params, params_from_iter};

use super::outcomes::{EventState, Outcome, outcome_row};
use super::postgres::{PgError, PgStore};
use super::{Store, event_words};
use crate::query::fold;

/// What to keep; every field set must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter<'a> {
    pub since_ms: i64,
    /// Text contained in the type, any case (`call` finds `call.ended`).
    pub event_type: Option<&'a str>,
    pub state: Option<EventState>,
    /// A subscription id prefix.
    pub subscription: Option<&'a str>,
    /// A session or call id prefix.
    pub session: Option<&'a str>,
    /// Lower-case words each found in the event id, session id or type.
    pub words: &'a [String],
    /// Only events filed after this sequence (`events.rowid`, see
    /// [`super::mark::ListState`]): what a live list lacks. SQLite's;
    /// refused on PostgreSQL.
    pub after_seq: Option<i64>,
    /// Only events whose filing transaction is this one (a 64-bit
    /// transaction id) or later: what a live list on PostgreSQL lacks,
    /// with some it holds ([`super::live_list`]). PostgreSQL's; SQLite's
    /// [`list`] never gets it (a live read there sets `after_seq`).
    pub after_xid: Option<i64>,
}

/// One listed event (its body stays in the store).
#[derive(Clone, Debug, PartialEq)]
pub struct ListedEvent {
    pub event_id: String,
    pub event: String,
    pub session_id: String,
    pub occurred_ms: i64,
    pub received_ms: i64,
}

/// The newest events that pass `filter`, at most `limit`.
///
/// Each filter picks the index that finds its rows without reading the
/// others: free text of three characters or more, when the words are
/// rare enough ([`by_words`]), the free-text index (`event_words`), each
/// other filter checked on the rows it finds; with a state or
/// subscription, the outcomes' `(state, occurred_ms)` index, newest first
/// (stopping at `limit` distinct events when no free text is left to
/// check); with a type that few events have ([`by_type`]), the type
/// index; with a session prefix, a range of the session index; else the
/// events' time index, newest first, stopping at `limit`. Free text the
/// index does not serve (words under three characters, words so common
/// that the newest rows find them soonest, a migrated store whose index is
/// not filled yet) is checked with `instr` on the rows read; so is every
/// word on the index's candidates, so the list is the scan's.
pub fn list(
    store: &Store,
    filter: &Filter<'_>,
    limit: usize,
) -> rusqlite::Result<Vec<ListedEvent>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut values: Vec<Value> = Vec::new();
    let mut sql = String::from(
        "SELECT e.event_id, e.event, e.session_id, e.occurred_ms, e.received_ms FROM ",
    );
    let by_outcomes = filter.state.is_some() || filter.subscription.is_some();
    let candidates = match filter.after_seq {
        // The events filed since: a range of the table's own key.
        Some(after) => Some(("events e WHERE e.rowid > ?", Value::Integer(after))),
        // The index's matches and the events not in it yet.
        None => by_words(store, filter.words, limit)?.map(|expression| {
            (
                "(SELECT rowid AS r FROM event_words WHERE event_words MATCH ?
                  UNION SELECT event_rowid FROM event_words_pending) w
                 CROSS JOIN events e ON e.rowid = w.r WHERE 1",
                Value::Text(expression),
            )
        }),
    };
    if let Some((source, value)) = candidates {
        // Each candidate is checked below with the scan's own test of every
        // word and here with every other condition.
        sql.push_str(source);
        values.push(value);
        if by_outcomes {
            // What the outcomes' index would have checked, on the rows found.
            sql.push_str(
                " AND EXISTS (SELECT 1 FROM event_outcomes o
                  WHERE o.session_no = (SELECT session_no FROM sessions WHERE session_id = e.session_id)
                    AND o.event_id = e.event_id
                    AND o.occurred_ms >= ?",
            );
            values.push(Value::Integer(filter.since_ms));
            push_outcome_conditions(&mut sql, &mut values, filter);
            sql.push(')');
        } else {
            sql.push_str(" AND e.occurred_ms >= ?");
            values.push(Value::Integer(filter.since_ms));
            if let Some(session) = filter.session {
                push_prefix(&mut sql, &mut values, "e.session_id", session);
            }
        }
    } else if by_outcomes {
        let index = if filter.state.is_some() {
            "INDEXED BY event_outcomes_by_state_time"
        } else {
            ""
        };
        // An event's rows share its time, so (id, time) pairs are its
        // distinct ids, read newest first along the index: with nothing
        // left to check on the events, the scan stops at `limit` of them.
        sql.push_str(&format!(
            "(SELECT DISTINCT o.event_id, o.occurred_ms FROM event_outcomes o {index}
              WHERE o.event_id IS NOT NULL AND o.occurred_ms >= ?"
        ));
        values.push(Value::Integer(filter.since_ms));
        push_outcome_conditions(&mut sql, &mut values, filter);
        sql.push_str(" ORDER BY o.occurred_ms DESC");
        if filter.words.is_empty() {
            sql.push_str(" LIMIT ?");
            values.push(Value::Integer(limit));
        }
        // CROSS JOIN keeps this loop order: the outcomes first.
        sql.push_str(
            ") m CROSS JOIN events e ON e.occurred_ms = m.occurred_ms AND e.event_id = m.event_id
             WHERE 1",
        );
    } else if let Some(types) = match (filter.event_type, filter.session) {
        (Some(typed), None) => by_type(store, typed, filter.since_ms, limit)?,
        _ => None,
    } {
        // A rare type: its events along the type index, sorted by time.
        sql.push_str(
            "events e INDEXED BY events_by_type
             WHERE e.event IN (SELECT value FROM json_each(?)) AND e.occurred_ms >= ?",
        );
        values.push(Value::Text(types));
        values.push(Value::Integer(filter.since_ms));
    } else if let Some(session) = filter.session {
        // By number the events filed since schema 13, by id those before.
        sql.push_str(
            "(SELECT * FROM events INDEXED BY events_by_session_no
               WHERE session_no IS NOT NULL AND occurred_ms >= ?
                 AND session_no IN (SELECT session_no FROM sessions WHERE 1",
        );
        values.push(Value::Integer(filter.since_ms));
        push_prefix(&mut sql, &mut values, "session_id", session);
        sql.push_str(
            ")
             UNION ALL
             SELECT * FROM events INDEXED BY events_by_session
               WHERE session_no IS NULL AND occurred_ms >= ?",
        );
        values.push(Value::Integer(filter.since_ms));
        push_prefix(&mut sql, &mut values, "session_id", session);
        sql.push_str(") e WHERE 1");
    } else {
        sql.push_str("events e WHERE e.occurred_ms >= ?");
        values.push(Value::Integer(filter.since_ms));
    }
    if let (Some(event_type), false) = (filter.event_type, by_outcomes) {
        sql.push_str(" AND instr(fold(e.event), ?) > 0");
        values.push(Value::Text(fold(event_type).into_owned()));
    }
    for word in filter.words {
        sql.push_str(
            " AND (instr(fold(e.event_id), ?) > 0 OR instr(fold(e.session_id), ?) > 0
                   OR instr(fold(e.event), ?) > 0)",
        );
        for _ in 0..3 {
            values.push(Value::Text(word.clone()));
        }
    }
    sql.push_str(" ORDER BY e.occurred_ms DESC, e.event_id DESC LIMIT ?");
    values.push(Value::Integer(limit));
    let mut statement = store.conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params_from_iter(values), |row| {
        Ok(ListedEvent {
            event_id: row.get(0)?,
            event: row.get(1)?,
            session_id: row.get(2)?,
            occurred_ms: row.get(3)?,
            received_ms: row.get(4)?,
        })
    })?;
    super::readable(rows)
}

/// The conditions on an event's outcome rows (`o`) besides its time.
fn push_outcome_conditions(sql: &mut String, values: &mut Vec<Value>, filter: &Filter<'_>) {
    if let Some(state) = filter.state {
        sql.push_str(" AND o.state = ?");
        values.push(Value::Text(state.as_str().to_owned()));
    }
    if let Some(subscription) = filter.subscription {
        push_prefix(sql, values, "o.subscription_id", subscription);
    }
    if let Some(event_type) = filter.event_type {
        sql.push_str(" AND instr(fold(o.event), ?) > 0");
        values.push(Value::Text(fold(event_type).into_owned()));
    }
    if let Some(session) = filter.session {
        push_prefix(sql, values, "o.session_id", session);
    }
}

/// The free-text index's query for `words`, when it is the way to list
/// them: the index is complete, some word has three characters or more,
/// and the words match at most [`most_matches`] events.
pub(super) fn by_words(
    store: &Store,
    words: &[String],
    limit: i64,
) -> rusqlite::Result<Option<String>> {
    let long: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|word| event_words::indexable(word))
        .collect();
    if long.is_empty() || !event_words::is_complete(&store.conn)? {
        return Ok(None);
    }
    let most = most_matches(store, limit)?;
    let expression = event_words::match_expression(long);
    let matches: i64 = store
        .conn
        .prepare_cached(
            "SELECT count(*) FROM
                 (SELECT 1 FROM event_words WHERE event_words MATCH ?1 LIMIT ?2)",
        )?
        .query_row(params![expression, most + 1], |row| row.get(0))?;
    Ok((matches <= most).then_some(expression))
}

/// How many matches an index may find before reading the newest events
/// until `limit` pass costs less: with `m` matches in `n` events, the
/// index reads `m` rows and the newest-first scan about `limit × n / m`,
/// so the index is used up to `m = √(limit × n)` (1,000 to 200,000).
pub(super) fn most_matches(store: &Store, limit: i64) -> rusqlite::Result<i64> {
    let events: i64 = store
        .conn
        .prepare_cached("SELECT coalesce(max(rowid), 0) FROM events")?
        .query_row([], |row| row.get(0))?;
    let most = ((limit as f64) * (events as f64)).sqrt() as i64;
    Ok(most.clamp(1_000, 200_000))
}

/// The types stored that `typed` is contained in (any case), when the
/// type index is the way to list them: fewer than [`most_matches`] of
/// their events in the window. A JSON array, for `json_each`.
pub(super) fn by_type(
    store: &Store,
    typed: &str,
    since_ms: i64,
    limit: i64,
) -> rusqlite::Result<Option<String>> {
    let wanted = fold(typed);
    // Each distinct type in one seek of the index.
    let mut statement = store.conn.prepare_cached(
        "WITH RECURSIVE t(x) AS (
             SELECT min(event) FROM events INDEXED BY events_by_type
             UNION ALL
             SELECT (SELECT min(event) FROM events INDEXED BY events_by_type WHERE event > x)
             FROM t WHERE x IS NOT NULL)
         SELECT x FROM t WHERE x IS NOT NULL",
    )?;
    let stored: Vec<String> = super::readable(statement.query_map([], |row| row.get(0))?)?;
    let types: Vec<String> = stored
        .into_iter()
        .filter(|stored| fold(stored).contains(wanted.as_ref()))
        .collect();
    let types = serde_json::to_string(&types).unwrap_or_else(|_| "[]".to_owned());
    let most = most_matches(store, limit)?;
    let matches: i64 = store
        .conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM events INDEXED BY events_by_type
                 WHERE event IN (SELECT value FROM json_each(?1)) AND occurred_ms >= ?2 LIMIT ?3)",
        )?
        .query_row(params![types, since_ms, most + 1], |row| row.get(0))?;
    Ok((matches <= most).then_some(types))
}

/// Adds `text` as the next text parameter of a [`PgQuery`], whose first
/// text is `$first`; its placeholder.
fn next(texts: &mut Vec<String>, first: usize, text: String) -> String {
    texts.push(text);
    format!("${}", texts.len() + first - 1)
}

/// `AND column` starts with `prefix`, as a range an index can serve.
fn push_prefix(sql: &mut String, values: &mut Vec<Value>, column: &str, prefix: &str) {
    sql.push_str(&format!(" AND {column} >= ? AND {column} < ?"));
    values.push(Value::Text(prefix.to_owned()));
    values.push(Value::Text(past_prefix(prefix)));
}

/// The smallest text after every text that starts with `prefix`, so a
/// prefix is the range `[prefix, past_prefix(prefix))` of an index.
pub(super) fn past_prefix(prefix: &str) -> String {
    let mut past = prefix.to_owned();
    past.push(char::MAX);
    past
}

/// The statement [`list_postgres`] runs and its parameters: `$1` the
/// window's start, `$2` the low 32 bits of `after_xid` when it is set,
/// then the texts, then `LIMIT` when nothing is checked in Rust. Each row
/// is the five columns of [`ListedEvent`] and its filing transaction's id
/// (`xmin`, 32 bits, as a `bigint`).
#[derive(Debug, PartialEq)]
pub struct PgQuery {
    pub sql: String,
    /// `after_xid`'s low 32 bits (`$2`), when the read is live.
    pub after_xid32: Option<i64>,
    pub texts: Vec<String>,
    /// The stored types a `type:` term matches (`$2`, or `$3` on a live
    /// read), when they were read first ([`postgres_query_typed`]).
    pub types: Option<Vec<String>>,
    /// The ids of the only events that may pass (after the types), when
    /// they were read first ([`postgres_query_read`]).
    pub ids: Option<Vec<String>>,
    /// Whether the rows must pass [`fold`] matching in Rust too.
    pub checked_here: bool,
}

/// 2³²: transaction ids on a row (`xmin`) are 32 bits, read modulo this.
pub(super) const XID_SPAN: i64 = 1 << 32;

/// The sessions `s` with an event received since their last sweep
/// (`last_event_ms` is the newest `received_ms`, as filing keeps it):
/// the predicate of the partial index `sessions_unswept` (schema version
/// 12), so the events not swept yet are found from their few sessions.
pub const UNSWEPT_SESSIONS: &str = "(s.last_swept_ms IS NULL OR s.last_swept_ms < s.last_event_ms)";

/// The columns every arm of [`postgres_query`] returns, of the events `e`.
const POSTGRES_COLUMNS: &str =
    "e.event_id, e.event, e.session_id, e.occurred_ms, e.received_ms, e.xmin::text::bigint";

/// Builds the PostgreSQL side of [`list`] for `filter`.
///
/// - The window (`occurred_ms >= $1`) keeps to its days' partitions, read
///   newest first along `events_by_time` `(occurred_ms, event_id COLLATE
///   "C")`: ties by id in byte order, as SQLite's `BINARY`, whatever the
///   database's collation.
/// - A session prefix is the range `[prefix, prefix + U+10FFFF)` in byte
///   order (SQLite's rule), along `events_by_session_bytes`.
/// - The type and each free-text word are tested in SQL exactly on
///   ASCII-only text (`lower(x COLLATE "C")` lowers ASCII only, as
///   [`fold`] does there, whatever the database's locale), and any text
///   holding other characters is passed on (`octet_length <> char_length`)
///   to be checked in Rust with [`fold`] itself: SQL keeps a superset,
///   Rust decides, so the match is SQLite's, Unicode folding included.
/// - `status:` and `sub:` ([`postgres_outcomes`]) keep the events with an
///   outcome row of that state and subscription (prefix, byte order), as
///   SQLite's; and, where SQLite's observer would have filed an `unknown`
///   row at filing (`status:unknown`, or no `status:`), the events with
///   no row yet whose session was not swept since they came and that an
///   enabled subscription (with that prefix) listens to.
/// - A live read (`after_xid`) keeps the rows whose `xmin` is that
///   transaction or a later one, compared modulo 2³² as PostgreSQL
///   compares transaction ids (within 2³¹ of it); no index serves it, so
///   the window's rows are tested ([`super::live_list`]).
pub fn postgres_query(filter: &Filter<'_>) -> PgQuery {
    postgres_query_typed(filter, None)
}

/// [`postgres_query`] with the stored types a `type:` term matches read
/// first (`super::postgres::type_index::matching_types`): the type is
/// then `e.event = ANY(types)`, which the type index or the time index
/// serves, and nothing is left to check in Rust but free text.
pub fn postgres_query_typed(filter: &Filter<'_>, types: Option<&[String]>) -> PgQuery {
    postgres_query_read(filter, types, None)
}

/// [`postgres_query_typed`] with the ids of the only events that may pass
/// (the free-text index's for the words, `text_index::candidates`, or a
/// batch of a status's outcome rows, `postgres::outcome_keys`; a
/// superset): `e.event_id = ANY(ids)`, the key's index; every condition
/// is still tested as without them.
pub fn postgres_query_read(
    filter: &Filter<'_>,
    types: Option<&[String]>,
    ids: Option<&[String]>,
) -> PgQuery {
    let mut on_events = String::from("e.occurred_ms >= $1");
    let after_xid32 = filter.after_xid.map(|xid| xid.rem_euclid(XID_SPAN));
    let mut first = if after_xid32.is_some() {
        on_events.push_str(&format!(
            " AND (e.xmin::text::bigint - $2 + {XID_SPAN}) % {XID_SPAN} < {}",
            XID_SPAN / 2
        ));
        3
    } else {
        2
    };
    let types = types.filter(|_| filter.event_type.is_some());
    if let Some(types) = types {
        // One type is compared as a value, so the type index yields its
        // events newest first and the read stops at the limit; with `ANY`
        // the planner reads all of them and sorts (PostgreSQL 15).
        let condition = match types {
            [_] => format!(" AND e.event COLLATE \"C\" = (${first}::text[])[1]"),
            _ => format!(" AND e.event COLLATE \"C\" = ANY(${first}::text[])"),
        };
        on_events.push_str(&condition);
        first += 1;
    }
    if ids.is_some() {
        on_events.push_str(&format!(" AND e.event_id = ANY(${first}::text[])"));
        first += 1;
    }
    let mut texts: Vec<String> = Vec::new();
    if let Some(session) = filter.session {
        let low = next(&mut texts, first, session.to_owned());
        let high = next(&mut texts, first, past_prefix(session));
        on_events.push_str(&format!(
            " AND e.session_id COLLATE \"C\" >= {low} AND e.session_id COLLATE \"C\" < {high}"
        ));
    }
    let contains = |column: &str, needle: &str| {
        format!(
            "(strpos(lower(e.{column} COLLATE \"C\"), {needle}::text) > 0
              OR octet_length(e.{column}) <> char_length(e.{column}))"
        )
    };
    if let (Some(event_type), None) = (filter.event_type, types) {
        let needle = next(&mut texts, first, fold(event_type).into_owned());
        on_events.push_str(&format!(" AND {}", contains("event", &needle)));
    }
    for word in filter.words {
        let needle = next(&mut texts, first, word.clone());
        on_events.push_str(&format!(
            " AND ({} OR {} OR {})",
            contains("event_id", &needle),
            contains("session_id", &needle),
            contains("event", &needle)
        ));
    }
    let order = "ORDER BY occurred_ms DESC, event_id COLLATE \"C\" DESC";
    let checked_here = (filter.event_type.is_some() && types.is_none()) || !filter.words.is_empty();
    let outcomes = postgres_outcomes(filter, &mut texts, first);
    // The last parameter, after every text: the rows wanted, when SQL
    // decides them all (else Rust checks the rows and the caller limits).
    let limit = if checked_here {
        String::new()
    } else {
        format!(" LIMIT ${}", texts.len() + first)
    };
    let sql = match outcomes {
        None => {
            format!(
                "SELECT {POSTGRES_COLUMNS} FROM earshot.events e WHERE {on_events} {order}{limit}"
            )
        }
        Some((rows, None)) => format!(
            "SELECT {POSTGRES_COLUMNS} FROM earshot.events e WHERE {on_events}
               AND EXISTS (SELECT 1 FROM earshot.event_outcomes o WHERE {rows}) {order}{limit}"
        ),
        // Each arm ordered and limited too, so the planner reads the first
        // newest first and stops (without, it joined and sorted the whole
        // window: 2.5 s on a day of a million events). The unswept sessions
        // are read on their own, along their partial index (`MATERIALIZED`:
        // in the join the planner guesses a third of the sessions, which it
        // cannot estimate, and scans them all), and each one's events by
        // session, one index seek each (`LATERAL … OFFSET 0`: joined, it
        // hashes the window).
        Some((rows, Some(listening))) => format!(
            "WITH unswept AS MATERIALIZED (
               SELECT s.session_id, s.last_swept_ms FROM earshot.sessions s
               WHERE {UNSWEPT_SESSIONS})
             SELECT * FROM (
               (SELECT {POSTGRES_COLUMNS} FROM earshot.events e WHERE {on_events}
                 AND EXISTS (SELECT 1 FROM earshot.event_outcomes o WHERE {rows})
                 {order}{limit})
               UNION ALL
               (SELECT {POSTGRES_COLUMNS}
               FROM unswept s CROSS JOIN LATERAL (
                   SELECT e.*, e.xmin FROM earshot.events e
                   WHERE e.session_id = s.session_id OFFSET 0) e
               WHERE (s.last_swept_ms IS NULL OR s.last_swept_ms < e.received_ms)
                 AND {on_events}
                 AND NOT EXISTS (SELECT 1 FROM earshot.event_outcomes o
                                 WHERE o.session_id = e.session_id AND o.event_id = e.event_id)
                 AND EXISTS (SELECT 1 FROM earshot.subscriptions u WHERE {listening})
                 {order}{limit})
             ) l {order}{limit}"
        ),
    };
    PgQuery {
        sql,
        after_xid32,
        texts,
        types: types.map(<[String]>::to_vec),
        ids: ids.map(<[String]>::to_vec),
        checked_here,
    }
}

/// The conditions of `status:` and `sub:` for [`postgres_query`], their
/// texts added to `texts` (whose first is `$first`): on an event's
/// outcome rows `o`, and, when an event with no row yet passes as SQLite's
/// `unknown` row at filing would (no `status:` or `status:unknown`), on
/// the subscriptions `u` that would have had one (SQLite's
/// `outcomes::observed`: enabled, the type in its `events`). `None`
/// without either filter.
fn postgres_outcomes(
    filter: &Filter<'_>,
    texts: &mut Vec<String>,
    first: usize,
) -> Option<(String, Option<String>)> {
    if filter.state.is_none() && filter.subscription.is_none() {
        return None;
    }
    let mut rows = String::from("o.session_id = e.session_id AND o.event_id = e.event_id");
    let mut listening = String::from("u.enabled AND u.events::jsonb @> jsonb_build_array(e.event)");
    if let Some(state) = filter.state {
        let state = next(texts, first, state.as_str().to_owned());
        rows.push_str(&format!(" AND o.state = {state}"));
    }
    if let Some(subscription) = filter.subscription {
        let low = next(texts, first, subscription.to_owned());
        let high = next(texts, first, past_prefix(subscription));
        for (conditions, column) in [(&mut rows, "o.subscription_id"), (&mut listening, "u.id")] {
            conditions.push_str(&format!(
                " AND {column} COLLATE \"C\" >= {low} AND {column} COLLATE \"C\" < {high}"
            ));
        }
    }
    let unknown_too = matches!(filter.state, None | Some(EventState::Unknown));
    Some((rows, unknown_too.then_some(listening)))
}

/// Why `filter` cannot be listed from a PostgreSQL store, if it cannot:
/// `after_seq` is SQLite's `rowid` (a live read on PostgreSQL sets
/// `after_xid`, [`super::live_list`]). Every field of the query language
/// is answered.
pub fn postgres_lacks(filter: &Filter<'_>) -> Option<String> {
    filter.after_seq.map(|_| {
        "a live list by SQLite's row number has no meaning on PostgreSQL: read it with \
         store::live_list (by transaction)"
            .into()
    })
}

pub use super::event_list_pg::list_postgres;
pub(super) use super::event_list_pg::scan_postgres;

/// `[name, value]` pairs in arrival order.
pub type Headers = Vec<(String, String)>;

/// An event's stored headers (`[name, value]` pairs as the observer kept
/// them, secret values already left out) and body.
pub fn headers_and_body(
    store: &Store,
    event_id: &str,
) -> rusqlite::Result<Option<(Headers, Vec<u8>)>> {
    let Some(rowid) = super::event_key::rowid_of(&store.conn, event_id)? else {
        return Ok(None);
    };
    stored_headers_and_body(store, "rowid = ?1", params![rowid])
}

/// [`headers_and_body`] of the event with key `(occurred_ms, event_id)`,
/// which a caller holding the event has: no lookup by id alone.
pub fn headers_and_body_at(
    store: &Store,
    occurred_ms: i64,
    event_id: &str,
) -> rusqlite::Result<Option<(Headers, Vec<u8>)>> {
    stored_headers_and_body(
        store,
        "occurred_ms = ?1 AND event_id = ?2",
        params![occurred_ms, event_id],
    )
}

/// [`headers_and_body_at`]'s statement on PostgreSQL (the key finds the
/// day's partition).
const POSTGRES_HEADERS_AND_BODY_AT: &str = "
SELECT headers, body FROM earshot.events WHERE occurred_ms = $1 AND event_id = $2";

/// [`headers_and_body_at`] on a PostgreSQL store.
pub async fn headers_and_body_at_postgres(
    store: &PgStore,
    occurred_ms: i64,
    event_id: &str,
) -> Result<Option<(Headers, Vec<u8>)>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_HEADERS_AND_BODY_AT).await?;
    let Some(row) = client
        .query_opt(&statement, &[&occurred_ms, &event_id])
        .await?
    else {
        return Ok(None);
    };
    let headers: String = row.try_get(0)?;
    Ok(Some((
        serde_json::from_str(&headers).unwrap_or_default(),
        row.try_get(1)?,
    )))
}

fn stored_headers_and_body(
    store: &Store,
    condition: &str,
    values: impl rusqlite::Params,
) -> rusqlite::Result<Option<(Headers, Vec<u8>)>> {
    store
        .conn
        .prepare_cached(&format!(
            "SELECT headers, body FROM events WHERE {condition}"
        ))?
        .query_row(values, |row| {
            let headers: String = row.get(0)?;
            Ok((
                serde_json::from_str(&headers).unwrap_or_default(),
                row.get(1)?,
            ))
        })
        .optional()
}

/// Each subscription's row for each of `events`, one query for each 500
/// (the rows are keyed by session first; an event's id is in one session).
pub fn outcomes_of(store: &Store, events: &[ListedEvent]) -> rusqlite::Result<Vec<Outcome>> {
    let mut found = Vec::new();
    // SQLite takes at most 32,766 parameters; pages stay far below.
    for chunk in events.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let sql = format!(
            "SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
                    attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                    settled_ms
             FROM event_outcomes
             WHERE session_no IN (SELECT session_no FROM sessions WHERE session_id IN ({marks}))
               AND event_id IN ({marks})
             ORDER BY subscription_id"
        );
        let sessions = chunk.iter().map(|event| event.session_id.as_str());
        let ids = chunk.iter().map(|event| event.event_id.as_str());
        let mut statement = store.conn.prepare(&sql)?;
        let rows = statement.query_map(params_from_iter(sessions.chain(ids)), outcome_row)?;
        found.extend(super::readable::<_, Vec<_>>(rows)?);
    }
    Ok(found)
}

/// [`outcomes_of`] on PostgreSQL, in one statement (arrays, not marks).
const POSTGRES_OUTCOMES_OF: &str = "
    SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
           attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms
    FROM earshot.event_outcomes
    WHERE session_id = ANY($1) AND event_id = ANY($2)
    ORDER BY subscription_id COLLATE \"C\"";

/// [`outcomes_of`] on PostgreSQL: the rows the sweep wrote for `events`
/// (none before their session's sweep; see
/// `sessions::swept_since_postgres`).
pub async fn outcomes_of_postgres(
    store: &PgStore,
    events: &[ListedEvent],
) -> Result<Vec<Outcome>, PgError> {
    let sessions: Vec<&str> = events
        .iter()
        .map(|event| event.session_id.as_str())
        .collect();
    let ids: Vec<&str> = events.iter().map(|event| event.event_id.as_str()).collect();
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_OUTCOMES_OF).await?;
    let rows = client.query(&statement, &[&sessions, &ids]).await?;
    let mut found = Vec::with_capacity(rows.len());
    for row in &rows {
        found.push(super::outcome_rebuild::outcome_from(row)?);
    }
    Ok(found)
}
