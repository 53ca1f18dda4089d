//! The emulator's pre-recorded records: the account's settings, one job
//! and its `GET /v2/transcript/{id}` form, and the table of jobs.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderName, HeaderValue};
use chrono::{DateTime, Utc};
use serde_json::{Map, json};

use earshot_protocol::types::prerecorded::{Transcript, TranscriptStatus};

/// The emulated account's settings (`/_emulator/account`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Account {
    pub(super) balance: f64,
    pub(super) concurrency: u32,
}

impl Account {
    /// Spec part 8 E rule 3: a negative balance allows one job at a time.
    pub(super) fn effective_concurrency(self) -> u32 {
        if self.balance < 0.0 {
            1
        } else {
            self.concurrency
        }
    }
}

/// One transcript job as the emulator holds it.
pub(super) struct Job {
    pub(super) id: String,
    pub(super) status: TranscriptStatus,
    pub(super) audio_url: String,
    pub(super) webhook_url: Option<String>,
    pub(super) webhook_auth: Option<(HeaderName, HeaderValue)>,
    pub(super) text: Option<String>,
    pub(super) error: Option<String>,
    pub(super) webhook_status_code: Option<u16>,
    pub(super) audio_duration: Option<Duration>,
    pub(super) created_at: DateTime<Utc>,
    pub(super) started_at: Option<DateTime<Utc>>,
    pub(super) finished_at: Option<DateTime<Utc>>,
}

impl Job {
    /// A job just submitted, `queued` until a slot takes it.
    pub(super) fn queued(
        id: String,
        audio_url: String,
        webhook_url: Option<String>,
        webhook_auth: Option<(HeaderName, HeaderValue)>,
    ) -> Job {
        Job {
            id,
            status: TranscriptStatus::Queued,
            audio_url,
            webhook_url,
            webhook_auth,
            text: None,
            error: None,
            webhook_status_code: None,
            audio_duration: None,
            created_at: Utc::now(),
            started_at: None,
            finished_at: None,
        }
    }

    /// The record as `GET /v2/transcript/{id}` shows it, with the JSON
    /// types the platform's SDKs read: `audio_duration` whole seconds,
    /// `webhook_auth` a bool, `words` with times in milliseconds.
    pub(super) fn record(&self) -> Transcript {
        let mut extra = Map::new();
        extra.insert("audio_url".into(), json!(self.audio_url));
        extra.insert(
            "audio_duration".into(),
            json!(self.audio_duration.map(whole_seconds)),
        );
        let words = self
            .text
            .as_deref()
            .map(|text| timed_words(text, self.audio_duration.unwrap_or_default()));
        let confidence = words.as_ref().map(|words| mean_confidence(words));
        extra.insert("words".into(), json!(words));
        extra.insert("confidence".into(), json!(confidence));
        extra.insert("webhook_url".into(), json!(self.webhook_url));
        extra.insert("webhook_auth".into(), json!(self.webhook_auth.is_some()));
        extra.insert(
            "webhook_auth_header_name".into(),
            json!(self.webhook_auth.as_ref().map(|(name, _)| name.as_str())),
        );
        extra.insert("created_at".into(), json!(self.created_at));
        extra.insert("started_at".into(), json!(self.started_at));
        extra.insert("finished_at".into(), json!(self.finished_at));
        Transcript {
            id: self.id.clone(),
            status: self.status.clone(),
            text: self.text.clone(),
            error: self.error.clone(),
            webhook_status_code: self.webhook_status_code,
            extra,
        }
    }
}

/// `audio_duration` as the platform's SDKs type it: an integer number of
/// seconds, rounded to the nearest (half up).
fn whole_seconds(duration: Duration) -> u64 {
    (duration.as_millis() as u64 + 500) / 1000
}

/// One entry of a record's `words`.
#[derive(Debug, PartialEq, serde::Serialize)]
struct TimedWord {
    text: String,
    /// Milliseconds from the start of the audio.
    start: u64,
    end: u64,
    confidence: f64,
    speaker: Option<String>,
}

