//! What earshot changed on the platform (create, update, pause, resume,
//! rotate, delete, recover runs): when, by whom, on which subscription,
//! what — never a secret (a rotation records the version), so "what
//! changed at 14:05?" has an answer during an incident.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::Store;

/// One change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Unix milliseconds.
    pub at_ms: i64,
    /// The operator's login name.
    pub operator: String,
    pub subscription_id: Option<String>,
    /// `create`, `update`, `pause`, `resume`, `rotate`, `delete`, `recover`.
    pub action: String,
    /// "secret version 3", "url https://a… → https://b…", "23 re-sent, 23 delivered".
    pub detail: String,
}

impl Change {
    /// A change to `subscription_id` made now by `operator`.
    pub fn now(operator: String, subscription_id: &str, action: &str, detail: String) -> Change {
        Change {
            at_ms: super::now_ms(),
            operator,
            subscription_id: Some(subscription_id.to_owned()),
            action: action.to_owned(),
            detail,
        }
    }
}

/// Records `change`.
pub fn record(store: &Store, change: &Change) -> rusqlite::Result<()> {
    store.conn.execute(
        "INSERT INTO changes (at_ms, operator, subscription_id, action, detail)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            change.at_ms,
            change.operator,
            change.subscription_id,
            change.action,
            change.detail
        ],
    )?;
    Ok(())
}

/// Changes since `since_ms`, newest first.
pub fn since(store: &Store, since_ms: i64) -> rusqlite::Result<Vec<Change>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT at_ms, operator, subscription_id, action, detail FROM changes
         WHERE at_ms >= ?1 ORDER BY at_ms DESC, id DESC",
    )?;
    let rows = statement.query_map([since_ms], change_row)?;
    super::readable(rows)
}

/// The newest change to `subscription_id`.
pub fn latest_for(store: &Store, subscription_id: &str) -> rusqlite::Result<Option<Change>> {
    store
        .conn
        .prepare_cached(
            "SELECT at_ms, operator, subscription_id, action, detail FROM changes
             WHERE subscription_id = ?1 ORDER BY at_ms DESC, id DESC LIMIT 1",
        )?
        .query_row([subscription_id], change_row)
        .optional()
}

/// The newest change of `action` (`rotate`, …) to `subscription_id`.
pub fn latest_of(
    store: &Store,
    subscription_id: &str,
    action: &str,
) -> rusqlite::Result<Option<Change>> {
    store
        .conn
        .prepare_cached(
            "SELECT at_ms, operator, subscription_id, action, detail FROM changes
             WHERE subscription_id = ?1 AND action = ?2 ORDER BY at_ms DESC, id DESC LIMIT 1",
        )?
        .query_row([subscription_id, action], change_row)
        .optional()
}

fn change_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Change> {
    Ok(Change {
        at_ms: row.get(0)?,
        operator: row.get(1)?,
        subscription_id: row.get(2)?,
        action: row.get(3)?,
        detail: row.get(4)?,
    })
}
