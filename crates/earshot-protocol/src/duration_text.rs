//! Durations as an operator reads them, in one style for every message, table
//! and console line: "850 ms", "1.5 s", "12 s", "2 min 5 s", "41 min",
//! "3 h 2 min", "2 d 3 h". Machine-readable output (JSON) keeps its numbers and
//! does not come here.
//!
//! The style: a number, a space, a unit (`ms`, `s`, `min`, `h`, `d`). While
//! the largest unit counts fewer than ten, the next one follows unless it is
//! zero ("2 min 5 s", "3 h 2 min", "5 min 1 s" past a "5 min" tolerance), or
//! a tenth for seconds and milliseconds ("1.5 s", "2.5 ms"); from ten on the
//! largest unit stands alone ("41 min", "12 s"): the smaller part no longer
//! changes what an operator does, and a countdown's words then change once a
//! minute, not every second. Parts are cut, never rounded up, so a countdown
//! never shows more than is left. Any duration under 1000 days fits in 10
//! characters ("9 min 59 s"). A table with several duration columns may
//! use [`compact_secs`], the largest unit alone ("1 min", "3 h"), which fits
//! in 6.
//!
//! [`parse`] reads durations back, the one grammar of every flag, query
//! and config value that takes one (`--since`, `--retention`, `since:`,
//! `store prune --older-than`, `--sweep-every`): parts of a number and a
//! unit (`ms`, `s`, `m` or `min`, `h`, `d`), spaces between them allowed
//! and none needed: `90s`, `30m`, `1h30m`, `2 min 5 s`, `1.5 s`. Whatever
//! [`of`] prints parses back.

use std::time::Duration;

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// Width of a table column that holds any [`of`] or [`of_secs`] text of a
/// duration under 1000 days.
pub const COLUMN_WIDTH: u16 = 10;

/// Width of a table column that holds any [`compact_secs`] text of a
/// duration under 1000 days.
pub const COMPACT_WIDTH: u16 = 6;

/// `duration` in the one style: "0 s", "850 ms", "1.5 s", "2 min 5 s".
pub fn of(duration: Duration) -> String {
    if duration.is_zero() {
        return "0 s".into();
    }
    match duration.as_secs() {
        0 => below_a_second(duration.subsec_micros()),
        secs @ 1..10 => with_tenth(secs, duration.subsec_millis() / 100, "s"),
        secs => of_secs(secs),
    }
}

/// Whole seconds in the one style: "0 s", "12 s", "2 min 5 s", "41 min".
pub fn of_secs(secs: u64) -> String {
    match secs {
        0..MINUTE => format!("{secs} s"),
        MINUTE..HOUR => pair(secs / MINUTE, "min", secs % MINUTE, "s"),
        HOUR..DAY => pair(secs / HOUR, "h", secs % HOUR / MINUTE, "min"),
        _ => pair(secs / DAY, "d", secs % DAY / HOUR, "h"),
    }
}

/// Whole seconds as the largest unit alone, for narrow table columns:
/// "0 s", "59 s", "1 min" (for 1 min 59 s too), "41 min", "3 h", "2 d".
pub fn compact_secs(secs: u64) -> String {
    match secs {
        0..MINUTE => format!("{secs} s"),
        MINUTE..HOUR => format!("{} min", secs / MINUTE),
        HOUR..DAY => format!("{} h", secs / HOUR),
        _ => format!("{} d", secs / DAY),
    }
}

/// A scheduled time relative to now, `delta_secs` after it (negative: it
/// has passed): "in 2 min", "due now", "overdue 4 s". A time that passed is
/// said as passed, never as a countdown stuck at zero.
pub fn due(delta_secs: i64) -> String {
    match delta_secs {
        0 => "due now".into(),
        1.. => format!("in {}", of_secs(delta_secs.unsigned_abs())),
        _ => format!("overdue {}", of_secs(delta_secs.unsigned_abs())),
    }
}

/// A time something happened, `secs_since` before now: "4 s ago", "just
/// now" (under a second); a time ahead (a clock ahead of ours) reads
/// "in 4 s".
pub fn ago(secs_since: i64) -> String {
    match secs_since {
        0 => "just now".into(),
        1.. => format!("{} ago", of_secs(secs_since.unsigned_abs())),
        _ => format!("in {}", of_secs(secs_since.unsigned_abs())),
    }
}

/// A measured time given in milliseconds (server timings, round trips):
/// "0.4 ms", "12 ms", "1.5 s". A negative or unreadable value reads "0 s".
pub fn of_millis(millis: f64) -> String {
    if millis.is_nan() || millis <= 0.0 {
        return of(Duration::ZERO);
    }
    of(Duration::try_from_secs_f64(millis / 1000.0).unwrap_or(Duration::MAX))
}

