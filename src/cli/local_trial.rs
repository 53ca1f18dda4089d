//! What to say when a receiver URL breaks the platform's rule (https://,
//! publicly reachable): how to try the same thing locally instead, against
//! an emulator started with `--allow-private-urls`. Shared by `subs
//! create`, `subs update` and `observer setup`.

use std::process::ExitCode;

use earshot_core::api::ApiError;
use earshot_core::api::validate::ValidationError;

/// The hint after a URL refused before sending (the client checks the
/// platform's rule unless `--allow-private-urls` was given).
pub(crate) const BEFORE_SENDING: &str = "the platform takes only a public https:// URL. For a local \
     trial, start `earshot emulator --allow-private-urls` and pass --allow-private-urls here \
     too: http://127.0.0.1 URLs then work";

/// The hint after the server refused a URL that `--allow-private-urls`
/// let through.
pub(crate) const BY_THE_SERVER: &str = "the server refused the URL: the platform takes only a public \
     https:// URL, and an emulator takes http:// and private addresses only when started with \
     `earshot emulator --allow-private-urls`";

/// The hint for `rule`, a URL refused before sending.
pub(crate) fn refused_before_sending(rule: &ValidationError) -> Option<&'static str> {
    (rule.field == "url").then_some(BEFORE_SENDING)
}

/// The hint for `error` when it is a refused receiver URL: refused by the
/// client's check, or by the server once `--allow-private-urls` let it
/// through. `None` for every other error.
pub(crate) fn hint(error: &ApiError, allow_private_urls: bool) -> Option<&'static str> {
    match error {
        ApiError::Invalid(rule) => refused_before_sending(rule),
        ApiError::Status {
            status: 400 | 422,
            body,
            ..
        } if allow_private_urls && body.to_string().contains("`url`") => Some(BY_THE_SERVER),
        _ => None,
    }
}

/// Says a refused URL and its hint on stderr and answers the exit code
/// (2 when refused before sending, as all bad input; 1 when the server
/// refused); any other error is handed back.
pub(crate) fn report(error: ApiError, allow_private_urls: bool) -> color_eyre::Result<ExitCode> {
    let Some(hint) = hint(&error, allow_private_urls) else {
        return Err(error.into());
    };
    let code = if matches!(error, ApiError::Invalid(_)) {
        2
    } else {
        1
    };
    let message = match &error {
        ApiError::Invalid(rule) => rule.to_string(),
        other => other.to_string(),
    };
    eprintln!("error: {message}\n  hint: {hint}");
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use earshot_core::api::ErrorBody;

    fn refused_by_server(status: u16, detail: &str) -> ApiError {
        ApiError::Status {
            request: "POST /v1/webhook-subscriptions".to_owned(),
            status,
            body: ErrorBody::Detail {
                status,
                title: "Bad Request".to_owned(),
                detail: detail.to_owned(),
            },
            retry_after: None,
        }
    }

    #[test]
    fn a_url_refused_before_sending_gets_the_local_trial_hint() {
        let rule = earshot_core::api::validate::url("http://127.0.0.1:8080/hook").unwrap_err();
        assert_eq!(hint(&ApiError::Invalid(rule), false), Some(BEFORE_SENDING));
        let secret = earshot_core::api::validate::secret("short").unwrap_err();
        assert_eq!(hint(&ApiError::Invalid(secret), false), None);
    }

    #[test]
    fn a_url_the_server_refused_gets_the_hint_only_after_allow_private_urls() {
        let refused = refused_by_server(400, "`url`: must start with https:// (got http://)");
        assert_eq!(hint(&refused, true), Some(BY_THE_SERVER));
        assert_eq!(hint(&refused, false), None);
        let other = refused_by_server(400, "`secret`: must be 32 to 256 characters long");
        assert_eq!(hint(&other, true), None);
        let server_error = refused_by_server(500, "`url` broke the server");
        assert_eq!(hint(&server_error, true), None);
    }
}
