//! Finding the platform's per-job limit one job at a time. A poll that would
//! take a job past the most polls in one window the platform has answered
//! (the proven count) is a probe. While a probe is in flight, any other job
//! that would also go past that count waits for the answer. A lower limit
//! then costs the account one 429, not one per job polled in step.

/// Polls of one job in a window taken as allowed before any is answered (a
/// client that cannot poll a job three times a minute learns nothing here).
const INITIAL_PROVEN: u32 = 3;

#[derive(Debug)]
pub(super) struct LimitProbe {
    /// The most polls of one job in one window the platform answered with a
    /// status.
    proven: u32,
    /// The job whose poll is the probe in flight.
    probing: Option<usize>,
    /// Jobs waiting for the probe's answer.
    held: Vec<usize>,
}

impl LimitProbe {
    pub(super) fn new() -> Self {
        LimitProbe {
            proven: INITIAL_PROVEN,
            probing: None,
            held: Vec::new(),
        }
    }

    /// Whether the job in `slot` must wait before sending the `count`-th
    /// poll of its window: another job's probe is in flight and `count` is
    /// past the proven count. A job that must wait is held until then.
    pub(super) fn hold(&mut self, slot: usize, count: u32) -> bool {
        let wait = count > self.proven && self.probing.is_some_and(|probing| probing != slot);
        if wait {
            self.held.push(slot);
        }
        wait
    }

    /// The job in `slot` sends the `count`-th poll of its window: past the
    /// proven count, it is the probe.
    pub(super) fn sent(&mut self, slot: usize, count: u32) {
        if count > self.proven {
            self.probing = Some(slot);
        }
    }

    /// The job in `slot` got an answer; `allowed` is the count its poll was
    /// sent as when the platform answered with a status. Returns the jobs
    /// to wake when this ended the probe.
    pub(super) fn answered(&mut self, slot: usize, allowed: Option<u32>) -> Vec<usize> {
        if let Some(count) = allowed {
            self.proven = self.proven.max(count);
        }
        self.forget(slot)
    }

    /// The job in `slot` will send no answer (finished, removed). Returns
    /// the jobs to wake when it was the probe.
    pub(super) fn forget(&mut self, slot: usize) -> Vec<usize> {
        if self.probing != Some(slot) {
            return Vec::new();
        }
        self.probing = None;
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_job_at_a_time_goes_past_the_proven_count() {
        let mut probe = LimitProbe::new();
        // Up to the proven count, nobody waits.
        assert!(!probe.hold(0, INITIAL_PROVEN));
        probe.sent(0, INITIAL_PROVEN + 1);
        assert!(!probe.hold(0, INITIAL_PROVEN + 1), "the probe itself");
        assert!(probe.hold(1, INITIAL_PROVEN + 1));
        assert!(probe.hold(2, INITIAL_PROVEN + 2));
        assert!(!probe.hold(3, INITIAL_PROVEN), "below the proven count");
        // Answered with a status: the count is proven and the others wake.
        assert_eq!(probe.answered(0, Some(INITIAL_PROVEN + 1)), vec![1, 2]);
        assert!(!probe.hold(1, INITIAL_PROVEN + 1));
    }

    #[test]
    fn a_refused_or_lost_probe_wakes_the_others_without_proving_anything() {
        let mut probe = LimitProbe::new();
        probe.sent(5, 10);
        assert!(probe.hold(6, 10));
        assert_eq!(probe.answered(7, Some(2)), Vec::<usize>::new());
        assert_eq!(probe.answered(5, None), vec![6]);
        probe.sent(6, 10);
        assert!(probe.hold(8, 10), "10 is still unproven");
        assert_eq!(probe.forget(6), vec![8]);
    }
}
