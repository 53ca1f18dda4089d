//! What the store holds about an incident, as a [`Capsule`]: the events
//! of a window (of some sessions, or one subscription's), each with its
//! bytes, its headers without signature or credential, and per
//! subscription its outcome and attempts (`history::event_list::detail`,
//! the Events pane's view of one event). Personal data is masked unless
//! kept. Ordered so that two exports of the same store are identical.

use std::collections::BTreeSet;

use chrono::{SecondsFormat, TimeZone, Utc};

use super::CapsuleError;
use super::format::{
    AttemptLine, Capsule, DeliveryLine, EventLine, FORMAT, Header, SubscriptionLine, VERSION,
};
use crate::history::body_view;
use crate::history::event_list::{EventDetail, SubscriptionTimeline, detail};
use crate::history::report::failure_label;
use crate::receiver::capture::is_secret_header;
use crate::store::event_list::{Filter, ListedEvent, list};
use crate::store::outcomes::{EventState, Outcome};
use crate::store::{Store, deliveries};

/// The signature header: dropped, a replay signs anew.
const SIGNATURE_HEADER: &str = "x-svc-signature";

/// What to export.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub since_ms: i64,
    /// One subscription's events and outcomes only (its exact id); else
    /// every subscription's but the observer's own.
    pub subscription: Option<String>,
    /// These sessions or calls only (exact ids); else all.
    pub sessions: Vec<String>,
    pub keep_personal_data: bool,
    /// The newest `limit` events of the window at most.
    pub limit: usize,
}

/// The capsule of `selection`, and how many of its events' outcomes are
/// still `unknown` (their attempts never swept).
pub fn export(store: &Store, selection: &Selection) -> Result<(Capsule, usize), CapsuleError> {
    let mut listed = listed_events(store, selection)?;
    listed.sort_by(|a, b| {
        (a.occurred_ms, a.received_ms, &a.event_id).cmp(&(
            b.occurred_ms,
            b.received_ms,
            &b.event_id,
        ))
    });
    let observers = deliveries::observer_subscriptions(store)?;
    let wanted = |id: &str| match &selection.subscription {
        Some(only) => id == only,
        None => !observers.iter().any(|observer| observer == id),
    };
    let mut events = Vec::new();
    let mut unknown = 0;
    for event in &listed {
        let Some(detail) = detail(store, &event.event_id)? else {
            continue;
        };
        let deliveries: Vec<DeliveryLine> = detail
            .subscriptions
            .iter()
            .filter(|timeline| wanted(&timeline.outcome.subscription_id))
            .map(delivery_line)
            .collect();
        if deliveries.is_empty() && selection.subscription.is_some() {
            continue;
        }
        unknown += deliveries.iter().filter(|d| d.state == "unknown").count();
        events.push(event_line(
            event,
            detail,
            deliveries,
            selection.keep_personal_data,
        ));
    }
    let named: BTreeSet<&str> = events
        .iter()
        .flat_map(|event| event.deliveries.iter())
        .map(|delivery| delivery.subscription_id.as_str())
        .collect();
    let mut subscriptions: Vec<SubscriptionLine> = deliveries::subscriptions(store)?
        .into_iter()
        .filter(|subscription| named.contains(subscription.id.as_str()))
        .map(|subscription| {
            let mut types = subscription.events.clone();
            types.sort();
            SubscriptionLine {
                url: bare_url(&subscription.url),
                id: subscription.id,
                events: types,
            }
        })
        .collect();
    subscriptions.sort_by(|a, b| a.id.cmp(&b.id));
    let mut sessions = selection.sessions.clone();
    sessions.sort();
    sessions.dedup();
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        first_ms: events.first().map(|event| event.occurred_ms),
        last_ms: events.last().map(|event| event.occurred_ms),
        subscription: selection.subscription.clone(),
        sessions,
        events: events.len(),
        personal_data: if selection.keep_personal_data {
            "kept"
        } else {
            "masked"
        }
        .to_owned(),
        signatures: "dropped".to_owned(),
    };
    Ok((
        Capsule {
            header,
            subscriptions,
            events,
        },
        unknown,
    ))
}

