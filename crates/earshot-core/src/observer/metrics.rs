//! The observer's metrics, kept with `prometheus-client` and rendered in
//! the OpenMetrics text format (or the Prometheus text format 0.0.4 for a
//! client that does not ask for OpenMetrics): what the receiver answered,
//! how the store keeps up, with `--sweep` what each subscription's
//! events became, and on a PostgreSQL store the maintenance lease and the
//! retention (`maintenance`) and, with `--sweep`, the store's sweep figures
//! whichever replica sweeps (`store_sweeps`) and the observer's silence and
//! per-subscription figures (`store_observer`), both read when scraped.
//! Every name starts with `earshot_`; docs/observer.md lists them all.
//!
//! Counting is lock-free on the request path (each label value's counter is
//! made once, at start); the per-subscription gauges are a snapshot
//! replaced whole after each sweep ([`Metrics::set_subscriptions`]), so a
//! scrape sees one sweep's figures, never half of two.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::store::private::side_file;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::health::StoreHealth;
use crate::api::types::agents::EventKind;
use crate::history::sweep::SweepReport;
use crate::receiver::capture::{Kind, VerdictCode};
use crate::receiver::listen::Received;
use crate::receiver::watch::Watch;
use crate::store::outcomes::EventState;
use crate::store::totals::SubscriptionTotals;

/// The `event` label of a voice-agent event whose type is none of the
/// five the platform sends.
pub const OTHER_EVENT: &str = "other";

/// The `reason` labels of `earshot_requests_rejected_total`.
pub const REJECT_REASONS: [&str; 5] = [
    "bad_signature",
    "stale",
    "malformed",
    "auth_failed",
    "other",
];

/// Upper bounds of the store write histogram, in seconds: from half a
/// millisecond (a group commit on a quiet disk) to the 10 s busy timeout.
const WRITE_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// `earshot_observer_silent`'s help, on either backend.
const SILENT_HELP: &str = "1 while the store shows the observer silent (attempts it never \
     filed, or a gap its pace does not allow: `earshot health` exits 3), else 0; read after \
     each sweep (on PostgreSQL, from the store when scraped)";

/// `earshot_observer_silent_since_timestamp_seconds`' help.
const SILENT_SINCE_HELP: &str =
    "Since when the observer is silent: its last filed event (Unix time; 0 when not silent)";

