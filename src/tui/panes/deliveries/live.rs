//! Whether the Deliveries pane is live (an attempt pending, or a retry
//! still to come): [`Liveness`], a summary of the rows kept when they
//! change, so that frames and loop passes ask it in constant time instead
//! of scanning every row.

use chrono::{DateTime, Utc};

use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};

/// A `next_retry_at` this far in the past still counts as "about to
/// happen" (the new attempt may not be recorded yet).
pub(super) const RETRY_GRACE_SECS: i64 = 10;

/// How many rows are pending and the latest retry any row announces: all
/// that [`Liveness::live_at`] needs, whatever the number of rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Liveness {
    pending: usize,
    latest_retry: Option<DateTime<Utc>>,
}

impl Liveness {
    /// The summary of `rows`; taken once when the rows are replaced.
    pub(super) fn of(rows: &[DeliveryRecord]) -> Liveness {
        let mut liveness = Liveness::default();
        for row in rows {
            liveness.add(row);
        }
        liveness
    }

    fn add(&mut self, row: &DeliveryRecord) {
        if row.status == DeliveryStatus::Pending {
            self.pending += 1;
        }
        if let Some(at) = row.next_retry_at {
            let at = at.with_timezone(&Utc);
            self.latest_retry = Some(self.latest_retry.map_or(at, |latest| latest.max(at)));
        }
    }

    /// Some row is pending, or some retry (plus the grace) is after `now`:
    /// the latest retry is after `now` exactly when any is.
    pub(super) fn live_at(&self, now: DateTime<Utc>) -> bool {
        let grace = chrono::Duration::seconds(RETRY_GRACE_SECS);
        self.pending > 0
            || self.latest_retry.is_some_and(|at| {
                // Past the calendar's end is still to come.
                at.checked_add_signed(grace).is_none_or(|until| until > now)
            })
    }
}
