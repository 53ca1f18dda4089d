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
//!
//! The terms are split and told apart by [`crate::query`], the language
//! every console table filters with too; this module says what each
//! field means for events (the store applies it).

use crate::query::{self, FieldName, Term};
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

/// The fields with the other names they answer to.
const NAMES: [FieldName; 5] = [
    FieldName::new("type"),
    FieldName::new("status").or(&["state"]),
    FieldName::new("sub"),
    FieldName::new("session").or(&["call"]),
    FieldName::new("since"),
];

impl EventQuery {
    /// Parses `text` at `now_ms`; an error says which term is wrong and
    /// what it should be.
    pub fn parse(text: &str, now_ms: i64) -> Result<EventQuery, String> {
        let mut query = EventQuery::default();
        for term in query::terms(text, &NAMES)? {
            let (name, value, term) = match term {
                Term::Word(word) => {
                    query.words.push(word);
                    continue;
                }
                Term::Field { name, value, term } => (name, value, term),
            };
            match name {
                "type" => query.event_type = Some(value.to_owned()),
                "status" => {
                    query.state = Some(EventState::parse(value).ok_or_else(|| {
                        let known: Vec<&str> =
                            EventState::ALL.iter().map(|state| state.as_str()).collect();
                        query::not_one_of(term, "status", &known)
                    })?);
                }
                "sub" => query.subscription = Some(value.to_owned()),
                "session" => query.session = Some(value.to_owned()),
                _ => query.since_ms = Some(since(value, now_ms)?),
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
    query::since(text, now_ms)
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
        assert_eq!(
            error,
            "unknown field `colour`: try type, status, sub, session, since"
        );
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
