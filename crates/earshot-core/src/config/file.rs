//! The config file's serde model (`FileConfig`, `FileProfile`, `FileEndpoints`)
//! and its checks: URLs, missing endpoints, the one API key source and loading it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use url::Url;

use super::error::{field_at, line_col, line_text};
use super::{ConfigError, ENDPOINT_NAMES, StoreSetting};
use crate::api::{Endpoints, Region};
use crate::redact::SecretString;
use crate::store::retention::Period;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) default_profile: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) profiles: BTreeMap<String, Spanned<FileProfile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileProfile {
    pub(super) region: Option<Region>,
    url: Option<Spanned<String>>,
    pub(super) endpoints: Option<Spanned<FileEndpoints>>,
    api_key_env: Option<Spanned<String>>,
    api_key_file: Option<Spanned<String>>,
    api_key: Option<Spanned<String>>,
    /// The console hides every command that changes the platform.
    #[serde(default)]
    pub(super) read_only: bool,
    /// The console writes fewer bytes: a slower refresh, no decorative
    /// colours (an SSH link that is thin).
    #[serde(default)]
    pub(super) low_bandwidth: bool,
    /// This profile's incident-history store (a path, like `api_key_file`).
    store: Option<Spanned<String>>,
    /// The console's theme for this profile.
    theme: Option<Spanned<String>>,
    /// How long `listen --store` keeps what it stores (`30d`).
    retention: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileEndpoints {
    agents: Option<Spanned<String>>,
    prerecorded: Option<Spanned<String>>,
    dictation: Option<Spanned<String>>,
    dictation_us: Option<Spanned<String>>,
    dictation_eu: Option<Spanned<String>>,
    sync: Option<Spanned<String>>,
    sync_us: Option<Spanned<String>>,
    sync_eu: Option<Spanned<String>>,
}

impl FileProfile {
    /// The profile's `store`, relative to the config file's directory
    /// (`~/` is the home directory); an empty value is an error.
    pub(super) fn store_path(
        &self,
        doc: &Document<'_>,
        prefix: &str,
    ) -> Result<Option<PathBuf>, ConfigError> {
        let Some(value) = &self.store else {
            return Ok(None);
        };
        match self.store_setting(doc, prefix)? {
            Some(StoreSetting::Postgres(_)) => Err(doc.invalid(
                value.span(),
                Some(format!("{prefix}.store")),
                format!(
                    "{}: give the path of a store file",
                    crate::store::postgres::NOT_SUPPORTED_YET
                ),
            )),
            Some(StoreSetting::File(path)) => Ok(Some(path)),
            None => Ok(None),
        }
    }

    /// The profile's `store` as it is set: a file (relative to the config
    /// file's directory) or a PostgreSQL URL, for the commands that take
    /// either (`listen`).
    pub(super) fn store_setting(
        &self,
        doc: &Document<'_>,
        prefix: &str,
    ) -> Result<Option<StoreSetting>, ConfigError> {
        let Some(value) = &self.store else {
            return Ok(None);
        };
        let text = non_empty(doc, prefix, "store", value, "a path")?;
        Ok(Some(if crate::store::postgres::is_postgres_url(text) {
            StoreSetting::Postgres(text.to_owned())
        } else {
            StoreSetting::File(config_relative_path(doc.path, text))
        }))
    }

    /// The profile's `theme`; an empty value is an error.
    pub(super) fn theme_name(
        &self,
        doc: &Document<'_>,
        prefix: &str,
    ) -> Result<Option<String>, ConfigError> {
        let Some(value) = &self.theme else {
            return Ok(None);
        };
        non_empty(doc, prefix, "theme", value, "a theme name").map(|name| Some(name.to_owned()))
    }

    /// The origin of the agents endpoint, when the profile gives one (no
    /// path, no credentials): how a list of profiles tells them apart.
    pub(super) fn agents_origin(&self) -> Option<String> {
        let value = self
            .endpoints
            .as_ref()
            .and_then(|table| table.get_ref().agents.as_ref())
            .or(self.url.as_ref())?;
        let url = Url::parse(value.get_ref().trim()).ok()?;
        url.host()?;
        Some(url.origin().ascii_serialization())
    }

    /// The endpoints table's eight entries in [`ENDPOINT_NAMES`] order.
    fn endpoint_entries(&self) -> [(&'static str, Option<&Spanned<String>>); 8] {
        match &self.endpoints {
            Some(table) => table.get_ref().entries(),
            None => ENDPOINT_NAMES.map(|name| (name, None)),
        }
    }
}

impl FileEndpoints {
    /// The eight entries in [`ENDPOINT_NAMES`] order.
    fn entries(&self) -> [(&'static str, Option<&Spanned<String>>); 8] {
        [
            ("agents", self.agents.as_ref()),
            ("prerecorded", self.prerecorded.as_ref()),
            ("dictation", self.dictation.as_ref()),
            ("dictation_us", self.dictation_us.as_ref()),
            ("dictation_eu", self.dictation_eu.as_ref()),
            ("sync", self.sync.as_ref()),
            ("sync_us", self.sync_us.as_ref()),
            ("sync_eu", self.sync_eu.as_ref()),
        ]
    }
}

/// The config file's path and text, for errors that point into it.
pub(super) struct Document<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
}

impl Document<'_> {
    pub(super) fn invalid(
        &self,
        span: Range<usize>,
        field: Option<String>,
        message: String,
    ) -> ConfigError {
        let (line, column) = line_col(self.text, span.start);
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            field,
            message,
            excerpt: line_text(self.text, line).trim_end().to_owned(),
        }
    }

    pub(super) fn toml_error(&self, error: &toml::de::Error) -> ConfigError {
        let span = error.span().unwrap_or(0..0);
        let field = field_at(self.text, span.start);
        self.invalid(span, field, error.message().trim_end().to_owned())
    }

    /// Parses one URL value, pointing at it on failure.
    fn url(&self, field: &str, value: &Spanned<String>) -> Result<Url, ConfigError> {
        let text = value.get_ref().trim();
        let bad = |why: String| {
            self.invalid(
                value.span(),
                Some(field.to_owned()),
                format!("invalid URL {text:?}: {why}"),
            )
        };
        crate::api::validate::http_url(text).map_err(|why| bad(format!("it {why}")))
    }
}

