//! Every observed event with its outcome per subscription (delivered,
//! pending, missed, recovered, unknown), newest first, filtered with the
//! [`EventQuery`] language: what `earshot events` prints and the console's
//! Events pane shows; and one event in full (headers, exact body, and per
//! subscription its attempts) from either backend, by one rule over the
//! facts each reads ([`detail`], [`detail_postgres`]).

use serde::Serialize;

use super::event_query::EventQuery;
use super::report::{failure_label, rfc3339};
use crate::api::delivery_verdict::Problem;
use crate::api::types::agents::DeliveryRecord;
use crate::api::types::agents::Subscription;
use crate::store::chains::match_events;
use crate::store::event_list::{self, Filter, Headers, ListedEvent};
use crate::store::events::StoredEvent;
use crate::store::give_up::GiveUp;
use crate::store::live_list::{self, LiveCursor, LiveRead};
use crate::store::outcomes::{EventState, Outcome};
use crate::store::postgres::PgStore;
use crate::store::{Store, StoreError, StoreReader, deliveries};

/// One subscription's outcome for one event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubscriptionOutcome {
    pub id: String,
    pub state: EventState,
    pub attempts: i64,
    /// The observer's own subscription, as evidence names it
    /// ([`deliveries::observer_subscriptions`]): not a customer's.
    pub observer: bool,
}

impl SubscriptionOutcome {
    /// `outcome`'s row, the observer's own when `observers` names its
    /// subscription.
    fn of(outcome: &Outcome, observers: &[String]) -> SubscriptionOutcome {
        SubscriptionOutcome {
            id: outcome.subscription_id.clone(),
            state: outcome.state,
            attempts: outcome.attempts,
            observer: observers.contains(&outcome.subscription_id),
        }
    }

    /// How a list shows it: `db318dee missed ×4` (attempts when more than
    /// one), or for the observer's own subscription `obs ✓` when it was
    /// delivered and `obs missed` otherwise.
    pub fn short_text(&self) -> String {
        if self.observer {
            return match self.state {
                EventState::Delivered => "obs ✓".to_owned(),
                state => format!("obs {}", state.as_str()),
            };
        }
        let mut text = format!("{} {}", crate::api::short_id(&self.id), self.state.as_str());
        if self.attempts > 1 {
            text.push_str(&format!(" ×{}", self.attempts));
        }
        text
    }
}

