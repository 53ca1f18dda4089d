//! What earshot reads of an answer from a server it does not control (a
//! webhook receiver): the status, a few headers and at most
//! [`ANSWER_LIMIT`] bytes of the body, read before a deadline; and the
//! one-line message an operator is shown for it ([`Answer::message`]).
//!
//! The emulator's webhook deliveries (agents and pre-recorded) and
//! `check-receiver` all read receivers' answers through [`read`], so a
//! receiver answering an endless or trickling body costs a few KiB and the
//! caller's deadline, never memory without limit.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use tokio::time::Instant;

/// The most of an answer's body that is read; the rest is never received
/// (the connection is dropped). Enough for a first line or an HTML `<title>`.
pub const ANSWER_LIMIT: usize = 4 * 1024;

/// The most characters of a message taken from an answer body.
pub const MESSAGE_LIMIT: usize = 200;

/// The body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The deadline passed before the body ended or reached the limit.
    #[error("no complete answer before the deadline")]
    TimedOut,
    /// The connection failed while the body was read.
    #[error("reading the answer failed: {0}")]
    Read(#[from] reqwest::Error),
}

/// An answer as read: status, the headers a caller needs, and the start of
/// the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The `Location` header (redirects).
    pub location: Option<String>,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// At most [`ANSWER_LIMIT`] bytes of the body.
    pub body: Vec<u8>,
    /// The body went on past [`ANSWER_LIMIT`] bytes (not read).
    pub truncated: bool,
}

/// Reads `response`'s body until it ends or `limit` bytes have come, and
/// gives up at `deadline`. Past the limit nothing more is read: dropping
/// the response closes the connection.
pub async fn read(
    mut response: reqwest::Response,
    limit: usize,
    deadline: Instant,
) -> Result<Answer, AnswerError> {
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|value: &reqwest::header::HeaderValue| value.to_str().ok())
            .map(str::to_owned)
    };
    let status = response.status().as_u16();
    let location = header(LOCATION);
    let content_type = header(CONTENT_TYPE);
    let mut body = Vec::new();
    let mut truncated = false;
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .map_err(|_| AnswerError::TimedOut)??;
        let Some(chunk) = chunk else { break };
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
        if body.len() == limit {
            // Exactly at the limit: the body may or may not go on; do not
            // wait to find out.
            truncated = response.content_length() != Some(limit as u64);
            break;
        }
    }
    Ok(Answer {
        status,
        location,
        content_type,
        body,
        truncated,
    })
}

impl Answer {
    /// What an operator is shown of this answer: the first non-empty line
    /// of the body (at most [`MESSAGE_LIMIT`] characters), or the status's
    /// reason phrase when the body says nothing.
    pub fn message(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let line = text.lines().map(str::trim).find(|line| !line.is_empty());
        match line {
            Some(line) => line.chars().take(MESSAGE_LIMIT).collect(),
            None => reason_phrase(self.status).to_owned(),
        }
    }
}

/// The status's reason phrase (`Unauthorized`), or `no message`.
pub fn reason_phrase(status: u16) -> &'static str {
    StatusCode::from_u16(status)
        .ok()
        .and_then(|status| status.canonical_reason())
        .unwrap_or("no message")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, content_type: Option<&str>, body: &str) -> Answer {
        Answer {
            status,
            location: None,
            content_type: content_type.map(str::to_owned),
            body: body.as_bytes().to_vec(),
            truncated: false,
        }
    }

    #[test]
    fn plain_text_gives_its_first_line() {
        let message = answer(500, None, "\n  overloaded  \nsecond").message();
        assert_eq!(message, "overloaded");
        let long = "x".repeat(500);
        assert_eq!(answer(500, None, &long).message().len(), MESSAGE_LIMIT);
    }

    #[test]
    fn empty_body_gives_the_reason_phrase() {
        assert_eq!(answer(401, None, "").message(), "Unauthorized");
        assert_eq!(answer(599, None, " \n").message(), "no message");
    }
}
