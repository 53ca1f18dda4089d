//! The conformance battery run against an operator's own webhook receiver
//! (`earshot check-receiver`): deliveries a correct receiver accepts, ones it
//! must refuse, and the awkward ones (duplicates, out of order, a rotated
//! secret), each judged by what the platform would do with the answer.
//!
//! [`run_battery`] takes a [`CheckConfig`] and returns a typed [`Report`];
//! printing is the caller's business. The case names are [`AGENT_CASES`]
//! and [`PRERECORDED_CASES`].

use std::time::Duration;

use serde::Serialize;
use url::Url;

use crate::api::validate::{self, UrlPolicy};
use crate::redact::SecretString;
use earshot_protocol::delivery::UnknownEvent;
use earshot_protocol::delivery::cases::AgentCase;

mod cases;
mod judge;
mod payloads;
pub(crate) mod send;

pub use super::auth_header::{AuthHeader, AuthHeaderError};
pub use cases::DELIVERY_USER_AGENT;
pub use judge::{AGENTS_DEADLINE, PRERECORDED_DEADLINE};
pub use payloads::{EventBody, SetError, with_fields};

/// The voice-agent cases, in report order: the names of
/// [`AgentCase::ALL`], the one list the emulator's on-demand deliveries
/// share.
pub const AGENT_CASES: [&str; 11] = {
    let mut names = [""; 11];
    let mut index = 0;
    while index < names.len() {
        names[index] = AgentCase::ALL[index].name();
        index += 1;
    }
    names
};

/// The pre-recorded cases, in report order.
pub const PRERECORDED_CASES: [&str; 5] = [
    "completed",
    "error",
    "missing-auth-header",
    "wrong-auth-header",
    "duplicate",
];

/// Which deliveries the receiver takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Signed voice-agent events (spec parts 5 C, 6 C).
    Agents,
    /// Pre-recorded `{transcript_id, status}` calls (spec parts 5 D, 6 D).
    Prerecorded,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Agents => "agents",
            Kind::Prerecorded => "prerecorded",
        }
    }
}

/// What to check and how.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    pub url: Url,
    pub kind: Kind,
    /// The subscription's secret; required for [`Kind::Agents`].
    pub secret: Option<SecretString>,
    /// The secret before the last rotation; without it the rotation case
    /// is skipped.
    pub previous_secret: Option<SecretString>,
    /// The pre-recorded auth header; without it the auth cases are skipped.
    pub auth_header: Option<AuthHeader>,
    /// How long to wait for each answer. The receiver is held to this or
    /// the platform's deadline (15 s agents, 10 s pre-recorded), whichever
    /// is shorter.
    pub timeout: Duration,
}

impl CheckConfig {
    /// The voice-agent battery with the platform's 15 s deadline.
    pub fn agents(url: Url, secret: SecretString) -> CheckConfig {
        CheckConfig {
            url,
            kind: Kind::Agents,
            secret: Some(secret),
            previous_secret: None,
            auth_header: None,
            timeout: AGENTS_DEADLINE,
        }
    }

    /// The pre-recorded battery with the platform's 10 s deadline.
    pub fn prerecorded(url: Url) -> CheckConfig {
        CheckConfig {
            url,
            kind: Kind::Prerecorded,
            secret: None,
            previous_secret: None,
            auth_header: None,
            timeout: PRERECORDED_DEADLINE,
        }
    }

    /// Checks everything [`run_battery`] relies on.
    pub fn validate(&self) -> Result<(), CheckError> {
        check_url(self.url.as_str())?;
        if self.timeout.is_zero() {
            return Err(CheckError::Timeout);
        }
        if self.kind == Kind::Agents {
            let secret = self.secret.as_ref().ok_or(CheckError::MissingSecret)?;
            check_secret("--secret", secret)?;
            if let Some(previous) = &self.previous_secret {
                check_secret("--previous-secret", previous)?;
            }
        }
        Ok(())
    }
}

/// An `http://` or `https://` URL with a host. (The platform only
/// subscribes public `https://` URLs; a local receiver is checked anyway.)
pub fn check_url(raw: &str) -> Result<Url, CheckError> {
    validate::url_under(raw, UrlPolicy::AnyHttp).map_err(|error| CheckError::Url(error.rule))
}

/// Why the platform would refuse `url` for a subscription, if it would.
pub fn subscription_url_problem(url: &Url) -> Option<String> {
    validate::url(url.as_str()).err().map(|error| error.rule)
}

fn check_secret(flag: &'static str, secret: &SecretString) -> Result<(), CheckError> {
    validate::secret(secret.expose()).map_err(|error| CheckError::Secret {
        flag,
        rule: error.rule,
    })
}

