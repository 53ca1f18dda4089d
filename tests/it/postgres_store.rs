//! The PostgreSQL store against a real server, the test kit's throwaway
//! cluster (`earshot_testkit::postgres::PgCluster`): replicas that start at
//! once migrate once; a day without a partition gets one, made once by
//! replicas filing its events at the same moment (filing itself is in the
//! store suite, `store_suite::filing`, run on both backends);
//! a refused connection, a wrong password and an unverified certificate
//! are typed errors that name the store and never the password; TLS with
//! the test's own CA works; every connection turns JIT off first. Through the binary: `earshot store migrate
//! --store postgres://…`, and the commands that take only a store file
//! refusing a URL (`listen` takes one: `postgres_listen`; `store prune`:
//! `postgres_retention`).

use std::sync::Arc;

use earshot_core::redact::SecretString;
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::postgres::{
    PG_SCHEMA_VERSION, PasswordSources, PgError, PgStore, PgTarget, days,
};
use earshot_testkit::postgres::PgCluster;

use crate::common::cli::{isolated, run, text};
use crate::listen_tls::TestCa;
use crate::store_suite::event;

/// Replicas in the concurrency tests.
const REPLICAS: usize = 6;

/// A cluster with a database `name`, and the password to reach it.
fn cluster_with(name: &str) -> (PgCluster, PasswordSources) {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database(name).expect("database made");
    let sources = password(cluster.password());
    (cluster, sources)
}

fn password(password: &str) -> PasswordSources {
    PasswordSources {
        env_password: Some(SecretString::new(password)),
        ..PasswordSources::default()
    }
}

fn target(url: &str) -> PgTarget {
    PgTarget::parse(url).expect("a store URL")
}

