//! `earshot observer setup`, the real binary against the emulator: exactly
//! one subscription to all five events however often it runs, its secret
//! in a 0600 file (whatever the umask), and the `earshot listen` command it
//! prints, run as printed, receiving what the emulator delivers; a URL the
//! platform would refuse exits 2 with the local-trial hint; an existing
//! subscription missing events or paused is fixed in place; several at the
//! URL, or one scoped to an agent, are refused with nothing changed.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use earshot_core::api::types::agents::{EventKind, Subscription, SubscriptionPatch};
use serde_json::{Value, json};

use crate::common::cli::{isolate, isolated, post_signed, python_verifies, run, text};
use crate::common::{self, API_KEY, Harness, Options, Receiver, SECRET, eventually};

const EXE: &str = env!("CARGO_BIN_EXE_earshot");

/// A port free now, for a URL the printed `listen` will bind.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// `earshot observer setup URL ARGS…` against `harness`, isolated in `home`.
fn setup(harness: &Harness, home: &Path, url: &str, args: &[&str]) -> Command {
    let mut command = isolated(home);
    command.args(["observer", "setup", url]).args(args).args([
        "--url",
        &harness.base,
        "--api-key",
        API_KEY,
    ]);
    command
}

/// [`setup`] run by a shell with umask 000, as a careless login might have.
fn setup_with_open_umask(harness: &Harness, home: &Path, url: &str, args: &[&str]) -> Command {
    let mut command = Command::new("sh");
    isolate(&mut command, home)
        .args(["-c", r#"umask 000 && exec "$0" "$@""#, EXE])
        .args(["observer", "setup", url])
        .args(args)
        .args(["--url", &harness.base, "--api-key", API_KEY]);
    command
}

fn ok(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// Every subscription whose URL is `url`, paused ones included.
async fn at(harness: &Harness, url: &str) -> Vec<Subscription> {
    harness
        .client
        .list_subscriptions(true)
        .await
        .expect("subscriptions listed")
        .into_iter()
        .filter(|record| record.url == url)
        .collect()
}

fn all_five() -> Vec<String> {
    EventKind::ALL.map(|kind| kind.as_str().to_owned()).to_vec()
}

fn sorted(mut events: Vec<String>) -> Vec<String> {
    events.sort();
    events
}

/// The permission bits, from std and from the `stat` command.
fn modes(path: &Path) -> (u32, String) {
    let from_std = std::fs::metadata(path)
        .expect("the file")
        .permissions()
        .mode()
        & 0o7777;
    let stat = std::process::Command::new("stat")
        .args(["-c", "%a"])
        .arg(path)
        .output()
        .expect("stat runs");
    assert!(stat.status.success(), "stat: {}", text(&stat.stderr));
    (from_std, text(&stat.stdout).trim().to_owned())
}

/// The secret in `path`, without its newline.
fn secret_in(path: &Path) -> String {
    std::fs::read_to_string(path)
        .expect("the secret file")
        .trim_end_matches('\n')
        .to_owned()
}

/// The one line of `stdout` that is the `earshot listen` command.
fn listen_line(stdout: &str) -> String {
    let lines: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("earshot listen "))
        .collect();
    assert_eq!(lines.len(), 1, "one listen command in:\n{stdout}");
    lines[0].to_owned()
}

/// A child process stopped when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `line` run by a shell as an operator would paste it, `earshot` found on
/// PATH, isolated in `home`; the child and the URL it prints first.
fn run_as_printed(line: &str, home: &Path) -> (Running, String) {
    let bin = Path::new(EXE).parent().expect("the binary's directory");
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut dirs = vec![bin.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).expect("a PATH")
        }
        None => bin.as_os_str().to_owned(),
    };
    let mut command = Command::new("sh");
    isolate(&mut command, home);
    let mut child = command
        .arg("-c")
        .arg(format!("exec {line}"))
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh starts");
    let url = common::cli::listening_url(&mut child);
    (Running(child), url)
}

/// Rows of the store at `db` whose `column` is `value`.
fn stored(db: &Path, column: &str, value: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).expect("the store opens");
    conn.query_row(
        &format!("SELECT count(*) FROM events WHERE {column} = ?1"),
        [value],
        |row| row.get(0),
    )
    .unwrap_or(0)
}

/// The default secret file and store of a run isolated in `home`.
fn state_file(home: &Path, name: &str) -> PathBuf {
    home.join("state").join("earshot").join(name)
}

