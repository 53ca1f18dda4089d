//! The job watcher (`poll/`) against the emulator over real HTTP: it
//! follows many jobs to the end within low server limits without a single
//! 429 or 403, obeys `Retry-After`, pauses on a 403, takes webhook updates
//! without a request; and `earshot jobs` end to end.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::{API_KEY, Harness, Options, start_at, start_with, wav};
use earshot::api::types::prerecorded::{NewTranscript, TranscriptStatus};
use earshot::poll::schedule::{JobHint, SchedulerConfig};
use earshot::poll::watcher::{self, Command, WatchEvent, Watcher};
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

fn count(stats: &Value, status: &str) -> u64 {
    stats["by_status"][status].as_u64().unwrap_or(0)
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
    let harness = start_with(Options {
        time_scale: 0.05,
        concurrency: 25,
        http_limit: 5_000,
        poll_limit: 20,
        ..Options::default()
    })
    .await;
    let audio = upload(&harness, 2.0).await;
    let ids = submit(&harness, &audio, 200).await;
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
    let polls = stats["by_route"]["GET /v2/transcript/{id}"]["200"]
        .as_u64()
        .unwrap();
    assert!(polls >= 200, "every job was polled at least once: {polls}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_429_is_obeyed_for_that_job_until_retry_after() {
    // The server allows 2 polls per job-minute; the watcher is configured
    // to believe 50. After the 429 the job waits out Retry-After (whole
    // seconds, up to 60) instead of hammering.
    let harness = start_with(Options {
        time_scale: 1.0,
        poll_limit: 2,
        ..Options::default()
    })
    .await;
    let audio = upload(&harness, 40.0).await; // 10 s of processing
    let ids = submit(&harness, &audio, 1).await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    let mut failures = 0;
    let _ = tokio::time::timeout(Duration::from_secs(4), async {
        while let Some(event) = watcher.events.recv().await {
            if let WatchEvent::PollFailed { message, .. } = event {
                assert!(message.contains("429"), "{message}");
                failures += 1;
            }
        }
    })
    .await;
    let stats = harness.stats().await;
    assert_eq!(
        count(&stats, "429"),
        1,
        "one refusal, then silence: {stats}"
    );
    assert_eq!(failures, 1);
    let view = watcher.snapshot().await.pop().unwrap();
    assert!(view.stale, "the job shows stale while it waits: {view:?}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_403_pauses_every_poll_and_says_so() {
    // The account limit is 12 requests; 11 are spent on setup and the
    // first polls, then the server answers 403 and the watcher must stop.
    let harness = start_with(Options {
        time_scale: 1.0,
        http_limit: 12,
        ..Options::default()
    })
    .await;
    let audio = upload(&harness, 400.0).await;
    let ids = submit(&harness, &audio, 5).await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    let paused = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = watcher.events.recv().await {
            if let WatchEvent::Paused { resume_in } = event {
                return resume_in;
            }
        }
        panic!("the watcher stopped without pausing");
    })
    .await
    .expect("a pause was reported");
    assert!(paused >= Duration::from_secs(5), "{paused:?}");
    let refused = count(&harness.stats().await, "403");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let later = count(&harness.stats().await, "403");
    assert!(refused >= 1);
    assert_eq!(later, refused, "nothing was sent while paused");
    let views = watcher.snapshot().await;
    assert_eq!(views.len(), 5, "no job was dropped");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_webhook_update_changes_a_job_without_a_request() {
    let harness = start_at(1.0).await;
    let audio = upload(&harness, 1200.0).await; // five minutes of processing
    let ids = submit(&harness, &audio, 1).await;
    let mut watcher = watch(&harness, SchedulerConfig::default(), &ids);
    // Wait for the first observation, then deliver a webhook.
    loop {
        match watcher.events.recv().await {
            Some(WatchEvent::Changed { .. }) => break,
            Some(_) => {}
            None => panic!("watcher ended"),
        }
    }
    let polls_before = harness.stats().await["by_route"]["GET /v2/transcript/{id}"]["200"]
        .as_u64()
        .unwrap();
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
    let polls_after = harness.stats().await["by_route"]["GET /v2/transcript/{id}"]["200"]
        .as_u64()
        .unwrap();
    assert_eq!(polls_before, polls_after, "the webhook cost no request");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn earshot_jobs_submit_and_watch_print_each_change_as_json_lines() {
    let harness = start_at(0.05).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clip.wav");
    std::fs::write(&file, wav(4.0, Some("the cli test"))).unwrap();
    let earshot = env!("CARGO_BIN_EXE_earshot");
    let base = harness.base.clone();
    let run = move |args: Vec<String>| {
        let output = std::process::Command::new(earshot)
            .args(&args)
            .env("EARSHOT_URL", &base)
            .env("EARSHOT_API_KEY", API_KEY)
            .env_remove("EARSHOT_CONFIG")
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let submit_args = vec!["jobs".into(), "submit".into(), file.display().to_string()];
    let (code, id, stderr) = tokio::task::spawn_blocking({
        let run = run.clone();
        move || run(submit_args)
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{stderr}");
    let id = id.trim().to_owned();
    assert_eq!(id.len(), 36, "prints the transcript id: {id:?}");

    let watch_args = vec!["jobs".into(), "watch".into(), id.clone(), "--json".into()];
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || run(watch_args))
        .await
        .unwrap();
    assert_eq!(code, Some(0), "{stderr}");
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
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_earshot"))
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

#[tokio::test]
async fn a_hint_less_watch_learns_processing_time_from_the_records_audio_duration() {
    // `jobs watch` knows nothing about the jobs it is given; the records'
    // `audio_duration` is all it has. At time scale 0.05 the emulator takes
    // 0.0125 s per second of audio, far from the prior of 0.25.
    let harness = start_with(Options {
        time_scale: 0.05,
        concurrency: 5,
        ..Options::default()
    })
    .await;
    let audio = upload(&harness, 40.0).await; // 0.5 s of processing
    let ids = submit(&harness, &audio, 10).await;
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
    let known = earshot::poll::hints::Known {
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
    let harness = start_with(Options {
        time_scale: 0.25,
        poll_limit: 5,
        ..Options::default()
    })
    .await;
    let audio = upload(&harness, 40.0).await; // 2.5 s of processing
    let ids = submit(&harness, &audio, 3).await;
    let mut args = vec!["jobs".to_owned(), "watch".into(), "--json".into()];
    args.extend(["--per-job-limit".into(), "5".into()]);
    args.extend(ids.iter().cloned());
    let earshot = env!("CARGO_BIN_EXE_earshot");
    let base = harness.base.clone();
    let watch = tokio::task::spawn_blocking(move || {
        std::process::Command::new(earshot)
            .args(&args)
            .env("EARSHOT_URL", &base)
            .env("EARSHOT_API_KEY", API_KEY)
            .env_remove("EARSHOT_CONFIG")
            .output()
            .unwrap()
    });
    let output = tokio::time::timeout(Duration::from_secs(90), watch)
        .await
        .expect("jobs watch ends")
        .unwrap();
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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let auth = dir.path().join("auth");
    std::fs::write(&auth, "X-Watch-Token: push-token-0123456789").unwrap();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let request = NewTranscript {
            audio_url: audio.clone(),
            webhook_url: Some(format!("http://127.0.0.1:{port}/hook")),
            webhook_auth_header_name: Some("X-Watch-Token".into()),
            webhook_auth_header_value: Some(earshot::redact::SecretString::new(
                "push-token-0123456789",
            )),
        };
        ids.push(harness.client.create_transcript(&request).await.unwrap().id);
    }
    let output = watch_with_pushes(&harness, port, &auth, &ids).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("\"completed\":5"), "{stdout}");
    let stats = harness.stats().await;
    let gets = stats["by_route"]["GET /v2/transcript/{id}"]["200"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        gets <= 2 * 5,
        "at most one GET per job after its push: {stats}"
    );
    assert_eq!(count(&stats, "429"), 0, "{stats}");
    harness.emulator.shutdown().await;
}

/// `earshot jobs watch --json --per-job-limit 1 --listen 127.0.0.1:PORT`
/// with the auth header in `auth`, over `ids`; its output once it ends
/// (which, at one poll per job-minute, only pushes make quick).
async fn watch_with_pushes(
    harness: &Harness,
    port: u16,
    auth: &std::path::Path,
    ids: &[String],
) -> std::process::Output {
    let mut args = vec!["jobs".to_owned(), "watch".into(), "--json".into()];
    args.extend(["--per-job-limit".into(), "1".into()]);
    args.extend(["--listen".into(), format!("127.0.0.1:{port}")]);
    args.extend(["--auth-header-file".into(), auth.display().to_string()]);
    args.extend(ids.iter().cloned());
    let earshot = env!("CARGO_BIN_EXE_earshot");
    let base = harness.base.clone();
    let watch = tokio::task::spawn_blocking(move || {
        std::process::Command::new(earshot)
            .args(&args)
            .env("EARSHOT_URL", &base)
            .env("EARSHOT_API_KEY", API_KEY)
            .env_remove("EARSHOT_CONFIG")
            .env_remove("EARSHOT_AUTH_HEADER")
            .output()
            .unwrap()
    });
    tokio::time::timeout(Duration::from_secs(45), watch)
        .await
        .expect("jobs watch ends without waiting out the poll limit")
        .unwrap()
}

#[tokio::test]
async fn jobs_watch_listen_reports_a_pushed_failure_with_its_message_for_one_get() {
    let harness = start_at(0.05).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let auth = dir.path().join("auth");
    std::fs::write(&auth, "X-Watch-Token: push-token-0123456789").unwrap();
    // Nothing listens on port 9 of loopback: the download fails.
    let request = NewTranscript {
        audio_url: "http://127.0.0.1:9/missing.wav".into(),
        webhook_url: Some(format!("http://127.0.0.1:{port}/hook")),
        webhook_auth_header_name: Some("X-Watch-Token".into()),
        webhook_auth_header_value: Some(earshot::redact::SecretString::new(
            "push-token-0123456789",
        )),
    };
    let id = harness.client.create_transcript(&request).await.unwrap().id;
    let output = watch_with_pushes(&harness, port, &auth, std::slice::from_ref(&id)).await;
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
    let gets = stats["by_route"]["GET /v2/transcript/{id}"]["200"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        gets <= 2,
        "the first poll and one GET for the message: {stats}"
    );
    harness.emulator.shutdown().await;
}
