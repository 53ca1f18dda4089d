//! In a real terminal: the real console (tmux, `capture-pane`) on a
//! profile whose platform then stops. The Subscriptions title says the
//! list's age ("as of …"); a refresh that fails says so in words ("refresh
//! failed …: <reason>"), the last rows kept on screen, so the state reads
//! without colour too. A pane whose refreshes stall (the platform slow to
//! answer) says its data is stale, in amber, before anything failed.

use std::time::Duration;

use earshot_core::api::types::agents::EventKind;

use crate::common::tmux::Tmux;

/// The first frame waits for the console to start.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// The pane's title line (just under the tab bar).
fn title(screen: &str) -> &str {
    screen.lines().nth(1).unwrap_or_default()
}

/// The real console in tmux on a config of two profiles, `platform`'s
/// first, once its first frame is up; the directory holding the config.
fn console_on(
    platform: &crate::common::Harness,
    other: &crate::common::Harness,
) -> (Tmux, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let key = crate::common::API_KEY;
    let config =
        crate::common::two_profile_config(dir.path(), (&platform.base, key), (&other.base, key));
    let mut tmux = Tmux::new();
    tmux.start_console(&config);
    tmux.wait_for("the console", START_TIMEOUT, |screen| {
        screen.contains("Health").then_some(())
    });
    (tmux, dir)
}

#[test]
fn a_failed_refresh_says_so_in_the_title_and_keeps_the_rows() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let platform = runtime.block_on(crate::common::start());
    let other = runtime.block_on(crate::common::start());
    let (_receiver, subscription) =
        runtime.block_on(platform.healthy_subscriber(&[EventKind::CallEnded]));
    let short = subscription.id[..8].to_owned();
    let (tmux, _dir) = console_on(&platform, &other);
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

/// The SGR sequence in force where `needle` starts on `line` of a capture
/// with colours (`capture-pane -e`): the last escape before it.
fn sgr_before(line: &str, needle: &str) -> Option<String> {
    let at = line.find(needle)?;
    let before = &line[..at];
    let start = before.rfind("\u{1b}[")?;
    let end = before[start..].find('m')? + start;
    Some(before[start..=end].to_owned())
}

#[test]
fn a_stalled_refresh_turns_the_age_amber_then_a_failed_one_says_so() {
    use crate::common::{Receiver, Reply};
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let platform = runtime.block_on(crate::common::start());
    let other = runtime.block_on(crate::common::start());
    // A receiver that answers 503: the platform retries, minutes apart at
    // the emulator's real time scale, so the session stays live.
    let busy = runtime.block_on(Receiver::start(|_, _| Reply::status(503, "busy")));
    let (subscription, call) = runtime.block_on(platform.failed_call_to(&busy.url()));
    runtime.block_on(platform.wait_records(
        &call,
        &subscription.id,
        "a first attempt",
        |records| !records.is_empty(),
    ));
    let (tmux, _dir) = console_on(&platform, &other);
    tmux.press("3", "the Deliveries pane", |s| {
        title(s).trim_start().starts_with("Deliveries")
    });
    tmux.key("i");
    tmux.type_text(&call);
    tmux.press("Enter", "the live session with its age", |s| {
        title(s).contains("auto-refresh") && title(s).contains("as of")
    });

    // The platform now takes a minute to answer the attempts: no refresh
    // arrives, and the age passes twice the pane's period.
    runtime.block_on(platform.arm_fault(serde_json::json!({
        "path_prefix": "/v1/sessions/",
        "latency_ms": 60_000,
        "count": 1_000,
    })));
    let (_, screen) = tmux.wait_for("a stale age", Duration::from_secs(30), |s| {
        title(s).contains("stale: as of").then_some(())
    });
    assert!(
        screen.contains(&subscription.id[..8]),
        "the rows stay:\n{screen}"
    );
    let coloured = tmux.screen_with_colours();
    let line = coloured
        .lines()
        .find(|line| line.contains("stale: as of"))
        .unwrap_or_else(|| panic!("the title, coloured:\n{coloured}"));
    let stale = sgr_before(line, "stale: as of").expect("a colour on the age");
    // "loading…" (a refresh in flight) or "auto-refresh": the warn role.
    let warn = sgr_before(line, "loading")
        .or_else(|| sgr_before(line, "auto-refresh"))
        .unwrap_or_else(|| panic!("a warn part in {line:?}"));
    assert_eq!(stale, warn, "the age in the warn colour (amber): {line:?}");
    let muted = sgr_before(line, "all attempts").expect("a colour on the muted part");
    assert_ne!(stale, muted, "{line:?}");

    // Then the platform is gone: the refresh fails, said in words.
    runtime.block_on(platform.emulator.shutdown());
    tmux.wait_for("a failed refresh", Duration::from_secs(30), |s| {
        title(s).contains("refresh failed").then_some(())
    });
    drop(other);
}