/// Puts a list's outcomes in the order every list shows them: the
/// subscription `named` (an id prefix, as a `sub:` filter gives it) first,
/// then the customers' worst first (missed, pending, unknown, recovered,
/// delivered: what a cut cell keeps is what needs a look), then the
/// observer's own; by id among equals.
pub fn order_outcomes(outcomes: &mut [SubscriptionOutcome], named: Option<&str>) {
    let group = |outcome: &SubscriptionOutcome| {
        if named.is_some_and(|prefix| outcome.id.starts_with(prefix)) {
            0
        } else if outcome.observer {
            2
        } else {
            1
        }
    };
    outcomes.sort_by(|a, b| {
        group(a)
            .cmp(&group(b))
            .then_with(|| severity(a.state).cmp(&severity(b.state)))
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// How bad a state is, worst (missed, 0) first: the order of the
/// outcomes in a row and of rows sorted by their worst.
pub fn severity(state: EventState) -> u8 {
    match state {
        EventState::Missed => 0,
        EventState::Pending => 1,
        EventState::Unknown => 2,
        EventState::Recovered => 3,
        EventState::Delivered => 4,
    }
}

/// One event of the list.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventRow {
    pub event_id: String,
    #[serde(rename = "type")]
    pub event: String,
    pub session_id: String,
    /// RFC 3339, UTC.
    pub occurred_at: String,
    #[serde(skip)]
    pub occurred_ms: i64,
    #[serde(skip)]
    pub received_ms: i64,
    pub subscriptions: Vec<SubscriptionOutcome>,
    /// Whether the store holds the event's outcomes (`false` on PostgreSQL
    /// for an event whose session was not swept since it came): without
    /// them `subscriptions` is empty for want of knowing, not for want of
    /// subscriptions.
    #[serde(skip)]
    pub outcomes_known: bool,
}

impl EventRow {
    /// How many customers' subscriptions it went to (the observer's own
    /// left out).
    pub fn customers(&self) -> usize {
        self.subscriptions.iter().filter(|o| !o.observer).count()
    }

    /// The worst state among its subscriptions (missed before pending
    /// before unknown before recovered before delivered).
    pub fn worst(&self) -> Option<EventState> {
        self.subscriptions
            .iter()
            .map(|outcome| outcome.state)
            .min_by_key(|state| severity(*state))
    }
}

/// The newest events passing `query` (its `since:` or else `since_ms`),
/// at most `limit`, each with its subscriptions' outcomes.
pub fn list(
    store: &Store,
    query: &EventQuery,
    since_ms: i64,
    limit: usize,
) -> Result<Vec<EventRow>, StoreError> {
    list_after(store, query, since_ms, limit, None)
}

/// [`list`] of the events filed after `after_seq` only (all with `None`):
/// what a live list holding the events up to that sequence lacks.
pub fn list_after(
    store: &Store,
    query: &EventQuery,
    since_ms: i64,
    limit: usize,
    after_seq: Option<i64>,
) -> Result<Vec<EventRow>, StoreError> {
    let filter = filter(query, since_ms, after_seq);
    let listed = event_list::list(store, &filter, limit)?;
    with_outcomes(store, query, listed)
}

/// `listed` as rows, each with its subscriptions' outcomes (SQLite's:
/// the observer files a row per listening subscription with the event, so
/// every event's outcomes are known).
fn with_outcomes(
    store: &Store,
    query: &EventQuery,
    listed: Vec<ListedEvent>,
) -> Result<Vec<EventRow>, StoreError> {
    let outcomes = event_list::outcomes_of(store, &listed)?;
    let observers = deliveries::observer_subscriptions(store)?;
    Ok(attach(query, listed, outcomes, &observers, |_, _| true))
}

/// `listed` as rows with the outcomes PostgreSQL holds. Its rows come from
/// the sweep alone: an event with none is known to have none (no
/// subscription listens) only once its session was swept after the event
/// was received; before, its outcomes are unknown, never "none".
async fn with_outcomes_postgres(
    store: &PgStore,
    query: &EventQuery,
    listed: Vec<ListedEvent>,
) -> Result<Vec<EventRow>, StoreError> {
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let outcomes = event_list::outcomes_of_postgres(store, &listed).await?;
    let observers = deliveries::observer_subscriptions_postgres(store).await?;
    let sessions: Vec<&str> = listed
        .iter()
        .map(|event| event.session_id.as_str())
        .collect();
    let swept = crate::store::sessions::swept_ms_postgres(store, &sessions).await?;
    Ok(attach(
        query,
        listed,
        outcomes,
        &observers,
        |event, has_rows| {
            has_rows
                || swept
                    .get(&event.session_id)
                    .is_some_and(|swept_ms| *swept_ms >= event.received_ms)
        },
    ))
}

/// `listed` as rows, each with its rows of `outcomes` (matched by event
/// id) in the order every list shows them; `known(event, has_rows)` says
/// whether an event's outcomes are known at all.
fn attach(
    query: &EventQuery,
    listed: Vec<ListedEvent>,
    mut outcomes: Vec<Outcome>,
    observers: &[String],
    known: impl Fn(&ListedEvent, bool) -> bool,
) -> Vec<EventRow> {
    outcomes.sort_by(|a, b| a.event_id.cmp(&b.event_id));
    listed
        .into_iter()
        .map(|event| {
            let start = outcomes.partition_point(|o| o.event_id.as_deref() < Some(&event.event_id));
            let mut subscriptions: Vec<SubscriptionOutcome> = outcomes[start..]
                .iter()
                .take_while(|o| o.event_id.as_deref() == Some(event.event_id.as_str()))
                .map(|o| SubscriptionOutcome::of(o, observers))
                .collect();
            order_outcomes(&mut subscriptions, query.subscription.as_deref());
            let known = known(&event, !subscriptions.is_empty());
            row(event, known.then_some(subscriptions))
        })
        .collect()
}

/// The live read of `query`'s list on SQLite (`store::live_list`), each
/// row with its outcomes: nothing when nothing a list shows changed since
/// `known`, the events filed since when only events were, else the whole
/// list. Synchronous, for a caller on a blocking thread.
pub fn live_sqlite(
    store: &Store,
    query: &EventQuery,
    since_ms: i64,
    limit: usize,
    known: Option<&LiveCursor>,
) -> Result<(LiveRead<EventRow>, Option<LiveCursor>), StoreError> {
    let (read, cursor) =
        live_list::read_sqlite(store, &filter(query, since_ms, None), limit, known)?;
    Ok((
        read.try_map(|listed| with_outcomes(store, query, listed))?,
        cursor,
    ))
}

/// The live read of `query`'s list from either backend: on SQLite
/// [`live_sqlite`], on PostgreSQL [`live_postgres`].
pub async fn live_from(
    reader: &StoreReader,
    query: &EventQuery,
    since_ms: i64,
    limit: usize,
    known: Option<&LiveCursor>,
) -> Result<(LiveRead<EventRow>, Option<LiveCursor>), StoreError> {
    match reader {
        StoreReader::Sqlite(store) => live_sqlite(store, query, since_ms, limit, known),
        StoreReader::Postgres(store) => live_postgres(store, query, since_ms, limit, known).await,
    }
}

/// The live read of `query`'s list on PostgreSQL: the events filed since
/// `known` by every replica, none returned twice, or the whole list when
/// an outcome or a subscription changed (`store::live_list`), each with
/// the outcomes the sweep wrote (as [`list_from`]); `status:` and `sub:`
/// answered from them.
pub async fn live_postgres(
    store: &PgStore,
    query: &EventQuery,
    since_ms: i64,
    limit: usize,
    known: Option<&LiveCursor>,
) -> Result<(LiveRead<EventRow>, Option<LiveCursor>), StoreError> {
    let filter = filter(query, since_ms, None);
    let (read, cursor) = live_list::read_postgres(store, &filter, limit, known).await?;
    let read = match read {
        LiveRead::Same => LiveRead::Same,
        LiveRead::Newer(listed) => {
            LiveRead::Newer(with_outcomes_postgres(store, query, listed).await?)
        }
        LiveRead::All(listed) => LiveRead::All(with_outcomes_postgres(store, query, listed).await?),
    };
    Ok((read, cursor))
}

/// [`list`] from either backend: on SQLite exactly [`list`]; on PostgreSQL
/// the same events with the outcomes the sweep wrote there (unknown for
/// an event whose session was not swept since it was received), `status:`
/// and `sub:` answered from them (`store::event_list::postgres_query`).
pub async fn list_from(
    reader: &StoreReader,
    query: &EventQuery,
    since_ms: i64,
    limit: usize,
) -> Result<Vec<EventRow>, StoreError> {
    match reader {
        StoreReader::Sqlite(store) => list(store, query, since_ms, limit),
        StoreReader::Postgres(store) => {
            let listed = reader.events(&filter(query, since_ms, None), limit).await?;
            with_outcomes_postgres(store, query, listed).await
        }
    }
}

/// The store's filter for `query` (its `since:`, else `since_ms`).
fn filter<'q>(query: &'q EventQuery, since_ms: i64, after_seq: Option<i64>) -> Filter<'q> {
    Filter {
        after_seq,
        after_xid: None,
        since_ms: query.since_ms.unwrap_or(since_ms),
        event_type: query.event_type.as_deref(),
        state: query.state,
        subscription: query.subscription.as_deref(),
        session: query.session.as_deref(),
        words: &query.words,
    }
}

