//! `earshot listen --tls-cert --tls-key`, checked with an https client
//! independent of earshot (Python's `ssl`, tests/it/data/https_client.py)
//! that verifies the chain against the test's own CA, made with rcgen:
//!
//! - through the real binary: a signed delivery over https is answered
//!   200 and stored; SIGHUP gives new connections the new certificate
//!   (the old CA no longer verifies, the new one does) while `listen`
//!   runs on, and a reload from a bad file keeps the certificate in use;
//!   plain HTTP to the port is not served and the server serves on; one
//!   flag alone or a bad file is exit 2 naming the file;
//! - in process: a client stalled in its handshake holds up no one,
//!   holds a connection slot and is closed for a new client; the head and
//!   idle timers apply over TLS; a reload keeps open connections.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine;
use earshot_core::http_server::ServerLimits;
use earshot_core::receiver::listen::{self, ListenConfig, Listener, Requests};
use earshot_core::redact::SecretString;
use earshot_core::tls::ServerTls;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::common::SECRET;
use crate::common::cli::{earshot, text};

const CLIENT: &str = include_str!("data/https_client.py");

// ---------------------------------------------------------------------------
// Certificates
// ---------------------------------------------------------------------------

/// A certificate authority of the test's own.
pub(crate) struct TestCa {
    name: String,
    issuer: Issuer<'static, KeyPair>,
    /// Its certificate, PEM: what a client trusts.
    pub(crate) pem: String,
}

impl TestCa {
    pub(crate) fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            name: name.to_owned(),
            issuer: Issuer::new(params, key),
            pem: pem("CERTIFICATE", cert.der()),
        }
    }

    /// A server certificate for 127.0.0.1 and localhost signed by this CA,
    /// and its private key: (chain PEM, key PEM).
    pub(crate) fn server_cert(&self) -> (String, String) {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "earshot test observer");
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            pem("CERTIFICATE", cert.der()),
            pem("PRIVATE KEY", &key.serialize_der()),
        )
    }
}

