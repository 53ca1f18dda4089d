//! The console above its panes: the app ([`app`]: the state and the one
//! `update(Action) -> Vec<Effect>`), its messages ([`action`]), its
//! commands and the `:` line (`command`, `command_line`), `:ctx`
//! (`context`), the frame around the pane on screen (`view`,
//! `status_bar`), the select loop (`event_loop`), the worker running
//! effects (`worker`) and the typed streams from outside (`inputs`).
//!
//! Every module here is private to this folder: the panes below
//! (`tui::panes`) cannot name the app, its actions, its command line or
//! its history tasks, and the compiler holds that rule (a pane needs only
//! `tui::kernel`). What leaves this folder is the way in,
//! [`run_console`], with its [`ConsoleOptions`], and the benchmarks' door
//! ([`bench`]), in test builds too: the tests that drive a pane through
//! the whole console are here (`tests/panes/`).
//!
//! This file owns the way in, [`run_console`]: a client in hand and the
//! [`ConsoleOptions`] the command line resolved (`earshot` with no
//! subcommand, `earshot demo`), with typed streams for what arrives from
//! outside while it runs ([`inputs`]).

// Private to this folder, in test builds too: the tests that drive a pane
// through the whole console live here (`tests/panes/`), not beside it.
mod action;
mod app;
pub mod bench;
mod command;
mod command_line;
mod context;
mod event_loop;
mod inputs;
mod status_bar;
#[cfg(test)]
mod test_keys;
mod view;
mod worker;

use crate::tui::{clipboard, frame_pace, input, logging, panes, screen, terminal};

use std::path::PathBuf;

use tokio::sync::mpsc::UnboundedReceiver;
use url::{Host, Url};

use crate::tui::kernel::{ConsoleConfig, Handover};
use app::App;
use clipboard::Osc52;
use earshot_core::api::validate::UrlPolicy;
use earshot_core::api::{Client, Region};
use earshot_core::config::Paths;
use earshot_core::receiver::listen::Requests;
use earshot_core::shutdown::Stop;
use event_loop::Services;

