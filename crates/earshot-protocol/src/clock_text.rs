//! Times as an operator reads them: UTC, the clock the store's and the
//! platform's times are shown in; `—` for a time out of range. The console
//! shows times of day ([`utc_clock`], under a `UTC` heading); the command
//! line's text shows one style, [`utc_datetime`] (`2026-11-21 10:00:03Z`,
//! the `Z` saying UTC), and RFC 3339 in its JSON.

use chrono::{TimeZone, Utc};

fn format(ms: i64, pattern: &str) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map_or("—".to_owned(), |at| at.format(pattern).to_string())
}

/// Unix milliseconds as `HH:MM:SS`, UTC.
pub fn utc_clock(ms: i64) -> String {
    format(ms, "%H:%M:%S")
}

/// Unix milliseconds as `2026-11-21 10:00:03Z`: the command line's one
/// human style.
pub fn utc_datetime(ms: i64) -> String {
    format(ms, "%Y-%m-%d %H:%M:%SZ")
}

/// Unix milliseconds as `HH:MM`, UTC ("silent since 14:05").
pub fn utc_minute(ms: i64) -> String {
    format(ms, "%H:%M")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_of_day_are_utc() {
        // 2026-12-05T14:05:09.900Z
        let ms = 1_796_479_509_900;
        assert_eq!(utc_clock(ms), "14:05:09");
        assert_eq!(utc_minute(ms), "14:05");
        assert_eq!(utc_clock(i64::MAX), "—");
        assert_eq!(utc_datetime(ms), "2026-12-05 14:05:09Z");
    }
}
