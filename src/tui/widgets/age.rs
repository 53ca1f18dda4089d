//! The age of a pane's data, for its title: "as of 14 s ago", "stale: as
//! of 3 min ago" (older than twice the pane's refresh period, in the warn
//! role) or "refresh failed 12 s ago: <reason> · data as of 3 min ago" (the
//! error role, the last data kept on screen). Read from the pane's
//! [`Load`] (when its last load succeeded and failed). The words say what
//! the colour says, so the mono theme and NO_COLOR lose nothing. They
//! change once a second at most: a pane redraws for them only when
//! [`words`] differ from the last drawn.

use std::time::{Duration, Instant};

use ratatui::text::Span;

use crate::tui::load::Load;
use crate::tui::theme::{Role, Theme};
use earshot_core::duration_text;

/// The period of a pane that stopped refreshing on purpose (nothing more
/// is to come): its data is never stale, and its age is said exactly.
pub(crate) const NOT_REFRESHED: Duration = Duration::MAX;

/// How old data reads at `now`, and the role it is drawn in; `None` before
/// anything was loaded or failed (the pane says "loading…" then).
pub(crate) fn words<T>(load: &Load<T>, now: Instant, period: Duration) -> Option<(String, Role)> {
    let ago = |at: Instant| ago(at, now);
    let data = load.succeeded_at().map(ago);
    if let (Some(failed), Some(reason)) = (load.failed_at(), load.error()) {
        let data = data.map_or("no data yet".to_owned(), |data| {
            format!("data as of {data}")
        });
        return Some((
            format!("refresh failed {}: {reason} · {data}", ago(failed)),
            Role::Error,
        ));
    }
    let at = load.succeeded_at()?;
    let data = data.unwrap_or_default();
    let age = now.saturating_duration_since(at);
    if age > period.saturating_mul(2) {
        Some((format!("stale: as of {data}"), Role::Warn))
    } else if age < period && period != NOT_REFRESHED {
        // Within its refresh period the words hold still ("as of < 2 s
        // ago"): a title that ticked every second cost a redraw a second
        // over a thin link, and said nothing more.
        Some((
            format!("as of < {} ago", duration_text::of(period)),
            Role::Muted,
        ))
    } else {
        Some((format!("as of {data}"), Role::Muted))
    }
}

/// How long before `now` `at` was: "14 s ago", "just now" (whole seconds;
/// the words change once a second at most, once a minute past ten).
pub(crate) fn ago(at: Instant, now: Instant) -> String {
    let secs = now.saturating_duration_since(at).as_secs();
    duration_text::ago(i64::try_from(secs).unwrap_or(i64::MAX))
}

/// Whether the clock moving from `before` to `after` changes what
/// [`words`] say: a pane redraws for its age only then (once a second at
/// most, not every tick).
pub(crate) fn moved<T>(load: &Load<T>, before: Instant, after: Instant, period: Duration) -> bool {
    words(load, before, period) != words(load, after, period)
}

/// [`words`] as a title part (" · as of 14 s ago"), empty before anything
/// was loaded.
pub(crate) fn spans<T>(
    load: &Load<T>,
    now: Instant,
    period: Duration,
    theme: &Theme,
) -> Vec<Span<'static>> {
    match words(load, now, period) {
        Some((text, role)) => vec![
            Span::styled(" · ", theme.style(Role::Muted)),
            Span::styled(text, theme.style(role)),
        ],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_secs(5);

    fn loaded(age: Duration) -> Load<Vec<u32>> {
        let mut load = Load::new();
        load.set(vec![1]);
        load.age_by(age);
        load
    }

    #[test]
    fn nothing_loaded_says_nothing() {
        let load: Load<Vec<u32>> = Load::new();
        assert_eq!(words(&load, Instant::now(), PERIOD), None);
    }

    #[test]
    fn fresh_data_says_its_age_and_turns_stale_past_twice_the_period() {
        let load = loaded(Duration::from_secs(4));
        let (text, role) = words(&load, Instant::now(), PERIOD).expect("loaded");
        assert_eq!((text.as_str(), role), ("as of < 5 s ago", Role::Muted));
        let load = loaded(Duration::from_secs(7));
        let (text, role) = words(&load, Instant::now(), PERIOD).expect("loaded");
        assert_eq!((text.as_str(), role), ("as of 7 s ago", Role::Muted));
        let load = loaded(Duration::from_secs(11));
        let (text, role) = words(&load, Instant::now(), PERIOD).expect("loaded");
        assert_eq!((text.as_str(), role), ("stale: as of 11 s ago", Role::Warn));
    }

    #[test]
    fn a_failed_refresh_says_why_and_keeps_the_datas_age() {
        let mut load = loaded(Duration::from_secs(30));
        let seq = load.start();
        load.finish(seq, Err::<Vec<u32>, _>("connection refused"));
        load.age_by(Duration::from_secs(12));
        let (text, role) = words(&load, Instant::now(), PERIOD).expect("loaded");
        assert_eq!(
            text,
            "refresh failed 12 s ago: connection refused · data as of 42 s ago"
        );
        assert_eq!(role, Role::Error);
        assert_eq!(load.value(), &[1], "the last data stays");
    }

    #[test]
    fn the_age_advances_with_the_clock() {
        let load = loaded(Duration::ZERO);
        let now = Instant::now();
        let within = now + Duration::from_secs(3);
        assert!(
            !moved(&load, now, within, PERIOD),
            "still within its period"
        );
        let later = now + Duration::from_secs(6);
        assert!(moved(&load, within, later, PERIOD));
        assert_eq!(
            words(&load, later, PERIOD).map(|(text, _)| text),
            Some("as of 6 s ago".to_owned())
        );
    }
}
