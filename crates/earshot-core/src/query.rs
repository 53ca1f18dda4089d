//! The one filter language of earshot's lists (`earshot events`, every
//! table of the console): whitespace-separated terms, all of which must
//! hold, each a `field:value` (the fields are the list's own) or a free
//! word.
//!
//! Owns splitting the terms, telling a field from a word (a URL, a clock
//! time or any word whose part before `:` is not a name stays a word),
//! `since:` values, and the errors, which name the fields the list has.
//! What a field means, and how a word matches, is the list's.

/// A field a list knows: its name and the other names it answers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldName {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
}

impl FieldName {
    pub const fn new(name: &'static str) -> FieldName {
        FieldName { name, aliases: &[] }
    }

    /// The same field, also answering to `aliases`.
    pub const fn or(self, aliases: &'static [&'static str]) -> FieldName {
        FieldName { aliases, ..self }
    }

    fn answers(&self, typed: &str) -> bool {
        self.name.eq_ignore_ascii_case(typed)
            || self
                .aliases
                .iter()
                .any(|alias| alias.eq_ignore_ascii_case(typed))
    }
}

/// One term of a filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term<'t> {
    /// `field:value`: `name` is the field's own name, whichever of its
    /// names was typed; `term` the term as typed (for errors).
    Field {
        name: &'static str,
        value: &'t str,
        term: &'t str,
    },
    /// Any other word, lower-cased.
    Word(String),
}

/// The most terms a query may hold: more is a paste gone wrong, and each
/// term is a condition the store evaluates per row.
pub const MAX_TERMS: usize = 32;

/// The longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 1_000;

/// The terms of `text`, with `fields` the list's fields; an error says
/// which term is wrong and what to write instead. A query of more than
/// [`MAX_TERMS`] terms or [`MAX_QUERY_CHARS`] characters is refused.
pub fn terms<'t>(text: &'t str, fields: &[FieldName]) -> Result<Vec<Term<'t>>, String> {
    let count = text.split_whitespace().count();
    if count > MAX_TERMS {
        return Err(format!(
            "the query has {count} terms; at most {MAX_TERMS} (narrow it with fields: type:, status:, sub:, since:)"
        ));
    }
    let chars = text.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(format!(
            "the query is {chars} characters long; at most {MAX_QUERY_CHARS}"
        ));
    }
    let mut terms = Vec::new();
    for term in text.split_whitespace() {
        let named = term.split_once(':').filter(|(field, value)| {
            !field.is_empty()
                && field.chars().all(|c| c.is_ascii_alphabetic())
                // `https://…` is a word, not the field `https`.
                && !value.starts_with("//")
        });
        let Some((typed, value)) = named else {
            terms.push(Term::Word(fold(term).into_owned()));
            continue;
        };
        let Some(field) = fields.iter().find(|field| field.answers(typed)) else {
            return Err(unknown_field(typed, fields));
        };
        if value.is_empty() {
            return Err(format!("`{term}`: give a value after `{typed}:`"));
        }
        terms.push(Term::Field {
            name: field.name,
            value,
            term,
        });
    }
    Ok(terms)
}

/// "unknown field `foo`: try status, type, sub, since".
pub fn unknown_field(typed: &str, fields: &[FieldName]) -> String {
    if fields.is_empty() {
        return format!("unknown field `{typed}`: this list takes free text only");
    }
    let names: Vec<&str> = fields.iter().map(|field| field.name).collect();
    format!("unknown field `{typed}`: try {}", names.join(", "))
}

/// "`status:lost`: status is one of delivered, pending, missed".
pub fn not_one_of(term: &str, field: &str, values: &[&str]) -> String {
    format!("`{term}`: {field} is one of {}", values.join(", "))
}

/// A `since:` value: a duration back from now, or a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// Milliseconds back from now (`90s`, `30m`, `2h`, `7d`, `1h30m`: the
    /// one grammar of [`crate::duration_text::parse`]).
    Ago(i64),
    /// Unix milliseconds (an RFC 3339 time).
    At(i64),
}

impl Since {
    pub fn parse(text: &str) -> Result<Since, String> {
        let text = text.trim();
        if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
            return Ok(Since::At(at.timestamp_millis()));
        }
        match crate::duration_text::parse(text) {
            Ok(back) => i64::try_from(back.as_millis())
                .map(Since::Ago)
                .map_err(|_| format!("`{text}` is too far back")),
            Err(crate::duration_text::DurationError::TooLong(_)) => {
                Err(format!("`{text}` is too far back"))
            }
            Err(_) => Err(format!(
                "`{text}`: give a duration like 90s, 30m, 2h, 7d or 1h30m, or an RFC 3339 time"
            )),
        }
    }

    /// The moment, in Unix milliseconds, at `now_ms`.
    pub fn at(self, now_ms: i64) -> i64 {
        match self {
            Since::Ago(back) => now_ms.saturating_sub(back),
            Since::At(at) => at,
        }
    }
}