/// `der` as a PEM block labelled `label`.
fn pem(label: &str, der: &[u8]) -> String {
    let base64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in base64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The files a test serves from and trusts: one CA's file, and a server
/// certificate and key it signed, in `dir`.
struct Files {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl Files {
    /// Writes `ca`'s certificate as `ca-NAME.pem` and a server certificate
    /// it signed as `cert.pem` / `key.pem` (replacing those).
    fn write(dir: &Path, ca: &TestCa) -> Files {
        let files = Files {
            ca: dir.join(format!("ca-{}.pem", ca.name)),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        let (cert, key) = ca.server_cert();
        std::fs::write(&files.ca, &ca.pem).unwrap();
        std::fs::write(&files.cert, cert).unwrap();
        std::fs::write(&files.key, key).unwrap();
        files
    }
}

// ---------------------------------------------------------------------------
// The independent client
// ---------------------------------------------------------------------------

/// `python3 https_client.py ARGS` ready to spawn.
fn python(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("python3");
    command
        .arg("-c")
        .arg(CLIENT)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

fn no_python(error: std::io::Error) -> ! {
    panic!(
        "cannot run python3 ({error}): these tests check https with Python's ssl, a client \
         independent of earshot; install python3 (CI has it)"
    )
}

/// Runs the client to the end (within 60 s): its stdout, trimmed.
async fn client(args: &[&str]) -> String {
    let mut command = python(args);
    command.stdin(Stdio::null());
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the https client ends within 60 s")
        .unwrap_or_else(|error| no_python(error));
    assert!(
        output.status.success(),
        "the https client failed: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout).trim().to_owned()
}

/// A voice-agent event with id `event_id`, and its signature header made
/// now with [`SECRET`].
fn signed_event(event_id: &str) -> (String, String) {
    let body = serde_json::json!({
        "event_id": event_id,
        "event": "session.started",
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "session": { "session_id": format!("ses_{event_id}") },
    })
    .to_string();
    let header = earshot_core::signature::sign(
        SECRET.as_bytes(),
        chrono::Utc::now().timestamp(),
        body.as_bytes(),
    );
    (header, body)
}

/// POSTs a signed event to 127.0.0.1:`port` over https, trusting `ca`:
/// the client's line (`STATUS ISSUER BODY`, or `unverified …`).
async fn post_event(port: u16, ca: &Path, event_id: &str) -> String {
    let (header, body) = signed_event(event_id);
    let port = port.to_string();
    let ca = ca.to_str().unwrap();
    client(&["post", "127.0.0.1", &port, ca, &header, &body]).await
}

// ---------------------------------------------------------------------------
// The real binary
// ---------------------------------------------------------------------------

/// `earshot listen --store DB --tls-cert --tls-key` with the secret from
/// the environment: its port (from the first line, which must say
/// https), its stderr line by line; killed on drop.
struct TlsListen {
    child: Child,
    port: u16,
    stderr: mpsc::Receiver<String>,
}

impl TlsListen {
    fn start(db: &Path, files: &Files) -> TlsListen {
        let mut child = earshot()
            .env("EARSHOT_WEBHOOK_SECRET", SECRET)
            .args(["listen", "--store"])
            .arg(db)
            .arg("--tls-cert")
            .arg(&files.cert)
            .arg("--tls-key")
            .arg(&files.key)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("earshot listen starts");
        let url = crate::common::cli::listening_url(&mut child);
        let addr: SocketAddr = url
            .strip_prefix("https://")
            .unwrap_or_else(|| panic!("an https:// URL, not {url:?}"))
            .parse()
            .expect("HOST:PORT");
        let stderr = crate::common::cli::stderr_lines(&mut child);
        TlsListen {
            child,
            port: addr.port(),
            stderr,
        }
    }

    /// Sends SIGHUP and returns the stderr line that answers it (10 s at
    /// most), the lines before it included.
    fn hang_up(&mut self) -> String {
        let pid = self.child.id().to_string();
        let status = std::process::Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -HUP {pid}");
        let mut said = String::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(10)) {
            said.push_str(&line);
            said.push('\n');
            if line.contains("SIGHUP") {
                return said;
            }
        }
        panic!("no word on stderr within 10 s of SIGHUP: {said}");
    }

    /// Sends SIGTERM: the exit code (within 15 s).
    fn terminate(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {pid}");
        for _ in 0..150 {
            if let Some(status) = self.child.try_wait().expect("the child's status") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("listen did not stop within 15 s of SIGTERM");
    }

    fn still_running(&mut self) -> bool {
        self.child.try_wait().expect("the child's status").is_none()
    }
}

impl Drop for TlsListen {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Rows of `events` with `event_id`.
fn stored(db: &Path, event_id: &str) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM events WHERE event_id = ?1",
            [event_id],
            |row| row.get(0),
        )
        .unwrap()
}

#[tokio::test]
async fn a_signed_delivery_over_https_is_answered_200_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::write(dir.path(), &TestCa::new("ca-one"));
    let db = dir.path().join("earshot.db");
    let listen = TlsListen::start(&db, &files);

    let event_id = "00000000-0000-4000-8000-00000000f001";
    let line = post_event(listen.port, &files.ca, event_id).await;
    assert!(line.starts_with("200 ca-one "), "{line}");
    assert!(line.contains(r#""ok":true"#), "{line}");
    assert_eq!(stored(&db, event_id), 1, "the event is in the store");
    drop(listen);
}

#[tokio::test]
async fn sighup_gives_new_connections_the_new_certificate_and_a_bad_file_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let old = Files::write(dir.path(), &TestCa::new("ca-one"));
    let db = dir.path().join("earshot.db");
    let mut listen = TlsListen::start(&db, &old);
    let line = post_event(listen.port, &old.ca, "00000000-0000-4000-8000-00000000f101").await;
    assert!(line.starts_with("200 ca-one "), "{line}");

    // certbot's deploy hook: new files in place, then SIGHUP.
    let new = Files::write(dir.path(), &TestCa::new("ca-two"));
    let said = listen.hang_up();
    assert!(said.contains("reloaded the TLS certificate"), "{said}");
    let line = post_event(listen.port, &old.ca, "00000000-0000-4000-8000-00000000f102").await;
    assert!(
        line.starts_with("unverified"),
        "the old CA must fail: {line}"
    );
    let event_id = "00000000-0000-4000-8000-00000000f103";
    let line = post_event(listen.port, &new.ca, event_id).await;
    assert!(line.starts_with("200 ca-two "), "{line}");
    assert_eq!(stored(&db, event_id), 1);
    assert!(
        listen.still_running(),
        "SIGHUP must not stop listen with TLS"
    );

    // A key file broken mid-renewal: the certificate in use stays.
    let marker = "MIGHTBEKEYBYTES";
    std::fs::write(&new.key, format!("-----BEGIN PRIVATE KEY-----\n{marker}\n")).unwrap();
    let said = listen.hang_up();
    assert!(said.contains("kept the TLS certificate in use"), "{said}");
    assert!(
        said.contains(new.key.to_str().unwrap()),
        "names the file: {said}"
    );
    assert!(!said.contains(marker), "never quotes the key file: {said}");
    assert!(listen.still_running());
    let line = post_event(listen.port, &new.ca, "00000000-0000-4000-8000-00000000f104").await;
    assert!(line.starts_with("200 ca-two "), "{line}");
    // SIGTERM still stops it, as without TLS.
    assert_eq!(listen.terminate(), Some(143));
}

#[tokio::test]
async fn plain_http_to_the_tls_port_is_not_served_and_the_server_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::write(dir.path(), &TestCa::new("ca-one"));
    let db = dir.path().join("earshot.db");
    let mut listen = TlsListen::start(&db, &files);

    let (header, body) = signed_event("00000000-0000-4000-8000-00000000f201");
    let port = listen.port;
    let answer = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let request = format!(
            "POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             X-SVC-Signature: {header}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        // The server closes (a reset is a close too); a timeout would fail.
        match stream.read_to_end(&mut answer) {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(error) => panic!("the server did not close the connection: {error}"),
        }
        answer
    })
    .await
    .unwrap();
    assert!(
        !String::from_utf8_lossy(&answer).contains("HTTP/1."),
        "plain HTTP was answered: {:?}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(
        stored(&db, "00000000-0000-4000-8000-00000000f201"),
        0,
        "nothing stored from the plain request"
    );
    assert!(listen.still_running());
    let event_id = "00000000-0000-4000-8000-00000000f202";
    let line = post_event(listen.port, &files.ca, event_id).await;
    assert!(line.starts_with("200 ca-one "), "{line}");
    assert_eq!(stored(&db, event_id), 1);
}

#[tokio::test]
async fn one_tls_flag_alone_or_a_bad_file_is_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::write(dir.path(), &TestCa::new("ca-one"));
    let other = TestCa::new("ca-two").server_cert().1;
    let other_key = dir.path().join("other-key.pem");
    std::fs::write(&other_key, other).unwrap();
    let marker = "MIGHTBEKEYBYTES";
    let broken_key = dir.path().join("broken-key.pem");
    std::fs::write(&broken_key, format!("{marker}\n")).unwrap();
    let missing = dir.path().join("missing.pem");
    let path = |path: &Path| path.to_str().unwrap().to_owned();
    let cases: [(Vec<String>, &str); 5] = [
        (vec!["--tls-cert".into(), path(&files.cert)], "--tls-key"),
        (vec!["--tls-key".into(), path(&files.key)], "--tls-cert"),
        (
            vec![
                "--tls-cert".into(),
                path(&files.cert),
                "--tls-key".into(),
                path(&missing),
            ],
            "missing.pem",
        ),
        (
            vec![
                "--tls-cert".into(),
                path(&files.cert),
                "--tls-key".into(),
                path(&broken_key),
            ],
            "broken-key.pem",
        ),
        (
            vec![
                "--tls-cert".into(),
                path(&files.cert),
                "--tls-key".into(),
                path(&other_key),
            ],
            "is not the key of the certificate",
        ),
    ];
    for (args, expected) in cases {
        let mut command = tokio::process::Command::from(earshot());
        command
            .env("EARSHOT_WEBHOOK_SECRET", SECRET)
            .arg("listen")
            .args(&args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = crate::common::cli::finish(&mut command).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains(marker), "never quotes the key: {stderr}");
        assert!(
            !text(&out.stdout).contains("listening on"),
            "{args:?} must not start"
        );
    }
}

// ---------------------------------------------------------------------------
// In process
// ---------------------------------------------------------------------------

/// A receiver for deliveries signed with [`SECRET`], over TLS with
/// `files`, within `limits`.
async fn tls_listener(files: &Files, limits: ServerLimits) -> (Listener, Requests, ServerTls) {
    let tls = ServerTls::load(&files.cert, &files.key).expect("the test certificate loads");
    let config = ListenConfig {
        tls: Some(tls.clone()),
        ..ListenConfig::with_secrets(SecretString::new(SECRET), None)
    };
    let (listener, requests) =
        listen::start_with_limits("127.0.0.1:0".parse().unwrap(), config, limits)
            .await
            .expect("the listener starts");
    assert!(
        listener.url().starts_with("https://127.0.0.1:"),
        "{}",
        listener.url()
    );
    (listener, requests, tls)
}

/// Whether the server closes `stream` within 30 s (reading whatever it
/// sends first, such as a TLS alert).
async fn closed_by_server(mut stream: tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut sink = Vec::new();
    matches!(
        tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut sink)).await,
        Ok(Ok(_) | Err(_))
    )
}

