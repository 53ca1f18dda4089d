//! `earshot listen`'s monitoring flags (`--metrics-listen`, `--sweep` with
//! `--sweep-every` and `--sweep-budget`, and the platform connection the
//! sweep uses), and starting what they ask for beside the receiver
//! ([`earshot_core::observer`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::history_args::parse_duration;
use super::{Connection, GlobalOptions};
use earshot_core::observer::endpoints::{self, MonitorServer, Monitored};
use earshot_core::observer::health::{self, StoreHealth};
use earshot_core::observer::metrics::{
    Covered, MaintenanceGauges, Metrics, StoreObserverGauges, StoreSweepGauges,
};
use earshot_core::observer::pg_probe;
use earshot_core::observer::sweeper::{SweepPlan, Sweeper, SweeperThread};
use earshot_core::receiver::watch::Watch;
use earshot_core::store::checker::Checker;
use earshot_core::store::postgres::PgStore;
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, totals};

#[derive(clap::Args, Debug)]
pub(crate) struct ObserverArgs {
    /// Serve GET /healthz and GET /metrics (OpenMetrics for Prometheus) on
    /// this address, e.g. 127.0.0.1:9464; keep it private: the metrics
    /// name every subscription. Never served on the webhook port.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<SocketAddr>,

    /// Sweep the platform's delivery records in the background, so the
    /// store knows what each subscription's events became with no console
    /// open (needs --store, and the profile's API key, EARSHOT_API_KEY or
    /// --api-key).
    #[arg(long, requires = "store")]
    pub(crate) sweep: bool,

    /// How often the background sweep runs (30s, 5m, ...; at least 1s).
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = parse_interval, requires = "sweep")]
    pub(crate) sweep_every: Duration,

    /// Requests one background sweep may send at most.
    #[arg(long, value_name = "N", default_value_t = earshot_core::history::sweep::DEFAULT_BUDGET as u64,
          value_parser = clap::value_parser!(u64).range(1..), requires = "sweep")]
    pub(crate) sweep_budget: u64,

    #[command(flatten)]
    pub(crate) connection: Connection,
}

/// `--sweep-every`: a duration of at least a second.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let every = parse_duration(text)?;
    if every < Duration::from_secs(1) {
        return Err(format!("`{text}`: sweep at most once a second"));
    }
    Ok(every)
}

/// What runs beside the receiver; stopped with [`Observing::stop`].
#[derive(Default)]
pub(crate) struct Observing {
    metrics: Option<Arc<Metrics>>,
    server: Option<MonitorServer>,
    tasks: Vec<JoinHandle<()>>,
    sweeper: Option<SweeperThread>,
    /// The store's health as `/healthz` reads it, with `--metrics-listen`.
    store_health: Option<Arc<StoreHealth>>,
    checker: Option<Checker>,
}

/// The store as `listen` opened it: where, and its writer.
pub(crate) struct OpenStore {
    pub(crate) path: PathBuf,
    pub(crate) writer: Writer,
}

/// What a replica on a PostgreSQL store shows of it: the store (probed
/// for `/healthz` as `holder`) and, with `--sweep`, the store's figures
/// read when scraped, the same on every replica.
pub(crate) struct SharedStore {
    pub(crate) store: PgStore,
    pub(crate) holder: String,
    pub(crate) sweeps: Option<Arc<StoreSweepGauges>>,
    pub(crate) observer: Option<Arc<StoreObserverGauges>>,
}

/// Why the monitoring could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// Bad input (exit 2): the message says what to give.
    #[error("{0}")]
    Usage(String),
    #[error("cannot start the background sweep: {source}")]
    Sweeper { source: std::io::Error },
    #[error("cannot serve /healthz and /metrics on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

impl ObserverArgs {
    /// The sweep a PostgreSQL replica runs while it holds the maintenance
    /// lease, when `--sweep` asks for one; the message when the platform
    /// cannot be reached as configured (exit 2).
    pub(super) fn pg_sweep_job(
        &self,
        global: &GlobalOptions,
    ) -> Result<Option<super::listen_pg_sweep::SweepJob>, String> {
        if !self.sweep {
            return Ok(None);
        }
        Ok(Some(super::listen_pg_sweep::SweepJob {
            client: self.sweep_client(global)?,
            plan: self.plan(),
        }))
    }

    /// The platform client `--sweep` asks with.
    fn sweep_client(&self, global: &GlobalOptions) -> Result<earshot_core::api::Client, String> {
        self.connection.client(global).map_err(|error| {
            format!(
                "--sweep asks the platform for delivery records: {}",
                error
                    .chain()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(": ")
            )
        })
    }

    /// `--sweep-every` and `--sweep-budget`.
    fn plan(&self) -> SweepPlan {
        SweepPlan {
            every: self.sweep_every,
            budget: usize::try_from(self.sweep_budget).unwrap_or(usize::MAX),
        }
    }

