//! The raw capture of what a receiver got: one JSON object per request
//! ([`CaptureEntry`]), written append-only as JSON lines ([`CaptureWriter`])
//! and read back with line numbers ([`CaptureReader`], [`read_file`]).
//!
//! The body is stored byte for byte as base64 (`body_base64`), because a
//! signature covers the exact bytes; `body` repeats it as text, for humans,
//! when it is valid UTF-8. The verdict fields say what the listener decided
//! and answered; a secret never appears, only the label of the one that
//! matched ("current", "previous").
//!
//! Secret header values (`authorization`, cookies, API-key headers and the
//! configured pre-recorded auth header) are replaced by a fingerprint
//! ([`redact_secret_headers`]) unless the operator asks for them, and a
//! capture file is created readable by its owner only (0600).

use super::listen::Forwarded;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::bounded_file;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// What kind of request the listener took it for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A voice-agent delivery: it carries `X-SVC-Signature` (spec 5 C).
    Agents,
    /// A pre-recorded webhook: `{transcript_id, status}`, no signature (spec 6 D).
    Prerecorded,
    /// Neither.
    Other,
}

impl Kind {
    pub fn code(self) -> &'static str {
        match self {
            Self::Agents => "agents",
            Self::Prerecorded => "prerecorded",
            Self::Other => "other",
        }
    }
}

/// The listener's decision about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictCode {
    /// Genuine and new: answered 200 and processed.
    Ok,
    /// Genuine but already seen (same `event_id`, or same transcript id and
    /// status): answered 200, not processed again.
    Duplicate,
    /// Signature missing, malformed, stale or not matching: 401.
    InvalidSignature,
    /// Pre-recorded webhook without the configured auth header value: 401.
    AuthFailed,
    /// Correctly signed but not a JSON event with an `event_id`: 400.
    MalformedPayload,
    /// Not a POST: 405.
    MethodNotAllowed,
    /// A POST of no known shape: 400.
    Unrecognized,
    /// Body over the listener's size limit: 413.
    TooLarge,
    /// Genuine and new, but the store could not keep it: 503, so the
    /// platform retries.
    StoreFailed,
}

impl VerdictCode {
    pub fn code(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Duplicate => "duplicate",
            Self::InvalidSignature => "invalid_signature",
            Self::AuthFailed => "auth_failed",
            Self::MalformedPayload => "malformed_payload",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Unrecognized => "unrecognized",
            Self::TooLarge => "too_large",
            Self::StoreFailed => "store_failed",
        }
    }

    /// Answered 2xx (ok or duplicate).
    pub fn is_accepted(self) -> bool {
        matches!(self, Self::Ok | Self::Duplicate)
    }
}

/// One captured request and the listener's verdict on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureEntry {
    /// RFC 3339, UTC.
    pub received_at: String,
    /// The same instant in Unix seconds (`verify --capture` checks the
    /// signature's clock against it).
    pub received_unix: i64,
    /// Peer `IP:port`.
    pub source: String,
    pub method: String,
    /// Path and query, as requested.
    pub path: String,
    /// Every header as `[name, value]`, names lower-case, in the order
    /// received (repeated names grouped); non-UTF-8 bytes replaced.
    pub headers: Vec<(String, String)>,
    /// The exact body bytes, standard base64 with padding.
    pub body_base64: String,
    /// The body as text when it is valid UTF-8 (for humans; never verify
    /// against it).
    #[serde(default)]
    pub body: Option<String>,
    /// The HTTP status answered.
    pub status: u16,
    pub kind: Kind,
    pub verdict: VerdictCode,
    /// A machine-readable detail of a rejection (`timestamp_too_old`,
    /// `wrong_value`, ...).
    #[serde(default)]
    pub reason: Option<String>,
    /// `event` of a voice-agent payload.
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(default)]
    pub transcript_id: Option<String>,
    /// `status` of a pre-recorded payload (`completed`, `error`).
    #[serde(default)]
    pub transcript_status: Option<String>,
    #[serde(default)]
    pub duplicate: bool,
    /// Label of the secret that verified the signature.
    #[serde(default)]
    pub matched: Option<String>,
    /// A pre-recorded webhook from outside the platform's fixed addresses
    /// (a warning; it was still accepted).
    #[serde(default)]
    pub untrusted_source: bool,
    /// What the app a verified delivery was forwarded to answered
    /// (`listen --forward-to`): the second verdict beside earshot's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded: Option<Forwarded>,
}

