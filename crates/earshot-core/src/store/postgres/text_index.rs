//! Schema version 14, the free-text index of the Events filters on
//! PostgreSQL: `events_by_text`, a trigram index (`pg_trgm`'s
//! `gin_trgm_ops`) on the text free text is searched in ([`folded`]),
//! and the events it finds for a query's words ([`candidates`]).
//!
//! `pg_trgm` is a contrib extension: Debian's server ships it, a bare
//! server need not, and `CREATE EXTENSION` needs the right to create in
//! the database. The migration tries it once (`CREATE EXTENSION IF NOT
//! EXISTS pg_trgm WITH SCHEMA earshot`, in a block that catches its
//! error) and never fails for it: without the extension there is no index
//! and free text is tested on the window's rows as before ([`finish`]
//! says [`TextIndex::Unavailable`], which `earshot store migrate` prints).
//! An operator who installs it later gets the index at the next start.
//!
//! The index is a prefilter. Its text is, for an event whose ids and type
//! are ASCII, `lower(event_id || ' ' || session_id || ' ' || event)` under
//! `COLLATE "C"` (ASCII lowering, which is [`crate::query::fold`] on ASCII
//! text), and for any other event the marker [`MARKER`]: PostgreSQL cannot
//! fold other characters as Rust does (the Kelvin sign is a `k` to Rust),
//! so those events are always candidates. A word (never holding a space)
//! is found in one of the three columns exactly when it is in that text,
//! and Rust still checks every row with `fold`, so the list is the scan's.
//! A word needs three letters or digits in a row for a trigram; words
//! without are checked on the rows the others find, and a query with none
//! scans. Built as the type index is: in the migration up to
//! `type_index::BUILD_IN_MIGRATION` events, else per partition
//! concurrently after it (`partition_index.rs`).

use tokio_postgres::Client;

use super::PgError;
use super::partition_index::{Build, PartitionedIndex};
use super::schema::lock;
use super::type_index::BUILD_IN_MIGRATION;

/// What an event holding a character other than ASCII is indexed as: a
/// word no id or type holds, so its trigrams find those events alone.
pub const MARKER: &str = "qxjzvkwq";

/// The index's name in the schema `earshot`.
const NAME: &str = "events_by_text";

/// The indexed text of the events' columns, each named with `prefix`
/// (`""` in the index, `"e."` in a query: the planner matches the two).
pub fn folded(prefix: &str) -> String {
    let all = format!("{prefix}event_id || {prefix}session_id || {prefix}event");
    format!(
        "(CASE WHEN octet_length({all}) = char_length({all})
          THEN lower(({prefix}event_id || ' ' || {prefix}session_id || ' ' || {prefix}event)
                     COLLATE \"C\")
          ELSE '{MARKER}' END)"
    )
}

/// The migration to version 14: `pg_trgm` when it can be had, and then
/// the index (on a large store, on the parent only: [`finish`] builds
/// each partition's).
pub(super) fn version_14() -> String {
    let expression = folded("");
    format!(
        "
DO $v14$
DECLARE
    trgm text;
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA earshot;
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'earshot: no pg_trgm (%): free text tests the window''s rows', SQLERRM;
    END;
    SELECT n.nspname INTO trgm FROM pg_extension AS x
        JOIN pg_namespace AS n ON n.oid = x.extnamespace WHERE x.extname = 'pg_trgm';
    IF trgm IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format($ddl$CREATE INDEX IF NOT EXISTS {NAME} ON %s earshot.events
                       USING gin ({expression} %I.gin_trgm_ops)$ddl$,
                   CASE WHEN (SELECT count(*) FROM (SELECT 1 FROM earshot.events
                                                    LIMIT {over}) AS e) <= {most}
                        THEN '' ELSE 'ONLY' END,
                   trgm);
END
$v14$;
",
        over = BUILD_IN_MIGRATION + 1,
        most = BUILD_IN_MIGRATION,
    )
}

/// The schema `pg_trgm` is installed in, quoted; `None` without it.
const TRGM_SCHEMA: &str = "
SELECT quote_ident(n.nspname) FROM pg_extension AS x
JOIN pg_namespace AS n ON n.oid = x.extnamespace WHERE x.extname = 'pg_trgm'";

