//! The events a `status:` filter keeps, read from the outcome rows
//! newest first (schema version 14's `event_outcomes_unsettled`): the
//! rows of every state but `delivered` by state and time, so
//! `status:missed` (or `pending`, `recovered`) reads only rows of that
//! state, in the list's order, instead of testing each event of the
//! window newest first until enough pass (on a store whose missed events
//! are hours old, most of a day). `delivered`, nearly every row, keeps
//! the events' own order (the newest events pass at once), and
//! `unknown` its two arms (`event_list::postgres_query`).

use crate::store::outcomes::EventState;

/// The partial index, built in the migration's transaction:
/// `event_outcomes` is one table, not partitioned, written by the sweep
/// alone (which waits for the build), and the index holds the rows not
/// delivered only.
pub(super) const VERSION_14: &str = "
CREATE INDEX IF NOT EXISTS event_outcomes_unsettled
    ON earshot.event_outcomes (state, occurred_ms, event_id COLLATE \"C\")
    INCLUDE (subscription_id)
    WHERE state <> 'delivered' AND event_id IS NOT NULL;
";

/// Whether a filter of `state` reads its events by [`query`].
pub fn serves(state: Option<EventState>) -> bool {
    matches!(
        state,
        Some(EventState::Missed | EventState::Pending | EventState::Recovered)
    )
}

/// The `(occurred_ms, event_id)` of the outcome rows of state `$2` since
/// `$1` (with `by_subscription`, of a subscription id in `[$3, $4)`, byte
/// order), newest first and ties by id in byte order, as the list; an
/// event with rows of several subscriptions comes once a row, together.
pub fn query(by_subscription: bool) -> String {
    let subscription = if by_subscription {
        " AND o.subscription_id COLLATE \"C\" >= $3 AND o.subscription_id COLLATE \"C\" < $4"
    } else {
        ""
    };
    format!(
        "SELECT o.occurred_ms, o.event_id FROM earshot.event_outcomes o
         WHERE o.state = $2 AND o.state <> 'delivered' AND o.event_id IS NOT NULL
           AND o.occurred_ms >= $1{subscription}
         ORDER BY o.occurred_ms DESC, o.event_id COLLATE \"C\" DESC"
    )
}
