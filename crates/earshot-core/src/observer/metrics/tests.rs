use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;

use super::*;
use crate::receiver::capture::CaptureEntry;

fn request(
    kind: Kind,
    verdict: VerdictCode,
    reason: Option<&str>,
    event: Option<&str>,
) -> Received {
    Received {
        entry: CaptureEntry {
            status: 200,
            kind,
            verdict,
            reason: reason.map(str::to_owned),
            event: event.map(str::to_owned),
            duplicate: verdict == VerdictCode::Duplicate,
            ..CaptureEntry::unjudged(
                "2026-11-25T01:00:00.000Z".into(),
                1_795_568_400,
                "127.0.0.1:4000".into(),
                "POST".into(),
                "/".into(),
                Vec::new(),
            )
        },
        body: Bytes::new(),
        signature: None,
        capture_error: None,
        store_error: None,
        unfiled: None,
    }
}

/// The value of the sample line `series` (name and labels as rendered).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

fn store_covered() -> (tempfile::TempDir, Arc<StoreHealth>, Metrics) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    std::fs::write(&db, vec![0u8; 8192]).unwrap();
    std::fs::write(side_file(&db, "-wal"), vec![0u8; 1000]).unwrap();
    let health = Arc::new(StoreHealth::default());
    let metrics = Metrics::new(Covered {
        store: Some((Some(db), health.clone())),
        sweep: true,
        words_waiting: Some(Arc::new(AtomicUsize::new(40_000))),
        ..Covered::default()
    });
    (dir, health, metrics)
}

