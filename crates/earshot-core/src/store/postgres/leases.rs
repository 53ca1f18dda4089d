//! Leases: work that one replica at a time may do (the sweep, the
//! retention), held as a row of `earshot.leases (name, holder,
//! expires_at, since)` with an expiry on the database's clock (replicas'
//! clocks may differ). One statement takes or renews a lease: an upsert
//! whose update applies only when the row is the caller's own or has
//! expired, returning a row exactly when the caller holds it
//! ([`take`]). A [`LeaseKeeper`] renews every [`LeaseTerms::renew_every`]
//! (2 s) a lease that lasts [`LeaseTerms::ttl`] (6 s), so a dead holder's
//! lease is taken over within 6 + 2 s.
//!
//! A holder that stalls past its expiry must not write after the
//! takeover: leased work runs in a transaction that first checks, on the
//! database's clock, that the lease is still its own and locks the row
//! `FOR SHARE` ([`PgStore::leased`]), so a takeover (an update of that row)
//! waits until the work commits, and work that finds the lease taken
//! writes nothing. Not an advisory lock: a session lock is tied to one
//! pooled connection, and a holder cut off by the network keeps it until
//! TCP gives up.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_postgres::Transaction;

use super::{Fence, PgError, PgStore};

/// The lease of the maintenance replica (the sweep, the retention, making
/// the next days' partitions).
pub const MAINTENANCE: &str = "maintenance";

/// How long a lease lasts and how often its holder renews it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTerms {
    /// A lease not renewed for this long may be taken by another holder.
    pub ttl: Duration,
    /// How often the holder renews (and a waiting replica tries to take
    /// it); well under `ttl`, so one late renewal does not lose it.
    pub renew_every: Duration,
}

impl LeaseTerms {
    /// 6 s, renewed every 2 s: a dead holder's lease changes hands within
    /// 8 s.
    pub const DEFAULT: LeaseTerms = LeaseTerms {
        ttl: Duration::from_secs(6),
        renew_every: Duration::from_secs(2),
    };
}

impl Default for LeaseTerms {
    fn default() -> Self {
        LeaseTerms::DEFAULT
    }
}

/// A lease as the table holds it, for `health` and `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseState {
    pub holder: String,
    /// Milliseconds until it expires, by the database's clock (negative:
    /// expired, free to take).
    pub expires_in_ms: i64,
    /// Since when (Unix milliseconds) this holder has held it.
    pub since_ms: i64,
}

/// Takes `name` for `holder`, or renews it: a row back means `holder`
/// holds it until `ttl` from now on the database's clock.
const TAKE: &str = "
INSERT INTO earshot.leases AS lease (name, holder, expires_at, since)
VALUES ($1, $2, now() + make_interval(secs => $3), now())
ON CONFLICT (name) DO UPDATE SET
    holder = excluded.holder,
    expires_at = excluded.expires_at,
    since = CASE WHEN lease.holder = excluded.holder THEN lease.since ELSE excluded.since END
WHERE lease.holder = excluded.holder OR lease.expires_at < now()
RETURNING lease.holder";

/// The fencing check of leased work: the lease is `holder`'s and live now
/// (the clock, not the transaction's start), its row locked until the
/// work commits.
const FENCE: &str = "
SELECT 1 FROM earshot.leases
WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp()
FOR SHARE";

const RELEASE: &str = "DELETE FROM earshot.leases WHERE name = $1 AND holder = $2";

const STATE: &str = "
SELECT holder,
       (extract(epoch FROM expires_at - now()) * 1000)::bigint,
       (extract(epoch FROM since) * 1000)::bigint
FROM earshot.leases WHERE name = $1";

/// Work done under a lease, in the transaction [`PgStore::leased`] opens.
pub type LeasedWork<'t, T> = Pin<Box<dyn Future<Output = Result<T, PgError>> + Send + 't>>;

impl PgStore {
    /// Takes the lease `name` for `holder`, or renews it; whether `holder`
    /// holds it now. One statement.
    pub async fn take_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, PgError> {
        let client = self.client().await?;
        let take = client.prepare_cached(TAKE).await?;
        let rows = client
            .query(&take, &[&name, &holder, &ttl.as_secs_f64()])
            .await?;
        Ok(!rows.is_empty())
    }

    /// Gives the lease `name` up if `holder` holds it (a clean stop), so
    /// another replica takes it at its next try rather than at expiry.
    pub async fn release_lease(&self, name: &str, holder: &str) -> Result<(), PgError> {
        let client = self.client().await?;
        client.execute(RELEASE, &[&name, &holder]).await?;
        Ok(())
    }

