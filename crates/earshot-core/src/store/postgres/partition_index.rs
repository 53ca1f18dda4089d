//! An index on the partitioned `events` built without holding filing up:
//! made on the parent only (`CREATE INDEX … ON ONLY`, invalid, a catalog
//! change) by a migration, then built on each day's partition with
//! `CREATE INDEX CONCURRENTLY` after the migration commits and attached;
//! the parent is valid once every partition's is attached. Shared by the
//! type index (`type_index.rs`, schema 12) and the text index
//! (`text_index.rs`, schema 14). A build cut midway leaves an invalid,
//! unattached partition index, dropped and made again at the next start.

use tokio_postgres::Client;

use super::PgError;
use super::schema::LOCK_CLASS;

/// One index of `events` built per partition.
pub(super) struct PartitionedIndex<'a> {
    /// The parent index's name in the schema `earshot` (`events_by_type`).
    pub name: &'a str,
    /// What follows `ON table` in `CREATE INDEX`: the method and columns,
    /// `(event COLLATE "C", …)` or `USING gin (…)`.
    pub body: &'a str,
    /// The second key of the advisory lock one builder at a time holds.
    pub lock: i32,
}

/// Whether the parent index `$1` (qualified) exists and serves reads.
pub(super) const VALID: &str = "
SELECT coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)), false)";

/// The partitions of `events` that have no index attached to `$1` yet.
const MISSING: &str = "
SELECT c.relname::text FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = 'earshot.events'::regclass
  AND NOT EXISTS (
      SELECT 1 FROM pg_inherits AS ii JOIN pg_index AS x ON x.indexrelid = ii.inhrelid
      WHERE ii.inhparent = to_regclass($1) AND x.indrelid = c.oid)
ORDER BY c.relname";

/// How a partitioned index stands after [`finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// Valid: built on every partition.
    Built,
    /// Another process holds the build's lock and is building it now.
    Building,
}

impl PartitionedIndex<'_> {
    fn qualified(&self) -> String {
        format!("earshot.{}", self.name)
    }

    /// Whether the index is valid (serves reads), read by `client`.
    pub(super) async fn is_valid(
        &self,
        client: &impl tokio_postgres::GenericClient,
    ) -> Result<bool, PgError> {
        let row = client.query_one(VALID, &[&self.qualified()]).await?;
        Ok(row.try_get(0)?)
    }

    /// Builds the index on each partition that lacks it, concurrently,
    /// unless it is valid already or another process holds the build's
    /// lock. `client` must not be in a transaction; the parent index must
    /// exist.
    pub(super) async fn finish(&self, client: &Client) -> Result<Build, PgError> {
        if self.is_valid(client).await? {
            return Ok(Build::Built);
        }
        let row = client
            .query_one(
                "SELECT pg_try_advisory_lock($1, $2)",
                &[&LOCK_CLASS, &self.lock],
            )
            .await?;
        if !row.try_get::<_, bool>(0)? {
            return Ok(Build::Building);
        }
        let built = self.build_missing(client).await;
        client
            .execute(
                "SELECT pg_advisory_unlock($1, $2)",
                &[&LOCK_CLASS, &self.lock],
            )
            .await?;
        built?;
        Ok(Build::Built)
    }

    /// Each missing partition's index: made (a leftover of a build cut
    /// midway, invalid and unattached, dropped first) and attached.
    async fn build_missing(&self, client: &Client) -> Result<(), PgError> {
        let partitions: Vec<String> = client
            .query(MISSING, &[&self.qualified()])
            .await?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()?;
        let suffix = self.name.trim_start_matches("events");
        for partition in partitions {
            // Names come from the catalog and are `events_dYYYYMMDD`;
            // quoted all the same.
            let bare = partition.replace('"', "");
            let index = format!("\"{bare}{suffix}\"");
            let table = format!("\"{bare}\"");
            client
                .batch_execute(&format!(
                    "DROP INDEX CONCURRENTLY IF EXISTS earshot.{index}"
                ))
                .await?;
            client
                .batch_execute(&format!(
                    "CREATE INDEX CONCURRENTLY {index} ON earshot.{table} {}",
                    self.body
                ))
                .await?;
            client
                .batch_execute(&format!(
                    "ALTER INDEX {} ATTACH PARTITION earshot.{index}",
                    self.qualified()
                ))
                .await?;
        }
        Ok(())
    }
}
