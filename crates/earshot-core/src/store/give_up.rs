//! When the platform gives up retrying on this account, as its history
//! shows it. The spec does not say how many attempts a voice-agent
//! delivery gets (part 6 C.6–7); the store's event outcomes do: each
//! event whose attempt chain ended failed for good (`missed`, or
//! `recovered` afterwards by earshot) after retryable failures, with its
//! attempt count. The most common final count, and how many chains
//! showed it, is the account's observed limit. One grouped query over
//! `event_outcomes`, on either backend ([`observed`], [`observed_postgres`]).

use rusqlite::OptionalExtension;

use super::Store;
use super::postgres::{PgError, PgStore};

/// The most common number of attempts after which the platform gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GiveUp {
    pub attempts: u32,
    /// How many event chains ended after exactly that many attempts.
    pub seen: i64,
}

impl GiveUp {
    /// "on this account the platform gave up after 6 attempts (seen 14
    /// times)", or that none was seen (`None`).
    pub fn describe(observed: Option<GiveUp>) -> String {
        match observed {
            Some(GiveUp { attempts, seen }) => format!(
                "on this account the platform gave up after {attempts} attempt{} (seen {seen} time{})",
                if attempts == 1 { "" } else { "s" },
                if seen == 1 { "" } else { "s" },
            ),
            None => "no give-up seen on this account yet".into(),
        }
    }
}

/// The give-up the store's history shows most often; `None` before any
/// chain ended failed for good after a retryable failure. A chain ended by
/// a 3xx or a 4xx other than 408, 425 and 429 is final at once and tells
/// nothing about the retry limit: it is not counted.
pub fn observed(store: &Store) -> rusqlite::Result<Option<GiveUp>> {
    store
        .conn
        .prepare_cached(&observed_statement(""))?
        .query_row([], |row| {
            Ok(GiveUp {
                attempts: row.get(0)?,
                seen: row.get(1)?,
            })
        })
        .optional()
}

/// [`observed`] on a PostgreSQL store: the same statement over its
/// outcome rows.
pub async fn observed_postgres(store: &PgStore) -> Result<Option<GiveUp>, PgError> {
    let client = store.client().await?;
    let statement = client
        .prepare_cached(&observed_statement("earshot."))
        .await?;
    let Some(row) = client.query_opt(&statement, &[]).await? else {
        return Ok(None);
    };
    let attempts: i64 = row.try_get(0)?;
    Ok(Some(GiveUp {
        attempts: u32::try_from(attempts)
            .map_err(|_| PgError::Unreadable(format!("an outcome of {attempts} attempts")))?,
        seen: row.try_get(1)?,
    }))
}

/// [`observed`]'s statement, one text for both backends; `schema` is
/// where the table is (`""` on SQLite, `"earshot."` on PostgreSQL).
fn observed_statement(schema: &str) -> String {
    format!(
        "SELECT attempts, count(*) AS seen FROM {schema}event_outcomes
         WHERE state IN ('missed', 'recovered')
           AND NOT (http_status_code BETWEEN 300 AND 499
                    AND http_status_code NOT IN (408, 425, 429))
         GROUP BY attempts ORDER BY seen DESC, attempts DESC LIMIT 1"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::temp_store;

    fn outcome(store: &Store, key: &str, state: &str, attempts: u32, status: u16) {
        store
            .conn
            .execute(
                "INSERT INTO event_outcomes (subscription_id, event_key, session_no, session_id,
                     occurred_ms, state, attempts, http_status_code, error_class)
                 VALUES ('sub_1', ?1, 1, 'sess_1', 0, ?2, ?3, ?4, '')",
                rusqlite::params![key, state, attempts, status],
            )
            .expect("inserted");
    }

    #[test]
    fn none_seen_says_so() {
        let (_dir, store) = temp_store();
        outcome(&store, "e0", "delivered", 1, 200);
        assert_eq!(observed(&store).expect("read"), None);
        assert_eq!(
            GiveUp::describe(None),
            "no give-up seen on this account yet"
        );
    }

    #[test]
    fn the_most_common_final_count_of_retryable_failures_wins() {
        let (_dir, store) = temp_store();
        for key in ["a", "b", "c"] {
            outcome(&store, key, "missed", 6, 503);
        }
        outcome(&store, "d", "recovered", 6, 0);
        outcome(&store, "e", "missed", 3, 500);
        // Final at once: not a retry limit.
        for key in ["f", "g", "h", "i", "j"] {
            outcome(&store, key, "missed", 1, 404);
        }
        outcome(&store, "k", "pending", 2, 503);
        let seen = observed(&store).expect("read");
        assert_eq!(
            seen,
            Some(GiveUp {
                attempts: 6,
                seen: 4
            })
        );
        assert_eq!(
            GiveUp::describe(seen),
            "on this account the platform gave up after 6 attempts (seen 4 times)"
        );
    }
}