    /// Starts what the flags ask for: the sweeper, and the endpoints with
    /// the store's probe (a file's `store`, or a PostgreSQL replica's
    /// `shared`, with the store's figures); `maintenance`, a PostgreSQL
    /// replica's lease and retention, shown in `/metrics`. The receiver is
    /// not started yet; give it [`Observing::watch`].
    pub(crate) async fn start(
        &self,
        global: &GlobalOptions,
        store: Option<&OpenStore>,
        maintenance: Option<Arc<MaintenanceGauges>>,
        shared: Option<SharedStore>,
    ) -> Result<Observing, StartError> {
        let mut observing = Observing::default();
        let client = match (self.sweep, store) {
            (true, Some(_)) => Some(self.sweep_client(global).map_err(StartError::Usage)?),
            (true, None) => {
                return Err(StartError::Usage(
                    "--sweep keeps the store fresh: give --store too".to_owned(),
                ));
            }
            (false, _) => None,
        };
        if let Some(addr) = self.metrics_listen {
            let health =
                (store.is_some() || shared.is_some()).then(|| Arc::new(StoreHealth::default()));
            let covered = Covered {
                store: health
                    .clone()
                    .map(|health| (store.map(|store| store.path.clone()), health)),
                sweep: self.sweep,
                maintenance,
                store_sweeps: shared.as_ref().and_then(|shared| shared.sweeps.clone()),
                store_observer: shared.as_ref().and_then(|shared| shared.observer.clone()),
                words_waiting: store.map(|store| store.writer.words_waiting()),
            };
            let metrics = Arc::new(Metrics::new(covered));
            if let (Some(store), Some(health)) = (store, &health) {
                // Known before the first scrape: the first probe, the last
                // event kept and the subscriptions as last swept.
                health.note_probe(health::probe_once(&store.writer).await);
                seed_from_store(&metrics, store).await;
                observing.tasks.push(tokio::spawn(health::probe_forever(
                    store.writer.clone(),
                    health.clone(),
                )));
            }
            if let (Some(shared), Some(health)) = (shared, &health) {
                // Known before the first scrape: the first probe and the
                // store's figures.
                health.note_probe(pg_probe::probe_once(&shared.store, &shared.holder).await);
                metrics.refresh().await;
                observing.tasks.push(tokio::spawn(pg_probe::probe_forever(
                    shared.store,
                    shared.holder,
                    health.clone(),
                )));
            }
            observing.store_health = health.clone();
            let monitored = Arc::new(Monitored {
                metrics: metrics.clone(),
                store: health,
            });
            let server = MonitorServer::start(addr, endpoints::router(monitored))
                .await
                .map_err(|source| StartError::Bind { addr, source })?;
            eprintln!("serving /healthz and /metrics on {}", server.url());
            if !addr.ip().is_loopback() {
                eprintln!(
                    "note: /metrics names every subscription: let only your monitoring reach {addr}"
                );
            }
            observing.server = Some(server);
            observing.metrics = Some(metrics);
        }
        if let (Some(client), Some(store)) = (client, store) {
            let sweeper = Sweeper {
                client,
                db: store.path.clone(),
                plan: self.plan(),
                metrics: observing.metrics.clone(),
                say: Box::new(|line| {
                    eprintln!("earshot listen: {}", super::output::plain(line));
                }),
            };
            eprintln!(
                "sweeping every {} within {} requests",
                earshot_core::duration_text::of(self.sweep_every),
                self.sweep_budget
            );
            let thread = sweeper
                .spawn()
                .map_err(|source| StartError::Sweeper { source })?;
            observing.sweeper = Some(thread);
        }
        Ok(observing)
    }
}

/// The last event kept and the subscriptions as last swept, read from the
/// store (on the blocking pool) into `metrics`.
async fn seed_from_store(metrics: &Arc<Metrics>, store: &OpenStore) {
    let path = store.path.clone();
    let read = tokio::task::spawn_blocking(move || {
        let store = Store::open(&path).map_err(|error| error.to_string())?;
        let last = totals::last_received_ms(&store).map_err(|error| error.to_string())?;
        let subscriptions =
            totals::subscription_totals(&store).map_err(|error| error.to_string())?;
        Ok::<_, String>((last, subscriptions))
    })
    .await;
    match read {
        Ok(Ok((last, subscriptions))) => {
            if let Some(last) = last {
                metrics.set_last_event_ms(last);
            }
            metrics.set_subscriptions(subscriptions);
        }
        Ok(Err(error)) => eprintln!("earshot listen: the metrics start empty: {error}"),
        Err(error) => eprintln!("earshot listen: the metrics start empty: {error}"),
    }
}

impl Observing {
    /// What the receiver tells of each request and store write.
    pub(crate) fn watch(&self) -> Option<Arc<dyn Watch>> {
        self.metrics
            .clone()
            .map(|metrics| metrics as Arc<dyn Watch>)
    }

    /// Checks every page of the store at `path` in the background, once the
    /// receiver answers (opening it read only the header): each outcome
    /// is said on stderr and, with `--metrics-listen`, in `/healthz` and
    /// `/metrics`.
    pub(crate) fn check_store(&mut self, path: &std::path::Path) -> color_eyre::Result<()> {
        let health = self.store_health.clone();
        let shown = path.display().to_string();
        self.checker = Some(Checker::start(path.to_owned(), move |outcome| {
            let ended = earshot_core::store::now_ms() as f64 / 1000.0;
            let line = match &outcome {
                Ok(checked) if checked.is_sound() => format!(
                    "store check: every page of {shown} is sound ({})",
                    earshot_core::duration_text::of(checked.elapsed)
                ),
                Ok(checked) => format!(
                    "store check: {shown} is DAMAGED ({}): events whose pages are damaged \
                     are answered 503 and retried by the platform; run `earshot store check` \
                     and restore a backup or move the file aside",
                    checked.problems.join("; ")
                ),
                Err(error) => format!("store check: could not run ({error})"),
            };
            eprintln!("earshot listen: {}", super::output::plain(&line));
            if let (Some(health), Ok(checked)) = (&health, &outcome) {
                let result = if checked.is_sound() {
                    Ok(())
                } else {
                    Err(checked.problems.join("; "))
                };
                health.note_integrity(ended, result);
            }
        })?);
        Ok(())
    }

    /// Stops the sweeper, the probe, the store check and the endpoints.
    pub(crate) async fn stop(self) {
        drop(self.checker);
        for task in &self.tasks {
            task.abort();
        }
        if let Some(sweeper) = self.sweeper {
            sweeper.stop();
        }
        if let Some(server) = self.server {
            server.stop().await;
        }
    }
}
