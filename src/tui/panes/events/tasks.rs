//! The Events pane's background work: what it asks for ([`EventsEffect`])
//! and the tasks that do it (the list and one event read from the store,
//! the re-send of one event). The worker runs them as [`PaneEffect`]
//! says: the two reads "latest wins", each in its own slot; a re-send to
//! its end.

use super::freshness::ListMark;
use super::{EventsResult, Resent};
use crate::tui::kernel::Failure;
use crate::tui::kernel::store::{
    RecoverStore, StoreAt, StorePath, event_detail, failure, live_events, note_change,
};
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use earshot_core::history::event_query::EventQuery;
use earshot_core::history::recover;
use earshot_core::redact::SecretString;
use earshot_core::store::live_list::LiveRead;

/// What the Events pane asks the worker for (all local: the store, and
/// the receiver a re-send goes to).
#[derive(Clone, Debug)]
pub(crate) enum EventsEffect {
    /// Read the list from the store; supersedes any list read running.
    /// With `known`, the store's mark at the last read: if its file's write
    /// mark stands, nothing is read; else the live read from its cursor
    /// (on a file, one row when the list state stands; the events filed
    /// since when only events were; on PostgreSQL, the events filed since
    /// by any replica).
    Load {
        known: Option<Box<ListMark>>,
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
                let files = store.as_ref().ok().and_then(StoreAt::file_mark);
                if let (Some(known), Some(files)) = (&known, &files)
                    && known.files.as_ref() == Some(files)
                {
                    report.send(EventsResult::Unchanged { seq, mark: None });
                    return;
                }
                let window_from = query.since_ms.unwrap_or(since_ms);
                let cursor = known.and_then(|known| known.cursor);
                let read = live_events(store, query, since_ms, limit, cursor).await;
                let mark = |cursor| ListMark { files, cursor };
                match read {
                    Ok((LiveRead::Same, cursor)) => EventsResult::Unchanged {
                        seq,
                        mark: Some(mark(cursor)),
                    },
                    Ok((LiveRead::Newer(rows), cursor)) => EventsResult::Newer {
                        seq,
                        rows,
                        window_from,
                        mark: Some(mark(cursor)),
                    },
                    Ok((LiveRead::All(rows), cursor)) => EventsResult::Loaded {
                        seq,
                        result: Ok(rows),
                        mark: Some(mark(cursor)),
                    },
                    // A failed read leaves no cursor: the next is whole.
                    Err(failure) => EventsResult::Loaded {
                        seq,
                        result: Err(failure),
                        mark: Some(mark(None)),
                    },
                }
            }
            EventsEffect::Detail { seq, event_id } => {
                let result = event_detail(store, event_id).await;
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
    let store = RecoverStore::open(path).await?;
    match target {
        ResendTarget::Subscription(id) => {
            let plan = store.plan_event(id, event_id.clone()).await?;
            let report = recover::run(
                store.log(),
                &plan,
                &secret,
                recover::Brakes::default(),
                |_| std::ops::ControlFlow::Continue(()),
            )
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
            let event = store.observed_event(event_id).await?;
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
