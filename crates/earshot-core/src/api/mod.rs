//! The internal async client for the platform (no UI code here).
//!
//! [`Client`] owns one `reqwest::Client` (rustls), the API key and the
//! [`Endpoints`] of every spec placeholder. Each area adds its calls in its
//! own module; [`ApiError`] is the one error type they all return.

pub(crate) mod agents;
pub mod delivery_verdict;
pub mod dictation;
mod error;
pub mod prerecorded;
pub mod probe;
pub mod sync;
pub mod url_identity;
/// The wire types and their rules are what the platform speaks too:
/// `earshot-protocol`'s, named here under their old paths.
pub use earshot_protocol::{public_address, types, validate};

pub use error::{ApiError, ErrorBody};

use std::time::Duration;

use reqwest::header::{HeaderValue, RETRY_AFTER};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::redact::SecretString;
use validate::{UrlPolicy, ValidationError};

/// How many characters of an id [`short_id`] keeps.
pub const SHORT_ID_LEN: usize = 8;

/// The first eight characters of an id: what tables show, what commands
/// accept as a prefix, and what the delete and rotate dialogs ask for.
pub fn short_id(id: &str) -> &str {
    let end = id
        .char_indices()
        .nth(SHORT_ID_LEN)
        .map_or(id.len(), |(index, _)| index);
    &id[..end]
}

/// The base URL of every address placeholder in the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// `{agents_url}`: webhook subscriptions, sessions, deliveries.
    pub agents: Url,
    /// `{base_url}`: pre-recorded transcription.
    pub prerecorded: Url,
    pub dictation: Url,
    pub dictation_us: Url,
    pub dictation_eu: Url,
    pub sync: Url,
    pub sync_us: Url,
    pub sync_eu: Url,
}

impl Endpoints {
    /// Every placeholder at one origin, as the emulator serves them.
    pub fn all_at(origin: &Url) -> Endpoints {
        Endpoints {
            agents: origin.clone(),
            prerecorded: origin.clone(),
            dictation: origin.clone(),
            dictation_us: origin.clone(),
            dictation_eu: origin.clone(),
            sync: origin.clone(),
            sync_us: origin.clone(),
            sync_eu: origin.clone(),
        }
    }

    pub fn dictation(&self, region: Region) -> &Url {
        match region {
            Region::Global => &self.dictation,
            Region::Us => &self.dictation_us,
            Region::Eu => &self.dictation_eu,
        }
    }

    pub fn sync(&self, region: Region) -> &Url {
        match region {
            Region::Global => &self.sync,
            Region::Us => &self.sync_us,
            Region::Eu => &self.sync_eu,
        }
    }
}

/// Data-residency region for dictation and sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Region {
    #[default]
    Global,
    Us,
    Eu,
}

impl Region {
    /// The region's name on the command line, in config files and on
    /// screen: `global`, `us`, `eu`.
    pub fn as_str(self) -> &'static str {
        match self {
            Region::Global => "global",
            Region::Us => "us",
            Region::Eu => "eu",
        }
    }
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The platform client shared by the command line and the console.
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    api_key: HeaderValue,
    endpoints: Endpoints,
    url_policy: UrlPolicy,
}

/// How long one request may take before it is reported as a timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

impl Client {
    pub fn new(endpoints: Endpoints, api_key: SecretString) -> Result<Client, ApiError> {
        validate::api_key(api_key.expose())?;
        let mut api_key = HeaderValue::from_str(api_key.expose()).map_err(|_| {
            ValidationError::new(
                "api_key",
                "contains characters an HTTP header cannot carry (control characters or non-ASCII); check how the key was copied",
            )
        })?;
        api_key.set_sensitive(true);
        let http = earshot_http::client_builder()
            .user_agent(concat!("earshot/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|source| ApiError::Setup {
                detail: source.to_string(),
            })?;
        Ok(Client {
            http,
            api_key,
            endpoints,
            url_policy: UrlPolicy::default(),
        })
    }

