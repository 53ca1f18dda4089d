//! The subscription rules of spec part 2 C, and what an API key may hold,
//! shared by the client (checked before sending) and the emulator (checked
//! on arrival, and on its own `--api-key`).
//!
//! Each rule broken gives one [`ValidationError`] naming the field and the
//! rule, in words an operator can act on. The rules of a dictation
//! `config` ([`dictation`]) and of a pre-recorded job ([`prerecorded`])
//! are beside these.

use std::collections::HashSet;
use std::net::IpAddr;

use url::{Host, Url};

pub use super::public_address::non_public_reason;
use super::types::agents::{EventKind, NewSubscription, SubscriptionPatch};

pub mod dictation;
pub mod prerecorded;

pub const SECRET_MIN_LEN: usize = 32;
pub const SECRET_MAX_LEN: usize = 256;

/// One broken rule: which field, and what the rule says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {rule}")]
pub struct ValidationError {
    pub field: &'static str,
    pub rule: String,
}

impl ValidationError {
    pub fn new(field: &'static str, rule: impl Into<String>) -> Self {
        Self {
            field,
            rule: rule.into(),
        }
    }
}

/// Which receiver URLs a subscription may name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UrlPolicy {
    /// The platform's rule: `https://` on a public address.
    #[default]
    PublicHttps,
    /// Any `http(s)://` URL with a host: an emulator started with
    /// `--allow-private-urls`, whose receivers live on loopback.
    AnyHttp,
}

/// Why a text is not an `http://` or `https://` URL with a host.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpUrlError {
    #[error("is not a URL ({0})")]
    Unparsable(String),
    #[error("must be an http:// or https:// URL (got {0}://)")]
    Scheme(String),
    #[error("names no host")]
    NoHost,
}

/// The one rule for every URL earshot itself reaches (the platform's
/// origin, a profile's endpoints, a receiver, an audio or webhook URL of a
/// job): `http://` or `https://`, with a host. Spaces around it are
/// ignored.
pub fn http_url(raw: &str) -> Result<Url, HttpUrlError> {
    if let Some(why) = control_character(raw) {
        return Err(HttpUrlError::Unparsable(why));
    }
    let parsed =
        Url::parse(raw.trim()).map_err(|error| HttpUrlError::Unparsable(error.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(HttpUrlError::Scheme(parsed.scheme().to_owned()));
    }
    if parsed.host().is_none() {
        return Err(HttpUrlError::NoHost);
    }
    Ok(parsed)
}

/// Checks a URL under `policy`.
pub fn url_under(raw: &str, policy: UrlPolicy) -> Result<Url, ValidationError> {
    match policy {
        UrlPolicy::PublicHttps => url(raw),
        UrlPolicy::AnyHttp => {
            http_url(raw).map_err(|why| ValidationError::new("url", why.to_string()))
        }
    }
}

/// Checks the URL's form: `https://`, a host, and no literal address that
/// is private, loopback, link-local or otherwise not public. Names are
/// resolved only by the server (see [`non_public_reason`]).
pub fn url(raw: &str) -> Result<Url, ValidationError> {
    if let Some(why) = control_character(raw) {
        return Err(ValidationError::new(
            "url",
            format!("is not a valid URL ({why})"),
        ));
    }
    let parsed = Url::parse(raw.trim())
        .map_err(|error| ValidationError::new("url", format!("is not a valid URL ({error})")))?;
    if parsed.scheme() != "https" {
        return Err(ValidationError::new(
            "url",
            format!("must start with https:// (got {}://)", parsed.scheme()),
        ));
    }
    match parsed.host() {
        None => return Err(ValidationError::new("url", "must name a host")),
        Some(Host::Ipv4(ip)) => check_public("url", IpAddr::V4(ip))?,
        Some(Host::Ipv6(ip)) => check_public("url", IpAddr::V6(ip))?,
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name == "localhost" || name.ends_with(".localhost") {
                return Err(ValidationError::new(
                    "url",
                    "must be publicly reachable; localhost is a loopback address",
                ));
            }
        }
    }
    Ok(parsed)
}

