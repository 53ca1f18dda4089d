//! A flood of signed webhook events at a fixed rate ([`flood`]), as the
//! platform sends them to an observer: distinct `event_id`s, some sent
//! twice at the same moment, each POST signed when it is sent, on a new
//! connection each (so a load balancer in front spreads them). What each
//! event got back is kept ([`FloodReport`]): answered 2xx (acked), another
//! status, or no answer; [`resend_unacked`] then sends what was not acked
//! again, byte for byte, as the platform retries. Used by the failover
//! test and the failover benchmark.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

/// How long one POST may take, connecting included.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// How long connecting may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(2);
/// The pause between two rounds of [`resend_unacked`].
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// What to send.
#[derive(Clone, Debug)]
pub struct FloodPlan {
    /// The `event_id`s are `PREFIX-000000`, `PREFIX-000001`, ….
    pub prefix: String,
    /// Events started per second.
    pub rate_per_s: u32,
    /// How long the flood lasts.
    pub duration: Duration,
    /// Every this-many-th event is sent twice at once (0: none).
    pub twice_every: usize,
    /// POSTs in flight at most; the schedule slips when they are all busy.
    pub in_flight: usize,
}

/// One event of the flood: its id, its bytes, what it got.
#[derive(Clone, Debug)]
pub struct FloodEvent {
    pub id: String,
    pub body: Vec<u8>,
    /// Some POST of it was answered 2xx.
    pub acked: bool,
}

/// What the flood (and any resending) sent and got back.
#[derive(Clone, Debug, Default)]
pub struct FloodReport {
    pub events: Vec<FloodEvent>,
    /// POSTs made.
    pub sent: usize,
    /// POSTs answered 2xx.
    pub answered_2xx: usize,
    /// POSTs answered with another status.
    pub answered_other: usize,
    /// POSTs with no answer (refused, reset, timed out).
    pub no_answer: usize,
    /// The time to each 2xx answer.
    pub latencies: Vec<Duration>,
    /// From the first POST of the flood to its last answer.
    pub elapsed: Duration,
}

impl FloodReport {
    /// The ids of the events answered 2xx.
    pub fn acked_ids(&self) -> impl Iterator<Item = &str> {
        self.events
            .iter()
            .filter(|event| event.acked)
            .map(|event| event.id.as_str())
    }

    /// How many events no POST was answered 2xx for.
    pub fn unacked(&self) -> usize {
        self.events.iter().filter(|event| !event.acked).count()
    }

    /// The `p`-th percentile (0–100) of the 2xx answer times.
    pub fn latency_percentile(&self, p: f64) -> Option<Duration> {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let last = sorted.len().checked_sub(1)?;
        let rank = ((p / 100.0) * last as f64).round() as usize;
        sorted.get(rank.min(last)).copied()
    }
}

/// The body of event `index` of a flood with `prefix`: a `call.failed`
/// with a timestamp of now, on one of fifty calls.
pub fn event_body(prefix: &str, index: usize) -> (String, Vec<u8>) {
    let id = format!("{prefix}-{index:06}");
    let body = json!({
        "event_id": id,
        "event": "call.failed",
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "call": { "call_id": format!("call-{prefix}-{}", index % 50) },
    })
    .to_string()
    .into_bytes();
    (id, body)
}

/// Sends the flood `plan` to `url`, signed with `secret`, and waits for
/// every answer.
pub async fn flood(url: &str, secret: &str, plan: &FloodPlan) -> FloodReport {
    let total = (u64::from(plan.rate_per_s) * plan.duration.as_millis() as u64 / 1000) as usize;
    let events = (0..total)
        .map(|index| {
            let (id, body) = event_body(&plan.prefix, index);
            FloodEvent {
                id,
                body,
                acked: false,
            }
        })
        .collect();
    let tally = Arc::new(Mutex::new(FloodReport {
        events,
        ..FloodReport::default()
    }));
    let sender = Sender::new(url, secret);
    let gate = Arc::new(tokio::sync::Semaphore::new(plan.in_flight.max(1)));
    let interval = Duration::from_secs(1) / plan.rate_per_s.max(1);
    let started = Instant::now();
    let mut posts = tokio::task::JoinSet::new();
    for index in 0..total {
        tokio::time::sleep_until((started + interval * index as u32).into()).await;
        let copies = if plan.twice_every > 0 && index % plan.twice_every == 0 {
            2
        } else {
            1
        };
        for _ in 0..copies {
            if !sender
                .post_in_flight(&mut posts, &gate, &tally, index)
                .await
            {
                break;
            }
        }
    }
    while posts.join_next().await.is_some() {}
    let mut report = take(tally);
    report.elapsed = started.elapsed();
    report
}

