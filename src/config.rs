//! Configuration: where earshot's files live, the profiles file, and the one
//! function that turns flags, environment and file into the settings a
//! command connects with.
//!
//! This module owns:
//! - [`Paths`]: the config file (`--config FILE`, else `EARSHOT_CONFIG`, else
//!   `config.toml` in the per-user config dir from `directories`) and the
//!   state dir (watch lists, logs).
//! - The file format, documented by [`template`] (which `earshot config init`
//!   writes). Every table rejects unknown keys, so a typo is an error, never a
//!   silently ignored line.
//! - [`resolve`]: defaults → file → profile → environment → flags, in one
//!   place, giving a [`Resolved`] (profile name, [`Endpoints`], [`Region`],
//!   API key and where it came from).
//! - [`write_atomic`]: how every file holding a key is written (0600, temp
//!   file in the same directory, fsync, rename).
//!
//! It does not own the command line (the clap layer reads `--config`,
//! `--profile`, `--url`, `--api-key` and their `EARSHOT_*` variables into
//! [`ResolveOptions`]), nor what an endpoint or region *means* on the wire
//! (that is `api/`).
//!
//! Decisions:
//! - Endpoints: a profile either lists all eight endpoints in
//!   `[profiles.NAME.endpoints]`, or gives `url = "ORIGIN"` to put every
//!   endpoint at one origin (an emulator, a proxy) and overrides single ones
//!   in the endpoints table. Without `url`, a missing endpoint is an error
//!   naming the ones missing. Only `http` and `https` URLs are accepted.
//! - The `--url` override puts every endpoint at that origin, whatever the
//!   profile says; the profile still supplies the region and the key. With
//!   `--url` and no config file, no file is needed at all.
//! - API key: at most one of `api_key_env`, `api_key_file`, `api_key` per
//!   profile; more than one is an error. A profile with none relies on
//!   `--api-key` / `EARSHOT_API_KEY` ([`Resolved::require_api_key`] says so
//!   when a command needs a key and has none). `--api-key` beats the profile's
//!   source, and then the profile's source is not consulted at all.
//! - A file holding a key (an `api_key_file`, or the config file itself when
//!   the key is inline) must not be readable by group or others, like ssh's
//!   private keys: the error says to `chmod 600` it. Key files may start with
//!   `~/`; relative paths are relative to the config file's directory;
//!   surrounding whitespace (a trailing newline) is trimmed; an empty key is
//!   an error.
//! - No profile selected (neither `--profile`/`EARSHOT_PROFILE` nor
//!   `default_profile`) is an error listing the profiles, unless `--url` is
//!   given, which needs no profile. There is never an implicit "first
//!   profile".

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use url::Url;

use crate::api::{Endpoints, Region};
use crate::redact::SecretString;

/// Environment variable naming the config file (`--config` beats it).
pub const ENV_CONFIG: &str = "EARSHOT_CONFIG";
/// Environment variable selecting the profile (`--profile` beats it).
pub const ENV_PROFILE: &str = "EARSHOT_PROFILE";
/// Environment variable putting every endpoint at one origin (`--url` beats it).
pub const ENV_URL: &str = "EARSHOT_URL";
/// Environment variable carrying the API key (`--api-key` beats it).
pub const ENV_API_KEY: &str = "EARSHOT_API_KEY";

/// File mode for files that may hold a key.
pub const PRIVATE_MODE: u32 = 0o600;

/// The names of the eight endpoint keys, in the order of [`Endpoints`].
pub const ENDPOINT_NAMES: [&str; 8] = [
    "agents",
    "prerecorded",
    "dictation",
    "dictation_us",
    "dictation_eu",
    "sync",
    "sync_us",
    "sync_eu",
];

