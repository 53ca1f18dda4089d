//! [`EmulatorBuilder`]: an emulator set up knob by knob, for a test that
//! embeds it. Its defaults are those of `earshot emulator` with no flags.

use std::net::SocketAddr;
use std::time::Duration;

use earshot_http::server::ServerLimits;
use earshot_protocol::redact::SecretString;

use super::{DictationTiming, Emulator, EmulatorConfig, StartError, TimeScale};

/// The longest dictation finalise or rewrite time (the flags' range).
const MAX_DICTATION_STEP: Duration = Duration::from_secs(600);

/// Builds and starts an [`Emulator`]; get one from [`Emulator::builder`].
///
/// Every knob defaults to what `earshot emulator` uses without flags:
/// listening on `127.0.0.1:0` (a free port), a generated API key
/// (`emu_` and 32 hex digits), real time, subscription URLs that must be
/// public `https://`, 5 pre-recorded jobs at once, 20,000 pre-recorded
/// requests per five minutes, 60 GETs per minute of one transcript, and
/// every session, call and job remembered until the emulator stops.
///
/// A value out of range (a time scale of 0, a limit of 0) is reported by
/// [`start`](EmulatorBuilder::start) as [`StartError::InvalidSetting`].
#[derive(Clone, Debug)]
#[must_use = "an emulator builder does nothing until `.start().await`"]
pub struct EmulatorBuilder {
    listen: SocketAddr,
    config: EmulatorConfig,
    /// The first setting that was out of range, with its rule.
    invalid: Option<(&'static str, String)>,
}

impl Default for EmulatorBuilder {
    fn default() -> Self {
        let api_key = SecretString::new(format!("emu_{}", uuid::Uuid::new_v4().simple()));
        EmulatorBuilder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            config: EmulatorConfig::new(api_key),
            invalid: None,
        }
    }
}

impl EmulatorBuilder {
    /// Where to listen (`--listen`); port 0 picks a free one. Default
    /// `127.0.0.1:0`.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// The one API key the emulated account accepts (`--api-key`).
    /// Default: generated. Read it back with [`Emulator::api_key`].
    pub fn api_key(mut self, key: impl Into<SecretString>) -> Self {
        self.config.api_key = key.into();
        self
    }

    /// Accept subscription and webhook URLs on loopback or private
    /// addresses, over plain `http://` (`--allow-private-urls`): what a
    /// test's receivers on `127.0.0.1` need. Default `false`.
    pub fn allow_private_urls(mut self, allow: bool) -> Self {
        self.config.allow_private_urls = allow;
        self
    }

    /// Multiplies every platform duration (delivery deadlines, retry
    /// intervals, processing, artifact delays) by `factor`
    /// (`--time-scale`): `0.01` turns the 15 s delivery deadline into
    /// 150 ms. Above 0 and at most 1000; default 1 (real time).
    pub fn time_scale(mut self, factor: f64) -> Self {
        match TimeScale::new(factor) {
            Some(scale) => self.config.time_scale = scale,
            None => self.refuse("time_scale", format!("is {factor}; give a number above 0 and at most 1000 (0.01 makes a 15 s deadline 150 ms)")),
        }
        self
    }

    /// A clock the test moves with [`Emulator::advance`]: delivery
    /// retries, pre-recorded processing and webhook retries, the 90 s
    /// before a session's artifacts are listed and the hour a presigned
    /// link works all wait for it, not for real time. What is I/O (a
    /// receiver's 15 s deadline) and dictation still pass in real time ×
    /// [`time_scale`](EmulatorBuilder::time_scale). Default: off.
    pub fn manual_clock(mut self) -> Self {
        self.config.manual_clock = true;
        self
    }

    /// Pre-recorded jobs processing at once; more wait, first in first
    /// out (`--concurrency`). At least 1; default 5.
    pub fn concurrency(mut self, jobs: u32) -> Self {
        self.config.concurrency = self.at_least_one("concurrency", jobs);
        self
    }

    /// Pre-recorded API requests per five minutes before 403
    /// (`--http-limit`). At least 1; default 20,000.
    pub fn http_limit(mut self, requests: u32) -> Self {
        self.config.http_limit = self.at_least_one("http_limit", requests);
        self
    }

    /// GETs per minute of one transcript before 429 with `Retry-After`
    /// (`--poll-limit`). At least 1; default 60.
    pub fn poll_limit(mut self, requests: u32) -> Self {
        self.config.poll_limit = self.at_least_one("poll_limit", requests);
        self
    }

    /// How long emulated dictation takes (`--dictation-speed-up`,
    /// `--dictation-finalize-ms`, `--dictation-rewrite-ms`): a speed-up of
    /// at least 1, finalise and rewrite times of at most 600 s.
    pub fn dictation_timing(mut self, timing: DictationTiming) -> Self {
        if timing.speed_up == 0 {
            self.refuse("dictation_timing.speed_up", "must be at least 1".into());
        } else if timing.finalize > MAX_DICTATION_STEP || timing.rewrite > MAX_DICTATION_STEP {
            self.refuse(
                "dictation_timing",
                "finalize and rewrite must be at most 600 s".into(),
            );
        } else {
            self.config.dictation_timing = timing;
        }
        self
    }

    /// The largest dictation or sync request body, in bytes (413 past
    /// it). Default 25 MiB.
    pub fn dictation_audio_cap(mut self, bytes: u64) -> Self {
        self.config.dictation_audio_cap = bytes;
        self
    }

    /// Connections, header, idle and body timeouts of the listener.
    /// Default [`ServerLimits::default`].
    pub fn server_limits(mut self, limits: ServerLimits) -> Self {
        self.config.server_limits = limits;
        self
    }

    /// Remember only the newest `count` sessions and calls (with their
    /// deliveries and artifacts). Default: all.
    pub fn keep_conversations(mut self, count: usize) -> Self {
        self.config.keep_conversations = Some(count);
        self
    }

    /// Remember only the newest `count` finished pre-recorded jobs (older
    /// ones answer 404). Default: all.
    pub fn keep_jobs(mut self, count: usize) -> Self {
        self.config.keep_jobs = Some(count);
        self
    }

    /// The size of every recording artifact, in bytes (a WAV of silence
    /// generated as it is served). Default: one second of 8 kHz audio.
    pub fn recording_bytes(mut self, bytes: u64) -> Self {
        self.config.recording_bytes = Some(bytes);
        self
    }

    /// How many requests the journal keeps ([`Emulator::journal`]);
    /// older ones are let go, oldest first (expectations still count
    /// them). Default [`JOURNAL_KEEP`](crate::JOURNAL_KEEP); 0 keeps none.
    pub fn journal_keep(mut self, requests: usize) -> Self {
        self.config.journal_keep = requests;
        self
    }

    /// The settings [`start`](EmulatorBuilder::start) will use.
    pub fn config(&self) -> &EmulatorConfig {
        &self.config
    }

    /// Binds, starts serving in the background of the current tokio
    /// runtime, and returns the running emulator.
    pub async fn start(self) -> Result<Emulator, StartError> {
        if let Some((setting, rule)) = self.invalid {
            return Err(StartError::InvalidSetting { setting, rule });
        }
        Emulator::start(self.listen, self.config).await
    }

    fn at_least_one(&mut self, setting: &'static str, value: u32) -> u32 {
        if value == 0 {
            self.refuse(setting, "is 0; give at least 1".into());
        }
        value.max(1)
    }

    /// Keeps the first out-of-range setting for `start` to report.
    fn refuse(&mut self, setting: &'static str, rule: String) {
        self.invalid.get_or_insert((setting, rule));
    }
}