/// Sends every event of `report` not yet acked again (one POST each,
/// in rounds, `in_flight` at once), as the platform retries, until all are
/// acked or `within` has passed.
pub async fn resend_unacked(
    url: &str,
    secret: &str,
    report: FloodReport,
    in_flight: usize,
    within: Duration,
) -> FloodReport {
    let deadline = Instant::now() + within;
    let tally = Arc::new(Mutex::new(report));
    let sender = Sender::new(url, secret);
    let gate = Arc::new(tokio::sync::Semaphore::new(in_flight.max(1)));
    loop {
        let unacked: Vec<usize> = lock(&tally)
            .events
            .iter()
            .enumerate()
            .filter(|(_, event)| !event.acked)
            .map(|(index, _)| index)
            .collect();
        if unacked.is_empty() || Instant::now() >= deadline {
            break;
        }
        let mut posts = tokio::task::JoinSet::new();
        for index in unacked {
            if !sender
                .post_in_flight(&mut posts, &gate, &tally, index)
                .await
            {
                break;
            }
        }
        while posts.join_next().await.is_some() {}
        tokio::time::sleep(RETRY_PAUSE).await;
    }
    take(tally)
}

/// The HTTP client and where it sends.
#[derive(Clone)]
struct Sender {
    http: reqwest::Client,
    url: Arc<str>,
    secret: Arc<str>,
}

impl Sender {
    fn new(url: &str, secret: &str) -> Sender {
        let http = earshot_http::client_builder()
            .no_proxy()
            // A new connection for each POST: each is balanced anew.
            .pool_max_idle_per_host(0)
            .connect_timeout(CONNECT_WITHIN)
            .timeout(ANSWER_WITHIN)
            .build()
            .expect("an HTTP client");
        Sender {
            http,
            url: url.into(),
            secret: secret.into(),
        }
    }

    /// POSTs event `index` of `tally`, signed now, and notes the answer.
    /// Posts event `index` as a task of `posts` once `gate` lets one more
    /// be in flight; false when the gate is closed.
    async fn post_in_flight(
        &self,
        posts: &mut tokio::task::JoinSet<()>,
        gate: &Arc<tokio::sync::Semaphore>,
        tally: &Arc<Mutex<FloodReport>>,
        index: usize,
    ) -> bool {
        let Ok(permit) = gate.clone().acquire_owned().await else {
            return false;
        };
        let (sender, tally) = (self.clone(), tally.clone());
        posts.spawn(async move {
            sender.post(&tally, index).await;
            drop(permit);
        });
        true
    }

    async fn post(&self, tally: &Mutex<FloodReport>, index: usize) {
        let body = lock(tally).events[index].body.clone();
        let header = earshot_core::signature::sign(
            self.secret.as_bytes(),
            chrono::Utc::now().timestamp(),
            &body,
        );
        let started = Instant::now();
        let answer = self
            .http
            .post(&*self.url)
            .header("content-type", "application/json")
            .header("x-svc-signature", header)
            .body(body)
            .send()
            .await;
        // The answer's body is read, so a 2xx means the whole answer came.
        let status = match answer {
            Ok(response) => {
                let status = response.status();
                response.bytes().await.ok().map(|_| status)
            }
            Err(_) => None,
        };
        let took = started.elapsed();
        let mut tally = lock(tally);
        tally.sent += 1;
        match status {
            Some(status) if status.is_success() => {
                tally.answered_2xx += 1;
                tally.latencies.push(took);
                tally.events[index].acked = true;
            }
            Some(_) => tally.answered_other += 1,
            None => tally.no_answer += 1,
        }
    }
}

fn lock(tally: &Mutex<FloodReport>) -> std::sync::MutexGuard<'_, FloodReport> {
    tally
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn take(tally: Arc<Mutex<FloodReport>>) -> FloodReport {
    std::mem::take(&mut *lock(&tally))
}
