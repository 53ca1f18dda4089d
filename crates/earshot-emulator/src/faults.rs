//! Fault injection: the next `count` requests under a path prefix get added
//! latency, a forced status, or a dropped connection.

use std::sync::Mutex;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::SharedState;
use super::problem::Problem;

/// A fault for the next `count` requests whose path starts with
/// `path_prefix`: the body of `POST /_emulator/faults`. Start from
/// [`Fault::status`], [`Fault::latency`] or [`Fault::drop_connection`]:
///
/// ```
/// # use std::time::Duration;
/// # use earshot_emulator::Fault;
/// // The next two subscription requests wait 200 ms, then answer 503.
/// let fault = Fault::status("/v1/webhook-subscriptions", 503)
///     .with_latency(Duration::from_millis(200))
///     .times(2);
/// assert_eq!(fault.count, 2);
/// ```
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Fault {
    /// Requests whose path starts with this (`/v1/...`, `/v2/...`; never
    /// `/_emulator`).
    pub path_prefix: String,
    /// The status answered instead of the real answer.
    #[serde(default)]
    pub status: Option<u16>,
    /// Added before answering (or dropping).
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// The connection is closed instead of answered.
    #[serde(default)]
    pub drop: bool,
    /// How many requests it applies to; on the armed list, how many are
    /// left.
    #[serde(default = "one")]
    pub count: u32,
}

fn one() -> u32 {
    1
}

impl Fault {
    fn at(path_prefix: impl Into<String>) -> Fault {
        Fault {
            path_prefix: path_prefix.into(),
            status: None,
            latency_ms: None,
            drop: false,
            count: 1,
        }
    }

    /// The next request under `path_prefix` is answered `status` (a
    /// problem body; a 429 carries `Retry-After: 1`).
    pub fn status(path_prefix: impl Into<String>, status: u16) -> Fault {
        Fault::at(path_prefix).with_status(status)
    }

    /// The next request under `path_prefix` waits `latency` first, then
    /// gets its real answer.
    pub fn latency(path_prefix: impl Into<String>, latency: Duration) -> Fault {
        Fault::at(path_prefix).with_latency(latency)
    }

    /// The next request under `path_prefix` has its connection dropped.
    pub fn drop_connection(path_prefix: impl Into<String>) -> Fault {
        let mut fault = Fault::at(path_prefix);
        fault.drop = true;
        fault
    }

    /// Answers `status` as well.
    pub fn with_status(mut self, status: u16) -> Fault {
        self.status = Some(status);
        self
    }

    /// Waits `latency` as well (whole milliseconds).
    pub fn with_latency(mut self, latency: Duration) -> Fault {
        self.latency_ms = Some(u64::try_from(latency.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Applies to the next `count` requests instead of one.
    pub fn times(mut self, count: u32) -> Fault {
        self.count = count;
        self
    }

    /// Why this fault cannot be armed, if it cannot.
    pub(crate) fn problem(&self) -> Option<String> {
        if !self.path_prefix.starts_with('/') {
            return Some("`path_prefix`: must start with /".into());
        }
        if self.path_prefix.starts_with("/_emulator") {
            return Some("`path_prefix`: control routes cannot be faulted".into());
        }
        if let Some(status) = self.status
            && StatusCode::from_u16(status).is_err()
        {
            return Some(format!("`status`: {status} is not an HTTP status"));
        }
        if self.count == 0 {
            return Some("`count`: must be at least 1".into());
        }
        if self.status.is_none() && self.latency_ms.is_none() && !self.drop {
            return Some("give at least one of `status`, `latency_ms`, `drop`".into());
        }
        None
    }
}

#[derive(Default)]
pub(crate) struct Faults {
    armed: Mutex<Vec<Fault>>,
}

impl Faults {
    pub fn arm(&self, fault: Fault) {
        self.lock().push(fault);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The faults still armed, each with the uses it has left.
    pub fn armed(&self) -> Vec<Fault> {
        self.lock().clone()
    }

    /// Takes one use of the first fault armed for `path`.
    fn take(&self, path: &str) -> Option<Fault> {
        let mut armed = self.lock();
        let index = armed
            .iter()
            .position(|fault| path.starts_with(&fault.path_prefix))?;
        let fault = armed[index].clone();
        armed[index].count -= 1;
        if armed[index].count == 0 {
            armed.remove(index);
        }
        Some(fault)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Fault>> {
        self.armed
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// Middleware: applies the fault armed for this request's path, if any.
pub(crate) async fn inject(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(fault) = state.faults.take(request.uri().path()) else {
        return next.run(request).await;
    };
    if let Some(latency) = fault.latency_ms {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    if fault.drop {
        return dropped_connection();
    }
    match fault
        .status
        .and_then(|status| StatusCode::from_u16(status).ok())
    {
        Some(status) => {
            drain(request.into_body());
            let mut response =
                Problem::new(status, "fault injected by the emulator").into_response();
            if status == StatusCode::TOO_MANY_REQUESTS {
                response
                    .headers_mut()
                    .insert("retry-after", axum::http::HeaderValue::from_static("1"));
            }
            response
        }
        None => next.run(request).await,
    }
}

/// How long a refused request's body is still read after the answer.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// Reads the rest of a request body that will not be used, in the
/// background: a client still uploading (a dictation stream) then reads
/// the forced answer instead of a reset connection ("broken pipe").
fn drain(body: Body) {
    tokio::spawn(async move {
        let mut chunks = body.into_data_stream();
        let _ = tokio::time::timeout(DRAIN_LIMIT, async {
            while let Some(Ok(_)) = futures_util::StreamExt::next(&mut chunks).await {}
        })
        .await;
    });
}

/// Marks the response of a dropped connection, for the journal.
#[derive(Clone, Copy)]
pub(crate) struct Dropped;

/// A response whose body fails at once, so the server aborts the
/// connection: the client sees the link drop, not an answer.
fn dropped_connection() -> Response {
    let failing = futures_util::stream::once(async {
        Err::<axum::body::Bytes, std::io::Error>(std::io::Error::other("fault: connection dropped"))
    });
    let mut response = Response::new(Body::from_stream(failing));
    response.extensions_mut().insert(Dropped);
    response
}
