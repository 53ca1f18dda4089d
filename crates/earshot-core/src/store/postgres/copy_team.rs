//! What a team shares, in `earshot store copy` ([`super::copy`]): the
//! incidents (with who acknowledged each, when and the note), the change
//! log and recover's runs, read from the SQLite source with the sweep
//! tables' reader ([`super::copy_sweep::Spec`]) and written by the
//! statements here, the destination's side of these three tables.
//!
//! - **Incidents** are keyed by their id on both sides. They are read in
//!   key order and the cursor is cleared at the end, so every run reads
//!   them all again (a store holds tens): an incident copied before it was
//!   acknowledged, resolved or seen failing again in the file gets that at
//!   the next copy. A row the destination holds is merged, never replaced:
//!   an acknowledgement (who, when, the note) only where the destination
//!   has none, a resolution (with its reason) only where it has none, the
//!   later `last_seen_ms`; and written only when that changes something,
//!   so a second copy writes nothing.
//! - **Changes and recover runs** are numbered by the destination (its
//!   identity), so their key is where they came from: `copied_from` (the
//!   copy's source, as its cursor names it) and `copied_id` (the row's id
//!   in the file), unique together (schema version 8), with `ON CONFLICT
//!   DO NOTHING`. They follow the rowid cursor (their id is the rowid),
//!   so a run finished in a file whose recover run was still going is not
//!   brought again when it ends (see docs/postgres.md).

use super::copy_sweep::{Kind, OnConflict, Order, Spec};

/// The three tables in the order they are copied.
pub(super) const SPECS: [Spec; 3] = [
    Spec {
        table: "incidents",
        columns: &[
            ("id", Kind::Text),
            ("subscription_id", Kind::Text),
            ("http_status_code", Kind::Int),
            ("error_class", Kind::Text),
            ("first_seen_ms", Kind::Int),
            ("last_seen_ms", Kind::Int),
            ("resolved_ms", Kind::Int),
            ("resolved_reason", Kind::Text),
            ("acknowledged_by", Kind::Text),
            ("acknowledged_ms", Kind::Int),
            ("note", Kind::Text),
        ],
        key: &["id"],
        numbered_key: None,
        order: Order::Key,
        on_conflict: OnConflict::MergeIncident,
    },
    Spec {
        table: "changes",
        columns: &[
            ("id", Kind::Int),
            ("at_ms", Kind::Int),
            ("operator", Kind::Text),
            ("subscription_id", Kind::Text),
            ("action", Kind::Text),
            ("detail", Kind::Text),
        ],
        key: &["id"],
        numbered_key: None,
        order: Order::Rowid,
        on_conflict: OnConflict::FromSource,
    },
    Spec {
        table: "recoveries",
        columns: &[
            ("id", Kind::Int),
            ("subscription_id", Kind::Text),
            ("event_id", Kind::Text),
            ("session_id", Kind::Text),
            ("started_ms", Kind::Int),
            ("finished_ms", Kind::Int),
            ("http_status_code", Kind::Int),
            ("error", Kind::Text),
            ("latency_ms", Kind::Int),
            ("delivered", Kind::Bool),
        ],
        key: &["id"],
        numbered_key: None,
        order: Order::Rowid,
        on_conflict: OnConflict::FromSource,
    },
];

// An incident the destination holds: what the file knows more of is
// merged in, and the row is written only when that changes it.
const MERGE_INCIDENT: &str = "DO UPDATE SET
    last_seen_ms = greatest(c.last_seen_ms, excluded.last_seen_ms),
    resolved_ms = coalesce(c.resolved_ms, excluded.resolved_ms),
    resolved_reason = CASE WHEN c.resolved_ms IS NULL
        THEN excluded.resolved_reason ELSE c.resolved_reason END,
    acknowledged_by = coalesce(c.acknowledged_by, excluded.acknowledged_by),
    acknowledged_ms = CASE WHEN c.acknowledged_by IS NULL
        THEN excluded.acknowledged_ms ELSE c.acknowledged_ms END,
    note = CASE WHEN c.acknowledged_by IS NULL THEN excluded.note ELSE c.note END
