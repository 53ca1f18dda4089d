//! Downloading a session's recording or transcript from its presigned link:
//! streamed to a temporary file in the target directory chunk by chunk
//! (never whole in memory), then renamed into place, refusing to replace an
//! existing file unless asked. Errors name the link only redacted
//! ([`crate::redact::redact_url`]): the URL is personal data.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::session_view::{Link, expiry_phrase};

/// The most one artifact may hold: far above an hour-long recording.
pub const MAX_ARTIFACT_BYTES: u64 = 8 * 1024 * 1024 * 1024;
/// How long the server may stay silent mid-download.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a download did not land on disk.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error(
        "the {kind} link {when}: the host answered {status} ({shown}); presigned links work for one hour after their event"
    )]
    Expired {
        kind: String,
        status: u16,
        /// "expired 12 min ago (at 2026-11-23 13:05:00 UTC)".
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

/// The HTTP client for presigned links: no API key, no overall deadline
/// (a large recording takes its time), but connect and idle timeouts.
pub fn client() -> Result<reqwest::Client, DownloadError> {
    reqwest::Client::builder()
        .user_agent(concat!("earshot/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(IDLE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .map_err(|error| DownloadError::Client(error.without_url().to_string()))
}

/// "expired 12 min ago (at 2026-11-23 13:05:00 UTC)" or "expires in …".
pub fn when(link: &Link, now: DateTime<Utc>) -> String {
    match link.expires_at {
        Some(at) => format!(
            "{} (at {})",
            expiry_phrase(at, now),
            at.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        None => "has no known expiry".to_owned(),
    }
}

/// Streams `link` into `dir` as `{session_id}-{kind}.{ext}`; `progress` is
/// told the bytes written so far and the total when the server said it.
pub async fn download(
    http: &reqwest::Client,
    link: &Link,
    session_id: &str,
    dir: &Path,
    force: bool,
    mut progress: impl FnMut(u64, Option<u64>),
) -> Result<Downloaded, DownloadError> {
    let kind = link.kind.clone();
    let shown = link.shown();
    let network = |error: reqwest::Error| DownloadError::Network {
        kind: kind.clone(),
        shown: shown.clone(),
        detail: error.without_url().to_string(),
    };
    let mut response = http.get(&link.url).send().await.map_err(network)?;
    let status = response.status().as_u16();
    // S3 answers 403 to an expired link; a host that forgot the file
    // (404, 410) past the expiry is the same story for the operator.
    if (400..500).contains(&status) && link.expired(Utc::now()) {
        return Err(DownloadError::Expired {
            kind,
            status,
            when: when(link, Utc::now()),
            shown,
        });
    }
    if !(200..300).contains(&status) {
        let hint = match link.expires_at {
            Some(at) if status == 403 => format!(
                "; by its event it should work until {}",
                at.format("%Y-%m-%d %H:%M:%S UTC")
            ),
            _ => String::new(),
        };
        return Err(DownloadError::Refused {
            kind,
            status,
            shown,
            hint,
        });
    }
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
    let mut file = tempfile::Builder::new()
        .prefix(".earshot-download-")
        .tempfile_in(dir)
        .map_err(io)?;
    let mut written: u64 = 0;
    progress(0, total);
    while let Some(chunk) = response.chunk().await.map_err(network)? {
        written += chunk.len() as u64;
        if written > MAX_ARTIFACT_BYTES {
            return Err(DownloadError::TooLarge { kind });
        }
        file.write_all(&chunk).map_err(io)?;
        progress(written, total);
    }
    file.flush().map_err(io)?;
    file.as_file().sync_all().map_err(io)?;
    if force {
        file.persist(&path).map_err(|error| io(error.error))?;
    } else {
        file.persist_noclobber(&path).map_err(|error| {
            if error.error.kind() == std::io::ErrorKind::AlreadyExists {
                DownloadError::Exists(path.clone())
            } else {
                io(error.error)
            }
        })?;
    }
    Ok(Downloaded {
        kind,
        path,
        bytes: written,
    })
}

/// Letters, digits, `_`, `-` and `.` only: a name that stays in `dir`.
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
