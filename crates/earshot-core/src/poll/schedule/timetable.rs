//! The timetable: a min-heap of due times with lazy deletion, and the set
//! of jobs ready to poll in priority order.

use std::cmp::Reverse;

use super::{Scheduler, Slots, Tick};

/// Whether a heap entry is the job's current one (entries are never removed
/// from the heap when a job is rescheduled, only outdated).
fn is_live(jobs: &Slots, due: Tick, generation: u64, slot: usize) -> bool {
    jobs.get(slot).is_some_and(|job| {
        job.generation == generation
            && job.due == Some(due)
            && job.ready.is_none()
            && !job.is_terminal()
    })
}

impl Scheduler {
    pub(super) fn set_due(&mut self, slot: usize, due: Tick) {
        self.unschedule(slot);
        let Some(job) = self.jobs.get_mut(slot) else {
            return;
        };
        job.due = Some(due);
        self.due.push(Reverse((due, job.generation, slot)));
        if self.due.len() > 2 * (self.active + 32) {
            self.compact();
        }
    }

    /// Takes the job out of the ready set and outdates its heap entry: it
    /// has no due time until [`Scheduler::set_due`] gives it one.
    pub(super) fn unschedule(&mut self, slot: usize) {
        let Some(job) = self.jobs.get_mut(slot) else {
            return;
        };
        if let Some(key) = job.ready.take() {
            self.ready.remove(&key);
        }
        job.generation += 1;
        job.due = None;
    }

    /// Drops the heap's stale entries.
    fn compact(&mut self) {
        let jobs = &self.jobs;
        self.due
            .retain(|&Reverse((due, generation, slot))| is_live(jobs, due, generation, slot));
    }

    fn is_live(&self, due: Tick, generation: u64, slot: usize) -> bool {
        is_live(&self.jobs, due, generation, slot)
    }

    /// Moves every job due by `now` into the ready set.
    pub(super) fn promote_due(&mut self, now: Tick) {
        while let Some(&Reverse((due, generation, slot))) = self.due.peek() {
            if due > now {
                break;
            }
            self.due.pop();
            if !self.is_live(due, generation, slot) {
                continue;
            }
            if let Some(job) = self.jobs.get_mut(slot) {
                let key = job.ready_key(slot);
                job.ready = Some(key);
                self.ready.insert(key);
            }
        }
    }

    pub(super) fn earliest_due(&mut self) -> Option<Tick> {
        while let Some(&Reverse((due, generation, slot))) = self.due.peek() {
            if self.is_live(due, generation, slot) {
                return Some(due);
            }
            self.due.pop();
        }
        None
    }
}
