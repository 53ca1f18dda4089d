//! Asking a receiver which secret it holds: the one place earshot sends a
//! receiver signed duplicates of an event. Each send is the platform's
//! request (its headers, [`send_event`]) of an event the receiver was
//! already sent, with its exact bytes (a duplicate `event_id`, which a
//! receiver following spec 6 C.2 deduplicates), signed now with one of
//! the secrets given, then once more with a wrong one: a receiver that
//! checks signatures refuses that one with 401.
//!
//! What the answers mean is the caller's: a rotation expects every given
//! secret accepted ([`super::rotation::check`]), a delivery refused with
//! 401 asks which one is held ([`super::held_secret`]).

use serde::Serialize;

use super::HistoryError;
use super::recover::{send_event, sender};
use crate::api::validate::{self, UrlPolicy};
use crate::redact::SecretString;
use crate::signature::generate_secret;
use crate::store::events::StoredEvent;

/// The label of the last send, signed with a secret no one holds.
pub const WRONG: &str = "a wrong secret";

/// One send and what the receiver answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProbeAnswer {
    /// `the new secret`, `the secret you gave`, [`WRONG`]: reads after
    /// "signed with".
    pub signed_with: &'static str,
    pub http_status: Option<u16>,
    /// `HTTP 401`, `timeout: …`, `connection refused`, … when not 2xx.
    pub error: Option<String>,
}

impl ProbeAnswer {
    /// The answer in a few words: `401`, `200`, `connection refused`.
    pub fn answer_text(&self) -> String {
        match (self.http_status, &self.error) {
            (Some(code), _) => format!("HTTP {code}"),
            (None, Some(error)) => error.clone(),
            (None, None) => "no answer".to_owned(),
        }
    }

    pub fn refused(&self) -> bool {
        self.http_status == Some(401)
    }
}

/// Sends `event` to `url` once for each of `signed` (a label and its
/// secret), in order, then once signed with a wrong secret ([`WRONG`]).
/// The URL is checked by `policy` first (the one URL rule): a private or
/// loopback receiver is asked only under [`UrlPolicy::AnyHttp`]
/// (`--allow-private-urls`, or a console on a local emulator); nothing is
/// sent otherwise.
pub async fn ask(
    url: &str,
    event: &StoredEvent,
    signed: &[(&'static str, &SecretString)],
    policy: UrlPolicy,
) -> Result<Vec<ProbeAnswer>, HistoryError> {
    validate::url_under(url, policy).map_err(|rule| HistoryError::ReceiverUrl(rule.rule))?;
    let http = sender()?;
    let wrong = SecretString::new(generate_secret().unwrap_or_else(|_| "whsec_wrong".into()));
    let mut answers = Vec::with_capacity(signed.len() + 1);
    for (signed_with, secret) in signed
        .iter()
        .copied()
        .chain(std::iter::once((WRONG, &wrong)))
    {
        let sent = send_event(&http, url, secret, event).await;
        answers.push(ProbeAnswer {
            signed_with,
            http_status: sent.http_status,
            error: sent.error,
        });
    }
    Ok(answers)
}
