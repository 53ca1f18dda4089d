//! `earshot demo` runs traffic forever, so its emulator
//! remembers only the newest sessions and calls (with their delivery
//! attempts and artifacts). Checked over HTTP: older ones are forgotten,
//! the newest answer as before.

use crate::common;
use crate::common::{Options, launch};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::redact::SecretString;
use earshot_emulator::{EmulatorConfig, TimeScale};

const KEEP: usize = 20;
const MADE: usize = 200;

#[tokio::test]
async fn with_a_keep_limit_only_the_newest_conversations_are_remembered() {
    let options = Options::default();
    let mut config = EmulatorConfig::new(SecretString::new(common::API_KEY));
    config.allow_private_urls = true;
    config.time_scale = TimeScale::new(options.time_scale).expect("valid time scale");
    config.keep_conversations = Some(KEEP);
    let harness = launch(config, Some(UrlPolicy::AnyHttp)).await;

    // Calls go through the same record keeping; only sessions can be read
    // back one by one.
    for _ in 0..MADE / 2 {
        let id = harness.start_call("connected").await;
        harness.end_call(&id).await;
    }
    let mut ids = Vec::new();
    for _ in 0..MADE / 2 {
        let id = harness.start_session(None).await;
        harness.complete_session(&id).await;
        ids.push(id);
    }
    let mut remembered = Vec::new();
    for id in &ids {
        let (status, _) = harness.get(&format!("/v1/sessions/{id}")).await;
        assert!(status == 200 || status == 404, "session {id}: {status}");
        if status == 200 {
            remembered.push(id.clone());
        }
    }
    assert_eq!(remembered.len(), KEEP, "{MADE} made, {KEEP} kept");
    assert_eq!(remembered, ids[ids.len() - KEEP..], "the newest are kept");
}

#[tokio::test]
async fn without_a_limit_every_conversation_is_remembered() {
    let harness = common::start_with(Options::default()).await;
    let mut ids = Vec::new();
    for _ in 0..30 {
        ids.push(harness.start_session(None).await);
    }
    for id in &ids {
        let (status, _) = harness.get(&format!("/v1/sessions/{id}")).await;
        assert_eq!(status, 200, "session {id}");
    }
}
