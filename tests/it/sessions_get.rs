//! `earshot sessions get` and `--download` through the real binary, against
//! the emulator with the observer (`earshot listen --store`) holding the
//! call's events: before the artifacts are written it says so; after, it
//! lists them; the recording and transcript download; after the scaled
//! hour the download fails naming when the link expired. No message shows
//! a presigned URL in full. An 80 MiB recording downloads with the process
//! far below 80 MiB resident.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::cli::{Observed, earshot, run};
use crate::common::{API_KEY, Harness, SECRET, eventually, start_at};
use earshot_core::api::types::agents::EventKind;
use earshot_core::store::{Store, events};

const CALL_EVENTS: [EventKind; 3] = [
    EventKind::CallConnected,
    EventKind::CallEnded,
    EventKind::CallFailed,
];

fn get(harness: &Harness, db: &Path, id: &str) -> Command {
    let mut command = earshot();
    command
        .args(["sessions", "get", id, "--url", &harness.base, "--store"])
        .arg(db)
        .env("EARSHOT_API_KEY", API_KEY);
    command
}

/// A call through the control routes, ended, with its `call.ended` stored
/// by the observer; the call id, the recording URL, and when it ended.
async fn ended_call(harness: &Harness, db: &Path) -> (String, String, Instant) {
    let call_id = harness.start_call("connected").await;
    let ended = Instant::now();
    harness.end_call(&call_id).await;
    let url = eventually(Duration::from_secs(10), "call.ended stored", || async {
        let store = Store::open(db).ok()?;
        let stored = events::for_session(&store, &call_id).ok()?;
        let ended = stored.iter().find(|event| event.event == "call.ended")?;
        let payload: serde_json::Value = serde_json::from_slice(&ended.body).ok()?;
        payload["call"]["recording_url"].as_str().map(str::to_owned)
    })
    .await;
    (call_id, url, ended)
}

