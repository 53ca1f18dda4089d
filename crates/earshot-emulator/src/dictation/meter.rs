//! Audio metering: what the `audio` part holds, learnt as it arrives
//! ([`Meter`]): its duration (WAV header, PCM byte count, or an estimate
//! for compressed audio), the 120 s limit, and the fixture's `ICMT` text.

use std::time::Duration;

use super::{Refuse, parse_error, too_long};
use crate::problem::Problem;
use earshot_protocol::types::dictation::{AudioFormat, DictationConfig, MAX_AUDIO};
use earshot_protocol::wav::{self, DataChunk, WavInfo};

/// A WAV `data` chunk must start within this many bytes.
const WAV_HEADER_MAX: usize = 1024 * 1024;
/// Bytes kept after the `data` chunk, to find a trailing `LIST/INFO`.
const TRAILER_MAX: usize = 64 * 1024;
/// Compressed audio's duration is estimated at 128 kbit/s.
const COMPRESSED_BYTES_PER_SECOND: f64 = 16_000.0;

/// What the audio part holds, learnt as it arrives.
pub(super) enum Meter {
    Pcm {
        bytes_per_second: u64,
        bytes: u64,
    },
    Wav(Box<WavMeter>),
    /// The buffered endpoint's compressed formats: length estimated.
    Compressed {
        bytes: u64,
    },
}

#[derive(Default)]
pub(super) struct WavMeter {
    /// Every byte before the `data` chunk's header (and, until it is
    /// found, what has arrived so far).
    header: Vec<u8>,
    /// Set once the `data` chunk's header has arrived.
    info: Option<WavInfo>,
    /// The declared `data` size, unless it is a streaming placeholder.
    declared: Option<u64>,
    data: u64,
    /// Bytes after the declared `data` (for a trailing `LIST/INFO`).
    trailer: Vec<u8>,
}

fn not_wav(why: &str) -> Problem {
    Problem::bad_request(format!(
        "`audio`: is not a WAV file this service reads ({why}); raw samples go as audio/pcm"
    ))
}

impl Meter {
    pub(super) fn new(format: AudioFormat, config: &DictationConfig) -> Meter {
        match format {
            AudioFormat::Wav => Meter::Wav(Box::default()),
            AudioFormat::Pcm => Meter::Pcm {
                bytes_per_second: u64::from(config.sample_rate.unwrap_or(1))
                    * u64::from(config.channels.unwrap_or(1))
                    * 2,
                bytes: 0,
            },
        }
    }

    /// Takes the next bytes; the audio they add, or why the audio is
    /// refused (not a WAV, over 120 s).
    pub(super) fn feed(&mut self, chunk: &[u8]) -> Result<Duration, Problem> {
        let before = self.duration();
        match self {
            Meter::Pcm { bytes, .. } | Meter::Compressed { bytes } => *bytes += chunk.len() as u64,
            Meter::Wav(meter) => meter.feed(chunk)?,
        }
        let after = self.duration();
        if after > MAX_AUDIO {
            return Err(too_long(after));
        }
        Ok(after.saturating_sub(before))
    }

    fn duration(&self) -> Duration {
        match self {
            Meter::Pcm {
                bytes_per_second,
                bytes,
            } => Duration::from_secs_f64(*bytes as f64 / (*bytes_per_second).max(1) as f64),
            Meter::Compressed { bytes } => {
                Duration::from_secs_f64(*bytes as f64 / COMPRESSED_BYTES_PER_SECOND)
            }
            Meter::Wav(meter) => meter.duration(meter.data),
        }
    }

    /// The audio's duration and `ICMT` text, once every byte is in.
    pub(super) fn finish(self, received: u64) -> Result<(Duration, Option<String>), Refuse> {
        if received == 0 {
            return Err(parse_error(
                "the `audio` part is empty; send the audio after `config`",
            ));
        }
        let duration = self.duration();
        match self {
            Meter::Wav(meter) => {
                let Some(info) = &meter.info else {
                    return Err(not_wav("the audio ends before its `data` chunk").into());
                };
                if meter.data == 0 {
                    return Err(parse_error(
                        "the `audio` part holds no samples (empty `data` chunk)",
                    ));
                }
                let comment = info.comment.clone().or_else(|| meter.trailing_comment());
                Ok((duration, comment))
            }
            _ => Ok((duration, None)),
        }
    }
}

impl WavMeter {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), Problem> {
        if self.info.is_some() {
            self.data_bytes(chunk);
            return Ok(());
        }
        self.header.extend_from_slice(chunk);
        let DataChunk::At {
            header_end,
            declared,
        } = wav::locate_data(&self.header).map_err(|_| not_wav("no RIFF/WAVE header"))?
        else {
            if self.header.len() > WAV_HEADER_MAX {
                return Err(not_wav("no `data` chunk in the first 1 MB"));
            }
            return Ok(());
        };
        // Read the format (and a LIST before the data) from the header
        // alone, with a zero-length `data` chunk closing it.
        let info = wav::parse_head(&self.header[..header_end - 8])
            .map_err(|error| not_wav(&error.to_string()))?;
        self.declared = wav::declared_data_len(declared);
        let rest = self.header.split_off(header_end);
        self.header.truncate(header_end - 8);
        self.info = Some(info);
        if let Some(declared) = self.declared {
            let duration = self.duration(declared);
            if duration > MAX_AUDIO {
                return Err(Problem::bad_request(format!(
                    "`audio`: the WAV header declares {:.1} s; dictation takes at most {} s",
                    duration.as_secs_f64(),
                    MAX_AUDIO.as_secs()
                )));
            }
        }
        self.data_bytes(&rest);
        Ok(())
    }

    fn data_bytes(&mut self, bytes: &[u8]) {
        let take = match self.declared {
            Some(declared) => (declared.saturating_sub(self.data)).min(bytes.len() as u64) as usize,
            None => bytes.len(),
        };
        self.data += take as u64;
        let rest = &bytes[take..];
        let room = TRAILER_MAX.saturating_sub(self.trailer.len());
        self.trailer
            .extend_from_slice(&rest[..rest.len().min(room)]);
    }

    fn duration(&self, data: u64) -> Duration {
        match &self.info {
            Some(info) => WavInfo {
                data_len: data,
                ..info.clone()
            }
            .duration(),
            None => Duration::ZERO,
        }
    }

    /// An `ICMT` in chunks after the `data` chunk.
    fn trailing_comment(&self) -> Option<String> {
        let declared = self.declared?;
        let skip = usize::from(declared % 2 == 1).min(self.trailer.len());
        let mut probe = self.header.clone();
        probe.extend_from_slice(b"data\0\0\0\0");
        probe.extend_from_slice(&self.trailer[skip..]);
        wav::parse(&probe).ok()?.comment
    }
}
