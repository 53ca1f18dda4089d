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
    /// What an operator is shown of this answer: the `<title>` of an HTML
    /// page, otherwise the first non-empty line of the body (at most
    /// [`MESSAGE_LIMIT`] characters), or the status's reason phrase when
    /// neither says anything.
    pub fn message(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let found = if is_html(self.content_type.as_deref(), &text) {
            html_title(&text).map(|title| strip_status(&title, self.status).to_owned())
        } else {
            text.lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .map(str::to_owned)
        };
        match found.filter(|message| !message.is_empty()) {
            Some(message) => message.chars().take(MESSAGE_LIMIT).collect(),
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

/// An HTML page: said so by the content type, or looking like one.
fn is_html(content_type: Option<&str>, text: &str) -> bool {
    let declared = content_type.is_some_and(|value| {
        let value = value.to_ascii_lowercase();
        value.contains("text/html") || value.contains("application/xhtml")
    });
    let start: String = text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .take(14)
        .collect::<String>()
        .to_ascii_lowercase();
    declared || start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// The text of the first `<title>` element, entities decoded and
/// whitespace collapsed; `None` when there is none (or it is not closed
/// within what was read).
fn html_title(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let content_start = open + lower[open..].find('>')? + 1;
    let content_end = content_start + lower[content_start..].find("</title")?;
    let raw = text.get(content_start..content_end)?;
    let decoded = decode_entities(raw);
    Some(decoded.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `401 Unauthorized` under status 401 reads `Unauthorized`: the status is
/// already in the message's `HTTP 401:` prefix. A title that is only the
/// status reads empty (the reason phrase is used).
fn strip_status(title: &str, status: u16) -> &str {
    let code = status.to_string();
    match title.strip_prefix(code.as_str()) {
        Some(rest) if rest.is_empty() || rest.starts_with([' ', ':', '-']) => {
            rest.trim_start_matches([' ', ':', '-'])
        }
        _ => title,
    }
}

/// The common character references of a title: named (`&amp;` `&lt;`
/// `&gt;` `&quot;` `&apos;` `&nbsp;`) and numeric; others are kept as text.
fn decode_entities(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let decoded = rest
            .find(';')
            .filter(|end| *end <= 10)
            .and_then(|end| entity(&rest[1..end]).map(|ch| (ch, end)));
        match decoded {
            Some((ch, end)) => {
                out.push(ch);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
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

    #[test]
    fn html_gives_its_title_or_the_reason_phrase() {
        let page = "<!DOCTYPE html>\n<html><head><meta charset=utf-8>\n<TITLE>\n  Access &amp; \
                    denied</TITLE></head><body><h1>no</h1></body></html>";
        assert_eq!(answer(403, None, page).message(), "Access & denied");
        let nginx = "<html>\r\n<head><title>401 Authorization Required</title></head>";
        assert_eq!(
            answer(401, Some("text/html"), nginx).message(),
            "Authorization Required"
        );
        let bare = "<title>401</title>";
        assert_eq!(
            answer(401, Some("text/html; charset=utf-8"), bare).message(),
            "Unauthorized"
        );
        let untitled = "<!doctype html><html><body>Unauthorized!</body></html>";
        assert_eq!(answer(401, None, untitled).message(), "Unauthorized");
        let unclosed = "<!doctype html><title>cut off";
        assert_eq!(answer(502, None, unclosed).message(), "Bad Gateway");
        let declared = "<p>oops</p>\n<title>Oops &#8212; &#x41;&bogus;</title>";
        assert_eq!(
            answer(500, Some("TEXT/HTML"), declared).message(),
            "Oops \u{2014} A&bogus;"
        );
    }

    #[test]
    fn json_mentioning_html_is_not_html() {
        let body = r#"{"error":"<title>x</title>"}"#;
        assert_eq!(
            answer(400, Some("application/json"), body).message(),
            body.to_owned()
        );
    }
}