#[test]
fn each_verdict_lands_in_its_counter() {
    let metrics = Metrics::new(Covered::default());
    let agents = |verdict, reason, event| request(Kind::Agents, verdict, reason, event);
    metrics.answered(&agents(VerdictCode::Ok, None, Some("call.ended")));
    metrics.answered(&agents(VerdictCode::Ok, None, Some("call.ended")));
    metrics.answered(&agents(VerdictCode::Ok, None, Some("agent.updated")));
    metrics.answered(&agents(VerdictCode::Duplicate, None, Some("call.ended")));
    let stale = agents(
        VerdictCode::InvalidSignature,
        Some("timestamp_too_old"),
        None,
    );
    metrics.answered(&stale);
    let forged = agents(
        VerdictCode::InvalidSignature,
        Some("no_matching_signature"),
        None,
    );
    metrics.answered(&forged);
    metrics.answered(&agents(
        VerdictCode::MalformedPayload,
        Some("not_json"),
        None,
    ));
    metrics.answered(&request(
        Kind::Other,
        VerdictCode::MethodNotAllowed,
        None,
        None,
    ));
    metrics.answered(&request(
        Kind::Prerecorded,
        VerdictCode::AuthFailed,
        None,
        None,
    ));
    metrics.answered(&request(Kind::Prerecorded, VerdictCode::Ok, None, None));
    let text = metrics.render(Format::PrometheusText).unwrap();
    let expect = [
        (r#"earshot_events_received_total{event="call.ended"}"#, 2.0),
        (r#"earshot_events_received_total{event="other"}"#, 1.0),
        (
            r#"earshot_events_received_total{event="session.started"}"#,
            0.0,
        ),
        ("earshot_duplicate_deliveries_total", 1.0),
        (r#"earshot_requests_rejected_total{reason="stale"}"#, 1.0),
        (
            r#"earshot_requests_rejected_total{reason="bad_signature"}"#,
            1.0,
        ),
        (
            r#"earshot_requests_rejected_total{reason="malformed"}"#,
            1.0,
        ),
        (r#"earshot_requests_rejected_total{reason="other"}"#, 1.0),
        (
            r#"earshot_requests_rejected_total{reason="auth_failed"}"#,
            1.0,
        ),
        ("earshot_prerecorded_webhooks_received_total", 1.0),
        ("earshot_last_event_timestamp_seconds", 1_795_568_400.0),
    ];
    for (series, value) in expect {
        assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
    }
    assert!(
        !text.contains("earshot_store_"),
        "no store, no store metrics"
    );
    assert!(
        !text.contains("earshot_sweep"),
        "no sweep, no sweep metrics"
    );
}

#[test]
fn store_metrics_read_the_files_and_the_health_at_each_scrape() {
    let (_dir, health, metrics) = store_covered();
    metrics.stored(Duration::from_millis(3), None);
    metrics.stored(Duration::from_millis(40), Some("disk I/O error"));
    let text = metrics.render(Format::OpenMetrics).unwrap();
    assert_eq!(
        sample(&text, "earshot_store_size_bytes"),
        Some(9192.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "earshot_store_write_seconds_count"),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, r#"earshot_store_write_seconds_bucket{le="0.005"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "earshot_store_write_failures_total"),
        Some(1.0)
    );
    assert_eq!(sample(&text, "earshot_store_writable"), Some(0.0), "{text}");
    assert_eq!(
        sample(&text, "earshot_store_words_waiting"),
        Some(40_000.0),
        "{text}"
    );
    health.note_probe(Ok(()));
    let text = metrics.render(Format::OpenMetrics).unwrap();
    assert_eq!(
        sample(&text, "earshot_store_writable"),
        Some(0.0),
        "a passing probe does not clear a failed write"
    );
    metrics.stored(Duration::from_millis(3), None);
    health.note_write(None);
    let text = metrics.render(Format::OpenMetrics).unwrap();
    assert_eq!(sample(&text, "earshot_store_writable"), Some(1.0));
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn subscription_gauges_are_replaced_whole_after_each_sweep() {
    let (_dir, _health, metrics) = store_covered();
    let totals = |id: &str, enabled, events| SubscriptionTotals {
        subscription_id: id.to_owned(),
        enabled,
        events,
    };
    metrics.set_subscriptions(vec![
        totals("sub_a", true, [5, 1, 2, 0, 0]),
        totals("sub_b", false, [0, 0, 0, 0, 3]),
    ]);
    let report = SweepReport {
        requests: 7,
        left_for_later: 2,
        ..SweepReport::default()
    };
    metrics.swept(Some(&report), false, 1_795_568_400_000);
    metrics.swept(None, true, 1_795_568_460_000);
    let text = metrics.render(Format::PrometheusText).unwrap();
    let series = |id: &str, state: &str| {
        format!(r#"earshot_subscription_events{{subscription="{id}",state="{state}"}}"#)
    };
    assert_eq!(sample(&text, &series("sub_a", "delivered")), Some(5.0));
    assert_eq!(sample(&text, &series("sub_a", "pending")), Some(1.0));
    assert_eq!(sample(&text, &series("sub_a", "missed")), Some(2.0));
    assert_eq!(sample(&text, &series("sub_b", "unknown")), Some(3.0));
    assert_eq!(sample(&text, "earshot_subscriptions_enabled"), Some(1.0));
    assert_eq!(sample(&text, "earshot_sweeps_total"), Some(2.0));
    assert_eq!(sample(&text, "earshot_sweep_errors_total"), Some(1.0));
    assert_eq!(sample(&text, "earshot_sweep_requests_total"), Some(7.0));
    assert_eq!(sample(&text, "earshot_sweep_sessions_due"), Some(2.0));
    assert_eq!(
        sample(&text, "earshot_sweep_last_success_timestamp_seconds"),
        Some(1_795_568_400.0)
    );
    metrics.set_subscriptions(vec![totals("sub_b", true, [1, 0, 0, 0, 0])]);
    let text = metrics.render(Format::PrometheusText).unwrap();
    assert_eq!(sample(&text, &series("sub_a", "delivered")), None, "{text}");
    assert_eq!(sample(&text, &series("sub_b", "delivered")), Some(1.0));
}

#[test]
fn help_texts_need_no_escaping_in_either_format() {
    let (_dir, _health, metrics) = store_covered();
    metrics.set_subscriptions(vec![SubscriptionTotals {
        subscription_id: "sub_a".into(),
        enabled: true,
        events: [1; 5],
    }]);
    for format in [Format::OpenMetrics, Format::PrometheusText] {
        let text = metrics.render(format).unwrap();
        let helps: Vec<&str> = text.lines().filter(|l| l.starts_with("# HELP ")).collect();
        assert_eq!(helps.len(), 19, "{text}");
        for help in helps {
            let words: Vec<&str> = help.splitn(4, ' ').collect();
            assert!(words[2].starts_with("earshot_"), "{help}");
            assert!(!words[3].contains(['"', '\\']), "{help}");
            assert!(!words[3].ends_with(".."), "{help}");
        }
    }
}

#[test]
fn openmetrics_only_when_the_client_asks_for_it() {
    let prometheus = "application/openmetrics-text;version=1.0.0;q=0.5,\
                      text/plain;version=0.0.4;q=0.3,*/*;q=0.1";
    assert_eq!(Format::from_accept(Some(prometheus)), Format::OpenMetrics);
    assert_eq!(Format::from_accept(None), Format::PrometheusText);
    assert_eq!(Format::from_accept(Some("*/*")), Format::PrometheusText);
    assert_eq!(
        Format::from_accept(Some("text/plain; version=0.0.4")),
        Format::PrometheusText
    );
}

#[test]
fn the_maintenance_lease_and_the_retention_are_rendered() {
    let gauges = Arc::new(MaintenanceGauges::default());
    let metrics = Metrics::new(Covered {
        maintenance: Some(gauges.clone()),
        ..Covered::default()
    });
    let text = metrics.render(Format::OpenMetrics).unwrap();
    assert!(
        text.contains("\nearshot_maintenance_lease_held 0\n"),
        "{text}"
    );
    assert!(
        !text.contains("earshot_maintenance_lease_holder{"),
        "{text}"
    );
    gauges.update(|now| {
        now.held = true;
        now.holder = Some("box:42".into());
        now.retention_last_run_ms = Some(1_500);
        now.retention_last_freed_bytes = 8192;
        now.retention_freed_bytes = 16384;
        now.retention_runs = 2;
    });
    let text = metrics.render(Format::OpenMetrics).unwrap();
    for line in [
        "earshot_maintenance_lease_held 1",
        "earshot_maintenance_lease_holder{holder=\"box:42\"} 1",
        "earshot_retention_last_run_timestamp_seconds 1.5",
        "earshot_retention_last_freed_bytes 8192",
        "earshot_retention_freed_bytes_total 16384",
        "earshot_retention_runs_total 2",
        "earshot_retention_failures_total 0",
    ] {
        assert!(text.lines().any(|each| each == line), "{line} in {text}");
    }
}

/// A collector over fixed figures: what the scrape of a PostgreSQL
/// replica renders once it has read `earshot.sweep_figures`.
#[derive(Debug)]
struct FixedSweeps(crate::store::postgres::StoreSweeps);

impl Collector for FixedSweeps {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        store_sweeps::render(&self.0, encoder)
    }
}

fn rendered_sweeps(figures: crate::store::postgres::StoreSweeps) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(FixedSweeps(figures)));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

#[test]
fn a_stores_sweep_figures_are_rendered_by_holder_with_the_newest_success_unlabelled() {
    use crate::store::postgres::{HolderSweeps, StoreSweeps};
    let none = rendered_sweeps(StoreSweeps::default());
    for line in [
        "earshot_sweep_last_success_timestamp_seconds 0.0",
        "earshot_sweep_sessions_due 0",
    ] {
        assert!(none.lines().any(|each| each == line), "{line} in {none}");
    }
    assert!(!none.contains("holder="), "{none}");
    let row = |holder: &str, runs, last_run_ms, sessions_due| HolderSweeps {
        holder: holder.to_owned(),
        runs,
        errors: 1,
        requests: 10 * runs,
        sessions_due,
        last_run_ms,
    };
    let text = rendered_sweeps(StoreSweeps {
        holders: vec![row("b:2", 3, 9_000, 4), row("a:1", 5, 2_500, 7)],
        last_success_ms: Some(8_500),
    });
    for line in [
        "earshot_sweep_last_success_timestamp_seconds 8.5",
        "earshot_sweep_sessions_due 4",
        "earshot_sweeps_total{holder=\"b:2\"} 3",
        "earshot_sweeps_total{holder=\"a:1\"} 5",
        "earshot_sweep_errors_total{holder=\"a:1\"} 1",
        "earshot_sweep_requests_total{holder=\"b:2\"} 30",
        "earshot_sweep_last_run_timestamp_seconds{holder=\"b:2\"} 9.0",
        "earshot_sweep_last_run_timestamp_seconds{holder=\"a:1\"} 2.5",
    ] {
        assert!(text.lines().any(|each| each == line), "{line} in {text}");
    }
}

/// A collector over fixed figures: what the scrape of a PostgreSQL
/// replica renders once it has read the silence and the totals.
#[derive(Debug)]
struct FixedObserver(store_observer::ObserverFigures);

impl Collector for FixedObserver {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        store_observer::render(&self.0, encoder)
    }
}

/// The lines (HELP and TYPE included) of the families named `prefixes`.
fn lines_of(text: &str, prefixes: &[&str]) -> Vec<String> {
    text.lines()
        .filter(|line| {
            let name = line
                .strip_prefix("# HELP ")
                .or_else(|| line.strip_prefix("# TYPE "))
                .or_else(|| line.strip_prefix("# UNIT "))
                .unwrap_or(line);
            prefixes.iter().any(|prefix| name.starts_with(prefix))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_stores_silence_and_subscription_figures_render_as_sqlites() {
    let totals = vec![
        SubscriptionTotals {
            subscription_id: "sub_a".to_owned(),
            enabled: true,
            events: [4, 1, 2, 0, 3],
        },
        SubscriptionTotals {
            subscription_id: "sub_b".to_owned(),
            enabled: false,
            events: [0; 5],
        },
    ];
    let families = ["earshot_observer_silent", "earshot_subscription"];
    for silent_since_ms in [Some(1_234_500), None] {
        let sqlite = Metrics::new(Covered {
            sweep: true,
            ..Covered::default()
        });
        sqlite.set_silence(silent_since_ms);
        sqlite.set_subscriptions(totals.clone());
        let sqlite = sqlite.render(Format::OpenMetrics).unwrap();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(FixedObserver(store_observer::ObserverFigures {
            silent_since_ms,
            subscriptions: totals.clone(),
        })));
        let mut postgres = String::new();
        prometheus_client::encoding::text::encode(&mut postgres, &registry).unwrap();
        let expected = lines_of(&sqlite, &families);
        // Each family's HELP and TYPE (and the timestamp's UNIT), the two
        // silence gauges, the enabled count and 2 × 5 per-state series.
        assert_eq!(expected.len(), 3 + 4 + 3 + 2 + 10, "{sqlite}");
        assert_eq!(lines_of(&postgres, &families), expected, "{postgres}");
    }
}
