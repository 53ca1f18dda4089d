//! Deliveries sent on demand to a receiver, beside the platform's ordinary
//! ones: the same event again ([`Delivery::duplicate_of`]), a pair in the
//! wrong order ([`Delivery::out_of_order`]), a signature made with another
//! secret ([`Delivery::signed_with`]), a `t` too old or too new
//! ([`Delivery::stale`], [`Delivery::ahead`]), a delivery that arrives late
//! ([`Delivery::slow_by`]).
//!
//! One set for every sender: the emulator's `deliver` and `earshot
//! check-receiver`'s battery ([`cases`]) both turn a [`Delivery`] into its
//! requests with [`Delivery::requests`], so a Rust test and the command
//! line send a receiver the same bytes and headers. Pure: the caller
//! passes the events' bytes, the secret and `now`, and sends.

use std::fmt;
use std::time::Duration;

use crate::redact::SecretString;
use crate::signature;

pub mod cases;

/// The `User-Agent` of the platform's deliveries (and of every delivery
/// sent on demand).
pub const USER_AGENT: &str = "SVC-Webhooks/1.0";
/// The header naming the event a delivery carries (`session.started`).
pub const EVENT_HEADER: &str = "X-SVC-Event";
/// The header with the attempt's own id: new on every attempt, so a
/// duplicate is told by its `event_id`, never by this.
pub const DELIVERY_ID_HEADER: &str = "X-SVC-Delivery-Id";

/// Which events to send, in which order, and how they are signed and
/// timed. Start from [`Delivery::of`], [`Delivery::duplicate_of`] or
/// [`Delivery::out_of_order`]; the rest change how it is sent:
///
/// ```
/// # use std::time::Duration;
/// # use earshot_protocol::delivery::Delivery;
/// // The same event again, with a `t` six minutes old.
/// let delivery = Delivery::duplicate_of("7d0c…").stale(Duration::from_secs(360));
/// assert_eq!(delivery.event_ids(), ["7d0c…"]);
/// ```
#[derive(Clone)]
#[must_use = "a Delivery does nothing until it is sent"]
pub struct Delivery {
    /// Event ids, in sending order.
    events: Vec<String>,
    /// `None`: the subscription's own secret.
    secret: Option<SecretString>,
    /// Added to `t` (negative: in the past).
    skew_secs: i64,
    /// Held this long between signing and sending.
    delay: Duration,
}

impl Delivery {
    /// Event `event_id` as the platform sends it: its bytes, signed now
    /// with the subscription's secret.
    pub fn of(event_id: impl Into<String>) -> Delivery {
        Delivery {
            events: vec![event_id.into()],
            secret: None,
            skew_secs: 0,
            delay: Duration::ZERO,
        }
    }

    /// Event `event_id` once more, as the platform repeats an event whose
    /// delivery it counted failed: the same body (and `event_id`), a new
    /// `X-SVC-Delivery-Id`, a fresh signature. A correct receiver answers
    /// 2xx and does the work once.
    pub fn duplicate_of(event_id: impl Into<String>) -> Delivery {
        Delivery::of(event_id)
    }

    /// Two events of one session or call in the wrong order: `later`
    /// first, then `earlier` (`call.ended` before `call.connected`), each
    /// sent once the answer to the one before came. Ordering is not
    /// guaranteed by the platform; a correct receiver accepts both.
    pub fn out_of_order(earlier: impl Into<String>, later: impl Into<String>) -> Delivery {
        Delivery {
            events: vec![later.into(), earlier.into()],
            ..Delivery::of(String::new())
        }
    }

    /// Signed with `secret` instead of the subscription's: another secret
    /// gives a well-formed header a correct receiver refuses (401); the
    /// secret before a rotation gives one it accepts while deliveries in
    /// flight drain.
    pub fn signed_with(mut self, secret: impl Into<SecretString>) -> Delivery {
        self.secret = Some(secret.into());
        self
    }

    /// With `t` moved `by` into the past (correctly signed): past the 300 s
    /// tolerance a correct receiver refuses it.
    pub fn stale(mut self, by: Duration) -> Delivery {
        self.skew_secs = -secs(by);
        self
    }

    /// With `t` moved `by` into the future (correctly signed): past the
    /// tolerance a correct receiver refuses it too.
    pub fn ahead(mut self, by: Duration) -> Delivery {
        self.skew_secs = secs(by);
        self
    }

    /// Signed, then sent `by` later, as when the platform or the network
    /// runs behind: the receiver reads a `t` that is `by` old on arrival
    /// (within the tolerance, a correct receiver accepts it).
    pub fn slow_by(mut self, by: Duration) -> Delivery {
        self.delay = by;
        self
    }

    /// The events sent, in sending order.
    pub fn event_ids(&self) -> &[String] {
        &self.events
    }

    /// How long each request is held between signing and sending.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The requests to send, in order: each event's bytes (found by
    /// `lookup`), signed at `now + skew` (unix seconds) with the chosen
    /// secret, or `subscription_secret` when none was chosen.
    pub fn requests<'a>(
        &self,
        lookup: impl Fn(&str) -> Option<EventBytes<'a>>,
        subscription_secret: &SecretString,
        now: i64,
    ) -> Result<Vec<Outgoing>, UnknownEvent> {
        let secret = self.secret.as_ref().unwrap_or(subscription_secret);
        let timestamp = now.saturating_add(self.skew_secs);
        self.events
            .iter()
            .map(|event_id| {
                let event = lookup(event_id).ok_or_else(|| UnknownEvent(event_id.clone()))?;
                let signature = signature::sign(secret.expose().as_bytes(), timestamp, event.body);
                Ok(Outgoing {
                    event_id: event_id.clone(),
                    headers: vec![
                        ("content-type", "application/json".to_owned()),
                        ("user-agent", USER_AGENT.to_owned()),
                        (signature::HEADER_NAME, signature),
                        (EVENT_HEADER, event.name.to_owned()),
                        (DELIVERY_ID_HEADER, new_delivery_id()),
                    ],
                    body: event.body.to_vec(),
                    timestamp,
                    delay: self.delay,
                })
            })
            .collect()
    }
}

