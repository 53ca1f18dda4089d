//! The lines of a capsule and of its replay's results (documented in
//! [`super`]), and writing and reading them as JSON lines.

use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::CapsuleError;

/// The `format` of a capsule's header.
pub const FORMAT: &str = "earshot-capsule";
/// The `format` of a replay's results header.
pub const RESULTS_FORMAT: &str = "earshot-capsule-replay";
/// The version this build writes and the newest it reads.
pub const VERSION: u32 = 1;

/// One line of a capsule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    Header(Header),
    Subscription(SubscriptionLine),
    Event(EventLine),
}

/// The capsule's first line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// The first and last event's recorded time (Unix ms); `None` when empty.
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    pub subscription: Option<String>,
    pub sessions: Vec<String>,
    pub events: usize,
    /// `masked` or `kept`.
    pub personal_data: String,
    /// Always `dropped`: a replay signs with its own secret.
    pub signatures: String,
}

/// A subscription the capsule's outcomes name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionLine {
    pub id: String,
    /// Without query, fragment or credentials.
    pub url: String,
    pub events: Vec<String>,
}

/// One event with its outcome per subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    pub event_id: String,
    pub event: String,
    pub session_id: String,
    pub occurred: String,
    pub occurred_ms: i64,
    pub received_ms: i64,
    pub headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    pub body_masked: bool,
    pub deliveries: Vec<DeliveryLine>,
}

/// The subscription id an event no subscription's outcome names is
/// replayed and compared under.
pub const NO_SUBSCRIPTION: &str = "(none)";

impl EventLine {
    /// Its deliveries; an event with none (no subscription but the
    /// observer's listened) as one `unknown` under [`NO_SUBSCRIPTION`], so
    /// a replay to one URL still sends it.
    pub fn deliveries_or_unknown(&self) -> Vec<DeliveryLine> {
        if !self.deliveries.is_empty() {
            return self.deliveries.clone();
        }
        vec![DeliveryLine {
            subscription_id: NO_SUBSCRIPTION.to_owned(),
            state: "unknown".to_owned(),
            diagnosis: None,
            attempts: Vec::new(),
        }]
    }

    /// The bytes a replay sends.
    pub fn body_bytes(&self) -> Vec<u8> {
        match (&self.body, &self.body_base64) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(encoded)) => {
                crate::receiver::capture::decode_base64(encoded).unwrap_or_default()
            }
            (None, None) => Vec::new(),
        }
    }
}

/// One subscription's side of an event, as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryLine {
    pub subscription_id: String,
    /// `delivered`, `missed`, `recovered`, `pending` or `unknown`.
    pub state: String,
    /// The last failure's diagnosis (`401 invalid signature`), if any.
    pub diagnosis: Option<String>,
    pub attempts: Vec<AttemptLine>,
}

/// One attempt the platform recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptLine {
    pub attempt: u32,
    pub at_ms: i64,
    /// `delivered`, `failed` or `pending`.
    pub status: String,
    pub http_status_code: Option<u16>,
    pub error: Option<String>,
    pub next_retry_ms: Option<i64>,
}

/// A capsule, read or about to be written.
#[derive(Clone, Debug, PartialEq)]
pub struct Capsule {
    pub header: Header,
    pub subscriptions: Vec<SubscriptionLine>,
    pub events: Vec<EventLine>,
}

/// One line of a replay's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResultLine {
    Replay(ReplayHeader),
    Delivery(ReplayedDelivery),
}

/// The results' first line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayHeader {
    pub format: String,
    pub version: u32,
    pub speed: f64,
    /// The URL every event went to (query left out), or `as-recorded`.
    pub target: String,
    pub deliveries: usize,
    /// The SHA-256 of the capsule file replayed ([`digest`]), so results
    /// are never compared with another capsule.
    #[serde(default)]
    pub capsule_sha256: Option<String>,
}

/// One event's replay to one subscription's receiver.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayedDelivery {
    pub event_id: String,
    pub event: String,
    pub subscription_id: String,
    /// `delivered` or `missed`.
    pub state: String,
    pub attempts: Vec<ReplayedAttempt>,
}

impl ReplayedDelivery {
    pub fn delivered(&self) -> bool {
        self.state == "delivered"
    }
}

/// One replayed attempt; times in ms from the replay's start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayedAttempt {
    pub planned_ms: i64,
    pub sent_ms: i64,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    pub latency_ms: i64,
}

/// A replay's results, read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub header: ReplayHeader,
    pub deliveries: Vec<ReplayedDelivery>,
}