/// A row with the outcomes the store holds (`None`: it holds none).
fn row(event: ListedEvent, subscriptions: Option<Vec<SubscriptionOutcome>>) -> EventRow {
    EventRow {
        outcomes_known: subscriptions.is_some(),
        occurred_at: rfc3339(event.occurred_ms),
        event_id: event.event_id,
        event: event.event,
        session_id: event.session_id,
        occurred_ms: event.occurred_ms,
        received_ms: event.received_ms,
        subscriptions: subscriptions.unwrap_or_default(),
    }
}

/// One attempt of an event to one subscription, explained.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptLine {
    pub record: DeliveryRecord,
    /// `401 invalid signature: …`, or `None` when it was delivered or is
    /// in flight.
    pub diagnosis: Option<String>,
    /// Whether the platform tries again after this attempt.
    pub will_retry: bool,
}

/// One subscription's side of an event.
#[derive(Clone, Debug, PartialEq)]
pub struct SubscriptionTimeline {
    pub outcome: Outcome,
    /// The subscription's URL when the store still lists it.
    pub url: Option<String>,
    /// Oldest first.
    pub attempts: Vec<AttemptLine>,
}

/// One event in full.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDetail {
    pub row: EventRow,
    /// As the observer stored them: secret values were never kept.
    pub headers: Vec<(String, String)>,
    /// The exact bytes every subscription was sent.
    pub body: Vec<u8>,
    pub subscriptions: Vec<SubscriptionTimeline>,
    /// Why the store cannot say what the event became per subscription
    /// (`subscriptions` is then empty for want of knowing, not because
    /// none listens); `None` when it can.
    pub outcomes_unknown: Option<String>,
    /// When the platform gave up retrying on this account, as its history
    /// shows (`store::give_up`), said beside an attempt still retrying.
    pub give_up: String,
}