#[tokio::test]
async fn a_client_stalled_in_its_handshake_holds_up_no_one_and_makes_room_for_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::write(dir.path(), &TestCa::new("ca-one"));
    // One connection at a time, and a head timer that never fires here:
    // were the handshake made by the accept loop, the next client would
    // wait for the stalled one forever.
    let limits = ServerLimits {
        max_connections: 1,
        header_read: Duration::from_secs(600),
        ..ServerLimits::webhooks()
    };
    let (listener, _requests, _tls) = tls_listener(&files, limits).await;
    let mut stalled = tokio::net::TcpStream::connect(listener.addr).await.unwrap();
    // The start of a ClientHello record, and nothing more.
    stalled
        .write_all(&[0x16, 0x03, 0x01, 0x01, 0x00])
        .await
        .unwrap();

    let line = post_event(
        listener.addr.port(),
        &files.ca,
        "00000000-0000-4000-8000-00000000f301",
    )
    .await;
    assert!(line.starts_with("200 ca-one "), "{line}");
    // The stalled handshake held the one slot: it was closed for the new
    // client.
    assert!(
        closed_by_server(stalled).await,
        "the stalled connection stays open"
    );
    listener.stop().await;
}

#[tokio::test]
async fn the_head_and_idle_timers_apply_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::write(dir.path(), &TestCa::new("ca-one"));
    let limits = ServerLimits {
        header_read: Duration::from_secs(3),
        idle: Duration::from_secs(1),
        ..ServerLimits::webhooks()
    };
    let (listener, _requests, _tls) = tls_listener(&files, limits).await;
    let port = listener.addr.port().to_string();
    let ca = files.ca.to_str().unwrap();

    // Mid-handshake: closed by the head timer, which starts at accept.
    let mut stalled = tokio::net::TcpStream::connect(listener.addr).await.unwrap();
    stalled
        .write_all(&[0x16, 0x03, 0x01, 0x01, 0x00])
        .await
        .unwrap();
    assert!(closed_by_server(stalled).await, "a stalled handshake");
    // Handshake done, no request: closed too.
    assert_eq!(
        client(&["silent", "127.0.0.1", &port, ca]).await,
        "handshake\nclosed"
    );
    // An answer, then nothing: closed after `idle`.
    assert_eq!(
        client(&["idle", "127.0.0.1", &port, ca]).await,
        "405\nclosed"
    );
    listener.stop().await;
}