impl fmt::Debug for Delivery {
    /// The secret chosen, if any, shows masked.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery")
            .field("events", &self.events)
            .field("secret", &self.secret)
            .field("skew_secs", &self.skew_secs)
            .field("delay", &self.delay)
            .finish()
    }
}

fn secs(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// One event as a sender holds it: its name (`session.started`) and its
/// serialised body, sent as is.
#[derive(Clone, Copy, Debug)]
pub struct EventBytes<'a> {
    pub name: &'a str,
    pub body: &'a [u8],
}

/// One request ready to send: `POST` these headers and this body to the
/// receiver, `delay` after it was signed.
#[derive(Clone, Debug)]
pub struct Outgoing {
    pub event_id: String,
    /// Lower-case names as HTTP/2 would send them; values as sent.
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// The `t` of its signature (unix seconds).
    pub timestamp: i64,
    pub delay: Duration,
}

impl Outgoing {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// A delivery named an event the sender does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no event {0} to deliver (it was never sent, or was forgotten since)")]
pub struct UnknownEvent(pub String);

/// A fresh attempt id: a random (version 4) UUID, as the platform's.
fn new_delivery_id() -> String {
    let mut bytes = [0u8; 16];
    // Without the OS generator the id is still unique enough for a test:
    // the nanoseconds since the epoch.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{Candidate, verify};

    const SECRET: &str = "whsec_the_subscriptions_own_secret_32+";
    const NOW: i64 = 1_796_479_509;

    fn lookup(id: &str) -> Option<EventBytes<'static>> {
        match id {
            "a" => Some(EventBytes {
                name: "call.connected",
                body: b"{\"event_id\":\"a\"}",
            }),
            "b" => Some(EventBytes {
                name: "call.ended",
                body: b"{\"event_id\":\"b\"}",
            }),
            _ => None,
        }
    }

    fn verdict(outgoing: &Outgoing, secret: &str) -> signature::Verdict {
        let candidates = [Candidate {
            label: "current",
            secret: secret.as_bytes(),
        }];
        let header = outgoing.header(signature::HEADER_NAME).unwrap();
        verify(header, &outgoing.body, &candidates, NOW, 300)
    }

    #[test]
    fn a_duplicate_is_the_same_bytes_signed_anew_with_a_new_attempt_id() {
        let secret = SecretString::new(SECRET);
        let first = Delivery::of("b").requests(lookup, &secret, NOW).unwrap();
        let again = Delivery::duplicate_of("b")
            .requests(lookup, &secret, NOW)
            .unwrap();
        assert_eq!(first[0].body, again[0].body);
        assert_ne!(
            first[0].header(DELIVERY_ID_HEADER),
            again[0].header(DELIVERY_ID_HEADER)
        );
        assert_eq!(again[0].header(EVENT_HEADER), Some("call.ended"));
        assert!(verdict(&again[0], SECRET).is_valid());
    }

    #[test]
    fn out_of_order_sends_the_later_event_first() {
        let secret = SecretString::new(SECRET);
        let sent = Delivery::out_of_order("a", "b")
            .requests(lookup, &secret, NOW)
            .unwrap();
        let names: Vec<_> = sent.iter().map(|o| o.header(EVENT_HEADER)).collect();
        assert_eq!(names, [Some("call.ended"), Some("call.connected")]);
    }

    #[test]
    fn another_secret_and_a_moved_t_fail_verification() {
        let secret = SecretString::new(SECRET);
        let forged = Delivery::of("a")
            .signed_with("whsec_somebody_elses_secret_of_32_chars")
            .requests(lookup, &secret, NOW)
            .unwrap();
        assert!(!verdict(&forged[0], SECRET).is_valid());
        assert!(verdict(&forged[0], "whsec_somebody_elses_secret_of_32_chars").is_valid());
        let stale = Delivery::of("a")
            .stale(Duration::from_secs(301))
            .requests(lookup, &secret, NOW)
            .unwrap();
        assert_eq!(stale[0].timestamp, NOW - 301);
        assert!(!verdict(&stale[0], SECRET).is_valid());
        let ahead = Delivery::of("a")
            .ahead(Duration::from_secs(302))
            .requests(lookup, &secret, NOW)
            .unwrap();
        assert_eq!(ahead[0].timestamp, NOW + 302);
    }

    #[test]
    fn an_unknown_event_is_named_and_the_chosen_secret_never_printed() {
        let secret = SecretString::new(SECRET);
        let delivery = Delivery::of("zz").signed_with("whsec_never_printed_anywhere_at_all_0");
        assert_eq!(
            delivery.requests(lookup, &secret, NOW).unwrap_err(),
            UnknownEvent("zz".into())
        );
        assert!(!format!("{delivery:?}").contains("never_printed"));
    }

    #[test]
    fn delivery_ids_are_version_4_uuids() {
        let id = new_delivery_id();
        assert_eq!(id.len(), 36, "{id}");
        assert_eq!(&id[14..15], "4", "{id}");
        assert_ne!(id, new_delivery_id());
    }
}
