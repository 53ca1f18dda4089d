//! The journal: every request the emulator received (method, path, the
//! [`Route`] it matched, status, the start of its body, when), kept in
//! order for a test to read ([`Emulator::journal`](crate::Emulator::journal))
//! and counted per route for the expectations (`expect.rs`), which see
//! every request even once the journal has let old ones go.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;

use super::SharedState;
use super::faults::Dropped;
use super::route::Route;
use earshot_protocol::clock_text::utc_clock;

/// The most of a request body an entry keeps (the rest is counted in
/// [`JournalEntry::body_len`]).
pub const JOURNAL_BODY_LIMIT: usize = 4 * 1024;
/// Entries kept by default; older ones are let go, oldest first.
pub const JOURNAL_KEEP: usize = 10_000;

/// One request the emulator received and answered.
#[derive(Clone)]
#[non_exhaustive]
pub struct JournalEntry {
    /// Its place in the order of arrival, from 1; never reused.
    pub seq: u64,
    /// When it arrived.
    pub at: SystemTime,
    /// How long the emulator took to answer it.
    pub took: Duration,
    pub method: String,
    /// The path, without the query.
    pub path: String,
    pub query: Option<String>,
    /// The platform route it took; `None` for control routes
    /// (`/_emulator/...`) and paths no route serves.
    pub route: Option<Route>,
    /// The status answered (an injected fault's, when one applied).
    /// Meaningless when [`dropped`](JournalEntry::dropped).
    pub status: u16,
    /// An armed fault dropped the connection: the client got no answer.
    pub dropped: bool,
    /// The first [`JOURNAL_BODY_LIMIT`] bytes of the body, as far as the
    /// emulator had read it when it answered.
    pub body: Vec<u8>,
    /// Every byte of the body read by then (more than `body.len()` when
    /// the body was longer than the limit).
    pub body_len: u64,
}

impl JournalEntry {
    /// The body kept, as text, if it is UTF-8.
    pub fn body_text(&self) -> Option<&str> {
        std::str::from_utf8(&self.body).ok()
    }

    /// The body kept, parsed as JSON into `T`.
    pub fn body_json<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }

    fn unix_millis(&self) -> i64 {
        self.at
            .duration_since(UNIX_EPOCH)
            .ok()
            .and_then(|since| i64::try_from(since.as_millis()).ok())
            .unwrap_or(0)
    }
}

impl fmt::Display for JournalEntry {
    /// `#3 18:20:01 UTC  POST /v2/transcript → 201 (96 B body)` (`→
    /// dropped` for a dropped connection): no body content (a
    /// subscription's secret travels in one).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} {} UTC  {} {}",
            self.seq,
            utc_clock(self.unix_millis()),
            self.method,
            self.path
        )?;
        if self.query.is_some() {
            f.write_str("?…")?;
        }
        if self.dropped {
            write!(f, " → dropped ({} B body)", self.body_len)
        } else {
            write!(f, " → {} ({} B body)", self.status, self.body_len)
        }
    }
}

impl fmt::Debug for JournalEntry {
    /// Everything but the body's bytes, which may hold a secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JournalEntry")
            .field("seq", &self.seq)
            .field("at", &self.at)
            .field("took", &self.took)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("route", &self.route)
            .field("status", &self.status)
            .field("dropped", &self.dropped)
            .field("body_len", &self.body_len)
            .finish_non_exhaustive()
    }
}

/// The entries kept, and the counters expectations watch.
pub(crate) struct Journal {
    keep: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_seq: u64,
    entries: VecDeque<JournalEntry>,
    /// One counter per expectation, with the route it counts.
    watchers: Vec<(Route, Arc<AtomicU64>)>,
}

impl Journal {
    pub fn new(keep: usize) -> Journal {
        Journal {
            keep,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The entries kept, oldest first.
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.lock().entries.iter().cloned().collect()
    }

    /// A counter of the requests to `route` from now on, and the sequence
    /// number the next request will get.
    pub fn watch(&self, route: Route) -> (Arc<AtomicU64>, u64) {
        let counter = Arc::new(AtomicU64::new(0));
        let mut inner = self.lock();
        inner.watchers.push((route, counter.clone()));
        (counter, inner.next_seq + 1)
    }

    fn record(&self, mut entry: JournalEntry) {
        let mut inner = self.lock();
        inner.next_seq += 1;
        entry.seq = inner.next_seq;
        if let Some(route) = entry.route {
            for (watched, counter) in &inner.watchers {
                if *watched == route {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if self.keep == 0 {
            return;
        }
        while inner.entries.len() >= self.keep {
            inner.entries.pop_front();
        }
        inner.entries.push_back(entry);
    }
}

/// The start of a body as it was read, shared between the body the
/// handler reads and the middleware that records it.
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    len: u64,
}

/// Middleware: records every request with its answer's status.
pub(crate) async fn record(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let at = SystemTime::now();
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|pattern| Route::matched(&method, pattern.as_str()));
    let captured = Arc::new(Mutex::new(Captured::default()));
    let (parts, body) = request.into_parts();
    let tee = captured.clone();
    let body = Body::from_stream(body.into_data_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            keep_start(&tee, bytes);
        }
        chunk
    }));
    let response = next.run(Request::from_parts(parts, body)).await;
    let (body, body_len) = {
        let mut captured = captured.lock().unwrap_or_else(|poison| poison.into_inner());
        (std::mem::take(&mut captured.bytes), captured.len)
    };
    state.journal.record(JournalEntry {
        seq: 0,
        at,
        took: started.elapsed(),
        method,
        path,
        query,
        route,
        status: response.status().as_u16(),
        dropped: response.extensions().get::<Dropped>().is_some(),
        body,
        body_len,
    });
    response
}

fn keep_start(captured: &Mutex<Captured>, chunk: &Bytes) {
    let mut captured = captured.lock().unwrap_or_else(|poison| poison.into_inner());
    captured.len += chunk.len() as u64;
    let room = JOURNAL_BODY_LIMIT.saturating_sub(captured.bytes.len());
    let kept = &chunk[..chunk.len().min(room)];
    captured.bytes.extend_from_slice(kept);
}
