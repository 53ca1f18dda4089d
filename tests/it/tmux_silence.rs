//! In a real terminal at 80×24: the console on a store whose observer
//! went quiet (events a second apart, then none for longer than that pace
//! allows) leads the Health title with `observer silent since HH:MM`, not
//! cut by anything else in the title. The silence floor is lowered
//! (`EARSHOT_SILENCE_FLOOR_MS`) so the test needs no minute of quiet.

use std::path::Path;
use std::time::Duration;

use crate::common::tmux::{Tmux, shell_quote};

#[test]
fn a_quiet_observer_leads_the_health_title_at_80_columns() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let platform = runtime.block_on(crate::common::start());
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("earshot.db");
    // 20 events a second apart, the last 30 s ago: 10 intervals are 10 s.
    let now = chrono::Utc::now().timestamp_millis();
    runtime.block_on(crate::store_files::store_with_events_at(
        &db,
        20,
        now - 49_000,
        1_000,
    ));

    let mut tmux = Tmux::new();
    let binary = shell_quote(Path::new(env!("CARGO_BIN_EXE_earshot")));
    let inner = format!(
        "EARSHOT_SILENCE_FLOOR_MS=1000 EARSHOT_STORE={} {binary} --url {} --api-key {}; \
         echo \"EXIT:$?\"; sleep 60",
        shell_quote(&db),
        platform.base,
        crate::common::API_KEY
    );
    tmux.start_sized(
        &format!("sh -c '{}'", inner.replace('\'', r"'\''")),
        (80, 24),
    );
    let (title, screen) = tmux.wait_for(
        "the silence in the title",
        Duration::from_secs(15),
        |screen| {
            let title = screen.lines().nth(1).unwrap_or_default().to_owned();
            title.contains("observer silent since").then_some(title)
        },
    );
    assert!(
        title
            .trim_start()
            .starts_with("Health · observer silent since"),
        "the silence leads the title:\n{screen}"
    );
}
