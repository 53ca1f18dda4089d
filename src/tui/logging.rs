//! The console's log: a file under the state dir (created 0700; never the
//! terminal the console owns), created 0600, filtered by `EARSHOT_LOG`
//! (default: info for earshot, warnings from libraries). Callers log names
//! and ids, never request bodies, keys or secrets.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

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
    let filter = EnvFilter::try_from_env("EARSHOT_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,earshot=info"));
    tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .map_or(Ok(None), |()| Ok(Some(path)))
}