impl CaptureEntry {
    /// A request as received (at `received_at`, RFC 3339, and
    /// `received_unix`, from `source`), before any verdict: status 0, kind
    /// `Other`, verdict `Unrecognized`, no details, and no copy of the body
    /// yet.
    pub fn unjudged(
        received_at: String,
        received_unix: i64,
        source: String,
        method: String,
        path: String,
        headers: Vec<(String, String)>,
    ) -> CaptureEntry {
        CaptureEntry {
            received_at,
            received_unix,
            source,
            method,
            path,
            headers,
            body_base64: String::new(),
            body: None,
            status: 0,
            kind: Kind::Other,
            verdict: VerdictCode::Unrecognized,
            reason: None,
            event: None,
            event_id: None,
            transcript_id: None,
            transcript_status: None,
            duplicate: false,
            matched: None,
            untrusted_source: false,
            forwarded: None,
        }
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// `X-SVC-Delivery-Id`: one attempt of a voice-agent delivery (the
    /// emulator's delivery record `id`).
    pub fn delivery_id(&self) -> Option<&str> {
        self.header("x-svc-delivery-id")
    }

    /// The exact body bytes, decoded from `body_base64`.
    pub fn body_bytes(&self) -> Result<Vec<u8>, Base64Error> {
        decode_base64(&self.body_base64)
    }

    /// Stores `bytes` as `body_base64`, and as `body` when they are UTF-8.
    pub(crate) fn set_body(&mut self, bytes: &[u8]) {
        self.body_base64 = encode_base64(bytes);
        self.body = std::str::from_utf8(bytes).ok().map(str::to_owned);
    }
}

/// Headers whose value is a credential wherever they appear.
pub const SECRET_HEADERS: [&str; 7] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
];

/// Replaces the value of every secret header (the [`SECRET_HEADERS`] and
/// `also`, e.g. the configured auth header's name) with a fingerprint: its
/// first four characters and its length, `Bear…(38 chars)`. The signature
/// and every other header stay as received, so `verify --capture` works.
pub fn redact_secret_headers(headers: &mut [(String, String)], also: Option<&str>) {
    for (name, value) in headers.iter_mut() {
        if is_secret_header(name, also) {
            *value = crate::redact::mask(value);
        }
    }
}

/// Whether `name` is one of the [`SECRET_HEADERS`] or `also`.
pub fn is_secret_header(name: &str, also: Option<&str>) -> bool {
    SECRET_HEADERS
        .iter()
        .copied()
        .chain(also)
        .any(|secret| name.eq_ignore_ascii_case(secret))
}

/// A capture file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot open the capture file {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write to the capture file {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read line {line} of the capture file: {source}")]
    Read { line: usize, source: std::io::Error },
    /// Not a regular file, or a line over the per-line limit.
    #[error(transparent)]
    File(#[from] crate::bounded_file::FileError),
    #[error("line {line} of the capture file is not a capture entry: {source}")]
    Parse {
        line: usize,
        source: serde_json::Error,
    },
}

/// Appends entries to a capture file, one JSON line each, flushed at once.
#[derive(Debug)]
pub struct CaptureWriter {
    path: PathBuf,
    file: File,
}

impl CaptureWriter {
    /// Opens `path` for appending, creating it when missing, readable and
    /// writable by its owner only (an existing file keeps its mode). Only
    /// a regular file: a FIFO, a device or a directory is refused at once
    /// (the open does not wait for a FIFO's reader).
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600).custom_flags(libc::O_NONBLOCK);
        }
        let opened = |source| CaptureError::Open {
            path: path.to_owned(),
            source,
        };
        // A FIFO with no reader refuses a non-blocking open (ENXIO): it is
        // judged by what the path is, as any other file that is not regular.
        let file = match options.open(path) {
            Ok(file) => file,
            Err(error) => {
                return match std::fs::metadata(path) {
                    Ok(metadata) if !metadata.is_file() => Err(not_regular(path, &metadata)),
                    _ => Err(opened(error)),
                };
            }
        };
        let metadata = file.metadata().map_err(opened)?;
        if !metadata.is_file() {
            return Err(not_regular(path, &metadata));
        }
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `entry` as one line (a single write) and flushes.
    pub fn append(&mut self, entry: &CaptureEntry) -> Result<(), CaptureError> {
        let mut line = serde_json::to_vec(entry).map_err(|error| CaptureError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(error),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.flush())
            .map_err(|source| CaptureError::Write {
                path: self.path.clone(),
                source,
            })
    }
}

fn not_regular(path: &Path, metadata: &std::fs::Metadata) -> CaptureError {
    CaptureError::File(crate::bounded_file::FileError::NotRegular {
        what: "capture file",
        path: path.to_owned(),
        kind: crate::bounded_file::kind_name(&metadata.file_type()),
    })
}

