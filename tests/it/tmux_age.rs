//! In a real terminal: the real console (tmux, `capture-pane`) on a
//! profile whose platform then stops. The Subscriptions title says the
//! list's age ("as of …"); a refresh that fails says so in words ("refresh
//! failed …: <reason>"), the last rows kept on screen, so the state reads
//! without colour too.

use std::path::Path;
use std::time::Duration;

use earshot_core::api::types::agents::EventKind;

use crate::common::tmux::{Tmux, shell_quote};

/// The first frame waits for the console to start.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// The pane's title line (just under the tab bar).
fn title(screen: &str) -> &str {
    screen.lines().nth(1).unwrap_or_default()
}

#[test]
fn a_failed_refresh_says_so_in_the_title_and_keeps_the_rows() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let platform = runtime.block_on(crate::common::start());
    let other = runtime.block_on(crate::common::start());
    let (_receiver, subscription) =
        runtime.block_on(platform.healthy_subscriber(&[EventKind::CallEnded]));
    let short = subscription.id[..8].to_owned();
    let dir = tempfile::tempdir().expect("a temp dir");
    let key = crate::common::API_KEY;
    let config =
        crate::common::two_profile_config(dir.path(), (&platform.base, key), (&other.base, key));

    let mut tmux = Tmux::new();
    let binary = shell_quote(Path::new(env!("CARGO_BIN_EXE_earshot")));
    let inner = format!(
        "{binary} --config {}; echo \"EXIT:$?\"; sleep 60",
        shell_quote(&config)
    );
    tmux.start(&format!("sh -c '{}'", inner.replace('\'', r"'\''")));
    tmux.wait_for("the console", START_TIMEOUT, |screen| {
        screen.contains("Health").then_some(())
    });
    tmux.press("2", "the subscription listed, with the list's age", |s| {
        title(s).trim_start().starts_with("Subscriptions")
            && title(s).contains("as of")
            && s.contains(&short)
    });

    // The platform goes away; `r` reads the list again.
    runtime.block_on(platform.emulator.shutdown());
    let screen = tmux.press("r", "the failed refresh in the title", |s| {
        title(s).contains("refresh failed")
    });
    assert!(
        screen.contains(&short),
        "the last rows stay on screen:\n{screen}"
    );
    drop(other);
}
