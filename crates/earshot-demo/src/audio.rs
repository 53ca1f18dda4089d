//! The demo's audio: a WAV built in code, sized so a job takes about
//! [`JOB_WALL_TIME`] at the time scale, and uploaded once.

use std::time::Duration;

use super::{
    AUDIO_MAX, AUDIO_MIN, AUDIO_SENTENCE, JOB_WALL_TIME, PROCESSING_SPEED_UP, ScenarioError,
};
use earshot_core::api::Client;
use earshot_emulator::TimeScale;

/// The uploaded audio's length: long enough for jobs of about
/// [`JOB_WALL_TIME`] at this time scale, within [`AUDIO_MIN`]..[`AUDIO_MAX`].
fn audio_length(scale: TimeScale) -> Duration {
    JOB_WALL_TIME
        .mul_f64(PROCESSING_SPEED_UP / scale.factor())
        .clamp(AUDIO_MIN, AUDIO_MAX)
}

/// 8 kHz mono 16-bit PCM: a quiet 440 Hz tone of `length`, with `sentence`
/// in a `LIST/INFO/ICMT` chunk (the emulator's "transcript" of it).
fn demo_wav(length: Duration, sentence: &str) -> Vec<u8> {
    const RATE: u32 = 8000;
    let frames = (f64::from(RATE) * length.as_secs_f64()) as u32;
    let mut data = Vec::with_capacity(frames as usize * 2);
    for n in 0..frames {
        let phase = 2.0 * std::f64::consts::PI * 440.0 * f64::from(n) / f64::from(RATE);
        let sample = (phase.sin() * 2000.0) as i16;
        data.extend_from_slice(&sample.to_le_bytes());
    }
    earshot_protocol::wav::encode_pcm16(RATE, 1, &data, Some(sentence))
}

/// Uploads the demo WAV once (through a temporary file, as `upload_file`
/// streams from disk); its `upload_url`.
pub(super) async fn upload_audio(api: &Client, scale: TimeScale) -> Result<String, ScenarioError> {
    let setup = |error: std::io::Error| ScenarioError::Setup(format!("demo audio file: {error}"));
    let file = tempfile::NamedTempFile::new().map_err(setup)?;
    tokio::fs::write(file.path(), demo_wav(audio_length(scale), AUDIO_SENTENCE))
        .await
        .map_err(setup)?;
    let upload = api
        .upload_file(file.path(), |_| {})
        .await
        .map_err(ScenarioError::Upload)?;
    Ok(upload.upload_url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_wav_parses_with_its_sentence_and_length() {
        let wav = demo_wav(Duration::from_secs(3), AUDIO_SENTENCE);
        let info = earshot_protocol::wav::parse(&wav).unwrap();
        assert_eq!(info.sample_rate, 8000);
        assert_eq!(info.channels, 1);
        assert_eq!(info.bits_per_sample, 16);
        assert!(!info.truncated);
        assert_eq!(info.duration(), Duration::from_secs(3));
        assert_eq!(info.comment.as_deref(), Some(AUDIO_SENTENCE));
    }

    #[test]
    fn audio_is_sized_for_two_second_jobs_within_bounds() {
        let at = |factor| audio_length(TimeScale::new(factor).unwrap());
        assert_eq!(at(0.1), Duration::from_secs(80));
        assert_eq!(at(1.0), Duration::from_secs(8));
        assert_eq!(at(0.001), AUDIO_MAX);
        assert_eq!(at(100.0), AUDIO_MIN);
    }
}