#[tokio::test]
async fn setup_makes_one_subscription_a_private_secret_file_and_a_listen_command_that_works() {
    let harness = common::start_at(0.1).await;
    let home = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/observer", free_port());
    let trial = ["--allow-private-urls"];

    let first = run(&mut setup_with_open_umask(
        &harness,
        home.path(),
        &url,
        &trial,
    ))
    .await;
    let stdout = ok(&first);
    let subscriptions = at(&harness, &url).await;
    assert_eq!(subscriptions.len(), 1, "{subscriptions:?}");
    let id = subscriptions[0].id.clone();
    assert_eq!(sorted(subscriptions[0].events.clone()), sorted(all_five()));
    assert!(subscriptions[0].enabled);
    assert!(subscriptions[0].agent_id.is_none());
    assert!(
        stdout.contains(&format!("created subscription {id}")) && stdout.contains("written to"),
        "{stdout}"
    );

    let secret_file = state_file(home.path(), "observer.secret");
    assert_eq!(modes(&secret_file), (0o600, "600".to_owned()), "umask 000");
    let secret = secret_in(&secret_file);
    assert!(
        earshot_core::api::validate::secret(&secret).is_ok(),
        "a secret the platform takes"
    );
    for shown in [&stdout, &text(&first.stderr)] {
        assert!(!shown.contains(&secret), "the secret shown: {shown}");
    }
    let before = std::fs::metadata(&secret_file).unwrap();

    // Again: found, not created; the file untouched.
    let second = run(&mut setup(&harness, home.path(), &url, &trial)).await;
    let again = ok(&second);
    assert!(
        again.contains(&format!("found subscription {id}")),
        "{again}"
    );
    assert!(again.contains("nothing to change"), "{again}");
    let subscriptions = at(&harness, &url).await;
    assert_eq!(subscriptions.len(), 1, "{subscriptions:?}");
    assert_eq!(subscriptions[0].id, id);
    assert_eq!(subscriptions[0].secret_version, 1, "the secret kept");
    let after = std::fs::metadata(&secret_file).unwrap();
    assert_eq!(
        (after.ino(), after.mtime(), after.mtime_nsec()),
        (before.ino(), before.mtime(), before.mtime_nsec())
    );
    assert_eq!(secret_in(&secret_file), secret);

    // The JSON summary, without the secret.
    let json_run = run(&mut setup(
        &harness,
        home.path(),
        &url,
        &["--allow-private-urls", "--json"],
    ))
    .await;
    let json_out = ok(&json_run);
    assert!(!json_out.contains(&secret), "{json_out}");
    let summary: Value = serde_json::from_str(&json_out).expect("JSON");
    assert_eq!(summary["subscription_id"], json!(id));
    assert_eq!(summary["outcome"], json!("found"));
    assert_eq!(summary["created"], json!(false));
    assert_eq!(summary["secret"], json!("kept"));
    assert_eq!(summary["secret_file"], json!(secret_file.to_str().unwrap()));
    assert_eq!(summary["listen_command"], json!(listen_line(&again)));
    assert_eq!(at(&harness, &url).await.len(), 1);

    // The printed command, run as printed: it binds the URL's port, takes
    // a signed event, and receives what the emulator delivers.
    let command = listen_line(&again);
    assert!(
        command.ends_with(" --store"),
        "the default store: {command}"
    );
    let (_listen, listening) = run_as_printed(&command, home.path());
    assert_eq!(format!("{listening}/observer"), url);
    let body = json!({
        "event_id": "evt_observer_setup_1",
        "event": "session.started",
        "timestamp": "2026-11-25T01:00:00Z",
        "session": { "session_id": "ses_observer_setup" }
    })
    .to_string();
    let (status, answer) = post_signed(&url, &secret, body.as_bytes()).await;
    assert_eq!(status, 200, "{answer}");
    let (status, _) = post_signed(
        &url,
        "whsec_not_the_observers_secret_0123456789",
        body.as_bytes(),
    )
    .await;
    assert_eq!(status, 401, "a wrong secret is refused");

    let session = harness.start_session(None).await;
    eventually(
        Duration::from_secs(30),
        "a delivered session.started",
        || async {
            let deliveries = harness.client.list_deliveries(&session).await.ok()?;
            deliveries.into_iter().find(|delivery| {
                delivery.subscription_id == id && delivery.status.as_str() == "delivered"
            })
        },
    )
    .await;
    // `--store` alone: the documented default, earshot.db in the state dir.
    let db = state_file(home.path(), "earshot.db");
    assert_eq!(stored(&db, "event_id", "evt_observer_setup_1"), 1);
    assert_eq!(
        stored(&db, "session_id", &session),
        1,
        "the emulator's delivery"
    );
}

