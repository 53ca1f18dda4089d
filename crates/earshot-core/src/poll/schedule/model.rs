//! What the scheduler learns about processing time: a running estimate
//! of a log-value with its spread ([`Estimate`]), what one finished job
//! says ([`Took`]), and processing time from audio duration
//! ([`DurationModel`]).

/// A running mean of a log-value and the mean absolute error of its
/// predictions, each starting from a prior worth one observation.
#[derive(Clone, Debug)]
pub(super) struct Estimate {
    pub(super) mean: f64,
    pub(super) deviation: f64,
    count: u32,
    errors: u32,
}

/// Learning weight of the `count`-th observation: a plain average of the
/// first ones (and the prior), then exponential, so estimates follow drift.
fn weight(count: u32) -> f64 {
    (1.0 / (f64::from(count) + 2.0)).max(0.1)
}

impl Estimate {
    pub(super) fn new(mean: f64, deviation: f64) -> Self {
        Estimate {
            mean,
            deviation,
            count: 0,
            errors: 0,
        }
    }

    pub(super) fn learn(&mut self, value: f64) {
        if value.is_finite() {
            self.mean += weight(self.count) * (value - self.mean);
            self.count = self.count.saturating_add(1);
        }
    }

    /// Learns how far off a prediction was (log ratio). Faster than the
    /// mean: the errors made while the mean was still being learned should
    /// not keep the spread wide for long.
    pub(super) fn learn_error(&mut self, error: f64) {
        if error.is_finite() {
            let weight = weight(self.errors).max(0.2);
            self.deviation += weight * (error.abs() - self.deviation);
            self.errors = self.errors.saturating_add(1);
        }
    }

    /// Relative spread (about one standard deviation).
    pub(super) fn spread(&self) -> f64 {
        (self.deviation * 1.25).clamp(0.02, 1.5)
    }
}

/// What one finished job says about processing time: it lay between
/// `shortest` and `longest` (from the polls around its start and its end).
#[derive(Clone, Copy, Debug)]
pub(super) struct Took {
    pub(super) shortest: f64,
    pub(super) longest: f64,
}

impl Took {
    /// The value to learn for a prediction: the prediction itself when the
    /// window allows it, else the nearer bound. Taking the middle instead
    /// would bias the estimate, because which windows come out narrow
    /// depends on the answer (polls are denser on one side of the
    /// expectation than the other); this way a model is only moved by
    /// observations that contradict it, and settles within the windows'
    /// width of the truth.
    pub(super) fn learnable(self, predicted: f64) -> f64 {
        predicted.clamp(self.shortest, self.longest)
    }

    /// The middle (geometric) when the window is narrow enough, relative to
    /// `spread`, to say how far off a prediction was.
    pub(super) fn exact(self, spread: f64) -> Option<f64> {
        ((self.longest / self.shortest).ln() <= spread.max(0.05))
            .then(|| (self.shortest * self.longest).sqrt())
    }
}

/// Processing time from audio duration: `overhead + ratio × audio`, fitted
/// by weighted least squares with forgetting (weights `1/took²`, so every
/// job's error counts relative to its duration). Until the observations span
/// enough audio durations, a plain ratio (from the prior) is used. The spread
/// is learned from the errors of predictions made before each observation.
#[derive(Clone, Debug)]
pub(super) struct DurationModel {
    sums: [f64; 5],
    fitted: u32,
    ratio: Estimate,
    /// Running moments of ln(audio), to tell whether the audio durations
    /// seen differ enough to fit two parameters.
    log_audio: [f64; 3],
}

/// Weight of the past per new observation.
const FORGET: f64 = 0.99;

impl DurationModel {
    pub(super) fn new(prior_ratio: f64, prior_spread: f64) -> Self {
        DurationModel {
            sums: [0.0; 5],
            fitted: 0,
            ratio: Estimate::new(prior_ratio.ln(), prior_spread),
            log_audio: [0.0; 3],
        }
    }

    /// `(overhead, ratio)` when the fit is usable.
    pub(super) fn fit(&self) -> Option<(f64, f64)> {
        let [n, x, y, xx, xy] = self.sums;
        if self.fitted < 6 || n <= 0.0 {
            return None;
        }
        // The audio durations seen must differ enough to separate the two
        // (a standard deviation of ln(audio) of at least 0.5).
        let [count, sum, squares] = self.log_audio;
        let variance = squares / count - (sum / count).powi(2);
        if variance.is_nan() || variance < 0.25 {
            return None;
        }
        let determinant = n * xx - x * x;
        if determinant.is_nan() || determinant <= 0.0 {
            return None;
        }
        let ratio = (n * xy - x * y) / determinant;
        let overhead = (y - ratio * x) / n;
        // Processing never takes less than nothing: with a negative overhead
        // the best fit has none (a line through the origin).
        let (overhead, ratio) = if overhead < 0.0 {
            (0.0, xy / xx)
        } else {
            (overhead, ratio)
        };
        (ratio > 0.0 && ratio.is_finite() && overhead.is_finite()).then_some((overhead, ratio))
    }

    pub(super) fn predict(&self, audio: f64) -> f64 {
        let plain = self.ratio.mean.exp() * audio;
        match self.fit() {
            Some((overhead, ratio)) => (overhead + ratio * audio).max(plain * 0.25).max(0.01),
            None => plain,
        }
    }

    pub(super) fn ratio(&self) -> f64 {
        self.fit().map_or(self.ratio.mean.exp(), |(_, ratio)| ratio)
    }

    pub(super) fn spread(&self) -> f64 {
        self.ratio.spread()
    }

    pub(super) fn learn(&mut self, audio: f64, took: Took) {
        if !(audio > 0.0 && audio.is_finite() && took.shortest > 0.0 && took.longest.is_finite()) {
            return;
        }
        let predicted = self.predict(audio);
        if let Some(exact) = took.exact(self.spread()) {
            // The error around 0, not around its own mean: a biased
            // prediction must widen the spread.
            self.ratio.learn_error((exact / predicted).ln());
        }
        let plain = self.ratio.mean.exp() * audio;
        self.ratio.learn((took.learnable(plain) / audio).ln());
        let value = took.learnable(predicted);
        let weight = 1.0 / (value * value);
        for (sum, add) in self.sums.iter_mut().zip([
            weight,
            weight * audio,
            weight * value,
            weight * audio * audio,
            weight * audio * value,
        ]) {
            *sum = *sum * FORGET + add;
        }
        let log = audio.ln();
        for (moment, add) in self.log_audio.iter_mut().zip([1.0, log, log * log]) {
            *moment = *moment * FORGET + add;
        }
        self.fitted = self.fitted.saturating_add(1);
    }
}