/// Everything that can go wrong finding, reading or applying the config.
/// Each message names the file (and line) and says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no config file at {}\n  \
         create one with `earshot config init` (a commented template to edit), \
         or point --config / {ENV_CONFIG} at one;\n  \
         or skip the file with --url URL --api-key KEY (e.g. a running emulator);\n  \
         to try earshot with no account, run `earshot demo`",
        path.display()
    )]
    NoConfigFile { path: PathBuf },

    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "invalid config file {}, line {line}, column {column}{}: {message}{}",
        path.display(),
        field.as_deref().map(|f| format!(", field `{f}`")).unwrap_or_default(),
        excerpt_suffix(*line, excerpt)
    )]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        /// Dotted key of the offending field, e.g. `profiles.prod.endpoints.agents`.
        field: Option<String>,
        message: String,
        /// The offending line of the file, for context.
        excerpt: String,
    },

    #[error(
        "profile `{name}` (chosen by {chosen_by}) is not in {}; {}",
        path.display(),
        list_profiles(available)
    )]
    ProfileNotFound {
        name: String,
        chosen_by: String,
        path: PathBuf,
        available: Vec<String>,
    },

    #[error(
        "no profile selected in {}: set `default_profile`, or pass --profile / {ENV_PROFILE}; {}",
        path.display(),
        list_profiles(available)
    )]
    NoProfileSelected {
        path: PathBuf,
        available: Vec<String>,
    },

    #[error(
        "profile `{profile}` reads its API key from the environment variable {var}, which is {}; \
         set it, or pass --api-key / {ENV_API_KEY}",
        if *empty { "empty" } else { "not set" }
    )]
    KeyEnvUnset {
        profile: String,
        var: String,
        empty: bool,
    },

    #[error("cannot read the API key file {} of profile `{profile}`: {source}", path.display())]
    KeyFileUnreadable {
        profile: String,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "{} holds an API key but is readable by group or others (mode {mode:04o}); \
         run `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    KeyFileTooOpen { path: PathBuf, mode: u32 },

    #[error("the API key from {source_desc} is empty")]
    EmptyKey { source_desc: String },

    #[error(
        "no API key{}: pass --api-key / {ENV_API_KEY}{}",
        profile.as_deref().map(|p| format!(" for profile `{p}`")).unwrap_or_default(),
        profile.as_deref().map(|p| format!(
            ", or give [profiles.{p}] one of api_key_env, api_key_file or api_key in {}",
            config_file.display()
        )).unwrap_or_default()
    )]
    NoApiKey {
        profile: Option<String>,
        config_file: PathBuf,
    },

    #[error(
        "cannot find a home directory for the default config path; pass --config FILE or set {ENV_CONFIG}"
    )]
    NoHomeDir,

    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn excerpt_suffix(line: usize, excerpt: &str) -> String {
    if excerpt.trim().is_empty() {
        String::new()
    } else {
        format!("\n  {line:>4} | {excerpt}")
    }
}

fn list_profiles(available: &[String]) -> String {
    if available.is_empty() {
        "it defines no profiles".to_owned()
    } else {
        let names: Vec<String> = available.iter().map(|n| format!("`{n}`")).collect();
        format!("profiles there: {}", names.join(", "))
    }
}

/// Where earshot keeps its files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    /// The profiles file.
    pub config_file: PathBuf,
    /// Per-user state: watch lists, logs. Not created here.
    pub state_dir: PathBuf,
}

impl Paths {
    /// The config file is `config_override` (from `--config` / `EARSHOT_CONFIG`)
    /// when given, else `config.toml` in the per-user config directory. The
    /// state dir is the per-user state directory (data-local directory where
    /// the platform has no state directory); without a home directory it
    /// falls back to `state/` beside an overridden config file.
    pub fn compute(config_override: Option<&Path>) -> Result<Paths, ConfigError> {
        let dirs = directories::ProjectDirs::from("", "", "earshot");
        let state_of = |dirs: &directories::ProjectDirs| {
            dirs.state_dir()
                .unwrap_or_else(|| dirs.data_local_dir())
                .to_path_buf()
        };
        match (config_override, dirs) {
            (Some(file), Some(dirs)) => Ok(Paths {
                config_file: file.to_path_buf(),
                state_dir: state_of(&dirs),
            }),
            (Some(file), None) => Ok(Paths {
                config_file: file.to_path_buf(),
                state_dir: file
                    .parent()
                    .unwrap_or_else(|| Path::new("."))
                    .join("state"),
            }),
            (None, Some(dirs)) => Ok(Paths {
                config_file: dirs.config_dir().join("config.toml"),
                state_dir: state_of(&dirs),
            }),
            (None, None) => Err(ConfigError::NoHomeDir),
        }
    }
}

