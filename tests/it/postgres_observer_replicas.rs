//! `earshot observer setup --replicas 3 --store postgres://…`, the real
//! binary against the emulator and the test kit's throwaway cluster: one
//! subscription, three systemd units on three ports (each `ExecStart`
//! runs `listen` with the store, the password from a credential file),
//! the load balancer's backend checking each replica's `/healthz`, no
//! password anywhere in what it prints; then each unit's `ExecStart` run
//! as systemd would (its `%d` files given), each answering `/healthz`,
//! and the events the platform delivers filed in the database. A file
//! store with `--replicas` exits 2 before the platform is asked. Setup on
//! a PostgreSQL store records its changes (create, then a resume) in the
//! store's change log, `earshot changes --store URL`, and makes no store
//! file in the state directory.

use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::cli::{isolated, run, text};
use crate::common::{self, API_KEY, eventually};
use earshot_testkit::postgres::PgCluster;

/// A child process stopped when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A first port with the next two, and each 1,000 above, free now.
fn free_ports() -> u16 {
    for _ in 0..200 {
        let first = 20_000 + fastrand::u16(0..30_000);
        let free = (0..3).all(|index| {
            [first + index, first + index + 1_000]
                .iter()
                .all(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok())
        });
        if free {
            return first;
        }
    }
    panic!("no free ports")
}

/// Waits for `listen`'s `listening on URL` line (after the line naming
/// the store), then drains its stdout.
fn listening(child: &mut Child) {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("listen's stdout");
    let mut lines = std::io::BufReader::new(stdout);
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        let read = lines.read_line(&mut line).expect("listen's output");
        if read == 0 {
            let mut said = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
            }
            panic!("listen ended; it said: {seen:?}\n{said}");
        }
        if line.starts_with("listening on ") {
            break;
        }
        seen.push(line);
    }
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
    if let Some(mut stderr) = child.stderr.take() {
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    }
}

/// The value of each `KEY=` line of `unit`.
fn values<'u>(unit: &'u str, key: &str) -> Vec<&'u str> {
    unit.lines()
        .filter_map(|line| line.strip_prefix(key))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_get_a_unit_each_and_a_checked_backend_and_each_runs_listen_on_the_store() {
    let harness = common::start_at(0.1).await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let store_url = cluster.url("observers");
    let home = tempfile::tempdir().expect("a temp dir");
    let password_file = home.path().join("store-password");
    std::fs::write(&password_file, cluster.password()).expect("the password file");
    let first = free_ports();
    let receiver = format!("http://127.0.0.1:{first}/observer");
    let listen = format!("127.0.0.1:{first}");
    let sentinel = "pg8-sentinel-password-never-printed";
    let setup = |store: &str, replicas: &str| {
        let mut command = isolated(home.path());
        command
            .args(["observer", "setup", &receiver, "--allow-private-urls"])
            .args([
                "--listen",
                &listen,
                "--replicas",
                replicas,
                "--store",
                store,
            ])
            .arg("--store-password-file")
            .arg(&password_file)
            .args(["--url", &harness.base, "--api-key", API_KEY])
            .env("PGPASSWORD", sentinel);
        command
    };

    // A file store cannot have replicas: refused before the platform is asked.
    let refused = run(&mut setup(&home.path().join("x.db").to_string_lossy(), "3")).await;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("--replicas needs a postgres://"));

    let output = run(&mut setup(&store_url, "3")).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    for secret in [cluster.password(), sentinel] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "a password printed:\n{stdout}\n{stderr}"
        );
    }
    let units: Vec<&str> = stdout
        .split("# /etc/systemd/system/earshot-observer-")
        .skip(1)
        .collect();
    assert_eq!(units.len(), 3, "{stdout}");
    let mut runs = Vec::new();
    for (index, unit) in units.iter().enumerate() {
        assert!(
            unit.starts_with(&format!("{}.service\n", index + 1)),
            "{unit}"
        );
        assert_eq!(
            values(unit, "Environment="),
            ["EARSHOT_STORE_PASSWORD_FILE=%d/store-password"]
        );
        let credentials = values(unit, "LoadCredential=");
        let password_credential = format!("store-password:{}", password_file.display());
        assert!(
            credentials.contains(&password_credential.as_str()),
            "{unit}"
        );
        let secret_file = credentials
            .iter()
            .find_map(|credential| credential.strip_prefix("webhook-secret:"))
            .expect("the webhook secret's credential");
        let exec = values(unit, "ExecStart=");
        assert_eq!(exec.len(), 1, "{unit}");
        let words: Vec<&str> = exec[0].split(' ').collect();
        assert_eq!(words[0], env!("CARGO_BIN_EXE_earshot"));
        assert_eq!(words[1], "listen");
        let after = |flag: &str| {
            let at = words.iter().position(|word| *word == flag).expect(flag);
            words[at + 1].to_owned()
        };
        assert_eq!(after("--store"), store_url);
        let port = first + u16::try_from(index).expect("an index");
        assert_eq!(after("--listen"), format!("127.0.0.1:{port}"));
        assert_eq!(
            after("--metrics-listen"),
            format!("127.0.0.1:{}", port + 1_000)
        );
        assert_eq!(after("--secret-file"), "%d/webhook-secret");
        // As systemd runs it: `%d` holds copies of the two files.
        let args: Vec<String> = words[1..]
            .iter()
            .map(|word| word.replace("%d/webhook-secret", secret_file))
            .collect();
        runs.push((args, port + 1_000));
    }
    let backend = stdout
        .split("backend earshot_observers\n")
        .nth(1)
        .expect("the load balancer's backend");
    assert!(backend.contains("option httpchk GET /healthz"), "{backend}");
    for index in 0..3 {
        let port = first + index;
        assert!(
            backend.contains(&format!(
                "server replica{} 127.0.0.1:{port} check port {}",
                index + 1,
                port + 1_000
            )),
            "{backend}"
        );
    }
    let subscriptions = harness
        .client
        .list_subscriptions(true)
        .await
        .expect("listed");
    assert_eq!(
        subscriptions.iter().filter(|s| s.url == receiver).count(),
        1,
        "one subscription"
    );

    // Each unit's ExecStart runs listen on the store and answers /healthz.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a client");
    let mut replicas = Vec::new();
    for (args, metrics_port) in runs {
        let mut command = isolated(home.path());
        let mut child = command
            .args(&args)
            .env("EARSHOT_STORE_PASSWORD_FILE", &password_file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("listen starts");
        listening(&mut child);
        replicas.push(Running(child));
        let health = http
            .get(format!("http://127.0.0.1:{metrics_port}/healthz"))
            .send()
            .await
            .expect("/healthz answers");
        assert_eq!(health.status().as_u16(), 200);
    }
    // The platform delivers to the first replica (the subscription's URL).
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    eventually(
        Duration::from_secs(20),
        "events filed in PostgreSQL",
        || async {
            let count = cluster
                .psql(
                    "observers",
                    &format!("SELECT count(*) FROM earshot.events WHERE session_id = '{session}'"),
                )
                .ok()?;
            (count.parse::<i64>().ok()? >= 2).then_some(())
        },
    )
    .await;
    drop(replicas);
}