/// The transcript's words (as dictation splits them, with the same stable
/// confidences) spread evenly over the audio.
fn timed_words(text: &str, audio: Duration) -> Vec<TimedWord> {
    let words = crate::dictation::words(text);
    let total = audio.as_millis() as u64;
    let count = words.len() as u64;
    words
        .into_iter()
        .zip(0u64..)
        .map(|((text, confidence), index)| TimedWord {
            text,
            start: total * index / count,
            end: total * (index + 1) / count,
            confidence,
            speaker: None,
        })
        .collect()
}

/// The transcript's `confidence`: the mean of its words' (0 with none).
fn mean_confidence(words: &[TimedWord]) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let mean = words.iter().map(|word| word.confidence).sum::<f64>() / words.len() as f64;
    (mean * 1000.0).round() / 1000.0
}

#[derive(Default)]
pub(super) struct Jobs {
    pub(super) transcripts: HashMap<String, Job>,
    /// Ids waiting as `queued`, oldest first.
    pub(super) queue: VecDeque<String>,
    pub(super) processing: u32,
    pub(super) uploads: HashMap<String, Bytes>,
    /// Finished job ids, oldest first, for `EmulatorConfig::keep_jobs`.
    pub(super) finished: VecDeque<String>,
}

impl Jobs {
    /// Room for `keep` finished jobs (`EmulatorConfig::keep_jobs`) and the
    /// waiting and running ones twice over, allocated at once: a hash
    /// table that forgets and adds keys grows again when the slots of
    /// removed keys run out while it is over half full, so an endless
    /// demo's table would double once at some hour long after its warm-up.
    pub(super) fn keeping(keep: Option<usize>) -> Jobs {
        let Some(keep) = keep else {
            return Jobs::default();
        };
        Jobs {
            transcripts: HashMap::with_capacity(2 * keep),
            finished: VecDeque::with_capacity(keep + 1),
            ..Jobs::default()
        }
    }

    /// Records `id` as finished; beyond `keep`, forgets the oldest finished.
    pub(super) fn finished(&mut self, id: &str, keep: Option<usize>) {
        let Some(keep) = keep else { return };
        self.finished.push_back(id.to_owned());
        while self.finished.len() > keep {
            if let Some(oldest) = self.finished.pop_front() {
                self.transcripts.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_kept_for_an_endless_demo_never_grow_their_tables() {
        let keep = 1_000;
        let mut jobs = Jobs::keeping(Some(keep));
        let (table, finished) = (jobs.transcripts.capacity(), jobs.finished.capacity());
        // A tenth as many waiting or running as kept, each finished job
        // replaced by a new one, ten times over.
        let job = |n: usize| Job::queued(format!("job-{n}"), String::new(), None, None);
        let in_flight = keep / 10;
        for n in 0..11 * keep {
            jobs.transcripts.insert(format!("job-{n}"), job(n));
            if n >= in_flight {
                jobs.finished(&format!("job-{}", n - in_flight), Some(keep));
            }
        }
        assert_eq!(jobs.transcripts.len(), keep + in_flight);
        // A table's capacity dips while removed keys hold slots and comes
        // back when it rehashes in place; it only passes the first when
        // the table grew.
        assert!(jobs.transcripts.capacity() <= table, "the table grew");
        assert_eq!(jobs.finished.capacity(), finished);
    }

    #[test]
    fn negative_balance_limits_the_account_to_one_job() {
        let account = Account {
            balance: 3.0,
            concurrency: 7,
        };
        assert_eq!(account.effective_concurrency(), 7);
        let broke = Account {
            balance: -0.01,
            ..account
        };
        assert_eq!(broke.effective_concurrency(), 1);
        let zero = Account {
            balance: 0.0,
            ..account
        };
        assert_eq!(zero.effective_concurrency(), 7);
    }
}
