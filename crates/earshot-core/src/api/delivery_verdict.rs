//! Whether the platform retries an attempt (spec part 6 C rules 5–6, as
//! docs/decisions.md words them) and what the part 7 C troubleshooting
//! table says is the likely cause of its error.
//!
//! 2xx: delivered. 408, 425, 429, 5xx, timeouts and connection errors:
//! retried while attempts remain (`next_retry_at` set means a retry is
//! scheduled). Every other 4xx and every 3xx: failed for good.

use chrono::{DateTime, Utc};

use crate::api::types::agents::{DeliveryRecord, DeliveryStatus};

/// What went wrong with an attempt, from its status code or error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A 2xx answer.
    None,
    Status(u16),
    Timeout,
    Connection,
    /// No status and an error this build does not recognise.
    Unknown,
}

impl Problem {
    pub fn of(record: &DeliveryRecord) -> Problem {
        Problem::from_parts(
            record.http_status_code,
            record.error.as_deref().unwrap_or(""),
        )
    }

    /// From a status code and an error text, as records carry them.
    pub(crate) fn from_parts(http_status_code: Option<u16>, error: &str) -> Problem {
        let error = error.trim();
        let status = http_status_code.or_else(|| {
            let rest = error.strip_prefix("HTTP ")?;
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        });
        match status {
            Some(code) if (200..300).contains(&code) => Problem::None,
            Some(code) => Problem::Status(code),
            None if error.starts_with("timeout") => Problem::Timeout,
            None if error.starts_with("connection error") => Problem::Connection,
            None if error.is_empty() => Problem::None,
            None => Problem::Unknown,
        }
    }

    /// Rules 5–6: whether the platform tries again after this.
    pub(crate) fn retryable(self) -> bool {
        match self {
            Problem::Status(code) => matches!(code, 408 | 425 | 429) || (500..600).contains(&code),
            Problem::Timeout | Problem::Connection => true,
            Problem::None | Problem::Unknown => false,
        }
    }
}

/// The detail view's answer to "will the platform retry?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Pending with no error yet: the attempt is in flight.
    InFlight,
    /// A retry is scheduled at this time.
    RetryAt(DateTime<Utc>),
    /// Retryable, but no retry is scheduled.
    RetriesOver,
    /// Not retried, with the reason.
    FailedForGood(&'static str),
    /// An outcome this build cannot classify.
    Unclear,
}

pub fn verdict(record: &DeliveryRecord) -> Verdict {
    let problem = Problem::of(record);
    if record.status == DeliveryStatus::Delivered {
        return Verdict::Delivered;
    }
    if let Some(at) = record.next_retry_at {
        return Verdict::RetryAt(at.with_timezone(&Utc));
    }
    match problem {
        Problem::None if record.status == DeliveryStatus::Pending => Verdict::InFlight,
        Problem::None => Verdict::Unclear,
        Problem::Status(code) if (300..400).contains(&code) => Verdict::FailedForGood(
            "redirects are not followed, and the same URL would redirect again",
        ),
        Problem::Status(_) if problem.retryable() => Verdict::RetriesOver,
        Problem::Status(_) => {
            Verdict::FailedForGood("a 4xx other than 408, 425 and 429 is a rejection")
        }
        Problem::Timeout | Problem::Connection => Verdict::RetriesOver,
        Problem::Unknown if record.status == DeliveryStatus::Pending => Verdict::InFlight,
        Problem::Unknown => Verdict::Unclear,
    }
}

/// Why this attempt is final at once, whatever else the record says: a
/// 3xx or a 4xx other than 408, 425 and 429 is not retried (rule 6).
/// `None` for a retryable or delivered attempt.
pub fn final_at_once(record: &DeliveryRecord) -> Option<&'static str> {
    match Problem::of(record) {
        Problem::Status(code) if (300..400).contains(&code) => {
            Some("final: a redirect is not retried")
        }
        problem @ Problem::Status(code) if (400..500).contains(&code) && !problem.retryable() => {
            Some("final: 4xx is not retried")
        }
        _ => None,
    }
}

impl Verdict {
    /// One line for the detail view, with the countdown from `now`.
    pub fn describe(&self, now: DateTime<Utc>) -> String {
        match self {
            Verdict::Delivered => "delivered: the receiver answered 2xx, no retry".into(),
            Verdict::InFlight => "pending: the attempt is in flight".into(),
            Verdict::RetryAt(at) => format!("will retry: {}", countdown(*at, now)),
            Verdict::RetriesOver => {
                "retryable, but no retry is scheduled: attempts ran out, or the subscription was paused or deleted".into()
            }
            Verdict::FailedForGood(why) => format!("failed for good, no retry: {why}"),
            Verdict::Unclear => "no retry scheduled".into(),
        }
    }

