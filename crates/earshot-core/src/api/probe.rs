//! Probing the speech services: one dictation call and one sync call in a
//! region, never retried, each timed from here (request sent to answer
//! read). Shared by `earshot probe` (one call after the other) and the
//! console's Probe pane ([`all_at_once`]: every call of every region
//! concurrently, each reported as it ends).

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::future::{BoxFuture, FutureExt};
use futures_util::stream::FuturesUnordered;

use super::dictation::{AudioSource, DictationError, DictationPath, DictationRequest, RetryPolicy};
use super::sync::SyncRequest;
use super::types::dictation::{Dictation, DictationConfig, SyncTranscript};
use super::{ApiError, Client, Region};

/// Every region the endpoints name, in the order probes show them.
pub const REGIONS: [Region; 3] = [Region::Global, Region::Us, Region::Eu];

/// A call's outcome and how long it took, seen from here.
#[derive(Debug)]
pub struct Timed<T> {
    pub latency: Duration,
    pub result: T,
}

impl<T> Timed<T> {
    /// The latency in milliseconds.
    pub fn latency_ms(&self) -> f64 {
        self.latency.as_secs_f64() * 1000.0
    }
}

/// What a probe sends besides the audio.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    /// The sync `X-SVC-Model` value.
    pub model: String,
    /// Dictation's `llm_instruction`; `None` for the default cleanup.
    pub instruction: Option<String>,
}

/// One call of [`all_at_once`], as it ends.
#[derive(Debug)]
pub enum Answer {
    Dictation {
        region: Region,
        timed: Timed<Result<Dictation, DictationError>>,
    },
    Sync {
        region: Region,
        timed: Timed<Result<SyncTranscript, ApiError>>,
    },
}

/// The dictation URL a probe of `region` calls.
pub fn dictation_url(client: &Client, region: Region) -> String {
    format!(
        "{}{}",
        client
            .endpoints()
            .dictation(region)
            .as_str()
            .trim_end_matches('/'),
        DictationPath::Live.path()
    )
}

/// The sync URL a probe of `region` calls.
pub fn sync_url(client: &Client, region: Region) -> String {
    format!(
        "{}/transcribe",
        client
            .endpoints()
            .sync(region)
            .as_str()
            .trim_end_matches('/')
    )
}

/// One dictation call on the live path, never retried, timed.
pub async fn dictation(
    client: &Client,
    region: Region,
    file: &Path,
    instruction: Option<&str>,
) -> Timed<Result<Dictation, DictationError>> {
    let request = DictationRequest {
        config: DictationConfig {
            llm_instruction: instruction.map(str::to_owned),
            ..DictationConfig::default()
        },
        region,
        path: DictationPath::Live,
        retry: RetryPolicy::NEVER,
        ..DictationRequest::default()
    };
    let started = Instant::now();
    let result = client.dictate(&request, AudioSource::file(file)).await;
    Timed {
        latency: started.elapsed(),
        result,
    }
}

/// One sync call, never retried, timed.
pub async fn sync(
    client: &Client,
    region: Region,
    file: &Path,
    model: &str,
) -> Timed<Result<SyncTranscript, ApiError>> {
    let request = SyncRequest {
        region,
        model: model.to_owned(),
        retry: RetryPolicy::NEVER,
    };
    let started = Instant::now();
    let result = client.transcribe_sync(&request, file).await;
    Timed {
        latency: started.elapsed(),
        result,
    }
}

/// Dictation and sync in each of `regions`, all at once; `report` hears
/// each call as it ends (so the slowest region does not hold the others).
pub async fn all_at_once(
    client: &Client,
    file: &Path,
    regions: &[Region],
    options: &ProbeOptions,
    mut report: impl FnMut(Answer),
) {
    let instruction = options.instruction.as_deref();
    let mut calls: FuturesUnordered<BoxFuture<'_, Answer>> = FuturesUnordered::new();
    for &region in regions {
        calls.push(
            async move {
                Answer::Dictation {
                    region,
                    timed: dictation(client, region, file, instruction).await,
                }
            }
            .boxed(),
        );
        calls.push(
            async move {
                Answer::Sync {
                    region,
                    timed: sync(client, region, file, &options.model).await,
                }
            }
            .boxed(),
        );
    }
    while let Some(answer) = calls.next().await {
        report(answer);
    }
}
