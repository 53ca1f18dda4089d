//! The job watcher (`poll/`) against the emulator over real HTTP: it
//! follows many jobs to the end within low server limits without a single
//! 429 or 403, obeys `Retry-After`, pauses on a 403, takes webhook updates
//! without a request; and `earshot jobs` end to end.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use crate::common::cli::{earshot, earshot_async, finish_within, text};
use crate::common::{API_KEY, Harness, Options, eventually, start_at, start_with, wav};
use earshot_core::api::types::prerecorded::{NewTranscript, TranscriptStatus};
use earshot_core::poll::schedule::{JobHint, JobView, SchedulerConfig};
use earshot_core::poll::watcher::{self, Command, WatchEvent, Watcher};
use serde_json::Value;

async fn upload(harness: &Harness, seconds: f64) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.wav");
    std::fs::write(&path, wav(seconds, Some("hello from the watcher test"))).unwrap();
    harness
        .client
        .upload_file(&path, |_| {})
        .await
        .expect("upload")
        .upload_url
}

async fn submit(harness: &Harness, audio_url: &str, count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        let request = NewTranscript {
            audio_url: audio_url.to_owned(),
            ..NewTranscript::default()
        };
        ids.push(
            harness
                .client
                .create_transcript(&request)
                .await
                .expect("job")
                .id,
        );
    }
    ids
}

/// An emulator with `options`, and `jobs` jobs of `seconds` of audio each
/// submitted to it.
async fn with_jobs(options: Options, seconds: f64, jobs: usize) -> (Harness, Vec<String>) {
    let harness = start_with(options).await;
    let audio = upload(&harness, seconds).await;
    let ids = submit(&harness, &audio, jobs).await;
    (harness, ids)
}

fn count(stats: &Value, status: &str) -> u64 {
    stats["by_status"][status].as_u64().unwrap_or(0)
}

/// Transcript GETs the emulator answered with `status`.
fn polls(stats: &Value, status: &str) -> u64 {
    stats["by_route"]["GET /v2/transcript/{id}"][status]
        .as_u64()
        .unwrap_or(0)
}

/// Transcript GETs the emulator answered, whatever the status.
fn all_polls(stats: &Value) -> u64 {
    stats["by_route"]["GET /v2/transcript/{id}"]
        .as_object()
        .map_or(0, |by_status| {
            by_status.values().filter_map(Value::as_u64).sum()
        })
}

/// `earshot ARGS` against the harness (URL and key in the environment);
/// its output once it ends, within `within`.
async fn earshot_at(harness: &Harness, args: &[String], within: Duration) -> Output {
    let mut command = earshot_async();
    command
        .args(args)
        .env("EARSHOT_URL", &harness.base)
        .env("EARSHOT_API_KEY", API_KEY);
    finish_within(&mut command, within).await
}

fn watch(harness: &Harness, config: SchedulerConfig, ids: &[String]) -> Watcher {
    let watcher = watcher::spawn(harness.client.clone(), config);
    for id in ids {
        watcher
            .commands
            .send(Command::Add {
                id: id.clone(),
                hint: JobHint::default(),
            })
            .unwrap();
    }
    watcher
}

