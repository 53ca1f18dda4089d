//! Reading the Events list from a PostgreSQL store ([`list_postgres`],
//! and [`scan_postgres`] for a live list): which index finds the
//! candidates first (the stored types along the type index, the text
//! index's events for free text, the outcome rows of a `status:` newest
//! first), then the statement `event_list::postgres_query_read` builds,
//! read through a portal in batches, each row checked with [`fold`] where
//! text is matched, until `limit` pass.

use std::collections::HashSet;

use super::event_list::{Filter, ListedEvent, postgres_lacks, postgres_query_read};
use super::postgres::type_index::matching_types;
use super::postgres::{PgError, PgStore, outcome_keys, text_index};
use super::{StoreError, event_list};
use crate::query::fold;

/// Rows read at a time from PostgreSQL: the statement runs as a portal
/// read in batches, so a scan stops soon after `limit` rows passed.
const POSTGRES_BATCH: i32 = 500;

type Found = Vec<(ListedEvent, i64)>;

/// [`event_list::list`] on a PostgreSQL store: the same events in the
/// same order, by the statement `postgres_query_read` builds, read in
/// batches of [`POSTGRES_BATCH`] until `limit` pass (each checked with
/// [`fold`] when there is text to match). A type is read as the stored
/// types it matches once the type index is built; free text as the events
/// the text index finds, when it is built and they are at most 100 ×
/// `limit` (`text_index::candidates`), else tested on the window's rows
/// newest first; `status:missed` (`pending`, `recovered`) from its outcome
/// rows newest first (`outcome_keys`). A filter `postgres_lacks` is
/// refused.
pub async fn list_postgres(
    store: &PgStore,
    filter: &Filter<'_>,
    limit: usize,
) -> Result<Vec<ListedEvent>, StoreError> {
    if let Some(why) = postgres_lacks(filter) {
        return Err(StoreError::NotOnPostgres(why));
    }
    if limit == 0 {
        return Ok(Vec::new());
    }
    let read = async {
        let mut client = store.client().await?;
        let tx = client.build_transaction().read_only(true).start().await?;
        let found = scan_postgres(&tx, filter, limit).await?;
        tx.commit().await?;
        Ok::<_, PgError>(found)
    };
    Ok(read.await?.into_iter().map(|(event, _)| event).collect())
}

