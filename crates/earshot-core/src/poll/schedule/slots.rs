//! The scheduler's jobs by slot. A slot is never reused, so slot order is
//! add order and a stale entry in a queue can never name another job; the
//! forgotten jobs at the front are dropped, so a long watch (or the demo)
//! does not keep a slot for every job it ever watched.

use std::collections::VecDeque;
use std::ops::Range;

use super::Job;

#[derive(Debug, Default)]
pub(super) struct Slots {
    /// The slot of `jobs[0]`; every slot before it is forgotten.
    base: usize,
    jobs: VecDeque<Option<Box<Job>>>,
}

impl Slots {
    /// The slots that may hold a job, in add order.
    pub(super) fn range(&self) -> Range<usize> {
        self.base..self.base + self.jobs.len()
    }

    /// Adds `job` in the next slot, which it returns.
    pub(super) fn push(&mut self, job: Job) -> usize {
        let slot = self.range().end;
        self.jobs.push_back(Some(Box::new(job)));
        slot
    }

    pub(super) fn get(&self, slot: usize) -> Option<&Job> {
        self.jobs.get(slot.checked_sub(self.base)?)?.as_deref()
    }

    pub(super) fn get_mut(&mut self, slot: usize) -> Option<&mut Job> {
        self.jobs
            .get_mut(slot.checked_sub(self.base)?)?
            .as_deref_mut()
    }

    /// Forgets the job in `slot`, and every forgotten slot at the front.
    pub(super) fn take(&mut self, slot: usize) -> Option<Box<Job>> {
        let job = self.jobs.get_mut(slot.checked_sub(self.base)?)?.take();
        while matches!(self.jobs.front(), Some(None)) {
            self.jobs.pop_front();
            self.base += 1;
        }
        job
    }

    /// The jobs held, in add order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Job> {
        self.jobs.iter().filter_map(Option::as_deref)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Job> {
        self.jobs.iter_mut().filter_map(Option::as_deref_mut)
    }

    /// Slots kept, forgotten ones between live ones included (for tests).
    #[cfg(test)]
    pub(super) fn kept(&self) -> usize {
        self.jobs.len()
    }
}