/// A count read with psql, apart from earshot's client.
fn count(cluster: &PgCluster, database: &str, sql: &str) -> i64 {
    let text = cluster.psql(database, sql).expect("psql");
    text.parse()
        .unwrap_or_else(|_| panic!("not a count: {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_at_once_migrate_once() {
    let (cluster, sources) = cluster_with("migrate");
    let url = cluster.url("migrate");
    let starts = (0..REPLICAS).map(|_| {
        let sources = sources.clone();
        let target = target(&url);
        tokio::spawn(async move { PgStore::connect(target, &sources).await })
    });
    for started in futures_util::future::join_all(starts).await {
        started.expect("task").expect("each replica starts");
    }
    assert_eq!(
        count(
            &cluster,
            "migrate",
            "SELECT count(*) FROM earshot.schema_version"
        ),
        i64::from(PG_SCHEMA_VERSION),
        "one row per version: applied once"
    );
    let again = PgStore::open(target(&url), &sources, 1)
        .await
        .expect("opens");
    let migrated = again.migrate().await.expect("migrates");
    assert_eq!(
        (migrated.from, migrated.to),
        (PG_SCHEMA_VERSION, PG_SCHEMA_VERSION)
    );
    assert_eq!(
        again.schema_version().await.expect("version"),
        PG_SCHEMA_VERSION
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_without_a_partition_gets_one_made_once_by_replicas_filing_at_once() {
    // Filing itself, exactly once across replicas, is in the store suite
    // (`store_suite::filing`, run on both backends); here the partitions.
    let (cluster, sources) = cluster_with("filing");
    let url = cluster.url("filing");
    // Today's day is made at connect; ten days ago has none until an event
    // needs it, and every replica finds it missing at once.
    let old_day = earshot_core::store::now_ms() - 10 * days::DAY_MS;
    let events: Arc<Vec<ObservedEvent>> =
        Arc::new((0..5).map(|index| event(index, old_day)).collect());
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(
            PgStore::connect(target(&url), &sources)
                .await
                .expect("replica connects"),
        );
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(REPLICAS));
    let filers = replicas.into_iter().map(|store| {
        let events = Arc::clone(&events);
        let barrier = Arc::clone(&barrier);
        tokio::spawn(async move {
            barrier.wait().await;
            for event in events.iter() {
                store.file(event).await.expect("filed");
            }
        })
    });
    for filed in futures_util::future::join_all(filers).await {
        filed.expect("task");
    }
    let old_partition = days::partition_name(old_day);
    assert_eq!(
        count(
            &cluster,
            "filing",
            &format!("SELECT count(*) FROM earshot.{old_partition}")
        ),
        5,
        "the events are in their own day's partition, once each"
    );
    assert_eq!(
        count(&cluster, "filing", "SELECT count(*) FROM earshot.events"),
        5
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_and_a_wrong_password_say_so_without_the_password() {
    let (cluster, _) = cluster_with("logins");
    let secret = "not-the-password-0123456789";
    let wrong = password(secret);
    let refused_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        listener.local_addr().expect("address").port()
    };
    let nowhere = format!("postgres://earshot@127.0.0.1:{refused_port}/logins");
    let refused = PgStore::connect(target(&nowhere), &wrong)
        .await
        .expect_err("nothing listens there");
    let text = refused.to_string();
    assert!(matches!(refused, PgError::Connect { .. }), "{refused:?}");
    assert!(text.contains(&nowhere), "{text}");
    assert!(text.contains("refused"), "{text}");
    let login = PgStore::connect(target(&cluster.url("logins")), &wrong)
        .await
        .expect_err("a wrong password");
    let text = login.to_string();
    assert!(matches!(login, PgError::Connect { .. }), "{login:?}");
    assert!(text.contains("password authentication failed"), "{text}");
    for shown in [text, format!("{login:?}"), format!("{refused:?}")] {
        assert!(!shown.contains(secret), "{shown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_turns_the_servers_jit_off_first() {
    let (cluster, sources) = cluster_with("settings");
    cluster
        .psql(
            "settings",
            "ALTER DATABASE settings SET log_statement = 'all'",
        )
        .expect("statements logged");
    assert_eq!(
        cluster.psql("settings", "SHOW jit").expect("psql").trim(),
        "on",
        "the server's own default, which earshot's connections change"
    );
    let store = PgStore::connect(target(&cluster.url("settings")), &sources)
        .await
        .expect("connects");
    assert_eq!(
        store.schema_version().await.expect("a read"),
        PG_SCHEMA_VERSION
    );
    let log = std::fs::read_to_string(cluster.server_log()).expect("the server's log");
    assert!(
        log.contains("statement: SET jit = off"),
        "no connection of earshot's set it: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_the_database_is_verified_against_the_root_given() {
    let ca = TestCa::new("earshot test database CA");
    let (cert, key) = ca.server_cert();
    let cluster = PgCluster::start_with_tls(&cert, &key).expect("a cluster with TLS");
    cluster.create_database("tls").expect("database made");
    let sources = password(cluster.password());
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("ca.pem");
    std::fs::write(&root, &ca.pem).expect("CA written");
    let base = cluster.url("tls");
    let trusted = format!("{base}?sslmode=require&sslrootcert={}", root.display());
    let store = PgStore::connect(target(&trusted), &sources)
        .await
        .expect("TLS with the test CA");
    assert!(
        store
            .file(&event(1, earshot_core::store::now_ms()))
            .await
            .expect("filed")
    );
    let encrypted = cluster
        .psql(
            "tls",
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE ssl AND application_name = 'earshot'",
        )
        .expect("psql");
    assert_ne!(encrypted, "0", "earshot's connections use TLS");
    // The system's roots do not know the test CA: refused, not downgraded.
    let unverified = PgStore::connect(target(&format!("{base}?sslmode=require")), &sources)
        .await
        .expect_err("an unknown CA");
    let text = unverified.to_string();
    assert!(text.contains("certificate"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_migrate_migrates_a_postgres_store_once_through_the_binary() {
    let (cluster, _) = cluster_with("cli");
    let home = tempfile::tempdir().expect("temp dir");
    let url = cluster.url("cli");
    let migrate = |extra: &[&str]| {
        let mut command = isolated(home.path());
        command
            .args(["store", "migrate", "--store", &url])
            .args(extra)
            .env("PGPASSWORD", cluster.password());
        command
    };
    let first = run(&mut migrate(&[])).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert_eq!(
        text(&first.stdout).trim(),
        format!(
            "migrated {url} from schema 0 to {PG_SCHEMA_VERSION}\n\
             type index (events_by_type): built; type: reads along it\n\
             text index (events_by_text, pg_trgm): built; free text reads along it"
        )
    );
    let again = run(&mut migrate(&["--json"])).await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&again.stdout).expect("JSON");
    assert_eq!(answer["from"], PG_SCHEMA_VERSION);
    assert_eq!(answer["backend"], "postgres");
    assert_eq!(answer["type_index"], "built");
    assert_eq!(answer["text_index"], "built");
    assert_eq!(
        count(
            &cluster,
            "cli",
            "SELECT count(*) FROM earshot.schema_version"
        ),
        i64::from(PG_SCHEMA_VERSION)
    );
    // A wrong password: exit 1, the store named, the password not.
    let wrong = run(isolated(home.path())
        .args(["store", "migrate", "--store", &url])
        .env("PGPASSWORD", "wrong-password-4711"))
    .await;
    let said = text(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&url) && said.contains("password authentication failed"),
        "{said}"
    );
    assert!(!said.contains("wrong-password-4711"), "{said}");
    // A password in the URL: exit 2, not used, not echoed.
    let with_password = url.replace("earshot@", "earshot:hunter2hunter2@");
    let refused =
        run(isolated(home.path()).args(["store", "migrate", "--store", &with_password])).await;
    let said = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("holds a password"), "{said}");
    assert!(!said.contains("hunter2hunter2"), "{said}");
}

#[tokio::test]
async fn commands_that_take_a_store_file_refuse_a_postgres_url_and_make_nothing() {
    let home = tempfile::tempdir().expect("temp dir");
    let url = "postgres://obs@127.0.0.1:9/earshot";
    let runs: [&[&str]; 2] = [
        &["store", "forget", "ses-1", "--store", url],
        &["store", "check", "--store", url],
    ];
    for args in runs {
        let output = run(isolated(home.path()).args(args).current_dir(home.path())).await;
        let said = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains("PostgreSQL stores are not supported by this command yet"),
            "{args:?}: {said}"
        );
    }
    // `health`, `incidents` (and `ack`) and `changes` take it
    // (store_suite::health, ::incidents, ::changes): unreachable, exit 1
    // naming it, and make nothing.
    let takers: [&[&str]; 4] = [
        &["health", "--no-sweep", "--store", url],
        &["incidents", "--no-sweep", "--store", url],
        &["incidents", "ack", "0a1b", "--store", url],
        &["changes", "--store", url],
    ];
    for args in takers {
        tries_the_server(
            isolated(home.path()).args(args).current_dir(home.path()),
            url,
        )
        .await;
    }
    // `listen --store` takes the URL, from the environment too: it tries
    // the server (nothing listens on port 9), and makes nothing either.
    let secret = home.path().join("secret");
    std::fs::write(&secret, crate::common::SECRET).expect("secret written");
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("secret 0600");
    let listen = |home: &std::path::Path| {
        let mut command = isolated(home);
        command
            .args(["listen", "--store", "--secret-file"])
            .arg(&secret)
            .current_dir(home);
        command
    };
    tries_the_server(listen(home.path()).env("EARSHOT_STORE", url), url).await;
    // And as a profile's `store`.
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!("default_profile = \"one\"\n[profiles.one]\nurl = \"http://127.0.0.1:9\"\nstore = \"{url}\"\n"),
    )
    .expect("config written");
    let output = run(isolated(home.path())
        .args(["store", "check", "--config"])
        .arg(&config)
        .current_dir(home.path()))
    .await;
    let said = text(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{said}");
    assert!(
        said.contains("profiles.one.store") && said.contains("not supported by this command yet"),
        "{said}"
    );
    // `listen`, `health`, `incidents` and `changes` take the profile's
    // PostgreSQL store: they try the server.
    tries_the_server(listen(home.path()).arg("--config").arg(&config), url).await;
    for command in [
        &["health", "--no-sweep"][..],
        &["incidents", "--no-sweep"],
        &["changes"],
    ] {
        tries_the_server(
            isolated(home.path())
                .args(command)
                .arg("--config")
                .arg(&config)
                .current_dir(home.path()),
            url,
        )
        .await;
    }
    assert!(
        !home.path().join("postgres:").exists(),
        "no directory named after the URL"
    );
}

/// Runs `listen` (or `health`), which must try the PostgreSQL server at
/// `url` (nothing listens there) and exit 1 saying it cannot connect.
async fn tries_the_server(listen: &mut std::process::Command, url: &str) {
    let output = run(listen).await;
    let said = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains(url) && said.contains("cannot connect"),
        "{said}"
    );
}