/// Why a text is not a duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("`{0}`: give a duration like 90s, 30m, 2h, 7d or 1h30m")]
    Unreadable(String),
    #[error("`{0}` is too long a duration")]
    TooLong(String),
}

/// Reads a duration in the one grammar (see the module doc). Surrounding
/// spaces are ignored; an empty text, a part without a unit, a unit
/// without a number or a negative number is unreadable.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    let unreadable = || DurationError::Unreadable(text.to_owned());
    let mut rest = text;
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return Err(unreadable());
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let after = after.trim_start();
        let unit_end = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let seconds_per = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3_600.0,
            "d" => 86_400.0,
            _ => return Err(unreadable()),
        };
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return Err(unreadable());
        }
        let count: f64 = number.parse().map_err(|_| unreadable())?;
        let part = Duration::try_from_secs_f64(count * seconds_per)
            .map_err(|_| DurationError::TooLong(text.to_owned()))?;
        total = total
            .checked_add(part)
            .ok_or_else(|| DurationError::TooLong(text.to_owned()))?;
        rest = after.trim_start();
    }
    Ok(total)
}

fn below_a_second(micros: u32) -> String {
    let millis = micros / 1000;
    if millis < 10 {
        with_tenth(u64::from(millis), micros % 1000 / 100, "ms")
    } else {
        format!("{millis} ms")
    }
}

fn with_tenth(whole: u64, tenth: u32, unit: &str) -> String {
    if tenth == 0 {
        format!("{whole} {unit}")
    } else {
        format!("{whole}.{tenth} {unit}")
    }
}