WHERE excluded.last_seen_ms > c.last_seen_ms
   OR (c.resolved_ms IS NULL AND excluded.resolved_ms IS NOT NULL)
   OR (c.acknowledged_by IS NULL AND excluded.acknowledged_by IS NOT NULL)";

/// The destination's statement for a batch of `spec` (one of [`SPECS`]):
/// `INSERT … SELECT FROM unnest(…)`, returning `xmax = 0` per row written
/// (true: new). A [`OnConflict::FromSource`] table takes the source's
/// name as one more parameter, after the columns.
pub(super) fn insert_sql(spec: &Spec) -> String {
    let arrays: Vec<String> = spec
        .columns
        .iter()
        .enumerate()
        .map(|(index, (_, kind))| format!("${}::{}", index + 1, kind.array_type()))
        .collect();
    let arrays = arrays.join(", ");
    let names: Vec<&str> = spec.columns.iter().map(|(name, _)| *name).collect();
    let table = spec.table;
    if spec.on_conflict == OnConflict::MergeIncident {
        let names = names.join(", ");
        return format!(
            "INSERT INTO earshot.{table} AS c ({names})
             SELECT * FROM unnest({arrays}) AS u ({names})
             ON CONFLICT (id) {MERGE_INCIDENT}
             RETURNING xmax = 0"
        );
    }
    // The file's id is kept as `copied_id`; the destination numbers the row.
    let source_param = spec.columns.len() + 1;
    let renamed: Vec<&str> = names
        .iter()
        .map(|name| if *name == "id" { "copied_id" } else { name })
        .collect();
    let renamed = renamed.join(", ");
    format!(
        "INSERT INTO earshot.{table} AS c ({renamed}, copied_from)
         SELECT u.*, ${source_param}::text FROM unnest({arrays}) AS u ({renamed})
         ON CONFLICT (copied_from, copied_id) DO NOTHING
         RETURNING xmax = 0"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_keyed_by_its_source_and_its_id_there() {
        let sql = insert_sql(&SPECS[1]);
        assert!(
            sql.contains(
                "(copied_id, at_ms, operator, subscription_id, action, detail, copied_from)"
            ),
            "{sql}"
        );
        assert!(sql.contains("$7::text"), "{sql}");
        assert!(
            sql.contains("ON CONFLICT (copied_from, copied_id) DO NOTHING"),
            "{sql}"
        );
        let recoveries = insert_sql(&SPECS[2]);
        assert!(recoveries.contains("$10::boolean[]"), "{recoveries}");
        assert!(recoveries.contains("$11::text"), "{recoveries}");
    }

    #[test]
    fn an_older_store_without_a_resolution_reason_is_read_with_none() {
        use super::super::copy_sweep::{After, Column};
        let conn = rusqlite::Connection::open_in_memory().expect("opens");
        conn.execute_batch(
            "CREATE TABLE incidents (id TEXT PRIMARY KEY, subscription_id TEXT NOT NULL,
                 http_status_code INTEGER NOT NULL, error_class TEXT NOT NULL,
                 first_seen_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL,
                 resolved_ms INTEGER, acknowledged_by TEXT, acknowledged_ms INTEGER,
                 note TEXT);
             INSERT INTO incidents VALUES ('inc-1', 'sub-1', 404, 'rejected', 1, 2, 3,
                 'alice', 4, 'on it');",
        )
        .expect("an older table");
        let batch = SPECS[0].read(&conn, &After::Start, 10).expect("read");
        assert_eq!(batch.len(), 1);
        let Column::Text(reasons) = &batch.columns[7] else {
            panic!("resolved_reason is text: {:?}", batch.columns[7]);
        };
        assert_eq!(reasons, &[None]);
        let Column::Text(by) = &batch.columns[8] else {
            panic!("acknowledged_by is text");
        };
        assert_eq!(by, &[Some("alice".to_owned())]);
    }

    #[test]
    fn an_incident_is_merged_only_where_the_file_knows_more() {
        let sql = insert_sql(&SPECS[0]);
        assert!(sql.contains("ON CONFLICT (id) DO UPDATE"), "{sql}");
        assert!(
            sql.contains("c.acknowledged_by IS NULL AND excluded.acknowledged_by IS NOT NULL"),
            "{sql}"
        );
        assert!(!sql.contains("copied_from"), "{sql}");
    }
}
