//! A small JSON tokeniser and re-serialiser that keeps every token as
//! written, so a body can be re-rendered the ways a receiver might.

use std::borrow::Cow;

use super::Mistake;

/// A JSON value whose strings and numbers are the original bytes, so that a
/// re-serialisation changes only whitespace and (when asked) key order,
/// exactly like a parse-and-dump that preserves insertion order.
enum Json<'a> {
    Scalar(&'a [u8]),
    Array(Vec<Json<'a>>),
    Object(Vec<Member<'a>>),
}

/// An object member: the key token as written, and the value.
type Member<'a> = (&'a [u8], Json<'a>);

pub(super) struct JsonForms<'a> {
    root: Json<'a>,
}

#[derive(Clone, Copy)]
enum Layout {
    Compact,
    Pretty,
    Spaced,
}

/// Nesting beyond this is not re-serialised (serde_json refuses it anyway).
const MAX_JSON_DEPTH: usize = 128;

impl<'a> JsonForms<'a> {
    pub(super) fn of(body: &'a [u8]) -> Option<Self> {
        // serde_json decides validity (strings, escapes, numbers); the small
        // parser below only has to find the token boundaries.
        serde_json::from_slice::<serde::de::IgnoredAny>(body).ok()?;
        let mut parser = JsonParser { src: body, pos: 0 };
        let root = parser.value(0)?;
        parser.skip_ws();
        (parser.pos == body.len()).then_some(Self { root })
    }

    pub(super) fn render(&self, mistake: Mistake) -> Vec<u8> {
        let (layout, sorted) = match mistake {
            Mistake::BodyPrettyPrinted => (Layout::Pretty, false),
            Mistake::BodyKeysSorted => (Layout::Compact, true),
            Mistake::BodyKeysSortedPretty => (Layout::Pretty, true),
            Mistake::BodySpacedSeparators => (Layout::Spaced, false),
            Mistake::BodySpacedSeparatorsKeysSorted => (Layout::Spaced, true),
            _ => (Layout::Compact, false),
        };
        let mut out = Vec::new();
        write_json(&self.root, layout, sorted, 0, &mut out);
        out
    }
}

fn write_json(value: &Json, layout: Layout, sorted: bool, depth: usize, out: &mut Vec<u8>) {
    match value {
        Json::Scalar(raw) => out.extend_from_slice(raw),
        Json::Array(items) => write_container(
            b'[',
            b']',
            items.iter().map(|v| (None, v)),
            layout,
            sorted,
            depth,
            out,
        ),
        Json::Object(members) => {
            if sorted {
                let mut keyed: Vec<(Cow<[u8]>, &Member)> =
                    members.iter().map(|m| (decoded_key(m.0), m)).collect();
                keyed.sort_by(|a, b| a.0.cmp(&b.0));
                let ordered = keyed.into_iter().map(|(_, (k, v))| (Some(*k), v));
                write_container(b'{', b'}', ordered, layout, sorted, depth, out)
            } else {
                let ordered = members.iter().map(|(k, v)| (Some(*k), v));
                write_container(b'{', b'}', ordered, layout, sorted, depth, out)
            }
        }
    }
}

fn write_container<'v, 'a: 'v>(
    open: u8,
    close: u8,
    entries: impl ExactSizeIterator<Item = (Option<&'a [u8]>, &'v Json<'a>)>,
    layout: Layout,
    sorted: bool,
    depth: usize,
    out: &mut Vec<u8>,
) {
    out.push(open);
    let empty = entries.len() == 0;
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.extend_from_slice(match layout {
                Layout::Compact | Layout::Pretty => b",",
                Layout::Spaced => b", ",
            });
        }
        if let Layout::Pretty = layout {
            newline_indent(depth + 1, out);
        }
        if let Some(key) = key {
            out.extend_from_slice(key);
            out.extend_from_slice(match layout {
                Layout::Compact => b":",
                Layout::Pretty | Layout::Spaced => b": ",
            });
        }
        write_json(value, layout, sorted, depth + 1, out);
    }
    if let (Layout::Pretty, false) = (layout, empty) {
        newline_indent(depth, out);
    }
    out.push(close);
}

fn newline_indent(depth: usize, out: &mut Vec<u8>) {
    out.push(b'\n');
    out.extend(std::iter::repeat_n(b' ', depth * 2));
}

/// The key as text for sorting (escapes decoded); the raw bytes if that fails.
fn decoded_key(raw: &[u8]) -> Cow<'_, [u8]> {
    match serde_json::from_slice::<String>(raw) {
        Ok(text) => Cow::Owned(text.into_bytes()),
        Err(_) => Cow::Borrowed(raw),
    }
}

struct JsonParser<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> JsonParser<'a> {
    fn skip_ws(&mut self) {
        while matches!(self.src.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_ws();
        if self.src.get(self.pos) == Some(&byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json<'a>> {
        if depth > MAX_JSON_DEPTH {
            return None;
        }
        self.skip_ws();
        match *self.src.get(self.pos)? {
            b'{' => {
                self.pos += 1;
                let mut members = Vec::new();
                if self.eat(b'}') {
                    return Some(Json::Object(members));
                }
                loop {
                    self.skip_ws();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    members.push((key, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Some(Json::Object(members));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Some(Json::Array(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(Json::Scalar),
            _ => {
                let start = self.pos;
                while let Some(b) = self.src.get(self.pos) {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
                (self.pos > start).then(|| Json::Scalar(&self.src[start..self.pos]))
            }
        }
    }

    /// A string token including its quotes, as written.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.pos;
        if self.src.get(self.pos) != Some(&b'"') {
            return None;
        }
        self.pos += 1;
        loop {
            match *self.src.get(self.pos)? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return self.src.get(start..self.pos);
                }
                _ => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_and_sorted_forms_match_serde_json_for_sorted_input() {
        // serde_json's Value keeps keys sorted, so on input whose keys are
        // already sorted both must produce the same text.
        let body = br#" { "a" : [ 1 , { } , [ ] , "x\"y" ] , "b" : { "c" : null , "d" : -1.5 } } "#;
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        let forms = JsonForms::of(body).unwrap();
        assert_eq!(
            forms.render(Mistake::BodyPrettyPrinted),
            serde_json::to_vec_pretty(&value).unwrap()
        );
        assert_eq!(
            forms.render(Mistake::BodyCompacted),
            serde_json::to_vec(&value).unwrap()
        );
    }

    #[test]
    fn sorted_forms_sort_by_decoded_key_and_keep_duplicates_in_order() {
        let body = br#"{"b":1,"\u0061":2,"a":3,"A":4}"#;
        let forms = JsonForms::of(body).unwrap();
        assert_eq!(
            forms.render(Mistake::BodyKeysSorted),
            br#"{"A":4,"\u0061":2,"a":3,"b":1}"#
        );
    }

    #[test]
    fn compact_form_keeps_whitespace_inside_strings() {
        let body = b"{ \"k y\" : \"a , b : c\\\" \" }";
        let forms = JsonForms::of(body).unwrap();
        assert_eq!(
            forms.render(Mistake::BodyCompacted),
            b"{\"k y\":\"a , b : c\\\" \"}"
        );
    }
}