    pub fn is_bad(&self) -> bool {
        matches!(self, Verdict::RetriesOver | Verdict::FailedForGood(_))
    }
}

/// "retry in 12 s", "retry in 2 min 5 s", "retry due now", or, once the
/// time has passed without a newer attempt seen, "retry overdue 4 s".
pub fn countdown(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    format!(
        "retry {}",
        crate::duration_text::due((at - now).num_seconds())
    )
}

/// How a failed attempt's retries end, in one line for every place that
/// shows it (`earshot deliveries`, the Deliveries and Events panes):
/// "attempt 5 · retry in 2 min (22:21:40) · <history>", "attempt 5 ·
/// retry overdue 4 s (…)" once its time passed with no newer attempt seen,
/// or "attempt 2 · final: 4xx is not retried". `history` is what this
/// account showed of when the platform gives up
/// (`store::give_up::GiveUp::describe`): the spec does not say how many
/// attempts a voice-agent delivery gets. `None` for an attempt with no
/// retry to come and nothing final to say.
pub fn retry_line(record: &DeliveryRecord, now: DateTime<Utc>, history: &str) -> Option<String> {
    let attempt = format!("attempt {}", record.attempt_count);
    if let Some(why) = final_at_once(record) {
        return Some(format!("{attempt} · {why}"));
    }
    let at = record.next_retry_at?.with_timezone(&Utc);
    let clock = crate::clock_text::utc_clock(at.timestamp_millis());
    let mut line = format!("{attempt} · {} ({clock})", countdown(at, now));
    if !history.is_empty() {
        line.push_str(&format!(" · {history}"));
    }
    Some(line)
}

/// Attempts a pre-recorded job's webhook gets (spec part 6 D.2): up to 10
/// in all, 10 s apart; any 4xx is final.
pub const JOB_WEBHOOK_ATTEMPTS: usize = 10;
const JOB_WEBHOOK_SPACING_MS: i64 = 10_000;

/// Where a pre-recorded job's webhook stands, from the attempts earshot's
/// receiver answered (`(received at, Unix ms; the status it answered)`,
/// oldest first): "delivered on attempt 2", "attempt 3 of 10 · answered
/// 503 · gives up at 22:21:40", "attempt 1 of 10 · answered 401: a 4xx is
/// final, no retry", "attempt 10 of 10 answered 503: the platform gave
/// up". `None` before any attempt was seen.
pub fn job_webhook_line(attempts: &[(i64, u16)]) -> Option<String> {
    let (first_ms, _) = *attempts.first()?;
    let (_, answered) = *attempts.last()?;
    let n = attempts.len();
    let of = format!("attempt {n} of {JOB_WEBHOOK_ATTEMPTS}");
    Some(match answered {
        200..=299 => format!("delivered on attempt {n}"),
        400..=499 => format!("{of} · answered {answered}: a 4xx is final, no retry"),
        _ if n >= JOB_WEBHOOK_ATTEMPTS => {
            format!("{of} answered {answered}: the platform gave up")
        }
        _ => {
            let last_ms = first_ms + (JOB_WEBHOOK_ATTEMPTS as i64 - 1) * JOB_WEBHOOK_SPACING_MS;
            format!(
                "{of} · answered {answered} · gives up at {} (10 attempts, 10 s apart)",
                crate::clock_text::utc_clock(last_ms)
            )
        }
    })
}

/// The part 7 C troubleshooting table's causes for this attempt's error.
pub fn likely_causes(record: &DeliveryRecord) -> Vec<&'static str> {
    match Problem::of(record) {
        Problem::None => Vec::new(),
        Problem::Status(401) => vec![
            "the receiver hashed a re-serialised body instead of the raw bytes",
            "it omitted the `<t>.` prefix when computing the signature",
            "it has a different secret (rotated, or another subscription's)",
            "if only intermittent: its clock is off by more than 5 min",
        ],
        Problem::Status(code) if (300..400).contains(&code) => {
            vec!["the subscription URL redirects: redirects are not followed; use the final URL"]
        }
        Problem::Status(code) if (500..600).contains(&code) => {
            vec!["the receiver failed (its own error): the platform retries"]
        }
        Problem::Status(408 | 425 | 429) => {
            vec!["the receiver asked to be tried later (busy or rate limited): retried"]
        }
        Problem::Status(_) => vec!["the receiver rejected the delivery: see its logs"],
        Problem::Timeout => {
            vec!["the receiver exceeds the 15 s limit: answer 2xx first, then do the work"]
        }
        Problem::Connection => vec!["the receiver is down, or the URL is wrong (host, port, TLS)"],
        Problem::Unknown => Vec::new(),
    }
}

