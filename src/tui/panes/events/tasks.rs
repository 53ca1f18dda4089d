//! The Events pane's background work: what it asks for ([`EventsEffect`])
//! and the tasks that do it (the list and one event read from the store,
//! the re-send of one event). The worker runs them as [`PaneEffect`]
//! says: the two reads "latest wins", each in its own slot; a re-send to
//! its end.

use super::freshness::ListMark;
use super::{EventsResult, Resent};
use crate::tui::kernel::Failure;
use crate::tui::kernel::store::{StorePath, failure, note_change, open, with_store};
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use earshot_core::history::event_list::{self, EventRow};
use earshot_core::history::event_query::EventQuery;
use earshot_core::history::recover;
use earshot_core::redact::SecretString;
use earshot_core::store::mark::{self, StoreMark};

/// What the Events pane asks the worker for (all local: the store, and
/// the receiver a re-send goes to).
#[derive(Clone, Debug)]
pub(crate) enum EventsEffect {
    /// Read the list from the store; supersedes any list read running.
    /// With `known`, the store's mark at the last read: if its files' write
    /// mark stands, nothing is read; if its list state does, one row is; if
    /// only events were filed, those are.
    Load {
        known: Option<ListMark>,
        seq: u64,
        query: EventQuery,
        since_ms: i64,
        limit: usize,
    },
    /// Read one event in full from the store; supersedes any such read
    /// running.
    Detail { seq: u64, event_id: String },
    /// Re-send one observed event, signed anew with `secret` (masked in
    /// `Debug`, never stored).
    Resend {
        event_id: String,
        target: ResendTarget,
        secret: SecretString,
    },
}

/// What a list read found.
enum Read {
    /// Nothing a list shows changed.
    Same,
    /// Only events filed: those of them the filter passes.
    Newer(Vec<EventRow>),
    /// The whole list.
    All(Vec<EventRow>),
}

/// Where the Events pane re-sends an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ResendTarget {
    /// A subscription's URL (the send is recorded in the store).
    Subscription(String),
    /// Any URL the operator gives, e.g. a receiver under development.
    Url(String),
}

impl PaneEffect<EventsResult> for EventsEffect {
    fn latest_key(&self) -> Option<&'static str> {
        match self {
            EventsEffect::Load { .. } => Some("list"),
            EventsEffect::Detail { .. } => Some("detail"),
            EventsEffect::Resend { .. } => None,
        }
    }

    async fn run(self, input: TaskInput, report: Report<EventsResult>) {
        let store = input.store;
        let result = match self {
            EventsEffect::Load {
                known,
                seq,
                query,
                since_ms,
                limit,
            } => {
                // Taken before the read: a commit during it changes the
                // mark, so the next read is full.
                let files = store.as_ref().ok().map(|path| StoreMark::of(path));
                let known_state = match (&known, &files) {
                    (Some(known), Some(files)) if known.files == *files => {
                        report.send(EventsResult::Unchanged { seq, mark: None });
                        return;
                    }
                    (known, _) => known.as_ref().and_then(|known| known.state),
                };
                // The state is read before the list: a commit between them
                // shows in the next read (an event listed twice is merged).
                let window_from = query.since_ms.unwrap_or(since_ms);
                let read = with_store(store, move |store| {
                    let state = mark::list_state(store).ok();
                    let after = match (state, known_state) {
                        (Some(now), Some(then)) if now == then => return Ok((Read::Same, state)),
                        (Some(now), Some(then)) if now.version == then.version => {
                            Some(then.newest_seq)
                        }
                        _ => None,
                    };
                    event_list::list_after(store, &query, since_ms, limit, after)
                        .map(|rows| {
                            let read = match after {
                                Some(_) => Read::Newer(rows),
                                None => Read::All(rows),
                            };
                            (read, state)
                        })
                        .map_err(|error| error.to_string())
                })
                .await;
                let mark = |state| files.map(|files| ListMark { files, state });
                match read {
                    Ok((Read::Same, state)) => EventsResult::Unchanged {
                        seq,
                        mark: mark(state),
                    },
                    Ok((Read::Newer(rows), state)) => EventsResult::Newer {
                        seq,
                        rows,
                        window_from,
                        mark: mark(state),
                    },
                    Ok((Read::All(rows), state)) => EventsResult::Loaded {
                        seq,
                        result: Ok(rows),
                        mark: mark(state),
                    },
                    Err(failure) => EventsResult::Loaded {
                        seq,
                        result: Err(failure),
                        mark: mark(None),
                    },
                }
            }
            EventsEffect::Detail { seq, event_id } => {
                let result = with_store(store, move |store| {
                    event_list::detail(store, &event_id)
                        .map(|detail| detail.map(Box::new))
                        .map_err(|error| error.to_string())
                })
                .await;
                EventsResult::Detail { seq, result }
            }
            EventsEffect::Resend {
                event_id,
                target,
                secret,
            } => {
                tracing::info!(%event_id, "re-send one event");
                EventsResult::Resent(resend(store, event_id, target, secret).await)
            }
        };
        report.send(result);
    }
}

/// One event to a subscription (recorded in the store, so the event shows
/// `recovered` if it was missed) or to any URL (recorded nowhere).
async fn resend(
    path: StorePath,
    event_id: String,
    target: ResendTarget,
    secret: SecretString,
) -> Result<Resent, Failure> {
    let log = path.clone();
    let store = open(path).await?;
    let event = event_id.clone();
    match target {
        ResendTarget::Subscription(id) => {
            let plan = store
                .run(move |store| recover::plan_event(store, &id, &event))
                .await
                .map_err(failure)?;
            let report = recover::run(&store, &plan, &secret, recover::Brakes::default(), |_| {
                std::ops::ControlFlow::Continue(())
            })
            .await
            .map_err(failure)?;
            let sent = report
                .sent
                .first()
                .ok_or_else(|| Failure::new("nothing was sent"))?;
            let detail = format!(
                "{} (event {event_id})",
                earshot_core::store::changes::recover_detail(1, usize::from(sent.delivered))
            );
            note_change(log, &plan.subscription.id, "recover", detail).await;
            Ok(sent_line(sent, &plan.subscription.url))
        }
        ResendTarget::Url(url) => {
            let event = store
                .run(move |store| recover::observed_event(store, &event))
                .await
                .map_err(failure)?;
            let http = recover::sender().map_err(failure)?;
            let sent = recover::send_event(&http, &url, &secret, &event).await;
            Ok(sent_line(&sent, &url))
        }
    }
}

/// `delivered to https://…: HTTP 200 in 35 ms`, or why not (the URL
/// without its query, which may hold a token).
fn sent_line(sent: &recover::Sent, url: &str) -> Resent {
    Resent {
        delivered: sent.delivered,
        summary: sent.summary(url),
    }
}
