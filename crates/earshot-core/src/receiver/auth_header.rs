//! The custom auth header of pre-recorded webhooks (spec part 5 D) as an
//! operator gives it, `NAME:VALUE`: parsed and checked once for `earshot
//! listen` (which requires it) and `earshot check-receiver` (which sends
//! it). `Debug` never shows the value.

use std::fmt;

use reqwest::header::{HeaderName, HeaderValue};

use crate::api::prerecorded::RESERVED_AUTH_HEADERS;
use crate::redact::SecretString;

/// Why a `NAME:VALUE` is not a usable auth header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthHeaderError(pub String);

/// The custom header of pre-recorded calls (spec part 5 D). `Debug` masks
/// the value.
#[derive(Clone)]
pub struct AuthHeader {
    pub name: HeaderName,
    pub value: HeaderValue,
}

impl AuthHeader {
    /// Parses `NAME:VALUE` (spaces around either trimmed).
    pub fn parse(text: &str) -> Result<AuthHeader, AuthHeaderError> {
        let invalid = |why: &str| AuthHeaderError(why.to_owned());
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| invalid("expected NAME:VALUE, e.g. `X-Webhook-Token: s3cret`"))?;
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || value.is_empty() {
            return Err(invalid(
                "both the name and the value must be given (NAME:VALUE)",
            ));
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid("the name is not a valid HTTP header name"))?;
        if RESERVED_AUTH_HEADERS.contains(&name.as_str()) {
            return Err(AuthHeaderError(format!(
                "{name} is set by the webhook call itself; the platform refuses it as an auth \
                 header"
            )));
        }
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| invalid("the value contains characters an HTTP header cannot carry"))?;
        value.set_sensitive(true);
        Ok(AuthHeader { name, value })
    }

    /// [`AuthHeader::parse`], as the lower-case name and the value (which
    /// must then be visible ASCII) for a request body or a config.
    pub fn parse_parts(text: &str) -> Result<(String, SecretString), AuthHeaderError> {
        let header = AuthHeader::parse(text)?;
        let value = header
            .value
            .to_str()
            .map_err(|_| AuthHeaderError("the value must be visible ASCII".to_owned()))?;
        Ok((header.name.as_str().to_owned(), SecretString::new(value)))
    }
}

impl fmt::Debug for AuthHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let masked = crate::redact::mask(&String::from_utf8_lossy(self.value.as_bytes()));
        f.debug_struct("AuthHeader")
            .field("name", &self.name)
            .field("value", &masked)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receiver::check::CheckError;

    #[test]
    fn auth_header_parses_name_and_value_and_masks_it() {
        let header = AuthHeader::parse("X-Webhook-Token:  s3cret-value-0123456789 ").unwrap();
        assert_eq!(header.name.as_str(), "x-webhook-token");
        assert_eq!(header.value.as_bytes(), b"s3cret-value-0123456789");
        assert!(header.value.is_sensitive());
        let shown = format!("{header:?}");
        assert!(!shown.contains("value-0123"), "{shown}");
    }

    #[test]
    fn bad_auth_headers_are_bad_input() {
        for text in [
            "no-colon",
            ":value",
            "Name:",
            "bad name:v",
            "Content-Type: x",
        ] {
            let error = CheckError::from(AuthHeader::parse(text).unwrap_err());
            assert!(error.is_bad_input(), "{text}");
            assert!(matches!(error, CheckError::AuthHeader(_)), "{text}");
        }
    }
}
