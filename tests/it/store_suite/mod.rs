//! The store suite: each test written once against the store handle
//! (`earshot_core::store::StoreHandle`) and run on both backends, SQLite
//! (a file in a temp dir) and PostgreSQL (a database in the test kit's
//! throwaway cluster), by [`store_test!`]: `store_suite::MODULE::TEST::sqlite`
//! and `…::postgres`. A test gets a [`TestStore`]: handles on one store
//! (each a replica of its own: a writer thread on the file, or a pool on
//! the database) and counts of its tables read from outside earshot.
//! Tests of SQLite-only matters (file modes, damaged pages, WAL) stay in
//! their own files, as do PostgreSQL-only ones (partitions, TLS).

mod changes;
mod event_filters;
mod event_outcomes;
mod filing;
mod free_text;
mod health;
mod incidents;
mod live_list;
mod reading;
mod recover;
mod session_get;
mod sessions_add;
pub(crate) mod sweep;

use std::path::PathBuf;

use earshot_core::history::sweep::{SweepReport, sweep};
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::postgres::{PasswordSources, PgStore, PgTarget};
use earshot_core::store::writer::Writer;
use earshot_core::store::{AsyncStore, StoreHandle, StoreReader};
use earshot_testkit::postgres::PgCluster;

/// Declares a store test run on both backends: `store_test!(async fn
/// name(store) { … })` makes `name::sqlite` and `name::postgres`, each
/// calling the body with a fresh [`TestStore`] of its backend.
macro_rules! store_test {
    ($(#[$meta:meta])* async fn $name:ident($store:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn body($store: $crate::store_suite::TestStore) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                body($crate::store_suite::TestStore::new($crate::store_suite::Backend::Sqlite).await)
                    .await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                body($crate::store_suite::TestStore::new($crate::store_suite::Backend::Postgres).await)
                    .await
            }
        }
    };
}
pub(crate) use store_test;

/// Which backend a run of a store test is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One store for one test, on one backend; removed when dropped.
pub struct TestStore {
    pub(crate) place: Place,
    backend: Backend,
}

pub(crate) enum Place {
    Sqlite {
        _dir: tempfile::TempDir,
        path: PathBuf,
    },
    Postgres {
        cluster: PgCluster,
        url: String,
        sources: PasswordSources,
    },
}

/// The database each PostgreSQL run gets in its cluster.
const DATABASE: &str = "suite";

