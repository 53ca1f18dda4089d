//! The rules of a pre-recorded job request (spec part 2 D): http(s)
//! URLs, and a webhook auth header that is a real header, both name and
//! value or neither, under a name the webhook call does not set itself.
//! Checked by the client before sending and by the emulator on arrival.

use super::ValidationError;
use crate::types::prerecorded::NewTranscript;

/// Header names a pre-recorded webhook's auth header may not take: the
/// webhook call sets them itself (the emulator refuses them; `earshot
/// check-receiver` does too).
pub const RESERVED_AUTH_HEADERS: [&str; 6] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "user-agent",
];

impl NewTranscript {
    /// `audio_url` and `webhook_url` are http(s) URLs (query kept as given);
    /// the webhook auth header name and value come both or neither.
    pub fn validate(&self) -> Result<(), ValidationError> {
        http_url("audio_url", &self.audio_url)?;
        if let Some(webhook) = &self.webhook_url {
            http_url("webhook_url", webhook)?;
        }
        match (
            &self.webhook_auth_header_name,
            &self.webhook_auth_header_value,
        ) {
            (None, None) => Ok(()),
            (Some(name), Some(value)) => {
                http::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    ValidationError::new(
                        "webhook_auth_header_name",
                        format!("{name:?} is not a valid HTTP header name"),
                    )
                })?;
                http::header::HeaderValue::from_str(value.expose()).map_err(|_| {
                    ValidationError::new(
                        "webhook_auth_header_value",
                        "contains characters an HTTP header cannot carry",
                    )
                })?;
                if self.webhook_url.is_none() {
                    return Err(ValidationError::new(
                        "webhook_auth_header_name",
                        "only makes sense with a webhook_url",
                    ));
                }
                Ok(())
            }
            (Some(_), None) => Err(ValidationError::new(
                "webhook_auth_header_value",
                "is required when webhook_auth_header_name is set (give both or neither)",
            )),
            (None, Some(_)) => Err(ValidationError::new(
                "webhook_auth_header_name",
                "is required when webhook_auth_header_value is set (give both or neither)",
            )),
        }
    }
}

fn http_url(field: &'static str, raw: &str) -> Result<(), ValidationError> {
    super::http_url(raw)
        .map(drop)
        .map_err(|why| ValidationError::new(field, why.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::SecretString;

    fn request() -> NewTranscript {
        NewTranscript {
            audio_url: "https://cdn.example.com/a.wav".into(),
            ..NewTranscript::default()
        }
    }

    #[test]
    fn webhook_auth_needs_both_name_and_value() {
        let mut only_name = request();
        only_name.webhook_url = Some("https://hooks.example.com/x?job=7".into());
        only_name.webhook_auth_header_name = Some("X-Token".into());
        assert_eq!(
            only_name.validate().unwrap_err().field,
            "webhook_auth_header_value"
        );

        let mut only_value = request();
        only_value.webhook_url = Some("https://hooks.example.com/x".into());
        only_value.webhook_auth_header_value = Some(SecretString::new("s3cret"));
        assert_eq!(
            only_value.validate().unwrap_err().field,
            "webhook_auth_header_name"
        );

        let mut both = only_name.clone();
        both.webhook_auth_header_value = Some(SecretString::new("s3cret"));
        assert!(both.validate().is_ok());
    }

    #[test]
    fn urls_must_be_http() {
        let mut bad = request();
        bad.audio_url = "ftp://x/a.wav".into();
        assert_eq!(bad.validate().unwrap_err().field, "audio_url");
        let mut bad_hook = request();
        bad_hook.webhook_url = Some("not a url".into());
        assert_eq!(bad_hook.validate().unwrap_err().field, "webhook_url");
    }

    #[test]
    fn the_webhook_query_is_sent_as_given() {
        let mut with_query = request();
        with_query.webhook_url = Some("https://hooks.example.com/x?job=7&team=a%20b".into());
        let body = serde_json::to_value(&with_query).unwrap();
        assert_eq!(
            body["webhook_url"],
            "https://hooks.example.com/x?job=7&team=a%20b"
        );
        assert!(body.get("webhook_auth_header_name").is_none());
    }
}
