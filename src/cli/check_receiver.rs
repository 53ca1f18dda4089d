//! `earshot check-receiver`: runs the conformance battery of
//! [`earshot_core::receiver::check`] against an operator's webhook receiver and
//! prints the report as a table or one JSON object.
//! Exit status: 0 every case passed, 1 a case failed, 2 bad input.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use earshot_core::receiver::check::{
    self, AuthHeader, CheckConfig, CheckError, Kind, Outcome, Report,
};

use super::output::{self, Table};
use super::secret_arg::{ReceiverSecretArgs, ReceiverSecrets};

/// Send a battery of deliveries to your receiver and report how it answers.
#[derive(clap::Args, Debug)]
pub(crate) struct CheckReceiverArgs {
    /// The receiver's URL, exactly as the subscription (or `webhook_url`)
    /// names it.
    #[arg(value_name = "URL")]
    pub(crate) url: String,

    #[command(flatten)]
    pub(crate) secrets: ReceiverSecretArgs,

    /// Which deliveries the receiver takes [default: agents]; agents needs
    /// the secret. Without --previous-secret the rotation case is skipped,
    /// without --auth-header the authentication cases.
    #[arg(long, value_enum)]
    pub(crate) kind: Option<KindArg>,

    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub(crate) json: bool,

    /// Seconds to wait for each answer; the receiver is held to this or the
    /// platform's deadline (15 s agents, 10 s pre-recorded), whichever is
    /// shorter.
    #[arg(long, value_name = "SECS", default_value_t = 15.0)]
    pub(crate) timeout: f64,
}

impl CheckReceiverArgs {
    pub(crate) fn kind(&self) -> KindArg {
        self.kind.unwrap_or(KindArg::Agents)
    }
}

/// `--kind`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KindArg {
    /// Signed voice-agent events (session.*, call.*).
    Agents,
    /// Pre-recorded `{transcript_id, status}` calls.
    Prerecorded,
}