impl TestStore {
    /// A new, empty store on `backend`.
    pub async fn new(backend: Backend) -> TestStore {
        let place = match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("a temp dir");
                let path = dir.path().join("earshot.db");
                Place::Sqlite { _dir: dir, path }
            }
            Backend::Postgres => {
                let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
                cluster.create_database(DATABASE).expect("database made");
                let sources = cluster.password_sources();
                let url = cluster.url(DATABASE);
                Place::Postgres {
                    cluster,
                    url,
                    sources,
                }
            }
        };
        TestStore { place, backend }
    }

    /// The backend this run is on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Runs the real binary, `earshot ARGS --store STORE` (a file's path,
    /// or the database's URL with its password in `PGPASSWORD`), to its
    /// end within a minute.
    pub async fn earshot(&self, args: &[&str]) -> std::process::Output {
        self.earshot_with(args, &[]).await
    }

    /// [`TestStore::earshot`] with `env` set too.
    pub async fn earshot_with(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut command = crate::common::cli::earshot();
        command.args(args).envs(env.iter().copied()).arg("--store");
        match &self.place {
            Place::Sqlite { path, .. } => command.arg(path),
            Place::Postgres { cluster, url, .. } => {
                command.arg(url).env("PGPASSWORD", cluster.password())
            }
        };
        crate::common::cli::run(&mut command).await
    }

    /// A handle of a replica of its own on this store, opened (and the
    /// store migrated) as a command opens it.
    pub async fn replica(&self) -> StoreHandle {
        match &self.place {
            Place::Sqlite { path, .. } => {
                let store = earshot_core::store::Store::open(path).expect("the store opens");
                // The thread stops when the last handle is dropped.
                let (writer, _thread) = Writer::start(store).expect("the writer starts");
                writer.into()
            }
            Place::Postgres { url, sources, .. } => {
                let target = PgTarget::parse(url).expect("a store URL");
                PgStore::connect(target, sources)
                    .await
                    .expect("the store opens")
                    .into()
            }
        }
    }

    /// A reader on this store, opened as a read command opens it.
    pub async fn reader(&self) -> StoreReader {
        match &self.place {
            Place::Sqlite { path, .. } => earshot_core::store::Store::open(path)
                .expect("the store opens")
                .into(),
            Place::Postgres { url, sources, .. } => {
                let target = PgTarget::parse(url).expect("a store URL");
                PgStore::connect(target, sources)
                    .await
                    .expect("the store opens")
                    .into()
            }
        }
    }

    /// Starts filing `event` in a transaction held open until
    /// [`HeldFiling::commit`], as a replica whose commit is slow: on
    /// PostgreSQL a connection of the test's own inserts the row (taking
    /// its transaction id now) and commits later, while other replicas
    /// file and commit; SQLite has one writer at a time (an open write
    /// transaction would stop the other replicas), so there the event is
    /// filed, by a replica of its own, when committed.
    pub async fn hold_filing(&self, event: ObservedEvent) -> HeldFiling {
        match &self.place {
            Place::Sqlite { .. } => HeldFiling::Sqlite(self.replica().await, Box::new(event)),
            Place::Postgres { cluster, .. } => {
                // psql over the server's socket, fed a statement at a time.
                let bindir = earshot_testkit::postgres::server_bindir().expect("the server's bin");
                let mut psql = std::process::Command::new(bindir.join("psql"))
                    .args(["--no-psqlrc", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
                    .arg(cluster.socket_dir())
                    .args(["-p", &cluster.port().to_string()])
                    .args(["-U", earshot_testkit::postgres::PG_USER, "-d", DATABASE])
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .expect("psql starts");
                let text = |value: &str| format!("'{}'", value.replace('\'', "''"));
                let headers = serde_json::to_string(&event.headers).expect("headers");
                let insert = format!(
                    "BEGIN;\nINSERT INTO earshot.events (event_id, event, session_id, occurred_ms, \
                     received_ms, delivery_id, headers, body) VALUES ({}, {}, {}, {}, {}, {}, {}, \
                     convert_to({}, 'UTF8'));\n",
                    text(&event.event_id),
                    text(&event.event),
                    text(&event.session_id),
                    event.occurred_ms,
                    event.received_ms,
                    event.delivery_id.as_deref().map_or("NULL".into(), text),
                    text(&headers),
                    text(&String::from_utf8_lossy(&event.body)),
                );
                use std::io::Write;
                psql.stdin
                    .as_mut()
                    .expect("psql's input")
                    .write_all(insert.as_bytes())
                    .expect("sent to psql");
                // Inserted when a session idles in a transaction holding an id.
                earshot_testkit::eventually(
                    std::time::Duration::from_secs(10),
                    "the row inserted",
                    || async {
                        let open = cluster
                            .psql(
                                DATABASE,
                                "SELECT count(*) FROM pg_stat_activity \
                             WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL",
                            )
                            .expect("psql");
                        (open == "1").then_some(())
                    },
                )
                .await;
                HeldFiling::Postgres(psql)
            }
        }
    }

    /// The rows of `table` (`events`, `sessions`, `unfiled_events`), read
    /// apart from earshot's handle (rusqlite, psql).
    pub fn count(&self, table: &str) -> i64 {
        self.query_count(&format!("SELECT count(*) FROM {table}"), table)
    }

    /// The rows of `table` whose `event_id` is `event_id`.
    pub fn count_id(&self, table: &str, event_id: &str) -> i64 {
        // Ids are the tests' own, without quotes.
        assert!(!event_id.contains('\''), "{event_id}");
        self.query_count(
            &format!("SELECT count(*) FROM {table} WHERE event_id = '{event_id}'"),
            table,
        )
    }

    /// One sweep of this store against the platform `client` asks, in
    /// process, as a command sweeps it (through a store of its own).
    pub async fn sweep(&self, client: &earshot_core::api::Client) -> SweepReport {
        match &self.place {
            Place::Sqlite { path, .. } => {
                let store = AsyncStore::open(path.clone())
                    .await
                    .expect("the store opens");
                sweep(client, &store, 500).await.expect("a sweep")
            }
            Place::Postgres { url, sources, .. } => {
                let target = PgTarget::parse(url).expect("a store URL");
                let store = PgStore::connect(target, sources)
                    .await
                    .expect("the store opens");
                sweep(client, &store, 500).await.expect("a sweep")
            }
        }
    }

    /// The rows `sql` selects, read apart from earshot (rusqlite, psql),
    /// each as its columns' text joined by `|` (NULL as nothing, as psql
    /// writes it). `{t}` in `sql` stands before each table's name: nothing
    /// on SQLite, `earshot.` on PostgreSQL.
    pub fn rows(&self, sql: &str) -> Vec<String> {
        match &self.place {
            Place::Sqlite { path, .. } => sqlite_rows(path, sql),
            Place::Postgres { cluster, .. } => {
                let text = cluster
                    .psql(DATABASE, &sql.replace("{t}", "earshot."))
                    .expect("psql");
                text.lines().map(str::to_owned).collect()
            }
        }
    }

    fn query_count(&self, sql: &str, table: &str) -> i64 {
        match &self.place {
            Place::Sqlite { path, .. } => {
                let conn = rusqlite::Connection::open(path).expect("the store opens");
                conn.query_row(sql, [], |row| row.get(0)).expect("a count")
            }
            Place::Postgres { cluster, .. } => {
                let sql = sql.replacen(
                    &format!("FROM {table}"),
                    &format!("FROM earshot.{table}"),
                    1,
                );
                let text = cluster.psql(DATABASE, &sql).expect("psql");
                text.parse()
                    .unwrap_or_else(|_| panic!("not a count: {text:?}"))
            }
        }
    }
}

/// Files `session.started` and `session.completed` of `session` (ids
/// `{prefix}-0` and `{prefix}-1`, two and one seconds ago, received 100 ms
/// after) into each of `stores`, as the observer files them.
pub(crate) async fn file_session_pair(stores: &[TestStore], session: &str, prefix: &str) {
    let started = earshot_core::store::now_ms() - 2_000;
    for store in stores {
        let handle = store.replica().await;
        for (index, event) in ["session.started", "session.completed"].iter().enumerate() {
            let occurred_ms = started + index as i64 * 1_000;
            let at = chrono::DateTime::from_timestamp_millis(occurred_ms).expect("a time");
            let event_id = format!("{prefix}-{index}");
            let body = serde_json::json!({
                "event_id": event_id,
                "event": event,
                "timestamp": at.to_rfc3339(),
                "session": { "session_id": session },
            });
            let filed = handle
                .file(ObservedEvent {
                    event_id,
                    event: (*event).into(),
                    session_id: session.to_owned(),
                    kind: "session",
                    occurred_ms,
                    received_ms: occurred_ms + 100,
                    delivery_id: None,
                    headers: Vec::new(),
                    body: body.to_string().into_bytes(),
                })
                .await
                .expect("filed");
            assert!(filed);
        }
    }
}

/// [`TestStore::rows`] of the SQLite store at `path`.
pub(crate) fn sqlite_rows(path: &std::path::Path, sql: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("the store opens");
    let sql = sql.replace("{t}", "");
    let mut statement = conn.prepare(&sql).expect("a query");
    let columns = statement.column_count();
    let rows = statement
        .query_map([], |row| {
            let mut cells = Vec::new();
            for index in 0..columns {
                cells.push(match row.get_ref(index)? {
                    rusqlite::types::ValueRef::Null => String::new(),
                    rusqlite::types::ValueRef::Integer(value) => value.to_string(),
                    rusqlite::types::ValueRef::Real(value) => value.to_string(),
                    rusqlite::types::ValueRef::Text(text)
                    | rusqlite::types::ValueRef::Blob(text) => {
                        String::from_utf8_lossy(text).into_owned()
                    }
                });
            }
            Ok(cells.join("|"))
        })
        .expect("rows");
    rows.collect::<Result<_, _>>().expect("readable rows")
}

/// A filing whose transaction is held open ([`TestStore::hold_filing`]).
pub enum HeldFiling {
    Sqlite(StoreHandle, Box<ObservedEvent>),
    /// The `psql` holding it.
    Postgres(std::process::Child),
}

impl HeldFiling {
    /// Commits it (on SQLite: files it).
    pub async fn commit(self) {
        match self {
            HeldFiling::Sqlite(replica, event) => {
                assert!(replica.file(*event).await.expect("filed"), "a new event");
            }
            HeldFiling::Postgres(mut psql) => {
                use std::io::Write;
                let mut input = psql.stdin.take().expect("psql's input");
                input.write_all(b"COMMIT;\n").expect("sent to psql");
                // Closed: psql ends once the commit is done.
                drop(input);
                let status = tokio::task::spawn_blocking(move || psql.wait())
                    .await
                    .expect("the wait")
                    .expect("psql ends");
                assert!(status.success(), "psql: {status}");
            }
        }
    }
}

/// An event of id `id`, type `event` and session `session` (a call when
/// its id starts `call_`), received 500 ms after it occurred, its body
/// naming its id.
pub(crate) fn observed(id: &str, event: &str, session: &str, occurred_ms: i64) -> ObservedEvent {
    ObservedEvent {
        event_id: id.into(),
        event: event.into(),
        session_id: session.into(),
        kind: if session.starts_with("call_") {
            "call"
        } else {
            "session"
        },
        occurred_ms,
        received_ms: occurred_ms + 500,
        delivery_id: Some(format!("dlv-{id}")),
        headers: vec![("content-type".into(), "application/json".into())],
        body: format!("{{\"event_id\":\"{id}\"}}").into_bytes(),
    }
}

/// Event `index` of a test (ids `evt-0000`…, seven sessions), as the
/// receiver hands it to the store.
pub(crate) fn event(index: usize, occurred_ms: i64) -> ObservedEvent {
    ObservedEvent {
        event_id: format!("evt-{index:04}"),
        event: "session.ended".into(),
        session_id: format!("ses-{}", index % 7),
        kind: "session",
        occurred_ms,
        received_ms: earshot_core::store::now_ms(),
        delivery_id: Some(format!("dlv-{index}")),
        headers: vec![("content-type".into(), "application/json".into())],
        body: format!("{{\"event_id\":\"evt-{index:04}\"}}").into_bytes(),
    }
}
