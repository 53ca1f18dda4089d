//! The background sweep's figures on PostgreSQL (schema version 13):
//! `earshot.sweep_figures`, one row per replica that swept
//! (`holder`, `HOST:PID` as in the maintenance lease), with its runs,
//! failures, requests, the sessions still due after its last run, and when
//! its last run ended and its last success (the database's clock, so the
//! holders before and after a takeover are on one clock). The holder adds
//! each run to its row ([`PgStore::record_sweep_run`]); every replica reads
//! the rows back for its `/metrics` ([`PgStore::sweep_figures`]), so each
//! shows the same figures whoever sweeps, each run counted under one
//! holder only. Rows of replicas that have not swept for a day go when
//! the holder records a run.

use super::{PgError, PgStore};

/// The table (`IF NOT EXISTS`: a migration run again over it, as tests
/// that undo a later version do, leaves it).
pub(super) const VERSION_13: &str = "
CREATE TABLE IF NOT EXISTS earshot.sweep_figures (
    holder           text PRIMARY KEY,
    runs             bigint NOT NULL,
    errors           bigint NOT NULL,
    requests         bigint NOT NULL,
    sessions_due     bigint NOT NULL,
    last_run_ms      bigint NOT NULL,
    last_success_ms  bigint
);
";

/// Rows read at most: the replicas that swept in the last day, newest
/// first (one a takeover or a restart).
pub const HOLDERS_SHOWN: i64 = 16;

/// Adds one run to `$1`'s row: `$2` failed, `$3` requests, `$4` the
/// sessions still due (NULL when the sweep failed before it knew: the
/// last figure stays). Drops the rows of holders idle for a day.
const RECORD: &str = "
WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
gone AS (
    DELETE FROM earshot.sweep_figures
    WHERE holder <> $1 AND last_run_ms < (SELECT ms FROM now) - $5::bigint
)
INSERT INTO earshot.sweep_figures AS f
    (holder, runs, errors, requests, sessions_due, last_run_ms, last_success_ms)
SELECT $1, 1, CASE WHEN $2 THEN 1 ELSE 0 END, $3::bigint, coalesce($4::bigint, 0), ms,
       CASE WHEN $2 THEN NULL ELSE ms END
FROM now
ON CONFLICT (holder) DO UPDATE SET
    runs = f.runs + 1,
    errors = f.errors + excluded.errors,
    requests = f.requests + excluded.requests,
    sessions_due = CASE WHEN $4::bigint IS NULL THEN f.sessions_due ELSE excluded.sessions_due END,
    last_run_ms = excluded.last_run_ms,
    last_success_ms = coalesce(excluded.last_success_ms, f.last_success_ms)";

/// The newest holders' rows, and the newest success of any.
const READ: &str = "
SELECT holder, runs, errors, requests, sessions_due, last_run_ms,
       (SELECT max(last_success_ms) FROM earshot.sweep_figures)
FROM earshot.sweep_figures
ORDER BY last_run_ms DESC, holder
LIMIT $1";

/// What one run of the sweep did, as its holder records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepRun {
    /// It failed or stopped early.
    pub failed: bool,
    /// Requests it sent to the platform.
    pub requests: i64,
    /// Sessions still due after it; `None` when it failed before knowing.
    pub sessions_due: Option<i64>,
}

/// One holder's row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderSweeps {
    pub holder: String,
    pub runs: i64,
    pub errors: i64,
    pub requests: i64,
    /// Sessions still due after its last run.
    pub sessions_due: i64,
    /// When its last run ended (Unix ms, the database's clock).
    pub last_run_ms: i64,
}

/// The sweep's figures of the store, as every replica shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreSweeps {
    /// The holders that swept, the newest run first (at most
    /// [`HOLDERS_SHOWN`]).
    pub holders: Vec<HolderSweeps>,
    /// The newest successful run of any holder (Unix ms).
    pub last_success_ms: Option<i64>,
}

impl StoreSweeps {
    /// Sessions still due after the newest run of any holder (0 before any).
    pub fn sessions_due(&self) -> i64 {
        self.holders.first().map_or(0, |newest| newest.sessions_due)
    }
}

impl PgStore {
    /// Adds `run` to `holder`'s row (one statement, committed on return).
    pub async fn record_sweep_run(&self, holder: &str, run: SweepRun) -> Result<(), PgError> {
        let client = self.client().await?;
        let record = client.prepare_cached(RECORD).await?;
        client
            .execute(
                &record,
                &[
                    &holder,
                    &run.failed,
                    &run.requests,
                    &run.sessions_due,
                    &super::REPLICA_FORGOTTEN_AFTER_MS,
                ],
            )
            .await?;
        Ok(())
    }

    /// The figures every replica's `/metrics` shows (one statement).
    pub async fn sweep_figures(&self) -> Result<StoreSweeps, PgError> {
        let client = self.client().await?;
        let read = client.prepare_cached(READ).await?;
        let rows = client.query(&read, &[&HOLDERS_SHOWN]).await?;
        let mut figures = StoreSweeps::default();
        for row in rows {
            figures.last_success_ms = row.try_get(6)?;
            figures.holders.push(HolderSweeps {
                holder: row.try_get(0)?,
                runs: row.try_get(1)?,
                errors: row.try_get(2)?,
                requests: row.try_get(3)?,
                sessions_due: row.try_get(4)?,
                last_run_ms: row.try_get(5)?,
            });
        }
        Ok(figures)
    }
}
