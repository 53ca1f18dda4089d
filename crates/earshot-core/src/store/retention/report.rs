//! What a prune (or an erasure) reports: the rows removed per table
//! ([`Removed`], [`Table`]) and how the prune went ([`PruneReport`]).

use std::time::Duration;

use super::Rules;

/// The tables a prune or an erasure removes rows from, in the order they
/// are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Events,
    UnfiledEvents,
    EventOutcomes,
    Deliveries,
    Recoveries,
    Sessions,
    Incidents,
    Changes,
    DeliveryCounts,
    DeliveryCountsHourly,
    EventCounts,
    EventCountsHourly,
}

impl Table {
    pub const ALL: [Table; 12] = [
        Table::Events,
        Table::UnfiledEvents,
        Table::EventOutcomes,
        Table::Deliveries,
        Table::Recoveries,
        Table::Sessions,
        Table::Incidents,
        Table::Changes,
        Table::DeliveryCounts,
        Table::DeliveryCountsHourly,
        Table::EventCounts,
        Table::EventCountsHourly,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::UnfiledEvents => "unfiled_events",
            Table::EventOutcomes => "event_outcomes",
            Table::Deliveries => "deliveries",
            Table::Recoveries => "recoveries",
            Table::Sessions => "sessions",
            Table::Incidents => "incidents",
            Table::Changes => "changes",
            Table::DeliveryCounts => "delivery_counts",
            Table::DeliveryCountsHourly => "delivery_counts_hourly",
            Table::EventCounts => "event_counts",
            Table::EventCountsHourly => "event_counts_hourly",
        }
    }

    fn index(self) -> usize {
        Table::ALL
            .iter()
            .position(|table| *table == self)
            .unwrap_or_default()
    }
}

/// Rows removed, per table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    rows: [u64; Table::ALL.len()],
}

impl Removed {
    pub fn add(&mut self, table: Table, rows: u64) {
        self.rows[table.index()] += rows;
    }

    pub fn get(&self, table: Table) -> u64 {
        self.rows[table.index()]
    }

    pub fn total(&self) -> u64 {
        self.rows.iter().sum()
    }

    /// Every table with its count, in [`Table::ALL`] order.
    pub fn per_table(&self) -> impl Iterator<Item = (Table, u64)> + '_ {
        Table::ALL.iter().map(|table| (*table, self.get(*table)))
    }

    /// `{"events": 3, …}` with every table.
    pub fn to_json(&self) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .per_table()
            .map(|(table, rows)| (table.as_str().to_owned(), rows.into()))
            .collect();
        serde_json::Value::Object(map)
    }
}

/// What one prune did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PruneReport {
    pub rules: Option<Rules>,
    pub removed: Removed,
    /// Sessions kept past the period (an open incident or an unfinished
    /// recovery needs them).
    pub held_sessions: usize,
    /// Rows older than the period kept for them.
    pub kept_rows: u64,
    /// Transactions committed.
    pub batches: u64,
    /// The longest a batch held the write lock.
    pub longest_hold: Duration,
    /// Stopped before the end (asked to).
    pub stopped: bool,
    pub elapsed: Duration,
}
