//! The maintenance lease and the retention of a replica on a PostgreSQL
//! store, in `/metrics`: whether this replica holds the lease
//! (`earshot_maintenance_lease_held`, 1 or 0), who holds it
//! (`earshot_maintenance_lease_holder{holder="HOST:PID"} 1`, one series;
//! none while nobody does), and the retention runs of this replica (the
//! last run's time, the bytes it freed, the bytes freed in all). The
//! figures are kept by `listen` in [`MaintenanceGauges`] and read whole at
//! each scrape.

use std::sync::{Mutex, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

/// What the gauges show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaintenanceFigures {
    /// This replica holds the maintenance lease.
    pub held: bool,
    /// Who holds it (a live lease), if anyone.
    pub holder: Option<String>,
    /// When this replica's last retention run ended (Unix ms), done or
    /// failed.
    pub retention_last_run_ms: Option<i64>,
    /// Bytes the last finished run freed.
    pub retention_last_freed_bytes: u64,
    /// Bytes freed by every run of this replica.
    pub retention_freed_bytes: u64,
    /// Runs finished, and failed.
    pub retention_runs: u64,
    pub retention_failures: u64,
}

/// The figures, shared by whoever keeps them and the scrape.
#[derive(Debug, Default)]
pub struct MaintenanceGauges {
    figures: Mutex<MaintenanceFigures>,
}

impl MaintenanceGauges {
    /// Changes the figures in one go (a scrape sees before or after).
    pub fn update(&self, change: impl FnOnce(&mut MaintenanceFigures)) {
        change(&mut self.figures.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// A copy of the figures now.
    pub fn figures(&self) -> MaintenanceFigures {
        self.figures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Registered as a collector: reads the gauges at each scrape.
#[derive(Debug)]
pub(super) struct MaintenanceCollector(pub(super) std::sync::Arc<MaintenanceGauges>);

fn gauge<N: EncodeGaugeValue + std::fmt::Debug + Send + Sync>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: N,
) -> Result<(), std::fmt::Error> {
    let metric = encoder.encode_descriptor(name, help, unit, MetricType::Gauge)?;
    ConstGauge::new(value).encode(metric)
}

impl Collector for MaintenanceCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = self.0.figures();
        gauge(
            &mut encoder,
            "earshot_maintenance_lease_held",
            "1 while this replica holds the maintenance lease of the PostgreSQL store (it \
             runs the retention and makes the next days' partitions), else 0",
            None,
            i64::from(now.held),
        )?;
        let mut family = encoder.encode_descriptor(
            "earshot_maintenance_lease_holder",
            "The replica holding the maintenance lease (HOST:PID), as this replica last read \
             the lease; no series while nobody holds it",
            None,
            MetricType::Gauge,
        )?;
        if let Some(holder) = &now.holder {
            let labels = [("holder", holder.as_str())];
            ConstGauge::new(1_i64).encode(family.encode_family(&labels)?)?;
        }
        gauge(
            &mut encoder,
            "earshot_retention_last_run_timestamp",
            "When this replica's last retention run ended, done or failed (Unix time; 0 \
             before any)",
            Some(&Unit::Seconds),
            now.retention_last_run_ms.unwrap_or_default() as f64 / 1000.0,
        )?;
        gauge(
            &mut encoder,
            "earshot_retention_last_freed",
            "Bytes the last retention run of this replica freed (the days of events it \
             dropped)",
            Some(&Unit::Bytes),
            i64::try_from(now.retention_last_freed_bytes).unwrap_or(i64::MAX),
        )?;
        for (name, help, unit, value) in [
            (
                "earshot_retention_freed",
                "Bytes freed by the retention runs of this replica",
                Some(&Unit::Bytes),
                now.retention_freed_bytes,
            ),
            (
                "earshot_retention_runs",
                "Retention runs this replica finished",
                None,
                now.retention_runs,
            ),
            (
                "earshot_retention_failures",
                "Retention runs of this replica that failed (tried again at the next turn)",
                None,
                now.retention_failures,
            ),
        ] {
            let metric = encoder.encode_descriptor(name, help, unit, MetricType::Counter)?;
            ConstCounter::new(value).encode(metric)?;
        }
        Ok(())
    }
}
