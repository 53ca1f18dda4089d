//! Whether the Events pane's list is still what the store holds: the
//! store's write mark at the last full read, so an idle pane checks the
//! files (no query) and reads again only after a commit.

use std::time::{Duration, Instant};

use earshot_core::history::event_query::EventQuery;
use earshot_core::store::mark::StoreMark;

/// A full read at least this often even with no commit seen, so rows
/// leaving the window (`since:`) go and the mark is never trusted long.
pub(crate) const FULL_READ_EVERY: Duration = Duration::from_secs(60);

/// The mark the last full read saw, for which filter, and when.
#[derive(Debug, Default)]
pub(crate) struct Freshness {
    last: Option<(EventQuery, StoreMark, Instant)>,
}

impl Freshness {
    /// The mark a read of `query` at `now` may skip on: none once the
    /// filter changed or the last full read is [`FULL_READ_EVERY`] old.
    pub(crate) fn known(&self, query: &EventQuery, now: Instant) -> Option<StoreMark> {
        let (read_query, mark, at) = self.last.as_ref()?;
        let fresh = now.saturating_duration_since(*at) < FULL_READ_EVERY;
        (read_query == query && fresh).then(|| mark.clone())
    }

    /// A full read of `query` taken at `now` saw `mark` (`None`: no mark,
    /// so the next read is full).
    pub(crate) fn note(&mut self, query: &EventQuery, mark: Option<StoreMark>, now: Instant) {
        self.last = mark.map(|mark| (query.clone(), mark, now));
    }
}