/// The rows of `postgres_query_read` for `filter` that pass [`fold`]
/// matching, newest first, at most `limit`, each with its `xmin` (32
/// bits), read in `tx` through a portal. `filter` is not checked with
/// `postgres_lacks` here: the caller did.
pub(super) async fn scan_postgres(
    tx: &deadpool_postgres::Transaction<'_>,
    filter: &Filter<'_>,
    limit: usize,
) -> Result<Found, PgError> {
    let types = match filter.event_type {
        Some(typed) => matching_types(tx, filter.since_ms, typed).await?,
        None => None,
    };
    if types.as_ref().is_some_and(Vec::is_empty) {
        // No stored type matches: nothing to read.
        return Ok(Vec::new());
    }
    let ids = match filter.words {
        [] => None,
        words => {
            let most = i64::try_from(limit)
                .unwrap_or(i64::MAX)
                .saturating_mul(100)
                .clamp(1_000, 200_000);
            text_index::candidates(tx, filter.since_ms, words, most).await?
        }
    };
    if ids.as_ref().is_some_and(Vec::is_empty) {
        // The index finds no event holding the words.
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    if outcome_keys::serves(filter.state) {
        by_outcomes(
            tx,
            filter,
            types.as_deref(),
            ids.as_deref(),
            limit,
            &mut found,
        )
        .await?;
    } else {
        read(
            tx,
            filter,
            types.as_deref(),
            ids.as_deref(),
            limit,
            &mut found,
        )
        .await?;
    }
    Ok(found)
}

/// The events of the outcome rows of the filter's state newest first,
/// a batch of [`POSTGRES_BATCH`] rows at a time, each batch's ids (those
/// the text index found too, when it was read: `text_ids`, sorted) read by
/// [`read`] with every condition, until `limit` pass. The batches follow
/// the list's order, so the events found do too.
async fn by_outcomes(
    tx: &deadpool_postgres::Transaction<'_>,
    filter: &Filter<'_>,
    types: Option<&[String]>,
    text_ids: Option<&[String]>,
    limit: usize,
    found: &mut Found,
) -> Result<(), PgError> {
    let state = filter.state.map(|state| state.as_str().to_owned());
    let low = filter.subscription.map(str::to_owned);
    let high = filter.subscription.map(event_list::past_prefix);
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        vec![&filter.since_ms, &state];
    if let (Some(low), Some(high)) = (&low, &high) {
        params.push(low);
        params.push(high);
    }
    let statement = tx
        .prepare_cached(&outcome_keys::query(low.is_some()))
        .await?;
    let portal = tx.bind(&statement, &params).await?;
    let mut last: Option<(i64, String)> = None;
    loop {
        let rows = tx.query_portal(&portal, POSTGRES_BATCH).await?;
        let last_batch = rows.len() < POSTGRES_BATCH as usize;
        let mut batch: Vec<String> = Vec::new();
        for row in rows {
            let key: (i64, String) = (row.try_get(0)?, row.try_get(1)?);
            if last.as_ref() != Some(&key) {
                let kept = text_ids.is_none_or(|ids| ids.binary_search(&key.1).is_ok());
                if kept && batch.last() != Some(&key.1) {
                    batch.push(key.1.clone());
                }
                last = Some(key);
            }
        }
        if !batch.is_empty() {
            read(tx, filter, types, Some(&batch), limit, found).await?;
            if found.len() >= limit {
                return Ok(());
            }
        }
        if last_batch {
            return Ok(());
        }
    }
}

/// Adds to `found` the rows of `postgres_query_read(filter, types, ids)`
/// that pass [`fold`] matching, in order, until it holds `limit` (an
/// event already in it is not added again); a statement checked here is
/// read with a `LIMIT` first (10 × `limit`, at least 1,000).
async fn read(
    tx: &deadpool_postgres::Transaction<'_>,
    filter: &Filter<'_>,
    types: Option<&[String]>,
    ids: Option<&[String]>,
    limit: usize,
    found: &mut Found,
) -> Result<(), PgError> {
    let query = postgres_query_read(filter, types, ids);
    let limit_value = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&filter.since_ms];
    if let Some(xid32) = &query.after_xid32 {
        params.push(xid32);
    }
    if let Some(types) = &query.types {
        params.push(types);
    }
    if let Some(ids) = &query.ids {
        params.push(ids);
    }
    params.extend(
        query
            .texts
            .iter()
            .map(|text| text as &(dyn tokio_postgres::types::ToSql + Sync)),
    );
    if !query.checked_here {
        params.push(&limit_value);
    }
    let wanted_type = filter.event_type.map(fold);
    let passes = |event: &ListedEvent| {
        wanted_type
            .as_deref()
            .is_none_or(|wanted| fold(&event.event).contains(wanted))
            && filter.words.iter().all(|word| {
                [&event.event_id, &event.session_id, &event.event]
                    .iter()
                    .any(|text| fold(text).contains(word.as_str()))
            })
    };
    let seen: HashSet<(i64, String)> = found
        .iter()
        .map(|(event, _)| (event.occurred_ms, event.event_id.clone()))
        .collect();
    let start = found.len();
    if query.checked_here {
        // A statement without LIMIT is planned for all its rows (a sort of
        // the window for a common word); with one, newest first along the
        // time index. SQL keeps a superset only of the rows not ASCII, so
        // when the limited read is used up short of `limit`, it is read
        // again whole.
        let hint = limit.saturating_mul(10).max(1_000);
        let limited = format!("{} LIMIT {hint}", query.sql);
        let read = scan(tx, &limited, &params, limit, &passes, seen.clone(), found).await?;
        if read < hint || found.len() >= limit {
            return Ok(());
        }
        found.truncate(start);
    }
    scan(tx, &query.sql, &params, limit, &passes, seen, found).await?;
    Ok(())
}

/// Reads `sql` through a portal in batches, adding the rows that pass and
/// are not in `seen` to `found` until it holds `limit`; the rows read.
async fn scan(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    limit: usize,
    passes: &(dyn Fn(&ListedEvent) -> bool + Sync),
    mut seen: HashSet<(i64, String)>,
    found: &mut Found,
) -> Result<usize, PgError> {
    let statement = tx.prepare_cached(sql).await?;
    let portal = tx.bind(&statement, params).await?;
    let mut read = 0;
    loop {
        let rows = tx.query_portal(&portal, POSTGRES_BATCH).await?;
        let last_batch = rows.len() < POSTGRES_BATCH as usize;
        read += rows.len();
        for row in rows {
            let event = ListedEvent {
                event_id: row.try_get(0)?,
                event: row.try_get(1)?,
                session_id: row.try_get(2)?,
                occurred_ms: row.try_get(3)?,
                received_ms: row.try_get(4)?,
            };
            if passes(&event) && seen.insert((event.occurred_ms, event.event_id.clone())) {
                found.push((event, row.try_get(5)?));
                if found.len() >= limit {
                    return Ok(read);
                }
            }
        }
        if last_batch {
            return Ok(read);
        }
    }
}