/// A control character inside the URL (spaces and line breaks around it
/// are trimmed). The URL parser drops tabs and line breaks silently, so a
/// URL holding one would be stored as typed and reached as another.
fn control_character(raw: &str) -> Option<String> {
    let (index, c) = raw.trim().char_indices().find(|(_, c)| c.is_control())?;
    Some(format!(
        "holds the control character U+{:04X} at position {}",
        u32::from(c),
        raw.trim()[..index].chars().count() + 1
    ))
}

fn check_public(field: &'static str, ip: IpAddr) -> Result<(), ValidationError> {
    match non_public_reason(ip) {
        Some(reason) => Err(ValidationError::new(
            field,
            format!("must be publicly reachable; {ip} is a {reason} address"),
        )),
        None => Ok(()),
    }
}

/// One or more of the five events, no duplicates, from raw names.
pub fn event_names(names: &[String]) -> Result<Vec<EventKind>, ValidationError> {
    let mut kinds = Vec::with_capacity(names.len());
    for name in names {
        let kind = EventKind::parse(name).ok_or_else(|| {
            ValidationError::new(
                "events",
                format!("unknown event {name:?}; allowed: {}", allowed_events()),
            )
        })?;
        kinds.push(kind);
    }
    events(&kinds)?;
    Ok(kinds)
}

/// One or more events, no duplicates.
pub fn events(kinds: &[EventKind]) -> Result<(), ValidationError> {
    if kinds.is_empty() {
        return Err(ValidationError::new(
            "events",
            format!("must name at least one event: {}", allowed_events()),
        ));
    }
    let mut seen = HashSet::new();
    for kind in kinds {
        if !seen.insert(kind) {
            return Err(ValidationError::new(
                "events",
                format!("{kind} is listed twice; each event may appear once"),
            ));
        }
    }
    Ok(())
}

fn allowed_events() -> String {
    EventKind::ALL.map(EventKind::as_str).join(", ")
}

/// 32 to 256 printable ASCII characters, no whitespace.
pub fn secret(secret: &str) -> Result<(), ValidationError> {
    if let Some((index, _)) = secret.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        let what = if secret[index..].starts_with(char::is_whitespace) {
            "whitespace"
        } else {
            "a character that is not printable ASCII"
        };
        return Err(ValidationError::new(
            "secret",
            format!(
                "must be printable ASCII with no whitespace; found {what} at position {}",
                index + 1
            ),
        ));
    }
    let len = secret.len();
    if !(SECRET_MIN_LEN..=SECRET_MAX_LEN).contains(&len) {
        return Err(ValidationError::new(
            "secret",
            format!("must be {SECRET_MIN_LEN} to {SECRET_MAX_LEN} characters long (got {len})"),
        ));
    }
    Ok(())
}

/// An API key: not empty, printable ASCII with no whitespace or control
/// characters (it travels as the `Authorization` header value). The rule
/// never quotes the key.
pub fn api_key(key: &str) -> Result<(), ValidationError> {
    if key.is_empty() {
        return Err(ValidationError::new(
            "api_key",
            "is empty; give the key itself (an empty key would authenticate nothing)",
        ));
    }
    if let Some((index, c)) = key.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        let what = if c.is_control() {
            "a control character (a newline?)"
        } else if c.is_whitespace() {
            "whitespace"
        } else {
            "a character that is not printable ASCII"
        };
        return Err(ValidationError::new(
            "api_key",
            format!(
                "must be printable ASCII with no whitespace or control characters; found {what} \
                 at position {} (check how the key was copied)",
                key[..index].chars().count() + 1
            ),
        ));
    }
    Ok(())
}

/// An id refused before it became one segment of a request's path.
///
/// `""`, `"."` and `".."` would vanish when the URL is resolved and send
/// the request to another route (`GET /v2/transcript/` instead of one
/// transcript); `/`, `?`, `#` and control characters have no place in any
/// id the platform hands out. The message quotes the id escaped, so a
/// control character is shown, never sent to the terminal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{id:?}: not a valid id ({reason})")]
pub struct InvalidId {
    pub id: String,
    reason: &'static str,
}

/// Checks an id that is to become one path segment (see [`InvalidId`]).
pub fn path_id(id: &str) -> Result<&str, InvalidId> {
    let reason = if matches!(id, "" | "." | "..") {
        r#"empty, "." and ".." are refused"#
    } else if id.contains(['/', '?', '#']) {
        r##"ids holding "/", "?" or "#" are refused"##
    } else if id.chars().any(char::is_control) {
        "ids holding control characters are refused"
    } else {
        return Ok(id);
    };
    Err(InvalidId {
        id: id.to_owned(),
        reason,
    })
}

