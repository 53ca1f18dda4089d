//! What `earshot listen` (and the console's Inbox) is configured with: the
//! secrets, the pre-recorded auth header, TLS, the capture file, the store
//! and its watcher ([`ListenConfig`]), and the bounds every receiver keeps.

use std::path::PathBuf;
use std::sync::Arc;

use crate::redact::SecretString;
use crate::signature;
use crate::store::StoreHandle;
use crate::tls::ServerTls;

use super::Forward;
#[cfg(doc)]
use super::{PLATFORM_SOURCES, Requests};
use crate::receiver::watch::Watch;

/// How many delivery keys (event ids, transcript id + status) are
/// remembered for deduplication; the oldest is forgotten first.
pub const DEDUPE_CAPACITY: usize = 100_000;

/// Largest body read; a bigger one gets 413 (and is captured without it).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// What may wait on the [`Requests`] stream for its reader, by default:
/// six of the largest requests, or thousands of ordinary deliveries.
pub const QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// What the receiver accepts.
#[derive(Debug, Clone)]
pub struct ListenConfig {
    /// Signing secrets to try, in order, with the label reported when one
    /// matches: `("current", ..)` then `("previous", ..)` during a rotation.
    pub secrets: Vec<(String, SecretString)>,
    /// Allowed distance between the signature's `t` and the receiver's
    /// clock (spec 8 C: 300).
    pub tolerance_secs: u64,
    /// Header name and value every pre-recorded webhook must carry.
    pub auth_header: Option<(String, SecretString)>,
    /// Do not flag pre-recorded webhooks from outside [`PLATFORM_SOURCES`].
    pub trust_any_source: bool,
    /// Serve https with this certificate (`listen --tls-cert`); plain
    /// HTTP when `None`.
    pub tls: Option<ServerTls>,
    /// Append every request to this JSON-lines file.
    pub capture: Option<PathBuf>,
    /// Keep every new voice-agent event in the incident-history store
    /// before answering 2xx (the observer): a SQLite file's writer or a
    /// PostgreSQL store shared with other replicas.
    pub store: Option<StoreHandle>,
    /// Told of every request answered and every store write (the
    /// observer's metrics and health).
    pub watch: Option<Arc<dyn Watch>>,
    /// Keep secret header values (the auth header, `authorization`, ...)
    /// verbatim in the entries instead of a fingerprint.
    pub capture_secrets: bool,
    /// Bytes of requests that may wait on the [`Requests`] stream for its
    /// reader (each counted as its body and headers, from when its body is
    /// read). Past it a request is answered 503 with `Retry-After`,
    /// neither captured nor queued: a reader that stops (a `jobs watch`
    /// whose stdout blocks) costs this much, not every request since.
    pub queue_bytes: usize,
    /// Pass every verified, new voice-agent delivery on to this app and
    /// answer with its answer (`listen --forward-to`).
    pub forward: Option<Arc<Forward>>,
}

impl Default for ListenConfig {
    fn default() -> Self {
        Self {
            secrets: Vec::new(),
            tolerance_secs: signature::DEFAULT_TOLERANCE_SECS,
            auth_header: None,
            trust_any_source: false,
            tls: None,
            capture: None,
            store: None,
            watch: None,
            capture_secrets: false,
            queue_bytes: QUEUE_BYTES,
            forward: None,
        }
    }
}

impl ListenConfig {
    /// A receiver for deliveries signed with `current` (or `previous`).
    pub fn with_secrets(current: SecretString, previous: Option<SecretString>) -> Self {
        let mut secrets = vec![("current".to_owned(), current)];
        if let Some(previous) = previous {
            secrets.push(("previous".to_owned(), previous));
        }
        Self {
            secrets,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_debug_never_shows_a_secret() {
        let mut config = ListenConfig::with_secrets(
            SecretString::new("whsec_current_0123456789abcdefghijkl"),
            Some(SecretString::new("whsec_previous_0123456789abcdefghij")),
        );
        config.auth_header = Some(("x-token".into(), SecretString::new("token-value-123456")));
        let shown = format!("{config:?}");
        assert!(!shown.contains("0123456789"), "{shown}");
        assert!(!shown.contains("value-123456"), "{shown}");
    }
}