/// The first event `pick` takes (or panics after `within`, or when the
/// watcher ends).
async fn first_event<T>(
    watcher: &mut Watcher,
    within: Duration,
    what: &str,
    mut pick: impl FnMut(WatchEvent) -> Option<T>,
) -> T {
    tokio::time::timeout(within, async {
        while let Some(event) = watcher.events.recv().await {
            if let Some(picked) = pick(event) {
                return picked;
            }
        }
        panic!("the watcher ended before {what}");
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} within {within:?}"))
}

/// Waits until no poll of the watcher is in flight (every request it sent
/// is answered, so the emulator's counts include it); every job's view.
async fn settled(watcher: &Watcher) -> Vec<JobView> {
    eventually(Duration::from_secs(10), "no poll in flight", || async {
        let views = watcher.snapshot().await;
        views.iter().all(|view| !view.in_flight).then_some(views)
    })
    .await
}

/// Events until `AllDone` (or panics after `within`).
async fn until_done(watcher: &mut Watcher, within: Duration) -> Vec<WatchEvent> {
    let mut events = Vec::new();
    tokio::time::timeout(within, async {
        while let Some(event) = watcher.events.recv().await {
            if matches!(event, WatchEvent::AllDone) {
                return;
            }
            events.push(event);
        }
    })
    .await
    .expect("every job finished in time");
    events
}

#[tokio::test]
async fn two_hundred_jobs_finish_under_low_limits_with_no_429_and_no_403() {
    // Limits a fixed 1 s poller over 200 jobs would break within seconds:
    // 20 polls per job per minute, 5,000 requests per 5 minutes.
    let (harness, ids) = with_jobs(
        Options {
            time_scale: 0.05,
            concurrency: 25,
            http_limit: 5_000,
            poll_limit: 20,
            ..Options::default()
        },
        2.0,
        200,
    )
    .await;
    // The watcher's share: at most 150 requests per 10 s (4,500 per 5 min
    // with the 201 requests above: under 5,000), 15 polls per job-minute.
    let config = SchedulerConfig {
        account_budget: 150,
        account_window: Duration::from_secs(10),
        per_job_per_minute: 15,
        ..SchedulerConfig::default()
    };
    let mut watcher = watch(&harness, config, &ids);
    let events = until_done(&mut watcher, Duration::from_secs(60)).await;

    let mut last: HashMap<String, TranscriptStatus> = HashMap::new();
    for event in &events {
        if let WatchEvent::Changed { view, .. } = event {
            last.insert(view.id.clone(), view.status.clone().unwrap());
        }
    }
    assert_eq!(last.len(), 200, "a change was reported for every job");
    assert!(
        last.values()
            .all(|status| *status == TranscriptStatus::Completed)
    );
    let stats = harness.stats().await;
    assert_eq!(count(&stats, "429"), 0, "{stats}");
    assert_eq!(count(&stats, "403"), 0, "{stats}");
    let polls = polls(&stats, "200");
    assert!(polls >= 200, "every job was polled at least once: {polls}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_429_is_obeyed_for_that_job_until_retry_after() {
    // The server allows 2 polls per job-minute; the watcher is configured
    // to believe 50. After the 429 the job waits out Retry-After (whole
    // seconds, up to 60) instead of hammering.
    let (harness, ids) = with_jobs(
        Options {
            time_scale: 1.0,
            poll_limit: 2,
            ..Options::default()
        },
        40.0, // 10 s of processing
        1,
    )
    .await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    let message = first_event(
        &mut watcher,
        Duration::from_secs(10),
        "a failed poll",
        |event| match event {
            WatchEvent::PollFailed { message, .. } => Some(message),
            _ => None,
        },
    )
    .await;
    assert!(message.contains("429"), "{message}");
    // The answer is in: had the watcher ignored Retry-After, the job's
    // next poll would be out already (the watcher sends what is due before
    // it reads a command) or planned before the retry time.
    let view = settled(&watcher).await.pop().expect("the job is watched");
    let retry_at = view.retry_at.expect("the job waits for Retry-After");
    assert!(
        view.next_poll.is_none_or(|next| next >= retry_at),
        "no poll before Retry-After: {view:?}"
    );
    assert!(view.stale, "the job shows stale while it waits: {view:?}");
    let stats = harness.stats().await;
    assert_eq!(count(&stats, "429"), 1, "one refusal: {stats}");
    assert_eq!(all_polls(&stats), u64::from(view.polls), "{stats}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_403_pauses_every_poll_and_says_so() {
    // The account limit is 12 requests; 11 are spent on setup and the
    // first polls, then the server answers 403 and the watcher must stop.
    let (harness, ids) = with_jobs(
        Options {
            time_scale: 1.0,
            http_limit: 12,
            ..Options::default()
        },
        400.0,
        5,
    )
    .await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    let paused = first_event(
        &mut watcher,
        Duration::from_secs(10),
        "a pause",
        |event| match event {
            WatchEvent::Paused { resume_in } => Some(resume_in),
            _ => None,
        },
    )
    .await;
    assert!(paused >= Duration::from_secs(5), "{paused:?}");
    // Once the polls sent before the pause are answered, everything the
    // watcher sent is counted.
    let views = settled(&watcher).await;
    assert_eq!(views.len(), 5, "no job was dropped");
    let sent: u64 = views.iter().map(|view| u64::from(view.polls)).sum();
    let stats = harness.stats().await;
    assert!(count(&stats, "403") >= 1, "{stats}");
    assert_eq!(all_polls(&stats), sent, "{stats}");
    // A new job is due at once: outside a pause the watcher sends its
    // first poll before it reads the next command. During the pause it
    // stays unsent, and so does every other due poll.
    let new = "00000000-0000-4000-8000-00000000f403".to_owned();
    let hint = JobHint::default();
    watcher
        .commands
        .send(Command::Add {
            id: new.clone(),
            hint,
        })
        .unwrap();
    let view = watcher.view(&new).await.expect("the new job is watched");
    assert!(
        !view.in_flight && view.polls == 0,
        "polled while paused: {view:?}"
    );
    let views = settled(&watcher).await;
    let later: u64 = views.iter().map(|view| u64::from(view.polls)).sum();
    assert_eq!(later, sent, "nothing was sent while paused: {views:?}");
    assert_eq!(all_polls(&harness.stats().await), sent);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_webhook_update_changes_a_job_without_a_request() {
    // Five minutes of processing.
    let (harness, ids) = with_jobs(Options::at(1.0), 1200.0, 1).await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    // Wait for the first observation, then deliver a webhook.
    let within = Duration::from_secs(10);
    first_event(&mut watcher, within, "a first observation", |event| {
        matches!(event, WatchEvent::Changed { .. }).then_some(())
    })
    .await;
    let polls_before = polls(&harness.stats().await, "200");
    watcher
        .commands
        .send(Command::Webhook {
            id: ids[0].clone(),
            status: TranscriptStatus::Completed,
        })
        .unwrap();
    let events = until_done(&mut watcher, Duration::from_secs(2)).await;
    assert!(events.iter().any(|event| matches!(
        event,
        WatchEvent::Changed { view, transcript: None } if view.status == Some(TranscriptStatus::Completed)
    )));
    let polls_after = polls(&harness.stats().await, "200");
    assert_eq!(polls_before, polls_after, "the webhook cost no request");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn earshot_jobs_submit_and_watch_print_each_change_as_json_lines() {
    let harness = start_at(0.05).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clip.wav");
    std::fs::write(&file, wav(4.0, Some("the cli test"))).unwrap();
    let within = Duration::from_secs(60);
    let submit_args = ["jobs".into(), "submit".into(), file.display().to_string()];
    let output = earshot_at(&harness, &submit_args, within).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let id = text(&output.stdout).trim().to_owned();
    assert_eq!(id.len(), 36, "prints the transcript id: {id:?}");
    // Off a terminal the upload's progress is a line per tenth, ending at 100 %.
    let progress = text(&output.stderr);
    assert!(
        progress
            .lines()
            .any(|line| line.starts_with("uploading: ") && line.contains("(100%)")),
        "{progress}"
    );

    let watch_args = ["jobs".into(), "watch".into(), id.clone(), "--json".into()];
    let output = earshot_at(&harness, &watch_args, within).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    let changes: Vec<&Value> = lines
        .iter()
        .filter(|line| line.get("status").is_some())
        .collect();
    assert!(changes.iter().all(|line| line["id"] == id.as_str()));
    assert_eq!(changes.last().unwrap()["status"], "completed", "{stdout}");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["completed"], 1, "{stdout}");
    harness.emulator.shutdown().await;
}

#[test]
fn earshot_jobs_refuses_half_a_webhook_auth_header() {
    let output = earshot()
        .args([
            "jobs",
            "submit",
            "--audio-url",
            "https://x.example/a.wav",
            "--webhook-auth",
            "X-Token",
        ])
        .env("EARSHOT_URL", "http://127.0.0.1:9")
        .env("EARSHOT_API_KEY", "k")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("NAME:VALUE"));
}

/// Every answered poll is reported: a change as `Changed`, a job found as
/// it was as `Polled`, whose `processing_until` (the poll's sending) moves
/// on, so a front end knows how long the job surely ran; the finish comes
/// after the last of them.
#[tokio::test]
async fn every_poll_of_a_running_job_is_reported_with_the_moment_it_proves() {
    // 4 s of audio at time scale 1: a second of processing, polled every
    // 250 ms or so (a tenth of its running time, at least 250 ms).
    let (harness, ids) = with_jobs(Options::at(1.0), 4.0, 1).await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    let events = until_done(&mut watcher, Duration::from_secs(30)).await;
    let mut provens = Vec::new();
    let mut reported = 0;
    let mut finished = None;
    for event in events {
        let view = match event {
            WatchEvent::Changed { view, .. } | WatchEvent::Polled { view } => view,
            _ => continue,
        };
        reported += 1;
        match view.status {
            Some(TranscriptStatus::Processing) => provens.extend(view.processing_until),
            Some(TranscriptStatus::Completed) => finished = Some(view),
            _ => {}
        }
    }
    assert!(provens.len() >= 2, "polled while running: {provens:?}");
    assert!(
        provens.windows(2).all(|pair| pair[0] < pair[1]),
        "each poll proves a later moment: {provens:?}"
    );
    let finished = finished.expect("the job finished");
    assert_eq!(finished.processing_until, provens.last().copied());
    assert!(finished.processing_until < finished.finished_at);
    assert!(
        finished.processing_since <= provens.get(1).copied(),
        "from the first answer that said processing"
    );
    settled(&watcher).await;
    let stats = harness.stats().await;
    assert_eq!(
        reported,
        polls(&stats, "200"),
        "one report per answer: {stats}"
    );
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_hint_less_watch_learns_processing_time_from_the_records_audio_duration() {
    // `jobs watch` knows nothing about the jobs it is given; the records'
    // `audio_duration` is all it has. At time scale 0.05 the emulator takes
    // 0.0125 s per second of audio, far from the prior of 0.25.
    let (harness, ids) = with_jobs(
        Options {
            time_scale: 0.05,
            concurrency: 5,
            ..Options::default()
        },
        40.0, // 0.5 s of processing
        10,
    )
    .await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    until_done(&mut watcher, Duration::from_secs(60)).await;
    let ratio = watcher.learned_ratio().await.expect("the watcher runs");
    assert!(ratio < 0.15, "learned {ratio} per second of audio");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_job_added_with_known_submit_time_and_audio_is_watched_to_the_end() {
    let harness = start_at(0.05).await;
    let audio = upload(&harness, 4.0).await;
    let submitted = std::time::Instant::now();
    let ids = submit(&harness, &audio, 1).await;
    let mut watcher = watcher::spawn(harness.client.clone(), SchedulerConfig::default());
    let known = earshot_core::poll::hints::Known {
        submitted: Some(submitted),
        audio_duration: Some(Duration::from_secs(4)),
    };
    watcher
        .commands
        .send(Command::AddKnown {
            id: ids[0].clone(),
            known,
        })
        .unwrap();
    until_done(&mut watcher, Duration::from_secs(30)).await;
    let view = watcher.view(&ids[0]).await.expect("watched");
    assert_eq!(view.status, Some(TranscriptStatus::Completed));
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn jobs_watch_with_a_per_job_limit_gets_no_429_from_a_lower_poll_limit() {
    // The account allows 5 polls per job-minute; `--per-job-limit 5` keeps
    // `jobs watch` under it from the first poll (without it, the dense
    // polls of a job that just started hit the limit within 2 s).
    let (harness, ids) = with_jobs(
        Options {
            time_scale: 0.25,
            poll_limit: 5,
            ..Options::default()
        },
        40.0, // 2.5 s of processing
        3,
    )
    .await;
    let mut args = vec!["jobs".to_owned(), "watch".into(), "--json".into()];
    args.extend(["--per-job-limit".into(), "5".into()]);
    args.extend(ids.iter().cloned());
    let output = earshot_at(&harness, &args, Duration::from_secs(90)).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("\"completed\":3"), "{stdout}");
    let stats = harness.stats().await;
    assert_eq!(count(&stats, "429"), 0, "{stats}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn jobs_watch_listen_takes_pushes_and_polls_a_pushed_job_no_more() {
    // One poll per job-minute: without pushes the watch could not end
    // before a minute; with them each job costs its first poll and at most
    // one more (in flight when the push came).
    let harness = start_at(0.05).await;
    let audio = upload(&harness, 240.0).await; // 3 s of processing
    let pushes = Pushes::new();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let request = pushes.job(&audio);
        ids.push(harness.client.create_transcript(&request).await.unwrap().id);
    }
    let output = pushes.watch(&harness, &ids).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("\"completed\":5"), "{stdout}");
    let stats = harness.stats().await;
    let gets = polls(&stats, "200");
    assert!(
        gets <= 2 * 5,
        "at most one GET per job after its push: {stats}"
    );
    assert_eq!(count(&stats, "429"), 0, "{stats}");
    harness.emulator.shutdown().await;
}

const PUSH_HEADER: &str = "X-Watch-Token";
const PUSH_TOKEN: &str = "push-token-0123456789";

/// Where `earshot jobs watch --listen` takes the jobs' pushes: a free
/// loopback port, and a file with the auth header the jobs send.
struct Pushes {
    port: u16,
    auth_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Pushes {
    fn new() -> Pushes {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let auth_file = dir.path().join("auth");
        std::fs::write(&auth_file, format!("{PUSH_HEADER}: {PUSH_TOKEN}")).unwrap();
        Pushes {
            port,
            auth_file,
            _dir: dir,
        }
    }

    /// A job for `audio_url` that pushes its status here.
    fn job(&self, audio_url: &str) -> NewTranscript {
        NewTranscript {
            audio_url: audio_url.to_owned(),
            webhook_url: Some(format!("http://127.0.0.1:{}/hook", self.port)),
            webhook_auth_header_name: Some(PUSH_HEADER.into()),
            webhook_auth_header_value: Some(earshot_core::redact::SecretString::new(PUSH_TOKEN)),
        }
    }

    /// `earshot jobs watch --json --per-job-limit 1 --listen 127.0.0.1:PORT`
    /// with the auth header file, over `ids`; its output once it ends
    /// (which, at one poll per job-minute, only pushes make quick).
    async fn watch(&self, harness: &Harness, ids: &[String]) -> Output {
        let mut args = vec!["jobs".to_owned(), "watch".into(), "--json".into()];
        args.extend(["--per-job-limit".into(), "1".into()]);
        args.extend(["--listen".into(), format!("127.0.0.1:{}", self.port)]);
        let auth = self.auth_file.display().to_string();
        args.extend(["--auth-header-file".into(), auth]);
        args.extend(ids.iter().cloned());
        earshot_at(harness, &args, Duration::from_secs(45)).await
    }
}

#[tokio::test]
async fn jobs_watch_listen_reports_a_pushed_failure_with_its_message_for_one_get() {
    let harness = start_at(0.05).await;
    let pushes = Pushes::new();
    // Nothing listens on port 9 of loopback: the download fails.
    let request = pushes.job("http://127.0.0.1:9/missing.wav");
    let id = harness.client.create_transcript(&request).await.unwrap().id;
    let output = pushes.watch(&harness, std::slice::from_ref(&id)).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failed = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["id"] == id.as_str() && line["status"] == "error")
        .unwrap_or_else(|| panic!("no error line for {id}: {stdout}"));
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|error| !error.is_empty()),
        "the record's message is shown: {failed}"
    );
    let stats = harness.stats().await;
    let gets = polls(&stats, "200");
    assert!(
        gets <= 2,
        "the first poll and one GET for the message: {stats}"
    );
    harness.emulator.shutdown().await;
}

/// Whether a thread of process `pid` sits in `write` or `writev` on its
/// stdout (fd 1): a line waiting on a full pipe. Read from
/// `/proc/PID/task/*/syscall` (the call number, then its first argument).
fn writing_stdout(pid: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    const WRITES: [&str; 2] = ["1", "20"];
    #[cfg(target_arch = "aarch64")]
    const WRITES: [&str; 2] = ["64", "66"];
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("syscall")).is_ok_and(|line| {
            let mut fields = line.split_whitespace();
            fields.next().is_some_and(|call| WRITES.contains(&call)) && fields.next() == Some("0x1")
        })
    })
}