#[tokio::test]
async fn a_url_the_platform_would_refuse_exits_2_with_the_local_trial_hint() {
    let strict = common::start_with(Options {
        allow_private_urls: false,
        ..Options::default()
    })
    .await;
    let home = tempfile::tempdir().unwrap();
    let secret_file = state_file(home.path(), "observer.secret");
    for url in ["http://127.0.0.1:9/observer", "https://10.1.2.3/observer"] {
        let output = run(&mut setup(&strict, home.path(), url, &[])).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{url}: {stderr}");
        assert!(
            stderr.contains("earshot emulator --allow-private-urls"),
            "{stderr}"
        );
        assert!(
            stderr.contains("http://127.0.0.1 URLs then work"),
            "{stderr}"
        );

        let mut create = isolated(home.path());
        create
            .args([
                "subs",
                "create",
                url,
                "--event",
                "call.ended",
                "--generate-secret",
            ])
            .args(["--url", &strict.base, "--api-key", API_KEY]);
        let output = run(&mut create).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "subs create {url}: {stderr}");
        assert!(
            stderr.contains("earshot emulator --allow-private-urls"),
            "{stderr}"
        );
    }
    // Let through here, refused by a strict emulator: said, and no file.
    let url = "http://127.0.0.1:9/observer";
    let output = run(&mut setup(
        &strict,
        home.path(),
        url,
        &["--allow-private-urls"],
    ))
    .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the server refused the URL"), "{stderr}");
    assert!(
        stderr.contains("earshot emulator --allow-private-urls"),
        "{stderr}"
    );
    assert!(!secret_file.exists(), "no secret kept for nothing");
    let left: Vec<_> = std::fs::read_dir(secret_file.parent().unwrap())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|entry| entry.file_name())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|name| name.to_string_lossy().contains("secret")),
        "no staged copy left: {left:?}"
    );
    assert!(
        strict
            .client
            .list_subscriptions(true)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_paused_subscription_missing_events_is_fixed_in_place_and_force_gives_it_a_new_secret() {
    let harness = common::start_at(0.1).await;
    let receiver = Receiver::healthy().await;
    let url = receiver.url();
    let old = harness
        .subscribe_secret(&url, &[EventKind::CallEnded], SECRET)
        .await;
    let pause = SubscriptionPatch {
        enabled: Some(false),
        ..SubscriptionPatch::default()
    };
    harness
        .client
        .update_subscription(&old.id, &pause)
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let secret_file = home.path().join("observer.secret");
    std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(&secret_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let file_arg = secret_file.to_str().unwrap();
    let trial = ["--allow-private-urls", "--secret-file", file_arg];

    let output = run(&mut setup(&harness, home.path(), &url, &trial)).await;
    let stdout = ok(&output);
    assert!(
        stdout.contains(&format!("found subscription {}", old.id)),
        "{stdout}"
    );
    assert!(
        stdout.contains("changed events: call.ended → all five"),
        "{stdout}"
    );
    assert!(
        stdout.contains("changed state: paused → enabled"),
        "{stdout}"
    );
    let fixed = at(&harness, &url).await;
    assert_eq!(fixed.len(), 1, "{fixed:?}");
    assert_eq!(fixed[0].id, old.id);
    assert_eq!(sorted(fixed[0].events.clone()), sorted(all_five()));
    assert!(fixed[0].enabled);
    assert_eq!(fixed[0].secret_version, 1, "the secret kept");
    assert_eq!(secret_in(&secret_file), SECRET);
    assert_eq!(
        modes(&secret_file).0,
        0o600,
        "narrowed: it holds the secret"
    );
    assert!(
        text(&output.stderr).contains("tightened"),
        "{}",
        text(&output.stderr)
    );

    // Its secret is nowhere here: refused, nothing changed.
    let missing = home.path().join("elsewhere.secret");
    let missing_arg = missing.to_str().unwrap();
    let output = run(&mut setup(
        &harness,
        home.path(),
        &url,
        &["--allow-private-urls", "--secret-file", missing_arg],
    ))
    .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert!(!missing.exists());
    assert_eq!(at(&harness, &url).await[0].secret_version, 1);

    // --force: a new secret, in the file and on the platform.
    let output = run(&mut setup(
        &harness,
        home.path(),
        &url,
        &[
            "--allow-private-urls",
            "--secret-file",
            missing_arg,
            "--force",
        ],
    ))
    .await;
    let stdout = ok(&output);
    assert!(stdout.contains("changed secret: v1 → v2"), "{stdout}");
    assert!(stdout.contains("Restart listen with it now"), "{stdout}");
    let rotated = at(&harness, &url).await;
    assert_eq!((rotated.len(), rotated[0].secret_version), (1, 2));
    assert_eq!(modes(&missing), (0o600, "600".to_owned()));
    let new_secret = secret_in(&missing);
    assert_ne!(new_secret, SECRET);
    assert!(!stdout.contains(&new_secret), "{stdout}");

    // What the emulator now signs, checked with Python's hmac: the new
    // secret, not the old one.
    let session = harness.start_session(None).await;
    let delivery = eventually(Duration::from_secs(30), "a delivery", || async {
        receiver
            .captured()
            .into_iter()
            .find(|captured| captured.json()["session"]["session_id"] == json!(session))
    })
    .await;
    let header = delivery.header("x-svc-signature");
    assert_eq!(python_verifies(&missing, header, &delivery.body), "ok");
    assert_eq!(python_verifies(&secret_file, header, &delivery.body), "bad");
}

#[tokio::test]
async fn several_subscriptions_or_an_agent_scoped_one_at_the_url_are_listed_and_left_alone() {
    let harness = common::start().await;
    let home = tempfile::tempdir().unwrap();
    let secret_file = home.path().join("observer.secret");
    std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
    let file_arg = secret_file.to_str().unwrap();
    let trial = ["--allow-private-urls", "--secret-file", file_arg];

    let url = format!("http://127.0.0.1:{}/twice", free_port());
    let one = harness.subscribe(&url, &[EventKind::CallEnded]).await;
    let two = harness.subscribe(&url, &EventKind::ALL).await;
    let output = run(&mut setup(&harness, home.path(), &url, &trial)).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("2 subscriptions send to"), "{stderr}");
    for record in [&one, &two] {
        assert!(stderr.contains(&record.id[..8]), "{stderr}");
    }
    let left = at(&harness, &url).await;
    assert_eq!(left.len(), 2);
    assert!(
        left.contains(&one) && left.contains(&two),
        "unchanged: {left:?}"
    );

    let url = format!("http://127.0.0.1:{}/one-agent", free_port());
    let scoped = harness
        .subscribe_with(&url, &EventKind::ALL, Some(common::OTHER_AGENT))
        .await;
    let output = run(&mut setup(&harness, home.path(), &url, &trial)).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(common::OTHER_AGENT), "{stderr}");
    assert!(stderr.contains("subs delete"), "{stderr}");
    assert_eq!(at(&harness, &url).await, vec![scoped]);
}

