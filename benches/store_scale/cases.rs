//! The filters an operator types on the Events list, each with the same
//! rows in plain SQL along the same indexes: shared by the whole-process
//! timings (`timing.rs`, `earshot events --limit 100`) and the in-process
//! ones (`list.rs`, the console's read of 5,000 rows).

use super::builder::CUSTOMER_SUB;

/// Which rows the plain SQL reads first.
enum Along {
    /// The events' own indexes, with a condition on `e`.
    Events(String),
    /// The outcomes' (state, time) index, with a condition on `o`.
    Outcomes(String),
}

/// One filter: what is typed, and the reference's condition.
pub struct ListCase {
    pub name: &'static str,
    /// The words typed (`earshot events WORD…`, the pane's `/` prompt).
    pub typed: Vec<String>,
    along: Along,
}

impl ListCase {
    /// The typed words as the prompt holds them.
    pub fn query(&self) -> String {
        self.typed.join(" ")
    }

    /// The newest `limit` events passing the filter since `since_ms`, then
    /// every outcome row of each, newest event first: one row per event
    /// and subscription, the event id first.
    pub fn sql(&self, since_ms: i64, limit: usize) -> String {
        let picked = match &self.along {
            Along::Events(condition) => format!(
                "SELECT e.event_id, e.occurred_ms FROM events e
                 WHERE e.occurred_ms >= {since_ms} AND {condition}
                 ORDER BY e.occurred_ms DESC, e.event_id DESC LIMIT {limit}"
            ),
            Along::Outcomes(condition) => format!(
                "SELECT DISTINCT o.event_id, o.occurred_ms FROM event_outcomes o
                 WHERE o.event_id IS NOT NULL AND o.occurred_ms >= {since_ms} AND {condition}
                 ORDER BY o.occurred_ms DESC, o.event_id DESC LIMIT {limit}"
            ),
        };
        format!(
            "WITH picked AS ({picked})
             SELECT p.event_id, e.event, e.session_id, o.subscription_id, o.state, o.attempts
             FROM picked p JOIN events e ON e.occurred_ms = p.occurred_ms AND e.event_id = p.event_id
             JOIN sessions s ON s.session_id = e.session_id
             LEFT JOIN event_outcomes o
                 ON o.session_no = s.session_no AND o.event_id = p.event_id
             ORDER BY p.occurred_ms DESC, p.event_id DESC;"
        )
    }
}

/// Every filter, `now_ms` being the time `since:` counts back from.
pub fn list_cases(now_ms: i64) -> Vec<ListCase> {
    let case = |name, typed: &[&str], along| ListCase {
        name,
        typed: typed.iter().map(|word| (*word).to_owned()).collect(),
        along,
    };
    let short = format!("sub:{}", &CUSTOMER_SUB[..8]);
    vec![
        case("events (no filter)", &[], Along::Events("1".into())),
        case(
            "events status:missed",
            &["status:missed"],
            Along::Outcomes("o.state = 'missed'".into()),
        ),
        case(
            "events sub:… status:missed",
            &[&short, "status:missed"],
            Along::Outcomes(format!(
                "o.subscription_id = '{CUSTOMER_SUB}' AND o.state = 'missed'"
            )),
        ),
        case(
            "events type:call.failed (1 %)",
            &["type:call.failed"],
            Along::Events("e.event = 'call.failed'".into()),
        ),
        case(
            "events since:1h",
            &["since:1h"],
            Along::Events(format!("e.occurred_ms >= {}", now_ms - 3_600_000)),
        ),
        // Along the same free-text index.
        case(
            "events free text (one session)",
            &["00000004d2"],
            Along::Events(
                "e.rowid IN (SELECT rowid FROM event_words WHERE event_words MATCH '\"00000004d2\"')"
                    .into(),
            ),
        ),
    ]
}