/// A duration back from `now_ms` or an RFC 3339 time ([`Since`]), in Unix
/// milliseconds.
pub fn since(text: &str, now_ms: i64) -> Result<i64, String> {
    Since::parse(text).map(|since| since.at(now_ms))
}

/// Free text's case folding: Rust's Unicode lower case (`É` → `é`), for the
/// query's words and what they are compared with, in memory and in the
/// store (its SQL function `fold`); SQLite's own `lower` folds ASCII only.
pub fn fold(text: &str) -> std::borrow::Cow<'_, str> {
    if text
        .bytes()
        .any(|byte| byte.is_ascii_uppercase() || !byte.is_ascii())
    {
        std::borrow::Cow::Owned(text.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;
    const FIELDS: [FieldName; 3] = [
        FieldName::new("status").or(&["state"]),
        FieldName::new("sub"),
        FieldName::new("since"),
    ];

    fn field<'t>(name: &'static str, value: &'t str, term: &'t str) -> Term<'t> {
        Term::Field { name, value, term }
    }

    #[test]
    fn fields_aliases_and_words_are_told_apart() {
        let terms = terms(
            "State:failed sub:db31 Refused https://x.io/a 09:26:53 :x",
            &FIELDS,
        );
        assert_eq!(
            terms.unwrap(),
            [
                field("status", "failed", "State:failed"),
                field("sub", "db31", "sub:db31"),
                Term::Word("refused".into()),
                Term::Word("https://x.io/a".into()),
                Term::Word("09:26:53".into()),
                Term::Word(":x".into()),
            ]
        );
        assert_eq!(super::terms("  ", &FIELDS), Ok(Vec::new()));
    }

    #[test]
    fn an_unknown_field_names_the_fields_the_list_has() {
        assert_eq!(
            terms("colour:red", &FIELDS),
            Err("unknown field `colour`: try status, sub, since".into())
        );
        assert_eq!(
            terms("status:x", &[]),
            Err("unknown field `status`: this list takes free text only".into())
        );
    }

    #[test]
    fn a_query_past_its_bounds_is_refused_saying_the_bound() {
        let many = vec!["word"; MAX_TERMS + 1].join(" ");
        let error = terms(&many, &FIELDS).unwrap_err();
        assert!(error.contains("33 terms; at most 32"), "{error}");
        assert!(terms(&vec!["word"; MAX_TERMS].join(" "), &FIELDS).is_ok());
        let long = "é".repeat(MAX_QUERY_CHARS + 1);
        let error = terms(&long, &FIELDS).unwrap_err();
        assert!(error.contains("1001 characters"), "{error}");
        assert!(terms(&"é".repeat(MAX_QUERY_CHARS), &FIELDS).is_ok());
    }

    #[test]
    fn a_field_without_a_value_says_to_give_one() {
        assert_eq!(
            terms("sub:", &FIELDS),
            Err("`sub:`: give a value after `sub:`".into())
        );
    }

    #[test]
    fn since_reads_durations_and_times() {
        assert_eq!(since("90s", NOW), Ok(NOW - 90_000));
        assert_eq!(since("30m", NOW), Ok(NOW - 1_800_000));
        assert_eq!(since("30min", NOW), Ok(NOW - 1_800_000));
        assert_eq!(since("2h", NOW), Ok(NOW - 7_200_000));
        assert_eq!(since("7d", NOW), Ok(NOW - 604_800_000));
        let at = chrono::DateTime::parse_from_rfc3339("2027-01-15T08:00:00Z").unwrap();
        assert_eq!(
            Since::parse("2027-01-15T08:00:00Z"),
            Ok(Since::At(at.timestamp_millis()))
        );
        assert_eq!(
            Since::parse("2027-01-15T08:00:00Z").unwrap().at(0),
            at.timestamp_millis()
        );
        for wrong in ["2 hours", "h", "yesterday", "5w"] {
            assert!(Since::parse(wrong).is_err(), "{wrong}");
        }
        assert!(
            since("99999999999999999d", NOW)
                .unwrap_err()
                .contains("too far back")
        );
    }
}
