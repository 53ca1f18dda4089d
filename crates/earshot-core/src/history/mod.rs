//! Incident history (DESIGN §9): the account-wide view the platform does
//! not give, built from the spec's own endpoints and the [`crate::store`].
//!
//! - [`sweep`] fetches the delivery records of known sessions within a
//!   request budget and stores them;
//! - [`report`] turns the stored records into per-subscription health in
//!   events, with failures grouped by diagnosis;
//! - [`event_list`] lists observed events with their outcome per
//!   subscription, filtered with the [`event_query`] language, and
//!   [`body_view`] shows an event's body with personal data masked;
//! - [`incidents`] are failure groups with a state operators acknowledge;
//! - [`coverage`] says whether the observer saw enough to know what was
//!   missed;
//! - [`artifact_download`] streams a recording or transcript to disk;
//! - [`session_view`] puts one session's record, events, links and
//!   deliveries together;
//! - [`receiver_probe`] asks a receiver with signed duplicates of an event
//!   it was sent (the one place that does): [`rotation`] checks a receiver
//!   holds a new secret before a rotation, and watches what follows;
//!   [`refused_delivery`] asks a receiver that answered 401 which secret it
//!   holds, read by [`held_secret`];
//! - [`recover`] re-sends, signed anew, the observer's exact bytes of every
//!   event a subscription missed for good.
//!
//! Front ends (`earshot health|sessions|redeliver`, the console's Health
//! pane) are thin layers over these.

pub mod artifact_download;
pub mod body_view;
pub mod coverage;
pub mod event_list;
pub mod event_query;
pub mod held_secret;
pub mod incident_timeline;
pub mod incidents;
pub mod receiver_probe;
pub mod recover;
pub mod refused_delivery;
pub mod report;
pub mod report_postgres;
pub mod rotation;
pub mod session_view;
pub mod sparkline;
pub mod sweep;
pub mod verdict;

use crate::api::ApiError;
use crate::store::StoreError;

/// Why a history operation could not finish.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(
        "no subscription {0} in the store: run `earshot health` first so the sweep lists them, \
         or check the id with `earshot subs list --include-disabled`"
    )]
    UnknownSubscription(String),
    #[error("cannot start the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("{0} matches several subscriptions: give more of the id")]
    AmbiguousSubscription(String),
    #[error("the store holds no event {0}: only events the observer received can be re-sent")]
    UnknownEvent(String),
    #[error(
        "the receiver's URL {0}, so earshot sends it nothing; to probe a receiver on this \
         machine or a private network (an emulator's), give --allow-private-urls"
    )]
    ReceiverUrl(String),
}

impl From<crate::store::postgres::PgError> for HistoryError {
    fn from(error: crate::store::postgres::PgError) -> Self {
        HistoryError::Store(StoreError::from(error))
    }
}

impl From<rusqlite::Error> for HistoryError {
    fn from(error: rusqlite::Error) -> Self {
        HistoryError::Store(StoreError::from(error))
    }
}
