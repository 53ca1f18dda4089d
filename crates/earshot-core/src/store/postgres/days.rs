//! The day partitions of `earshot.events`: one table a UTC day of the
//! events' `occurred_ms` (the payload's timestamp, which a redelivery
//! carries unchanged, so every copy of an event meets the first in the
//! same partition and its key). A day is made before it is needed
//! ([`ensure_around`] at connect: today and tomorrow) or when an event
//! finds none ([`ensure_day`]).
//!
//! A day is made as a table of its own with a check constraint matching
//! its range, then attached: `ATTACH PARTITION` takes a SHARE UPDATE
//! EXCLUSIVE lock on `events`, which filing (ROW EXCLUSIVE) does not wait
//! for, where `CREATE TABLE … PARTITION OF` would take an ACCESS
//! EXCLUSIVE one; the constraint spares the attach a scan. Makers take an
//! advisory lock, so two replicas making the same day make it once.
//!
//! A day the retention is dropping (detached, or its detach pending, and
//! not yet dropped: `prune.rs`) is neither made nor attached again here:
//! [`ensure_day`] says it is not there, and filing waits for it to go.

use deadpool_postgres::Client;

use super::PgError;
use super::schema::{LOCK_CLASS, lock};

/// A day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// The partition of the day holding `occurred_ms`: `events_d20261205`;
/// a day outside the years 1970 to 9999 (a timestamp no platform sends)
/// by its number, `events_n…` or before 1970 `events_m…`.
pub fn partition_name(occurred_ms: i64) -> String {
    let day = occurred_ms.div_euclid(DAY_MS);
    let date = chrono::DateTime::from_timestamp_millis(day.saturating_mul(DAY_MS))
        .filter(|_| day >= 0)
        .map(|time| time.format("%Y%m%d").to_string())
        .filter(|date| date.len() == 8);
    match date {
        Some(date) => format!("events_d{date}"),
        None if day < 0 => format!("events_m{}", day.unsigned_abs()),
        None => format!("events_n{day}"),
    }
}

/// The first millisecond of the day a partition named `name` holds: the
/// inverse of [`partition_name`], `None` for a name it would not give.
pub fn day_start(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("events_")?;
    let (kind, digits) = rest.split_at_checked(1)?;
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let day: i64 = match kind {
        "d" => {
            let date = chrono::NaiveDate::parse_from_str(digits, "%Y%m%d").ok()?;
            date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis() / DAY_MS
        }
        "n" => digits.parse().ok()?,
        "m" => -digits.parse::<i64>().ok()?,
        _ => return None,
    };
    let start = day.checked_mul(DAY_MS)?;
    (partition_name(start) == name).then_some(start)
}

/// Makes the partitions of the days of `now_ms` and the day after, when
/// missing.
pub(crate) async fn ensure_around(client: &mut Client, now_ms: i64) -> Result<(), PgError> {
    for day in [now_ms, now_ms + DAY_MS] {
        ensure_day(client, day).await?;
    }
    Ok(())
}

/// Makes the partition holding `occurred_ms` unless it exists: whether
/// the day is attached now, `false` while a table of its name is kept
/// apart from `events` (a prune dropping it).
pub(crate) async fn ensure_day(client: &mut Client, occurred_ms: i64) -> Result<bool, PgError> {
    let start = occurred_ms.div_euclid(DAY_MS) * DAY_MS;
    let end = start.saturating_add(DAY_MS);
    let name = partition_name(occurred_ms);
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &lock::DAYS],
    )
    .await?;
    let found = tx
        .query_one(
            "SELECT to_regclass('earshot.' || $1) IS NOT NULL,
                    EXISTS (SELECT 1 FROM pg_inherits
                            WHERE inhrelid = to_regclass('earshot.' || $1)
                              AND inhparent = 'earshot.events'::regclass
                              AND NOT inhdetachpending)",
            &[&name],
        )
        .await?;
    let (exists, attached): (bool, bool) = (found.try_get(0)?, found.try_get(1)?);
    if !exists {
        // The bounds are integers this code computed, and the name is made
        // of digits: nothing from outside is spliced into the statement.
        tx.batch_execute(&format!(
            "CREATE TABLE earshot.{name}
                 (LIKE earshot.events INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
             ALTER TABLE earshot.{name} ADD CONSTRAINT {name}_range
                 CHECK (occurred_ms >= {start} AND occurred_ms < {end});
             ALTER TABLE earshot.events ATTACH PARTITION earshot.{name}
                 FOR VALUES FROM ({start}) TO ({end});
             ALTER TABLE earshot.{name} DROP CONSTRAINT {name}_range;"
        ))
        .await?;
    }
    tx.commit().await?;
    Ok(attached || !exists)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_is_named_by_its_utc_date() {
        // 2025-12-05T23:59:59.999Z and the next millisecond.
        let last = 1_764_979_199_999;
        assert_eq!(partition_name(last), "events_d20251205");
        assert_eq!(partition_name(last + 1), "events_d20251206");
        assert_eq!(partition_name(0), "events_d19700101");
        assert_eq!(partition_name(-1), "events_m1");
        assert_eq!(partition_name(DAY_MS * 3_000_000), "events_n3000000");
    }

    #[test]
    fn a_partition_name_gives_back_its_day() {
        for day in [0, 1, 20_427, 2_932_896, 3_000_000, -1, -40] {
            let start = day * DAY_MS;
            assert_eq!(day_start(&partition_name(start)), Some(start), "day {day}");
            assert_eq!(day_start(&partition_name(start + DAY_MS - 1)), Some(start));
        }
        for other in [
            "events",
            "events_d",
            "events_d2026120",
            "events_d20261332",
            "events_d020261205",
            "events_n20",
            "events_m0",
            "events_x20261205",
            "events_d2026120a",
        ] {
            assert_eq!(day_start(other), None, "{other}");
        }
    }
}
