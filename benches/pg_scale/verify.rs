//! The check that the generated rows are the filing path's: the first
//! `SAMPLE` generated deliveries are read by `ObservedEvent::from_delivery`
//! (what `listen` does with a request) and filed by `PgStore::file` (what
//! it calls) before the bulk insert; the read must name the event, its
//! type, session, kind and time as the generator did, and after the bulk
//! insert (which keeps a key filed first) every sampled row and session
//! must equal what the generator and the session rule give.

use earshot_core::store::events::ObservedEvent;
use earshot_core::store::postgres::PgStore;
use tokio_postgres::Client;

use crate::BenchError;
use crate::fill;

/// Deliveries filed through the real path: whole sessions (two each).
pub const SAMPLE: i64 = 200;

/// Files the sample through `PgStore::file`; errors when a delivery does
/// not read as the generator says.
pub async fn file_sample(
    client: &Client,
    store: &PgStore,
    n: i64,
    now_ms: i64,
) -> Result<(), BenchError> {
    let rows = client
        .query(&fill::generated(n, now_ms, 0, SAMPLE - 1), &[])
        .await?;
    for row in rows {
        let headers: Vec<(String, String)> = serde_json::from_str(row.get(8))?;
        let body: String = row.get(9);
        let delivery_id: String = row.get(7);
        let received_ms: i64 = row.get(6);
        let event =
            ObservedEvent::from_delivery(body.as_bytes(), headers, Some(delivery_id), received_ms)
                .ok_or("a generated delivery does not read as an event")?;
        let claimed = (
            row.get::<_, String>(1),
            row.get::<_, String>(2),
            row.get::<_, String>(3),
            row.get::<_, String>(4),
            row.get::<_, i64>(5),
        );
        let read = (
            event.event_id.clone(),
            event.event.clone(),
            event.session_id.clone(),
            event.kind.to_owned(),
            event.occurred_ms,
        );
        if claimed != read {
            return Err(format!("generated {claimed:?}, read as {read:?}").into());
        }
        store.file(&event).await?;
    }
    Ok(())
}

/// After the fill: how many sampled events and sessions differ from what
/// the generator and the session rule give (both must be 0).
pub async fn differences(client: &Client, n: i64, now_ms: i64) -> Result<(i64, i64), BenchError> {
    let events = client
        .query_one(
            &format!(
                "SELECT count(*) FROM ({}) AS g
                 LEFT JOIN earshot.events AS e USING (event_id, occurred_ms)
                 WHERE e.event_id IS NULL
                    OR (e.event, e.session_id, e.received_ms, e.delivery_id, e.headers, e.body)
                       IS DISTINCT FROM
                       (g.event, g.session_id, g.received_ms, g.delivery_id, g.headers,
                        convert_to(g.body, 'UTF8'))",
                fill::generated(n, now_ms, 0, SAMPLE - 1)
            ),
            &[],
        )
        .await?
        .get(0);
    let sessions = client
        .query_one(
            &format!(
                "SELECT count(*) FROM (
                     SELECT session_id, min(kind) AS kind, min(received_ms) AS first,
                            max(received_ms) AS last
                     FROM ({}) AS g GROUP BY session_id) AS g
                 LEFT JOIN earshot.sessions AS s USING (session_id)
                 WHERE s.session_id IS NULL
                    OR (s.kind, s.source, s.first_seen_ms, s.last_event_ms, s.last_swept_ms,
                        s.unsettled)
                       IS DISTINCT FROM (g.kind, 'observer', g.first, g.last, NULL, true)",
                fill::generated(n, now_ms, 0, SAMPLE - 1)
            ),
            &[],
        )
        .await?
        .get(0);
    Ok((events, sessions))
}