/// An entry and the line (1-based) it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered {
    pub line: usize,
    pub entry: CaptureEntry,
}

/// Reads capture entries one line at a time, each line at most
/// [`bounded_file::CAPTURE_LINE`]. Blank lines carry nothing and are passed
/// over; any other line that is not an entry is an error naming its line
/// number.
pub struct CaptureReader<R> {
    lines: bounded_file::Lines<R>,
}

impl<R: BufRead> CaptureReader<R> {
    pub fn new(reader: R) -> Self {
        Self::named(reader, Path::new("(stream)"))
    }

    /// Entries of `reader`, named `path` in messages.
    pub fn named(reader: R, path: &Path) -> Self {
        Self {
            lines: bounded_file::Lines::new(reader, path, bounded_file::CAPTURE_LINE),
        }
    }
}

impl<R: BufRead> Iterator for CaptureReader<R> {
    type Item = Result<Numbered, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (line, text) = match self.lines.next()? {
                Ok(numbered) => numbered,
                Err(error) => return Some(Err(error.into())),
            };
            if text.trim().is_empty() {
                continue;
            }
            return Some(
                serde_json::from_str(&text)
                    .map(|entry| Numbered { line, entry })
                    .map_err(|source| CaptureError::Parse { line, source }),
            );
        }
    }
}

/// A captured signed request, ready to be checked again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    /// Its line in the capture file.
    pub line: usize,
    /// The `X-SVC-Signature` value as received.
    pub header: String,
    /// The exact body bytes.
    pub body: Vec<u8>,
    /// When the listener received it (the clock to check it against).
    pub received_unix: i64,
}

/// Reads the capture file and picks the signed request `selector` names.
pub fn replay(path: &Path, selector: &Selector) -> Result<Replay, String> {
    let Numbered { line, entry } = find(path, selector)?;
    let header = entry
        .header(crate::signature::HEADER_NAME)
        .ok_or_else(|| format!("line {line} carries no {}", crate::signature::HEADER_NAME))?
        .to_owned();
    let body = entry
        .body_bytes()
        .map_err(|error| format!("the body_base64 of line {line} is not valid: {error}"))?;
    Ok(Replay {
        line,
        header,
        body,
        received_unix: entry.received_unix,
    })
}

/// Which captured request to replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// The entry on this line of the file (1-based).
    Line(usize),
    /// The last entry with this `event_id`.
    EventId(String),
    /// The last entry that carries an `X-SVC-Signature`.
    LastSigned,
}

/// The entry `selector` names, or why there is none (naming the lines the
/// file does have).
pub fn select(entries: Vec<Numbered>, selector: &Selector) -> Result<Numbered, String> {
    let lines = match (entries.first(), entries.last()) {
        (Some(first), Some(last)) => format!("lines {} to {}", first.line, last.line),
        _ => return Err("the capture file has no entries".to_owned()),
    };
    entries
        .into_iter()
        .rev()
        .find(|numbered| selector.matches(numbered))
        .ok_or_else(|| not_found(selector, &lines))
}

impl Selector {
    /// Whether `numbered` is an entry this selector names.
    fn matches(&self, numbered: &Numbered) -> bool {
        match self {
            Selector::Line(line) => numbered.line == *line,
            Selector::EventId(id) => numbered.entry.event_id.as_deref() == Some(id.as_str()),
            Selector::LastSigned => numbered
                .entry
                .header(crate::signature::HEADER_NAME)
                .is_some(),
        }
    }
}

/// Why no entry matched (`lines`: "lines A to B", the file's range).
fn not_found(selector: &Selector, lines: &str) -> String {
    match selector {
        Selector::Line(line) => {
            format!("no entry on line {line} of the capture file (entries are on {lines})")
        }
        Selector::EventId(id) => format!("no captured request has event_id {id}"),
        Selector::LastSigned => format!(
            "no captured request carries {}",
            crate::signature::HEADER_NAME
        ),
    }
}

/// Every entry of the capture file at `path`; the first bad line is an error.
pub fn read_file(path: &Path) -> Result<Vec<Numbered>, CaptureError> {
    let file = bounded_file::open(path, bounded_file::CAPTURE_LINE)?;
    CaptureReader::named(BufReader::new(file), path).collect()
}

