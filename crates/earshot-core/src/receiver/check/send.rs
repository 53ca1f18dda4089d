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

/// Sends `request` and waits at most `timeout` for the answer: its status
/// and at most [`ANSWER_LIMIT`] bytes of its body (a receiver is done when
/// its body is, or when it has sent more than anyone reads).
pub(crate) async fn send(request: reqwest::RequestBuilder, timeout: Duration) -> Attempt {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + timeout;
    let call = async {
        let response = request.send().await?;
        let answer = http_answer::read(response, ANSWER_LIMIT, deadline).await?;
        Ok::<_, AnswerError>(Answer::Status {
            code: answer.status,
            location: answer.location,
        })
    };
    let answer = match tokio::time::timeout_at(deadline, call).await {
        Err(_) | Ok(Err(AnswerError::TimedOut)) => Answer::Timeout,
        Ok(Ok(answer)) => answer,
        Ok(Err(AnswerError::Read(error))) if error.is_timeout() => Answer::Timeout,
        Ok(Err(AnswerError::Read(error))) if is_refused(&error) => Answer::Refused,
        Ok(Err(AnswerError::Read(error))) => {
            Answer::ConnectionError(crate::error_text::root_cause(&error))
        }
    };
    Attempt {
        answer,
        latency: started.elapsed(),
    }
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
