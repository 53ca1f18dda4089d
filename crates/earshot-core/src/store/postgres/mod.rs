//! The PostgreSQL store (`--store postgres://USER@HOST:PORT/DB`), for
//! observers that share one database (`docs/postgres.md`): where it is
//! ([`target`]), its password ([`password`]), TLS ([`tls`]), its schema
//! and migrations under an advisory lock ([`schema`]), the day partitions
//! of its events ([`days`]) and exactly-once filing ([`filing`]), of events and of
//! deliveries `events` cannot file, the leases that let one replica
//! at a time do the sweep and the retention ([`leases`]), the
//! retention, which drops whole days ([`prune`]), and a SQLite store
//! copied in ([`copy`], read by [`copy_source`]), and the background
//! sweep's figures every replica shows ([`sweep_figures`]), and each
//! replica's probe of whether it can write the store ([`probe`]).
//! [`PgStore`] holds a pool of connections (deadpool-postgres over
//! tokio-postgres); every call is async and returns after its commit.

pub mod copy;
mod copy_relay;
pub mod copy_source;
mod copy_sweep;
mod copy_team;
mod counts;
pub mod days;
mod filing;
pub mod leases;
pub mod outcome_keys;
mod partition_index;
pub mod password;
mod probe;
pub mod prune;
mod prune_rows;
mod received;
pub mod relay;
pub mod rotations;
pub mod schema;
pub mod sweep_figures;
pub mod target;
pub mod text_index;
pub mod tls;
pub mod type_index;

use std::time::Duration;