/// A UUID, as the spec types `agent_id`; answers its canonical spelling
/// (lower-case, hyphenated), so every spelling of one agent compares equal.
pub fn agent_id(agent_id: &str) -> Result<String, ValidationError> {
    uuid::Uuid::parse_str(agent_id)
        .map(|uuid| uuid.hyphenated().to_string())
        .map_err(|_| ValidationError::new("agent_id", format!("must be a UUID (got {agent_id:?})")))
}

impl NewSubscription {
    /// Every rule of part 2 C that can be checked without the network.
    pub fn validate(&self, policy: UrlPolicy) -> Result<(), ValidationError> {
        url_under(&self.url, policy)?;
        events(&self.events)?;
        secret(self.secret.expose())?;
        if let Some(agent) = &self.agent_id {
            agent_id(agent)?;
        }
        Ok(())
    }
}

impl SubscriptionPatch {
    /// The same rules, for whichever fields the patch carries.
    pub fn validate(&self, policy: UrlPolicy) -> Result<(), ValidationError> {
        if let Some(raw) = &self.url {
            url_under(raw, policy)?;
        }
        if let Some(kinds) = &self.events {
            events(kinds)?;
        }
        if let Some(new_secret) = &self.secret {
            secret(new_secret.expose())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_url_resolution_would_rewrite_are_refused() {
        for bad in [
            "", ".", "..", "a/b", "../x", "a?b", "a#b", "a\nb", "a\u{7f}b",
        ] {
            let error = path_id(bad).unwrap_err();
            assert_eq!(error.id, bad);
            assert!(error.to_string().contains("not a valid id"), "{error}");
        }
        assert_eq!(
            path_id("..").unwrap_err().to_string(),
            r#""..": not a valid id (empty, "." and ".." are refused)"#
        );
        assert!(
            !path_id("a\u{1b}b")
                .unwrap_err()
                .to_string()
                .contains('\u{1b}')
        );
        for good in [
            "0b7f3f5e-9c1a-4c8e",
            "call_abc",
            "...",
            ".a",
            "a.",
            "%2e%2e",
            "a b",
        ] {
            assert_eq!(path_id(good), Ok(good));
        }
    }

    #[test]
    fn url_rules_name_the_problem() {
        assert!(url("https://hooks.example.com/x?y=1").is_ok());
        assert!(url("https://93.184.216.34/hook").is_ok());
        let cases = [
            ("http://hooks.example.com", "https://"),
            ("https://127.0.0.1/x", "loopback"),
            ("https://10.1.2.3/x", "private"),
            ("https://192.168.0.1/x", "private"),
            ("https://172.16.5.5/x", "private"),
            ("https://169.254.169.254/latest", "link-local"),
            ("https://[::1]/x", "loopback"),
            ("https://[fe80::1]/x", "link-local"),
            ("https://[fd00::1]/x", "unique local"),
            ("https://[::ffff:10.0.0.1]/x", "private"),
            ("https://localhost:8443/x", "loopback"),
            ("not a url", "not a valid URL"),
        ];
        for (raw, expected) in cases {
            let error = url(raw).expect_err(raw);
            assert_eq!(error.field, "url");
            assert!(error.rule.contains(expected), "{raw}: {error}");
        }
    }

    /// Every other spelling of a loopback host the URL parser accepts is
    /// refused as loopback too: it is the address, not the text, that is
    /// checked.
    #[test]
    fn loopback_in_any_spelling_is_refused() {
        for raw in [
            "https://[::ffff:127.0.0.1]/new",
            "https://[::ffff:7f00:1]/new",
            "https://2130706433/new",
            "https://0x7f000001/new",
            "https://0177.0.0.1/new",
            "https://127.1/new",
            "https://127.0.0.1./new",
            "https://localhost./new",
            "https://LOCALHOST/new",
            "https://api.localhost/new",
            "https://[0:0:0:0:0:0:0:1]/new",
        ] {
            let error = url(raw).expect_err(raw);
            assert!(error.rule.contains("loopback"), "{raw}: {error}");
        }
        for raw in ["https://0.0.0.0/new", "https://0/new", "https://[::]/new"] {
            let error = url(raw).expect_err(raw);
            assert!(error.rule.contains("unspecified"), "{raw}: {error}");
        }
        for raw in ["http://127.0.0.1:9/new", "http://[::ffff:127.0.0.1]/new"] {
            let error = url(raw).expect_err(raw);
            assert!(error.rule.contains("https://"), "{raw}: {error}");
        }
    }
    /// A URL with a raw line break or tab is refused, not read as the URL
    /// the parser makes of it; spaces and a line break around it are not
    /// part of it.
    #[test]
    fn control_characters_inside_a_url_are_refused() {
        for raw in [
            "https://hooks.example.com/a\r\nX-Injected: 1",
            "https://hooks.example.com/a\tb",
            "https://hooks.exa\nmple.com/",
            "https://hooks.example.com/\u{7f}",
        ] {
            let error = url(raw).expect_err(raw);
            assert!(error.rule.contains("control character"), "{raw:?}: {error}");
            let error = http_url(raw).expect_err(raw);
            assert!(
                error.to_string().contains("control character"),
                "{raw:?}: {error}"
            );
        }
        assert!(url("  https://hooks.example.com/a\n").is_ok());
    }

    #[test]
    fn nat64_and_reserved_ranges_are_refused() {
        for (raw, what) in [
            ("https://[64:ff9b::7f00:1]/", "loopback"),
            ("https://198.18.0.1/", "benchmarking"),
            ("https://[2001:db8::1]/", "documentation"),
        ] {
            let error = url(raw).expect_err(raw);
            assert!(error.rule.contains(what), "{raw}: {error}");
        }
    }

    #[test]
    fn event_rules() {
        assert!(event_names(&["call.ended".into()]).is_ok());
        assert!(event_names(&[]).unwrap_err().rule.contains("at least one"));
        let twice = event_names(&["call.ended".into(), "call.ended".into()]).unwrap_err();
        assert!(twice.rule.contains("twice"), "{twice}");
        let unknown = event_names(&["call.started".into()]).unwrap_err();
        assert!(unknown.rule.contains("unknown event"), "{unknown}");
    }

    #[test]
    fn secret_rules_cover_length_whitespace_and_ascii() {
        assert!(secret(&"a".repeat(32)).is_ok());
        assert!(secret(&"~".repeat(256)).is_ok());
        assert!(secret(&"a".repeat(31)).unwrap_err().rule.contains("got 31"));
        assert!(
            secret(&"a".repeat(257))
                .unwrap_err()
                .rule
                .contains("got 257")
        );
        let spaced = format!("{} {}", "a".repeat(20), "b".repeat(20));
        assert!(
            secret(&spaced)
                .unwrap_err()
                .rule
                .contains("whitespace at position 21")
        );
        let accented = format!("{}é", "a".repeat(40));
        assert!(
            secret(&accented)
                .unwrap_err()
                .rule
                .contains("not printable ASCII")
        );
    }

    #[test]
    fn api_key_rules_refuse_empty_whitespace_and_control_characters() {
        assert!(api_key("emu_0123456789abcdef").is_ok());
        for bad in [
            "",
            " ",
            "key with space",
            "key\n",
            "\tkey",
            "ke\u{7f}y",
            "kéy",
        ] {
            let error = api_key(bad).unwrap_err();
            assert_eq!(error.field, "api_key");
        }
        assert!(api_key("").unwrap_err().rule.contains("empty"));
        assert!(api_key("ab\ncd").unwrap_err().rule.contains("position 3"));
        assert!(!api_key("secret key").unwrap_err().rule.contains("secret"));
    }

    #[test]
    fn agent_id_must_be_a_uuid() {
        assert!(agent_id("6f1c1a52-6a1c-4c59-b1f3-0f9e5f2d8a11").is_ok());
        assert_eq!(agent_id("agent-7").unwrap_err().field, "agent_id");
        assert_eq!(
            agent_id("urn:uuid:6F1C1A52-6A1C-4C59-B1F3-0F9E5F2D8A11").unwrap(),
            "6f1c1a52-6a1c-4c59-b1f3-0f9e5f2d8a11"
        );
    }
}
