//! What a prune keeps and what it removes: the retention period
//! ([`Period`], read from `30d`, `12h`, `90m` or `90s`), the cutoffs of one prune
//! ([`Rules`]) and the sessions held past the first of them
//! ([`held_sessions`]).

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rusqlite::Connection;

use super::steps::text;

pub(super) const MINUTE_MS: i64 = 60_000;

pub(super) const HOUR_MS: i64 = 60 * MINUTE_MS;

pub(super) const DAY_MS: i64 = 24 * HOUR_MS;

/// The longest period accepted: 100 years.
const LONGEST_MS: i64 = 36_500 * DAY_MS;

/// How long the store keeps what it holds (`30d`, `12h`, `90m`, `90s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Period {
    ms: i64,
}

/// A period that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PeriodError {
    #[error("`{0}`: give a duration such as 30d, 12h, 90m, 90s or 1h30m")]
    Unreadable(String),
    #[error("`{0}`: a retention period is longer than zero")]
    Zero(String),
    #[error("`{0}` is longer than 100 years")]
    TooLong(String),
}

impl Period {
    /// One hour.
    pub const HOUR: Period = Period { ms: HOUR_MS };

    /// Reads `30d`, `12h`, `90m`, `90s` or `1h30m` (the one grammar of
    /// [`crate::duration_text::parse`]), to the millisecond.
    pub fn parse(text: &str) -> Result<Period, PeriodError> {
        use crate::duration_text::{self, DurationError};
        let text = text.trim();
        let period = duration_text::parse(text).map_err(|error| match error {
            DurationError::Unreadable(_) => PeriodError::Unreadable(text.to_owned()),
            DurationError::TooLong(_) => PeriodError::TooLong(text.to_owned()),
        })?;
        let ms = i64::try_from(period.as_millis())
            .ok()
            .filter(|ms| *ms <= LONGEST_MS)
            .ok_or_else(|| PeriodError::TooLong(text.to_owned()))?;
        if ms == 0 {
            return Err(PeriodError::Zero(text.to_owned()));
        }
        Ok(Period { ms })
    }

    pub fn as_millis(self) -> i64 {
        self.ms
    }

    pub fn as_duration(self) -> Duration {
        Duration::from_millis(self.ms.unsigned_abs())
    }
}

impl FromStr for Period {
    type Err = PeriodError;

    fn from_str(text: &str) -> Result<Period, PeriodError> {
        Period::parse(text)
    }
}

/// In the largest unit that divides it: `30d`, `36h`, `90m`, `90s`,
/// `1500ms` (what [`Period::parse`] reads back).
impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [
            (DAY_MS, "d"),
            (HOUR_MS, "h"),
            (MINUTE_MS, "m"),
            (1_000, "s"),
        ];
        match units.iter().find(|(per, _)| self.ms % per == 0) {
            Some((per, unit)) => write!(f, "{}{unit}", self.ms / per),
            None => write!(f, "{}ms", self.ms),
        }
    }
}

/// What one prune removes: rows older than `cutoff_ms`, but the rows of a
/// held session (see the module comment) only when older than
/// `hold_limit_ms` (one more period back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    pub cutoff_ms: i64,
    pub hold_limit_ms: i64,
}

impl Rules {
    /// The rules of a prune at `now_ms` keeping `period`.
    pub fn at(period: Period, now_ms: i64) -> Rules {
        let cutoff_ms = now_ms.saturating_sub(period.as_millis());
        Rules {
            cutoff_ms,
            hold_limit_ms: cutoff_ms.saturating_sub(period.as_millis()),
        }
    }

    /// Whether a row of `time_ms`, of `session` (when it has one), goes.
    pub(super) fn removes(
        &self,
        time_ms: i64,
        session: Option<&str>,
        held: &HashSet<String>,
    ) -> bool {
        time_ms < self.cutoff_ms
            && (time_ms < self.hold_limit_ms || !session.is_some_and(|id| held.contains(id)))
    }
}

/// Sessions whose rows are kept past the period: one of their events is
/// `missed` or `pending` for a subscription, inside an incident that is
/// still open; or a recovery of theirs was started and never finished.
pub fn held_sessions(conn: &Connection) -> rusqlite::Result<HashSet<String>> {
    let mut statement = conn.prepare(
        "SELECT o.session_id FROM incidents i
         JOIN event_outcomes o
           ON o.subscription_id = i.subscription_id
          AND o.http_status_code = i.http_status_code
          AND o.error_class = i.error_class
          AND o.last_failure_ms BETWEEN i.first_seen_ms AND i.last_seen_ms
         WHERE i.resolved_ms IS NULL AND o.state IN ('missed', 'pending')
         UNION
         SELECT session_id FROM recoveries WHERE finished_ms IS NULL",
    )?;
    let rows = statement.query_map([], |row| Ok(text(row.get_ref(0)?)))?;
    let mut held = HashSet::new();
    for row in rows {
        if let Some(id) = row? {
            held.insert(id);
        }
    }
    Ok(held)
}