/// The window's events the selection names (newest `limit`, any order).
fn listed_events(store: &Store, selection: &Selection) -> Result<Vec<ListedEvent>, CapsuleError> {
    let filter = Filter {
        since_ms: selection.since_ms,
        subscription: selection.subscription.as_deref(),
        ..Filter::default()
    };
    if selection.sessions.is_empty() {
        return Ok(list(store, &filter, selection.limit)?);
    }
    let mut found = Vec::new();
    for session in &selection.sessions {
        let of_session = Filter {
            session: Some(session),
            ..filter.clone()
        };
        found.extend(
            list(store, &of_session, selection.limit)?
                .into_iter()
                .filter(|event| &event.session_id == session),
        );
    }
    found.sort_by_key(|event| (std::cmp::Reverse(event.occurred_ms), event.event_id.clone()));
    found.dedup_by(|a, b| a.event_id == b.event_id);
    found.truncate(selection.limit);
    Ok(found)
}

fn event_line(
    event: &ListedEvent,
    detail: EventDetail,
    deliveries: Vec<DeliveryLine>,
    keep_personal_data: bool,
) -> EventLine {
    let headers = detail
        .headers
        .into_iter()
        .filter(|(name, _)| {
            !name.eq_ignore_ascii_case(SIGNATURE_HEADER) && !is_secret_header(name, None)
        })
        .collect();
    let (bytes, body_masked) = if keep_personal_data {
        (detail.body, false)
    } else {
        masked(detail.body)
    };
    let (body, body_base64) = match String::from_utf8(bytes) {
        Ok(text) => (Some(text), None),
        Err(error) => (
            None,
            Some(crate::receiver::capture::encode_base64(error.as_bytes())),
        ),
    };
    EventLine {
        event_id: event.event_id.clone(),
        event: event.event.clone(),
        session_id: event.session_id.clone(),
        occurred: Utc
            .timestamp_millis_opt(event.occurred_ms)
            .single()
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true))
            .unwrap_or_default(),
        occurred_ms: event.occurred_ms,
        received_ms: event.received_ms,
        headers,
        body,
        body_base64,
        body_masked,
        deliveries,
    }
}

/// The body with personal data masked, and whether anything was: the exact
/// bytes when there was nothing to mask.
fn masked(body: Vec<u8>) -> (Vec<u8>, bool) {
    let Ok(original) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return (body, false);
    };
    let mut value = original.clone();
    body_view::mask(&mut value);
    if value == original {
        return (body, false);
    }
    match serde_json::to_vec(&value) {
        Ok(bytes) => (bytes, true),
        Err(_) => (body, false),
    }
}

fn delivery_line(timeline: &SubscriptionTimeline) -> DeliveryLine {
    DeliveryLine {
        subscription_id: timeline.outcome.subscription_id.clone(),
        state: timeline.outcome.state.as_str().to_owned(),
        diagnosis: diagnosis(&timeline.outcome),
        attempts: timeline
            .attempts
            .iter()
            .map(|line| AttemptLine {
                attempt: line.record.attempt_count,
                at_ms: line.record.created_at.timestamp_millis(),
                status: line.record.status.as_str().to_owned(),
                http_status_code: line.record.http_status_code,
                error: line.record.error.clone(),
                next_retry_ms: line.record.next_retry_at.map(|at| at.timestamp_millis()),
            })
            .collect(),
    }
}

/// The last failure's diagnosis, for an event that failed at least once.
fn diagnosis(outcome: &Outcome) -> Option<String> {
    let failed = outcome.http_status_code != 0 || !outcome.error_class.is_empty();
    (failed && outcome.state != EventState::Unknown).then(|| {
        let code = (outcome.http_status_code != 0).then_some(outcome.http_status_code);
        failure_label(code, &outcome.error_class)
    })
}

/// `url` without query, fragment or credentials: a subscription URL's
/// query may hold a token.
fn bare_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_url_loses_its_query_and_credentials() {
        assert_eq!(
            bare_url("https://user:pw@app.example/hook?token=abc#x"),
            "https://app.example/hook"
        );
        assert_eq!(bare_url("not a url"), "");
    }

    #[test]
    fn personal_data_is_masked_and_a_body_without_any_keeps_its_bytes() {
        let body = br#"{"b":1, "call":{"from_number":"+15555550189"}}"#.to_vec();
        let (bytes, changed) = masked(body);
        let text = String::from_utf8(bytes).unwrap();
        assert!(changed);
        assert!(!text.contains("5555550189"), "{text}");
        let plain = br#"{"b":1,  "a":2}"#.to_vec();
        assert_eq!(masked(plain.clone()), (plain, false));
    }
}
