//! Events per subscription per time bucket, by state: what a sparkline
//! draws. Read from the minute and hour counts the triggers keep as
//! outcomes arrive and change (`event_counts`, `event_counts_hourly`), so a
//! day of a busy account is a few hundred rows, never a scan of events.
//! An event counts in the bucket of the time it occurred, in the state it
//! is in now: a bucket of events missed and later re-sent reads recovered.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rusqlite::params;
use serde::Serialize;

use super::Store;
use super::outcomes::{EventState, EventTotals};

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;

/// The bucket sizes a timeline picks from, in minutes: the smallest that
/// fits the window in the columns given.
const LADDER_MINUTES: [i64; 13] = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 10080];

/// Every subscription's buckets over one window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timeline {
    /// Where the first bucket starts (Unix ms).
    pub start_ms: i64,
    pub bucket_ms: i64,
    /// How many buckets each row has.
    pub columns: usize,
    /// Per subscription id, `columns` buckets, oldest first.
    pub subscriptions: BTreeMap<String, Vec<EventTotals>>,
}

impl Timeline {
    /// The buckets of `subscription_id`: every one empty when it had no
    /// event in the timeline.
    pub fn buckets_of(&self, subscription_id: &str) -> Cow<'_, [EventTotals]> {
        match self.subscriptions.get(subscription_id) {
            Some(buckets) => Cow::Borrowed(buckets),
            None => Cow::Owned(vec![EventTotals::default(); self.columns]),
        }
    }

    /// The bucket `at_ms` falls in, if inside the timeline.
    pub fn column_of(&self, at_ms: i64) -> Option<usize> {
        let offset = at_ms.checked_sub(self.start_ms)?;
        usize::try_from(offset / self.bucket_ms)
            .ok()
            .filter(|column| *column < self.columns)
    }
}

/// The bucket size for `span_ms` in at most `columns` buckets: a step of
/// [`LADDER_MINUTES`].
pub fn bucket_for(span_ms: i64, columns: usize) -> i64 {
    let columns = i64::try_from(columns.max(1)).unwrap_or(i64::MAX);
    LADDER_MINUTES
        .iter()
        .map(|minutes| minutes * MINUTE_MS)
        .find(|bucket| bucket.saturating_mul(columns) >= span_ms)
        .unwrap_or(LADDER_MINUTES[LADDER_MINUTES.len() - 1] * MINUTE_MS)
}

/// The buckets of every subscription from `since_ms` to `now_ms`, in at
/// most `columns` buckets of one [`bucket_for`] size, the last one holding
/// `now_ms`. Buckets of an hour or more read the hourly counts.
pub fn timeline(
    store: &Store,
    since_ms: i64,
    now_ms: i64,
    columns: usize,
) -> rusqlite::Result<Timeline> {
    // The window to the whole minute: `--since 1h`, read a moment before
    // `now_ms`, is an hour of one-minute buckets, not of two.
    let span_ms = now_ms.saturating_sub(since_ms);
    let bucket_ms = bucket_for((span_ms - span_ms % MINUTE_MS).max(1), columns);
    let end_ms = (now_ms.div_euclid(bucket_ms) + 1) * bucket_ms;
    let wanted = (end_ms - since_ms.div_euclid(bucket_ms) * bucket_ms) / bucket_ms;
    let columns = usize::try_from(wanted.max(1))
        .unwrap_or(columns)
        .min(columns.max(1));
    let start_ms = end_ms - bucket_ms * i64::try_from(columns).unwrap_or(1);
    let (table, unit_ms) = if bucket_ms % HOUR_MS == 0 {
        ("event_counts_hourly", HOUR_MS)
    } else {
        ("event_counts", MINUTE_MS)
    };
    let unit = if unit_ms == HOUR_MS { "hour" } else { "minute" };
    let per_bucket = bucket_ms / unit_ms;
    let mut statement = store.conn.prepare_cached(&format!(
        "SELECT subscription_id, state, ({unit} - ?1) / ?3, total(count)
         FROM {table} WHERE {unit} >= ?1 AND {unit} < ?2
         GROUP BY 1, 2, 3 HAVING total(count) > 0"
    ))?;
    let rows = statement.query_map(
        params![start_ms / unit_ms, end_ms / unit_ms, per_bucket],
        |row| {
            let state: String = row.get(1)?;
            Ok((
                row.get::<_, String>(0)?,
                EventState::parse(&state).unwrap_or(EventState::Unknown),
                row.get::<_, i64>(2)?,
                super::summed_count(row, 3)?,
            ))
        },
    )?;
    let counted: Vec<(String, EventState, i64, i64)> = super::readable(rows)?;
    let mut subscriptions: BTreeMap<String, Vec<EventTotals>> = BTreeMap::new();
    for (subscription, state, column, count) in counted {
        let Some(column) = usize::try_from(column).ok().filter(|c| *c < columns) else {
            continue;
        };
        subscriptions
            .entry(subscription)
            .or_insert_with(|| vec![EventTotals::default(); columns])[column]
            .add(state, count);
    }
    Ok(Timeline {
        start_ms,
        bucket_ms,
        columns,
        subscriptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_is_the_smallest_step_that_fits() {
        assert_eq!(bucket_for(HOUR_MS, 60), MINUTE_MS);
        assert_eq!(bucket_for(HOUR_MS, 59), 2 * MINUTE_MS);
        assert_eq!(bucket_for(24 * HOUR_MS, 60), 30 * MINUTE_MS);
        assert_eq!(bucket_for(24 * HOUR_MS, 24), HOUR_MS);
        assert_eq!(bucket_for(7 * 24 * HOUR_MS, 60), 3 * HOUR_MS);
        assert_eq!(bucket_for(i64::MAX, 1), 10080 * MINUTE_MS);
    }
}
