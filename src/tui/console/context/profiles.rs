//! Opening a profile of the config file for a switch ([`ConfigProfiles`]):
//! resolve it, build its client, find its store and load its theme. The
//! event loop calls [`ProfileSource::open`]; tests can give it any source.
//!
//! A switch reads the profile from the config file alone: `--url`,
//! `--api-key`, `EARSHOT_URL` and `EARSHOT_API_KEY` belong to the profile
//! the console was started with. Carried over, they would point "profile
//! B" at account A's platform, or send A's key to B's endpoints.

use std::path::{Path, PathBuf};

use super::Account;
use crate::tui::kernel::{StoreAt, StorePath};
use crate::tui::theme::{self, ColorDepth, LoadedTheme, ThemeRequest};
use earshot_core::api::Client;
use earshot_core::config::{Paths, ResolveOptions, resolve};

/// A profile opened for a switch: what the console then runs on.
pub(crate) struct Opened {
    pub(crate) account: Account,
    pub(crate) client: Client,
    /// Its incident-history store (or why there is none).
    pub(crate) store: StorePath,
    /// Its theme (the `--theme` of the run, else the profile's, else the
    /// default), with a notice when it could not be loaded as asked.
    pub(crate) theme: LoadedTheme,
}

/// Where the console finds the profiles it switches to.
pub(crate) trait ProfileSource {
    /// The profile `name`, ready to run on, or why it cannot be used (a
    /// sentence for the status bar).
    fn open(&self, name: &str) -> Result<Opened, String>;
}

/// The profiles of a config file (`--config`, else `EARSHOT_CONFIG`, else
/// the per-user one).
#[derive(Clone, Debug, Default)]
pub(crate) struct ConfigProfiles {
    config: Option<PathBuf>,
    /// `--theme`: beats every profile's `theme`.
    theme_flag: Option<String>,
}

impl ConfigProfiles {
    pub(crate) fn new(config: Option<PathBuf>, theme_flag: Option<String>) -> ConfigProfiles {
        ConfigProfiles { config, theme_flag }
    }
}

impl ProfileSource for ConfigProfiles {
    fn open(&self, name: &str) -> Result<Opened, String> {
        let resolved = resolve(&ResolveOptions {
            config_path: self.config.clone(),
            profile: Some(name.to_owned()),
            url: None,
            api_key: None,
        })
        .map_err(|error| error.to_string())?;
        let key = resolved.api_key.clone().ok_or_else(|| {
            format!(
                "it has no API key source of its own: give [profiles.{name}] one of api_key_env, \
                 api_key_file or api_key in {} (a switch does not carry --api-key / \
                 EARSHOT_API_KEY over to another profile)",
                resolved.config_file.display()
            )
        })?;
        let url_policy = crate::tui::console::policy_for(&resolved.endpoints.agents);
        let client = Client::new(resolved.endpoints.clone(), key)
            .map_err(|error| error.to_string())?
            .with_url_policy(url_policy);
        let paths = Paths::compute(self.config.as_deref()).ok();
        let store = store_path(None, resolved.store.clone(), paths.as_ref());
        let themes = resolved.config_file.parent().map(|dir| dir.join("themes"));
        let theme = load_theme(
            self.theme_flag.as_deref(),
            resolved.theme.as_deref(),
            themes.as_deref(),
        );
        Ok(Opened {
            account: Account {
                profile: name.to_owned(),
                region: resolved.region.as_str().into(),
                read_only: resolved.read_only,
                url_policy,
            },
            client,
            store,
            theme,
        })
    }
}

/// The store file the console reads: the one given (the demo's), else
/// `EARSHOT_STORE`, else the profile's `store`, else `earshot.db` in the
/// state directory. A PostgreSQL URL is connected at the console's start
/// only (`cli::console`, before the terminal is taken, so a bad URL or an
/// unreachable server is said there): here, for a profile switched to, it
/// is refused in one line.
pub(crate) fn store_path(
    given: Option<PathBuf>,
    profile: Option<PathBuf>,
    paths: Option<&Paths>,
) -> StorePath {
    let path = given
        .or_else(|| std::env::var_os("EARSHOT_STORE").map(PathBuf::from))
        .or(profile)
        .or_else(|| paths.map(|paths| earshot_core::store::default_path(&paths.state_dir)))
        .ok_or_else(|| {
            String::from("no state directory for the incident-history store: set EARSHOT_STORE")
        })?;
    if earshot_core::store::postgres::is_postgres_url(&path.to_string_lossy()) {
        return Err(
            "a PostgreSQL store is opened when the console starts, not at a profile switch: \
             start the console with this profile (or EARSHOT_STORE) to read it"
                .to_owned(),
        );
    }
    Ok(StoreAt::File(path))
}

/// The console's theme: `--theme`, else `NO_COLOR`'s mono, else the
/// profile's `theme`, else the default; user themes from `themes_dir`.
pub(crate) fn load_theme(
    flag: Option<&str>,
    profile: Option<&str>,
    themes_dir: Option<&Path>,
) -> LoadedTheme {
    let env = |name: &str| std::env::var(name).ok();
    let no_color = theme::no_color(&env);
    theme::load(&ThemeRequest {
        name: flag.or(profile.filter(|_| !no_color)),
        user_dir: themes_dir,
        no_color,
        depth: Some(ColorDepth::detect(&env)),
    })
}
