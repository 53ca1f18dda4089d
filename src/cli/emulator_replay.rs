//! `earshot emulator --replay FILE`: the platform's deliveries of a
//! capsule (`earshot capsule export`) re-enacted against a local receiver
//! (`--deliver-to URL`, or each subscription's recorded URL on this
//! machine with `--as-recorded`), in the recorded order and timing divided
//! by `--speed`, signed with the webhook secret it prints (or the one
//! given). It writes the results next to the capsule for `earshot capsule
//! compare`, and exits 0 once every delivery ended (1: the results could
//! not be written, 2: bad input; on SIGINT, SIGTERM or SIGHUP it keeps
//! what ended and exits 128 + the signal).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::events_resend::app_url;
use super::output::{emit, plain};
use super::secret_arg;
use earshot_core::capsule::format::{
    self, RESULTS_FORMAT, ReplayHeader, ReplayedDelivery, Results, VERSION,
};
use earshot_core::capsule::replay::{self, Target};
use earshot_core::capsule::results_path;
use earshot_core::redact::SecretString;

#[derive(Args, Debug, Default)]
pub(crate) struct ReplayArgs {
    /// Re-enact the deliveries of this capsule (`earshot capsule export`)
    /// instead of serving the API, then exit.
    #[arg(long = "replay", value_name = "FILE", conflicts_with = "traffic")]
    pub(crate) file: Option<PathBuf>,
    /// With --replay: how many times faster than recorded (0.5: slower).
    #[arg(long, value_name = "N", requires = "file", value_parser = speed)]
    pub(crate) speed: Option<f64>,
    /// With --replay: every event to this URL (your receiver).
    #[arg(
        long,
        value_name = "URL",
        requires = "file",
        conflicts_with = "as_recorded"
    )]
    pub(crate) deliver_to: Option<String>,
    /// With --replay: each subscription's events to its recorded URL (only
    /// when that is on this machine).
    #[arg(long, requires = "file")]
    pub(crate) as_recorded: bool,
    /// With --replay: where the results go [default: FILE.replay.jsonl].
    #[arg(long, value_name = "FILE", requires = "file")]
    pub(crate) results: Option<PathBuf>,
    /// With --replay: file holding the secret your receiver checks (or set
    /// EARSHOT_WEBHOOK_SECRET); else a test secret is made and printed.
    #[arg(long, value_name = "FILE", requires = "file")]
    pub(crate) secret_file: Option<PathBuf>,
}

/// `--speed`: a positive factor, at most 1000.
fn speed(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 && value <= 1000.0 => Ok(value),
        _ => Err(format!(
            "{text:?} is not a speed: give a number above 0, at most 1000"
        )),
    }
}

pub(crate) async fn run(args: &ReplayArgs, file: &std::path::Path) -> color_eyre::Result<ExitCode> {
    let bad = |message: String| {
        eprintln!("error: {}", plain(&message));
        Ok(ExitCode::from(2))
    };
    let target = match (&args.deliver_to, args.as_recorded) {
        (Some(url), _) => match app_url("--deliver-to", url) {
            Ok(url) => Target::To(url),
            Err(message) => return bad(message),
        },
        (None, true) => Target::AsRecorded,
        (None, false) => {
            return bad("--replay needs --deliver-to URL (your receiver) or --as-recorded".into());
        }
    };
    let (capsule, capsule_sha256) = match format::read(file).and_then(|capsule| {
        let digest = format::digest(file)?;
        Ok((capsule, digest))
    }) {
        Ok(read) => read,
        Err(error) => return bad(error.to_string()),
    };
    let planned = match replay::plan(&capsule, &target) {
        Ok(planned) => planned,
        Err(error) => return bad(error.to_string()),
    };
    let secret = match secret_arg::resolve(
        None,
        args.secret_file.as_deref(),
        secret_arg::WEBHOOK_SECRET_ENV,
    ) {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            let made = SecretString::new(format!("whsec_replay_{}", uuid::Uuid::new_v4().simple()));
            // A throwaway test secret, printed as the emulator's API key is.
            println!("webhook secret: {}", made.expose());
            made
        }
        Err(error) => return bad(error.to_string()),
    };
    let speed = args.speed.unwrap_or(1.0);
    let results_file = args.results.clone().unwrap_or_else(|| results_path(file));
    eprintln!(
        "replaying {} delivery(ies) of {} event(s) to {} at speed {speed}",
        planned.len(),
        capsule.events.len(),
        plain(&target.shown())
    );
    let count = planned.len();
    // Installed before the first send: a signal stops the replay and
    // keeps what ended.
    let stop = earshot_core::shutdown::signals()?;
    let mut ended: Vec<(usize, ReplayedDelivery)> = Vec::with_capacity(count);
    let replay = replay::run(planned, speed, &secret, |index, done| {
        let _ = emit(&format!("{}\n", outcome_line(&done)));
        ended.push((index, done));
    });
    let stopped = tokio::select! {
        finished = replay => {
            finished?;
            None
        }
        signal = stop => Some(signal),
    };
    ended.sort_by_key(|(index, _)| *index);
    let deliveries: Vec<ReplayedDelivery> = ended.into_iter().map(|(_, done)| done).collect();
    let delivered = deliveries.iter().filter(|d| d.delivered()).count();
    let lateness = replay::worst_lateness_ms(&deliveries);
    let ended_count = deliveries.len();
    format::write_results(
        &Results {
            header: ReplayHeader {
                format: RESULTS_FORMAT.to_owned(),
                version: VERSION,
                speed,
                target: target.shown(),
                deliveries: count,
                capsule_sha256: Some(capsule_sha256),
            },
            deliveries,
        },
        &results_file,
    )?;
    if let Some(signal) = stopped {
        eprintln!(
            "earshot emulator: {} received: {ended_count} of {count} delivery(ies) ended \
             ({delivered} delivered); results in {}",
            signal.name(),
            plain(&results_file.display().to_string())
        );
        return Ok(signal.exit_code());
    }
    eprintln!(
        "replayed {count} delivery(ies): {delivered} delivered, {} missed; each attempt within \
         {} of its time; results in {}: `earshot capsule compare {}`",
        count - delivered,
        earshot_core::duration_text::of_millis(lateness as f64),
        plain(&results_file.display().to_string()),
        plain(&file.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// `evt_… call.ended sub_…: delivered after 2 attempt(s) (HTTP 200 in 3 ms)`.
fn outcome_line(done: &ReplayedDelivery) -> String {
    let last = done.attempts.last();
    let answer = match last.and_then(|attempt| attempt.error.as_deref()) {
        Some(error) => error.to_owned(),
        None => format!(
            "HTTP {} in {}",
            last.and_then(|attempt| attempt.http_status)
                .unwrap_or_default(),
            earshot_core::duration_text::of_millis(
                last.map(|attempt| attempt.latency_ms).unwrap_or_default() as f64
            )
        ),
    };
    format!(
        "{} {} {}: {} after {} attempt(s) ({answer})",
        done.event_id,
        done.event,
        done.subscription_id,
        done.state,
        done.attempts.len()
    )
}

#[cfg(test)]
mod tests {
    use super::speed;

    #[test]
    fn a_speed_is_a_positive_factor_within_reason() {
        assert_eq!(speed("10"), Ok(10.0));
        assert_eq!(speed("0.5"), Ok(0.5));
        for refused in ["0", "-1", "nan", "inf", "fast", "1001"] {
            assert!(speed(refused).is_err(), "{refused}");
        }
    }
}
