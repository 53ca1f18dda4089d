//! An incident on a time axis: its subscription's events per bucket from
//! the incident's first failure to now (missed, recovered and the rest, as
//! [`crate::store::timeline`] counts them), and what the change log and
//! the acknowledgement say happened meanwhile (secret rotations, URL
//! changes, pauses, recover runs), each at its bucket, so the moment of a
//! deploy or a rotation reads against the failures. Read from either
//! backend ([`build`], [`build_postgres`], [`build_in`]); one rule makes
//! the marks.

use serde::Serialize;

use super::incidents::Incident;
use crate::store::changes::{self, Change};
use crate::store::outcomes::EventTotals;
use crate::store::postgres::PgStore;
use crate::store::timeline::{Timeline, timeline, timeline_postgres};
use crate::store::{Store, StoreError, StoreReader};

/// One incident's buckets and marks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IncidentTimeline {
    /// Where the first bucket starts (Unix ms).
    pub start_ms: i64,
    pub bucket_ms: i64,
    /// The subscription's events per bucket, oldest first.
    pub buckets: Vec<EventTotals>,
    /// Oldest first.
    pub marks: Vec<TimelineMark>,
}

/// Something that happened to the subscription during the incident.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineMark {
    pub at_ms: i64,
    /// The bucket it falls in, `None` before the first.
    pub column: Option<usize>,
    /// `rotate`, `update`, `pause`, `recover`, `acknowledged`, …
    pub action: String,
    /// Who did it.
    pub operator: String,
    /// The change's detail (before → after), or the acknowledgement's note.
    pub detail: String,
}

/// The timeline of `incident` from its first failure to `now_ms`, in at
/// most `columns` buckets.
pub fn build(
    store: &Store,
    incident: &Incident,
    now_ms: i64,
    columns: usize,
) -> Result<IncidentTimeline, StoreError> {
    let read = timeline(store, incident.first_seen_ms, now_ms, columns)?;
    let changes = changes::since(store, read.start_ms)?;
    Ok(assemble(incident, &read, changes))
}

/// [`build`] on a PostgreSQL store: the same counts and change log, read
/// from its pool.
pub async fn build_postgres(
    store: &PgStore,
    incident: &Incident,
    now_ms: i64,
    columns: usize,
) -> Result<IncidentTimeline, StoreError> {
    let read = timeline_postgres(store, incident.first_seen_ms, now_ms, columns).await?;
    let changes = changes::since_postgres(store, read.start_ms).await?;
    Ok(assemble(incident, &read, changes))
}

/// [`build`] on either backend.
pub async fn build_in(
    store: &StoreReader,
    incident: &Incident,
    now_ms: i64,
    columns: usize,
) -> Result<IncidentTimeline, StoreError> {
    match store {
        StoreReader::Sqlite(store) => build(store, incident, now_ms, columns),
        StoreReader::Postgres(store) => build_postgres(store, incident, now_ms, columns).await,
    }
}

/// The timeline from what either backend read: the subscription's
/// buckets, its changes since the first bucket and the acknowledgement as
/// marks, oldest first.
fn assemble(incident: &Incident, read: &Timeline, changes: Vec<Change>) -> IncidentTimeline {
    let buckets = read.buckets_of(&incident.subscription_id).into_owned();
    let mut marks: Vec<TimelineMark> = changes
        .into_iter()
        .filter(|change| change.subscription_id.as_deref() == Some(&incident.subscription_id))
        .map(|change| TimelineMark {
            at_ms: change.at_ms,
            column: read.column_of(change.at_ms),
            action: change.action,
            operator: change.operator,
            detail: change.detail,
        })
        .collect();
    if let (Some(at_ms), Some(by)) = (incident.acknowledged_ms, &incident.acknowledged_by) {
        marks.push(TimelineMark {
            at_ms,
            column: read.column_of(at_ms),
            action: "acknowledged".to_owned(),
            operator: by.clone(),
            detail: incident.note.clone().unwrap_or_default(),
        });
    }
    marks.sort_by_key(|mark| mark.at_ms);
    IncidentTimeline {
        start_ms: read.start_ms,
        bucket_ms: read.bucket_ms,
        buckets,
        marks,
    }
}
