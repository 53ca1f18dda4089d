//! `earshot incidents ID [--ascii] [--json]`: one incident on a time axis
//! (`history::incident_timeline`): its subscription's events per bucket
//! from the first failure to now as a sparkline, and under it, each at
//! its bucket, what the change log and the acknowledgement say happened
//! meanwhile.

use earshot_core::api::short_id;
use earshot_core::clock_text::{utc_clock, utc_datetime, utc_minute};
use earshot_core::duration_text;
use earshot_core::history::incident_timeline::{IncidentTimeline, TimelineMark};
use earshot_core::history::incidents::Incident;
use earshot_core::history::sparkline::{self, Glyphs};

/// How many buckets the line has at most.
pub(crate) const COLUMNS: usize = 60;

/// The incident, its chart and the marks under it.
pub(crate) fn text(incident: &Incident, chart: &IncidentTimeline, glyphs: Glyphs) -> String {
    let state = match &incident.resolved_reason {
        Some(reason) => format!("resolved: {reason}"),
        None => incident.state.as_str().to_owned(),
    };
    let mut text = format!(
        "incident {} · {} · {state}\n{}\nfirst seen {} · last seen {} · {} missed · {} \
         recovered · {} retrying\n",
        incident.id,
        short_id(&incident.subscription_id),
        incident.diagnosis,
        utc_datetime(incident.first_seen_ms),
        utc_datetime(incident.last_seen_ms),
        incident.missed,
        incident.recovered,
        incident.retrying,
    );
    let end_ms = chart.start_ms + chart.bucket_ms * chart.buckets.len() as i64;
    text.push_str(&format!(
        "\nevents of {} per {} from {} to {} UTC, one character each: {}\n  {}\n",
        short_id(&incident.subscription_id),
        duration_text::of_millis(chart.bucket_ms as f64),
        utc_minute(chart.start_ms),
        utc_minute(end_ms),
        glyphs.legend(),
        sparkline::line(&chart.buckets, glyphs),
    ));
    for mark in &chart.marks {
        text.push_str(&mark_line(mark));
    }
    if chart.marks.is_empty() {
        text.push_str("  (no change to this subscription recorded since the first failure)\n");
    }
    text
}

/// `^ 08:20:00 rotate by alice: secret v1 → v2`, the `^` under its bucket.
fn mark_line(mark: &TimelineMark) -> String {
    let said = format!(
        "{} {} by {}{}",
        utc_clock(mark.at_ms),
        mark.action,
        mark.operator,
        if mark.detail.is_empty() {
            String::new()
        } else {
            format!(": {}", mark.detail)
        }
    );
    match mark.column {
        Some(column) => format!("  {}^ {said}\n", " ".repeat(column)),
        None => format!("  ^ {said} (before the first column)\n"),
    }
}
