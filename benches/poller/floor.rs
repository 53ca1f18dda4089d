//! The floor: a lower bound on the lags of any poller with earshot's
//! budget and these round trips.

use std::time::Instant;

use crate::platform::Scenario;
use crate::report::Run;
use crate::{ACCOUNT_WINDOW, BUDGET, ROUND_TRIP};

/// The floor: a lower bound on the lags of any poller with earshot's
/// budget and these round trips, however much it knows. An answer comes
/// back at least half the shortest round trip after the platform read the
/// state, and one request shows one job, so at most two changes. Within a
/// 300 s window, the changes in its first `300 − x` seconds can only be seen
/// within `x` by requests inside the window, at most 2 × budget of them; the
/// surplus, summed over a tiling of windows (the best of five offsets),
/// must wait longer than `x`. That gives, for each `k`, a lag the `k`-th
/// largest cannot be below; the rest get the round trip's half.
pub(crate) fn floor(scenario: &Scenario) -> Run {
    let started = Instant::now();
    let mut changes: Vec<f64> = scenario
        .jobs
        .iter()
        .flat_map(|job| job.changes().into_iter().map(|(at, _)| at))
        .collect();
    changes.sort_by(f64::total_cmp);
    let capacity = 2 * BUDGET;
    // Changes that must wait longer than `x`.
    let surplus = |x: f64| -> usize {
        (0..5)
            .map(|offset| {
                let offset = -(offset as f64) * ACCOUNT_WINDOW / 5.0;
                let mut total = 0;
                let mut from = offset;
                while from <= scenario.last_change {
                    let lo = changes.partition_point(|&at| at < from);
                    let hi = changes.partition_point(|&at| at <= from + ACCOUNT_WINDOW - x);
                    total += hi.saturating_sub(lo).saturating_sub(capacity);
                    from += ACCOUNT_WINDOW;
                }
                total
            })
            .max()
            .unwrap_or(0)
    };
    let half_trip = ROUND_TRIP.0 / 2.0;
    let mut lags = vec![half_trip; changes.len()];
    // Largest first: lags[len - k] ≥ x for every k ≤ surplus(x).
    let mut x = 0.0;
    while x < ACCOUNT_WINDOW {
        let must_wait = surplus(x).min(changes.len());
        for k in 1..=must_wait {
            let slot = changes.len() - k;
            lags[slot] = lags[slot].max(half_trip + x);
        }
        if must_wait == 0 {
            break;
        }
        x += 0.5;
    }
    lags.sort_by(f64::total_cmp);
    Run {
        requests: 0,
        peak: 0,
        too_many: 0,
        forbidden: 0,
        lags: lags.clone(),
        lags_all: lags,
        start_lags: Vec::new(),
        end_lags: Vec::new(),
        unseen: 0,
        simulated: scenario.last_change,
        wall: started.elapsed(),
    }
}
