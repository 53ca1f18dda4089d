//! Downloading a session's recording or transcript from its presigned link:
//! streamed to a temporary file in the target directory chunk by chunk
//! (never whole in memory), then renamed into place, refusing to replace an
//! existing file unless asked. Errors name the link only redacted
//! ([`crate::redact::redact_url`]): the URL is personal data.
//!
//! A presigned link names the object itself, so no redirect is followed: a
//! 3xx is an error naming where it pointed (redacted, never the query),
//! and the link's credentials never reach another host or a loopback
//! service. Each download has a total deadline ([`Timeouts::deadline`]):
//! 60 s plus 1 s per MiB the answer announces (1 MiB/s at worst, far below
//! any storage host), at most one hour; an answer with no `Content-Length`
//! gets a fixed 10 min, since its size is unknown. Between the request and
//! its headers, and between two chunks, at most 60 s may pass
//! ([`Timeouts::idle`]). A download stopped for any reason leaves no
//! temporary file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::{Instant, timeout, timeout_at};

use super::session_view::{Link, expiry_phrase};

/// The most one artifact may hold: far above an hour-long recording.
pub const MAX_ARTIFACT_BYTES: u64 = 8 * 1024 * 1024 * 1024;
const MIB: u64 = 1024 * 1024;

/// How long one download may take; [`Timeouts::default`] is what the
/// module documentation states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// The most silence: before the answer's headers, between two chunks.
    pub idle: Duration,
    /// The deadline for an answer that announces `Content-Length` ...
    pub base: Duration,
    /// ... plus this per MiB announced (a started MiB counts) ...
    pub per_mib: Duration,
    /// ... at most this.
    pub cap: Duration,
    /// The deadline for an answer of unknown length.
    pub unknown_length: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            idle: Duration::from_secs(60),
            base: Duration::from_secs(60),
            per_mib: Duration::from_secs(1),
            cap: Duration::from_secs(60 * 60),
            unknown_length: Duration::from_secs(10 * 60),
        }
    }
}

impl Timeouts {
    /// The whole download's deadline, from the request on, for an answer
    /// announcing `length` bytes (`None`: not announced).
    pub fn deadline(&self, length: Option<u64>) -> Duration {
        let Some(length) = length else {
            return self.unknown_length;
        };
        u32::try_from(length.div_ceil(MIB))
            .ok()
            .and_then(|mib| self.per_mib.checked_mul(mib))
            .and_then(|scaled| self.base.checked_add(scaled))
            .map_or(self.cap, |deadline| deadline.min(self.cap))
    }
}

/// Why a download did not land on disk.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error(
        "the {kind} link {when}: the host answered {status} ({shown}); presigned links work for one hour after their event"
    )]
    Expired {
        kind: String,
        status: u16,
        /// "expired 12 min ago (at 2026-11-23 13:05:00Z)".
        when: String,
        shown: String,
    },
    #[error("the host refused the {kind} link with {status} ({shown}){hint}")]
    Refused {
        kind: String,
        status: u16,
        shown: String,
        hint: String,
    },
    #[error(
        "the {kind} link ({shown}) redirected with {status} to {to}: a presigned link needs no redirect, so none is followed"
    )]
    Redirected {
        kind: String,
        status: u16,
        shown: String,
        /// Where it pointed, redacted; "nowhere usable" without a Location.
        to: String,
    },
    #[error(
        "the {kind} download stalled: nothing came for {} ({shown}); nothing kept",
        crate::duration_text::of(*idle)
    )]
    Stalled {
        kind: String,
        shown: String,
        idle: Duration,
    },
    #[error(
        "the {kind} download did not finish within its deadline of {} ({written} of {} bytes came) ({shown}); nothing kept",
        crate::duration_text::of(*deadline),
        total.map_or_else(|| "unknown".to_owned(), |total| total.to_string())
    )]
    TooSlow {
        kind: String,
        shown: String,
        deadline: Duration,
        written: u64,
        total: Option<u64>,
    },
    #[error("cannot fetch the {kind} link ({shown}): {detail}")]
    Network {
        kind: String,
        shown: String,
        detail: String,
    },
    #[error("the {kind} is larger than {MAX_ARTIFACT_BYTES} bytes; not downloaded")]
    TooLarge { kind: String },
    #[error("{} already exists: pass --force to replace it", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
}