/// What went wrong, in one short phrase, for grouping failures across many
/// attempts (the Health board, `earshot health`): the troubleshooting
/// table's causes, condensed. Empty for a delivered attempt.
pub fn diagnosis(problem: Problem) -> &'static str {
    match problem {
        Problem::None => "",
        Problem::Status(401) => {
            "invalid signature: the receiver re-serialises the body, drops the `<t>.` prefix, \
             has another secret, or its clock is off by more than 5 min"
        }
        Problem::Status(code) if (300..400).contains(&code) => {
            "redirect not followed: use the final URL (failed for good)"
        }
        Problem::Status(code) if (500..600).contains(&code) => {
            "receiver error: it failed on its side (retried)"
        }
        Problem::Status(408 | 425 | 429) => "receiver asked to be tried later (retried)",
        Problem::Status(_) => "rejected by the receiver: see its logs (not retried)",
        Problem::Timeout => "timeout: slower than 15 s; answer 2xx first, then work (retried)",
        Problem::Connection => "connection error: receiver down or URL wrong (retried)",
        Problem::Unknown => "an error this build does not recognise",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::agents::DeliveryStatus;
    use chrono::TimeZone;

    fn failed(
        code: Option<u16>,
        error: Option<&str>,
        retry_in_secs: Option<i64>,
    ) -> DeliveryRecord {
        let now = Utc.timestamp_opt(1_796_479_509, 0).unwrap();
        DeliveryRecord {
            id: "a1".into(),
            subscription_id: "sub".into(),
            session_id: "ses".into(),
            status: DeliveryStatus::Failed,
            attempt_count: 5,
            http_status_code: code,
            error: error.map(str::to_owned),
            delivered_at: None,
            next_retry_at: retry_in_secs
                .map(|secs| (now + chrono::Duration::seconds(secs)).fixed_offset()),
            created_at: now.fixed_offset(),
            extra: Default::default(),
        }
    }

    #[test]
    fn a_job_webhook_says_which_attempt_of_ten_and_when_it_ends() {
        let first = 1_796_479_509_000; // 14:05:09
        let at = |n: i64| first + n * 10_000;
        assert_eq!(job_webhook_line(&[]), None);
        assert_eq!(
            job_webhook_line(&[(at(0), 503), (at(1), 503), (at(2), 503)]).as_deref(),
            Some("attempt 3 of 10 · answered 503 · gives up at 14:06:39 (10 attempts, 10 s apart)")
        );
        assert_eq!(
            job_webhook_line(&[(at(0), 503), (at(1), 200)]).as_deref(),
            Some("delivered on attempt 2")
        );
        assert_eq!(
            job_webhook_line(&[(at(0), 401)]).as_deref(),
            Some("attempt 1 of 10 · answered 401: a 4xx is final, no retry")
        );
        let ten: Vec<(i64, u16)> = (0..10).map(|n| (at(n), 503)).collect();
        assert_eq!(
            job_webhook_line(&ten).as_deref(),
            Some("attempt 10 of 10 answered 503: the platform gave up")
        );
    }

    #[test]
    fn a_retry_line_says_the_attempt_when_and_the_accounts_history() {
        let now = Utc.timestamp_opt(1_796_479_509, 0).unwrap();
        let history = "on this account the platform gave up after 8 attempts (seen 14 times)";
        let retrying = failed(Some(503), Some("HTTP 503"), Some(125));
        assert_eq!(
            retry_line(&retrying, now, history).as_deref(),
            Some(
                "attempt 5 · retry in 2 min 5 s (14:07:14) · on this account the platform gave \
                 up after 8 attempts (seen 14 times)"
            )
        );
        let later = now + chrono::Duration::seconds(129);
        assert_eq!(
            retry_line(&retrying, later, "").as_deref(),
            Some("attempt 5 · retry overdue 4 s (14:07:14)")
        );
        let rejected = failed(Some(404), Some("HTTP 404"), None);
        assert_eq!(
            retry_line(&rejected, now, history).as_deref(),
            Some("attempt 5 · final: 4xx is not retried")
        );
        let over = failed(None, Some("timeout"), None);
        assert_eq!(retry_line(&over, now, history), None);
    }
}
