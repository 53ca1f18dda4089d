//! The observer's silence and the per-subscription figures of a
//! PostgreSQL store in `/metrics`, the same on every replica:
//! `earshot_observer_silent`, `earshot_observer_silent_since_timestamp_seconds`,
//! `earshot_subscriptions_enabled` and `earshot_subscription_events`,
//! SQLite's names and meanings, judged by the same rules from the same
//! facts read from the store (`history::report_postgres::coverage_postgres`
//! over the last day, as SQLite's sweeper reads it, and
//! `store::totals::subscription_totals_postgres`). Each replica reads them
//! when scraped ([`StoreObserverGauges::refresh`]: bounded by
//! [`READ_WITHIN`], read again at most every [`FRESH_FOR`], as the
//! sweep's figures are), so an alert fires from any replica whoever
//! sweeps; none carries a replica's label, so aggregate across replicas
//! with `max`, never `sum`. A read that fails or takes too long leaves the
//! figures read before (logged at debug); until a first read, none.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use super::store_sweeps::{FRESH_FOR, READ_WITHIN};
use super::{SILENT_HELP, SILENT_SINCE_HELP, render_subscriptions};
use crate::history::report_postgres::coverage_postgres;
use crate::store::postgres::{PgError, PgStore};
use crate::store::totals::{SubscriptionTotals, subscription_totals_postgres};

/// The window the observer's coverage is judged over (SQLite's sweeper
/// reads the same day).
const WINDOW_MS: i64 = 24 * 3_600_000;

/// What the store showed at the last read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObserverFigures {
    /// Since when the observer is silent (its last filed event), or `None`.
    pub silent_since_ms: Option<i64>,
    /// Every listed subscription with its events by state.
    pub subscriptions: Vec<SubscriptionTotals>,
}

/// The figures as last read, and where to read them.
#[derive(Debug)]
pub struct StoreObserverGauges {
    store: PgStore,
    /// When the figures were last asked for (held while a read is under
    /// way, so scrapes at once make one read).
    asked: tokio::sync::Mutex<Option<Instant>>,
    figures: Mutex<Option<ObserverFigures>>,
}

impl StoreObserverGauges {
    pub fn new(store: PgStore) -> StoreObserverGauges {
        StoreObserverGauges {
            store,
            asked: tokio::sync::Mutex::new(None),
            figures: Mutex::new(None),
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
        match tokio::time::timeout(READ_WITHIN, read(&self.store)).await {
            Ok(Ok(figures)) => {
                *self.figures.lock().unwrap_or_else(PoisonError::into_inner) = Some(figures);
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "the observer's figures could not be read from the store");
            }
            Err(_) => {
                tracing::debug!("reading the observer's figures from the store took too long")
            }
        }
    }

    /// The figures as last read; `None` before the first read.
    pub fn figures(&self) -> Option<ObserverFigures> {
        self.figures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The silence (judged now) and the per-subscription totals.
async fn read(store: &PgStore) -> Result<ObserverFigures, PgError> {
    let now = crate::store::now_ms();
    let coverage = coverage_postgres(store, now - WINDOW_MS, now).await?;
    Ok(ObserverFigures {
        silent_since_ms: coverage.silent_since_ms,
        subscriptions: subscription_totals_postgres(store).await?,
    })
}

/// Registered as a collector: renders the figures as last read.
#[derive(Debug)]
pub(super) struct StoreObserverCollector(pub(super) Arc<StoreObserverGauges>);

impl Collector for StoreObserverCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        match self.0.figures() {
            Some(figures) => render(&figures, encoder),
            None => Ok(()),
        }
    }
}

/// The exposition of `figures` (also what the unit tests render).
pub(super) fn render(
    figures: &ObserverFigures,
    mut encoder: DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    // A registered metric's help gets a full stop from the registry; a
    // collector's is written as given.
    let metric = encoder.encode_descriptor(
        "earshot_observer_silent",
        &format!("{SILENT_HELP}."),
        None,
        MetricType::Gauge,
    )?;
    ConstGauge::new(i64::from(figures.silent_since_ms.is_some())).encode(metric)?;
    let metric = encoder.encode_descriptor(
        "earshot_observer_silent_since_timestamp",
        &format!("{SILENT_SINCE_HELP}."),
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    let since = figures.silent_since_ms.map_or(0.0, |ms| ms as f64 / 1000.0);
    ConstGauge::new(since).encode(metric)?;
    render_subscriptions(&figures.subscriptions, encoder)
}
