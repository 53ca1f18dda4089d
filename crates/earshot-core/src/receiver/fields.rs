//! What the receiver reads of a body: the few top-level strings its
//! verdicts and its display use (`event`, `event_id`, `transcript_id`,
//! `status`), scanned in one pass without building the document.
//!
//! Every other value is skipped with [`IgnoredAny`], which keeps nothing
//! (serde_json skips a nested value without recursing, with a byte of
//! scratch per level), so reading any body, whoever sent it, costs at most
//! the size of those four strings and its depth in bytes. A
//! `serde_json::Value` of an unsigned 10 MiB `[0,0,…]` would take over
//! 200 MB, so the receiver builds none (docs/decisions.md, "Receiver").

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The top-level fields of a JSON object body that the receiver uses;
/// the last of a repeated key wins, as in a parsed document.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Fields {
    pub event: Option<String>,
    pub event_id: Option<String>,
    /// `event_id` is present, whatever its type (an agents-shaped body).
    pub has_event_id: bool,
    pub transcript_id: Option<String>,
    pub status: Option<String>,
}

impl Fields {
    /// The fields of `body` when it is a JSON object; `None` otherwise.
    /// A value of another type than a string reads as absent.
    pub fn read(body: &[u8]) -> Option<Fields> {
        serde_json::from_slice(body).ok()
    }
}

/// What a body is, as far as accepting a signed delivery needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A JSON object.
    Object(Fields),
    /// JSON, but not an object.
    OtherJson,
    /// Not JSON.
    NotJson,
}

impl Shape {
    /// Reads `body` (a second, skipping pass tells JSON that is not an
    /// object from what is not JSON at all).
    pub fn of(body: &[u8]) -> Shape {
        match Fields::read(body) {
            Some(fields) => Shape::Object(fields),
            None if serde_json::from_slice::<IgnoredAny>(body).is_ok() => Shape::OtherJson,
            None => Shape::NotJson,
        }
    }

    /// The fields, when the body is an object.
    pub fn fields(&self) -> Option<&Fields> {
        match self {
            Shape::Object(fields) => Some(fields),
            Shape::OtherJson | Shape::NotJson => None,
        }
    }
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<Key>()? {
            let slot = match key {
                Key::Event => &mut fields.event,
                Key::EventId => {
                    fields.has_event_id = true;
                    &mut fields.event_id
                }
                Key::TranscriptId => &mut fields.transcript_id,
                Key::Status => &mut fields.status,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value::<Text>()?.0;
        }
        Ok(fields)
    }
}

/// A key of the top-level object, matched without keeping it.
enum Key {
    Event,
    EventId,
    TranscriptId,
    Status,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "event" => Key::Event,
            "event_id" => Key::EventId,
            "transcript_id" => Key::TranscriptId,
            "status" => Key::Status,
            _ => Key::Other,
        })
    }
}

/// A value kept when it is a string; any other value is skipped.
struct Text(Option<String>);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text, E> {
        Ok(Text(Some(text.to_owned())))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Text, E> {
        Ok(Text(Some(text)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What the receiver read from a parsed document before.
    fn from_value(body: &[u8]) -> Option<Fields> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let object = value.as_object()?;
        let text = |name: &str| object.get(name).and_then(Value::as_str).map(str::to_owned);
        Some(Fields {
            event: text("event"),
            event_id: text("event_id"),
            has_event_id: object.contains_key("event_id"),
            transcript_id: text("transcript_id"),
            status: text("status"),
        })
    }

    #[test]
    fn the_fields_are_what_a_parsed_document_says() {
        let bodies: [&[u8]; 16] = [
            br#"{"event_id":"e1","event":"call.ended","call":{"call_id":"c"}}"#,
            br#"{"transcript_id":"t1","status":"completed"}"#,
            br#"{"transcript_id":5,"status":"completed","event_id":null}"#,
            br#"{"event_id":"a","event_id":"b"}"#,
            br#"{"event_id":{"nested":["x",{"event_id":"deep"}]},"event":"e\u00e9\n"}"#,
            br#"{"ev\u0065nt_id":"escaped key"}"#,
            br#" { "status" : [1, 2.5, true, null, "s"] } "#,
            br#"{}"#,
            br#"[]"#,
            br#"[{"event_id":"in an array"}]"#,
            br#""event_id""#,
            br#"12"#,
            br#"{"event_id":"e1""#,
            br#"{"event_id":"e1"} trailing"#,
            b"\xff\xfe",
            b"",
        ];
        for body in bodies {
            assert_eq!(
                Fields::read(body),
                from_value(body),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn shapes_tell_objects_other_json_and_not_json_apart() {
        assert!(matches!(
            Shape::of(br#"{"event_id":"e"}"#),
            Shape::Object(_)
        ));
        assert_eq!(Shape::of(b"[1,2]"), Shape::OtherJson);
        assert_eq!(Shape::of(b"\"text\""), Shape::OtherJson);
        assert_eq!(Shape::of(b"[1,2"), Shape::NotJson);
        assert_eq!(Shape::of(b"not json"), Shape::NotJson);
        assert_eq!(Shape::of(b""), Shape::NotJson);
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursing() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(Shape::of(deep.as_bytes()), Shape::OtherJson);
        let unclosed = "[".repeat(100_000);
        assert_eq!(Shape::of(unclosed.as_bytes()), Shape::NotJson);
        let value = format!(
            r#"{{"x":{}{},"event_id":"e"}}"#,
            "{\"a\":[".repeat(50_000),
            "]}".repeat(50_000)
        );
        let fields = Fields::read(value.as_bytes()).expect("an object");
        assert_eq!(fields.event_id.as_deref(), Some("e"));
    }
}