/// What the command line (flags, or their `EARSHOT_*` variables as read by
/// clap) asks for. Every field beats what the config file says.
#[derive(Clone, Debug, Default)]
pub struct ResolveOptions {
    /// `--config FILE` / `EARSHOT_CONFIG`.
    pub config_path: Option<PathBuf>,
    /// `--profile NAME` / `EARSHOT_PROFILE`; beats `default_profile`.
    pub profile: Option<String>,
    /// `--url URL` / `EARSHOT_URL`: every endpoint at this origin.
    pub url: Option<Url>,
    /// `--api-key KEY` / `EARSHOT_API_KEY`; beats the profile's key source.
    pub api_key: Option<SecretString>,
}

/// The settings a command connects with.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The profile used, if any (none only with `--url` and no profile chosen).
    pub profile_name: Option<String>,
    pub endpoints: Endpoints,
    pub region: Region,
    pub api_key: Option<SecretString>,
    /// Where the key came from, for people: `--api-key / EARSHOT_API_KEY`,
    /// `env VAR`, `file PATH`, `inline in PATH`, or `none`.
    pub api_key_source: String,
    pub config_file: PathBuf,
    pub config_exists: bool,
}

impl Resolved {
    /// The API key, or an error saying how to provide one.
    pub fn require_api_key(&self) -> Result<&SecretString, ConfigError> {
        self.api_key.as_ref().ok_or_else(|| ConfigError::NoApiKey {
            profile: self.profile_name.clone(),
            config_file: self.config_file.clone(),
        })
    }
}

/// Resolves `opts` against the config file, reading `api_key_env` variables
/// from the process environment.
pub fn resolve(opts: &ResolveOptions) -> Result<Resolved, ConfigError> {
    resolve_with_env(opts, &|name| std::env::var(name).ok())
}

