//! The integration tests, one binary (each file a module) so the crate is
//! linked once, not once per file. The two memory tests that read their
//! own process's peak RSS stay separate binaries (`tests/*.rs`).

mod artifact_downloads;
mod bounded_files;
mod check_receiver;
mod cli_exits;
mod cli_secrets;
mod cli_sign_verify;
mod common;
mod config;
mod demo_dirs;
mod dictation;
mod events_outcomes;
mod events_resend;
mod health_chart;
mod incident_history;
mod incident_timeline;
mod incidents_by_event;
mod jobs_watch;
mod listen;
mod listen_backpressure;
mod listen_hostile;
mod listen_tls;
mod observer_metrics;
mod observer_setup;
mod observer_silence;
mod retry_ends;
mod sdk_compat;
mod server_limits;
mod sessions_get;
mod signature_props;
mod signature_vectors;
mod staged_rotation;
mod store_acks;
mod store_files;
mod store_hand_edits;
mod store_modes;
mod store_reliability;
mod store_retention;
mod subs_update_input;
mod subscriptions_api;
mod tmux_age;
mod tmux_e2e;
mod tmux_silence;
mod tui_launch;
mod verify_receiver;
