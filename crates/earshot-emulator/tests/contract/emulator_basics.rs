//! Emulator area C from the outside: a quick end-to-end smoke through the
//! client, one signed delivery to a real receiver.

use std::time::Duration;

use crate::common::{SECRET, eventually, start};
use earshot_core::api::types::agents::{DeliveryStatus, EventKind};
use earshot_core::signature::{Candidate, verify};

#[tokio::test]
async fn a_session_start_is_delivered_signed_and_recorded() {
    let harness = start().await;
    let (receiver, subscription) = harness
        .healthy_subscriber(&[EventKind::SessionStarted])
        .await;
    let session_id = harness.start_session(None).await;

    let records = eventually(Duration::from_secs(5), "a delivered record", || async {
        let records = harness.client.list_deliveries(&session_id).await.ok()?;
        records
            .iter()
            .any(|record| record.status == DeliveryStatus::Delivered)
            .then_some(records)
    })
    .await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].subscription_id, subscription.id);
    assert_eq!(records[0].http_status_code, Some(200));

    let request = &receiver.captured()[0];
    let header = request.header("x-svc-signature");
    let now = chrono::Utc::now().timestamp();
    let verdict = verify(
        header,
        &request.body,
        &[Candidate {
            label: "current",
            secret: SECRET.as_bytes(),
        }],
        now,
        300,
    );
    assert!(verdict.is_valid(), "{verdict:?}");
    assert_eq!(request.header("x-svc-delivery-id"), records[0].id);
    assert_eq!(request.header("x-svc-event"), "session.started");
    harness.emulator.shutdown().await;
}