/// The profile's endpoints, or `None` when some are missing and there is no
/// `url` to fill them. Every URL given is checked either way.
pub(super) fn profile_endpoints(
    doc: &Document<'_>,
    prefix: &str,
    profile: &FileProfile,
) -> Result<Option<Endpoints>, ConfigError> {
    let base = match &profile.url {
        Some(url) => Some(doc.url(&format!("{prefix}.url"), url)?),
        None => None,
    };
    let mut urls: [Option<Url>; 8] = Default::default();
    for (slot, (name, value)) in urls.iter_mut().zip(profile.endpoint_entries()) {
        *slot = match value {
            Some(value) => Some(doc.url(&format!("{prefix}.endpoints.{name}"), value)?),
            None => base.clone(),
        };
    }
    let [
        Some(agents),
        Some(prerecorded),
        Some(dictation),
        Some(dictation_us),
        Some(dictation_eu),
        Some(sync),
        Some(sync_us),
        Some(sync_eu),
    ] = urls
    else {
        return Ok(None);
    };
    Ok(Some(Endpoints {
        agents,
        prerecorded,
        dictation,
        dictation_us,
        dictation_eu,
        sync,
        sync_us,
        sync_eu,
    }))
}

/// The profile's `retention` (how long `listen --store` keeps what it
/// stores), pointing at the value when it cannot be read.
pub(super) fn profile_retention(
    doc: &Document<'_>,
    prefix: &str,
    profile: &FileProfile,
) -> Result<Option<Period>, ConfigError> {
    let Some(value) = &profile.retention else {
        return Ok(None);
    };
    Period::parse(value.get_ref()).map(Some).map_err(|why| {
        doc.invalid(
            value.span(),
            Some(format!("{prefix}.retention")),
            format!("{why}; or remove the line to keep everything"),
        )
    })
}

pub(super) fn missing_endpoints_message(profile: &FileProfile) -> String {
    let missing: Vec<&str> = profile
        .endpoint_entries()
        .iter()
        .filter(|(_, value)| value.is_none())
        .map(|(name, _)| *name)
        .collect();
    format!(
        "missing endpoint{} {}; give all eight in the endpoints table, \
         or `url = \"ORIGIN\"` in the profile to put the rest at one origin",
        if missing.len() == 1 { "" } else { "s" },
        missing.join(", ")
    )
}

