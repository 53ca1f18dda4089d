//! An event body as an operator reads it on screen: the observer's exact
//! bytes, pretty-printed when they are JSON, with personal data masked
//! unless asked for. Personal data here is what the platform's events carry
//! about a caller: phone numbers (`from_number`, `to_number`, any key
//! ending in `_number`) and presigned links (any key ending in `_url`,
//! whose query is a credential). What is sent on a re-send is never this:
//! it is the exact bytes.

use serde_json::Value;

use crate::redact::{mask_phone, redact_url};

/// The body's lines: pretty JSON (keys sorted), masked
/// unless `reveal`; text that is not JSON as it is (not UTF-8: a note).
pub fn lines(body: &[u8], reveal: bool) -> Vec<String> {
    if body.is_empty() {
        return vec!["(empty body)".to_owned()];
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            if !reveal {
                mask(&mut value);
            }
            serde_json::to_string_pretty(&value)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect()
        }
        Err(_) => match std::str::from_utf8(body) {
            Ok(text) => text.lines().map(str::to_owned).collect(),
            Err(_) => vec![format!("(not UTF-8: {} bytes)", body.len())],
        },
    }
}

/// Masks personal data in place, at any depth (what a capsule export
/// writes unless asked to keep it).
pub fn mask(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                match field {
                    Value::String(text) if key.ends_with("_number") => *text = mask_phone(text),
                    Value::String(text) if key.ends_with("_url") => *text = redact_url(text),
                    other => mask(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL_ENDED: &str = r#"{"event":"call.ended","call":{"call_id":"call_1",
        "from_number":"+15555550189","to_number":"+15555550100",
        "recording_url":"https://files.example/rec/abcdef.wav?X-Sig=secret"},
        "calls":[{"from_number":"+15555550177"}]}"#;

    #[test]
    fn numbers_and_links_are_masked_at_any_depth_unless_revealed() {
        let masked = lines(CALL_ENDED.as_bytes(), false).join("\n");
        assert!(!masked.contains("5555550189"), "{masked}");
        assert!(!masked.contains("5555550177"), "{masked}");
        assert!(!masked.contains("X-Sig"), "{masked}");
        assert!(masked.contains("+1 •••• ••89"), "{masked}");
        assert!(
            masked.contains("https://files.example/rec/abcd…?…"),
            "{masked}"
        );
        let shown = lines(CALL_ENDED.as_bytes(), true).join("\n");
        assert!(shown.contains("+15555550189"), "{shown}");
        assert!(shown.contains("X-Sig=secret"), "{shown}");
    }

    #[test]
    fn json_is_pretty_printed_with_keys_sorted() {
        let shown = lines(br#"{"b":1,"a":{"c":2}}"#, true);
        assert_eq!(
            shown,
            ["{", "  \"a\": {", "    \"c\": 2", "  },", "  \"b\": 1", "}"]
        );
    }

    #[test]
    fn text_that_is_not_json_is_shown_as_it_is() {
        assert_eq!(lines(b"plain\ntext", false), ["plain", "text"]);
        assert_eq!(lines(&[0xff, 0xfe], false), ["(not UTF-8: 2 bytes)"]);
        assert_eq!(lines(b"", false), ["(empty body)"]);
    }
}
