//! The console's log: a file under the state dir (created 0700; never the
//! terminal the console owns), created 0600, filtered by `EARSHOT_LOG`
//! (default: info for earshot, warnings from libraries). Callers log names
//! and ids, never request bodies, keys or secrets. [`filter_from_env`]
//! reads `EARSHOT_LOG` for the headless emulator's log too.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The log file's name in the state dir.
pub(crate) const LOG_FILE: &str = "console.log";

/// Sends `tracing` to `<state_dir>/console.log`; the path, or why not.
/// If a subscriber is already installed (say, by the demo), it is kept
/// and the answer is `None`.
pub(crate) fn init(state_dir: &Path) -> Result<Option<PathBuf>, String> {
    if tracing::dispatcher::has_been_set() {
        return Ok(None);
    }
    earshot_core::store::private::create_dir(state_dir)
        .map_err(|error| format!("cannot create {}: {error}", state_dir.display()))?;
    let path = state_dir.join(LOG_FILE);
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(earshot_core::config::PRIVATE_MODE);
    }
    let file = options
        .open(&path)
        .map_err(|error| format!("cannot open {}: {error}", path.display()))?;
    let filter = filter_from_env(
        Targets::new()
            .with_default(LevelFilter::WARN)
            .with_target("earshot", LevelFilter::INFO),
    );
    tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .finish()
        .with(filter)
        .try_init()
        .map_or(Ok(None), |()| Ok(Some(path)))
}

/// The filter `EARSHOT_LOG` gives (`warn,earshot=debug`: a default level,
/// then targets, each with the level it logs from; a target covers the
/// targets it begins), or `default` when it is unset or does not parse.
pub(crate) fn filter_from_env(default: Targets) -> Targets {
    std::env::var("EARSHOT_LOG")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}
