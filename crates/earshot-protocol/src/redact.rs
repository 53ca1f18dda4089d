//! Secret values (API keys, signing secrets) that never print in full.
//!
//! [`SecretString`] masks itself in `Debug` and `Display`; the only way to the
//! real value is [`SecretString::expose`], which call sites use exactly where
//! the value goes on the wire or into an HMAC. The value is held by
//! [`secrecy::SecretString`], which zeroes its memory when dropped.

use std::fmt;

use secrecy::ExposeSecret;

/// A string that must never appear in logs, panics or on screen in full.
#[derive(Clone, Default)]
pub struct SecretString(secrecy::SecretString);

impl SecretString {
    pub fn new(value: impl Into<String>) -> Self {
        Self(secrecy::SecretString::from(value.into()))
    }

    /// The real value, for the wire or an HMAC key. Never format it.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    pub fn is_empty(&self) -> bool {
        self.expose().is_empty()
    }

    /// A masked form safe to show: the first four characters and the length.
    pub fn masked(&self) -> String {
        mask(self.expose())
    }
}

/// Masks a secret for display: `abcd…(40 chars)`; short values show nothing.
pub fn mask(value: &str) -> String {
    let len = value.chars().count();
    if len < 12 {
        return format!("…({len} chars)");
    }
    let head: String = value.chars().take(4).collect();
    format!("{head}…({len} chars)")
}

/// A presigned URL fit for a message: scheme, host and the path with its
/// last segment cut to four characters; the query (the signature and, on
/// the platform, the caller's data) becomes `?…`. `not a URL` when it does
/// not parse, so nothing of it leaks either.
pub fn redact_url(text: &str) -> String {
    let Ok(url) = url::Url::parse(text) else {
        return "(not a URL)".to_owned();
    };
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    let segments: Vec<&str> = url
        .path_segments()
        .map(Iterator::collect)
        .unwrap_or_default();
    if let Some((last, leading)) = segments.split_last() {
        for segment in leading {
            shown.push('/');
            shown.push_str(segment);
        }
        shown.push('/');
        let head: String = last.chars().take(4).collect();
        shown.push_str(&head);
        if last.chars().count() > 4 {
            shown.push('…');
        }
    }
    if url.query().is_some() {
        shown.push_str("?…");
    }
    shown
}

/// A phone number fit for the screen: `+1 •••• ••89` (the first digit after
/// `+` and the last two); shorter than six digits, nothing of it.
pub fn mask_phone(number: &str) -> String {
    let digits: Vec<char> = number.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 6 {
        return "••••".to_owned();
    }
    let plus = if number.trim_start().starts_with('+') {
        "+"
    } else {
        ""
    };
    let last: String = digits[digits.len() - 2..].iter().collect();
    format!("{plus}{} •••• ••{last}", digits[0])
}

impl PartialEq for SecretString {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for SecretString {}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretString({})", self.masked())
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl From<String> for SecretString {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for SecretString {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_value() {
        let secret = SecretString::new("sk_live_abcdefghijklmnopqrstuvwxyz");
        let shown = format!("{secret} {secret:?}");
        assert!(!shown.contains("efghijklmnop"), "{shown}");
        assert!(shown.contains("sk_l"), "{shown}");
        assert!(shown.contains("34 chars"), "{shown}");
    }

    #[test]
    fn presigned_urls_lose_their_query_and_most_of_the_last_segment() {
        let url = "https://bucket.s3.amazonaws.com/accounts/4242/rec_0123456789.wav?X-Amz-Signature=abcdef&from=%2B15555550189";
        let shown = redact_url(url);
        assert_eq!(
            shown,
            "https://bucket.s3.amazonaws.com/accounts/4242/rec_…?…"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:4000/_emulator/artifacts/0123abcd"),
            "http://127.0.0.1:4000/_emulator/artifacts/0123…"
        );
        assert_eq!(redact_url("not a url 5555550189"), "(not a URL)");
    }

    #[test]
    fn phone_numbers_keep_two_digits_at_most() {
        assert_eq!(mask_phone("+15555550189"), "+1 •••• ••89");
        assert_eq!(mask_phone("5555550189"), "5 •••• ••89");
        assert_eq!(mask_phone("+123"), "••••");
    }

    #[test]
    fn clones_compare_by_value_and_keep_it() {
        let secret = SecretString::new("whsec-0123456789abcdef");
        let copy = secret.clone();
        drop(secret);
        assert_eq!(copy.expose(), "whsec-0123456789abcdef");
        assert_eq!(copy, SecretString::from("whsec-0123456789abcdef"));
        assert_ne!(copy, SecretString::default());
        assert!(SecretString::default().is_empty());
    }

    #[test]
    fn short_values_are_masked_entirely() {
        assert_eq!(mask("short"), "…(5 chars)");
    }
}
