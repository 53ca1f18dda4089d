//! The job queue: starts queued jobs FIFO within the account's effective
//! concurrency, fetches and inspects the audio, and finishes each job.

use std::time::Duration;

use axum::body::Bytes;
use chrono::Utc;
use futures_util::StreamExt;
use url::Url;

use super::records::Jobs;
use super::webhook::deliver_webhook;
use super::{AUDIO_CAP, COMPRESSED_BYTES_PER_SECOND, FETCH_TIMEOUT, FIXED_TEXT, SPEED_UP};
use crate::SharedState;
use crate::stats::DeliveryInProgress;
use earshot_protocol::types::prerecorded::TranscriptStatus;
use earshot_protocol::wav;

/// Starts queued jobs, oldest first, while the account has free slots.
/// Called with the jobs locked whenever a slot may have freed up.
pub(super) fn pump(state: &SharedState, jobs: &mut Jobs) {
    let limit = state.prerecorded.account().effective_concurrency();
    while jobs.processing < limit {
        let Some(id) = jobs.queue.pop_front() else {
            return;
        };
        let Some(job) = jobs.transcripts.get_mut(&id) else {
            continue;
        };
        job.status = TranscriptStatus::Processing;
        job.started_at = Some(Utc::now());
        jobs.processing += 1;
        tokio::spawn(run_job(state.clone(), id));
    }
}

/// What the emulator learnt from an audio file.
#[derive(Debug, PartialEq)]
struct Audio {
    duration: Duration,
    /// The transcript carried in a WAV `ICMT` chunk.
    comment: Option<String>,
}

/// Fetch, "transcribe", finish; then the webhook, if any.
async fn run_job(state: SharedState, id: String) {
    let audio_url = match state.prerecorded.jobs().transcripts.get(&id) {
        Some(job) => job.audio_url.clone(),
        None => return,
    };
    let outcome = match fetch_audio(&state, &audio_url).await {
        Ok(bytes) => inspect(&bytes),
        Err(message) => Err(message),
    };
    let outcome = match outcome {
        Ok(audio) => {
            if let Some(job) = state.prerecorded.jobs().transcripts.get_mut(&id) {
                job.audio_duration = Some(audio.duration);
            }
            state.clock.sleep(audio.duration / SPEED_UP).await;
            Ok(audio.comment.unwrap_or_else(|| FIXED_TEXT.to_owned()))
        }
        Err(message) => Err(message),
    };
    // The webhook counts as a delivery in progress from the moment the job
    // shows finished (under the same lock), so `/_emulator/stats` never
    // reads idle between the two.
    let (webhook, _in_progress) = {
        let mut jobs = state.prerecorded.jobs();
        jobs.processing = jobs.processing.saturating_sub(1);
        let webhook = jobs.transcripts.get_mut(&id).and_then(|job| {
            match outcome {
                Ok(text) => {
                    job.status = TranscriptStatus::Completed;
                    job.text = Some(text);
                }
                Err(message) => {
                    job.status = TranscriptStatus::Error;
                    job.error = Some(message);
                }
            }
            job.finished_at = Some(Utc::now());
            let url = job.webhook_url.clone()?;
            Some((url, job.webhook_auth.clone(), job.status.clone()))
        });
        jobs.finished(&id, state.config.keep_jobs);
        pump(&state, &mut jobs);
        let in_progress = webhook.as_ref().map(|_| DeliveryInProgress::start(&state));
        (webhook, in_progress)
    };
    // One job fewer processing: `settled` looks again.
    state.activity.changed();
    if let Some((url, auth, status)) = webhook {
        deliver_webhook(&state, &id, status, &url, auth).await;
    }
}