/// [`resolve`] with an injectable environment (used only for a profile's
/// `api_key_env` lookup), for tests. The one place where the layers meet:
/// defaults → file → profile → environment → flags.
pub fn resolve_with_env(
    opts: &ResolveOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ConfigError> {
    let paths = Paths::compute(opts.config_path.as_deref())?;
    let config_file = paths.config_file;

    // File.
    let source = match std::fs::read_to_string(&config_file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(ConfigError::Read {
                path: config_file,
                source,
            });
        }
    };
    let config_exists = source.is_some();

    let Some(text) = source else {
        // No file: only a full override (`--url`) works, and only without an
        // explicitly chosen profile (which would silently be ignored).
        return match (&opts.url, &opts.profile) {
            (Some(url), None) => {
                let (api_key, api_key_source) = flag_key(opts)?.unzip_source();
                Ok(Resolved {
                    profile_name: None,
                    endpoints: Endpoints::all_at(url),
                    region: Region::default(),
                    api_key,
                    api_key_source,
                    config_file,
                    config_exists,
                })
            }
            _ => Err(ConfigError::NoConfigFile { path: config_file }),
        };
    };

    let doc = Document {
        path: &config_file,
        text: &text,
    };
    let file: FileConfig = toml::from_str(&text).map_err(|e| doc.toml_error(&e))?;
    let available: Vec<String> = file.profiles.keys().cloned().collect();

    // Profile: flag/env beats default_profile.
    let chosen = match (&opts.profile, &file.default_profile) {
        (Some(name), _) => Some((name.clone(), format!("--profile / {ENV_PROFILE}"))),
        (None, Some(default)) => {
            let (line, _) = line_col(&text, default.span().start);
            Some((
                default.get_ref().clone(),
                format!("`default_profile` at line {line}"),
            ))
        }
        (None, None) => None,
    };

    let Some((name, chosen_by)) = chosen else {
        return match &opts.url {
            Some(url) => {
                let (api_key, api_key_source) = flag_key(opts)?.unzip_source();
                Ok(Resolved {
                    profile_name: None,
                    endpoints: Endpoints::all_at(url),
                    region: Region::default(),
                    api_key,
                    api_key_source,
                    config_file,
                    config_exists,
                })
            }
            None => Err(ConfigError::NoProfileSelected {
                path: config_file,
                available,
            }),
        };
    };

    let Some(profile) = file.profiles.get(&name) else {
        return Err(ConfigError::ProfileNotFound {
            name,
            chosen_by,
            path: config_file,
            available,
        });
    };
    let profile_span = profile.span();
    let profile = profile.get_ref();
    let prefix = format!("profiles.{name}");

    // Endpoints: flag beats profile.
    let profile_endpoints = profile_endpoints(&doc, &prefix, profile)?;
    let endpoints = match &opts.url {
        Some(url) => Endpoints::all_at(url),
        None => match profile_endpoints {
            Some(endpoints) => endpoints,
            None => {
                let span = profile
                    .endpoints
                    .as_ref()
                    .map_or(profile_span, |table| table.span());
                return Err(doc.invalid(
                    span,
                    Some(format!("{prefix}.endpoints")),
                    missing_endpoints_message(profile),
                ));
            }
        },
    };

    // API key: flag beats profile.
    let key_source = profile_key_source(&doc, &prefix, profile)?;
    let (api_key, api_key_source) = match flag_key(opts)? {
        KeyPick::Some(key, desc) => (Some(key), desc),
        KeyPick::None => match key_source {
            None => (None, "none".to_owned()),
            Some(source) => {
                let (key, desc) = load_key(&doc, &name, source, env)?;
                (Some(key), desc)
            }
        },
    };

    Ok(Resolved {
        profile_name: Some(name),
        endpoints,
        region: profile.region.unwrap_or_default(),
        api_key,
        api_key_source,
        config_file,
        config_exists,
    })
}

enum KeyPick {
    Some(SecretString, String),
    None,
}

impl KeyPick {
    fn unzip_source(self) -> (Option<SecretString>, String) {
        match self {
            KeyPick::Some(key, desc) => (Some(key), desc),
            KeyPick::None => (None, "none".to_owned()),
        }
    }
}

fn flag_key(opts: &ResolveOptions) -> Result<KeyPick, ConfigError> {
    match &opts.api_key {
        None => Ok(KeyPick::None),
        Some(key) => {
            let desc = format!("--api-key / {ENV_API_KEY}");
            if key.expose().trim().is_empty() {
                return Err(ConfigError::EmptyKey { source_desc: desc });
            }
            Ok(KeyPick::Some(key.clone(), desc))
        }
    }
}