pub(crate) async fn run(args: CheckReceiverArgs) -> color_eyre::Result<ExitCode> {
    let secrets = match args.secrets.resolve() {
        Ok(secrets) => secrets,
        Err(error) => {
            eprintln!("earshot check-receiver: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let report = match config_from(&args, secrets) {
        Ok(config) => {
            if !args.json {
                note_unsubscribable(&config);
            }
            check::run_battery(&config).await
        }
        Err(error) => Err(error),
    };
    let report = match report {
        Ok(report) => report,
        Err(error) if error.is_bad_input() => {
            eprintln!("earshot check-receiver: {error}");
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    if args.json {
        output::print_json(&report)?;
    } else {
        output::emit_styled(&render(&report, use_colour()))?;
    }
    Ok(if report.all_passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn config_from(
    args: &CheckReceiverArgs,
    secrets: ReceiverSecrets,
) -> Result<CheckConfig, CheckError> {
    let url = check::check_url(&args.url)?;
    let timeout = Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|timeout| !timeout.is_zero())
        .ok_or(CheckError::Timeout)?;
    let mut config = match args.kind() {
        KindArg::Agents => {
            let secret = secrets.current.ok_or(CheckError::MissingSecret)?;
            let mut config = CheckConfig::agents(url, secret);
            config.previous_secret = secrets.previous;
            config
        }
        KindArg::Prerecorded => CheckConfig::prerecorded(url),
    };
    config.timeout = timeout;
    config.auth_header = secrets
        .auth_header
        .as_ref()
        .map(|text| AuthHeader::parse(text.expose()))
        .transpose()?;
    config.validate()?;
    Ok(config)
}

/// A receiver the platform could not be subscribed to is still checked;
/// say so once, on standard error.
fn note_unsubscribable(config: &CheckConfig) {
    if let Some(problem) = check::subscription_url_problem(&config.url) {
        let what = match config.kind {
            Kind::Agents => "a subscription",
            Kind::Prerecorded => "a webhook_url",
        };
        eprintln!(
            "note: the platform would not accept this URL for {what}: it {problem}. Checking \
             it anyway."
        );
    }
}

/// Colours only on a terminal, and never when `NO_COLOR` is set.
fn use_colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The table, the hints of failed and skipped cases, and the summary.
fn render(report: &Report, colour: bool) -> String {
    let mut table = Table::new(&[
        "RESULT",
        "CASE",
        "ANSWER",
        "LATENCY",
        "EXPECTED",
        "PLATFORM WOULD",
        "SENT",
    ]);
    for case in &report.cases {
        table.row(vec![
            result_word(case.outcome).to_owned(),
            case.name.to_owned(),
            case.answer.clone(),
            case.latency_ms.map_or_else(
                || "-".to_owned(),
                |ms| earshot_core::duration_text::of(std::time::Duration::from_millis(ms)),
            ),
            case.expected.clone(),
            case.platform_would
                .clone()
                .unwrap_or_else(|| "-".to_owned()),
            case.sent.clone(),
        ]);
    }
    let mut text = format!(
        "Checking {} receiver {}\n\n",
        report.kind.as_str(),
        report.url
    );
    for line in table.render().lines() {
        text.push_str(&paint_result(line, colour));
        text.push('\n');
    }
    push_notes(&mut text, "Failures", report, Outcome::Fail);
    push_notes(&mut text, "Skipped", report, Outcome::Skipped);
    text.push_str(&format!(
        "\n{} passed, {} failed, {} skipped\n",
        report.passed, report.failed, report.skipped
    ));
    text
}

/// The hints of the cases with `outcome`, one line per distinct hint (a
/// receiver that is down or redirects says so once, not eleven times).
fn push_notes(text: &mut String, title: &str, report: &Report, outcome: Outcome) {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for case in report.cases.iter().filter(|case| case.outcome == outcome) {
        let hint = case.hint.as_deref().unwrap_or("no hint");
        match groups.iter_mut().find(|(_, seen)| *seen == hint) {
            Some((names, _)) => names.push(case.name),
            None => groups.push((vec![case.name], hint)),
        }
    }
    if groups.is_empty() {
        return;
    }
    text.push_str(&format!("\n{title}:\n"));
    for (names, hint) in groups {
        text.push_str(&format!("  {}: {hint}\n", names.join(", ")));
    }
}

fn result_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
        Outcome::Skipped => "SKIP",
    }
}

/// Colours the RESULT cell at the start of a row (after alignment, so the
/// escape codes do not count as width).
fn paint_result(line: &str, colour: bool) -> String {
    if !colour {
        return line.to_owned();
    }
    for (word, code) in [("PASS", "32"), ("FAIL", "31"), ("SKIP", "33")] {
        if let Some(rest) = line.strip_prefix(word) {
            return format!("\x1b[{code}m{word}\x1b[0m{rest}");
        }
    }
    line.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use earshot_core::receiver::check::CaseReport;

    #[derive(Parser, Debug)]
    struct Wrapper {
        #[command(flatten)]
        args: CheckReceiverArgs,
    }

    fn parse(argv: &[&str]) -> Result<CheckReceiverArgs, clap::Error> {
        let argv = std::iter::once("check-receiver").chain(argv.iter().copied());
        Wrapper::try_parse_from(argv).map(|wrapper| wrapper.args)
    }

    /// The secrets given on the command line only (the tests must not
    /// depend on the environment they run in).
    fn from_argv(args: &CheckReceiverArgs) -> ReceiverSecrets {
        let flags = &args.secrets;
        ReceiverSecrets {
            current: flags.secret.clone(),
            previous: flags.previous_secret.clone(),
            auth_header: flags.auth_header.clone(),
        }
    }

    fn config(args: &CheckReceiverArgs) -> Result<CheckConfig, CheckError> {
        config_from(args, from_argv(args))
    }

    #[test]
    fn secret_is_required_for_agents_only() {
        for argv in [
            &["http://127.0.0.1:1/"][..],
            &["http://127.0.0.1:1/", "--kind", "agents"],
        ] {
            let args = parse(argv).unwrap();
            assert!(matches!(config(&args), Err(CheckError::MissingSecret)));
        }
        let args = parse(&["http://127.0.0.1:1/", "--kind", "prerecorded"]).unwrap();
        assert!(config(&args).is_ok());
        let args = parse(&["http://127.0.0.1:1/", "--secret", &"s".repeat(32)]).unwrap();
        assert_eq!(args.kind(), KindArg::Agents);
        assert_eq!(args.timeout, 15.0);
        assert!(config(&args).is_ok());
    }

    #[test]
    fn bad_input_is_reported_before_sending() {
        let secret = "s".repeat(32);
        for argv in [
            vec!["not a url", "--secret", &secret],
            vec!["http://127.0.0.1:1/", "--secret", "too-short"],
            vec!["http://127.0.0.1:1/", "--secret", &secret, "--timeout", "0"],
            vec![
                "http://127.0.0.1:1/",
                "--kind",
                "prerecorded",
                "--auth-header",
                "nocolon",
            ],
        ] {
            let args = parse(&argv).unwrap();
            let error = config(&args).unwrap_err();
            assert!(error.is_bad_input(), "{argv:?}: {error}");
            assert!(!error.to_string().contains("too-short"), "{error}");
        }
    }

    #[test]
    fn the_table_lists_every_case_and_the_summary() {
        let case = |name, outcome, hint: Option<&str>| CaseReport {
            name,
            sent: format!("{name} body"),
            status: Some(200),
            latency_ms: Some(3),
            answer: "200".to_owned(),
            expected: "2xx within 15 s".to_owned(),
            outcome,
            platform_would: Some("delivered".to_owned()),
            hint: hint.map(str::to_owned),
        };
        let report = Report {
            url: "http://127.0.0.1:1/".to_owned(),
            kind: Kind::Agents,
            cases: vec![
                case("call.ended", Outcome::Pass, None),
                case(
                    "bad-signature",
                    Outcome::Fail,
                    Some("signature not verified"),
                ),
            ],
            passed: 1,
            failed: 1,
            skipped: 0,
        };
        let text = render(&report, false);
        assert!(text.contains("PASS    call.ended"), "{text}");
        assert!(
            text.contains("  bad-signature: signature not verified"),
            "{text}"
        );
        assert!(text.ends_with("1 passed, 1 failed, 0 skipped\n"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(render(&report, true).contains("\x1b[31mFAIL\x1b[0m"));
    }
}