fn text(output: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_redacted(url: &str, shown: &str) {
    let token = url
        .split('?')
        .next()
        .and_then(|path| path.rsplit('/').next())
        .unwrap();
    assert!(!shown.contains(url), "full URL shown: {shown}");
    assert!(!shown.contains(token), "the URL's token shown: {shown}");
    assert!(
        !shown.contains("expires="),
        "the URL's query shown: {shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_says_why_artifacts_are_missing_then_lists_and_downloads_them() {
    // Scale 0.05: 90 s is 4.5 s, one hour 3 min.
    let harness = start_at(0.05).await;
    let observed = Observed::start(&harness, &CALL_EVENTS, SECRET).await;
    let (dir, db) = (&observed.dir, observed.db.clone());
    let (call_id, url, ended) = ended_call(&harness, &db).await;

    let output = run(&mut get(&harness, &db, &call_id)).await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    if ended.elapsed() < Duration::from_millis(4_000) {
        assert!(
            stdout.contains("not written yet: usually within about 1 min 30 s of call.ended"),
            "{stdout}"
        );
    }
    assert!(stdout.contains("call.connected"), "{stdout}");
    assert!(stdout.contains("call.ended"), "{stdout}");
    assert!(stdout.contains("+1 •••• ••23"), "number masked: {stdout}");
    assert!(!stdout.contains("5555550123"), "number masked: {stdout}");
    assert!(stdout.contains("recording"), "{stdout}");
    assert!(stdout.contains("expires in"), "{stdout}");
    assert_redacted(&url, &stdout);

    // Once written, the record lists both.
    let listed = eventually(Duration::from_secs(20), "artifacts listed", || async {
        let output = run(get(&harness, &db, &call_id).arg("--json")).await;
        let view: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
        let artifacts = view["artifacts"].as_array()?.clone();
        (!artifacts.is_empty()).then_some(view)
    })
    .await;
    assert!(listed["artifacts_note"].is_null(), "{listed}");
    assert_eq!(listed["kind"], "call");
    assert_eq!(listed["from_number"], "+1 •••• ••23");
    let output = run(&mut get(&harness, &db, &call_id)).await;
    let (stdout, _) = text(&output);
    assert!(stdout.contains("2 listed"), "{stdout}");

    // Download both, into a directory created for them (0700).
    let target = dir.path().join("files").join("today");
    let output = run(get(&harness, &db, &call_id).arg("--download").arg(&target)).await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert_redacted(&url, &format!("{stdout}{stderr}"));
    let recording = target.join(format!("{call_id}-recording.wav"));
    let wav = std::fs::read(&recording).expect("recording written");
    assert_eq!(&wav[..4], b"RIFF");
    let transcript = target.join(format!("{call_id}-transcript.json"));
    let transcript: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    assert_eq!(transcript["session_id"], call_id.as_str());
    let left: Vec<_> = std::fs::read_dir(&target).unwrap().collect();
    assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "created private");
    }

    // Again: refused without --force, replaced with it.
    let output = run(get(&harness, &db, &call_id).arg("--download").arg(&target)).await;
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("already exists: pass --force"), "{stderr}");
    let output = run(get(&harness, &db, &call_id)
        .arg("--download")
        .arg(&target)
        .arg("--force"))
    .await;
    assert!(output.status.success(), "{}", text(&output).1);

    harness.emulator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_scaled_hour_the_download_fails_naming_when_the_link_expired() {
    // Scale 0.002: one hour is 7.2 s.
    let harness = start_at(0.002).await;
    let observed = Observed::start(&harness, &CALL_EVENTS, SECRET).await;
    let (dir, db) = (&observed.dir, observed.db.clone());
    let (call_id, url, ended) = ended_call(&harness, &db).await;

    let target = dir.path().join("files");
    std::fs::create_dir(&target).unwrap();
    let output = run(get(&harness, &db, &call_id).arg("--download").arg(&target)).await;
    let (stdout, stderr) = text(&output);
    if ended.elapsed() < Duration::from_millis(6_500) {
        assert!(output.status.success(), "within the hour: {stdout}{stderr}");
        assert!(target.join(format!("{call_id}-recording.wav")).exists());
    }

    tokio::time::sleep_until((ended + Duration::from_millis(7_700)).into()).await;
    let later = dir.path().join("later");
    std::fs::create_dir(&later).unwrap();
    let output = run(get(&harness, &db, &call_id).arg("--download").arg(&later)).await;
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("expired"), "the view says so: {stdout}");
    assert!(
        stderr.contains("the recording link expired") && stderr.contains(" ago (at "),
        "{stderr}"
    );
    assert!(stderr.contains("403"), "{stderr}");
    assert_redacted(&url, &format!("{stdout}{stderr}"));
    assert_eq!(
        std::fs::read_dir(&later).unwrap().count(),
        0,
        "nothing written"
    );

    harness.emulator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_recording_downloads_without_being_held_in_memory() {
    // An 80 MiB recording; the process's peak resident memory stays well
    // under it (held whole, it could not).
    const SIZE: u64 = 80 * 1024 * 1024;
    let mut config =
        earshot_emulator::EmulatorConfig::new(earshot_core::redact::SecretString::new(API_KEY));
    config.time_scale = earshot_emulator::TimeScale::new(0.01).unwrap();
    config.recording_bytes = Some(SIZE);
    let harness = common::launch(config, None).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let call_id = harness.start_call("connected").await;
    harness.end_call(&call_id).await;
    // No observer: the links come from the record's list (about 0.9 s).
    eventually(Duration::from_secs(10), "artifacts listed", || async {
        let (_, body) = harness.get(&format!("/v1/sessions/{call_id}")).await;
        body["artifacts"]
            .as_array()
            .is_some_and(|list| !list.is_empty())
            .then_some(())
    })
    .await;

    let mut child = get(&harness, &db, &call_id)
        .arg("--download")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak_mib = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(kib) = common::rss::status_kib(&pid.to_string(), "VmHWM") {
            peak_mib = peak_mib.max(kib / 1024);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the download ends within a minute"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("recording: "),
        "progress on stderr: {stderr}"
    );
    let written = std::fs::metadata(dir.path().join(format!("{call_id}-recording.wav")))
        .unwrap()
        .len();
    assert_eq!(written, SIZE);
    assert!(
        peak_mib < 56,
        "peak RSS {peak_mib} MiB for an 80 MiB download"
    );
    harness.emulator.shutdown().await;
}