/// `earshot jobs watch --listen` whose stdout blocks:
/// the receiver's requests wait for the watch loop, which waits for stdout,
/// so what waits is bounded (`ListenConfig::queue_bytes`) and the rest is
/// answered 503 with `Retry-After` (the platform retries), not queued. The
/// child's peak memory stays far below what 32 queued 10 MiB requests take.
#[tokio::test]
async fn jobs_watch_listen_with_a_blocked_stdout_answers_503_instead_of_queueing() {
    const REQUESTS: usize = 32;
    const BODY_BYTES: usize = 10 * 1024 * 1024 - 1;
    /// The body budget and the queue allow about 100 MiB here, four
    /// requests at a time; the limit is generous above that.
    const PEAK_LIMIT_MIB: u64 = 300;
    tokio::time::timeout(Duration::from_secs(90), async {
        let harness = start_at(1.0).await;
        let audio = upload(&harness, 60.0).await;
        let ids = submit(&harness, &audio, 1).await;
        let pushes = Pushes::new();
        // A pipe filled before the child writes: its first line blocks.
        let (reader, writer) = std::io::pipe().unwrap();
        let mut filler = writer.try_clone().unwrap();
        std::thread::spawn(move || {
            use std::io::Write;
            while filler.write_all(&[b'.'; 4096]).is_ok() {}
        });
        let mut command = earshot_async();
        command
            .args(["jobs", "watch", "--json", "--listen"])
            .arg(format!("127.0.0.1:{}", pushes.port))
            .arg("--auth-header-file")
            .arg(&pushes.auth_file)
            .args(&ids)
            .env("EARSHOT_URL", &harness.base)
            .env("EARSHOT_API_KEY", API_KEY)
            .stdout(std::process::Stdio::from(writer));
        let mut child = command.spawn().expect("jobs watch starts");
        let url = format!("http://127.0.0.1:{}/hook", pushes.port);
        eventually(Duration::from_secs(20), "the watch's receiver", || async {
            tokio::net::TcpStream::connect(("127.0.0.1", pushes.port))
                .await
                .ok()
        })
        .await;
        // Its first poll is answered: the line it prints then blocks.
        eventually(Duration::from_secs(20), "the first poll", || async {
            (all_polls(&harness.stats().await) > 0).then_some(())
        })
        .await;
        let pid = child.id().expect("jobs watch is running");
        eventually(
            Duration::from_secs(20),
            "the line blocked on stdout",
            || async { writing_stdout(pid).then_some(()) },
        )
        .await;

        let http = earshot_http::client_builder().no_proxy().build().unwrap();
        let body = axum::body::Bytes::from(vec![b'x'; BODY_BYTES]);
        let mut answers = Vec::new();
        for batch in 0..REQUESTS / 4 {
            let sends = (0..4).map(|_| {
                http.post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
            });
            for answer in futures_util::future::join_all(sends).await {
                let answer = answer.unwrap_or_else(|error| panic!("batch {batch}: {error}"));
                let retry_after = answer.headers().get("retry-after").cloned();
                answers.push((answer.status().as_u16(), retry_after));
            }
        }
        assert!(child.id().is_some(), "jobs watch is still running");
        let peak = crate::common::rss::peak_mib_of(pid);
        let refused = answers.iter().filter(|(status, _)| *status == 503).count();
        // What the queue holds, and a batch the loop may take before it
        // blocks.
        let queued = earshot_core::receiver::listen::QUEUE_BYTES / BODY_BYTES + 4;
        assert!(
            refused >= REQUESTS - queued,
            "{refused} of {REQUESTS} answered 503: {answers:?}"
        );
        assert!(
            answers
                .iter()
                .all(|(status, retry_after)| *status != 503 || retry_after.is_some()),
            "{answers:?}"
        );
        assert!(peak < PEAK_LIMIT_MIB, "jobs watch peaked at {peak} MiB");
        let _ = child.kill().await;
        drop(reader);
        harness.emulator.shutdown().await;
    })
    .await
    .expect("the test ends in time");
}
