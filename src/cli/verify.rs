//! `earshot verify`: checks a delivery's `X-SVC-Signature` against a body and
//! one or two secrets, and explains a failure (via
//! [`earshot_core::signature::diagnose`]) as a checklist an operator can act on.
//! Exit status: 0 valid, 1 invalid, 2 bad input.
//!
//! With `--capture FILE` the header and the exact body come from a request
//! `earshot listen` captured ([`earshot_core::receiver::capture`]), checked at the
//! time it was received.
//!
//! With `--event ID --subscription SUB` (a delivery the receiver refused
//! with 401) there is no header to check: [`super::verify_receiver`] asks
//! the receiver instead.

use std::path::PathBuf;
use std::process::ExitCode;

use earshot_core::receiver::capture::{self, Numbered, Selector};
use earshot_core::redact::{SecretString, mask};
use earshot_core::signature::{
    self, Candidate, ChecklistInput, Diagnosis, Finding, InvalidReason, TriedSecret, Verdict,
};

use super::secret_arg;
use super::sign::{read_body, unix_now};

/// Labels of the secrets, in the order `--secret` is given.
const LABELS: [&str; 2] = ["current", "previous"];

/// Verify a webhook signature and say why it fails.
#[derive(clap::Args, Debug)]
pub(crate) struct VerifyArgs {
    /// The `X-SVC-Signature` value as received: `t=<unix>,v1=<hex>`.
    #[arg(
        long,
        value_name = "H",
        allow_hyphen_values = true,
        required_unless_present_any = ["capture", "event"],
        conflicts_with_all = ["capture", "event"]
    )]
    pub(crate) header: Option<String>,

    /// The raw request body as received; `-` reads standard input.
    #[arg(
        long,
        value_name = "F",
        required_unless_present_any = ["capture", "event"],
        conflicts_with_all = ["capture", "event"]
    )]
    pub(crate) body_file: Option<PathBuf>,

    /// Replay a request captured by `earshot listen --capture FILE`: its
    /// header and exact body, checked at its receive time (unless --now).
    /// Default: the last entry that carries X-SVC-Signature.
    #[arg(long, value_name = "FILE", conflicts_with = "event")]
    pub(crate) capture: Option<PathBuf>,

    /// A delivery the receiver refused with 401: the event (its id, as
    /// `earshot events` lists it). earshot has its exact bytes but not the
    /// header the platform sent, so it asks the subscription's receiver:
    /// the event signed with the secret you give, then a wrong one.
    #[arg(long, value_name = "ID", requires = "subscription")]
    pub(crate) event: Option<String>,

    /// With --event: the subscription whose receiver refused it (id or
    /// unique prefix).
    #[arg(long, value_name = "SUB", requires = "event")]
    pub(crate) subscription: Option<String>,

    /// With --event: use the store as it is, without sweeping first.
    #[arg(long, requires = "event")]
    pub(crate) no_sweep: bool,
    /// With --event: ask a receiver on a private or loopback address too
    /// (an emulator's); without it such a URL is refused and nothing sent.
    #[arg(long, requires = "event")]
    pub(crate) allow_private_urls: bool,

    #[command(flatten)]
    pub(crate) store: super::history_args::StoreArg,

    #[command(flatten)]
    pub(crate) connection: super::Connection,

    /// With --capture: the entry on line N of the file (1-based).
    #[arg(
        long,
        value_name = "N",
        requires = "capture",
        conflicts_with = "event_id"
    )]
    pub(crate) index: Option<usize>,

    /// With --capture: the last entry with this event_id.
    #[arg(long, value_name = "ID", requires = "capture")]
    pub(crate) event_id: Option<String>,

    /// The current secret; give `--secret` again for the previous one
    /// during a rotation. Never printed in full. Prefer --secret-file or
    /// EARSHOT_WEBHOOK_SECRET (and --previous-secret-file or
    /// EARSHOT_PREVIOUS_WEBHOOK_SECRET): a value given here is visible to
    /// other users in `ps`.
    #[arg(long = "secret", value_name = "S")]
    pub(crate) secrets: Vec<SecretString>,

    /// Read the current secret from FILE (trailing newline ignored).
    #[arg(long, value_name = "FILE", conflicts_with = "secrets")]
    pub(crate) secret_file: Option<PathBuf>,

    /// Read the secret before the last rotation from FILE (with --event:
    /// a second secret to ask the receiver with).
    #[arg(long, value_name = "FILE")]
    pub(crate) previous_secret_file: Option<PathBuf>,

    /// The receiver's clock, Unix seconds (default: now). Use the receive
    /// time to check an old capture.
    #[arg(
        long,
        value_name = "T",
        allow_negative_numbers = true,
        conflicts_with = "event"
    )]
    pub(crate) now: Option<i64>,

    /// Allowed difference between `t` and now, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = signature::DEFAULT_TOLERANCE_SECS)]
    pub(crate) tolerance: u64,

    /// The hex digest your receiver computed: earshot names the mistake
    /// that produces it.
    #[arg(long, value_name = "HEX", conflicts_with = "event")]
    pub(crate) receiver_digest: Option<String>,

    /// Print one JSON object instead of the checklist.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the check and prints the result; see the module doc for the exit
