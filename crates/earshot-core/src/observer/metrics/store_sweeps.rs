//! The background sweep's figures of a PostgreSQL store in `/metrics`,
//! the same on every replica whoever sweeps: the replica holding the
//! maintenance lease sweeps and adds each run to its row of
//! `earshot.sweep_figures`; each replica reads the rows when scraped
//! ([`StoreSweepGauges::refresh`]: one statement, bounded by
//! [`READ_WITHIN`], read again at most every [`FRESH_FOR`], so scrapes of
//! several replicas or several scrapers cost one read a second or two).
//!
//! SQLite's names, so its alerts hold: `earshot_sweep_last_success_timestamp_seconds`
//! (the newest success of any holder: "the store has not been swept",
//! whoever should have) and `earshot_sweep_sessions_due` (after the newest
//! run) carry no label; the counters `earshot_sweeps_total`,
//! `earshot_sweep_errors_total`, `earshot_sweep_requests_total` and
//! `earshot_sweep_last_run_timestamp_seconds` carry the `holder` whose runs
//! they count, so a run is counted under one holder and a takeover starts
//! a series rather than resetting one. A read that fails or takes too long
//! leaves the last figures (a store that cannot be read is not swept
//! either, so the last success only ages).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use crate::store::postgres::{PgStore, StoreSweeps};

/// A read this recent is served again rather than read anew.
pub const FRESH_FOR: Duration = Duration::from_secs(2);
/// A read of the figures may take this long; a scrape does not wait more.
pub const READ_WITHIN: Duration = Duration::from_secs(1);

/// The store's sweep figures as last read, and where to read them.
#[derive(Debug)]
pub struct StoreSweepGauges {
    store: PgStore,
    /// When the figures were last asked for (held while a read is under
    /// way, so scrapes at once make one read).
    asked: tokio::sync::Mutex<Option<Instant>>,
    figures: Mutex<StoreSweeps>,
}

impl StoreSweepGauges {
    pub fn new(store: PgStore) -> StoreSweepGauges {
        StoreSweepGauges {
            store,
            asked: tokio::sync::Mutex::new(None),
            figures: Mutex::new(StoreSweeps::default()),
        }
    }

    /// Reads the figures from the store unless read within [`FRESH_FOR`];
    /// at most [`READ_WITHIN`].
    pub async fn refresh(&self) {
        let mut asked = self.asked.lock().await;
        if asked.is_some_and(|at| at.elapsed() < FRESH_FOR) {
            return;
        }
        *asked = Some(Instant::now());
        match tokio::time::timeout(READ_WITHIN, self.store.sweep_figures()).await {
            Ok(Ok(figures)) => {
                *self.figures.lock().unwrap_or_else(PoisonError::into_inner) = figures;
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "the sweep's figures could not be read from the store");
            }
            Err(_) => tracing::debug!("reading the sweep's figures from the store took too long"),
        }
    }

    /// The figures as last read.
    pub fn figures(&self) -> StoreSweeps {
        self.figures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Registered as a collector: renders the figures as last read.
#[derive(Debug)]
pub(super) struct StoreSweepCollector(pub(super) Arc<StoreSweepGauges>);

fn seconds(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

impl Collector for StoreSweepCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        render(&self.0.figures(), encoder)
    }
}

/// The exposition of `figures` (also what the unit tests render).
pub(super) fn render(
    figures: &StoreSweeps,
    mut encoder: DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let metric = encoder.encode_descriptor(
        "earshot_sweep_last_success_timestamp",
        "When a background sweep of the store last finished without error, by whichever \
         replica held the maintenance lease (Unix time; 0 before any)",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    ConstGauge::new(figures.last_success_ms.map_or(0.0, seconds)).encode(metric)?;
    let metric = encoder.encode_descriptor(
        "earshot_sweep_sessions_due",
        "Sessions still due after the store's last background sweep (the budget ran out, or \
         attempts are still pending)",
        None,
        MetricType::Gauge,
    )?;
    ConstGauge::new(figures.sessions_due()).encode(metric)?;
    type Figure = fn(&crate::store::postgres::HolderSweeps) -> i64;
    let counters: [(&str, &str, Figure); 3] = [
        (
            "earshot_sweeps",
            "Background sweeps of the store run by each replica that held the maintenance \
             lease (the same on every replica's /metrics)",
            |row| row.runs,
        ),
        (
            "earshot_sweep_errors",
            "Background sweeps of the store that failed or stopped early, by the replica that \
             ran them",
            |row| row.errors,
        ),
        (
            "earshot_sweep_requests",
            "Requests the background sweeps of the store sent to the platform, by the replica \
             that sent them",
            |row| row.requests,
        ),
    ];
    for (name, help, figure) in counters {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for row in &figures.holders {
            let labels = [("holder", row.holder.as_str())];
            let value = u64::try_from(figure(row)).unwrap_or_default();
            ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "earshot_sweep_last_run_timestamp",
        "When each replica that swept the store last ended a run, done or failed (Unix time)",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    for row in &figures.holders {
        let labels = [("holder", row.holder.as_str())];
        ConstGauge::new(seconds(row.last_run_ms)).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}