/// Every file named `earshot.db` under `dir`.
fn store_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(store_files(&path));
        } else if path.file_name().is_some_and(|name| name == "earshot.db") {
            found.push(path);
        }
    }
    found
}

/// `changes --json --store URL`: (operator, subscription, action) of each,
/// newest first.
async fn changes_in(cluster: &PgCluster, store_url: &str) -> Vec<(String, String, String)> {
    let output = run(crate::common::cli::earshot()
        .args(["changes", "--json", "--store", store_url])
        .env("PGPASSWORD", cluster.password()))
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|change| {
            let field = |key: &str| change[key].as_str().unwrap_or("").to_owned();
            (field("operator"), field("subscription_id"), field("action"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_records_its_changes_in_the_postgres_store_and_makes_no_store_file() {
    let harness = common::start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let store_url = cluster.url("observers");
    let home = tempfile::tempdir().expect("a temp dir");
    let first = free_ports();
    let receiver = format!("http://127.0.0.1:{first}/observer");
    let setup = || {
        let mut command = isolated(home.path());
        command
            .args(["observer", "setup", &receiver, "--allow-private-urls"])
            .args(["--store", &store_url])
            .args(["--url", &harness.base, "--api-key", API_KEY])
            .env("PGPASSWORD", cluster.password())
            .env("USER", "dana");
        command
    };
    let output = run(&mut setup()).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains("not recorded"), "{stderr}");
    assert!(stdout.contains("PostgreSQL store's change log"), "{stdout}");
    let subscriptions = harness
        .client
        .list_subscriptions(true)
        .await
        .expect("listed");
    let id = subscriptions
        .iter()
        .find(|record| record.url == receiver)
        .expect("the observer's subscription")
        .id
        .clone();
    assert_eq!(
        changes_in(&cluster, &store_url).await,
        [("dana".to_owned(), id.clone(), "create".to_owned())]
    );

    // Paused on the platform; setup resumes it, and says so in the log.
    harness
        .client
        .update_subscription(
            &id,
            &earshot_core::api::types::agents::SubscriptionPatch {
                enabled: Some(false),
                ..Default::default()
            },
        )
        .await
        .expect("paused");
    let output = run(&mut setup()).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        changes_in(&cluster, &store_url).await,
        [
            ("dana".to_owned(), id.clone(), "resume".to_owned()),
            ("dana".to_owned(), id, "create".to_owned()),
        ]
    );
    // Nothing went to a store file in the state directory.
    assert_eq!(store_files(home.path()), Vec::<std::path::PathBuf>::new());
}
