//! The filter language of event lists (`earshot events`, the console's
//! Events pane): whitespace-separated terms, all of which must hold.
//!
//! | term | keeps events |
//! |---|---|
//! | `type:call.ended` | of that type |
//! | `status:missed` | in that state for some subscription (`delivered`, `pending`, `missed`, `recovered`, `unknown`) |
//! | `sub:db318dee` | sent to a subscription whose id starts so |
//! | `session:call_4f2a` | of a session or call whose id starts so |
//! | `since:1h` | that occurred within the duration, or since an RFC 3339 time |
//! | any other word | whose event id, session id or type contains it (any case) |
//!
//! `status:` and `sub:` together mean one subscription in that state.

use crate::store::outcomes::EventState;

/// A parsed filter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventQuery {
    pub event_type: Option<String>,
    pub state: Option<EventState>,
    pub subscription: Option<String>,
    pub session: Option<String>,
    /// Unix milliseconds.
    pub since_ms: Option<i64>,
    /// Lower-cased free words.
    pub words: Vec<String>,
}

/// The field names the language knows, for help and errors.
pub const FIELDS: [&str; 5] = ["type", "status", "sub", "session", "since"];

impl EventQuery {
    /// Parses `text` at `now_ms`; an error says which term is wrong and
    /// what it should be.
    pub fn parse(text: &str, now_ms: i64) -> Result<EventQuery, String> {
        let mut query = EventQuery::default();
        for term in text.split_whitespace() {
            let Some((field, value)) = term.split_once(':').filter(|(field, _)| {
                FIELDS.contains(field) || field.chars().all(|c| c.is_ascii_alphabetic())
            }) else {
                query.words.push(term.to_lowercase());
                continue;
            };
            if value.is_empty() {
                return Err(format!("`{term}`: give a value after `{field}:`"));
            }
            match field {
                "type" => query.event_type = Some(value.to_owned()),
                "status" | "state" => {
                    query.state = Some(EventState::parse(value).ok_or_else(|| {
                        let known: Vec<&str> =
                            EventState::ALL.iter().map(|state| state.as_str()).collect();
                        format!("`{term}`: status is one of {}", known.join(", "))
                    })?);
                }
                "sub" => query.subscription = Some(value.to_owned()),
                "session" | "call" => query.session = Some(value.to_owned()),
                "since" => query.since_ms = Some(since(value, now_ms)?),
                // `https://…` and other words with a colon are free text.
                _ if term.contains("//") => query.words.push(term.to_lowercase()),
                _ => {
                    return Err(format!(
                        "unknown filter `{field}:`; use {}, or free text",
                        FIELDS.map(|field| format!("{field}:")).join(" ")
                    ));
                }
            }
        }
        Ok(query)
    }

    pub fn is_empty(&self) -> bool {
        *self == EventQuery::default()
    }
}

/// A duration back from `now_ms` (`90s`, `30m`, `2h`, `7d`) or an RFC 3339
/// time, in Unix milliseconds.
pub fn since(text: &str, now_ms: i64) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(at.timestamp_millis());
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds_per = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "`{text}`: give a duration like 90s, 30m, 2h or 7d, or an RFC 3339 time"
            ));
        }
    };
    let count: i64 = number.parse().map_err(|_| {
        format!("`{text}`: the duration needs a whole number before its unit (30m)")
    })?;
    let back = count
        .checked_mul(seconds_per * 1_000)
        .ok_or_else(|| format!("`{text}` is too far back"))?;
    Ok(now_ms.saturating_sub(back))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    #[test]
    fn fields_and_free_text_are_read() {
        let query = EventQuery::parse(
            "type:call.ended status:missed sub:db318dee session:call_4f since:1h Refused",
            NOW,
        )
        .unwrap();
        assert_eq!(
            query,
            EventQuery {
                event_type: Some("call.ended".into()),
                state: Some(EventState::Missed),
                subscription: Some("db318dee".into()),
                session: Some("call_4f".into()),
                since_ms: Some(NOW - 3_600_000),
                words: vec!["refused".into()],
            }
        );
        assert!(EventQuery::parse("  ", NOW).unwrap().is_empty());
    }

    #[test]
    fn a_wrong_term_says_what_to_write() {
        let error = EventQuery::parse("status:lost", NOW).unwrap_err();
        assert!(error.contains("delivered, pending, missed"), "{error}");
        let error = EventQuery::parse("colour:red", NOW).unwrap_err();
        assert!(error.contains("type: status:"), "{error}");
        assert!(EventQuery::parse("since:yesterday", NOW).is_err());
        assert!(EventQuery::parse("type:", NOW).is_err());
        // A URL is free text, not a field.
        let query = EventQuery::parse("https://hooks.example.com", NOW).unwrap();
        assert_eq!(query.words, vec!["https://hooks.example.com".to_owned()]);
    }

    #[test]
    fn since_reads_durations_and_times() {
        assert_eq!(since("90s", NOW), Ok(NOW - 90_000));
        assert_eq!(since("30m", NOW), Ok(NOW - 1_800_000));
        assert_eq!(since("7d", NOW), Ok(NOW - 604_800_000));
        let at = chrono::DateTime::parse_from_rfc3339("2027-01-15T08:00:00Z").unwrap();
        assert_eq!(
            since("2027-01-15T08:00:00Z", NOW),
            Ok(at.timestamp_millis())
        );
        assert!(since("2 hours", NOW).is_err());
    }
}
