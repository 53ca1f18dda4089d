//! Hostile clients against the release binary: what `earshot listen`,
//! `earshot emulator` and `earshot jobs watch --listen` hold and whether
//! they keep answering. Each scenario starts a fresh child, attacks it
//! over 127.0.0.1, and reports the child's peak resident memory (`VmHWM`),
//! its resident memory once the attack is over, the statuses it answered
//! and, where it matters, how long a normal request took meanwhile.
//!
//! - `held [CONNS] [HOLD_SECS]`: CONNS (300) connections each send all but
//!   the last byte of a 10 MiB body to `listen` and hold it (HOLD_SECS, 15).
//! - `unsigned [CONNS]`: CONNS (64) unsigned 10 MiB `[0,0,…]` bodies at once
//!   to `listen`.
//! - `watch [REQUESTS]`: REQUESTS (120) unauthenticated 10 MiB POSTs, eight
//!   at a time, to `jobs watch --listen` whose stdout is a full pipe.
//! - `trickle listen|emulator [CONNS] [SECS] [EVERY]`: CONNS (600)
//!   connections each send one body byte every EVERY s (20) for SECS (70);
//!   a normal request is sent every 5 s meanwhile and its time reported.
//!
//! Run: `cargo build --release && cargo bench --bench listen_hostile -- held`
//! (`EARSHOT_BINARY=PATH` runs another build, e.g. one from before a fix).

use std::io::Write;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod support;

use earshot_testkit::zeros_array;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

type Error = Box<dyn std::error::Error + Send + Sync>;

const SECRET: &str = "whsec_hostile_0123456789abcdefghijklmnop";
const KEY: &str = "hostile_key_0123456789";
const MIB: usize = 1024 * 1024;
const BODY: usize = 10 * MIB - 1;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = support::args().collect();
    let number = |index: usize, default: usize| -> Result<usize, Error> {
        Ok(args.get(index).map_or(Ok(default), |arg| arg.parse())?)
    };
    match args.first().map(String::as_str) {
        Some("held") => held(number(1, 300)?, number(2, 15)? as u64).await,
        Some("unsigned") => unsigned(number(1, 64)?).await,
        Some("watch") => watch(number(1, 120)?).await,
        Some("trickle") => {
            let target = args.get(1).map_or("listen", String::as_str).to_owned();
            let (conns, secs, every) = (number(2, 600)?, number(3, 70)?, number(4, 20)?);
            trickle(&target, conns, secs as u64, every as u64).await
        }
        _ => Err("usage: listen_hostile held|unsigned|watch|trickle [...]".into()),
    }
}

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

