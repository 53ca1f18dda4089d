//! Webhook receivers on loopback (small axum servers) that record every
//! request they get and answer as the test scripts them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::eventually;

/// One request as a receiver saw it.
#[derive(Clone, Debug)]
pub struct Captured {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
}

impl Captured {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("delivery body is JSON")
    }
}

/// How a receiver answers one request (given every request so far).
pub type Behaviour = Arc<dyn Fn(&Captured, usize) -> Reply + Send + Sync>;

/// A receiver's answer: status, body, optional delay and extra header.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
    pub location: Option<String>,
}

impl Reply {
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.to_owned(),
            delay: Duration::ZERO,
            location: None,
        }
    }

    pub fn ok() -> Reply {
        Reply::status(200, "ok")
    }
}

/// A webhook receiver on loopback that records what it gets.
pub struct Receiver {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<Captured>>>,
}

#[derive(Clone)]
struct ReceiverState {
    requests: Arc<Mutex<Vec<Captured>>>,
    behaviour: Behaviour,
}

impl Receiver {
    pub async fn start(
        behaviour: impl Fn(&Captured, usize) -> Reply + Send + Sync + 'static,
    ) -> Receiver {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let state = ReceiverState {
            requests: requests.clone(),
            behaviour: Arc::new(behaviour),
        };
        let app = Router::new().fallback(receive).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { addr, requests }
    }

    /// A receiver that always answers 200.
    pub async fn healthy() -> Receiver {
        Receiver::start(|_, _| Reply::ok()).await
    }

    /// A receiver that answers 500 `busy` to each event's first attempt
    /// (by the body's `event_id`) and 200 to its retries.
    pub async fn busy_once_per_event() -> Receiver {
        let tried = Mutex::new(std::collections::HashSet::new());
        Receiver::start(move |request: &Captured, _| {
            let event_id = request.json()["event_id"].as_str().unwrap_or("").to_owned();
            if tried.lock().unwrap().insert(event_id) {
                Reply::status(500, "busy")
            } else {
                Reply::ok()
            }
        })
        .await
    }

    /// A receiver that answers `status` with `body` to its first `failures`
    /// requests, then 200.
    pub async fn failing_first(failures: usize, status: u16, body: &'static str) -> Receiver {
        Receiver::start(move |_, index| {
            if index < failures {
                Reply::status(status, body)
            } else {
                Reply::ok()
            }
        })
        .await
    }

    /// A receiver that answers its first request after `delay`, then at once.
    pub async fn slow_first(delay: Duration) -> Receiver {
        Receiver::start(move |_, index| {
            if index == 0 {
                Reply {
                    delay,
                    ..Reply::ok()
                }
            } else {
                Reply::ok()
            }
        })
        .await
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn captured(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }

    /// The `call` object of the first request (a `call.ended` for a
    /// receiver subscribed to it), once it has come (up to 5 s).
    pub async fn first_call(&self) -> Value {
        eventually(Duration::from_secs(5), "a call event", || async {
            self.captured()
                .first()
                .map(|captured| captured.json()["call"].clone())
        })
        .await
    }

    /// Waits (up to 5 s) until exactly `count` requests have come, named
    /// `what` in the failure; they all.
    pub async fn wait_count(&self, count: usize, what: &str) -> Vec<Captured> {
        eventually(Duration::from_secs(5), what, || async {
            let requests = self.captured();
            (requests.len() == count).then_some(requests)
        })
        .await
    }
}

async fn receive(State(state): State<ReceiverState>, headers: HeaderMap, body: Bytes) -> Response {
    let captured = Captured {
        headers,
        body,
        at: Instant::now(),
    };
    let index = {
        let mut requests = state.requests.lock().unwrap();
        requests.push(captured.clone());
        requests.len() - 1
    };
    let reply = (state.behaviour)(&captured, index);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let status = StatusCode::from_u16(reply.status).unwrap();
    let mut response = (status, reply.body).into_response();
    if let Some(location) = reply.location {
        response
            .headers_mut()
            .insert("location", location.parse().unwrap());
    }
    response
}
