//! What one poller did on one scenario ([`Run`]), its percentiles, and
//! the table rows printed for it.

use std::time::{Duration, Instant};

use crate::platform::Platform;

/// What one poller did on one scenario.
pub(crate) struct Run {
    pub(crate) requests: u64,
    pub(crate) peak: usize,
    pub(crate) too_many: u64,
    pub(crate) forbidden: u64,
    /// Lags of the changes seen.
    pub(crate) lags: Vec<f64>,
    /// Lags of every change, an unseen one counting until the run stopped.
    pub(crate) lags_all: Vec<f64>,
    pub(crate) start_lags: Vec<f64>,
    pub(crate) end_lags: Vec<f64>,
    pub(crate) unseen: usize,
    pub(crate) simulated: f64,
    pub(crate) wall: Duration,
}

impl Run {
    /// Adds another scenario's run to this one.
    pub(crate) fn merge(mut self, other: Run) -> Run {
        self.requests += other.requests;
        self.peak = self.peak.max(other.peak);
        self.too_many += other.too_many;
        self.forbidden += other.forbidden;
        self.unseen += other.unseen;
        self.simulated += other.simulated;
        self.wall += other.wall;
        for (mine, theirs) in [
            (&mut self.lags, other.lags),
            (&mut self.lags_all, other.lags_all),
            (&mut self.start_lags, other.start_lags),
            (&mut self.end_lags, other.end_lags),
        ] {
            mine.extend(theirs);
            mine.sort_by(f64::total_cmp);
        }
        self
    }

    pub(crate) fn p(&self, p: f64) -> f64 {
        percentile(&self.lags_all, p).unwrap_or(f64::NAN)
    }
}

/// `p`-quantile of sorted values.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    Some(sorted[rank])
}

pub(crate) fn finish(platform: Platform<'_>, stopped: f64, started: Instant) -> Run {
    let sorted = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values
    };
    let mut lags_all = platform.lags.clone();
    for unseen in &platform.unseen {
        lags_all.extend(unseen.iter().map(|&(at, _)| (stopped - at).max(0.0)));
    }
    Run {
        requests: platform.requests,
        peak: platform.peak,
        too_many: platform.too_many,
        forbidden: platform.forbidden,
        unseen: platform.unseen.iter().map(Vec::len).sum(),
        lags: sorted(platform.lags),
        lags_all: sorted(lags_all),
        start_lags: sorted(platform.start_lags),
        end_lags: sorted(platform.end_lags),
        simulated: stopped,
        wall: started.elapsed(),
    }
}

pub(crate) fn seconds(value: Option<f64>) -> String {
    match value {
        None => "—".to_owned(),
        Some(v) if v < 10.0 => format!("{v:.2} s"),
        Some(v) => format!("{v:.0} s"),
    }
}

pub(crate) fn print_header() {
    println!(
        "  {:<18} {:>9} {:>8} {:>7} {:>7} {:>6} {:>8} {:>8} {:>9} {:>12} {:>7}",
        "poller",
        "requests",
        "max/5min",
        "429s",
        "403s",
        "unseen",
        "lag p50",
        "lag p95",
        "lag max",
        "p50/p95 ÷ RR",
        "wall",
    );
}

pub(crate) fn print_run(name: &str, run: &Run, reference: Option<&Run>) {
    let max = if run.unseen > 0 {
        "never".to_owned()
    } else {
        seconds(run.lags_all.last().copied())
    };
    let ratio = match reference {
        Some(reference) => format!(
            "{:.2} / {:.2}",
            run.p(0.5) / reference.p(0.5),
            run.p(0.95) / reference.p(0.95)
        ),
        None => "—".to_owned(),
    };
    println!(
        "  {name:<18} {:>9} {:>8} {:>7} {:>7} {:>6} {:>8} {:>8} {:>9} {:>12} {:>7}",
        run.requests,
        run.peak,
        run.too_many,
        run.forbidden,
        run.unseen,
        seconds(Some(run.p(0.5))),
        seconds(Some(run.p(0.95))),
        max,
        ratio,
        format!("{:.2} s", run.wall.as_secs_f64()),
    );
}
