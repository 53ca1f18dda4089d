//! Configuration: where earshot's files live, the profiles file, and the one
//! function that turns flags, environment and file into the settings a
//! command connects with.
//!
//! This module owns:
//! - [`Paths`]: the config file (`--config FILE`, else `EARSHOT_CONFIG`, else
//!   `config.toml` in the per-user config dir from `directories`) and the
//!   state dir (watch lists, logs).
//! - The file format, documented by [`template`](fn@template) (which `earshot config init`
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
//! - Console settings of a profile: `read_only = true` (the console hides
//!   every command that changes the platform, as `--read-only` does; the
//!   flag keeps it on for every profile), `store = "PATH"` (the incident
//!   history of this account, relative like a key file; `--store` /
//!   `EARSHOT_STORE` beat it, and without it the store is the shared
//!   `earshot.db` of the state directory) and `theme = "NAME"` (`--theme`
//!   and `NO_COLOR` beat it), `low_bandwidth = true` (the console refreshes
//!   less often and drops colours that carry no meaning, as
//!   `--low-bandwidth` does). [`profiles`] lists the profiles for the
//!   console's `:ctx`; [`profile_store`] is the `store` the history
//!   commands default to.
//! - `retention = "30d"` in a profile: how long `listen --store` keeps
//!   what it stores ([`Period`]); `listen --retention` beats it. `listen`
//!   reads it with [`profile_retention_of`], which needs no endpoints or
//!   key; every other command checks it with the rest of the profile.
//! - No profile selected (neither `--profile`/`EARSHOT_PROFILE` nor
//!   `default_profile`) is an error listing the profiles, unless `--url` is
//!   given, which needs no profile. There is never an implicit "first
//!   profile".

use std::path::{Path, PathBuf};

use url::Url;

use crate::api::{Endpoints, Region};
use crate::redact::SecretString;

mod error;
mod file;
mod template;
mod write;

pub use error::ConfigError;
pub use template::template;
pub use write::write_atomic;

use error::line_col;
use file::{
    Document, FileConfig, FileProfile, load_key, missing_endpoints_message, profile_endpoints,
    profile_key_source, profile_retention,
};

use crate::store::retention::Period;

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
    /// The profile's `read_only`: the console hides every command that
    /// changes the platform.
    pub read_only: bool,
    /// The profile's `store`, the incident history of its account
    /// (`--store` / `EARSHOT_STORE` beat it).
    pub store: Option<PathBuf>,
    /// The profile's `theme` for the console (`--theme` beats it).
    pub theme: Option<String>,
    /// The profile's `low_bandwidth`: the console writes fewer bytes.
    pub low_bandwidth: bool,
    /// The profile's `retention`: how long `listen --store` keeps what it
    /// stores (`None`: for ever).
    pub retention: Option<Period>,
}

/// A profile as a list of them shows it (`:ctx` in the console).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileSummary {
    pub name: String,
    pub region: Region,
    pub read_only: bool,
    /// Where its agents endpoint is (an origin: no path, no credentials).
    pub agents: Option<String>,
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

/// Every endpoint at `--url`, no profile: the key can come only from the
/// command line.
fn url_only(
    opts: &ResolveOptions,
    url: &Url,
    config_file: PathBuf,
    config_exists: bool,
) -> Result<Resolved, ConfigError> {
    let (api_key, api_key_source) = flag_key(opts)?.unzip_source();
    Ok(Resolved {
        profile_name: None,
        endpoints: Endpoints::all_at(url),
        region: Region::default(),
        api_key,
        api_key_source,
        config_file,
        config_exists,
        read_only: false,
        store: None,
        theme: None,
        low_bandwidth: false,
        retention: None,
    })
}

/// The config file's text, `None` when there is no file.
fn read_config(config_file: &Path) -> Result<Option<String>, ConfigError> {
    match crate::bounded_file::read_to_string(config_file, crate::bounded_file::CONFIG_FILE) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.is_not_found() => Ok(None),
        Err(crate::bounded_file::FileError::Io { source, .. }) => Err(ConfigError::Read {
            path: config_file.to_path_buf(),
            source,
        }),
        Err(refused) => Err(refused.into()),
    }
}

/// Every profile of the config file at `config_path` (the per-user one
/// when `None`), by name; none when there is no file.
pub fn profiles(config_path: Option<&Path>) -> Result<Vec<ProfileSummary>, ConfigError> {
    let config_file = Paths::compute(config_path)?.config_file;
    let Some(text) = read_config(&config_file)? else {
        return Ok(Vec::new());
    };
    let doc = Document {
        path: &config_file,
        text: &text,
    };
    let file: FileConfig = toml::from_str(&text).map_err(|e| doc.toml_error(&e))?;
    Ok(file
        .profiles
        .iter()
        .map(|(name, profile)| {
            let profile = profile.get_ref();
            ProfileSummary {
                name: name.clone(),
                region: profile.region.unwrap_or_default(),
                read_only: profile.read_only,
                agents: profile.agents_origin(),
            }
        })
        .collect())
}