/// The entry `selector` names in the capture file at `path`, read line by
/// line and keeping only the best candidate so far (a capture file may be
/// far larger than memory); the messages are [`select`]'s.
pub fn find(path: &Path, selector: &Selector) -> Result<Numbered, String> {
    let file =
        bounded_file::open(path, bounded_file::CAPTURE_LINE).map_err(|error| error.to_string())?;
    let mut first = None;
    let mut last = None;
    let mut found = None;
    for numbered in CaptureReader::named(BufReader::new(file), path) {
        let numbered = numbered.map_err(|error| error.to_string())?;
        first.get_or_insert(numbered.line);
        last = Some(numbered.line);
        if selector.matches(&numbered) {
            let exact = matches!(selector, Selector::Line(_));
            found = Some(numbered);
            if exact {
                break;
            }
        }
    }
    match (found, first, last) {
        (Some(numbered), _, _) => Ok(numbered),
        (None, Some(first), Some(last)) => {
            Err(not_found(selector, &format!("lines {first} to {last}")))
        }
        _ => Err("the capture file has no entries".to_owned()),
    }
}

/// `body_base64` is not valid base64.
pub type Base64Error = base64::DecodeError;

/// Standard base64 with `=` padding (RFC 4648 §4).
pub fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// The bytes of standard, padded base64 (surrounding whitespace ignored).
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, Base64Error> {
    STANDARD.decode(text.trim())
}

/// An accepted, signed `call.ended` entry carrying `body`: what the
/// capture file's tests write.
#[cfg(test)]
pub(crate) fn accepted_entry(body: &[u8]) -> CaptureEntry {
    let mut entry = CaptureEntry::unjudged(
        "2026-01-01T00:00:00Z".to_owned(),
        1_767_225_600,
        "127.0.0.1:5000".to_owned(),
        "POST".to_owned(),
        "/hook?x=1".to_owned(),
        vec![
            ("x-svc-signature".to_owned(), "t=1,v1=ab".to_owned()),
            ("content-type".to_owned(), "application/json".to_owned()),
        ],
    );
    entry.status = 200;
    entry.kind = Kind::Agents;
    entry.verdict = VerdictCode::Ok;
    entry.event = Some("call.ended".to_owned());
    entry.event_id = Some("e1".to_owned());
    entry.matched = Some("current".to_owned());
    entry.set_body(body);
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(encode_base64(plain.as_bytes()), encoded);
            assert_eq!(decode_base64(encoded).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn base64_round_trips_every_byte_value() {
        let bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for len in 0..bytes.len() {
            let encoded = encode_base64(&bytes[..len]);
            assert_eq!(decode_base64(&encoded).unwrap(), &bytes[..len]);
        }
        assert_eq!(encode_base64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn base64_rejects_bad_input() {
        assert!(decode_base64("Zg=").is_err());
        assert!(decode_base64("Zg=a").is_err());
        assert!(decode_base64("Z*==").is_err());
        assert!(decode_base64("Zg==Zg==").is_err());
        assert!(decode_base64("Z===").is_err());
    }

    #[test]
    fn entries_round_trip_through_a_file_with_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capture.jsonl");
        let first = accepted_entry(b"{ \"b\" : 1,\n\t\"a\": \"\xc3\xa9\" }\r\n");
        let second = accepted_entry(&[0xff, 0x00, b'x']);
        let mut writer = CaptureWriter::open(&path).unwrap();
        writer.append(&first).unwrap();
        drop(writer);
        // Reopening appends rather than truncating.
        CaptureWriter::open(&path).unwrap().append(&second).unwrap();
        let entries = read_file(&path).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].line, 1);
        assert_eq!(entries[1].line, 2);
        assert_eq!(entries[0].entry, first);
        assert_eq!(
            entries[0].entry.body_bytes().unwrap(),
            b"{ \"b\" : 1,\n\t\"a\": \"\xc3\xa9\" }\r\n"
        );
        assert!(entries[0].entry.body.is_some());
        assert_eq!(entries[1].entry.body_bytes().unwrap(), [0xff, 0x00, b'x']);
        assert_eq!(entries[1].entry.body, None);
        assert_eq!(
            entries[0].entry.header("X-SVC-Signature"),
            Some("t=1,v1=ab")
        );
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        let good = serde_json::to_string(&accepted_entry(b"{}")).unwrap();
        let text = format!("{good}\n\n{good}\nnot json\n{good}\n");
        let results: Vec<_> = CaptureReader::new(text.as_bytes()).collect();
        assert_eq!(results.len(), 4);
        assert_eq!(results[1].as_ref().unwrap().line, 3);
        let error = results[2].as_ref().unwrap_err();
        assert!(
            matches!(error, CaptureError::Parse { line: 4, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("line 4"), "{error}");
    }
}