/// One subscription however the URL is spelled: setup run again with the
/// spellings the hardening run created a second one with finds the first;
/// a URL with a fragment is refused (exit 2) before anything is asked.
#[tokio::test]
async fn five_spellings_of_one_url_give_one_subscription() {
    let harness = common::start_at(0.1).await;
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/obs");
    let trial = ["--allow-private-urls"];
    ok(&run(&mut setup(&harness, home.path(), &url, &trial)).await);
    let id = at(&harness, &url).await[0].id.clone();
    for spelling in [
        format!("http://127.0.0.1:{port}/obs/"),
        format!("http://127.0.0.1:{port}/obs?"),
        format!("http://127.0.0.1:{port}//obs"),
        format!("http://127.0.0.1:{port}/%6Fbs"),
        format!("http://127.0.0.1.:{port}/obs"),
    ] {
        let again = ok(&run(&mut setup(&harness, home.path(), &spelling, &trial)).await);
        assert!(
            again.contains(&format!("found subscription {id}")),
            "{spelling}: {again}"
        );
    }
    let fragment = run(&mut setup(
        &harness,
        home.path(),
        &format!("{url}#"),
        &trial,
    ))
    .await;
    let stderr = text(&fragment.stderr);
    assert_eq!(fragment.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("fragment"), "{stderr}");
    let all = harness.client.list_subscriptions(true).await.unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
}
