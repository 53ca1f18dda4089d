//! Request and response counts by route and status, for `/_emulator/stats`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;

use super::SharedState;

#[derive(Default)]
pub(crate) struct Stats {
    counts: Mutex<Counts>,
}

/// The `/_emulator/stats` answer. Status keys are strings (`"200"`).
#[derive(Clone, Default, Serialize)]
pub(crate) struct Counts {
    by_status: BTreeMap<String, u64>,
    by_route: BTreeMap<String, BTreeMap<String, u64>>,
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

    pub fn snapshot(&self) -> Counts {
        self.counts
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
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
