//! Incidents as operators read them: each stored failure group
//! (`store::incidents`) with its diagnosis in words, its events missed and
//! recovered, and a state: open, acknowledged (by whom, when, with what
//! note) or resolved (on its own: a later event was delivered and nothing
//! missed is left unrecovered; or with its subscription, deleted or
//! paused, the reason kept). Each read and the acknowledgement has a
//! SQLite function (on a `Store`, for callers already on the blocking
//! pool), a PostgreSQL twin (`*_postgres`), and one taking either backend
//! (`*_in`, on a [`StoreReader`]), which the commands call.

use serde::Serialize;

use super::report::{failure_label, rfc3339};
use crate::store::incidents::{self, IncidentRow};
use crate::store::postgres::PgStore;
use crate::store::{Store, StoreError, StoreReader};

/// An incident's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IncidentState {
    Open,
    Acknowledged,
    Resolved,
}

impl IncidentState {
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentState::Open => "open",
            IncidentState::Acknowledged => "acknowledged",
            IncidentState::Resolved => "resolved",
        }
    }
}

/// One incident (`earshot incidents --json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Incident {
    pub id: String,
    pub subscription_id: String,
    /// "401 invalid signature: …".
    pub diagnosis: String,
    pub first_seen_at: String,
    pub last_seen_at: String,
    pub missed: i64,
    pub recovered: i64,
    /// Failed events whose retries are still to come.
    pub retrying: i64,
    pub state: IncidentState,
    pub acknowledged_by: Option<String>,
    pub acknowledged_at: Option<String>,
    pub note: Option<String>,
    pub resolved_at: Option<String>,
    /// What resolved it when not its own recovery: `subscription deleted`,
    /// `subscription paused`; `null` otherwise.
    pub resolved_reason: Option<String>,
    #[serde(skip)]
    pub first_seen_ms: i64,
    #[serde(skip)]
    pub last_seen_ms: i64,
    #[serde(skip)]
    pub acknowledged_ms: Option<i64>,
}

impl From<IncidentRow> for Incident {
    fn from(row: IncidentRow) -> Self {
        let state = match (row.resolved_ms, &row.acknowledged_by) {
            (Some(_), _) => IncidentState::Resolved,
            (None, Some(_)) => IncidentState::Acknowledged,
            (None, None) => IncidentState::Open,
        };
        let code = (row.http_status_code != 0).then_some(row.http_status_code);
        Incident {
            diagnosis: failure_label(code, &row.error_class),
            first_seen_at: rfc3339(row.first_seen_ms),
            last_seen_at: rfc3339(row.last_seen_ms),
            acknowledged_at: row.acknowledged_ms.map(rfc3339),
            resolved_at: row.resolved_ms.map(rfc3339),
            resolved_reason: row.resolved_reason,
            id: row.id,
            subscription_id: row.subscription_id,
            missed: row.missed,
            recovered: row.recovered,
            retrying: row.retrying,
            state,
            acknowledged_by: row.acknowledged_by,
            note: row.note,
            first_seen_ms: row.first_seen_ms,
            last_seen_ms: row.last_seen_ms,
            acknowledged_ms: row.acknowledged_ms,
        }
    }
}

/// Incidents seen since `since_ms`, newest first; resolved ones with `all`.
pub fn list(store: &Store, since_ms: i64, all: bool) -> Result<Vec<Incident>, StoreError> {
    Ok(incidents::list(store, since_ms, all)?
        .into_iter()
        .map(Incident::from)
        .collect())
}

/// [`list`] on a PostgreSQL store.
pub async fn list_postgres(
    store: &PgStore,
    since_ms: i64,
    all: bool,
) -> Result<Vec<Incident>, StoreError> {
    Ok(incidents::list_postgres(store, since_ms, all)
        .await?
        .into_iter()
        .map(Incident::from)
        .collect())
}

/// [`list`] on either backend.
pub async fn list_in(
    store: &StoreReader,
    since_ms: i64,
    all: bool,
) -> Result<Vec<Incident>, StoreError> {
    match store {
        StoreReader::Sqlite(store) => list(store, since_ms, all),
        StoreReader::Postgres(store) => list_postgres(store, since_ms, all).await,
    }
}

