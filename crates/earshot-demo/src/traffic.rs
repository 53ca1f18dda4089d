//! The demo's traffic: sessions and calls through the control routes,
//! pre-recorded jobs through the public API, paced and seeded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinSet;
use url::Url;

use super::{
    DEMO_AGENTS, JOB_BURST, JOB_RATE_PER_SECOND, JOB_WEBHOOK_EVERY, QUEUE_BACKLOG,
    RECENT_CONVERSATIONS, RECENT_JOBS, Recent, TRANSCRIPT_TOKEN_HEADER, lock, remember,
};
use earshot_core::api::Client;
use earshot_core::api::types::prerecorded::NewTranscript;
use earshot_protocol::redact::SecretString;

/// What the loops share: the two HTTP clients and where things go.
pub(super) struct Traffic {
    pub(super) control: reqwest::Client,
    pub(super) base: Url,
    pub(super) api: Client,
    pub(super) recent: Arc<Mutex<Recent>>,
    pub(super) pace: Duration,
    pub(super) audio_url: String,
    pub(super) transcript_hook: String,
    pub(super) transcript_token: SecretString,
}

/// Paces job submissions: a token bucket refilled at
/// [`JOB_RATE_PER_SECOND`], holding at most [`JOB_BURST`].
pub(super) struct JobPacer {
    pub(super) allowance: f64,
    pub(super) submitted: u64,
}

impl Traffic {
    /// Sends a control request; its JSON answer, or `None` (the reason
    /// logged).
    async fn control(&self, method: reqwest::Method, path: &str, body: Value) -> Option<Value> {
        let url = match self.base.join(path.trim_start_matches('/')) {
            Ok(url) => url,
            Err(error) => {
                tracing::warn!(path, "demo: bad control URL: {error}");
                return None;
            }
        };
        let mut request = self.control.request(method.clone(), url);
        if method != reqwest::Method::GET {
            request = request.json(&body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(
                    path,
                    "demo: {method} failed: {}",
                    earshot_protocol::error_text::root_cause(&error)
                );
                return None;
            }
        };
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            let first_line = text.lines().next().unwrap_or_default();
            tracing::warn!(path, %status, "demo: {method} refused: {first_line}");
            return None;
        }
        match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::warn!(path, "demo: unreadable answer: {error}");
                None
            }
        }
    }

    fn remember_conversation(&self, id: String) {
        remember(
            &mut lock(&self.recent).conversations,
            id,
            RECENT_CONVERSATIONS,
        );
    }

    /// How long a session or connected call lasts: two to four paces.
    fn hold(&self, rng: &mut Rng) -> Duration {
        self.pace.mul_f64(rng.between(2.0, 4.0))
    }

    /// Starts a session for `agent`; completing it is scheduled in `later`.
    pub(super) async fn session(
        self: &Arc<Self>,
        agent: &str,
        rng: &mut Rng,
        later: &mut JoinSet<()>,
    ) {
        let answer = self
            .control(
                reqwest::Method::POST,
                "/_emulator/sessions",
                json!({ "agent_id": agent }),
            )
            .await;
        let Some(id) = answer.and_then(|answer| id_in(&answer, "session_id")) else {
            return;
        };
        tracing::debug!(session = id, agent, "demo: session started");
        self.remember_conversation(id.clone());
        let hold = self.hold(rng);
        let traffic = self.clone();
        later.spawn(async move {
            tokio::time::sleep(hold).await;
            let path = format!("/_emulator/sessions/{id}/complete");
            if traffic
                .control(reqwest::Method::POST, &path, json!({}))
                .await
                .is_some()
            {
                tracing::debug!(session = id, "demo: session completed");
            }
        });
    }

    /// Places a call for `agent`: connected (its end scheduled in `later`)
    /// or failed.
    pub(super) async fn call(
        self: &Arc<Self>,
        agent: &str,
        connected: bool,
        rng: &mut Rng,
        later: &mut JoinSet<()>,
    ) {
        let outcome = if connected { "connected" } else { "failed" };
        let answer = self
            .control(
                reqwest::Method::POST,
                "/_emulator/calls",
                json!({ "agent_id": agent, "outcome": outcome }),
            )
            .await;
        let Some(id) = answer.and_then(|answer| id_in(&answer, "call_id")) else {
            return;
        };
        tracing::debug!(call = id, agent, outcome, "demo: call placed");
        self.remember_conversation(id.clone());
        if !connected {
            return;
        }
        let hold = self.hold(rng);
        let traffic = self.clone();
        later.spawn(async move {
            tokio::time::sleep(hold).await;
            let path = format!("/_emulator/calls/{id}/end");
            if traffic
                .control(reqwest::Method::POST, &path, json!({}))
                .await
                .is_some()
            {
                tracing::debug!(call = id, "demo: call ended");
            }
        });
    }

    /// Submits jobs until the account's slots are full and
    /// [`QUEUE_BACKLOG`] wait, as far as the pacer allows.
    pub(super) async fn fill_queue(&self, pacer: &mut JobPacer) {
        let Some(account) = self
            .control(reqwest::Method::GET, "/_emulator/account", Value::Null)
            .await
        else {
            return;
        };
        let count = |field: &str| account.get(field).and_then(Value::as_u64);
        let (Some(slots), Some(processing), Some(queued)) = (
            count("effective_concurrency"),
            count("processing"),
            count("queued"),
        ) else {
            tracing::warn!("demo: the account answer lacks the queue counts");
            return;
        };
        let wanted = (slots + QUEUE_BACKLOG).saturating_sub(processing + queued);
        for _ in 0..wanted {
            if pacer.allowance < 1.0 {
                break;
            }
            pacer.allowance -= 1.0;
            pacer.submitted += 1;
            self.submit_job(pacer.submitted.is_multiple_of(JOB_WEBHOOK_EVERY))
                .await;
        }
    }

    async fn submit_job(&self, with_webhook: bool) {
        let mut request = NewTranscript {
            audio_url: self.audio_url.clone(),
            ..NewTranscript::default()
        };
        if with_webhook {
            request.webhook_url = Some(self.transcript_hook.clone());
            request.webhook_auth_header_name = Some(TRANSCRIPT_TOKEN_HEADER.to_owned());
            request.webhook_auth_header_value = Some(self.transcript_token.clone());
        }
        match self.api.create_transcript(&request).await {
            Ok(transcript) => {
                tracing::debug!(
                    transcript = transcript.id,
                    status = transcript.status.as_str(),
                    "demo: job submitted"
                );
                let mut recent = lock(&self.recent);
                if let Some(feed) = &recent.job_feed
                    && feed.send(transcript.id.clone()).is_err()
                {
                    recent.job_feed = None;
                }
                remember(&mut recent.jobs, transcript.id, RECENT_JOBS);
            }
            Err(error) => tracing::warn!("demo: {error}"),
        }
    }
}

