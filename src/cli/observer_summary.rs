//! What `earshot observer setup` says it did: the `--json` summary (never
//! the secret) and the same in words, with the command and the systemd
//! unit (or the replicas' units and the load balancer's lines) to run the
//! observer by.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Serialize;

use super::observer_replicas;

/// What setup did to the subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Outcome {
    Created,
    /// Found as it should be: nothing changed.
    Found,
    /// Found, and events, state or secret changed.
    Updated,
}

/// What setup did to the secret file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum SecretAction {
    /// A new secret in a new file.
    Written,
    /// The file's secret, used as it was.
    Kept,
    /// A new secret over the file's.
    Replaced,
}

/// The `--json` summary; never the secret.
#[derive(Serialize)]
pub(super) struct Summary {
    pub(super) subscription_id: String,
    pub(super) outcome: Outcome,
    pub(super) created: bool,
    pub(super) url: String,
    pub(super) events: Vec<String>,
    pub(super) enabled: bool,
    /// What changed on a subscription that existed, in words.
    pub(super) changes: Vec<String>,
    pub(super) secret_file: PathBuf,
    pub(super) secret: SecretAction,
    pub(super) listen: SocketAddr,
    pub(super) listen_command: String,
    /// The one unit, for a store file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) systemd_unit: Option<String>,
    /// One unit per replica, for a PostgreSQL store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) systemd_units: Option<Vec<observer_replicas::Unit>>,
    /// The load balancer's backend over the replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) load_balancer: Option<String>,
}

/// Where the default listen address came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ListenFrom {
    Flag,
    /// The URL names this machine (loopback or a private address).
    Url,
    /// A public URL: a TLS proxy forwards to the listener.
    Proxy,
}

/// The text summary: what happened, the command, the unit.
pub(super) fn summary_text(
    summary: &Summary,
    listen_from: ListenFrom,
    masked: Option<&str>,
) -> String {
    let id = &summary.subscription_id;
    let url = &summary.url;
    let mut text = match summary.outcome {
        Outcome::Created => format!("created subscription {id} for {url}\n"),
        Outcome::Found => format!(
            "found subscription {id} for {url}: all five events, enabled; nothing to change\n"
        ),
        Outcome::Updated => format!("found subscription {id} for {url} and fixed it:\n"),
    };
    for change in &summary.changes {
        text.push_str(&format!("  changed {change}\n"));
    }
    text.push_str(&format!("  events  {}\n", summary.events.join(", ")));
    let file = summary.secret_file.display();
    let masked = masked.unwrap_or("");
    text.push_str(&match summary.secret {
        SecretAction::Written | SecretAction::Replaced if summary.outcome == Outcome::Updated => {
            format!(
                "  secret  new ({masked}), written to {file} (0600); shown nowhere else. \
                 Restart listen with it now: deliveries signed with the new secret fail until \
                 then\n"
            )
        }
        SecretAction::Written => {
            format!("  secret  new ({masked}), written to {file} (0600); shown nowhere else\n")
        }
        SecretAction::Replaced => {
            format!("  secret  new ({masked}), written over {file} (0600); shown nowhere else\n")
        }
        SecretAction::Kept if summary.outcome == Outcome::Created => {
            format!("  secret  the one already in {file}\n")
        }
        SecretAction::Kept => format!(
            "  secret  kept in {file}; earshot cannot check it is this subscription's (the \
             platform never returns secrets): if listen answers 401 invalid signature, run setup \
             again with --force\n"
        ),
    });
    let listen = summary.listen;
    let where_from = match listen_from {
        ListenFrom::Flag => format!("it binds {listen}"),
        ListenFrom::Url => format!("it binds {listen}, the URL's address"),
        ListenFrom::Proxy => format!(
            "it binds {listen}: point the proxy that terminates TLS for {url} there, or choose \
             the address with --listen"
        ),
    };
    if let (Some(units), Some(balancer)) = (&summary.systemd_units, &summary.load_balancer) {
        text.push_str(&replicas_text(units, balancer));
        return text;
    }
    text.push_str(&format!(
        "\nRun the observer ({where_from}):\n  {}\n\
         Add --sweep (it needs the API key) to keep the store fresh with no console open,\n\
         --metrics-listen 127.0.0.1:9464 for /healthz and /metrics, and --retention 30d to\n\
         prune what it holds about callers after 30 days (docs/observer.md).\n\n\
         Or as a systemd service:\n{}",
        summary.listen_command,
        summary.systemd_unit.as_deref().unwrap_or_default()
    ));
    text
}

/// The replicas' part of the summary: their units and the backend.
fn replicas_text(units: &[observer_replicas::Unit], balancer: &str) -> String {
    let mut text = format!(
        "\nRun the observer as {} filing into one PostgreSQL store (each event is \
         stored once whichever replica gets it). Put the store's password alone in the file \
         each unit loads (0600; never on a command line), then install the units. Changes made \
         here are recorded in the PostgreSQL store's change log (`earshot changes --store \
         URL`).\n",
        match units.len() {
            1 => "1 replica".to_owned(),
            replicas => format!("{replicas} replicas"),
        }
    );
    for unit in units {
        text.push('\n');
        text.push_str(&unit.text);
    }
    text.push_str(&format!(
        "\nAnd the load balancer in front of them (docs/postgres.md):\n{balancer}"
    ));
    text
}
