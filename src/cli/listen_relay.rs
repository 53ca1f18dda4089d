//! `listen --store --forward-to`: the relay that passes stored events on
//! to the app ([`earshot_core::receiver::relay`]) and what it prints: a
//! line on stdout for each event the app took (with `--json`, a JSON
//! line), and on stderr when the app stops taking events (the queue and
//! since when) and when it takes them again. On a PostgreSQL store the
//! relay runs on the replica holding the forwarding lease
//! ([`super::listen_pg_relay`]).

use std::path::Path;
use std::sync::Arc;

use earshot_core::clock_text::utc_clock;
use earshot_core::duration_text;
use earshot_core::receiver::listen::Forward;
use earshot_core::receiver::relay::{Relay, RelayNote, RelayedEvent};
use tokio::sync::mpsc;

use earshot_core::store::postgres::PgStore;

use super::bounded_stdout::BoundedStdout;
use super::listen_pg_relay::PgForwarding;

/// Notes that may wait for the printer.
const NOTES: usize = 256;

/// A running relay (on a file) or the forwarding lease's relay (on
/// PostgreSQL), and its notes.
pub(super) struct Relaying {
    running: Running,
    notes: mpsc::Receiver<RelayNote>,
}

enum Running {
    File(Relay),
    Postgres(PgForwarding),
}

impl Relaying {
    /// Starts the relay from the store at `path` along `forward`.
    pub(super) fn start(path: &Path, forward: Arc<Forward>) -> color_eyre::Result<Relaying> {
        let (send, notes) = mpsc::channel(NOTES);
        let key = forward.routes().key();
        let relay = Relay::start(path.to_owned(), key, forward, send)?;
        eprintln!(
            "forwarding stored events to your app in the order received; while it is down or \
             refuses one, they wait in the store"
        );
        Ok(Relaying {
            running: Running::File(relay),
            notes,
        })
    }

    /// Starts taking part in the forwarding lease on the PostgreSQL
    /// `store`: this replica relays while it holds it
    /// ([`super::listen_pg_relay`]). First, before anything is received,
    /// the app gets a place at the newest event if it has none, so what
    /// this replica files before the lease is taken is forwarded.
    pub(super) async fn start_postgres(
        store: PgStore,
        forward: Arc<Forward>,
    ) -> color_eyre::Result<Relaying> {
        let key = forward.routes().key();
        store
            .relay_place_if_none(&key, earshot_core::store::now_ms())
            .await?;
        let (send, notes) = mpsc::channel(NOTES);
        let holder = super::listen_lease::holder_name();
        let forwarding = PgForwarding::start(store, forward, holder, send);
        eprintln!(
            "forwarding stored events to your app in the order stored, from one replica at a \
             time; while the app is down or refuses one, they wait in the store"
        );
        Ok(Relaying {
            running: Running::Postgres(forwarding),
            notes,
        })
    }

    /// Stops relaying (and gives the forwarding lease up).
    pub(super) async fn stop(self) {
        match self.running {
            Running::File(relay) => drop(relay),
            Running::Postgres(forwarding) => forwarding.stop().await,
        }
    }

    /// The next note; never, without a relay.
    pub(super) async fn next(relaying: &mut Option<Relaying>) -> Option<RelayNote> {
        match relaying {
            Some(relaying) => relaying.notes.recv().await,
            None => std::future::pending().await,
        }
    }
}

/// Prints what the relay said.
pub(super) fn print(
    out: &mut BoundedStdout,
    note: &RelayNote,
    json: bool,
) -> color_eyre::Result<()> {
    match note {
        RelayNote::Taken { event, forwarded } => {
            if !out.has_room() {
                out.skip();
            } else if json {
                out.print(serde_json::to_string(&serde_json::json!({
                    "forwarded_from_store": true,
                    "seq": event.seq,
                    "event_id": event.event_id,
                    "event": event.event,
                    "session_id": event.session_id,
                    "verdict": "ok",
                    "app": forwarded,
                }))?);
            } else {
                let app = super::listen::app_text(forwarded);
                out.print(format!(
                    "{}  {:<20} {}  forwarded from the store{app}",
                    utc_clock(earshot_core::store::now_ms()),
                    event.event,
                    short(event)
                ));
            }
        }
        RelayNote::Stalled {
            event,
            forwarded,
            since_ms,
            queued,
        } => say(&format!(
            "the app did not take {} {} ({}): sent again every few seconds; {queued} queued · \
             app refusing since {} UTC",
            event.event,
            short(event),
            super::listen::app_text(forwarded).trim(),
            utc_clock(*since_ms)
        )),
        RelayNote::Resumed { stalled_ms, queued } => say(&format!(
            "the app takes events again after {}; forwarding the {queued} queued",
            duration_text::of_millis(*stalled_ms as f64)
        )),
        RelayNote::Resuming { queued } => say(&format!(
            "{queued} stored events your app has not taken yet go first (where the last run \
             stopped)"
        )),
        RelayNote::StoreFailed(error) => say(&format!("forwarding from the store: {error}")),
    }
    Ok(())
}

fn short(event: &RelayedEvent) -> String {
    event.event_id.chars().take(8).collect()
}

fn say(line: &str) {
    eprintln!("earshot listen: {}", super::output::plain(line));
}