/// Which text format to render.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 (what Prometheus asks for).
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (curl, `promtool check metrics`).
    PrometheusText,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// it, else the Prometheus text format.
    pub fn from_accept(accept: Option<&str>) -> Format {
        let wants_openmetrics = accept.is_some_and(|accept| {
            accept.split(',').any(|range| {
                let media = range.split(';').next().unwrap_or("").trim();
                media.eq_ignore_ascii_case("application/openmetrics-text")
            })
        });
        if wants_openmetrics {
            Format::OpenMetrics
        } else {
            Format::PrometheusText
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::PrometheusText => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// What the metrics cover: the store (its file, `None` for a PostgreSQL
/// store, and its health) when there is one, and whether the sweep runs.
#[derive(Clone, Debug, Default)]
pub struct Covered {
    pub store: Option<(Option<PathBuf>, Arc<StoreHealth>)>,
    pub sweep: bool,
    /// The maintenance lease and retention of a replica on a PostgreSQL
    /// store.
    pub maintenance: Option<Arc<MaintenanceGauges>>,
    /// The sweep's figures of a PostgreSQL store, read at each scrape
    /// (instead of this process's sweep, `sweep` then false).
    pub store_sweeps: Option<Arc<StoreSweepGauges>>,
    /// The observer's silence and the per-subscription figures of a
    /// PostgreSQL store, read at each scrape (instead of after this
    /// process's sweep).
    pub store_observer: Option<Arc<StoreObserverGauges>>,
    /// Filed events waiting for the free-text index, as the store's
    /// writer counts them ([`crate::store::writer::Writer::words_waiting`]).
    pub words_waiting: Option<Arc<AtomicUsize>>,
}

/// Every metric of one observer; see the module doc.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    received: Vec<(&'static str, Counter)>,
    prerecorded: Counter,
    rejected: Vec<(&'static str, Counter)>,
    duplicates: Counter,
    last_event: Gauge<f64, AtomicU64>,
    store: Option<StoreMetrics>,
    sweep: Option<SweepMetrics>,
    store_sweeps: Option<Arc<StoreSweepGauges>>,
    store_observer: Option<Arc<StoreObserverGauges>>,
}

#[derive(Debug)]
struct StoreMetrics {
    health: Arc<StoreHealth>,
    write_seconds: Histogram,
    write_failures: Counter,
}

#[derive(Debug)]
struct SweepMetrics {
    runs: Counter,
    errors: Counter,
    requests: Counter,
    last_success: Gauge<f64, AtomicU64>,
    sessions_due: Gauge,
    silent: Gauge,
    silent_since: Gauge<f64, AtomicU64>,
    subscriptions: Arc<SubscriptionGauges>,
}

/// A counter per label value of `label`, registered as one family.
fn counters(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: &'static str,
    values: impl IntoIterator<Item = &'static str>,
) -> Vec<(&'static str, Counter)> {
    let family = Family::<[(&'static str, &'static str); 1], Counter>::default();
    registry.register(name, help, family.clone());
    values
        .into_iter()
        .map(|value| (value, family.get_or_create_owned(&[(label, value)])))
        .collect()
}

fn find<'a>(counters: &'a [(&'static str, Counter)], value: &str) -> Option<&'a Counter> {
    counters
        .iter()
        .find(|(each, _)| *each == value)
        .map(|(_, counter)| counter)
}

impl Metrics {
    pub fn new(covered: Covered) -> Metrics {
        let mut registry = Registry::default();
        let received = counters(
            &mut registry,
            "earshot_events_received",
            "Genuine voice-agent events received for the first time (signature verified, \
             not a repeat), by event type",
            "event",
            EventKind::ALL
                .iter()
                .map(|kind| kind.as_str())
                .chain([OTHER_EVENT]),
        );
        let prerecorded = Counter::default();
        registry.register(
            "earshot_prerecorded_webhooks_received",
            "Pre-recorded transcript webhooks accepted for the first time",
            prerecorded.clone(),
        );
        let rejected = counters(
            &mut registry,
            "earshot_requests_rejected",
            "Requests refused with a 4xx, by reason: bad_signature (missing, malformed or \
             not matching), stale (timestamp outside the tolerance), malformed (signed but \
             not an event), auth_failed (pre-recorded auth header), other (not a POST, \
             unrecognised, too large)",
            "reason",
            REJECT_REASONS,
        );
        let duplicates = Counter::default();
        registry.register(
            "earshot_duplicate_deliveries",
            "Deliveries of an event already received: answered 200, not processed again",
            duplicates.clone(),
        );
        let last_event = Gauge::<f64, AtomicU64>::default();
        registry.register_with_unit(
            "earshot_last_event_timestamp",
            "When the last genuine voice-agent delivery arrived, new or repeat (Unix time; \
             with a store, the newest one it holds at start; 0 before any)",
            Unit::Seconds,
            last_event.clone(),
        );
        let words_waiting = covered.words_waiting;
        let store = covered.store.map(|(path, health)| {
            StoreMetrics::register(&mut registry, path, health, words_waiting)
        });
        let sweep = covered.sweep.then(|| SweepMetrics::register(&mut registry));
        if let Some(gauges) = covered.maintenance {
            registry.register_collector(Box::new(maintenance::MaintenanceCollector(gauges)));
        }
        if let Some(gauges) = &covered.store_sweeps {
            registry
                .register_collector(Box::new(store_sweeps::StoreSweepCollector(gauges.clone())));
        }
        if let Some(gauges) = &covered.store_observer {
            registry.register_collector(Box::new(store_observer::StoreObserverCollector(
                gauges.clone(),
            )));
        }
        Metrics {
            registry,
            received,
            prerecorded,
            rejected,
            duplicates,
            last_event,
            store,
            sweep,
            store_sweeps: covered.store_sweeps,
            store_observer: covered.store_observer,
        }
    }

    /// Reads again what a scrape shows from a shared store (the sweep's
    /// figures, the observer's silence and the per-subscription figures of
    /// a PostgreSQL store, read side by side: at most a second, and not
    /// more than once every two); nothing to do otherwise.
    pub async fn refresh(&self) {
        let sweeps = async {
            if let Some(gauges) = &self.store_sweeps {
                gauges.refresh().await;
            }
        };
        let observer = async {
            if let Some(gauges) = &self.store_observer {
                gauges.refresh().await;
            }
        };
        tokio::join!(sweeps, observer);
    }

    /// Renders every metric in `format`.
    pub fn render(&self, format: Format) -> Result<String, std::fmt::Error> {
        let mut text = String::with_capacity(16 * 1024);
        match format {
            Format::OpenMetrics => {
                prometheus_client::encoding::text::encode(&mut text, &self.registry)?
            }
            Format::PrometheusText => {
                prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)?
            }
        }
        Ok(text)
    }

    /// Sets the time of the last event (Unix milliseconds), e.g. from the
    /// store at start.
    pub fn set_last_event_ms(&self, unix_ms: i64) {
        self.last_event.set(unix_ms as f64 / 1000.0);
    }

    /// Counts one sweep: its requests, and whether it failed (an error, or
    /// stopped early).
    pub fn swept(&self, report: Option<&SweepReport>, failed: bool, now_ms: i64) {
        let Some(sweep) = &self.sweep else { return };
        sweep.runs.inc();
        if let Some(report) = report {
            sweep
                .requests
                .inc_by(u64::try_from(report.requests).unwrap_or(u64::MAX));
            sweep.sessions_due.set(report.left_for_later);
        }
        if failed {
            sweep.errors.inc();
        } else {
            sweep.last_success.set(now_ms as f64 / 1000.0);
        }
    }

    /// The observer's silence as the store shows it: since when, or `None`.
    pub fn set_silence(&self, since_ms: Option<i64>) {
        if let Some(sweep) = &self.sweep {
            sweep.silent.set(i64::from(since_ms.is_some()));
            sweep
                .silent_since
                .set(since_ms.map_or(0.0, |ms| ms as f64 / 1000.0));
        }
    }

    /// Replaces the per-subscription gauges with the store's figures.
    pub fn set_subscriptions(&self, totals: Vec<SubscriptionTotals>) {
        if let Some(sweep) = &self.sweep {
            sweep.subscriptions.replace(totals);
        }
    }
}

impl StoreMetrics {
    fn register(
        registry: &mut Registry,
        db: Option<PathBuf>,
        health: Arc<StoreHealth>,
        words_waiting: Option<Arc<AtomicUsize>>,
    ) -> StoreMetrics {
        let write_seconds = Histogram::new(WRITE_BUCKETS);
        registry.register_with_unit(
            "earshot_store_write",
            "Time from handing a genuine event to the store's writer to its commit (the \
             group commit and any wait for the write lock included)",
            Unit::Seconds,
            write_seconds.clone(),
        );
        let write_failures = Counter::default();
        registry.register(
            "earshot_store_write_failures",
            "Events the store could not commit (answered 503: the platform retries)",
            write_failures.clone(),
        );
        registry.register_collector(Box::new(StoreFiles {
            db,
            health: health.clone(),
            words_waiting,
        }));
        StoreMetrics {
            health,
            write_seconds,
            write_failures,
        }
    }
}

impl SweepMetrics {
    fn register(registry: &mut Registry) -> SweepMetrics {
        let runs = Counter::default();
        registry.register(
            "earshot_sweeps",
            "Background sweeps run (each asks the platform for the delivery records of the \
             sessions due)",
            runs.clone(),
        );
        let errors = Counter::default();
        registry.register(
            "earshot_sweep_errors",
            "Background sweeps that failed or stopped early (platform unreachable, key \
             refused, store error); retried at the next interval",
            errors.clone(),
        );
        let requests = Counter::default();
        registry.register(
            "earshot_sweep_requests",
            "Requests the background sweeps sent to the platform",
            requests.clone(),
        );
        let last_success = Gauge::<f64, AtomicU64>::default();
        registry.register_with_unit(
            "earshot_sweep_last_success_timestamp",
            "When the last background sweep finished without error (Unix time; 0 before any)",
            Unit::Seconds,
            last_success.clone(),
        );
        let sessions_due = Gauge::default();
        registry.register(
            "earshot_sweep_sessions_due",
            "Sessions still due after the last sweep (the budget ran out, or attempts are \
             still pending)",
            sessions_due.clone(),
        );
        let silent = Gauge::default();
        registry.register("earshot_observer_silent", SILENT_HELP, silent.clone());
        let silent_since = Gauge::<f64, AtomicU64>::default();
        registry.register_with_unit(
            "earshot_observer_silent_since_timestamp",
            SILENT_SINCE_HELP,
            Unit::Seconds,
            silent_since.clone(),
        );
        let subscriptions = Arc::new(SubscriptionGauges::default());
        registry.register_collector(Box::new(subscriptions.clone()));
        SweepMetrics {
            runs,
            errors,
            requests,
            last_success,
            sessions_due,
            silent,
            silent_since,
            subscriptions,
        }
    }
}

impl Watch for Metrics {
    fn answered(&self, request: &Received) {
        let entry = &request.entry;
        let agents = entry.kind == Kind::Agents;
        let reason = match entry.verdict {
            VerdictCode::Ok if agents => {
                let event = entry
                    .event
                    .as_deref()
                    .and_then(EventKind::parse)
                    .map_or(OTHER_EVENT, EventKind::as_str);
                if let Some(counter) = find(&self.received, event) {
                    counter.inc();
                }
                None
            }
            VerdictCode::Ok => {
                if entry.kind == Kind::Prerecorded {
                    self.prerecorded.inc();
                }
                None
            }
            VerdictCode::Duplicate => {
                self.duplicates.inc();
                None
            }
            VerdictCode::StoreFailed => None,
            VerdictCode::InvalidSignature => Some(match entry.reason.as_deref() {
                Some("timestamp_too_old" | "timestamp_in_future") => "stale",
                _ => "bad_signature",
            }),
            VerdictCode::AuthFailed => Some("auth_failed"),
            VerdictCode::MalformedPayload => Some("malformed"),
            VerdictCode::MethodNotAllowed | VerdictCode::Unrecognized | VerdictCode::TooLarge => {
                Some("other")
            }
        };
        if let Some(counter) = reason.and_then(|reason| find(&self.rejected, reason)) {
            counter.inc();
        }
        // Any genuine voice-agent delivery shows the platform reaches us.
        let genuine = matches!(
            entry.verdict,
            VerdictCode::Ok | VerdictCode::Duplicate | VerdictCode::StoreFailed
        );
        if agents && genuine {
            self.set_last_event_ms(entry.received_unix.saturating_mul(1000));
        }
    }

    fn stored(&self, took: Duration, failed: Option<&str>) {
        let Some(store) = &self.store else { return };
        store.write_seconds.observe(took.as_secs_f64());
        if failed.is_some() {
            store.write_failures.inc();
        }
        store.health.note_write(failed);
    }
}

/// Whether the store can be written and, for a file, its size on disk,
/// read at each scrape (two `stat`s and a lock).
#[derive(Debug)]
struct StoreFiles {
    /// The store's file; `None` for a PostgreSQL store (no size shown).
    db: Option<PathBuf>,
    health: Arc<StoreHealth>,
    /// Shown when the store has a writer in this process (a file store).
    words_waiting: Option<Arc<AtomicUsize>>,
}

impl Collector for StoreFiles {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(db) = &self.db {
            let size = |path: &Path| std::fs::metadata(path).map_or(0, |meta| meta.len());
            let bytes = size(db) + size(&side_file(db, "-wal"));
            let metric = encoder.encode_descriptor(
                "earshot_store_size",
                "Size of the store on disk: the database file and its write-ahead log.",
                Some(&Unit::Bytes),
                MetricType::Gauge,
            )?;
            ConstGauge::new(i64::try_from(bytes).unwrap_or(i64::MAX)).encode(metric)?;
        }
        let writable = i64::from(self.health.check().is_up());
        let metric = encoder.encode_descriptor(
            "earshot_store_writable",
            "1 while the store can be written (what GET /healthz answers 200 for), else 0.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(writable).encode(metric)?;
        if let Some(waiting) = &self.words_waiting {
            let metric = encoder.encode_descriptor(
                "earshot_store_words_waiting",
                "Filed events not yet in the free-text index: a flood's are put in it as the \
                 flood ebbs; free text finds them meanwhile by scanning.",
                None,
                MetricType::Gauge,
            )?;
            let waiting = waiting.load(Ordering::Relaxed);
            ConstGauge::new(i64::try_from(waiting).unwrap_or(i64::MAX)).encode(metric)?;
        }
        // Only once known: before the first check, no figure at all.
        let Some((checked_at, sound)) = self.health.integrity() else {
            return Ok(());
        };
        let metric = encoder.encode_descriptor(
            "earshot_store_check_sound",
            "1 when the last whole-file check of the store (run in the background after the \
             start, then daily) found every page sound, 0 when it found damage.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::from(sound)).encode(metric)?;
        let metric = encoder.encode_descriptor(
            "earshot_store_check_last_timestamp",
            "When the last whole-file check of the store ended (Unix time).",
            Some(&Unit::Seconds),
            MetricType::Gauge,
        )?;
        ConstGauge::new(checked_at).encode(metric)
    }
}

/// The per-subscription gauges: the last snapshot of the store's figures.
#[derive(Debug, Default)]
struct SubscriptionGauges {
    snapshot: Mutex<Arc<Vec<SubscriptionTotals>>>,
}

impl SubscriptionGauges {
    fn replace(&self, totals: Vec<SubscriptionTotals>) {
        *self.snapshot.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(totals);
    }
}

impl Collector for SubscriptionGauges {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snapshot = self
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        render_subscriptions(&snapshot, encoder)
    }
}

/// `earshot_subscriptions_enabled` and `earshot_subscription_events` of
/// `snapshot`, whichever backend it was read from.
fn render_subscriptions(
    snapshot: &[SubscriptionTotals],
    mut encoder: DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let enabled = snapshot.iter().filter(|each| each.enabled).count();
    let metric = encoder.encode_descriptor(
        "earshot_subscriptions_enabled",
        "Subscriptions enabled on the platform, as the last sweep listed them.",
        None,
        MetricType::Gauge,
    )?;
    ConstGauge::new(i64::try_from(enabled).unwrap_or(i64::MAX)).encode(metric)?;
    if snapshot.is_empty() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(
        "earshot_subscription_events",
        "Events of each listed subscription the store holds, by how they ended for it: \
             delivered, pending (in flight or a retry scheduled), missed (failed for good), \
             recovered (missed, then re-sent by earshot), unknown (not swept yet). Refreshed \
             after each sweep.",
        None,
        MetricType::Gauge,
    )?;
    for totals in snapshot.iter() {
        for (state, count) in EventState::ALL.iter().zip(totals.events) {
            let labels = [
                ("subscription", totals.subscription_id.as_str()),
                ("state", state.as_str()),
            ];
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

mod maintenance;
mod store_observer;
mod store_sweeps;
#[cfg(test)]
mod tests;

pub use maintenance::{MaintenanceFigures, MaintenanceGauges};
pub use store_observer::StoreObserverGauges;
pub use store_sweeps::StoreSweepGauges;
