//! Forwarding a verified delivery to the app a developer runs (`earshot
//! listen --forward-to URL`): its exact bytes with the platform's headers
//! (`X-SVC-Signature` as received, or signed anew for the app's own
//! secret), one at a time per session or call, so events of one session
//! reach the app in the order they were received even when the platform
//! delivers them concurrently. The app's answer is the one the platform
//! gets (the receiver answers with its status, so the platform's retries
//! apply), and is shown beside earshot's own verdict.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};

use crate::receiver::check::send::send_reading;
use crate::redact::SecretString;
use crate::signature;

/// The longest an app may take: under the platform's 15 s, so the
/// platform hears the app's answer rather than its own timeout.
pub const APP_DEADLINE: Duration = Duration::from_secs(10);

/// How much of the app's answer is kept to show.
const ANSWER_SHOWN: usize = 200;

/// The platform's headers a forwarded delivery carries as received.
const PASSED_ON: [&str; 3] = ["x-svc-event", "x-svc-delivery-id", "content-type"];

/// Which app an event goes to: its type's own, else the default.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    /// One app per event type (`listen --forward call.ended=URL`).
    pub by_type: Vec<(String, reqwest::Url)>,
    /// Every other type's (`--forward-to URL`); `None`: not forwarded.
    pub default: Option<reqwest::Url>,
}

impl Routes {
    /// The app an event of type `event` goes to, if any.
    pub fn app_for(&self, event: &str) -> Option<&reqwest::Url> {
        self.by_type
            .iter()
            .find(|(kind, _)| kind == event)
            .map(|(_, url)| url)
            .or(self.default.as_ref())
    }

    /// The routes in one line (the default app, then each type's): what
    /// a relay from the store keeps its place under.
    pub fn key(&self) -> String {
        let mut key = self
            .default
            .as_ref()
            .map_or("-", reqwest::Url::as_str)
            .to_owned();
        for (kind, url) in &self.by_type {
            key.push_str(&format!(" {kind}={url}"));
        }
        key
    }
}

/// Where verified deliveries go, and with which signature.
pub struct Forward {
    routes: Routes,
    /// Signs anew for the app's secret; `None`: the received header.
    secret: Option<SecretString>,
    http: reqwest::Client,
    /// One turn per session or call at a time (emptied as turns end).
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for Forward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forward")
            .field("routes", &self.routes)
            .field("re_signed", &self.secret.is_some())
            .finish()
    }
}

/// What the app answered a forwarded delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forwarded {
    /// Its HTTP status; `None` when it gave none.
    pub status: Option<u16>,
    pub latency_ms: u64,
    /// The start of its answer (lossy UTF-8, at most 200 bytes).
    pub answer: String,
    /// Why there is no status: `connection refused`, `timeout …`.
    pub error: Option<String>,
}

impl Forwarded {
    /// How long the app took, as text (`< 1 ms` under a millisecond).
    pub fn took(&self) -> String {
        match self.latency_ms {
            0 => "< 1 ms".to_owned(),
            ms => crate::duration_text::of_millis(ms as f64),
        }
    }

    /// What the app answered, in a few words: `HTTP 500`, or why it gave
    /// no status (`connection refused`, `no answer`).
    pub fn answered(&self) -> String {
        match (self.status, &self.error) {
            (Some(status), _) => format!("HTTP {status}"),
            (None, Some(error)) => error.clone(),
            (None, None) => "no answer".to_owned(),
        }
    }

    /// The app took it (a 2xx).
    pub fn taken(&self) -> bool {
        self.status
            .is_some_and(|status| (200..300).contains(&status))
    }
}

