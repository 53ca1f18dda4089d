//! The store's rows, made by SQL on the server (`generate_series`), so a
//! million events fill in minutes instead of hours through HTTP.
//!
//! - `events` and `sessions`: the rows earshot's filing path
//!   (`PgStore::file`, what `listen` calls) makes for the deliveries
//!   [`generated`] describes; `verify.rs` files a sample of those
//!   deliveries through that path and checks the rows are the same.
//!   Traffic over the 24 h before the fill, as `benches/store_scale`'s
//!   builder makes it: calls (`call.connected` then `call.ended`, with a
//!   caller's number and two presigned links), WebSocket sessions
//!   (`session.started` then `session.completed`), `call.failed` on 1 %
//!   of events (2 % of sessions end with it) and a rare type,
//!   `*.transferred`, on about 100 events; bodies of 500 to 900 bytes
//!   with the platform's ten headers.
//! - The sweep's tables: SQL that approximates what the sweep records,
//!   not checked against it: two subscriptions, the observer's every
//!   event delivered at its first attempt, the customer's with the
//!   failure mix (401 on everything for 2.4 hours, 1 % answered 503 and
//!   0.5 % timing out elsewhere, each delivered by a second attempt), an
//!   outcome row per event and subscription, the counts by one `GROUP BY`
//!   each with the buckets and keys of the schema's triggers (which are
//!   off for the bulk insert: row by row they took over 15 minutes), and
//!   the 401 incident.