    /// Which subscription URLs to accept before sending: the platform's
    /// rule by default; [`UrlPolicy::AnyHttp`] for an emulator run with
    /// `--allow-private-urls`.
    pub fn with_url_policy(mut self, policy: UrlPolicy) -> Client {
        self.url_policy = policy;
        self
    }

    /// The URL rule this client checks subscription URLs with; probes of
    /// a receiver go by it too.
    pub fn url_policy(&self) -> UrlPolicy {
        self.url_policy
    }

    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The API key, ready for `Authorization` (marked sensitive, so the HTTP
    /// stack never logs it and `Debug` shows `Sensitive`).
    fn key_header(&self) -> HeaderValue {
        self.api_key.clone()
    }

    /// Sends a request and reads a JSON answer, or the error it carries.
    async fn send_json<T: DeserializeOwned>(
        label: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, ApiError> {
        let bytes = Self::send(label, request).await?;
        serde_json::from_slice(&bytes).map_err(|error| ApiError::Decode {
            request: label.to_owned(),
            detail: error.to_string(),
        })
    }

    /// Sends a request; a success answer's body, or the error it carries.
    async fn send(label: &str, request: reqwest::RequestBuilder) -> Result<Vec<u8>, ApiError> {
        let response = request
            .send()
            .await
            .map_err(|error| ApiError::transport(label, &error))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = response
            .bytes()
            .await
            .map_err(|error| ApiError::transport(label, &error))?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        Err(ApiError::Status {
            request: label.to_owned(),
            status: status.as_u16(),
            body: ErrorBody::parse(status.as_u16(), &bytes),
            retry_after,
        })
    }

    /// `base` joined with an absolute `path` (which may carry a query).
    fn url(base: &Url, path: &str) -> Url {
        let mut url = base.clone();
        let base_path = url.path().trim_end_matches('/').to_owned();
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        url.set_path(&format!("{base_path}{path}"));
        url.set_query((!query.is_empty()).then_some(query));
        url
    }
}

/// An id as one percent-encoded path segment: the one place ids enter a
/// request's path, so every call refuses what [`validate::path_id`] does.
fn path_segment(id: &str) -> Result<String, validate::InvalidId> {
    let id = validate::path_id(id)?;
    Ok(url::form_urlencoded::byte_serialize(id.as_bytes())
        .collect::<String>()
        .replace('+', "%20"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "clap")]
    #[test]
    fn a_region_has_one_name_for_serde_clap_and_display() {
        use clap::ValueEnum;
        for region in [Region::Global, Region::Us, Region::Eu] {
            let serde_name = serde_json::to_value(region).unwrap();
            assert_eq!(serde_name, region.as_str());
            let clap_name = region.to_possible_value().unwrap();
            assert_eq!(clap_name.get_name(), region.as_str());
            assert_eq!(region.to_string(), region.as_str());
        }
    }

    #[test]
    fn short_ids_are_eight_characters() {
        assert_eq!(short_id("0b7f3f5e-9c1a-4c8e"), "0b7f3f5e");
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn an_id_stays_one_segment_of_the_path() {
        let base = Url::parse("https://api.example.com/").unwrap();
        for (id, path) in [
            ("abc", "/v2/transcript/abc"),
            ("%2e%2e", "/v2/transcript/%252e%252e"),
            ("a b\\c", "/v2/transcript/a%20b%5Cc"),
            ("...", "/v2/transcript/..."),
        ] {
            let segment = path_segment(id).unwrap();
            let url = Client::url(&base, &format!("/v2/transcript/{segment}"));
            assert_eq!(url.path(), path, "{id:?}");
        }
        for id in ["", ".", "..", "a/b", "a?b", "a#b", "a\tb"] {
            assert!(path_segment(id).is_err(), "{id:?}");
        }
    }

    #[test]
    fn url_joins_keep_the_base_path() {
        let base = Url::parse("https://api.example.com/agents/").unwrap();
        let url = Client::url(&base, "/v1/webhook-subscriptions?include_disabled=true");
        assert_eq!(
            url.as_str(),
            "https://api.example.com/agents/v1/webhook-subscriptions?include_disabled=true"
        );
    }
}
