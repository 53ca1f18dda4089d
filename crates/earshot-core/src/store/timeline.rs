//! Events per subscription per time bucket, by state: what a sparkline
//! draws. Read from the minute and hour counts the triggers keep as
//! outcomes arrive and change (`event_counts`, `event_counts_hourly`), so a
//! day of a busy account is a few hundred rows, never a scan of events.
//! An event counts in the bucket of the time it occurred, in the state it
//! is in now: a bucket of events missed and later re-sent reads recovered.
//! The same buckets from either backend ([`timeline`], [`timeline_postgres`]:
//! one statement, one window, one fold).

use std::borrow::Cow;
use std::collections::BTreeMap;

use rusqlite::params_from_iter;
use serde::Serialize;

use super::Store;
use super::outcomes::{EventState, EventTotals};
use super::postgres::{PgError, PgStore};

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

/// Where a timeline's buckets fall, worked out alike for both backends.
struct Window {
    /// Where the first bucket starts and where the last one ends (Unix ms).
    start_ms: i64,
    end_ms: i64,
    bucket_ms: i64,
    columns: usize,
    /// The count table read: the hourly one for buckets of an hour or more.
    table: &'static str,
    /// That table's time column, and its length in ms.
    unit: &'static str,
    unit_ms: i64,
}

impl Window {
    /// At most `columns` buckets of one [`bucket_for`] size from `since_ms`
    /// to `now_ms`, the last one holding `now_ms`.
    fn new(since_ms: i64, now_ms: i64, columns: usize) -> Window {
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
        let (table, unit, unit_ms) = if bucket_ms % HOUR_MS == 0 {
            ("event_counts_hourly", "hour", HOUR_MS)
        } else {
            ("event_counts", "minute", MINUTE_MS)
        };
        Window {
            start_ms,
            end_ms,
            bucket_ms,
            columns,
            table,
            unit,
            unit_ms,
        }
    }

    /// The statement's three parameters: the first unit, the unit after the
    /// last, and units a bucket.
    fn params(&self) -> [i64; 3] {
        [
            self.start_ms / self.unit_ms,
            self.end_ms / self.unit_ms,
            self.bucket_ms / self.unit_ms,
        ]
    }

    /// The grouped read of the counts, one statement for both backends:
    /// `schema` is where the tables are (`""` or `"earshot."`), `p` the
    /// parameter mark (`?` or `$`), `sum` the summing function (SQLite's
    /// `total`, a float that cannot overflow; PostgreSQL's `sum`, a
    /// numeric, cast back).
    fn statement(&self, schema: &str, p: char, sum: &str) -> String {
        let (unit, table) = (self.unit, self.table);
        format!(
            "SELECT subscription_id, state, ({unit} - {p}1) / {p}3, {sum}
             FROM {schema}{table} WHERE {unit} >= {p}1 AND {unit} < {p}2
             GROUP BY 1, 2, 3 HAVING {sum} > 0"
        )
    }

    /// The timeline made of the rows read: (subscription, state, bucket,
    /// count); a bucket outside the window is left out.
    fn fold(self, counted: Vec<(String, EventState, i64, i64)>) -> Timeline {
        let columns = self.columns;
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
        Timeline {
            start_ms: self.start_ms,
            bucket_ms: self.bucket_ms,
            columns,
            subscriptions,
        }
    }
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
    let window = Window::new(since_ms, now_ms, columns);
    let mut statement = store
        .conn
        .prepare_cached(&window.statement("", '?', "total(count)"))?;
    let rows = statement.query_map(params_from_iter(window.params()), |row| {
        let state: String = row.get(1)?;
        Ok((
            row.get::<_, String>(0)?,
            EventState::parse(&state).unwrap_or(EventState::Unknown),
            row.get::<_, i64>(2)?,
            super::summed_count(row, 3)?,
        ))
    })?;
    let counted = super::readable(rows)?;
    Ok(window.fold(counted))
}

/// [`timeline`] on a PostgreSQL store: the same buckets from the same
/// counts (kept there by triggers, schema version 6).
pub async fn timeline_postgres(
    store: &PgStore,
    since_ms: i64,
    now_ms: i64,
    columns: usize,
) -> Result<Timeline, PgError> {
    let window = Window::new(since_ms, now_ms, columns);
    let client = store.client().await?;
    let statement = client
        .prepare_cached(&window.statement("earshot.", '$', "sum(count)::bigint"))
        .await?;
    let [first, end, per_bucket] = window.params();
    let rows = client
        .query(&statement, &[&first, &end, &per_bucket])
        .await?;
    let mut counted = Vec::with_capacity(rows.len());
    for row in &rows {
        let state: String = row.try_get(1)?;
        counted.push((
            row.try_get::<_, String>(0)?,
            EventState::parse(&state).unwrap_or(EventState::Unknown),
            row.try_get::<_, i64>(2)?,
            row.try_get::<_, i64>(3)?,
        ));
    }
    Ok(window.fold(counted))
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
