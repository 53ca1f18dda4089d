//! The Inbox pane's background work ([`InboxEffect`]): the local webhook
//! receiver, run by a task that reports it started and then every request
//! it answers. A new receiver replaces the running one; aborting the task
//! (an account switch, the worker dropped) stops the receiver.

use super::InboxResult;
use crate::tui::kernel::Failure;
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use std::sync::Arc;

use super::ListenRequest;
use earshot_core::receiver::listen::{self, Forward, ListenConfig, Routes};

/// What the Inbox pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum InboxEffect {
    /// Start the local webhook receiver (replacing a running one).
    Listen {
        seq: u64,
        /// Its secrets are masked in `Debug`.
        request: ListenRequest,
    },
}

impl PaneEffect<InboxResult> for InboxEffect {
    fn latest_key(&self) -> Option<&'static str> {
        match self {
            InboxEffect::Listen { .. } => Some("receiver"),
        }
    }

    async fn run(self, _: TaskInput, report: Report<InboxResult>) {
        let InboxEffect::Listen { seq, request } = self;
        let ListenRequest {
            bind,
            secrets,
            forward_to,
        } = request;
        tracing::info!(%bind, "start the inbox receiver");
        // Passed on with the received signature, as `listen --forward-to`.
        let routes = Routes {
            default: forward_to,
            ..Routes::default()
        };
        let forward = match routes.default {
            None => None,
            Some(_) => match Forward::new(routes, None) {
                Ok(forward) => Some(Arc::new(forward)),
                Err(error) => {
                    let failure = Failure::new(format!("forward to: {error}"));
                    report.send(InboxResult::Started {
                        seq,
                        result: Err(failure),
                    });
                    return;
                }
            },
        };
        let config = ListenConfig {
            secrets,
            forward,
            ..ListenConfig::default()
        };
        match listen::start(bind, config).await {
            Err(error) => {
                let failure = Failure::new(format!("the inbox receiver did not start: {error}"));
                report.send(InboxResult::Started {
                    seq,
                    result: Err(failure),
                });
            }
            Ok((listener, mut received)) => {
                report.send(InboxResult::Started {
                    seq,
                    result: Ok(listener.url()),
                });
                while let Some(request) = received.recv().await {
                    if !report.send(InboxResult::Received(Box::new(request))) {
                        break;
                    }
                }
                drop(listener);
            }
        }
    }
}