async fn held(conns: usize, hold: u64) -> Result<(), Error> {
    let (child, url) = start(&["listen", "--secret", SECRET]).await?;
    let pid = child.id().ok_or("no pid")?;
    let sampler = Sampler::start(pid);
    let addr = url.trim_start_matches("http://").to_owned();
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move { hold_body(&addr, hold).await }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let probe = timed_signed_post(&url).await;
    let mut statuses = Statuses::default();
    for task in tasks {
        statuses.add(task.await?);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    report("held", pid, &sampler, &statuses);
    println!("  a signed delivery during the attack: {probe}");
    Ok(())
}

async fn unsigned(conns: usize) -> Result<(), Error> {
    let (child, url) = start(&["listen", "--secret", SECRET]).await?;
    let pid = child.id().ok_or("no pid")?;
    let sampler = Sampler::start(pid);
    let idle_kib = support::vm_rss_kb(&pid.to_string()).unwrap_or(0);
    let body = Arc::new(zeros_array(BODY));
    let http = client();
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (http, url, body) = (http.clone(), url.clone(), body.clone());
        tasks.push(tokio::spawn(
            async move { post_hook(&http, &url, &body).await },
        ));
    }
    let mut statuses = Statuses::default();
    for task in tasks {
        statuses.add(task.await?);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!("  idle before: {} MB", idle_kib / 1024);
    report("unsigned", pid, &sampler, &statuses);
    Ok(())
}

async fn watch(requests: usize) -> Result<(), Error> {
    let (emulator, client) = support::emulator_with_client(KEY).await?;
    let dir = std::env::temp_dir().join(format!("earshot-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let audio = dir.join("long.wav");
    std::fs::write(&audio, support::silent_wav(3600))?;
    let upload = client.upload_file(&audio, |_| {}).await?;
    let job = client
        .create_transcript(&earshot_core::api::types::prerecorded::NewTranscript {
            audio_url: upload.upload_url,
            ..Default::default()
        })
        .await?;
    let auth = dir.join("auth");
    std::fs::write(&auth, "X-Token: hostile-token-0123456789")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    // A pipe filled before the child writes: its first line blocks.
    let (reader, writer) = std::io::pipe()?;
    let mut filler = writer.try_clone()?;
    std::thread::spawn(move || while filler.write_all(&[b'.'; 4096]).is_ok() {});
    let child = Command::new(binary()?)
        .args(["jobs", "watch", "--json", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--auth-header-file")
        .arg(&auth)
        .arg(&job.id)
        .env("EARSHOT_URL", emulator.url().as_str())
        .env("EARSHOT_API_KEY", KEY)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().ok_or("no pid")?;
    let sampler = Sampler::start(pid);
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if started.elapsed() > Duration::from_secs(10) {
            return Err("jobs watch did not listen".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let body = Arc::new(vec![b'x'; BODY]);
    let http = client_pool();
    let started = Instant::now();
    let mut statuses = Statuses::default();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(8));
    let mut tasks = Vec::new();
    for _ in 0..requests {
        let permit = semaphore.clone().acquire_owned().await?;
        let (http, url, body) = (http.clone(), url.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            post_hook(&http, &url, &body).await
        }));
    }
    for task in tasks {
        statuses.add(task.await?);
    }
    println!(
        "  {requests} POSTs of 10 MiB in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    report("watch", pid, &sampler, &statuses);
    drop(child);
    drop(reader);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

async fn trickle(target: &str, conns: usize, secs: u64, every: u64) -> Result<(), Error> {
    let (child, url) = match target {
        "emulator" => start(&["emulator", "--api-key", KEY]).await?,
        _ => start(&["listen", "--secret", SECRET]).await?,
    };
    let pid = child.id().ok_or("no pid")?;
    let sampler = Sampler::start(pid);
    let addr = url.trim_start_matches("http://").to_owned();
    // A route that reads its body: the upload on the emulator.
    let head = match target {
        "emulator" => format!(
            "POST /v2/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {KEY}\r\n\
             Content-Length: 1000\r\n\r\n"
        ),
        _ => "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".to_owned(),
    };
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (addr, head) = (addr.clone(), head.clone());
        tasks.push(tokio::spawn(async move {
            trickle_body(&addr, &head, secs, every).await
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let started = Instant::now();
    let mut worst = Duration::ZERO;
    let mut unanswered = 0;
    let mut probes = 0;
    while started.elapsed() < Duration::from_secs(secs.saturating_sub(5)) {
        let sent = Instant::now();
        let answered = match target {
            "emulator" => tokio::time::timeout(
                Duration::from_secs(60),
                client().get(format!("{url}/_emulator/stats")).send(),
            )
            .await
            .is_ok_and(|answer| answer.is_ok()),
            _ => timed_signed_post(&url).await.starts_with("200"),
        };
        probes += 1;
        worst = worst.max(sent.elapsed());
        if !answered {
            unanswered += 1;
        }
        tokio::time::sleep(Duration::from_secs(5).saturating_sub(sent.elapsed())).await;
    }
    let mut statuses = Statuses::default();
    for task in tasks {
        statuses.add(task.await?);
    }
    report(&format!("trickle {target}"), pid, &sampler, &statuses);
    println!(
        "  normal requests during the attack: {probes} sent, {unanswered} unanswered, slowest {:.2} s",
        worst.as_secs_f64()
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// Clients
// ---------------------------------------------------------------------------

/// Sends a head for 10 MiB and all of the body but its last byte, then
/// waits (at most `hold` s) for an answer or the close: what happened.
async fn hold_body(addr: &str, hold: u64) -> String {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return "connect failed".to_owned();
    };
    let head = format!(
        "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        BODY + 1
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return "closed during the head".to_owned();
    }
    let chunk = vec![b' '; 64 * 1024];
    let mut sent = 0;
    while sent < BODY {
        let len = chunk.len().min(BODY - sent);
        let write =
            tokio::time::timeout(Duration::from_secs(hold), stream.write_all(&chunk[..len]));
        match write.await {
            Ok(Ok(())) => sent += len,
            Ok(Err(_)) => return answer_of(&mut stream, 1).await,
            Err(_) => return "stalled while sending (the server stopped reading)".to_owned(),
        }
    }
    answer_of(&mut stream, hold).await
}

/// Sends `head` (for 1,000 body bytes), then one byte every `every` s for
/// `secs`.
async fn trickle_body(addr: &str, head: &str, secs: u64, every: u64) -> String {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return "connect failed".to_owned();
    };
    if stream.write_all(head.as_bytes()).await.is_err() {
        return "closed during the head".to_owned();
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        if stream.write_all(b" ").await.is_err() {
            return answer_of(&mut stream, 1).await;
        }
        let mut byte = [0u8; 1];
        match tokio::time::timeout(Duration::from_secs(every), stream.read(&mut byte)).await {
            Err(_) => {}
            Ok(Ok(0) | Err(_)) => return "closed by the server".to_owned(),
            Ok(Ok(_)) => {
                let secs = started.elapsed().as_secs();
                return format!("answered after {}0 s or less", secs / 10 + 1);
            }
        }
    }
    "still open at the end".to_owned()
}

/// The status line the server sent (within `secs`), or how it ended.
async fn answer_of(stream: &mut TcpStream, secs: u64) -> String {
    let mut buffer = vec![0u8; 4096];
    match tokio::time::timeout(Duration::from_secs(secs), stream.read(&mut buffer)).await {
        Ok(Ok(0)) => "closed without an answer".to_owned(),
        Ok(Ok(len)) => String::from_utf8_lossy(&buffer[..len])
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        Ok(Err(error)) => format!("error ({})", error.kind()),
        Err(_) => "no answer in time".to_owned(),
    }
}

/// A signed delivery: "STATUS in S s" (or why not).
async fn timed_signed_post(url: &str) -> String {
    let body = format!(
        r#"{{"event_id":"evt-{}","event":"call.ended"}}"#,
        uuid::Uuid::new_v4().simple()
    )
    .into_bytes();
    let signature =
        earshot_core::signature::sign(SECRET.as_bytes(), chrono::Utc::now().timestamp(), &body);
    let sent = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        client()
            .post(format!("{url}/hook"))
            .header("x-svc-signature", signature)
            .body(body)
            .send(),
    )
    .await;
    let took = sent.elapsed().as_secs_f64();
    match answer {
        Ok(Ok(answer)) => format!("{} in {took:.2} s", answer.status().as_u16()),
        Ok(Err(error)) => format!("error ({}) after {took:.2} s", short(&error)),
        Err(_) => format!("no answer in {took:.0} s"),
    }
}

/// A client with no pooled connections (each request its own).
fn client() -> reqwest::Client {
    earshot_http::client_builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .expect("a client")
}

fn client_pool() -> reqwest::Client {
    earshot_http::client_builder()
        .no_proxy()
        .build()
        .expect("a client")
}

/// POSTs `body` to `url`'s `/hook`: what [`status_and_reason`] says of the
/// answer, or the error.
async fn post_hook(http: &reqwest::Client, url: &str, body: &[u8]) -> String {
    match http
        .post(format!("{url}/hook"))
        .body(body.to_vec())
        .send()
        .await
    {
        Ok(answer) => status_and_reason(answer).await,
        Err(error) => format!("error ({})", short(&error)),
    }
}

/// `STATUS`, and for an error its `reason` (`503 busy`, `401 ...`).
async fn status_and_reason(answer: reqwest::Response) -> String {
    let status = answer.status().as_u16();
    let reason = answer
        .json::<serde_json::Value>()
        .await
        .ok()
        .and_then(|body| body["reason"].as_str().map(str::to_owned));
    match reason {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

fn short(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text = inner.to_string();
        source = inner.source();
    }
    text
}

// ---------------------------------------------------------------------------
// The child and its memory
// ---------------------------------------------------------------------------

/// `EARSHOT_BINARY`, else the release binary beside this benchmark.
fn binary() -> Result<std::path::PathBuf, Error> {
    match std::env::var_os("EARSHOT_BINARY") {
        Some(path) => Ok(path.into()),
        None => support::release_binary().map_err(|error| error.to_string().into()),
    }
}

/// The release binary with `args`, its stdout drained; the child and the
/// URL of its first line.
async fn start(args: &[&str]) -> Result<(Child, String), Error> {
    let mut child = Command::new(binary()?)
        .args(args)
        .env_remove("EARSHOT_URL")
        .env_remove("EARSHOT_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut first = String::new();
    stdout.read_line(&mut first).await?;
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("first line: {first}"))?
        .to_owned();
    tokio::spawn(async move { tokio::io::copy(&mut stdout, &mut tokio::io::sink()).await });
    Ok((child, url))
}

/// The child's resident memory, sampled every 100 ms.
struct Sampler {
    peak_kib: Arc<AtomicU64>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let peak_kib = Arc::new(AtomicU64::new(0));
        let peak = peak_kib.clone();
        tokio::spawn(async move {
            while let Some(kib) = support::vm_rss_kb(&pid.to_string()) {
                peak.fetch_max(kib, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Sampler { peak_kib }
    }
}

#[derive(Default)]
struct Statuses(std::collections::BTreeMap<String, usize>);

impl Statuses {
    fn add(&mut self, what: String) {
        *self.0.entry(what).or_default() += 1;
    }
}

fn report(name: &str, pid: u32, sampler: &Sampler, statuses: &Statuses) {
    let process = pid.to_string();
    let hwm = support::vm_hwm_kb(&process).unwrap_or(0) / 1024;
    let now = support::vm_rss_kb(&process).unwrap_or(0) / 1024;
    let sampled = sampler.peak_kib.load(Ordering::Relaxed) / 1024;
    println!("{name}: peak RSS (VmHWM) {hwm} MB (sampled {sampled} MB), RSS after {now} MB");
    for (what, count) in &statuses.0 {
        println!("  {count:>4} × {what}");
    }
}