#[tokio::test]
async fn a_reload_keeps_open_connections_and_gives_new_ones_the_new_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let old = Files::write(dir.path(), &TestCa::new("ca-one"));
    let (listener, _requests, tls) = tls_listener(&old, ServerLimits::webhooks()).await;
    let port = listener.addr.port().to_string();

    let (header1, body1) = signed_event("00000000-0000-4000-8000-00000000f401");
    let (header2, body2) = signed_event("00000000-0000-4000-8000-00000000f402");
    let mut open = python(&[
        "post-twice",
        "127.0.0.1",
        &port,
        old.ca.to_str().unwrap(),
        &header1,
        &body1,
        &header2,
        &body2,
    ])
    .spawn()
    .unwrap_or_else(|error| no_python(error));
    let mut stdin = open.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(open.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("the first answer within 60 s")
        .unwrap();
    assert_eq!(first.as_deref(), Some("200 ca-one"));

    let new = Files::write(dir.path(), &TestCa::new("ca-two"));
    tls.reload().expect("the new files load");
    // A new connection gets the new certificate...
    let line = post_event(
        listener.addr.port(),
        &new.ca,
        "00000000-0000-4000-8000-00000000f403",
    )
    .await;
    assert!(line.starts_with("200 ca-two "), "{line}");
    // ...while the one open since before goes on with the old.
    stdin.write_all(b"go\n").await.unwrap();
    drop(stdin);
    let second = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("the second answer within 60 s")
        .unwrap();
    assert_eq!(second.as_deref(), Some("200 ca-one same"));
    let status = open.wait().await.unwrap();
    assert!(status.success(), "the https client failed");

    // A reload from a bad file changes nothing.
    std::fs::write(&new.cert, "not a certificate\n").unwrap();
    let error = tls.reload().expect_err("a bad certificate file");
    assert!(error.to_string().contains("cert.pem"), "{error}");
    let line = post_event(
        listener.addr.port(),
        &new.ca,
        "00000000-0000-4000-8000-00000000f404",
    )
    .await;
    assert!(line.starts_with("200 ca-two "), "{line}");
    listener.stop().await;
}
