//! The Health pane's background work ([`HealthEffect`]): the board, a
//! subscription's failing sessions and the incidents read from the store,
//! an acknowledgement, the sweep, recover's plan and recover itself, each
//! on either backend through `kernel::store`. All
//! run to their end; the pane drops an answer whose sequence number a
//! newer read has passed. Recover stops after the event being sent when
//! its form's flag is set (`esc`) or the console moves to another account.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::HealthResult;
use crate::tui::kernel::Failure;
use crate::tui::kernel::store::{
    RecoverStore, StorePath, acknowledge as kernel_acknowledge, board_reads, failing_sessions, failure,
    give_up_words, incidents_since, note_change, sweep as kernel_sweep,
};
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use earshot_core::history::incidents::{self, Acknowledged};
use earshot_core::history::recover;
use earshot_core::api::Client;
use earshot_core::redact::SecretString;
use earshot_core::store::changes;

/// Buckets in the selected subscription's trend line.
pub(crate) const TREND_COLUMNS: usize = 48;

/// Failing sessions listed at most for one subscription.
const FAILING_SESSIONS_SHOWN: usize = 500;

/// What the Health pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum HealthEffect {
    /// Read the board from the store (local).
    Load { seq: u64, since_ms: i64 },
    /// Read one subscription's failing sessions from the store (local).
    LoadFailingSessions {
        seq: u64,
        subscription_id: String,
        since_ms: i64,
    },
    /// Read the incidents seen since `since_ms` (resolved ones with
    /// `all`) from the store (local).
    LoadIncidents { seq: u64, since_ms: i64, all: bool },
    /// Acknowledge an incident as the operator's login name (local).
    AckIncident { id: String, note: Option<String> },
    /// Sweep the known sessions' delivery records into the store.
    Sweep,
    /// What recover would send (local: the store as last swept).
    PlanRecover {
        subscription_id: String,
        since_ms: i64,
    },
    /// Sweep, plan and re-send what a subscription missed for good since
    /// `since_ms`, reporting progress; `stop` set stops it after the event
    /// being sent. The secret is masked in `Debug` and never stored.
    Recover {
        subscription_id: String,
        since_ms: i64,
        secret: SecretString,
        stop: Arc<AtomicBool>,
    },
}

impl PaneEffect<HealthResult> for HealthEffect {
    fn latest_key(&self) -> Option<&'static str> {
        None
    }

    async fn run(self, input: TaskInput, report: Report<HealthResult>) {
        let TaskInput {
            client,
            store,
            account_left,
        } = input;
        let result = match self {
            HealthEffect::Recover {
                subscription_id,
                since_ms,
                secret,
                stop,
            } => {
                tracing::info!(%subscription_id, "recover missed events");
                let stop = move || stop.load(Ordering::Relaxed) || account_left.load(Ordering::Relaxed);
                let run = Recover {
                    client,
                    store,
                    subscription_id,
                    since_ms,
                };
                HealthResult::Recovered(run.run(&secret, stop, &report).await)
            }
            HealthEffect::Load { seq, since_ms } => {
                // The board, its trend from the same counts, and when the
                // platform gave up on this account (the retries' end); each
                // read fails alone.
                let (board, trend, give_up) = board_reads(store, since_ms, TREND_COLUMNS).await;
                report.send(HealthResult::Loaded { seq, result: board });
                report.send(HealthResult::Trend { seq, result: trend });
                HealthResult::GiveUp {
                    seq,
                    text: give_up_words(give_up),
                }
            }
            HealthEffect::LoadFailingSessions {
                seq,
                subscription_id,
                since_ms,
            } => {
                let result = failing_sessions(
                    store,
                    subscription_id.clone(),
                    since_ms,
                    FAILING_SESSIONS_SHOWN,
                )
                .await;
                HealthResult::Sessions {
                    seq,
                    subscription_id,
                    result,
                }
            }
            HealthEffect::LoadIncidents { seq, since_ms, all } => {
                let result = incidents_since(store, since_ms, all).await;
                HealthResult::Incidents { seq, result }
            }
            HealthEffect::AckIncident { id, note } => {
                tracing::info!(%id, "acknowledge an incident");
                HealthResult::Acknowledged(acknowledge(store, id, note).await)
            }
            HealthEffect::Sweep => {
                tracing::debug!("sweep the incident history");
                match store {
                    Err(why) => HealthResult::NoStore(why),
                    Ok(store) => HealthResult::Swept(kernel_sweep(Ok(store), &client).await),
                }
            }
            HealthEffect::PlanRecover {
                subscription_id,
                since_ms,
            } => {
                // The store as last swept (recover itself sweeps first, so
                // it may send a little more).
                let result = match RecoverStore::open(store).await {
                    Ok(store) => store
                        .plan(subscription_id.clone(), since_ms)
                        .await
                        .map(|plan| plan.preview()),
                    Err(failure) => Err(failure),
                };
                HealthResult::Planned {
                    subscription_id,
                    result,
                }
            }
        };
        report.send(result);
    }
}