/// The deliveries of events `lo..=hi` (0-based), one row each:
/// `g, event_id, event, session_id, kind, occurred_ms, received_ms,
/// delivery_id, headers, body` (`body` as text). Session `g / 2` has
/// events `2s` and `2s + 1`.
pub fn generated(n: i64, now_ms: i64, lo: i64, hi: i64) -> String {
    let window = 24 * 3_600_000_i64;
    let start = now_ms - window;
    let sessions = (n + 1) / 2;
    format!(
        "
WITH p AS (
    SELECT g, g / 2 AS s, g % 2 AS i,
           mod(hashint8(g / 2)::bigint + 2147483648, 1000) AS roll,
           mod(hashint8(g / 2 + 7919000000)::bigint + 2147483648, 5000) AS rare,
           md5('s' || (g / 2)) AS hs, md5('e' || g) AS he, md5('d' || g) AS hd,
           md5('x' || g) AS hx,
           {start} + (g / 2) * {window} / {sessions} AS began,
           20000 + mod(hashint8(-(g / 2))::bigint + 2147483648, 580000) AS length
    FROM generate_series({lo}::bigint, {hi}::bigint) AS g
), k AS (
    SELECT *,
           CASE WHEN roll < 600 THEN 'call' ELSE 'session' END AS kind,
           CASE WHEN roll < 600 THEN 'call_' ELSE 'ses_' END || hs AS session_id,
           CASE WHEN i = 0 THEN began ELSE least(began + length, {now_ms} - 1000) END
               AS occurred_ms,
           substr(he, 1, 8) || '-' || substr(he, 9, 4) || '-4' || substr(he, 14, 3) || '-8'
               || substr(he, 18, 3) || '-' || substr(he, 21, 12) AS event_id,
           substr(hd, 1, 8) || '-' || substr(hd, 9, 4) || '-4' || substr(hd, 14, 3) || '-8'
               || substr(hd, 18, 3) || '-' || substr(hd, 21, 12) AS delivery_id
    FROM p
), e AS (
    SELECT *,
           CASE WHEN i = 0 AND kind = 'call' THEN 'call.connected'
                WHEN i = 0 THEN 'session.started'
                WHEN rare = 0 THEN kind || '.transferred'
                WHEN roll < 20 THEN 'call.failed'
                WHEN kind = 'call' THEN 'call.ended'
                ELSE 'session.completed' END AS event,
           to_char('epoch'::timestamp + occurred_ms * interval '1 millisecond',
                   'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"+00:00\"') AS stamp,
           to_char('epoch'::timestamp + began * interval '1 millisecond',
                   'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"+00:00\"') AS created
    FROM k
), b AS (
    SELECT *,
           CASE WHEN kind = 'call' THEN format(
               '{{\"event_id\":\"%s\",\"event\":\"%s\",\"timestamp\":\"%s\",\"call\":{{\"call_id\":\"%s\",\"session_id\":\"%s\",\"account_id\":40213,\"agent_id\":\"7c1e4f2a-3b5d-4e6f-8a9b-0c1d2e3f4a5b\",\"status\":\"%s\",\"direction\":\"inbound\",\"from_number\":\"+1555%s\",\"to_number\":\"+15550100\",\"created_at\":\"%s\",\"ended_at\":%s,\"recording_url\":%s,\"transcript_url\":%s}}}}',
               event_id, event, stamp, session_id, session_id,
               CASE event WHEN 'call.connected' THEN 'in-progress'
                          WHEN 'call.ended' THEN 'completed' ELSE 'failed' END,
               lpad(mod(hashint8(g)::bigint + 2147483648, 10000000)::text, 7, '0'),
               created,
               CASE WHEN i = 0 THEN 'null' ELSE '\"' || stamp || '\"' END,
               CASE WHEN event = 'call.ended' THEN '\"' || presigned(session_id, 'recording.wav', hx) || '\"' ELSE 'null' END,
               CASE WHEN event = 'call.ended' THEN '\"' || presigned(session_id, 'transcript.json', md5(hx)) || '\"' ELSE 'null' END)
           ELSE format(
               '{{\"event_id\":\"%s\",\"event\":\"%s\",\"timestamp\":\"%s\",\"session\":{{\"session_id\":\"%s\",\"account_id\":40213,\"agent_id\":\"7c1e4f2a-3b5d-4e6f-8a9b-0c1d2e3f4a5b\",\"status\":\"%s\",\"duration_seconds\":%s,\"public_close_reason\":%s,\"s3_prefix\":null,\"created_at\":\"%s\",\"ended_at\":%s}}}}',
               event_id, event, stamp, session_id,
               CASE WHEN i = 0 THEN 'created' ELSE 'completed' END,
               CASE WHEN i = 0 THEN 'null' ELSE round((occurred_ms - began) / 1000.0, 1)::text END,
               CASE WHEN i = 0 THEN 'null' ELSE '\"client_closed\"' END,
               created,
               CASE WHEN i = 0 THEN 'null' ELSE '\"' || stamp || '\"' END)
           END AS body
    FROM e
)
SELECT g, event_id, event, session_id, kind, occurred_ms, occurred_ms + 180 AS received_ms,
       delivery_id,
       format('[[\"host\",\"observer.example.invalid\"],[\"user-agent\",\"SVC-Webhooks/1.0\"],[\"content-type\",\"application/json\"],[\"content-length\",\"%s\"],[\"accept\",\"*/*\"],[\"accept-encoding\",\"gzip, br\"],[\"x-svc-signature\",\"t=%s,v1=%s\"],[\"x-svc-event\",\"%s\"],[\"x-svc-delivery-id\",\"%s\"],[\"x-forwarded-for\",\"203.0.113.7\"]]',
              octet_length(body), 1700000000 + mod(hashint8(g + 1)::bigint + 2147483648, 100000000),
              md5(hd) || md5(he), event, delivery_id) AS headers,
       body
FROM b"
    )
}

