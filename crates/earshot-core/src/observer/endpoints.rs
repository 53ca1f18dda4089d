//! The observer's private endpoints, `GET /healthz` and `GET /metrics`, on
//! their own address (`--metrics-listen`), never on the webhook port: that
//! one faces the platform (the internet), and the metrics name every
//! subscription. Served by [`crate::http_server::serve`] with small limits (a
//! scraper sends no body). Another path is 404; another method on these two
//! is 405 with `Allow`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::health::{Health, StoreHealth};
use super::metrics::{Format, Metrics};
use crate::http_server::{Running, ServerLimits};

/// What the endpoints read.
#[derive(Debug)]
pub struct Monitored {
    pub metrics: Arc<Metrics>,
    /// The store's health; `None` without a store (then `/healthz` is 200:
    /// the receiver is up and has nothing to write).
    pub store: Option<Arc<StoreHealth>>,
}

/// A monitoring scraper's limits: a few connections, no request body.
pub fn limits() -> ServerLimits {
    ServerLimits {
        max_connections: 32,
        header_read: Duration::from_secs(10),
        idle: Duration::from_secs(60),
        body: Duration::from_secs(10),
        body_idle: Duration::from_secs(5),
        body_budget: 64 * 1024,
    }
}

/// `/healthz` and `/metrics` for `monitored`; anything else is 404.
pub fn router(monitored: Arc<Monitored>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(monitored)
}

async fn healthz(State(monitored): State<Arc<Monitored>>) -> Response {
    let health = match &monitored.store {
        Some(store) => store.check(),
        None => Health::Up { store: false },
    };
    let status = if health.is_up() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut response = (status, axum::Json(health.body())).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn metrics(State(monitored): State<Arc<Monitored>>, headers: HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    let format = Format::from_accept(accept);
    monitored.metrics.refresh().await;
    match monitored.metrics.render(format) {
        Ok(text) => (
            [
                (header::CONTENT_TYPE, format.content_type()),
                (header::CACHE_CONTROL, "no-store"),
            ],
            text,
        )
            .into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(serde_json::json!({ "error": "the metrics could not be rendered" })),
        )
            .into_response(),
    }
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(serde_json::json!({
            "error": "not found",
            "paths": ["/healthz", "/metrics"],
        })),
    )
        .into_response()
}

/// The running endpoints; they stop when [`stop`](MonitorServer::stop)ped
/// or dropped.
#[derive(Debug)]
pub struct MonitorServer {
    pub addr: SocketAddr,
    server: Running,
}

impl MonitorServer {
    /// Binds `addr` (port 0 picks one) and serves `router` there.
    pub async fn start(addr: SocketAddr, router: Router) -> std::io::Result<MonitorServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        Ok(MonitorServer {
            addr,
            server: Running::spawn(listener, router, limits(), None),
        })
    }

    /// `http://HOST:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets open requests finish briefly, and returns.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}