/// The bytes at `audio_url`: the emulator's own uploads from memory, any
/// other URL by HTTP GET. The error is the message the job shows.
async fn fetch_audio(state: &SharedState, audio_url: &str) -> Result<Bytes, String> {
    let url =
        Url::parse(audio_url).map_err(|error| format!("audio_url is not a valid URL: {error}"))?;
    let own_upload = (url.origin() == state.base_url.origin())
        .then(|| url.path().strip_prefix("/_emulator/uploads/"))
        .flatten();
    if let Some(token) = own_upload {
        return state
            .prerecorded
            .jobs()
            .uploads
            .get(token)
            .cloned()
            .ok_or_else(|| {
                "could not download audio_url: HTTP 404 Not Found (no such upload)".to_owned()
            });
    }
    let download = async {
        let response = state
            .prerecorded
            .fetch
            .get(url)
            .send()
            .await
            .map_err(|error| {
                format!(
                    "could not download audio_url: {}",
                    earshot_protocol::error_text::root_cause(&error)
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "could not download audio_url: HTTP {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
            .trim_end()
            .to_owned());
        }
        let too_large = || {
            format!(
                "the audio file is larger than {} MB",
                AUDIO_CAP / (1024 * 1024)
            )
        };
        if response.content_length().is_some_and(|len| len > AUDIO_CAP) {
            return Err(too_large());
        }
        let mut audio = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|error| {
                format!(
                    "could not download audio_url: {}",
                    earshot_protocol::error_text::root_cause(&error)
                )
            })?;
            if (audio.len() + chunk.len()) as u64 > AUDIO_CAP {
                return Err(too_large());
            }
            audio.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(audio))
    };
    match tokio::time::timeout(FETCH_TIMEOUT, download).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "could not download audio_url: no answer within {} s",
            FETCH_TIMEOUT.as_secs()
        )),
    }
}

/// Compressed formats recognised by their first bytes, whose duration is
/// estimated from their size.
fn compressed_format(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [b'I', b'D', b'3', ..] => Some("MP3"),
        [0xFF, second, ..] if second & 0xE0 == 0xE0 => Some("MP3"),
        [b'O', b'g', b'g', b'S', ..] => Some("Ogg"),
        [b'f', b'L', b'a', b'C', ..] => Some("FLAC"),
        [0x1A, 0x45, 0xDF, 0xA3, ..] => Some("WebM"),
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => Some("MP4"),
        _ => None,
    }
}

/// The duration (and `ICMT` transcript) of audio bytes, or why they are not
/// audio the emulator can process.
fn inspect(bytes: &[u8]) -> Result<Audio, String> {
    match wav::parse(bytes) {
        Ok(info) if info.data_len == 0 => Err("the WAV file contains no audio samples".into()),
        Ok(info) => Ok(Audio {
            duration: info.duration(),
            comment: info.comment,
        }),
        Err(wav::WavError::NotWav) => match compressed_format(bytes) {
            Some(_) => Ok(Audio {
                duration: Duration::from_secs_f64(bytes.len() as f64 / COMPRESSED_BYTES_PER_SECOND),
                comment: None,
            }),
            None => Err(
                "audio_url does not point to an audio file (the format is not recognised)".into(),
            ),
        },
        Err(error) => Err(format!("the audio file cannot be read: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect_reads_wav_estimates_compressed_and_refuses_the_rest() {
        let wav = crate::test_wav(8000, 2.0, Some("the fixture's words"));
        assert_eq!(
            inspect(&wav),
            Ok(Audio {
                duration: Duration::from_secs(2),
                comment: Some("the fixture's words".into()),
            })
        );
        let mut mp3 = b"ID3\x04\0\0\0\0\0\0".to_vec();
        mp3.resize(32_000, 0);
        assert_eq!(
            inspect(&mp3).map(|audio| audio.duration),
            Ok(Duration::from_secs(2))
        );
        assert!(
            inspect(b"<html>not found</html>").is_err_and(|e| e.contains("not point to an audio"))
        );
        assert!(inspect(&wav[..30]).is_err_and(|e| e.contains("cannot be read")));
        let silent = crate::test_wav(8000, 0.0, None);
        assert!(inspect(&silent).is_err_and(|e| e.contains("no audio samples")));
    }
}