impl Forward {
    /// Forwards along `routes`, signing anew with `secret` when given.
    pub fn new(routes: Routes, secret: Option<SecretString>) -> Result<Forward, reqwest::Error> {
        // Each send is bounded by [`APP_DEADLINE`] (`check::send`).
        let http = earshot_http::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Forward {
            routes,
            secret,
            http,
            turns: Mutex::new(HashMap::new()),
        })
    }

    /// The app an event of type `event` goes to, if any.
    pub fn app_for(&self, event: &str) -> Option<&reqwest::Url> {
        self.routes.app_for(event)
    }

    /// Where it forwards.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Sends `body` with the platform's `headers` to `app` once the
    /// earlier deliveries of `session` have had their answer.
    pub async fn send(
        &self,
        app: &reqwest::Url,
        session: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Forwarded {
        let turn = {
            let mut turns = self
                .turns
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            turns.entry(session.to_owned()).or_default().clone()
        };
        let guard = turn.lock().await;
        let forwarded = self.post(app, headers, body).await;
        drop(guard);
        let mut turns = self
            .turns
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        // Only this turn and the map hold it: no delivery of that session waits.
        if Arc::strong_count(&turn) == 2 {
            turns.remove(session);
        }
        forwarded
    }

    async fn post(&self, app: &reqwest::Url, headers: &HeaderMap, body: &[u8]) -> Forwarded {
        let mut request = self.http.post(app.clone()).body(body.to_vec());
        for name in PASSED_ON {
            if let Some(value) = headers.get(name) {
                request = request.header(name, value.as_bytes());
            }
        }
        let signed = match &self.secret {
            Some(secret) => signature::sign(
                secret.expose().as_bytes(),
                chrono::Utc::now().timestamp(),
                body,
            ),
            None => headers
                .get(signature::HEADER_NAME)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
        };
        request = request.header(signature::HEADER_NAME, signed);
        let (attempt, mut answer) = send_reading(request, APP_DEADLINE).await;
        answer.truncate(ANSWER_SHOWN);
        Forwarded {
            status: attempt.status(),
            latency_ms: u64::try_from(attempt.latency.as_millis()).unwrap_or(u64::MAX),
            answer: String::from_utf8_lossy(&answer).into_owned(),
            error: attempt.answer.unanswered(APP_DEADLINE),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use axum::Router;
    use axum::routing::post;
    use tokio::sync::Notify;

    use super::*;

    #[test]
    fn a_types_own_app_comes_before_the_default() {
        let url = |text: &str| reqwest::Url::parse(text).expect("a URL");
        let routes = Routes {
            by_type: vec![("call.failed".to_owned(), url("http://127.0.0.1:1/failed"))],
            default: Some(url("http://127.0.0.1:1/all")),
        };
        assert_eq!(
            routes.app_for("call.failed").map(reqwest::Url::path),
            Some("/failed")
        );
        assert_eq!(
            routes.app_for("call.ended").map(reqwest::Url::path),
            Some("/all")
        );
        let only = Routes {
            default: None,
            ..routes
        };
        assert_eq!(only.app_for("call.ended"), None, "no app: not forwarded");
    }

    #[tokio::test]
    async fn a_session_waits_for_its_earlier_event_and_another_session_does_not() {
        let arrived: Arc<Mutex<Vec<String>>> = Arc::default();
        let release = Arc::new(Notify::new());
        let app = Router::new().route(
            "/",
            post({
                let (arrived, release) = (arrived.clone(), release.clone());
                move |body: axum::body::Bytes| async move {
                    let text = String::from_utf8_lossy(&body).into_owned();
                    arrived.lock().expect("the list").push(text.clone());
                    if text == "first" {
                        release.notified().await;
                    }
                    "ok"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}/", listener.local_addr().expect("its address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let routes = Routes {
            default: Some(url.parse().expect("a URL")),
            ..Routes::default()
        };
        let forward = Arc::new(Forward::new(routes, None).expect("a client"));
        let send = |session: &'static str, body: &'static str| {
            let forward = forward.clone();
            tokio::spawn(async move {
                let app = forward
                    .app_for("call.ended")
                    .cloned()
                    .expect("the default app");
                forward
                    .send(&app, session, &HeaderMap::new(), body.as_bytes())
                    .await
            })
        };
        let seen = || arrived.lock().expect("the list").clone();
        let first = send("s1", "first");
        let deadline = Instant::now() + Duration::from_secs(5);
        while seen().is_empty() {
            assert!(Instant::now() < deadline, "the first event never arrived");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let second = send("s1", "second");
        let other = send("s2", "other").await.expect("sent");
        assert!(other.taken(), "{other:?}");
        assert_eq!(
            seen(),
            ["first", "other"],
            "the session's next event waits its turn"
        );
        release.notify_one();
        for sent in [first, second] {
            assert!(sent.await.expect("sent").taken());
        }
        assert_eq!(seen(), ["first", "other", "second"]);
        assert!(
            forward.turns.lock().expect("the turns").is_empty(),
            "no turn is kept once no event waits"
        );
    }
}