fn pair(large: u64, large_unit: &str, small: u64, small_unit: &str) -> String {
    if large >= 10 || small == 0 {
        format!("{large} {large_unit}")
    } else {
        format!("{large} {large_unit} {small} {small_unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> String {
        of(Duration::from_millis(millis))
    }

    #[test]
    fn one_grammar_reads_every_spelling() {
        let secs = |n| Ok(Duration::from_secs(n));
        assert_eq!(parse("90s"), secs(90));
        assert_eq!(parse(" 30m "), secs(1_800));
        assert_eq!(parse("30min"), secs(1_800));
        assert_eq!(parse("2h"), secs(7_200));
        assert_eq!(parse("7d"), secs(604_800));
        assert_eq!(parse("1h30m"), secs(5_400));
        assert_eq!(parse("2 min 5 s"), secs(125));
        assert_eq!(parse("1.5 s"), Ok(Duration::from_millis(1_500)));
        assert_eq!(parse("850 ms"), Ok(Duration::from_millis(850)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        for wrong in [
            "",
            "90",
            "h",
            "2 hours",
            "5w",
            "-5m",
            "1.h",
            ".5s",
            "1h x",
            "yesterday",
        ] {
            assert!(
                matches!(parse(wrong), Err(DurationError::Unreadable(_))),
                "{wrong:?}: {:?}",
                parse(wrong)
            );
        }
        assert!(matches!(
            parse("99999999999999999999999d"),
            Err(DurationError::TooLong(_))
        ));
    }

    proptest::proptest! {
        /// Whatever [`of`] prints reads back as at most what it was (parts
        /// are cut, never rounded up) and within the part it cut.
        #[test]
        fn every_printed_duration_parses_back(millis in 0u64..86_400_000_000) {
            let duration = Duration::from_millis(millis);
            let printed = of(duration);
            let read = parse(&printed).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert!(read <= duration, "{printed}: {read:?} > {duration:?}");
            let cut = duration - read;
            // What the style cuts: below a tenth under 10 units, the next
            // unit down from 10 on.
            let most_cut = match duration.as_secs() {
                0 => Duration::from_micros(100).max(duration / 10),
                1..60 => Duration::from_millis(1_000),
                60..3_600 => Duration::from_secs(60),
                3_600..86_400 => Duration::from_secs(3_600),
                _ => Duration::from_secs(86_400),
            };
            proptest::prop_assert!(cut <= most_cut, "{printed}: cut {cut:?}");
        }
    }

    #[test]
    fn a_time_relative_to_now_says_whether_it_passed() {
        assert_eq!(due(125), "in 2 min 5 s");
        assert_eq!(due(0), "due now");
        assert_eq!(due(-4), "overdue 4 s");
        assert_eq!(due(-600), "overdue 10 min");
        assert_eq!(ago(14), "14 s ago");
        assert_eq!(ago(0), "just now");
        assert_eq!(ago(-3), "in 3 s");
    }

    #[test]
    fn zero_reads_zero_seconds() {
        assert_eq!(of(Duration::ZERO), "0 s");
        assert_eq!(of_secs(0), "0 s");
        assert_eq!(of_millis(0.0), "0 s");
    }

    #[test]
    fn under_a_second_reads_milliseconds() {
        assert_eq!(ms(850), "850 ms");
        assert_eq!(ms(10), "10 ms");
        assert_eq!(ms(999), "999 ms");
        assert_eq!(of(Duration::from_micros(2_500)), "2.5 ms");
        assert_eq!(of(Duration::from_micros(400)), "0.4 ms");
        // Under a tenth of a millisecond, cut like every other part.
        assert_eq!(of(Duration::from_micros(40)), "0 ms");
    }

    #[test]
    fn a_few_seconds_keep_their_tenth() {
        assert_eq!(ms(1_000), "1 s");
        assert_eq!(ms(1_500), "1.5 s");
        assert_eq!(ms(1_099), "1 s");
        assert_eq!(ms(9_999), "9.9 s");
    }

    #[test]
    fn ten_seconds_and_more_are_whole() {
        assert_eq!(ms(10_000), "10 s");
        assert_eq!(ms(12_900), "12 s");
        assert_eq!(of_secs(59), "59 s");
    }

    #[test]
    fn exactly_a_minute_reads_one_minute() {
        assert_eq!(of_secs(60), "1 min");
        assert_eq!(ms(60_000), "1 min");
    }

    #[test]
    fn minutes_carry_seconds_while_under_ten() {
        assert_eq!(of_secs(125), "2 min 5 s");
        assert_eq!(of_secs(184), "3 min 4 s");
        assert_eq!(of_secs(301), "5 min 1 s");
        assert_eq!(of_secs(599), "9 min 59 s");
        assert_eq!(of_secs(600), "10 min");
        assert_eq!(of_secs(41 * 60 + 5), "41 min");
        assert_eq!(of_secs(3_599), "59 min");
    }

    #[test]
    fn hours_carry_minutes_while_under_ten() {
        assert_eq!(of_secs(3_600), "1 h");
        assert_eq!(of_secs(3_659), "1 h");
        assert_eq!(of_secs(3 * 3_600 + 2 * 60 + 59), "3 h 2 min");
        assert_eq!(of_secs(12 * 3_600 + 30 * 60), "12 h");
        assert_eq!(of_secs(86_399), "23 h");
    }

    #[test]
    fn days_carry_hours_while_under_ten() {
        assert_eq!(of_secs(86_400), "1 d");
        assert_eq!(of_secs(2 * 86_400 + 3 * 3_600 + 59 * 60), "2 d 3 h");
        assert_eq!(of_secs(30 * 86_400 + 5 * 3_600), "30 d");
    }

    #[test]
    fn compact_keeps_the_largest_unit_alone() {
        assert_eq!(compact_secs(0), "0 s");
        assert_eq!(compact_secs(59), "59 s");
        assert_eq!(compact_secs(60), "1 min");
        assert_eq!(compact_secs(119), "1 min");
        assert_eq!(compact_secs(3 * 3_600 + 2 * 60), "3 h");
        assert_eq!(compact_secs(2 * 86_400 + 3 * 3_600), "2 d");
    }

    #[test]
    fn measured_milliseconds_read_in_the_same_style() {
        assert_eq!(of_millis(0.4), "0.4 ms");
        assert_eq!(of_millis(12.5), "12 ms");
        assert_eq!(of_millis(1_500.0), "1.5 s");
        assert_eq!(of_millis(-3.0), "0 s");
        assert_eq!(of_millis(f64::NAN), "0 s");
        assert_eq!(of_millis(f64::INFINITY), of(Duration::MAX));
    }

    #[test]
    fn every_duration_under_a_thousand_days_fits_the_column() {
        let widest = (0..1_000 * DAY)
            .step_by(997)
            .chain([10 * MINUTE - 1, 10 * HOUR - 1, 10 * DAY - 1, 999 * DAY])
            .map(|secs| of_secs(secs).len())
            .max();
        assert_eq!(widest, Some(usize::from(COLUMN_WIDTH)));
        assert!(ms(9_999).len() <= usize::from(COLUMN_WIDTH));
        let widest = (0..1_000 * DAY)
            .step_by(997)
            .chain([HOUR - 1, DAY - 1, 999 * DAY])
            .map(|secs| compact_secs(secs).len())
            .max();
        assert_eq!(widest, Some(usize::from(COMPACT_WIDTH)));
    }
}