/// The `store` of the profile a command would use (`profile`, else
/// `default_profile`), for the incident-history commands when neither
/// `--store` nor `EARSHOT_STORE` is given; `None` without a config file, a
/// chosen profile or a `store` in it.
pub fn profile_store(
    config_path: Option<&Path>,
    profile: Option<&str>,
) -> Result<Option<PathBuf>, ConfigError> {
    with_chosen_profile(config_path, profile, |doc, prefix, chosen| {
        chosen.store_path(doc, prefix)
    })
}

/// A profile's `store`: a file, or a PostgreSQL database by its URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreSetting {
    File(PathBuf),
    /// `postgres://USER@HOST:PORT/DB` (never a password: the URL refuses one).
    Postgres(String),
}

/// The `store` of the profile a command would use, file or PostgreSQL
/// URL, for `listen --store` (which takes either) when neither a path nor
/// `EARSHOT_STORE` is given.
pub fn profile_store_setting(
    config_path: Option<&Path>,
    profile: Option<&str>,
) -> Result<Option<StoreSetting>, ConfigError> {
    with_chosen_profile(config_path, profile, |doc, prefix, chosen| {
        chosen.store_setting(doc, prefix)
    })
}

/// The `retention` of the profile a command would use, for `listen
/// --store` (which needs neither endpoints nor a key; `--retention` beats
/// it); `None` without a config file, a chosen profile or a `retention`
/// in it.
pub fn profile_retention_of(
    config_path: Option<&Path>,
    profile: Option<&str>,
) -> Result<Option<Period>, ConfigError> {
    with_chosen_profile(config_path, profile, profile_retention)
}

/// What `read` makes of the profile a command would use (`profile`, else
/// `default_profile`), given the file and the profile's dotted name;
/// `None` without a config file or a chosen profile. The file must parse
/// and the chosen profile exist.
fn with_chosen_profile<T>(
    config_path: Option<&Path>,
    profile: Option<&str>,
    read: impl FnOnce(&Document<'_>, &str, &FileProfile) -> Result<Option<T>, ConfigError>,
) -> Result<Option<T>, ConfigError> {
    let config_file = Paths::compute(config_path)?.config_file;
    let Some(text) = read_config(&config_file)? else {
        return Ok(None);
    };
    let doc = Document {
        path: &config_file,
        text: &text,
    };
    let file: FileConfig = toml::from_str(&text).map_err(|e| doc.toml_error(&e))?;
    let Some((name, chosen_by)) = chosen_profile(profile, &file, &text) else {
        return Ok(None);
    };
    let Some(chosen) = file.profiles.get(&name) else {
        return Err(ConfigError::ProfileNotFound {
            name,
            chosen_by,
            available: file.profiles.keys().cloned().collect(),
            path: config_file,
        });
    };
    read(&doc, &format!("profiles.{name}"), chosen.get_ref())
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
    let source = read_config(&config_file)?;
    let config_exists = source.is_some();

    let Some(text) = source else {
        // No file: only a full override (`--url`) works, and only without an
        // explicitly chosen profile (which would silently be ignored).
        return match (&opts.url, &opts.profile) {
            (Some(url), None) => url_only(opts, url, config_file, config_exists),
            _ => Err(ConfigError::NoConfigFile { path: config_file }),
        };
    };

    let doc = Document {
        path: &config_file,
        text: &text,
    };
    let file: FileConfig = toml::from_str(&text).map_err(|e| doc.toml_error(&e))?;
    let available: Vec<String> = file.profiles.keys().cloned().collect();

    let Some((name, chosen_by)) = chosen_profile(opts.profile.as_deref(), &file, &text) else {
        return match &opts.url {
            Some(url) => url_only(opts, url, config_file, config_exists),
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

    let store = profile.store_path(&doc, &prefix)?;
    let theme = profile.theme_name(&doc, &prefix)?;
    let retention = profile_retention(&doc, &prefix, profile)?;

    Ok(Resolved {
        profile_name: Some(name),
        endpoints,
        region: profile.region.unwrap_or_default(),
        api_key,
        api_key_source,
        config_file,
        config_exists,
        read_only: profile.read_only,
        store,
        theme,
        low_bandwidth: profile.low_bandwidth,
        retention,
    })
}

/// The profile chosen and by what: `--profile` / `EARSHOT_PROFILE`, else
/// `default_profile`, else none.
fn chosen_profile(
    profile: Option<&str>,
    file: &FileConfig,
    text: &str,
) -> Option<(String, String)> {
    match (profile, &file.default_profile) {
        (Some(name), _) => Some((name.to_owned(), format!("--profile / {ENV_PROFILE}"))),
        (None, Some(default)) => {
            let (line, _) = line_col(text, default.span().start);
            Some((
                default.get_ref().clone(),
                format!("`default_profile` at line {line}"),
            ))
        }
        (None, None) => None,
    }
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
