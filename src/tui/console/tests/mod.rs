//! The console's tests that run more than one of its parts together: the
//! real event loop on `TestBackend` driven by keys ([`event_loop`]), the
//! worker against an emulator over real HTTP (`*_worker`), and the
//! snapshots of every pane ([`screens`]). Each pane's own unit tests stay
//! next to the pane.

mod changes_worker;
mod checks_worker_pg;
mod event_loop;
mod events_resend_pg;
mod events_worker;
mod events_worker_pg;
mod health_worker_pg;
mod inbox_forward_worker;
mod incidents_worker_pg;
mod jobs_queue;
mod jobs_worker;
pub(crate) mod panes;
mod probe_worker;
mod pulse_worker_pg;
mod readme;
mod screens;
mod session_worker;
mod session_worker_pg;
mod sigs_worker;
mod subs_change_watch;
mod support;

use url::Url;

use super::policy_for;
use earshot_core::api::validate::UrlPolicy;

#[test]
fn a_loopback_emulator_accepts_private_receivers_and_the_platform_does_not() {
    let policy = |url: &str| policy_for(&Url::parse(url).unwrap());
    assert_eq!(policy("http://127.0.0.1:8080/"), UrlPolicy::AnyHttp);
    assert_eq!(policy("http://localhost:8080/"), UrlPolicy::AnyHttp);
    assert_eq!(policy("http://[::1]:8080/"), UrlPolicy::AnyHttp);
    assert_eq!(
        policy("https://agents.example.com/"),
        UrlPolicy::PublicHttps
    );
}