    /// Who holds the lease `name`, if anyone ever took it.
    pub async fn lease(&self, name: &str) -> Result<Option<LeaseState>, PgError> {
        let client = self.client().await?;
        let row = client.query_opt(STATE, &[&name]).await?;
        row.map(|row| {
            Ok(LeaseState {
                holder: row.try_get(0)?,
                expires_in_ms: row.try_get(1)?,
                since_ms: row.try_get(2)?,
            })
        })
        .transpose()
    }

    /// Runs `work` in one transaction that commits only while `holder`
    /// holds the lease `name`: checked first, on the database's clock,
    /// with the lease's row locked until the commit, so no takeover lands
    /// in between. [`PgError::LeaseLost`] (nothing written) when the lease
    /// is not `holder`'s.
    pub async fn leased<T, F>(&self, name: &str, holder: &str, work: F) -> Result<T, PgError>
    where
        F: for<'t> FnOnce(&'t Transaction<'t>) -> LeasedWork<'t, T>,
    {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let fence = tx.prepare_cached(FENCE).await?;
        if tx.query_opt(&fence, &[&name, &holder]).await?.is_none() {
            return Err(PgError::LeaseLost {
                name: name.to_owned(),
            });
        }
        let done = work(&tx).await?;
        tx.commit().await?;
        Ok(done)
    }
}

impl PgStore {
    /// Runs `work` in one transaction: fenced by `fence`'s lease as
    /// [`PgStore::leased`] when given (a replica's share of leased work),
    /// else a plain transaction (a command run by hand).
    pub async fn write_fenced<T, F>(&self, fence: Option<&Fence>, work: F) -> Result<T, PgError>
    where
        F: for<'t> FnOnce(&'t Transaction<'t>) -> LeasedWork<'t, T>,
    {
        if let Some(fence) = fence {
            return self.leased(&fence.lease, &fence.holder, work).await;
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let done = work(&tx).await?;
        tx.commit().await?;
        Ok(done)
    }
}

/// Keeps a lease taken or renewed in the background; whether it is held
/// now is [`LeaseKeeper::held`]. Dropped, it stops renewing (as a dead
/// replica would: the lease lapses at expiry); [`LeaseKeeper::release`]
/// gives it up at once.
pub struct LeaseKeeper {
    store: PgStore,
    name: String,
    holder: String,
    held: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl LeaseKeeper {
    /// Starts trying to take `name` for `holder` now and every
    /// `terms.renew_every`; each try is bounded by `terms.ttl` (a try that
    /// takes longer counts as not holding it).
    pub fn start(store: PgStore, name: &str, holder: &str, terms: LeaseTerms) -> LeaseKeeper {
        let (tell, held) = watch::channel(false);
        let task = tokio::spawn(keep(
            store.clone(),
            name.to_owned(),
            holder.to_owned(),
            terms,
            tell,
        ));
        LeaseKeeper {
            store,
            name: name.to_owned(),
            holder: holder.to_owned(),
            held,
            task,
        }
    }

    /// Whether the last try held the lease. Work that must not be doubled
    /// still runs through [`PgStore::leased`]: this may lag the table by
    /// one renewal.
    pub fn held(&self) -> bool {
        *self.held.borrow()
    }

    /// Told each time the holding changes.
    pub fn watch(&self) -> watch::Receiver<bool> {
        self.held.clone()
    }

    /// Stops renewing and gives the lease up.
    pub async fn release(self) -> Result<(), PgError> {
        self.task.abort();
        self.store.release_lease(&self.name, &self.holder).await
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The keeper's loop: take or renew, say whether held, wait.
async fn keep(
    store: PgStore,
    name: String,
    holder: String,
    terms: LeaseTerms,
    tell: watch::Sender<bool>,
) {
    let mut ticks = tokio::time::interval(terms.renew_every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let tried = tokio::time::timeout(terms.ttl, store.take_lease(&name, &holder, terms.ttl));
        let held = match tried.await {
            Ok(Ok(held)) => held,
            Ok(Err(error)) => {
                tracing::warn!(%error, lease = %name, "the lease could not be taken or renewed");
                false
            }
            Err(_) => {
                tracing::warn!(lease = %name, "taking or renewing the lease took too long");
                false
            }
        };
        tell.send_if_modified(|was| std::mem::replace(was, held) != held);
    }
}
