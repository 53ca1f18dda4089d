//! Whether the Events pane's list is still what the store holds: the
//! store's write mark and list version at the last full read, so an idle
//! pane checks the files (no query), and after a commit reads one row
//! (the list version) before it reads the list again.

use std::time::{Duration, Instant};

use earshot_core::history::event_query::EventQuery;
use earshot_core::store::mark::StoreMark;

/// A full read at least this often even with no commit seen, so rows
/// leaving the window (`since:`) go and the mark is never trusted long.
pub(crate) const FULL_READ_EVERY: Duration = Duration::from_secs(60);

/// What a read saw of the store: its files' write mark, and the version of
/// what a list shows (`None` when it could not be read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListMark {
    pub(crate) files: StoreMark,
    pub(crate) version: Option<i64>,
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

    /// A skipped read found the list version unchanged under a new write
    /// mark: the next skip compares with that mark; the last full read
    /// keeps its time.
    pub(crate) fn renew(&mut self, mark: ListMark) {
        if let Some((_, last, _)) = &mut self.last {
            *last = mark;
        }
    }
}
