//! The read behind the console's Events pane, as its worker makes it: a
//! store opened for the read, then `history::event_list::list` for the
//! newest `LIST_LIMIT` events of the pane's window passing the filter.
//! Shared by the in-process list timings (`list.rs`) and the pane's frame
//! benchmark (`benches/events_pane.rs`), which draws what it returns.

use std::path::Path;

use earshot_core::history::event_list::{EventRow, list};
use earshot_core::history::event_query::EventQuery;
use earshot_core::store::Store;
use rusqlite::{Connection, OpenFlags};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The rows the Events pane holds at most (`LIST_LIMIT`).
pub const SHOWN: usize = 5_000;
/// How far back the Events pane lists (`DEFAULT_SINCE_MS`): 7 days.
pub const PANE_WINDOW_MS: i64 = 7 * 86_400_000;

/// The time a benchmark counts back from: a second after the store's
/// newest event, so `since:1h` is the last hour of its traffic however
/// long ago it was built.
pub fn store_now(path: &Path) -> Result<i64, BoxError> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let newest: Option<i64> =
        conn.query_row("SELECT max(received_ms) FROM events", [], |row| row.get(0))?;
    Ok(newest.ok_or("the store holds no event")? + 1_000)
}

/// The pane's read of `query` at `now_ms`.
pub fn read(path: &Path, query: &EventQuery, now_ms: i64) -> Result<Vec<EventRow>, BoxError> {
    let store = Store::open(path)?;
    Ok(list(&store, query, now_ms - PANE_WINDOW_MS, SHOWN)?)
}
