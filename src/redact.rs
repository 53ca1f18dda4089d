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
