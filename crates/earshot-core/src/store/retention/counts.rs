//! The minute and hour count tables the triggers keep: their rows of
//! whole minutes or hours before the cutoff that nothing counts any more
//! go ([`ZeroCountsStep`]).

use rusqlite::types::Value;
use rusqlite::{Connection, params};

use super::policy::{HOUR_MS, MINUTE_MS};
use super::steps::{Candidate, Step, delete, limit};
use super::{Removed, Rules, Table};

/// A step for each count table.
pub(super) fn steps() -> impl Iterator<Item = Box<dyn Step>> {
    COUNTS_TABLES
        .into_iter()
        .map(|counts| Box::new(ZeroCountsStep { counts }) as Box<dyn Step>)
}

/// A table of minute or hour counts kept by triggers, and its key.
#[derive(Clone, Copy)]
struct CountsTable {
    table: Table,
    unit: &'static str,
    unit_ms: i64,
    key: [&'static str; 5],
}

const COUNTS_TABLES: [CountsTable; 4] = [
    CountsTable {
        table: Table::DeliveryCounts,
        unit: "minute",
        unit_ms: MINUTE_MS,
        key: DELIVERY_KEY,
    },
    CountsTable {
        table: Table::DeliveryCountsHourly,
        unit: "hour",
        unit_ms: HOUR_MS,
        key: DELIVERY_KEY,
    },
    CountsTable {
        table: Table::EventCounts,
        unit: "minute",
        unit_ms: MINUTE_MS,
        key: EVENT_KEY,
    },
    CountsTable {
        table: Table::EventCountsHourly,
        unit: "hour",
        unit_ms: HOUR_MS,
        key: EVENT_KEY,
    },
];

/// The key of a count row after its time unit (an unused slot is empty).
const DELIVERY_KEY: [&str; 5] = [
    "subscription_id",
    "status",
    "http_status_code",
    "error_class",
    "",
];

const EVENT_KEY: [&str; 5] = [
    "subscription_id",
    "state",
    "event",
    "http_status_code",
    "error_class",
];

impl CountsTable {
    /// `minute, subscription_id, …`.
    fn columns(&self) -> Vec<&'static str> {
        std::iter::once(self.unit)
            .chain(self.key.iter().copied().filter(|column| !column.is_empty()))
            .collect()
    }
}

/// Count rows of whole minutes or hours before the cutoff that nothing
/// counts any more (the triggers took their rows' counts back down to
/// zero), with the example session id they name.
struct ZeroCountsStep {
    counts: CountsTable,
}

impl Step for ZeroCountsStep {
    fn select(
        &mut self,
        conn: &Connection,
        rules: &Rules,
        size: usize,
    ) -> rusqlite::Result<Vec<Candidate>> {
        let columns = self.counts.columns();
        let sql = format!(
            "SELECT {} FROM {} WHERE {} < ?1 AND count <= 0 LIMIT ?2",
            columns.join(", "),
            self.counts.table.as_str(),
            self.counts.unit
        );
        let first_kept = rules.cutoff_ms.div_euclid(self.counts.unit_ms);
        let mut statement = conn.prepare_cached(&sql)?;
        let rows = statement.query_map(params![first_kept, limit(size)], |row| {
            let key = (0..columns.len())
                .map(|index| row.get::<_, Value>(index))
                .collect::<rusqlite::Result<_>>()?;
            Ok(Candidate::keyed(key))
        })?;
        rows.collect()
    }

    fn remove(
        &self,
        conn: &Connection,
        row: &Candidate,
        _rules: &Rules,
        removed: &mut Removed,
    ) -> rusqlite::Result<()> {
        let matches: Vec<String> = self
            .counts
            .columns()
            .iter()
            .enumerate()
            .map(|(index, column)| format!("{column} = ?{}", index + 1))
            .collect();
        let sql = format!(
            "DELETE FROM {} WHERE {} AND count <= 0",
            self.counts.table.as_str(),
            matches.join(" AND ")
        );
        removed.add(self.counts.table, delete(conn, &sql, row)?);
        Ok(())
    }

    fn holds(&self) -> bool {
        false
    }
}