/// What an acknowledgement did.
#[derive(Clone, Debug, PartialEq)]
pub enum Acknowledged {
    Done(Box<Incident>),
    NotFound,
    /// The id prefix matches this many.
    Ambiguous(usize),
}

/// The incident an id names.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    One(Box<Incident>),
    NotFound,
    /// The id prefix matches this many (and none exactly).
    Ambiguous(usize),
}

/// The incident whose id is `id` or starts with it.
pub fn lookup(store: &Store, id: &str) -> Result<Lookup, StoreError> {
    let id = id.trim();
    if id.is_empty() {
        return Ok(Lookup::NotFound);
    }
    Ok(pick(incidents::find(store, id)?, id))
}

/// [`lookup`] on a PostgreSQL store.
pub async fn lookup_postgres(store: &PgStore, id: &str) -> Result<Lookup, StoreError> {
    let id = id.trim();
    if id.is_empty() {
        return Ok(Lookup::NotFound);
    }
    Ok(pick(incidents::find_postgres(store, id).await?, id))
}

/// [`lookup`] on either backend.
pub async fn lookup_in(store: &StoreReader, id: &str) -> Result<Lookup, StoreError> {
    match store {
        StoreReader::Sqlite(store) => lookup(store, id),
        StoreReader::Postgres(store) => lookup_postgres(store, id).await,
    }
}

/// The incident `id` names among those whose id starts with it: the only
/// one, or the one it names exactly.
fn pick(mut found: Vec<IncidentRow>, id: &str) -> Lookup {
    let at = match found.as_slice() {
        [] => return Lookup::NotFound,
        [_] => 0,
        many => match many.iter().position(|row| row.id == id) {
            Some(exact) => exact,
            None => return Lookup::Ambiguous(many.len()),
        },
    };
    Lookup::One(Box::new(found.swap_remove(at).into()))
}

/// Text an operator typed, as it is stored and shown to others: control
/// characters dropped.
fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// The note as stored: cleaned, none when blank.
fn clean_note(note: Option<&str>) -> Option<String> {
    note.map(clean).filter(|note| !note.trim().is_empty())
}

/// Acknowledges the incident whose id starts with `id`, as `by`, with an
/// optional note (control characters dropped: it is shown to others).
pub fn acknowledge(
    store: &Store,
    id: &str,
    by: &str,
    note: Option<&str>,
    now_ms: i64,
) -> Result<Acknowledged, StoreError> {
    let target = match lookup(store, id)? {
        Lookup::One(incident) => incident.id,
        Lookup::NotFound => return Ok(Acknowledged::NotFound),
        Lookup::Ambiguous(count) => return Ok(Acknowledged::Ambiguous(count)),
    };
    let note = clean_note(note);
    incidents::acknowledge(store, &target, &clean(by), note.as_deref(), now_ms)?;
    Ok(acknowledged(lookup(store, &target)?))
}

/// [`acknowledge`] on a PostgreSQL store: committed when it returns.
pub async fn acknowledge_postgres(
    store: &PgStore,
    id: &str,
    by: &str,
    note: Option<&str>,
    now_ms: i64,
) -> Result<Acknowledged, StoreError> {
    let target = match lookup_postgres(store, id).await? {
        Lookup::One(incident) => incident.id,
        Lookup::NotFound => return Ok(Acknowledged::NotFound),
        Lookup::Ambiguous(count) => return Ok(Acknowledged::Ambiguous(count)),
    };
    let note = clean_note(note);
    incidents::acknowledge_postgres(store, &target, &clean(by), note.as_deref(), now_ms).await?;
    Ok(acknowledged(lookup_postgres(store, &target).await?))
}

/// [`acknowledge`] on either backend.
pub async fn acknowledge_in(
    store: &StoreReader,
    id: &str,
    by: &str,
    note: Option<&str>,
    now_ms: i64,
) -> Result<Acknowledged, StoreError> {
    match store {
        StoreReader::Sqlite(store) => acknowledge(store, id, by, note, now_ms),
        StoreReader::Postgres(store) => acknowledge_postgres(store, id, by, note, now_ms).await,
    }
}

/// The acknowledged incident as read back.
fn acknowledged(found: Lookup) -> Acknowledged {
    match found {
        Lookup::One(incident) => Acknowledged::Done(incident),
        _ => Acknowledged::NotFound,
    }
}

/// The operator's login name, as an acknowledgement records it.
pub fn operator() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}