/// Why the battery could not run. Every variant but [`CheckError::Client`],
/// [`CheckError::Payload`] and [`CheckError::Event`] is bad input.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("the receiver URL {0}")]
    Url(String),
    #[error(
        "a secret is required to sign voice-agent deliveries: give --secret-file FILE or set \
         EARSHOT_WEBHOOK_SECRET (--secret S also works, but other users see it in `ps`)"
    )]
    MissingSecret,
    #[error("{flag}: the secret {rule} (spec part 8 C)")]
    Secret { flag: &'static str, rule: String },
    #[error("--auth-header: {0}")]
    AuthHeader(#[from] AuthHeaderError),
    #[error("the timeout must be more than zero")]
    Timeout,
    #[error("could not build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("could not serialise a payload: {0}")]
    Payload(#[from] serde_json::Error),
    /// A case named an event the battery did not make (a bug).
    #[error("{0}")]
    Event(#[from] UnknownEvent),
}

impl CheckError {
    /// Whether the caller gave bad input (exit 2) rather than the battery
    /// failing to start.
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            CheckError::Client(_) | CheckError::Payload(_) | CheckError::Event(_)
        )
    }
}

/// How one case came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    Skipped,
}

/// One case: what was sent, what came back, and the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// One of [`AGENT_CASES`] or [`PRERECORDED_CASES`].
    pub name: &'static str,
    pub sent: String,
    /// The HTTP status of the answer that decided the case.
    pub status: Option<u16>,
    pub latency_ms: Option<u64>,
    /// Every answer in order: `200`, `401`, `timeout`, `refused`, `error`;
    /// `200, then 409` for a two-delivery case; `-` when skipped.
    pub answer: String,
    pub expected: String,
    pub outcome: Outcome,
    /// What the platform would do with the deciding answer.
    pub platform_would: Option<String>,
    /// On a failure, the likely receiver mistake; on a skip, why.
    pub hint: Option<String>,
}

/// The whole battery's result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub url: String,
    pub kind: Kind,
    pub cases: Vec<CaseReport>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Report {
    fn new(config: &CheckConfig, cases: Vec<CaseReport>) -> Report {
        let count = |outcome| cases.iter().filter(|case| case.outcome == outcome).count();
        Report {
            url: config.url.to_string(),
            kind: config.kind,
            passed: count(Outcome::Pass),
            failed: count(Outcome::Fail),
            skipped: count(Outcome::Skipped),
            cases,
        }
    }

    /// No case failed (skipped ones do not count).
    pub fn all_passed(&self) -> bool {
        self.failed == 0
    }

    pub fn case(&self, name: &str) -> Option<&CaseReport> {
        self.cases.iter().find(|case| case.name == name)
    }

    /// The names of the failed cases, in report order.
    pub fn failures(&self) -> Vec<&'static str> {
        self.names_with(Outcome::Fail)
    }

    pub fn names_with(&self, outcome: Outcome) -> Vec<&'static str> {
        self.cases
            .iter()
            .filter(|case| case.outcome == outcome)
            .map(|case| case.name)
            .collect()
    }
}

/// Runs the battery for `config.kind` against `config.url`. Receiver
/// failures (refused, timeouts, wrong answers) are failed cases in the
/// report, not errors; errors are bad input or a client that cannot start.
pub async fn run_battery(config: &CheckConfig) -> Result<Report, CheckError> {
    config.validate()?;
    let client = earshot_http::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(CheckError::Client)?;
    let battery = cases::Battery {
        config,
        client,
        rules: judge::Rules::new(config.kind, config.timeout),
    };
    let cases = match (config.kind, &config.secret) {
        (Kind::Agents, Some(secret)) => battery.agents(secret).await?,
        (Kind::Agents, None) => return Err(CheckError::MissingSecret),
        (Kind::Prerecorded, _) => battery.prerecorded().await?,
    };
    Ok(Report::new(config, cases))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_validation_applies_the_secret_rule() {
        let url = check_url("http://127.0.0.1:9/hook").unwrap();
        let short = CheckConfig::agents(url.clone(), SecretString::new("short"));
        assert!(matches!(short.validate(), Err(CheckError::Secret { .. })));
        let mut good = CheckConfig::agents(url.clone(), SecretString::new("x".repeat(32)));
        assert!(good.validate().is_ok());
        good.previous_secret = Some(SecretString::new("has whitespace ".repeat(4)));
        assert!(
            matches!(good.validate(), Err(CheckError::Secret { flag, .. }) if flag == "--previous-secret")
        );
        let mut unsigned = CheckConfig::prerecorded(url);
        assert!(unsigned.validate().is_ok());
        unsigned.kind = Kind::Agents;
        assert!(matches!(
            unsigned.validate(),
            Err(CheckError::MissingSecret)
        ));
    }

    #[test]
    fn only_http_urls_with_a_host_are_checked() {
        assert!(check_url("ftp://example.com/").is_err());
        assert!(check_url("not a url").is_err());
        let local = check_url("http://localhost:8080/hooks").unwrap();
        assert!(subscription_url_problem(&local).is_some());
        let public = check_url("https://hooks.example.com/svc").unwrap();
        assert_eq!(subscription_url_problem(&public), None);
    }
}
