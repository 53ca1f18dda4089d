//! The staged rotation in flight on a PostgreSQL store
//! (`earshot.rotations`, schema version 9): `subs rotate` takes a
//! subscription's row before it checks the receiver and gives it back
//! once the new secret is applied (or the rotation stopped), so two
//! operators rotating one subscription at once cannot interleave their
//! checks and `PATCH`es: the second is refused, naming who holds it.
//!
//! Taking is one statement, `INSERT … ON CONFLICT DO UPDATE … WHERE` the
//! row held has expired, so of two at once exactly one gets a row back
//! (the other waits on the first's key, then finds it held): no
//! check-then-insert. A row names its holder (host, process, a random
//! part), which alone gives it back; a process that died leaves it until
//! `expires_at`, on the database's clock, after which the next rotation
//! takes it over.

use std::time::Duration;

use super::{PgError, PgStore};

const TAKE: &str = "
INSERT INTO earshot.rotations AS r (subscription_id, holder, operator, started_ms, expires_at)
VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
ON CONFLICT (subscription_id) DO UPDATE SET
    holder = excluded.holder,
    operator = excluded.operator,
    started_ms = excluded.started_ms,
    expires_at = excluded.expires_at
WHERE r.expires_at < now()
RETURNING true";

const HELD: &str = "
SELECT operator, holder, started_ms,
       (extract(epoch FROM expires_at) * 1000)::bigint
FROM earshot.rotations WHERE subscription_id = $1";

const GIVE_BACK: &str = "
DELETE FROM earshot.rotations WHERE subscription_id = $1 AND holder = $2";

/// A rotation this process holds.
#[derive(Debug)]
pub struct Rotation {
    subscription_id: String,
    holder: String,
}

/// Someone else's rotation of the subscription, in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldBy {
    pub operator: String,
    /// Host and process.
    pub holder: String,
    pub started_ms: i64,
    /// When it is given up at the latest (the holder died).
    pub expires_ms: i64,
}

/// Takes `subscription_id`'s rotation for `operator`, for at most `for_at_most`:
/// `Ok(Err(held))` when another holds it.
pub async fn take(
    store: &PgStore,
    subscription_id: &str,
    operator: &str,
    started_ms: i64,
    for_at_most: Duration,
) -> Result<Result<Rotation, HeldBy>, PgError> {
    let holder = format!(
        "{} pid {} ({:016x})",
        super::host_name(),
        std::process::id(),
        fastrand::u64(..)
    );
    let seconds = for_at_most.as_secs_f64();
    let client = store.client().await?;
    // Twice: a row given back between the two statements is taken again.
    for _ in 0..2 {
        let taken = client
            .query_opt(
                TAKE,
                &[&subscription_id, &holder, &operator, &started_ms, &seconds],
            )
            .await?;
        if taken.is_some() {
            return Ok(Ok(Rotation {
                subscription_id: subscription_id.to_owned(),
                holder,
            }));
        }
        if let Some(row) = client.query_opt(HELD, &[&subscription_id]).await? {
            return Ok(Err(HeldBy {
                operator: row.try_get(0)?,
                holder: row.try_get(1)?,
                started_ms: row.try_get(2)?,
                expires_ms: row.try_get(3)?,
            }));
        }
    }
    Err(PgError::Unreadable(format!(
        "the rotation of {subscription_id} was neither taken nor held"
    )))
}

impl Rotation {
    /// Gives the rotation back (only this holder's row).
    pub async fn give_back(self, store: &PgStore) -> Result<(), PgError> {
        let client = store.client().await?;
        client
            .execute(GIVE_BACK, &[&self.subscription_id, &self.holder])
            .await?;
        Ok(())
    }
}
