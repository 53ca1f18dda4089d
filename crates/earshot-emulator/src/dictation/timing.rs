//! How long the emulated server works over a dictation or sync request
//! ([`DictationTiming`]), and the emulated transcription that spends that
//! time while the audio arrives ([`Transcriber`]).

use std::time::Duration;

use crate::clock::TimeScale;

/// Emulated transcription works this many times faster than real time
/// unless configured ([`DictationTiming`]).
pub const DEFAULT_TRANSCRIBE_SPEED_UP: u32 = 100;
/// Emulated work left once the last audio byte is in, by default.
pub const DEFAULT_FINALIZE: Duration = Duration::from_millis(50);
/// Emulated rewrite time by default (well inside the 5 s deadline).
pub const DEFAULT_REWRITE_TIME: Duration = Duration::from_millis(100);

/// How long the emulated server takes over a dictation or sync request
/// (`earshot emulator --dictation-speed-up N --dictation-finalize-ms MS
/// --dictation-rewrite-ms MS`), before the time scale: transcription at
/// `speed_up` × real time while the audio arrives, `finalize` once it is
/// all in, then `rewrite`. What streaming saves is the transcription that
/// overlaps the upload, so benchmarks report it against these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DictationTiming {
    /// Transcription speed, × real time (at least 1).
    pub speed_up: u32,
    pub finalize: Duration,
    pub rewrite: Duration,
}

impl Default for DictationTiming {
    fn default() -> Self {
        DictationTiming {
            speed_up: DEFAULT_TRANSCRIBE_SPEED_UP,
            finalize: DEFAULT_FINALIZE,
            rewrite: DEFAULT_REWRITE_TIME,
        }
    }
}

impl DictationTiming {
    /// The transcription work for `audio` (before the time scale).
    pub(super) fn transcription(&self, audio: Duration) -> Duration {
        audio / self.speed_up.max(1)
    }
}

/// Emulated transcription: work of 1/[`DictationTiming::speed_up`] of the
/// audio's length (× time scale), done as the audio arrives, plus
/// [`DictationTiming::finalize`] once it is all in.
pub(super) struct Transcriber {
    scale: TimeScale,
    timing: DictationTiming,
    busy_until: tokio::time::Instant,
    pub(super) work: Duration,
}

impl Transcriber {
    pub(super) fn new(scale: TimeScale, timing: DictationTiming) -> Self {
        Transcriber {
            scale,
            timing,
            busy_until: tokio::time::Instant::now(),
            work: Duration::ZERO,
        }
    }

    pub(super) fn feed(&mut self, audio: Duration) {
        let cost = self.scale.scale(self.timing.transcription(audio));
        self.busy_until = self.busy_until.max(tokio::time::Instant::now()) + cost;
        self.work += cost;
    }

    /// Waits for the work still queued; how long that was.
    pub(super) async fn finish(&mut self) -> Duration {
        let cost = self.scale.scale(self.timing.finalize);
        let start = tokio::time::Instant::now();
        self.busy_until = self.busy_until.max(start) + cost;
        self.work += cost;
        tokio::time::sleep_until(self.busy_until).await;
        start.elapsed()
    }
}