use deadpool_postgres::{
    Hook, HookError, Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio_postgres::config::SslMode;

pub use leases::{LeaseKeeper, LeaseState, LeaseTerms};
pub use password::{PasswordError, PasswordSources};
pub use prune::{DroppedDay, Fence, PgPruneReport};
pub use schema::{Migrated, PG_SCHEMA_VERSION};
pub use sweep_figures::{HolderSweeps, StoreSweeps, SweepRun};
pub use target::{PgTarget, PgUrlError, TlsMode, is_postgres_url};

use crate::store::events::{Filing, ObservedEvent};

/// What a command that does not take a PostgreSQL store yet says.
pub const NOT_SUPPORTED_YET: &str = "PostgreSQL stores are not supported by this command yet";

/// How long a connection may take to open (TCP, TLS, login).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a call waits for a free connection of the pool.
const POOL_WAIT: Duration = Duration::from_secs(30);
/// How long the server may leave data sent unacknowledged before the
/// connection is given up (a dead peer, a cut network).
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// Run on each new connection. No JIT: earshot's statements are short
/// reads along indexes, and a plan the planner thinks costly (its guess
/// for the unswept sessions is a third of them) was compiled for 300 ms
/// to run for 50 (`docs/postgres.md`). A `SET`, not a startup option, so
/// a pooler in front of the server (PgBouncer refuses unknown startup
/// parameters) passes it.
const SESSION_SETTINGS: &str = "SET jit = off";

/// Connections kept at most, unless the caller says.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// A replica's row in the tables each one keeps (`probes`, `sweep_figures`)
/// goes once it has not written it for this long.
const REPLICA_FORGOTTEN_AFTER_MS: i64 = 24 * 3_600_000;

/// The PostgreSQL store could not be reached or used. No variant holds a
/// password: the URL never has one, and the client's errors do not quote
/// it.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error(transparent)]
    Url(#[from] PgUrlError),
    #[error("cannot read the PostgreSQL store's password: {0}")]
    Password(#[from] PasswordError),
    #[error("cannot set up TLS for the PostgreSQL store {target}: {why}")]
    Tls { target: String, why: String },
    #[error("cannot connect to the PostgreSQL store {target}: {why}")]
    Connect { target: String, why: String },
    #[error(
        "the PostgreSQL store was written by a newer earshot (schema version {found}; this \
         build knows up to {supported}); it was left untouched: upgrade earshot"
    )]
    NewerVersion { found: i32, supported: i32 },
    #[error("PostgreSQL store query failed: {}", query_text(.0))]
    Query(#[from] tokio_postgres::Error),
    #[error("no connection to the PostgreSQL store became free within {0:?}")]
    Busy(Duration),
    #[error("the lease `{name}` is held by another replica now; nothing was written")]
    LeaseLost { name: String },
    #[error("another prune of this PostgreSQL store is running; nothing was removed by this one")]
    PruneRunning,
    #[error("a row of the PostgreSQL store cannot be read: {0}")]
    Unreadable(String),
}

/// The server's own words and code for an error it sent, else the
/// client's.
fn query_text(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// An open PostgreSQL store: a pool of connections. Clones share it.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    target: PgTarget,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `target` (its password from `sources`), migrates under
    /// the migration lock and makes today's and tomorrow's partitions:
    /// what a command does at its start.
    pub async fn connect(target: PgTarget, sources: &PasswordSources) -> Result<PgStore, PgError> {
        let store = PgStore::open(target, sources, DEFAULT_POOL_SIZE).await?;
        store.migrate().await?;
        let mut client = store.client().await?;
        days::ensure_around(&mut client, crate::store::now_ms()).await?;
        Ok(store)
    }

    /// Connects to `target` without migrating (`earshot store migrate`
    /// migrates next): one connection is opened now, so a wrong address,
    /// password or certificate is said here.
    pub async fn open(
        target: PgTarget,
        sources: &PasswordSources,
        pool_size: usize,
    ) -> Result<PgStore, PgError> {
        let mut config = tokio_postgres::Config::new();
        config
            .user(&target.user)
            .host(&target.host)
            .port(target.port)
            .dbname(&target.database)
            .application_name("earshot")
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_user_timeout(TCP_USER_TIMEOUT)
            .keepalives(true)
            .ssl_mode(match target.tls {
                TlsMode::Disable => SslMode::Disable,
                TlsMode::Prefer => SslMode::Prefer,
                TlsMode::Require => SslMode::Require,
            });
        if let Some(password) = sources.find(&target)? {
            config.password(password.expose());
        }
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match target.tls {
            TlsMode::Disable => Manager::from_config(config, tokio_postgres::NoTls, manager_config),
            TlsMode::Prefer | TlsMode::Require => {
                let tls = tls::MakeRustls::new(target.root_cert.as_deref()).map_err(|why| {
                    PgError::Tls {
                        target: target.to_string(),
                        why,
                    }
                })?;
                Manager::from_config(config, tls, manager_config)
            }
        };
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .post_create(Hook::async_fn(|client, _| {
                Box::pin(async move {
                    client
                        .batch_execute(SESSION_SETTINGS)
                        .await
                        .map_err(HookError::Backend)
                })
            }))
            .build()
            .map_err(|error| PgError::Connect {
                target: target.to_string(),
                why: error.to_string(),
            })?;
        let store = PgStore { pool, target };
        drop(store.client().await?);
        Ok(store)
    }

    /// Where the store is (no password).
    pub fn target(&self) -> &PgTarget {
        &self.target
    }

    /// Brings the schema to [`PG_SCHEMA_VERSION`] (once, whoever else
    /// migrates at the same moment); what it found and left.
    pub async fn migrate(&self) -> Result<Migrated, PgError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let mut migrated = schema::migrate(&tx, &replica_name()).await?;
        tx.commit().await?;
        // Outside the migration's transaction: a large store's type and
        // text indexes are built concurrently, partition by partition.
        migrated.type_index = type_index::finish(&client).await?;
        migrated.text_index = text_index::finish(&client).await?;
        Ok(migrated)
    }

    /// The schema version the database is at (0: none of earshot's).
    pub async fn schema_version(&self) -> Result<i32, PgError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let version = schema::version(&tx).await?;
        tx.commit().await?;
        Ok(version)
    }

    /// Files an observed event unless a copy is kept already (by this or
    /// any other replica), and returns after the commit; whether it was
    /// new.
    pub async fn file(&self, event: &ObservedEvent) -> Result<bool, PgError> {
        let mut client = self.client().await?;
        filing::file(&mut client, event).await
    }

    /// Keeps a genuine delivery: an event as [`PgStore::file`] does, or
    /// one `events` cannot file in `unfiled_events`; whether it was new.
    pub async fn keep(&self, filing: &Filing) -> Result<bool, PgError> {
        let mut client = self.client().await?;
        filing::keep(&mut client, filing).await
    }

    /// A connection of the pool, or why none could be had.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Client, PgError> {
        self.pool.get().await.map_err(|error| match error {
            PoolError::Timeout(_) => PgError::Busy(POOL_WAIT),
            PoolError::Backend(error) => PgError::Connect {
                target: self.target.to_string(),
                why: connect_text(&error),
            },
            other => PgError::Connect {
                target: self.target.to_string(),
                why: other.to_string(),
            },
        })
    }
}

/// Why a connection failed, with its cause (the client's own text stops
/// at "error connecting to server").
fn connect_text(error: &tokio_postgres::Error) -> String {
    if error.as_db_error().is_some() {
        return query_text(error);
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// Who migrates, kept with each version: earshot's version, host and
/// process.
pub fn replica_name() -> String {
    format!(
        "earshot {} on {} pid {}",
        env!("CARGO_PKG_VERSION"),
        host_name(),
        std::process::id()
    )
}

/// This machine's name (at most 256 bytes of it), empty when it cannot be
/// read: how replicas are told apart in the schema's history and leases.
pub fn host_name() -> String {
    use std::io::Read;
    let mut host = String::new();
    if let Ok(file) = std::fs::File::open("/proc/sys/kernel/hostname") {
        let _ = file.take(256).read_to_string(&mut host);
    }
    host.trim().to_owned()
}

/// A read-only transaction whose statements all see one snapshot
/// (`REPEATABLE READ`): what a read of several statements that must agree
/// starts with.
pub(crate) async fn snapshot(
    client: &mut deadpool_postgres::Client,
) -> Result<deadpool_postgres::Transaction<'_>, tokio_postgres::Error> {
    client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
}