/// One finished download.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Downloaded {
    pub kind: String,
    pub path: PathBuf,
    pub bytes: u64,
}

/// The HTTP client for presigned links: no API key, no redirect followed,
/// 10 s to connect; [`download`] keeps the idle timeout and the deadline.
pub fn client() -> Result<reqwest::Client, DownloadError> {
    earshot_http::client_builder()
        .user_agent(concat!("earshot/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| DownloadError::Client(error.without_url().to_string()))
}

/// "expired 12 min ago (at 2026-11-23 13:05:00Z)" or "expires in …".
pub fn when(link: &Link, now: DateTime<Utc>) -> String {
    match link.expires_at {
        Some(at) => format!(
            "{} (at {})",
            expiry_phrase(at, now),
            crate::clock_text::utc_datetime(at.timestamp_millis())
        ),
        None => "has no known expiry".to_owned(),
    }
}

/// Streams `link` into `dir` as `{session_id}-{kind}.{ext}` within
/// `timeouts`; `progress` is told the bytes written so far and the total
/// when the server said it.
pub async fn download(
    http: &reqwest::Client,
    link: &Link,
    session_id: &str,
    dir: &Path,
    force: bool,
    timeouts: Timeouts,
    mut progress: impl FnMut(u64, Option<u64>),
) -> Result<Downloaded, DownloadError> {
    let started = Instant::now();
    let mut response = answer(http, link, timeouts.idle).await?;
    let kind = link.kind.clone();
    let total = response.content_length();
    if total.is_some_and(|total| total > MAX_ARTIFACT_BYTES) {
        return Err(DownloadError::TooLarge { kind });
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let path = dir.join(format!(
        "{}-{}.{}",
        safe_name(session_id),
        safe_name(&kind),
        extension(content_type, &link.url)
    ));
    if !force && path.exists() {
        return Err(DownloadError::Exists(path));
    }
    let io = |source: std::io::Error| DownloadError::Io {
        path: path.clone(),
        source,
    };
    // Dropped on every early return: the temporary file goes with it.
    let mut file = tempfile::Builder::new()
        .prefix(".earshot-download-")
        .tempfile_in(dir)
        .map_err(io)?;
    let deadline = timeouts.deadline(total);
    let mut written: u64 = 0;
    progress(0, total);
    let body = stream_to(
        &mut response,
        &mut file,
        link,
        &path,
        timeouts.idle,
        &mut written,
        |done| progress(done, total),
    );
    match timeout_at(started + deadline, body).await {
        Ok(streamed) => streamed?,
        Err(_) => {
            return Err(DownloadError::TooSlow {
                kind,
                shown: link.shown(),
                deadline,
                written,
                total,
            });
        }
    }
    file.flush().map_err(io)?;
    file.as_file().sync_all().map_err(io)?;
    persist(file, &path, force)?;
    Ok(Downloaded {
        kind,
        path,
        bytes: written,
    })
}

/// The link's answer once its headers came (within `idle`), if it is a
/// 2xx; a 3xx, 4xx or 5xx as the error it means.
async fn answer(
    http: &reqwest::Client,
    link: &Link,
    idle: Duration,
) -> Result<reqwest::Response, DownloadError> {
    let response = match timeout(idle, http.get(&link.url).send()).await {
        Ok(sent) => sent.map_err(|error| network(link, error))?,
        Err(_) => return Err(stalled(link, idle)),
    };
    let status = response.status().as_u16();
    if (300..400).contains(&status) {
        let location = response.headers().get(reqwest::header::LOCATION);
        return Err(DownloadError::Redirected {
            kind: link.kind.clone(),
            status,
            shown: link.shown(),
            to: redirect_target(&link.url, location),
        });
    }
    // S3 answers 403 to an expired link; a host that forgot the file
    // (404, 410) past the expiry is the same story for the operator.
    if (400..500).contains(&status) && link.expired(Utc::now()) {
        return Err(DownloadError::Expired {
            kind: link.kind.clone(),
            status,
            when: when(link, Utc::now()),
            shown: link.shown(),
        });
    }
    if !(200..300).contains(&status) {
        let hint = match link.expires_at {
            Some(at) if status == 403 => format!(
                "; by its event it should work until {}",
                crate::clock_text::utc_datetime(at.timestamp_millis())
            ),
            _ => String::new(),
        };
        return Err(DownloadError::Refused {
            kind: link.kind.clone(),
            status,
            shown: link.shown(),
            hint,
        });
    }
    Ok(response)
}

/// Writes the body's chunks to `file`, counting them in `written`; at most
/// `idle` between two chunks.
async fn stream_to(
    response: &mut reqwest::Response,
    file: &mut tempfile::NamedTempFile,
    link: &Link,
    path: &Path,
    idle: Duration,
    written: &mut u64,
    mut progress: impl FnMut(u64),
) -> Result<(), DownloadError> {
    loop {
        let chunk = match timeout(idle, response.chunk()).await {
            Ok(chunk) => chunk.map_err(|error| network(link, error))?,
            Err(_) => return Err(stalled(link, idle)),
        };
        let Some(chunk) = chunk else {
            return Ok(());
        };
        *written += chunk.len() as u64;
        if *written > MAX_ARTIFACT_BYTES {
            return Err(DownloadError::TooLarge {
                kind: link.kind.clone(),
            });
        }
        file.write_all(&chunk).map_err(|source| DownloadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        progress(*written);
    }
}

/// Renames the finished temporary file to `path`, replacing a file there
/// only with `force`.
fn persist(file: tempfile::NamedTempFile, path: &Path, force: bool) -> Result<(), DownloadError> {
    let io = |source: std::io::Error| DownloadError::Io {
        path: path.to_path_buf(),
        source,
    };
    if force {
        file.persist(path).map_err(|error| io(error.error))?;
    } else {
        file.persist_noclobber(path).map_err(|error| {
            if error.error.kind() == std::io::ErrorKind::AlreadyExists {
                DownloadError::Exists(path.to_path_buf())
            } else {
                io(error.error)
            }
        })?;
    }
    Ok(())
}

fn network(link: &Link, error: reqwest::Error) -> DownloadError {
    DownloadError::Network {
        kind: link.kind.clone(),
        shown: link.shown(),
        detail: error.without_url().to_string(),
    }
}

fn stalled(link: &Link, idle: Duration) -> DownloadError {
    DownloadError::Stalled {
        kind: link.kind.clone(),
        shown: link.shown(),
        idle,
    }
}

/// Where a 3xx pointed, resolved against the link and redacted (host and
/// path, never the query); "nowhere usable" without a readable Location.
fn redirect_target(link: &str, location: Option<&reqwest::header::HeaderValue>) -> String {
    location
        .and_then(|value| value.to_str().ok())
        .and_then(|location| url::Url::parse(link).ok()?.join(location).ok())
        .map_or_else(
            || "nowhere usable".to_owned(),
            |target| crate::redact::redact_url(target.as_str()),
        )
}

/// Letters, digits, `_` and `-` only (anything else, `.` and `/`
/// included, becomes `_`): a name that stays in `dir`.
fn safe_name(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if cleaned.is_empty() {
        "artifact".to_owned()
    } else {
        cleaned
    }
}

/// The file extension: from the content type, else the URL path, else `bin`.
fn extension(content_type: &str, url: &str) -> String {
    let media = content_type.split(';').next().unwrap_or("").trim();
    let known = match media {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" => Some("mp3"),
        "audio/ogg" => Some("ogg"),
        "application/json" => Some("json"),
        "text/plain" => Some("txt"),
        _ => None,
    };
    if let Some(known) = known {
        return known.to_owned();
    }
    url::Url::parse(url)
        .ok()
        .and_then(|url| {
            let last = url.path_segments()?.next_back()?.to_owned();
            let (_, ext) = last.rsplit_once('.')?;
            (!ext.is_empty() && ext.len() <= 5 && ext.chars().all(|c| c.is_ascii_alphanumeric()))
                .then(|| ext.to_ascii_lowercase())
        })
        .unwrap_or_else(|| "bin".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// How the loopback server answers.
    #[derive(Clone, Copy)]
    enum Script {
        /// Never sends its headers.
        NoHeaders,
        /// Announces `length` (or none) and sends a byte every 10 ms forever.
        Trickle(Option<u64>),
        /// Announces 1 MiB, sends 10 bytes, then nothing.
        SilentAfter10Bytes,
    }

    /// A loopback server playing `script` to every connection; a link to it
    /// whose query is a credential.
    async fn serve(script: Script) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(play(socket, script));
            }
        });
        Link {
            kind: "recording".to_owned(),
            url: format!("http://{addr}/rec0token.wav?X-Amz-Signature=secret0sig"),
            expires_at: None,
            expiry_source: None,
            from: "artifacts",
        }
    }

    async fn play(mut socket: TcpStream, script: Script) {
        let mut request = [0u8; 4096];
        let _ = socket.read(&mut request).await;
        let head = |length: Option<u64>| {
            let length = length.map_or_else(
                || "connection: close\r\n".to_owned(),
                |length| format!("content-length: {length}\r\n"),
            );
            format!("HTTP/1.1 200 OK\r\ncontent-type: audio/wav\r\n{length}\r\n")
        };
        match script {
            Script::NoHeaders => {}
            Script::Trickle(length) => {
                let _ = socket.write_all(head(length).as_bytes()).await;
                while socket.write_all(b"x").await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            Script::SilentAfter10Bytes => {
                let _ = socket.write_all(head(Some(MIB)).as_bytes()).await;
                let _ = socket.write_all(&[0; 10]).await;
            }
        }
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }

    /// Short timeouts: 300 ms of silence; 400 ms + 100 ms per MiB, at most
    /// 2 s; 300 ms with no length.
    fn short() -> Timeouts {
        Timeouts {
            idle: Duration::from_millis(300),
            base: Duration::from_millis(400),
            per_mib: Duration::from_millis(100),
            cap: Duration::from_secs(2),
            unknown_length: Duration::from_millis(300),
        }
    }

    /// Downloads `link` into a fresh directory with `timeouts` (the test
    /// fails if that takes 10 s); the result, how long it took, and what
    /// the directory holds after.
    async fn fetch(
        link: &Link,
        timeouts: Timeouts,
    ) -> (Result<Downloaded, DownloadError>, Duration, usize) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let http = client().expect("a client");
        let started = std::time::Instant::now();
        let download = download(
            &http,
            link,
            "call_1",
            dir.path(),
            false,
            timeouts,
            |_, _| {},
        );
        let result = tokio::time::timeout(Duration::from_secs(10), download)
            .await
            .expect("the download ends within 10 s");
        let left = std::fs::read_dir(dir.path()).expect("readable").count();
        (result, started.elapsed(), left)
    }

    #[test]
    fn the_deadline_is_a_minute_plus_a_second_per_mib_at_most_an_hour() {
        let timeouts = Timeouts::default();
        let secs = |length| timeouts.deadline(length).as_secs();
        assert_eq!(secs(Some(0)), 60);
        assert_eq!(secs(Some(1)), 61, "a started MiB counts");
        assert_eq!(secs(Some(MIB)), 61);
        assert_eq!(secs(Some(100 * MIB)), 160);
        assert_eq!(secs(Some(3540 * MIB)), 3600);
        assert_eq!(secs(Some(MAX_ARTIFACT_BYTES)), 3600, "capped");
        assert_eq!(secs(Some(u64::MAX)), 3600, "no overflow");
        assert_eq!(secs(None), 600, "unknown length");
        assert_eq!(timeouts.idle.as_secs(), 60);
    }

    #[tokio::test]
    async fn a_body_that_trickles_forever_ends_at_its_deadline_leaving_nothing() {
        // 1 MiB announced: 400 ms + 100 ms.
        let link = serve(Script::Trickle(Some(MIB))).await;
        let (result, took, left) = fetch(&link, short()).await;
        let error = result.expect_err("cut at the deadline");
        let DownloadError::TooSlow {
            deadline,
            written,
            total,
            ..
        } = &error
        else {
            panic!("not the deadline: {error}");
        };
        assert_eq!(*deadline, Duration::from_millis(500));
        assert!(*written > 0, "bytes came");
        assert_eq!(*total, Some(MIB));
        assert!(took >= Duration::from_millis(500), "{took:?}");
        assert_eq!(left, 0, "the temporary file is removed");
        let text = error.to_string();
        assert!(text.contains("deadline of 500 ms"), "{text}");
        assert!(!text.contains("secret0sig"), "{text}");
    }

    #[tokio::test]
    async fn a_body_of_unknown_length_gets_the_fixed_deadline() {
        let link = serve(Script::Trickle(None)).await;
        let (result, took, left) = fetch(&link, short()).await;
        assert!(
            matches!(result, Err(DownloadError::TooSlow { deadline, total: None, .. })
                if deadline == Duration::from_millis(300)),
            "{result:?}"
        );
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert_eq!(left, 0);
    }

    #[tokio::test]
    async fn a_body_gone_silent_ends_after_the_idle_timeout_leaving_nothing() {
        let link = serve(Script::SilentAfter10Bytes).await;
        let timeouts = Timeouts {
            cap: Duration::from_secs(60),
            ..short()
        };
        let (result, took, left) = fetch(&link, timeouts).await;
        let error = result.expect_err("stalled");
        assert!(matches!(error, DownloadError::Stalled { .. }), "{error}");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert_eq!(left, 0, "the temporary file is removed");
        let text = error.to_string();
        assert!(text.contains("nothing came for 300 ms"), "{text}");
        assert!(!text.contains("secret0sig"), "{text}");
    }

    #[tokio::test]
    async fn headers_that_never_come_end_after_the_idle_timeout() {
        let link = serve(Script::NoHeaders).await;
        let (result, _, left) = fetch(&link, short()).await;
        assert!(
            matches!(result, Err(DownloadError::Stalled { .. })),
            "{result:?}"
        );
        assert_eq!(left, 0);
    }

    #[test]
    fn a_redirect_names_its_target_without_the_query() {
        let link = "https://bucket.example/r/rec.wav?X-Amz-Signature=1";
        let location = |text: &'static str| reqwest::header::HeaderValue::from_static(text);
        assert_eq!(
            redirect_target(link, Some(&location("/other/loot.wav?token=2"))),
            "https://bucket.example/other/loot…?…"
        );
        assert_eq!(
            redirect_target(link, Some(&location("http://127.0.0.1:9/x?token=2"))),
            "http://127.0.0.1:9/x?…"
        );
        assert_eq!(redirect_target(link, None), "nowhere usable");
    }

    #[test]
    fn names_stay_inside_the_directory() {
        assert_eq!(safe_name("../../etc/passwd"), "______etc_passwd");
        assert_eq!(safe_name(""), "artifact");
    }

    #[test]
    fn extensions_come_from_the_type_then_the_path() {
        assert_eq!(extension("audio/wav", "https://x/a"), "wav");
        assert_eq!(
            extension("application/json; charset=utf-8", "https://x/a"),
            "json"
        );
        assert_eq!(extension("", "https://x/r/rec.MP3?sig=1"), "mp3");
        assert_eq!(extension("", "https://x/r/token?sig=1"), "bin");
    }
}