/// The SHA-256 of the file at `path`, in hex.
pub fn digest(path: &Path) -> Result<String, CapsuleError> {
    use sha2::Digest;
    let bytes = std::fs::read(path).map_err(|source| CapsuleError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(sha2::Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Writes `capsule` to `path` (replacing it).
pub fn write(capsule: &Capsule, path: &Path) -> Result<(), CapsuleError> {
    let lines = std::iter::once(Line::Header(capsule.header.clone()))
        .chain(
            capsule
                .subscriptions
                .iter()
                .cloned()
                .map(Line::Subscription),
        )
        .chain(capsule.events.iter().cloned().map(Line::Event));
    write_lines(path, lines)
}

/// Writes a replay's `results` to `path` (replacing it).
pub fn write_results(results: &Results, path: &Path) -> Result<(), CapsuleError> {
    let lines = std::iter::once(ResultLine::Replay(results.header.clone()))
        .chain(results.deliveries.iter().cloned().map(ResultLine::Delivery));
    write_lines(path, lines)
}

fn write_lines<T: Serialize>(
    path: &Path,
    lines: impl Iterator<Item = T>,
) -> Result<(), CapsuleError> {
    let failed = |source| CapsuleError::Write {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::create(path).map_err(failed)?;
    let mut out = BufWriter::new(file);
    for line in lines {
        serde_json::to_writer(&mut out, &line).map_err(|error| failed(error.into()))?;
        out.write_all(b"\n").map_err(failed)?;
    }
    out.flush().map_err(failed)
}

/// Reads the capsule at `path`.
pub fn read(path: &Path) -> Result<Capsule, CapsuleError> {
    let mut lines = read_lines::<Line>(path)?.into_iter();
    let header = match lines.next() {
        Some((_, Line::Header(header))) => header,
        _ => return Err(malformed(path, 1, format!("no {FORMAT} header"))),
    };
    check_version(path, FORMAT, &header.format, header.version)?;
    let mut capsule = Capsule {
        header,
        subscriptions: Vec::new(),
        events: Vec::new(),
    };
    for (number, line) in lines {
        match line {
            Line::Subscription(subscription) => capsule.subscriptions.push(subscription),
            Line::Event(event) => capsule.events.push(event),
            Line::Header(_) => return Err(malformed(path, number, "a second header".into())),
        }
    }
    Ok(capsule)
}

/// Reads a replay's results at `path`.
pub fn read_results(path: &Path) -> Result<Results, CapsuleError> {
    let mut lines = read_lines::<ResultLine>(path)?.into_iter();
    let header = match lines.next() {
        Some((_, ResultLine::Replay(header))) => header,
        _ => return Err(malformed(path, 1, format!("no {RESULTS_FORMAT} header"))),
    };
    check_version(path, RESULTS_FORMAT, &header.format, header.version)?;
    let mut deliveries = Vec::new();
    for (number, line) in lines {
        match line {
            ResultLine::Delivery(delivery) => deliveries.push(delivery),
            ResultLine::Replay(_) => {
                return Err(malformed(path, number, "a second header".into()));
            }
        }
    }
    Ok(Results { header, deliveries })
}

fn check_version(path: &Path, want: &str, found: &str, version: u32) -> Result<(), CapsuleError> {
    if found != want {
        return Err(malformed(path, 1, format!("not an {want} file ({found})")));
    }
    if version > VERSION {
        return Err(CapsuleError::Newer {
            path: path.to_owned(),
            found: found.to_owned(),
            version,
        });
    }
    Ok(())
}

/// The non-empty lines of `path`, parsed, with their line numbers.
fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<(usize, T)>, CapsuleError> {
    let failed = |source| CapsuleError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(failed)?;
    let mut parsed = Vec::new();
    for (index, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(failed)?;
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(&line)
            .map_err(|error| malformed(path, index + 1, error.to_string()))?;
        parsed.push((index + 1, value));
    }
    Ok(parsed)
}

fn malformed(path: &Path, line: usize, why: String) -> CapsuleError {
    CapsuleError::Malformed {
        path: path.to_owned(),
        line,
        why,
    }
}

/// A header of `events` events, masked, with no window (for tests).
#[cfg(test)]
pub(crate) fn test_header(events: usize) -> Header {
    Header {
        format: FORMAT.into(),
        version: VERSION,
        first_ms: None,
        last_ms: None,
        subscription: None,
        sessions: vec![],
        events,
        personal_data: "masked".into(),
        signatures: "dropped".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capsule() -> Capsule {
        Capsule {
            header: Header {
                first_ms: Some(1_000),
                last_ms: Some(2_000),
                ..test_header(1)
            },
            subscriptions: vec![SubscriptionLine {
                id: "sub_1".into(),
                url: "http://127.0.0.1:9/hook".into(),
                events: vec!["call.ended".into()],
            }],
            events: vec![EventLine {
                event_id: "evt_1".into(),
                event: "call.ended".into(),
                session_id: "call_1".into(),
                occurred: "1970-01-01T00:00:01.000Z".into(),
                occurred_ms: 1_000,
                received_ms: 1_010,
                headers: vec![("content-type".into(), "application/json".into())],
                body: None,
                body_base64: Some("/w==".into()),
                body_masked: false,
                deliveries: vec![],
            }],
        }
    }

    #[test]
    fn a_capsule_reads_back_as_written_and_each_line_says_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        write(&capsule(), &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let kinds: Vec<String> = text
            .lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line).unwrap()["kind"].to_string()
            })
            .collect();
        assert_eq!(kinds, ["\"header\"", "\"subscription\"", "\"event\""]);
        let back = read(&path).unwrap();
        assert_eq!(back, capsule());
        assert_eq!(back.events[0].body_bytes(), [0xff]);
    }

    #[test]
    fn a_newer_version_or_another_file_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let mut newer = capsule();
        newer.header.version = VERSION + 1;
        write(&newer, &path).unwrap();
        assert!(matches!(read(&path), Err(CapsuleError::Newer { .. })));
        std::fs::write(&path, "{\"kind\":\"header\"}\n").unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
        assert!(read_results(&path).is_err());
    }
}
