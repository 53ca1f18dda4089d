//! FIFO-queue inference: the platform starts queued jobs in submission
//! order, so a job seen queued implies later ones are queued, and a job
//! seen started implies earlier ones have started (they are polled now).

use super::{Scheduler, Tick};

/// Earlier queued jobs given a poll at once when a later one is seen started.
const MAX_FIFO_BOOSTS: usize = 16;

impl Scheduler {
    /// A job never polled, added after one seen queued (and before that
    /// observation), is queued too: FIFO.
    pub(super) fn infer_queued(&mut self, slot: usize) -> bool {
        if !self.config.fifo_inference {
            return false;
        }
        let Some(job) = self.jobs.get(slot) else {
            return false;
        };
        let submitted = job.submitted();
        let Some(&(_, earlier)) = self.observed_queued.range(..(job.seq, 0)).next_back() else {
            return false;
        };
        let Some(seen) = self.jobs.get(earlier).and_then(|job| job.last_queued) else {
            return false;
        };
        if submitted > seen {
            return false;
        }
        if let Some(job) = self.jobs.get_mut(slot) {
            job.inferred_queued = Some(seen);
        }
        self.enter_pending(slot);
        true
    }

    pub(super) fn enter_pending(&mut self, slot: usize) {
        let Some(job) = self.jobs.get_mut(slot) else {
            return;
        };
        if !job.pending {
            job.pending = true;
            self.pending.insert((job.seq, slot));
            if !job.boosted {
                self.unboosted.insert((job.seq, slot));
            }
        }
    }

    pub(super) fn leave_pending(&mut self, slot: usize) {
        let Some(job) = self.jobs.get_mut(slot) else {
            return;
        };
        job.pending = false;
        job.boosted = false;
        self.pending.remove(&(job.seq, slot));
        self.unboosted.remove(&(job.seq, slot));
    }

    /// One slot freed: the oldest queued job not yet boosted is polled now.
    pub(super) fn credit(&mut self, now: Tick) {
        if let Some(&(_, slot)) = self.unboosted.first() {
            self.boost(slot, now);
        }
    }

    /// A job seen started (or finished) means every job queued before it has
    /// started too (FIFO): poll them now.
    pub(super) fn fifo_boost(&mut self, seq: u64, now: Tick) {
        if !self.config.fifo_inference {
            return;
        }
        let earlier: Vec<usize> = self
            .unboosted
            .range(..(seq, 0))
            .take(MAX_FIFO_BOOSTS)
            .map(|&(_, slot)| slot)
            .collect();
        for slot in earlier {
            self.boost(slot, now);
        }
    }

    fn boost(&mut self, slot: usize, now: Tick) {
        let Some(job) = self.jobs.get_mut(slot) else {
            return;
        };
        job.boosted = true;
        self.unboosted.remove(&(job.seq, slot));
        self.reschedule(slot, now, now);
    }
}
