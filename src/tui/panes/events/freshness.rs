//! Whether the Events pane's list is still what the store holds: the
//! store file's write mark and the live read's cursor at the last read,
//! so an idle pane on a file checks the files (no query), after a commit
//! reads one row (the list state), after events filed reads those only
//! ([`with_newer`]), and reads the whole list again only when something
//! it shows changed. On PostgreSQL (no file) each read asks the server
//! for what was filed since the cursor, by any replica.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use earshot_core::history::event_list::EventRow;
use earshot_core::history::event_query::EventQuery;
use earshot_core::store::live_list::LiveCursor;
use earshot_core::store::mark::StoreMark;

/// A full read at least this often even with no commit seen, so rows
/// leaving the window (`since:`) go and the mark is never trusted long.
pub(crate) const FULL_READ_EVERY: Duration = Duration::from_secs(60);

/// What a read saw of the store: its files' write mark (`None`: not a
/// file), and where the live read stood (`None` when it could not say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListMark {
    pub(crate) files: Option<StoreMark>,
    pub(crate) cursor: Option<LiveCursor>,
}

/// The mark the last full read saw, for which filter, and when.
#[derive(Debug, Default)]
pub(crate) struct Freshness {
    last: Option<(EventQuery, ListMark, Instant)>,
}

impl Freshness {
    /// The mark a read of `query` at `now` may skip on: none once the
    /// filter changed or the last full read is [`FULL_READ_EVERY`] old.
    pub(crate) fn known(&self, query: &EventQuery, now: Instant) -> Option<ListMark> {
        let (read_query, mark, at) = self.last.as_ref()?;
        let fresh = now.saturating_duration_since(*at) < FULL_READ_EVERY;
        (read_query == query && fresh).then(|| mark.clone())
    }

    /// A full read of `query` taken at `now` saw `mark` (`None`: no mark,
    /// so the next read is full).
    pub(crate) fn note(&mut self, query: &EventQuery, mark: Option<ListMark>, now: Instant) {
        self.last = mark.map(|mark| (query.clone(), mark, now));
    }

    /// A read found nothing changed but, at most, events filed (read and
    /// added) under a new write mark: the next read compares with that
    /// mark; the last full read keeps its time.
    pub(crate) fn renew(&mut self, mark: ListMark) {
        if let Some((_, last, _)) = &mut self.last {
            *last = mark;
        }
    }
}

/// The list `shown` with the events filed since it was read (`newer`, read
/// with the same filter), without those older than `window_from` (the
/// window moved on), newest first as the store lists them, at most
/// `limit`: what a full read would give when nothing else changed. An
/// event in both (filed during the last read) is taken from `newer`.
pub(crate) fn with_newer(
    shown: &[EventRow],
    mut newer: Vec<EventRow>,
    window_from: i64,
    limit: usize,
) -> Vec<EventRow> {
    let fresh: HashSet<&str> = newer.iter().map(|row| row.event_id.as_str()).collect();
    let kept: Vec<EventRow> = shown
        .iter()
        .filter(|row| row.occurred_ms >= window_from && !fresh.contains(row.event_id.as_str()))
        .cloned()
        .collect();
    newer.extend(kept);
    newer.sort_by(|a, b| (b.occurred_ms, &b.event_id).cmp(&(a.occurred_ms, &a.event_id)));
    newer.truncate(limit);
    newer
}