/// What a PostgreSQL detail says while its event's session has not been
/// swept since the event was filed.
pub const NOT_SWEPT_YET: &str = "its session has not been swept since the event was filed \
     (on PostgreSQL the outcome rows come from the sweep, not from filing)";

/// What the store holds of one event, read by either backend; made into
/// an [`EventDetail`] by one rule ([`Facts::assemble`]).
struct Facts {
    stored: StoredEvent,
    headers: Headers,
    body: Vec<u8>,
    outcomes: Vec<Outcome>,
    records: Vec<DeliveryRecord>,
    session_events: Vec<StoredEvent>,
    subscriptions: Vec<Subscription>,
    observers: Vec<String>,
    give_up: Option<GiveUp>,
    outcomes_unknown: Option<String>,
}

/// Event `event_id` in full, or `None` when the store does not hold it.
pub fn detail(store: &Store, event_id: &str) -> Result<Option<EventDetail>, StoreError> {
    let Some(stored) = crate::store::events::get(store, event_id)? else {
        return Ok(None);
    };
    let (headers, body) = event_list::headers_and_body_at(store, stored.occurred_ms, event_id)?
        .unwrap_or((Vec::new(), Vec::new()));
    let facts = Facts {
        outcomes: crate::store::outcomes::of_event(store, &stored.session_id, event_id)?,
        records: deliveries::for_session(store, &stored.session_id)?,
        session_events: crate::store::events::for_session(store, &stored.session_id)?,
        subscriptions: deliveries::subscriptions(store)?,
        observers: deliveries::observer_subscriptions(store)?,
        give_up: crate::store::give_up::observed(store)?,
        outcomes_unknown: None,
        stored,
        headers,
        body,
    };
    Ok(Some(facts.assemble()))
}

/// [`detail`] on a PostgreSQL store: the same reads (each statement
/// beside SQLite's in its module), with two differences said, not hidden.
/// Before its session's sweep an event has no outcome rows there, so its
/// outcomes are unknown ([`NOT_SWEPT_YET`]), never "no subscription"; and
/// when the event is read but what the sweep stored of it cannot be (a
/// failed query), the headers and body are shown and the outcomes are
/// unknown with the error.
pub async fn detail_postgres(
    store: &PgStore,
    event_id: &str,
) -> Result<Option<EventDetail>, StoreError> {
    use crate::store::events;
    let Some(stored) = events::get_postgres(store, event_id).await? else {
        return Ok(None);
    };
    let occurred_ms = stored.occurred_ms;
    let (headers, body) = event_list::headers_and_body_at_postgres(store, occurred_ms, event_id)
        .await?
        .unwrap_or((Vec::new(), Vec::new()));
    let mut facts = Facts {
        stored,
        headers,
        body,
        outcomes: Vec::new(),
        records: Vec::new(),
        session_events: Vec::new(),
        subscriptions: Vec::new(),
        observers: Vec::new(),
        give_up: None,
        outcomes_unknown: None,
    };
    facts.outcomes_unknown = match sweep_facts_postgres(store, &mut facts).await {
        Err(error) => Some(format!("not read from the store ({error})")),
        Ok(true) => None,
        Ok(false) => Some(NOT_SWEPT_YET.to_owned()),
    };
    if facts.outcomes_unknown.is_some() {
        facts.outcomes.clear();
    }
    Ok(Some(facts.assemble()))
}

