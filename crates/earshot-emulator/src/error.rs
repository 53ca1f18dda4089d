//! Why an emulator did not start ([`StartError`]) and why a control
//! operation on a running one was refused ([`ControlError`]).

use std::net::SocketAddr;

use axum::http::StatusCode;

use super::problem::Problem;
use earshot_protocol::validate::ValidationError;

/// Why [`Emulator::start`](crate::Emulator::start) or
/// [`EmulatorBuilder::start`](crate::EmulatorBuilder::start) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The API key is empty or could not travel in a header: such a key
    /// would let anyone in, or no one.
    #[error(
        "the emulator's API key {0}; give a non-empty key of printable ASCII without whitespace"
    )]
    InvalidApiKey(#[source] ValidationError),
    /// A setting out of its range (the same ranges as the flags of
    /// `earshot emulator`).
    #[error("emulator setting `{setting}` {rule}")]
    InvalidSetting { setting: &'static str, rule: String },
    /// The listening address could not be bound (in use, not local, no
    /// permission). The message is the one `earshot emulator` prints.
    #[error("could not listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The bound socket could not tell its own address.
    #[error("could not read the address the emulator listens on")]
    LocalAddr(#[source] std::io::Error),
    /// The HTTP clients that deliver webhooks and fetch audio could not be
    /// built (the TLS roots could not be loaded).
    #[error("could not build the emulator's outgoing HTTP client (webhooks, audio fetches)")]
    HttpClient(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Why the emulator refused a control operation (the answer the matching
/// `/_emulator/...` route gives as a 4xx problem).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// A field out of its rules (an agent id that is not a uuid, a fault
    /// on a control route, a concurrency of 0, a call's id given to
    /// complete a session or the other way round, ...).
    #[error("{0}")]
    Invalid(String),
    /// No session or call with that id (it never existed, or was
    /// forgotten past `keep_conversations`).
    #[error("{0}")]
    NotFound(String),
    /// The conversation is not in a state that allows it (a session
    /// completed twice, a failed call ended).
    #[error("{0}")]
    Conflict(String),
}

impl From<Problem> for ControlError {
    fn from(problem: Problem) -> ControlError {
        let detail = problem.detail().to_owned();
        match problem.status() {
            StatusCode::NOT_FOUND => ControlError::NotFound(detail),
            StatusCode::CONFLICT => ControlError::Conflict(detail),
            _ => ControlError::Invalid(detail),
        }
    }
}
