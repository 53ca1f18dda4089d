//! One request of the battery: a POST (built by the caller, redirects never
//! followed by the client) bounded by the configured timeout, and what the
//! receiver answered, with how long it took.

use std::error::Error;
use std::time::{Duration, Instant};

use crate::http_answer::{self, ANSWER_LIMIT, AnswerError};

/// What came back for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// An HTTP answer; `location` is the `Location` header of a redirect.
    Status { code: u16, location: Option<String> },
    /// No complete answer within the timeout.
    Timeout,
    /// Nothing listens at the address.
    Refused,
    /// Any other failure to connect or read (DNS, TLS, reset…).
    ConnectionError(String),
}

/// One request's answer and latency.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    pub answer: Answer,
    pub latency: Duration,
}

impl Attempt {
    pub fn status(&self) -> Option<u16> {
        match self.answer {
            Answer::Status { code, .. } => Some(code),
            _ => None,
        }
    }
}

impl Answer {
    /// Why no HTTP answer came, in a few words (`timeout: no answer within
    /// 15 s`, `connection refused`, `connection error: …`) for a request
    /// given `timeout`; `None` for an HTTP answer.
    pub(crate) fn unanswered(&self, timeout: Duration) -> Option<String> {
        match self {
            Answer::Status { .. } => None,
            Answer::Timeout => Some(format!(
                "timeout: no answer within {}",
                crate::duration_text::of(timeout)
            )),
            Answer::Refused => Some("connection refused".to_owned()),
            Answer::ConnectionError(cause) => Some(format!("connection error: {cause}")),
        }
    }
}

/// Sends `request` and waits at most `timeout` for the answer: its status
/// and at most [`ANSWER_LIMIT`] bytes of its body (a receiver is done when
/// its body is, or when it has sent more than anyone reads).
pub(crate) async fn send(request: reqwest::RequestBuilder, timeout: Duration) -> Attempt {
    send_reading(request, timeout).await.0
}

/// [`send`], and the start of the answer's body (what was read of it;
/// empty when no answer came).
pub(crate) async fn send_reading(
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> (Attempt, Vec<u8>) {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + timeout;
    let call = async {
        let response = request.send().await?;
        let answer = http_answer::read(response, ANSWER_LIMIT, deadline).await?;
        Ok::<_, AnswerError>((
            Answer::Status {
                code: answer.status,
                location: answer.location,
            },
            answer.body,
        ))
    };
    let (answer, body) = match tokio::time::timeout_at(deadline, call).await {
        Err(_) | Ok(Err(AnswerError::TimedOut)) => (Answer::Timeout, Vec::new()),
        Ok(Ok(answered)) => answered,
        Ok(Err(AnswerError::Read(error))) if error.is_timeout() => (Answer::Timeout, Vec::new()),
        Ok(Err(AnswerError::Read(error))) if is_refused(&error) => (Answer::Refused, Vec::new()),
        Ok(Err(AnswerError::Read(error))) => (
            Answer::ConnectionError(crate::error_text::root_cause(&error)),
            Vec::new(),
        ),
    };
    let attempt = Attempt {
        answer,
        latency: started.elapsed(),
    };
    (attempt, body)
}

fn is_refused(error: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if current
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cause = current.source();
    }
    false
}