/// A non-empty string field of a control answer.
fn id_in(answer: &Value, field: &str) -> Option<String> {
    let id = answer.get(field).and_then(Value::as_str);
    if id.is_none() {
        tracing::warn!(field, "demo: the control answer lacks the id");
    }
    id.filter(|id| !id.is_empty()).map(str::to_owned)
}

/// Sessions and calls, one every half to one and a half paces: 45 %
/// sessions, 43 % connected calls, 12 % failed calls, agents at random.
pub(super) async fn run_conversations(traffic: Arc<Traffic>, mut rng: Rng, mut later: JoinSet<()>) {
    loop {
        tokio::time::sleep(traffic.pace.mul_f64(rng.between(0.5, 1.5))).await;
        // Reap finished lifecycles so the set does not grow.
        while later.try_join_next().is_some() {}
        let agent = DEMO_AGENTS[rng.index(DEMO_AGENTS.len())];
        let roll = rng.unit();
        if roll < 0.45 {
            traffic.session(agent, &mut rng, &mut later).await;
        } else {
            traffic.call(agent, roll < 0.88, &mut rng, &mut later).await;
        }
    }
}

/// Tops the pre-recorded queue up every third of a pace (0.1 s to 0.5 s):
/// often enough that the backlog never drains between two top-ups.
pub(super) async fn run_jobs(traffic: Arc<Traffic>, mut pacer: JobPacer) {
    let tick = (traffic.pace / 3).clamp(Duration::from_millis(100), Duration::from_millis(500));
    loop {
        tokio::time::sleep(tick).await;
        pacer.allowance =
            (pacer.allowance + JOB_RATE_PER_SECOND * tick.as_secs_f64()).min(JOB_BURST);
        traffic.fill_queue(&mut pacer).await;
    }
}

// ---------------------------------------------------------------------------
// Randomness
// ---------------------------------------------------------------------------

/// Seedable randomness for the traffic's pace and choices.
pub(super) struct Rng(fastrand::Rng);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0.f64()
    }

    fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    fn index(&mut self, len: usize) -> usize {
        self.0.usize(..len.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rng_is_seeded_and_in_range() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|_| rng.index(3)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            let x = rng.between(0.5, 1.5);
            assert!((0.5..1.5).contains(&x));
        }
        assert!(draw(3).iter().all(|&i| i < 3));
    }
}