/// status.
pub(crate) fn run(args: VerifyArgs) -> color_eyre::Result<ExitCode> {
    let input = match Input::from_args(&args) {
        Ok(input) => input,
        Err(message) => {
            eprintln!("earshot verify: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    let candidates: Vec<Candidate> = input
        .secrets
        .iter()
        .zip(LABELS)
        .map(|(secret, label)| Candidate {
            label,
            secret: secret.expose().as_bytes(),
        })
        .collect();
    let diagnosis = signature::diagnose(
        &input.header,
        &input.body,
        &candidates,
        input.now,
        args.tolerance,
        input.receiver_digest.as_deref(),
    );
    let report = if args.json {
        json_report(&diagnosis, &args, &input)
    } else {
        text_report(&diagnosis, &args, &input)
    };
    print!("{report}");
    Ok(if diagnosis.is_valid() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The checked inputs; every failure here is exit 2.
struct Input {
    header: String,
    body: Vec<u8>,
    now: i64,
    receiver_digest: Option<String>,
    /// The current secret, then the previous one when given.
    secrets: Vec<SecretString>,
    /// The capture entry replayed, when `--capture` was given.
    captured: Option<Captured>,
}

/// Where a replayed request came from.
struct Captured {
    file: PathBuf,
    numbered: Numbered,
}

impl Input {
    fn from_args(args: &VerifyArgs) -> Result<Self, String> {
        let secrets = secrets(args)?;
        let receiver_digest = match &args.receiver_digest {
            None => None,
            Some(raw) => {
                let text = raw.trim();
                let text = text.strip_prefix("v1=").unwrap_or(text);
                if signature::parse_digest_hex(text).is_none() {
                    return Err(format!(
                        "--receiver-digest must be the 64 hex characters your receiver computed; \
                         got {} characters{}",
                        text.chars().count(),
                        if text.chars().all(|c| c.is_ascii_hexdigit()) {
                            ""
                        } else {
                            ", not all hex digits"
                        }
                    ));
                }
                Some(text.to_owned())
            }
        };
        if let Some(file) = &args.capture {
            return Self::from_capture(args, file, receiver_digest, secrets);
        }
        let (Some(header), Some(body_file)) = (&args.header, &args.body_file) else {
            return Err("give --header and --body-file, or --capture FILE".to_owned());
        };
        let body = read_body(body_file)?;
        Ok(Self {
            header: header.clone(),
            body,
            now: args.now.unwrap_or_else(unix_now),
            receiver_digest,
            secrets,
            captured: None,
        })
    }

    fn from_capture(
        args: &VerifyArgs,
        file: &std::path::Path,
        receiver_digest: Option<String>,
        secrets: Vec<SecretString>,
    ) -> Result<Self, String> {
        let selector = match (args.index, &args.event_id) {
            (Some(line), _) => Selector::Line(line),
            (None, Some(id)) => Selector::EventId(id.clone()),
            (None, None) => Selector::LastSigned,
        };
        let numbered = capture::find(file, &selector)?;
        let line = numbered.line;
        let entry = &numbered.entry;
        let Some(header) = entry.header(signature::HEADER_NAME) else {
            return Err(format!(
                "the entry on line {line} has no {} header ({} {} from {}, a {} request)",
                signature::HEADER_NAME,
                entry.method,
                entry.path,
                entry.source,
                entry.kind.code()
            ));
        };
        let body = entry
            .body_bytes()
            .map_err(|error| format!("the body_base64 of line {line} is not valid: {error}"))?;
        Ok(Self {
            header: header.to_owned(),
            body,
            now: args.now.unwrap_or(entry.received_unix),
            receiver_digest,
            secrets,
            captured: Some(Captured {
                file: file.to_owned(),
                numbered,
            }),
        })
    }
}

/// The secrets to try: the current one (first `--secret`, else
/// `--secret-file`, else the environment), then the previous one (second
/// `--secret`, else `--previous-secret-file`, else the environment).
fn secrets(args: &VerifyArgs) -> Result<Vec<SecretString>, String> {
    if args.secrets.len() > LABELS.len() {
        return Err(format!(
            "give at most two --secret values (the current one, then the previous one); got {}",
            args.secrets.len()
        ));
    }
    if args.secrets.len() == 2 && args.previous_secret_file.is_some() {
        return Err(
            "give the previous secret once: a second --secret or --previous-secret-file".to_owned(),
        );
    }
    let current = secret_arg::resolve(
        args.secrets.first(),
        args.secret_file.as_deref(),
        secret_arg::WEBHOOK_SECRET_ENV,
    )
    .map_err(|error| error.to_string())?
    .ok_or_else(|| secret_arg::missing("--secret", secret_arg::WEBHOOK_SECRET_ENV))?;
    let previous = secret_arg::resolve(
        args.secrets.get(1),
        args.previous_secret_file.as_deref(),
        secret_arg::PREVIOUS_WEBHOOK_SECRET_ENV,
    )
    .map_err(|error| error.to_string())?;
    Ok(std::iter::once(current).chain(previous).collect())
}

/// One line naming the replayed request.
fn capture_line(captured: &Captured) -> String {
    let entry = &captured.numbered.entry;
    format!(
        "capture {} line {}: {} {} from {}, received {} (the listener answered {}: {})\n",
        captured.file.display(),
        captured.numbered.line,
        entry.method,
        entry.path,
        entry.source,
        entry.received_at,
        entry.status,
        entry.verdict.code()
    )
}

/// The secret behind a label, masked.
fn masked_secret(input: &Input, label: &str) -> String {
    LABELS
        .iter()
        .position(|l| *l == label)
        .and_then(|i| input.secrets.get(i))
        .map(|secret| mask(secret.expose()))
        .unwrap_or_default()
}

fn text_report(diagnosis: &Diagnosis, args: &VerifyArgs, input: &Input) -> String {
    let mut out = String::new();
    if let Some(captured) = &input.captured {
        out.push_str(&capture_line(captured));
        out.push('\n');
    }
    match &diagnosis.verdict {
        Verdict::Valid { matched, .. } => out.push_str(&format!(
            "✓ signature valid (the {matched} secret, {})\n",
            masked_secret(input, matched)
        )),
        Verdict::Invalid(reason) => out.push_str(&format!("✗ signature invalid: {reason}\n")),
    }
    out.push('\n');
    for line in checklist(diagnosis, args, input) {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    if !diagnosis.findings.is_empty() {
        out.push_str("\nFindings (most likely cause first):\n");
        for finding in &diagnosis.findings {
            out.push_str(&format!("  {} {finding}\n", finding.severity().mark()));
        }
    }
    if let Some(step) = diagnosis.problems().find_map(Finding::next_step) {
        out.push_str(&format!("\nNext: {step}\n"));
    }
    out
}

/// Three lines, one per check: header, clock, digest
/// ([`signature::checklist`], the wording the Signatures pane shows too).
fn checklist(diagnosis: &Diagnosis, args: &VerifyArgs, input: &Input) -> Vec<String> {
    let tried: Vec<TriedSecret<'_>> = LABELS
        .iter()
        .zip(&input.secrets)
        .map(|(label, secret)| TriedSecret {
            label,
            masked: mask(secret.expose()),
        })
        .collect();
    let checklist_input = ChecklistInput {
        header: &input.header,
        body_len: input.body.len(),
        tried: &tried,
        now: input.now,
        tolerance_secs: args.tolerance,
    };
    signature::checklist(&checklist_input, diagnosis)
        .into_iter()
        .map(|check| format!("{} {}", check.mark(), check.text))
        .collect()
}

fn json_report(diagnosis: &Diagnosis, args: &VerifyArgs, input: &Input) -> String {
    let findings: Vec<serde_json::Value> = diagnosis
        .findings
        .iter()
        .map(|finding| {
            serde_json::json!({
                "code": finding.code(),
                "severity": finding.severity().code(),
                "mistake": finding.mistake().map(signature::Mistake::code),
                "message": finding.to_string(),
            })
        })
        .collect();
    let verdict = &diagnosis.verdict;
    let mut value = serde_json::json!({
        "valid": verdict.is_valid(),
        "matched": verdict.matched(),
        "skew_secs": verdict.skew_secs(),
        "tolerance_secs": args.tolerance,
        "reason": verdict.reason().map(InvalidReason::code),
        "findings": findings,
    });
    if let Some(captured) = &input.captured {
        let entry = &captured.numbered.entry;
        value["capture"] = serde_json::json!({
            "file": captured.file.display().to_string(),
            "line": captured.numbered.line,
            "received_at": entry.received_at,
            "now": input.now,
            "listener_status": entry.status,
            "listener_verdict": entry.verdict.code(),
        });
    }
    format!("{value}\n")
}