/// How the console is started.
#[derive(Debug)]
pub(crate) struct ConsoleOptions {
    /// On the built-in emulator: shows a DEMO marker.
    pub(crate) demo: bool,
    /// `--read-only`: hide every command that changes the platform, on
    /// every profile of the run.
    pub(crate) read_only: bool,
    /// `--low-bandwidth`, or the starting profile's `low_bandwidth`: a
    /// slower refresh and no decorative colours for the whole run (a
    /// `:ctx` switch keeps the link it runs over).
    pub(crate) low_bandwidth: bool,
    /// `--theme NAME`: beats every profile's theme.
    pub(crate) theme: Option<String>,
    /// The profile's own console settings: `read_only`, `theme`, `store`
    /// (`EARSHOT_STORE` beats the store).
    pub(crate) profile_read_only: bool,
    pub(crate) profile_theme: Option<String>,
    pub(crate) profile_store: Option<PathBuf>,
    /// The config file's profiles `:ctx` switches between (none: no
    /// switching), the one the console runs on as the file says it (`None`
    /// with `--url`, which overrides its endpoints), and `--config`, where
    /// a switch reads the profile again.
    pub(crate) profiles: Vec<earshot_core::config::ProfileSummary>,
    pub(crate) current_profile: Option<String>,
    pub(crate) config: Option<PathBuf>,
    /// Shown in the status bar.
    pub(crate) profile_label: String,
    pub(crate) region: String,
    /// Which receiver URLs the create form accepts before sending:
    /// [`UrlPolicy::AnyHttp`] for the demo's loopback receivers.
    pub(crate) url_policy: UrlPolicy,
    /// The directory holding `themes/`; `None`: the per-user config dir.
    pub(crate) config_dir: Option<PathBuf>,
    /// Session and call ids the Deliveries pane offers (most recent
    /// first); the first is loaded at start.
    pub(crate) recent_ids: Vec<String>,
    /// Transcript job ids the Jobs pane watches from the start.
    pub(crate) job_ids: Vec<String>,
    /// A WAV file the Probe pane offers first (the demo's sample).
    pub(crate) probe_sample: Option<PathBuf>,
    /// A receiver already running for the Inbox (its requests arrive as a
    /// feed): its URL.
    pub(crate) inbox_url: Option<String>,
    /// The incident-history store the Health pane reads; `None`: the
    /// default one (`EARSHOT_STORE`, else `earshot.db` in the state dir).
    pub(crate) store: Option<PathBuf>,
    /// A PostgreSQL store (`EARSHOT_STORE`, else the profile's `store`),
    /// connected before the terminal was taken: beats every file.
    pub(crate) postgres: Option<earshot_core::store::postgres::PgStore>,
    /// The platform's clock runs this many times real time (the demo's
    /// emulator: 0.1); shown in the status bar when not 1.
    pub(crate) time_scale: f64,
    /// Transcript job ids submitted outside the console while it runs (the
    /// demo's traffic), one at a time: the Jobs pane watches each (those
    /// waiting together are taken together).
    pub(crate) discovered_jobs: Option<UnboundedReceiver<String>>,
    /// The requests the receiver at [`inbox_url`](Self::inbox_url)
    /// answered, as it answers them: the Inbox lists each.
    pub(crate) received_webhooks: Option<Requests>,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        ConsoleOptions {
            demo: false,
            read_only: false,
            low_bandwidth: false,
            theme: None,
            profile_read_only: false,
            profile_theme: None,
            profile_store: None,
            profiles: Vec::new(),
            current_profile: None,
            config: None,
            profile_label: "-".into(),
            region: Region::default().as_str().into(),
            url_policy: UrlPolicy::PublicHttps,
            config_dir: None,
            recent_ids: Vec::new(),
            job_ids: Vec::new(),
            probe_sample: None,
            inbox_url: None,
            store: None,
            postgres: None,
            time_scale: 1.0,
            discovered_jobs: None,
            received_webhooks: None,
        }
    }
}