/// How the index stands after [`finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextIndex {
    /// Built on every partition: free text finds its events along it.
    Built,
    /// Another process is building it now; free text tests the window's
    /// rows meanwhile.
    Building,
    /// `pg_trgm` is not installed (not available on the server, or not
    /// permitted to this role): free text tests the window's rows.
    Unavailable,
}

/// The index as [`PartitionedIndex`], its operator class in `trgm`'s
/// schema.
fn index(body: &str) -> PartitionedIndex<'_> {
    PartitionedIndex {
        name: NAME,
        body,
        lock: lock::TEXT_INDEX,
    }
}

/// Builds the index on each partition that lacks it, concurrently, as
/// the type index is; makes the parent's first when `pg_trgm` was
/// installed after the migration. `client` must not be in a transaction.
pub async fn finish(client: &Client) -> Result<TextIndex, PgError> {
    let Some(row) = client.query_opt(TRGM_SCHEMA, &[]).await? else {
        return Ok(TextIndex::Unavailable);
    };
    let schema: String = row.try_get(0)?;
    let body = format!("USING gin ({} {schema}.gin_trgm_ops)", folded(""));
    let exists = client
        .query_one(
            "SELECT to_regclass('earshot.events_by_text') IS NOT NULL",
            &[],
        )
        .await?
        .try_get::<_, bool>(0)?;
    if !exists {
        client
            .batch_execute(&format!(
                "CREATE INDEX IF NOT EXISTS {NAME} ON ONLY earshot.events {body}"
            ))
            .await?;
    }
    Ok(match index(&body).finish(client).await? {
        Build::Built => TextIndex::Built,
        Build::Building => TextIndex::Building,
    })
}

/// Whether `word` gives a trigram: three ASCII letters or digits in a
/// row (`pg_trgm` splits text at anything else).
pub fn indexable(word: &str) -> bool {
    let mut run = 0;
    for c in word.chars() {
        run = if c.is_ascii_alphanumeric() {
            run + 1
        } else {
            0
        };
        if run >= 3 {
            return true;
        }
    }
    false
}

/// `%word%` for `LIKE`, its `%`, `_` and `\` taken literally.
pub fn contained(word: &str) -> String {
    let mut pattern = String::from("%");
    for c in word.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The candidates' statement for `words` indexable words: `$1` the
/// window's start, then one pattern a word, then the limit.
pub fn candidates_query(words: usize) -> String {
    let text = folded("e.");
    let each: Vec<String> = (0..words)
        .map(|index| format!("{text} LIKE ${}", index + 2))
        .collect();
    format!(
        "SELECT e.event_id FROM earshot.events e
         WHERE e.occurred_ms >= $1 AND (({}) OR {text} LIKE '%{MARKER}%')
         LIMIT ${}",
        each.join(" AND "),
        words + 2
    )
}

/// The ids of the events since `since_ms` that may hold every indexable
/// word of `words` (a superset: Rust decides), read along the index in
/// `tx`, when that is the way to list them: the index is valid, some word
/// is [`indexable`], and at most `most` events are found. `None`: test
/// the window's rows.
pub async fn candidates(
    tx: &deadpool_postgres::Transaction<'_>,
    since_ms: i64,
    words: &[String],
    most: i64,
) -> Result<Option<Vec<String>>, PgError> {
    let patterns: Vec<String> = words
        .iter()
        .filter(|word| indexable(word))
        .map(|word| contained(word))
        .collect();
    if patterns.is_empty() || !index("").is_valid(&**tx).await? {
        return Ok(None);
    }
    let over = most + 1;
    let statement = tx.prepare_cached(&candidates_query(patterns.len())).await?;
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&since_ms];
    params.extend(
        patterns
            .iter()
            .map(|pattern| pattern as &(dyn tokio_postgres::types::ToSql + Sync)),
    );
    params.push(&over);
    let rows = tx.query(&statement, &params).await?;
    if rows.len() as i64 > most {
        return Ok(None);
    }
    let mut ids: Vec<String> = rows
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    ids.sort_unstable();
    ids.dedup();
    Ok(Some(ids))
}