// ---------------------------------------------------------------------------
// The file's shape.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    default_profile: Option<Spanned<String>>,
    #[serde(default)]
    profiles: BTreeMap<String, Spanned<FileProfile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProfile {
    region: Option<Region>,
    url: Option<Spanned<String>>,
    endpoints: Option<Spanned<FileEndpoints>>,
    api_key_env: Option<Spanned<String>>,
    api_key_file: Option<Spanned<String>>,
    api_key: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileEndpoints {
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
struct Document<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Document<'_> {
    fn invalid(&self, span: Range<usize>, field: Option<String>, message: String) -> ConfigError {
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

    fn toml_error(&self, error: &toml::de::Error) -> ConfigError {
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
        let url = Url::parse(text).map_err(|e| bad(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!(
                "scheme `{}` is not http or https",
                url.scheme()
            )));
        }
        if url.host().is_none() {
            return Err(bad("it has no host".to_owned()));
        }
        Ok(url)
    }
}

/// The profile's endpoints, or `None` when some are missing and there is no
/// `url` to fill them. Every URL given is checked either way.
fn profile_endpoints(
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

fn missing_endpoints_message(profile: &FileProfile) -> String {
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

enum KeySource<'a> {
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

fn profile_key_source<'a>(
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

fn load_key(
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
            let path = key_file_path(doc.path, file.get_ref().trim());
            let value = std::fs::read_to_string(&path).map_err(|source| {
                ConfigError::KeyFileUnreadable {
                    profile: profile.to_owned(),
                    path: path.clone(),
                    source,
                }
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

/// `~/x` is under the home directory; a relative path is relative to the
/// config file's directory.
fn key_file_path(config_file: &Path, value: &str) -> PathBuf {
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

// ---------------------------------------------------------------------------
// Positions in the source text.

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The text of 1-based line `line`.
fn line_text(text: &str, line: usize) -> &str {
    text.split('\n')
        .nth(line.saturating_sub(1))
        .unwrap_or("")
        .trim_end_matches('\r')
}

/// The dotted key at byte `offset`: the enclosing `[table]` header plus the
/// key on that line, e.g. `profiles.prod.endpoints.agents`. A best effort for
/// toml's own errors, which carry a span but no key path.
fn field_at(text: &str, offset: usize) -> Option<String> {
    let (line, _) = line_col(text, offset);
    let lines: Vec<&str> = text.split('\n').collect();
    let here = lines.get(line - 1)?.trim();
    if here.starts_with('[') {
        return header_name(here);
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .and_then(header_name);
    let key = here
        .split_once('=')
        .map(|(k, _)| k.trim().replace(['"', '\''], ""))
        .filter(|k| !k.is_empty() && !k.starts_with('#'));
    match (table, key) {
        (Some(table), Some(key)) => Some(format!("{table}.{key}")),
        (None, Some(key)) => Some(key),
        (Some(table), None) => Some(table),
        (None, None) => None,
    }
}

fn header_name(line: &str) -> Option<String> {
    let inner = line.trim_start_matches('[');
    let end = inner.find(']')?;
    let name: String = inner[..end]
        .split('.')
        .map(|part| part.trim().trim_matches(['"', '\'']))
        .collect::<Vec<_>>()
        .join(".");
    (!name.is_empty()).then_some(name)
}

// ---------------------------------------------------------------------------
// Writing.

/// Writes `contents` to `path` atomically with permissions `mode` (unix):
/// creates missing parent directories (0700), writes a temp file in the same
/// directory whose mode is set *before* any content goes in, fsyncs it, and
/// renames it over `path`. A reader sees the old file or the new one, never a
/// mix; a failure leaves the old file untouched.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), ConfigError> {
    let err = |source: std::io::Error| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_private_dir_all(&dir).map_err(err)?;

    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(err)?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    tmp.write_all(contents).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    // Make the rename itself durable; not every platform can fsync a directory.
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

// ---------------------------------------------------------------------------
// The template.

/// The commented config file `earshot config init` writes. It documents the
/// format and parses as is (its endpoints are placeholders under `.invalid`,
/// which never resolves, until the operator fills in real addresses).
pub fn template() -> String {
    TEMPLATE.to_owned()
}

const TEMPLATE: &str = r#"# earshot configuration.
#
# Which file: `--config FILE`, else $EARSHOT_CONFIG, else this per-user
# default (`earshot config path` shows which one is in use).
# This file may hold an API key: keep it private (`earshot config init`
# creates it with mode 0600).
#
# Order of precedence, lowest first: this file's defaults, the chosen
# profile, the environment, command-line flags:
#   --profile NAME / $EARSHOT_PROFILE   beats `default_profile` below
#   --url URL      / $EARSHOT_URL       puts every endpoint at one origin
#                                       (e.g. an emulator); no file needed
#   --api-key KEY  / $EARSHOT_API_KEY   beats the profile's key source
# Unknown keys are errors, so a typo never goes unnoticed.
# `earshot config show` prints what a command would use (key masked).

default_profile = "prod"

[profiles.prod]
# Default data-residency region for dictation and sync:
# "global" (default), "us" or "eu".
region = "global"

# Where the API key comes from: at most one of
#   api_key_env  = "VAR"          the environment variable VAR
#   api_key_file = "prod.key"     a file holding only the key; relative paths
#                                 are relative to this file's directory, `~/`
#                                 is your home; it must be mode 0600; a
#                                 trailing newline is ignored
#   api_key      = "..."          inline here (this file must then be 0600)
# With none, pass --api-key / $EARSHOT_API_KEY.
api_key_env = "EARSHOT_API_KEY"

# Shortcut: every endpoint at one origin (an emulator, a proxy); entries in
# the endpoints table below then override single ones:
#   url = "http://127.0.0.1:7300"
# Without `url`, all eight endpoints are required.

# The platform's addresses, one per placeholder of the platform interface.
# Replace these examples (`.invalid` never resolves) with your account's.
[profiles.prod.endpoints]
# {agents_url}: voice agent API: webhook subscriptions, sessions, deliveries.
agents = "https://agents.example.invalid"
# {base_url}: pre-recorded transcription API: uploads, transcript jobs.
prerecorded = "https://prerecorded.example.invalid"
# {dictation_url}: dictation, global default; routes to the nearest region.
dictation = "https://dictation.example.invalid"
# {dictation_url_us}: dictation, US data residency.
dictation_us = "https://dictation-us.example.invalid"
# {dictation_url_eu}: dictation, EU data residency.
dictation_eu = "https://dictation-eu.example.invalid"
# {sync_url}: sync transcription, global default; routes to the fastest region.
sync = "https://sync.example.invalid"
# {sync_url_us}: sync transcription, US data residency (data stays in the US).
sync_us = "https://sync-us.example.invalid"
# {sync_url_eu}: sync transcription, EU data residency (data stays in the EU).
sync_eu = "https://sync-eu.example.invalid"

# A second profile, e.g. for a local emulator (`earshot emulator` prints its
# URL first and its API key on the second line):
#
# [profiles.local]
# url = "http://127.0.0.1:7300"
# api_key_file = "local.key"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters_from_one() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        // 'é' is two bytes but one column.
        assert_eq!(line_col(text, 9), (2, 3));
        assert_eq!(line_col(text, 999), (3, 1));
    }

    #[test]
    fn line_col_never_splits_a_character() {
        let text = "é";
        assert_eq!(line_col(text, 1), (1, 1));
    }

    #[test]
    fn field_at_joins_the_table_header_and_the_key() {
        let text = "x = 1\n[profiles.\"prod\"]\n# c\n  tokn = \"v\"\n";
        let offset = text.find("tokn").unwrap_or(0);
        assert_eq!(
            field_at(text, offset).as_deref(),
            Some("profiles.prod.tokn")
        );
        assert_eq!(field_at(text, 0).as_deref(), Some("x"));
        let header = text.find("[profiles").unwrap_or(0);
        assert_eq!(field_at(text, header).as_deref(), Some("profiles.prod"));
    }

    #[test]
    fn key_file_paths_are_relative_to_the_config_file() {
        let config = Path::new("/etc/earshot/config.toml");
        assert_eq!(
            key_file_path(config, "prod.key"),
            PathBuf::from("/etc/earshot/prod.key")
        );
        assert_eq!(key_file_path(config, "/run/key"), PathBuf::from("/run/key"));
    }

    #[test]
    fn template_names_every_endpoint_key() {
        let t = template();
        for name in ENDPOINT_NAMES {
            assert!(t.contains(&format!("\n{name} = ")), "{name} missing");
        }
    }
}
