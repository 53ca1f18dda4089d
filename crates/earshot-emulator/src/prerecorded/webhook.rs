//! The pre-recorded webhook (spec part 6 D): up to 10 POSTs of
//! `{transcript_id, status}`, each answer's status recorded on the job.

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderName, HeaderValue};

use super::{WEBHOOK_ATTEMPTS, WEBHOOK_DEADLINE, WEBHOOK_INTERVAL};
use crate::SharedState;
use earshot_protocol::types::prerecorded::{TranscriptStatus, TranscriptWebhook};

/// How one webhook attempt ended.
#[derive(Debug, PartialEq)]
enum Attempt {
    /// 2xx: done.
    Delivered,
    /// 4xx: failed for good, no retry.
    Rejected,
    /// 3xx (not followed), 5xx, timeout, connection error: tried again.
    Retry,
}

fn classify(status: u16) -> Attempt {
    match status {
        200..=299 => Attempt::Delivered,
        400..=499 => Attempt::Rejected,
        _ => Attempt::Retry,
    }
}

/// Up to [`WEBHOOK_ATTEMPTS`] POSTs of `{transcript_id, status}` to exactly
/// `url`, each answer's status recorded as `webhook_status_code`.
pub(super) async fn deliver_webhook(
    state: &SharedState,
    id: &str,
    status: TranscriptStatus,
    url: &str,
    auth: Option<(HeaderName, HeaderValue)>,
) {
    let body = match serde_json::to_vec(&TranscriptWebhook {
        transcript_id: id.to_owned(),
        status,
    }) {
        Ok(body) => Bytes::from(body),
        Err(error) => {
            tracing::error!("could not serialise the webhook of {id}: {error}");
            return;
        }
    };
    let scale = state.config.time_scale;
    for attempt in 1..=WEBHOOK_ATTEMPTS {
        let mut request = state
            .prerecorded
            .hooks
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .body(body.clone());
        if let Some((name, value)) = &auth {
            request = request.header(name.clone(), value.clone());
        }
        let deadline = tokio::time::Instant::now() + scale.scale(WEBHOOK_DEADLINE);
        let call = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            // Read (a bounded start of) the answer: a short one lets the
            // connection be reused, an endless one costs a few KiB.
            let _ =
                earshot_http::answer::read(response, earshot_http::answer::ANSWER_LIMIT, deadline)
                    .await;
            Ok::<u16, reqwest::Error>(status)
        };
        let outcome = match tokio::time::timeout_at(deadline, call).await {
            Ok(Ok(code)) => {
                if let Some(job) = state.prerecorded.jobs().transcripts.get_mut(id) {
                    job.webhook_status_code = Some(code);
                }
                classify(code)
            }
            Ok(Err(error)) => {
                tracing::debug!(
                    transcript = id,
                    attempt,
                    "webhook: {}",
                    earshot_protocol::error_text::root_cause(&error)
                );
                Attempt::Retry
            }
            Err(_) => {
                tracing::debug!(transcript = id, attempt, "webhook: no answer in time");
                Attempt::Retry
            }
        };
        tracing::debug!(transcript = id, attempt, ?outcome, "webhook attempt");
        if outcome != Attempt::Retry {
            return;
        }
        if attempt < WEBHOOK_ATTEMPTS {
            state.clock.sleep(WEBHOOK_INTERVAL).await;
        }
    }
    tracing::info!(
        transcript = id,
        "webhook failed after {WEBHOOK_ATTEMPTS} attempts"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_answers_are_classified_by_part_6_d() {
        assert_eq!(classify(200), Attempt::Delivered);
        assert_eq!(classify(204), Attempt::Delivered);
        for status in [400, 401, 404, 408, 410, 429] {
            assert_eq!(classify(status), Attempt::Rejected, "{status}");
        }
        for status in [301, 302, 500, 502, 503] {
            assert_eq!(classify(status), Attempt::Retry, "{status}");
        }
    }
}
