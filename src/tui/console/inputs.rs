//! What the console takes from outside while it runs, as the typed
//! streams of [`ConsoleOptions`](super::ConsoleOptions) (transcript jobs
//! submitted elsewhere, the requests a receiver answered), turned here into
//! the console's own actions; the event loop handles them like the results
//! of its own tasks.

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::mpsc::UnboundedReceiver;

use super::action::Action;
use crate::tui::panes::inbox::InboxResult;
use crate::tui::panes::jobs::JobsResult;
use earshot_core::receiver::listen::Requests;

/// Most job ids taken in one action: a burst is watched in a few actions,
/// not one per job.
const JOBS_AT_ONCE: usize = 64;

/// The actions the event loop reads from outside, one stream per input
/// given.
pub(super) fn feeds(
    discovered_jobs: Option<UnboundedReceiver<String>>,
    received_webhooks: Option<Requests>,
) -> Vec<BoxStream<'static, Action>> {
    let mut feeds = Vec::new();
    if let Some(ids) = discovered_jobs {
        feeds.push(
            job_ids(ids)
                .ready_chunks(JOBS_AT_ONCE)
                .map(|ids| Action::Jobs(JobsResult::Discovered(ids)))
                .boxed(),
        );
    }
    if let Some(requests) = received_webhooks {
        feeds.push(
            requests
                .map(|request| Action::Inbox(InboxResult::Received(Box::new(request))))
                .boxed(),
        );
    }
    feeds
}

fn job_ids(
    mut ids: UnboundedReceiver<String>,
) -> impl futures_util::Stream<Item = String> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| ids.poll_recv(cx))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Job ids waiting together arrive as one action, in order, and the
    /// stream ends when the sender is gone.
    #[tokio::test]
    async fn job_ids_waiting_together_are_discovered_together() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for id in ["job_a", "job_b", "job_c"] {
            tx.send(id.to_owned()).expect("the receiver is open");
        }
        drop(tx);
        let mut feeds = feeds(Some(rx), None);
        assert_eq!(feeds.len(), 1, "one feed for the one input given");
        let mut feed = feeds.remove(0);
        let first = feed.next().await.expect("an action");
        let Action::Jobs(JobsResult::Discovered(ids)) = first else {
            panic!("not a discovery: {first:?}");
        };
        assert_eq!(ids, ["job_a", "job_b", "job_c"]);
        assert!(feed.next().await.is_none(), "ends with its sender");
    }

    /// A request the receiver answered (here one with no signature)
    /// becomes an Inbox action carrying it.
    #[tokio::test]
    async fn a_request_the_receiver_answered_reaches_the_inbox() {
        use earshot_core::receiver::listen::{self, ListenConfig};
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let (listener, requests) = listen::start(loopback, ListenConfig::default())
            .await
            .expect("a receiver on loopback");
        let answer = earshot_http::client_builder()
            .no_proxy()
            .build()
            .expect("an HTTP client")
            .post(format!("{}/inbox", listener.url()))
            .body("{}")
            .send()
            .await
            .expect("the receiver answers");
        let mut feeds = feeds(None, Some(requests));
        assert_eq!(feeds.len(), 1, "one feed for the one input given");
        let action = feeds[0].next().await.expect("an action");
        let Action::Inbox(InboxResult::Received(received)) = action else {
            panic!("not a received request: {action:?}");
        };
        assert_eq!(received.entry.path, "/inbox");
        assert_eq!(received.status(), answer.status().as_u16());
        listener.stop().await;
    }

    #[test]
    fn no_input_is_no_feed() {
        assert!(feeds(None, None).is_empty());
    }
}