/// What the sweep stored of `facts`' event on PostgreSQL (its outcome
/// rows, its session's attempts and events, the subscriptions, the
/// observer's own, the give-up), read into `facts`; whether its outcomes
/// are known: it has rows, or its session was swept since it was filed
/// (`sessions::swept_since_filed_postgres`; then none listens).
async fn sweep_facts_postgres(
    store: &PgStore,
    facts: &mut Facts,
) -> Result<bool, crate::store::postgres::PgError> {
    use crate::store::{events, give_up, outcomes, sessions};
    let (session, event_id) = (&facts.stored.session_id, &facts.stored.event_id);
    facts.outcomes = outcomes::of_event_postgres(store, session, event_id).await?;
    if facts.outcomes.is_empty() {
        let at = facts.stored.occurred_ms;
        if sessions::swept_since_filed_postgres(store, at, event_id).await? != Some(true) {
            return Ok(false);
        }
    }
    facts.records = deliveries::for_session_postgres(store, session).await?;
    facts.session_events = events::for_session_postgres(store, session).await?;
    facts.subscriptions = deliveries::subscriptions_postgres(store).await?;
    facts.observers = deliveries::observer_subscriptions_postgres(store).await?;
    facts.give_up = give_up::observed_postgres(store).await?;
    Ok(true)
}

impl Facts {
    /// The event's page: per subscription its outcome and the attempts
    /// that were for this event (matched within the session's chains).
    fn assemble(self) -> EventDetail {
        let Facts {
            stored,
            headers,
            body,
            outcomes,
            records,
            session_events,
            subscriptions,
            observers,
            give_up,
            outcomes_unknown,
        } = self;
        let event_id = stored.event_id.as_str();
        let mut timelines = Vec::new();
        for outcome in &outcomes {
            let listed = subscriptions
                .iter()
                .find(|s| s.id == outcome.subscription_id);
            let own: Vec<DeliveryRecord> = records
                .iter()
                .filter(|record| record.subscription_id == outcome.subscription_id)
                .cloned()
                .collect();
            let wanted: Vec<StoredEvent> = session_events
                .iter()
                .filter(|event| listed.is_none_or(|s| s.events.contains(&event.event)))
                .cloned()
                .collect();
            let attempts = match_events(&own, &wanted)
                .into_iter()
                .find(|chain| chain.event.is_some_and(|event| event.event_id == event_id))
                .map(|chain| chain.attempts.into_iter().map(explain).collect())
                .unwrap_or_default();
            timelines.push(SubscriptionTimeline {
                outcome: outcome.clone(),
                url: listed.map(|s| s.url.clone()),
                attempts,
            });
        }
        let mut subscriptions_row: Vec<SubscriptionOutcome> = outcomes
            .iter()
            .map(|o| SubscriptionOutcome::of(o, &observers))
            .collect();
        order_outcomes(&mut subscriptions_row, None);
        let known = outcomes_unknown.is_none().then_some(subscriptions_row);
        let listed = ListedEvent {
            event_id: stored.event_id,
            event: stored.event,
            session_id: stored.session_id,
            occurred_ms: stored.occurred_ms,
            received_ms: 0,
        };
        EventDetail {
            row: row(listed, known),
            headers,
            body,
            subscriptions: timelines,
            outcomes_unknown,
            give_up: GiveUp::describe(give_up),
        }
    }
}

fn explain(record: &DeliveryRecord) -> AttemptLine {
    let problem = Problem::from_parts(
        record.http_status_code,
        record.error.as_deref().unwrap_or(""),
    );
    let failed = record.status == crate::api::types::agents::DeliveryStatus::Failed;
    AttemptLine {
        diagnosis: failed.then(|| {
            failure_label(
                record.http_status_code,
                record.error.as_deref().unwrap_or(""),
            )
        }),
        will_retry: failed && record.next_retry_at.is_some() && problem.retryable(),
        record: record.clone(),
    }
}
