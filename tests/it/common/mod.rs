//! Shared test harness: the workspace's test kit (`earshot-testkit`: an
//! emulator with a client, recording receivers, independent signature
//! checks) and, here, what drives the `earshot` binary and how the
//! observer files a captured delivery.

pub mod cli;
pub mod tmux;

pub use earshot_testkit::*;

/// `request` (as a receiver captured it) the way the observer files it,
/// received at `received_ms`.
pub fn observed_event(
    request: &Captured,
    received_ms: i64,
) -> earshot_core::store::events::ObservedEvent {
    let headers = request
        .headers
        .iter()
        .map(|(name, value)| {
            let value = value.to_str().unwrap_or_default().to_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    let delivery_id = Some(request.header("x-svc-delivery-id").to_owned());
    earshot_core::store::events::ObservedEvent::from_delivery(
        &request.body,
        headers,
        delivery_id,
        received_ms,
    )
    .expect("a genuine event")
}
