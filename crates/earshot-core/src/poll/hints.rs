//! What a front end knows about a job before and while it is watched, and
//! how that becomes a [`JobHint`].
//!
//! Three sources, none costing a request: the audio duration of a file
//! earshot uploads (its WAV header), the time of a submission earshot made
//! (a wall-clock [`Instant`], turned into the scheduler's [`Tick`] by the
//! watcher), and the `audio_duration` a transcript record carries (read on
//! every poll answer, so the duration model learns from every job the
//! account finishes, not only the ones earshot submitted). What is learned
//! lives in the watcher's scheduler for the run (memory only).

use std::path::Path;
use std::time::{Duration, Instant};

use super::Tick;
use super::schedule::JobHint;
use crate::api::types::prerecorded::Transcript;

/// Longest audio duration taken from a record (a day); anything longer or
/// not a positive number is ignored.
const MAX_AUDIO: Duration = Duration::from_secs(86_400);

/// A front end's knowledge of a job, in wall-clock time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Known {
    /// When earshot submitted it.
    pub submitted: Option<Instant>,
    /// The uploaded audio's duration.
    pub audio_duration: Option<Duration>,
}

impl Known {
    /// A job earshot has just submitted from `file` (the duration is left
    /// out when the file is not a WAV earshot can read).
    pub async fn submitted_from_file(path: &Path, submitted: Instant) -> Known {
        Known {
            submitted: Some(submitted),
            audio_duration: audio_of_file(path).await,
        }
    }

    /// The scheduler's hint, with times relative to `epoch` (a submission
    /// before the epoch counts as at the epoch).
    pub fn hint(&self, epoch: Instant) -> JobHint {
        JobHint {
            submitted_at: self
                .submitted
                .map(|at| -> Tick { at.saturating_duration_since(epoch) }),
            audio_duration: self.audio_duration.filter(|audio| !audio.is_zero()),
        }
    }
}

/// The duration of a WAV file from its header, if it is one.
pub async fn audio_of_file(path: &Path) -> Option<Duration> {
    crate::api::dictation::wav_file_duration(path).await.ok()
}

/// The `audio_duration` (seconds) a transcript record carries, if any.
pub fn audio_of_record(record: &Transcript) -> Option<Duration> {
    let seconds = record.extra.get("audio_duration")?.as_f64()?;
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|audio| !audio.is_zero() && *audio <= MAX_AUDIO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::prerecorded::TranscriptStatus;
    use serde_json::json;

    fn record(audio: serde_json::Value) -> Transcript {
        let mut record = Transcript {
            id: "t".into(),
            status: TranscriptStatus::Completed,
            text: None,
            error: None,
            webhook_status_code: None,
            extra: serde_json::Map::new(),
        };
        record.extra.insert("audio_duration".into(), audio);
        record
    }

    #[test]
    fn a_record_gives_its_audio_duration_when_it_is_a_sane_number() {
        assert_eq!(
            audio_of_record(&record(json!(121))),
            Some(Duration::from_secs(121))
        );
        assert_eq!(
            audio_of_record(&record(json!(2.5))),
            Some(Duration::from_millis(2500))
        );
        for bad in [json!(null), json!(0), json!(-3), json!("12"), json!(1e12)] {
            assert_eq!(audio_of_record(&record(bad.clone())), None, "{bad}");
        }
    }

    #[test]
    fn a_submission_time_is_relative_to_the_watchers_epoch() {
        let epoch = Instant::now();
        let later = epoch + Duration::from_secs(3);
        let known = Known {
            submitted: Some(later),
            audio_duration: Some(Duration::from_secs(9)),
        };
        assert_eq!(
            known.hint(epoch),
            JobHint {
                submitted_at: Some(Duration::from_secs(3)),
                audio_duration: Some(Duration::from_secs(9)),
            }
        );
        let before = Known {
            submitted: Some(epoch),
            audio_duration: Some(Duration::ZERO),
        };
        assert_eq!(
            before.hint(later),
            JobHint {
                submitted_at: Some(Duration::ZERO),
                audio_duration: None,
            }
        );
    }
}