/// Stores who is on an incident, for every console on the same store
/// (a file or PostgreSQL alike).
async fn acknowledge(
    path: crate::tui::kernel::store::StorePath,
    id: String,
    note: Option<String>,
) -> Result<String, crate::tui::kernel::Failure> {
    let by = incidents::operator();
    match kernel_acknowledge(path, id.clone(), by.clone(), note).await? {
        Acknowledged::Done(incident) => Ok(format!("acknowledged incident {} as {by}", incident.id)),
        Acknowledged::NotFound => Err(Failure::new(format!(
            "no incident {id} in the store any more"
        ))),
        Acknowledged::Ambiguous(count) => Err(Failure::new(format!(
            "{id} matches {count} incidents: give more of the id"
        ))),
    }
}

/// One recover run: sweeps, plans and re-sends what a subscription
/// missed, with the brakes (canary, failures in a row).
struct Recover {
    client: Client,
    store: StorePath,
    subscription_id: String,
    since_ms: i64,
}

impl Recover {
    /// Runs it, reporting progress after each event sent; `stop` answering
    /// true ends it after the event being sent. Its summary line.
    async fn run(
        self,
        secret: &SecretString,
        stop: impl Fn() -> bool,
        report: &Report<HealthResult>,
    ) -> Result<String, Failure> {
        let Recover {
            client,
            store: path,
            subscription_id,
            since_ms,
        } = self;
        let progress = |done, total, sent: Option<&recover::Sent>| {
            report.send(HealthResult::RecoverProgress {
                done,
                total,
                sent: sent.map(|sent| Box::new(sent.clone())),
            });
        };
        let store = RecoverStore::open(path.clone()).await?;
        let swept = store.sweep(&client).await?;
        if let Some(why) = swept.stopped {
            return Err(Failure::new(format!(
                "the sweep before recover stopped: {why}"
            )));
        }
        let plan = store.plan(subscription_id.clone(), since_ms).await?;
        let total = plan.to_send.len();
        progress(0, total, None);
        let mut done = 0;
        let report = recover::run(store.log(), &plan, secret, Default::default(), |sent| {
            done += 1;
            progress(done, total, Some(sent));
            if stop() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await
        .map_err(failure)?;
        let delivered = report.delivered();
        if !report.sent.is_empty() {
            let detail = changes::recover_detail(report.sent.len(), delivered);
            note_change(path, &subscription_id, "recover", detail).await;
        }
        let mut summary = format!(
            "{delivered} of {total} delivered to {}",
            plan.subscription.url
        );
        if let Some(why) = report.stop_reason() {
            summary.push_str(&format!("; {why}"));
        } else if delivered < total {
            let first = report
                .sent
                .iter()
                .find_map(|sent| sent.error.clone())
                .unwrap_or_default();
            summary.push_str(&format!("; {} failed ({first})", total - delivered));
        }
        summary.push_str(&plan.left_out());
        Ok(summary)
    }
}