pub(super) enum KeySource<'a> {
    Env(&'a Spanned<String>),
    File(&'a Spanned<String>),
    Inline(&'a Spanned<String>),
}

impl KeySource<'_> {
    fn value(&self) -> &Spanned<String> {
        match self {
            KeySource::Env(v) | KeySource::File(v) | KeySource::Inline(v) => v,
        }
    }
}

pub(super) fn profile_key_source<'a>(
    doc: &Document<'_>,
    prefix: &str,
    profile: &'a FileProfile,
) -> Result<Option<KeySource<'a>>, ConfigError> {
    let candidates = [
        (
            "api_key_env",
            profile.api_key_env.as_ref().map(KeySource::Env),
        ),
        (
            "api_key_file",
            profile.api_key_file.as_ref().map(KeySource::File),
        ),
        ("api_key", profile.api_key.as_ref().map(KeySource::Inline)),
    ];
    let mut sources: Vec<(&str, KeySource<'a>)> = candidates
        .into_iter()
        .filter_map(|(name, source)| source.map(|s| (name, s)))
        .collect();
    for (name, source) in &sources {
        let value = source.value();
        let names_something = matches!(source, KeySource::Env(_) | KeySource::File(_));
        if names_something && value.get_ref().trim().is_empty() {
            return Err(doc.invalid(
                value.span(),
                Some(format!("{prefix}.{name}")),
                format!("`{name}` is empty; name a variable or a file, or remove the line"),
            ));
        }
    }
    if let [.., (last_name, last)] = sources.as_slice()
        && sources.len() > 1
    {
        let names: Vec<&str> = sources.iter().map(|(n, _)| *n).collect();
        return Err(doc.invalid(
            last.value().span(),
            Some(format!("{prefix}.{last_name}")),
            format!(
                "the profile sets {}; keep exactly one API key source",
                names.join(" and ")
            ),
        ));
    }
    Ok(sources.pop().map(|(_, source)| source))
}

pub(super) fn load_key(
    doc: &Document<'_>,
    profile: &str,
    source: KeySource<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(SecretString, String), ConfigError> {
    let (raw, desc) = match source {
        KeySource::Env(var) => {
            let var = var.get_ref().trim().to_owned();
            match env(&var) {
                Some(value) if !value.trim().is_empty() => (value, format!("env {var}")),
                other => {
                    return Err(ConfigError::KeyEnvUnset {
                        profile: profile.to_owned(),
                        empty: other.is_some(),
                        var,
                    });
                }
            }
        }
        KeySource::File(file) => {
            let path = config_relative_path(doc.path, file.get_ref().trim());
            let value =
                crate::bounded_file::read_to_string(&path, crate::bounded_file::API_KEY_FILE)
                    .map_err(|error| match error {
                        crate::bounded_file::FileError::Io { source, .. } => {
                            ConfigError::KeyFileUnreadable {
                                profile: profile.to_owned(),
                                path: path.clone(),
                                source,
                            }
                        }
                        refused => ConfigError::File(refused),
                    })?;
            check_private(&path)?;
            (value, format!("file {}", path.display()))
        }
        KeySource::Inline(value) => {
            check_private(doc.path)?;
            (
                value.get_ref().clone(),
                format!("inline in {}", doc.path.display()),
            )
        }
    };
    let key = raw.trim();
    if key.is_empty() {
        return Err(ConfigError::EmptyKey { source_desc: desc });
    }
    Ok((SecretString::new(key), desc))
}

/// `value` trimmed, or an error pointing at it when it is empty.
fn non_empty<'v>(
    doc: &Document<'_>,
    prefix: &str,
    name: &str,
    value: &'v Spanned<String>,
    what: &str,
) -> Result<&'v str, ConfigError> {
    let text = value.get_ref().trim();
    if text.is_empty() {
        return Err(doc.invalid(
            value.span(),
            Some(format!("{prefix}.{name}")),
            format!("`{name}` is empty; give {what}, or remove the line"),
        ));
    }
    Ok(text)
}

/// `~/x` is under the home directory; a relative path is relative to the
/// config file's directory.
fn config_relative_path(config_file: &Path, value: &str) -> PathBuf {
    if let Some(rest) = value.strip_prefix("~/")
        && let Some(base) = directories::BaseDirs::new()
    {
        return base.home_dir().join(rest);
    }
    let path = Path::new(value);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        config_file
            .parent()
            .unwrap_or_else(|| Path::new(""))
            .join(path)
    }
}

/// A file holding a key must not be readable by group or others.
fn check_private(path: &Path) -> Result<(), ConfigError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(ConfigError::KeyFileTooOpen {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_paths_are_relative_to_the_config_file() {
        let config = Path::new("/etc/earshot/config.toml");
        assert_eq!(
            config_relative_path(config, "prod.key"),
            PathBuf::from("/etc/earshot/prod.key")
        );
        assert_eq!(
            config_relative_path(config, "/run/key"),
            PathBuf::from("/run/key")
        );
    }
}
