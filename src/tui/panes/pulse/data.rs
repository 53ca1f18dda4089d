//! What the Pulse pane reads from the store, in one go: the account's
//! events per minute of the last hour by outcome and the deliveries in
//! flight (from the event counts the triggers keep, `store::timeline`),
//! and the observer's filing per hour of the last day (its hour counts),
//! from a file or a PostgreSQL store alike. A few hundred count rows at
//! most, never a scan of events.

use crate::tui::kernel::Failure;
use crate::tui::kernel::store::{CountWindows, StorePath, pulse_counts};
use earshot_core::store::events::ReceivedHours;
use earshot_core::store::outcomes::EventTotals;
use earshot_core::store::timeline::Timeline;

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
/// Minutes of events the chart covers.
pub(crate) const MINUTES: usize = 60;
/// Hours of filing the chart covers.
pub(crate) const HOURS: usize = 24;

/// One read of the store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PulseData {
    /// When it was read (Unix ms).
    pub(crate) at_ms: i64,
    /// Every subscription's events per minute, by the state they are in
    /// now, oldest first; the last minute holds `at_ms` (so far).
    pub(crate) minutes: Vec<EventTotals>,
    /// Events of the last day still pending (an attempt in flight or a
    /// retry scheduled): the deliveries in flight.
    pub(crate) in_flight: i64,
    /// Events the observer filed in each of the last hours, oldest first;
    /// the last hour holds `at_ms` (so far).
    pub(crate) filed: Vec<i64>,
    /// When the observer filed its newest event (Unix ms).
    pub(crate) newest_filed_ms: Option<i64>,
}

/// The store as of `now_ms`, from either backend
/// ([`pulse_counts`]: one read of the counts on a file or a PostgreSQL
/// store).
pub(crate) async fn read(store: StorePath, now_ms: i64) -> Result<PulseData, Failure> {
    let last_hour = now_ms.div_euclid(HOUR_MS);
    let first_hour = last_hour - (HOURS as i64 - 1);
    let windows = CountWindows {
        now_ms,
        timelines: [
            (now_ms - HOUR_MS, MINUTES),
            (now_ms - 24 * HOUR_MS, HOURS),
        ],
        hours: (first_hour, last_hour),
    };
    let ([minutes, day], received) = pulse_counts(store, windows).await?;
    Ok(fold(now_ms, first_hour, &minutes, &day, received))
}

/// The counts as the pane draws them: the last hour's minutes summed
/// over every subscription, what of the last day is still pending, and
/// each of the last [`HOURS`] hours' filing from `first_hour` on.
fn fold(
    now_ms: i64,
    first_hour: i64,
    minutes: &Timeline,
    day: &Timeline,
    received: ReceivedHours,
) -> PulseData {
    let mut per_minute = vec![EventTotals::default(); minutes.columns];
    for buckets in minutes.subscriptions.values() {
        for (total, bucket) in per_minute.iter_mut().zip(buckets) {
            total.absorb(bucket);
        }
    }
    let in_flight = day
        .subscriptions
        .values()
        .flatten()
        .map(|bucket| bucket.pending)
        .sum();
    let mut filed = vec![0; HOURS];
    for (hour, count) in received.hours {
        if let Some(slot) = usize::try_from(hour - first_hour)
            .ok()
            .and_then(|at| filed.get_mut(at))
        {
            *slot = count;
        }
    }
    PulseData {
        at_ms: now_ms,
        minutes: per_minute,
        in_flight,
        filed,
        newest_filed_ms: received.newest_ms,
    }
}
