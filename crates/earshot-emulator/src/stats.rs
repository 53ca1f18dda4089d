//! Request and response counts by route and status, and the number of
//! webhook deliveries still in progress, for `/_emulator/stats`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;

use super::SharedState;

#[derive(Default)]
pub(crate) struct Stats {
    counts: Mutex<StatsSnapshot>,
    deliveries_in_progress: AtomicU64,
}

/// What the emulator has answered so far: the `/_emulator/stats` answer.
/// Status keys are strings (`"200"`); routes read `METHOD /path/{param}`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatsSnapshot {
    by_status: BTreeMap<String, u64>,
    by_route: BTreeMap<String, BTreeMap<String, u64>>,
    /// Events still being delivered to a subscription, and pre-recorded
    /// jobs' webhooks still being sent: attempting, or waiting for a retry.
    /// Zero means no webhook will be sent until something new happens, so
    /// a test can tell "nothing more will happen" without sleeping.
    deliveries_in_progress: u64,
}

/// Counts one delivery (an event to one subscription, or a pre-recorded
/// job's webhook) as in progress from its dispatch until dropped, when its
/// task ends.
pub(crate) struct DeliveryInProgress(SharedState);

impl DeliveryInProgress {
    pub fn start(state: &SharedState) -> DeliveryInProgress {
        state
            .stats
            .deliveries_in_progress
            .fetch_add(1, Ordering::Relaxed);
        DeliveryInProgress(state.clone())
    }
}

impl Drop for DeliveryInProgress {
    fn drop(&mut self) {
        self.0
            .stats
            .deliveries_in_progress
            .fetch_sub(1, Ordering::Relaxed);
        self.0.activity.changed();
    }
}

impl StatsSnapshot {
    /// Answers by status (`"200"` → how many), every route together.
    pub fn by_status(&self) -> &BTreeMap<String, u64> {
        &self.by_status
    }

    /// Answers by route, then status: `"POST /v1/webhook-subscriptions"`
    /// → `"201"` → how many.
    pub fn by_route(&self) -> &BTreeMap<String, BTreeMap<String, u64>> {
        &self.by_route
    }

    /// How many answers `route` gave with `status` (0 if none).
    pub fn count(&self, route: &str, status: u16) -> u64 {
        self.by_route
            .get(route)
            .and_then(|statuses| statuses.get(&status.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// Webhook deliveries attempting or waiting for a retry (agents'
    /// events and pre-recorded webhooks). Zero: nothing more is sent until
    /// something new happens.
    pub fn deliveries_in_progress(&self) -> u64 {
        self.deliveries_in_progress
    }
}

impl Stats {
    fn record(&self, route: String, status: u16) {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let status = status.to_string();
        *counts.by_status.entry(status.clone()).or_default() += 1;
        *counts
            .by_route
            .entry(route)
            .or_default()
            .entry(status)
            .or_default() += 1;
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone();
        counts.deliveries_in_progress = self.deliveries_in_progress.load(Ordering::Relaxed);
        counts
    }
}

/// Middleware: counts every answer under `METHOD /route/{param}`.
pub(crate) async fn count(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    let path = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("(no route)", MatchedPath::as_str)
        .to_owned();
    let route = format!("{} {path}", request.method());
    let response = next.run(request).await;
    state.stats.record(route, response.status().as_u16());
    response
}
