//! Whether a replica can write its PostgreSQL store, asked as the store
//! is written (schema version 16): `earshot.probes`, one row per replica
//! (`holder`, `HOST:PID` as in the maintenance lease), which the replica's
//! probe updates and commits ([`PgStore::probe`]). A committed write is
//! what filing an event needs, so the probe fails for what would fail a
//! filing: the server down or unreachable, the database or the role made
//! read-only (a standby promoted away, `default_transaction_read_only`),
//! privileges taken away, or a write the server refuses (disk full).
//! A read alone would pass for all but the first. Rows of replicas that
//! have not probed for a day go at the next probe of any.

use std::time::Duration;

use super::{PgError, PgStore};

/// The table (`IF NOT EXISTS`: a migration run again over it, as tests
/// that undo a later version do, leaves it).
pub(super) const VERSION_16: &str = "
CREATE TABLE IF NOT EXISTS earshot.probes (
    holder     text PRIMARY KEY,
    probed_ms  bigint NOT NULL
);
";

/// Notes `$1`'s probe at the database's clock, and drops the rows of
/// holders that have not probed for `$2` ms.
const PROBE: &str = "
WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
gone AS (
    DELETE FROM earshot.probes
    WHERE holder <> $1 AND probed_ms < (SELECT ms FROM now) - $2::bigint
)
INSERT INTO earshot.probes AS p (holder, probed_ms)
SELECT $1, ms FROM now
ON CONFLICT (holder) DO UPDATE SET probed_ms = excluded.probed_ms";

impl PgStore {
    /// Writes and commits `holder`'s probe row; the server gives up on
    /// it after `within` (a lock held elsewhere, a server that hangs), so
    /// a probe the caller stopped waiting for does not stay behind.
    pub async fn probe(&self, holder: &str, within: Duration) -> Result<(), PgError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let millis = within.as_millis().max(1);
        tx.batch_execute(&format!("SET LOCAL statement_timeout = {millis}"))
            .await?;
        tx.execute(PROBE, &[&holder, &super::REPLICA_FORGOTTEN_AFTER_MS])
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