/// Runs the console on the real terminal until the operator quits or a
/// signal arrives; the terminal is restored in every case. What arrives
/// from outside meanwhile comes through the options' input streams
/// (`discovered_jobs`, `received_webhooks`). Answers the signal that
/// ended it, if one did (its exit status: [`Stop::exit_code`]).
pub(crate) async fn run_console(
    client: Client,
    options: ConsoleOptions,
) -> color_eyre::Result<Option<Stop>> {
    let feeds = inputs::feeds(options.discovered_jobs, options.received_webhooks);
    let paths = Paths::compute(None).ok();
    if let Some(paths) = &paths
        && let Err(why) = logging::init(&paths.state_dir)
    {
        // Not fatal, and the terminal is still ours to print on.
        eprintln!("earshot: no log file ({why})");
    }
    // The state directory is earshot's own and holds the default store.
    let own_dir = paths.as_ref().map(|paths| paths.state_dir.as_path());
    if let Some(tightened) = own_dir.and_then(earshot_core::store::private::tighten_dir) {
        eprintln!("earshot: {tightened}");
    }
    let themes_dir = options
        .config_dir
        .clone()
        .or_else(|| {
            paths
                .as_ref()
                .and_then(|paths| paths.config_file.parent().map(PathBuf::from))
        })
        .map(|dir| dir.join("themes"));
    let loaded = context::load_theme(
        options.theme.as_deref(),
        options.profile_theme.as_deref(),
        themes_dir.as_deref(),
    );
    let store = match options.postgres.clone() {
        Some(postgres) => Ok(crate::tui::kernel::StoreAt::Postgres(postgres)),
        None => context::store_path(
            options.store.clone(),
            options.profile_store.clone(),
            paths.as_ref(),
        ),
    };
    let mut app = App::new(ConsoleConfig {
        demo: options.demo,
        read_only: options.read_only || options.profile_read_only,
        profile_label: options.profile_label.clone(),
        region: options.region,
        url_policy: options.url_policy,
        time_scale: options.time_scale,
    });
    // Read-only because of the profile is said so, and ends at a switch.
    app.ctx.forced_read_only = options.read_only;
    let profiles: Option<Box<dyn context::ProfileSource>> =
        if options.demo || options.profiles.is_empty() {
            None
        } else {
            Some(Box::new(context::ConfigProfiles::new(
                options.config.clone(),
                options.theme.clone(),
            )))
        };
    if !options.demo {
        app.set_profiles(options.profiles, options.current_profile);
    }
    app.seed(Handover::RecentSessions(options.recent_ids));
    app.seed(Handover::JobIds(options.job_ids));
    if let Some(path) = options.probe_sample {
        app.seed(Handover::ProbeFile(path));
    }
    if let Some(url) = options.inbox_url {
        app.seed(Handover::Listening(url));
    }
    if let Some(notice) = loaded.notice {
        tracing::warn!(%notice, "theme");
        app.notice(notice);
    }
    tracing::info!(demo = options.demo, read_only = options.read_only, low_bandwidth = options.low_bandwidth, theme = %loaded.theme.name, "console starts");
    let theme = if options.low_bandwidth {
        loaded.theme.without_decoration()
    } else {
        loaded.theme
    };

    // Installed before the terminal changes: a signal from now on ends
    // the loop (and restores the terminal) instead of killing the process.
    let signals = earshot_core::shutdown::signals();
    terminal::install_panic_hook();
    let mut terminal = terminal::TerminalGuard::enter()?;
    let pace = match terminal.backend().flusher() {
        screen::Flusher::Scroll => {
            frame_pace::FramePace::for_terminal(options.low_bandwidth, terminal.backend().meter())
        }
        screen::Flusher::Ratatui => frame_pace::FramePace::immediate(),
    };
    let events = input::TerminalInput::start()?;
    let caught = std::sync::OnceLock::new();
    let result = event_loop::run(
        &mut terminal,
        &mut app,
        &theme,
        events,
        async {
            match signals {
                Ok(signals) => {
                    let stop = signals.await;
                    tracing::info!(signal = stop.name(), "leaving");
                    let _ = caught.set(stop);
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot listen for signals");
                    std::future::pending::<()>().await;
                }
            }
        },
        Services {
            client,
            clipboard: Box::new(Osc52::stdout()),
            feeds,
            store,
            profiles,
            pace,
            low_bandwidth: options.low_bandwidth,
        },
    )
    .await;
    drop(terminal);
    tracing::info!("console ends");
    result.map(|()| caught.get().copied())
}

/// The sessions the incident history (the profile's `store`, or the
/// default one) knows, most recently active first, for the Deliveries pane
/// to offer (none when there is no store yet): the console's
/// [`ConsoleOptions::recent_ids`] on a profile.
pub(crate) fn known_sessions(profile_store: Option<PathBuf>) -> Vec<String> {
    let Ok(crate::tui::kernel::StoreAt::File(path)) =
        context::store_path(None, profile_store, Paths::compute(None).ok().as_ref())
    else {
        return Vec::new();
    };
    if !path.exists() {
        return Vec::new();
    }
    earshot_core::store::Store::open(&path)
        .ok()
        .and_then(|store| {
            earshot_core::store::sessions::list(&store, panes::deliveries::RECENT_MAX).ok()
        })
        .map(|known| {
            known
                .into_iter()
                .map(|session| session.session_id)
                .collect()
        })
        .unwrap_or_default()
}

/// Loopback agents endpoint (a local emulator, which then has to allow
/// private receivers) → any http(s) receiver; otherwise the platform's
/// rule. The server checks again either way.
pub(crate) fn policy_for(agents: &Url) -> UrlPolicy {
    let loopback = match agents.host() {
        Some(Host::Domain(name)) => name == "localhost",
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if loopback {
        UrlPolicy::AnyHttp
    } else {
        UrlPolicy::PublicHttps
    }
}

#[cfg(test)]
mod tests;