/// A function the generator calls: a presigned link as the platform
/// gives them (about 250 bytes), its parts from the hex `h`.
pub const PRESIGNED: &str = "
CREATE OR REPLACE FUNCTION presigned(call text, what text, h text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
SELECT 'https://artifacts.example.invalid/' || call || '/' || what
    || '?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=' || upper(substr(md5(h || 'c'), 1, 20))
    || '%2F20261205%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261205T000000Z&'
    || 'X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=' || md5(h || 'a') || md5(h || 'b')
$$";

/// Files the generated events `lo..=hi` as `PgStore::file` files them
/// (the key taken first is kept), then their sessions as its upsert
/// leaves them.
pub fn events_and_sessions(n: i64, now_ms: i64, lo: i64, hi: i64) -> String {
    format!(
        "
INSERT INTO earshot.events
    (event_id, event, session_id, occurred_ms, received_ms, delivery_id, headers, body)
SELECT event_id, event, session_id, occurred_ms, received_ms, delivery_id, headers,
       convert_to(body, 'UTF8')
FROM ({}) AS x
ON CONFLICT (event_id, occurred_ms) DO NOTHING;
",
        generated(n, now_ms, lo, hi)
    )
}

/// The sessions of every event, as the filing upsert leaves them: the
/// first event's kind and time, the newest's time, due for a sweep.
pub const SESSIONS: &str = "
INSERT INTO earshot.sessions (session_id, kind, source, first_seen_ms, last_event_ms)
SELECT session_id,
       CASE WHEN session_id LIKE 'call\\_%' THEN 'call' ELSE 'session' END,
       'observer', min(received_ms), max(received_ms)
FROM earshot.events GROUP BY session_id
ON CONFLICT (session_id) DO NOTHING";

/// The sweep's rows (see the module's doc): subscriptions, attempts,
/// outcome rows, the incident; the counts by the triggers.
pub fn sweep_tables(now_ms: i64, observer: &str, customer: &str) -> String {
    let start = now_ms - 24 * 3_600_000;
    let bad_from = start + 36_000_000;
    let bad_to = start + 44_640_000;
    let observer_record = format!(
        "json_build_object('id', delivery_id, 'subscription_id', '{observer}', \
         'session_id', session_id, 'status', 'delivered', 'attempt_count', 1, \
         'http_status_code', 200, 'error', NULL, 'delivered_at', {}, 'next_retry_at', NULL, \
         'created_at', {})::text",
        stamp("occurred_ms + 240"),
        stamp("occurred_ms + 150")
    );
    let counts = counts();
    format!(
        "
INSERT INTO earshot.subscriptions (id, url, events, enabled, secret_version, seen_ms, record)
VALUES ('{observer}', 'https://observer.example.invalid/hooks', '[\"*\"]', true, 1, {now_ms},
        json_build_object('id', '{observer}', 'url', 'https://observer.example.invalid/hooks',
                          'events', json_build_array('*'), 'enabled', true)::text),
       ('{customer}', 'https://customer.example.invalid/hooks', '[\"*\"]', true, 1, {now_ms},
        json_build_object('id', '{customer}', 'url', 'https://customer.example.invalid/hooks',
                          'events', json_build_array('*'), 'enabled', true)::text)
ON CONFLICT DO NOTHING;

CREATE TEMPORARY TABLE answers AS
SELECT event_id, event, session_id, occurred_ms, delivery_id,
       CASE WHEN occurred_ms >= {bad_from} AND occurred_ms < {bad_to} THEN 'unauthorized'
            WHEN mod(hashint8(hashtext(event_id)::bigint)::bigint + 2147483648, 1000) < 10 THEN '503'
            WHEN mod(hashint8(hashtext(event_id)::bigint)::bigint + 2147483648, 1000) < 15 THEN 'timeout'
            ELSE 'ok' END AS answer,
       md5('c' || event_id) AS hc
FROM earshot.events;

-- The count triggers fire per row and upsert one count row again and
-- again in this one transaction (over 15 minutes for 2,000,000 attempts
-- here): off for the bulk insert, the counts made after by the same
-- buckets and keys with one GROUP BY each. So is schema 10's
-- `event_outcomes_listed`, which updates the one row of `list_changes`
-- per outcome row: each update in one transaction scans every version
-- the earlier ones left (quadratic: the fill of pg16 and pg19 never got
-- past the outcome rows); bumped once after instead.
ALTER TABLE earshot.deliveries DISABLE TRIGGER deliveries_counted;
ALTER TABLE earshot.event_outcomes DISABLE TRIGGER event_outcomes_counted;
ALTER TABLE earshot.event_outcomes DISABLE TRIGGER event_outcomes_listed;

INSERT INTO earshot.deliveries (id, subscription_id, session_id, status, attempt_count,
    http_status_code, error, created_ms, next_retry_ms, delivered_ms, record)
SELECT delivery_id, '{observer}', session_id, 'delivered', 1, 200, NULL::text,
       occurred_ms + 150, NULL::bigint, occurred_ms + 240, {observer_record}
FROM answers
UNION ALL
SELECT hc || '-1', '{customer}', session_id,
       CASE WHEN answer = 'ok' THEN 'delivered' ELSE 'failed' END, 1,
       CASE answer WHEN 'ok' THEN 200 WHEN 'unauthorized' THEN 401 WHEN '503' THEN 503 END,
       CASE answer WHEN 'unauthorized' THEN 'HTTP 401: invalid signature'
                   WHEN '503' THEN 'HTTP 503: service unavailable'
                   WHEN 'timeout' THEN 'timeout: no answer within 15 s' END,
       occurred_ms + 153, NULL, CASE WHEN answer = 'ok' THEN occurred_ms + 243 END, '{{}}'
FROM answers
UNION ALL
SELECT hc || '-2', '{customer}', session_id, 'delivered', 2, 200, NULL, occurred_ms + 5153,
       NULL, occurred_ms + 5243, '{{}}'
FROM answers WHERE answer IN ('503', 'timeout') AND occurred_ms + 5153 <= {now_ms};

INSERT INTO earshot.event_outcomes (session_id, subscription_id, event_key, event_id, event,
    occurred_ms, state, attempts, http_status_code, error_class, first_failure_ms,
    last_failure_ms, settled_ms)
SELECT session_id, '{observer}', event_id, event_id, event, occurred_ms, 'delivered', 1, 200, '',
       NULL::bigint, NULL::bigint, occurred_ms + 240
FROM answers
UNION ALL
SELECT session_id, '{customer}', event_id, event_id, event, occurred_ms,
       CASE WHEN answer = 'unauthorized' THEN 'missed' ELSE 'delivered' END,
       CASE WHEN answer IN ('ok', 'unauthorized') THEN 1 ELSE 2 END,
       CASE WHEN answer = 'unauthorized' THEN 401 ELSE 200 END, '',
       CASE WHEN answer <> 'ok' THEN occurred_ms + 153 END,
       CASE WHEN answer <> 'ok' THEN occurred_ms + 153 END,
       CASE WHEN answer = 'unauthorized' THEN occurred_ms + 153 ELSE occurred_ms + 243 END
FROM answers;

INSERT INTO earshot.incidents (id, subscription_id, http_status_code, error_class,
    first_seen_ms, last_seen_ms, resolved_ms, resolved_reason)
SELECT 'inc-401', '{customer}', 401, '', min(occurred_ms) + 153, max(occurred_ms) + 153,
       max(occurred_ms) + 600153, 'delivered again'
FROM answers WHERE answer = 'unauthorized'
ON CONFLICT DO NOTHING;
DROP TABLE answers;

ALTER TABLE earshot.deliveries ENABLE TRIGGER deliveries_counted;
ALTER TABLE earshot.event_outcomes ENABLE TRIGGER event_outcomes_counted;
ALTER TABLE earshot.event_outcomes ENABLE TRIGGER event_outcomes_listed;
UPDATE earshot.list_changes SET n = n + 1;
{counts}
"
    )
}

/// RFC 3339 text of the Unix milliseconds `ms` (an SQL expression).
fn stamp(ms: &str) -> String {
    format!(
        "to_char('epoch'::timestamp + ({ms}) * interval '1 millisecond', \
         'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"+00:00\"')"
    )
}

/// The minute and hour counts of the attempts and outcome rows, as the
/// triggers of schema 6 would have made them row by row: the same
/// buckets, keys, error class and example (the newest row's session).
fn counts() -> String {
    let mut sql = String::new();
    for (table, unit, per_ms) in [
        ("delivery_counts", "minute", 60_000),
        ("delivery_counts_hourly", "hour", 3_600_000),
    ] {
        sql.push_str(&format!(
            "
INSERT INTO earshot.{table} ({unit}, subscription_id, status, http_status_code, error_class,
    count, last_ms, example_session_id)
SELECT created_ms / {per_ms}, subscription_id, status, coalesce(http_status_code, 0),
       CASE WHEN http_status_code IS NOT NULL OR error IS NULL THEN ''
            WHEN lower(error COLLATE \"C\") LIKE 'timeout%' THEN 'timeout'
            WHEN lower(error COLLATE \"C\") LIKE 'connection error%' THEN 'connection error'
            ELSE substr(error, 1, 8) END,
       count(*), max(created_ms), (array_agg(session_id ORDER BY created_ms DESC))[1]
FROM earshot.deliveries GROUP BY 1, 2, 3, 4, 5;
"
        ));
    }
    for (table, unit, per_ms) in [
        ("event_counts", "minute", 60_000),
        ("event_counts_hourly", "hour", 3_600_000),
    ] {
        sql.push_str(&format!(
            "
INSERT INTO earshot.{table} ({unit}, subscription_id, state, event, http_status_code,
    error_class, count, last_ms, example_session_id)
SELECT occurred_ms / {per_ms}, subscription_id, state, coalesce(event, ''), http_status_code,
       error_class, count(*), max(occurred_ms),
       (array_agg(session_id ORDER BY occurred_ms DESC))[1]
FROM earshot.event_outcomes GROUP BY 1, 2, 3, 4, 5, 6;
"
        ));
    }
    sql
}
