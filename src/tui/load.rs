//! [`Load`]: something a pane reads in the background (a table's rows, an
//! event in full, a body file), with where its reading stands.
//!
//! A value is not loaded, loaded, or failed (the error's text, the last
//! value kept beside it); and a load may be running, under a sequence
//! number, while the last value (and the last error) stay on screen. Only
//! the answer to the latest load started is taken: one that a newer load
//! has superseded arrives late and is dropped. Panes draw from
//! [`Load::value`], [`Load::error`], [`Load::loading`] and
//! [`Load::loaded`]; they never keep the four facts themselves. It also
//! keeps when the last load succeeded and when the last one failed
//! ([`Load::succeeded_at`], [`Load::failed_at`]): the age every pane shows
//! (`widgets::age`) is read from here.

use std::fmt::Display;
use std::time::Instant;

/// A value read in the background, and where its reading stands.
#[derive(Clone, Debug, Default)]
pub(crate) struct Load<T> {
    /// The latest load started (0: none yet).
    seq: u64,
    /// That load has not answered yet.
    loading: bool,
    /// A value arrived (from a load, or set directly).
    loaded: bool,
    /// Why the last load failed, until one succeeds.
    error: Option<String>,
    /// The last value (`T::default()` before the first).
    value: T,
    /// When the last value arrived.
    succeeded_at: Option<Instant>,
    /// When the last load failed, until one succeeds.
    failed_at: Option<Instant>,
}

impl<T: Default> Load<T> {
    /// Not loaded, nothing running.
    pub(crate) fn new() -> Load<T> {
        Load {
            seq: 0,
            loading: false,
            loaded: false,
            error: None,
            value: T::default(),
            succeeded_at: None,
            failed_at: None,
        }
    }

    /// Back to not loaded, and idle (another thing is to be read). A load
    /// in flight is still the latest: start another to drop its answer.
    pub(crate) fn reset(&mut self) {
        self.loading = false;
        self.loaded = false;
        self.error = None;
        self.value = T::default();
        self.succeeded_at = None;
        self.failed_at = None;
    }

    /// [`Load::reset`], and a load in flight is no longer the latest: its
    /// answer is dropped (the thing it read is gone).
    pub(crate) fn clear(&mut self) {
        self.reset();
        self.seq += 1;
    }
}

impl<T> Load<T> {
    /// Starts a load: its sequence number, which its answer carries. The
    /// last value and error stay until the answer.
    pub(crate) fn start(&mut self) -> u64 {
        self.seq += 1;
        self.loading = true;
        self.seq
    }

    /// Whether `seq` is the latest load: the answer to any other is late.
    pub(crate) fn is_current(&self, seq: u64) -> bool {
        seq == self.seq
    }

    /// The answer to load `seq`: `None` when it is late (dropped, nothing
    /// changes). Otherwise the load is over: a value replaces the last
    /// one, an error is kept beside it (and handed back, for the status
    /// bar).
    pub(crate) fn finish<E: Display>(
        &mut self,
        seq: u64,
        result: Result<T, E>,
    ) -> Option<Result<(), E>> {
        self.finish_with(seq, result, |value, fresh| *value = fresh)
    }

    /// [`Load::finish`], with the value taken in by `take` (which may keep
    /// a selection, or merge the fresh rows into the last ones).
    pub(crate) fn finish_with<U, E: Display>(
        &mut self,
        seq: u64,
        result: Result<U, E>,
        take: impl FnOnce(&mut T, U),
    ) -> Option<Result<(), E>> {
        if !self.is_current(seq) {
            return None;
        }
        self.loading = false;
        Some(match result {
            Ok(fresh) => {
                take(&mut self.value, fresh);
                self.loaded = true;
                self.error = None;
                self.succeeded_at = Some(Instant::now());
                self.failed_at = None;
                Ok(())
            }
            Err(error) => {
                self.error = Some(error.to_string());
                self.failed_at = Some(Instant::now());
                Err(error)
            }
        })
    }

    /// A value that did not come from a load (fixtures, a value built
    /// here): loaded, no error.
    pub(crate) fn set(&mut self, value: T) {
        self.value = value;
        self.loaded = true;
        self.error = None;
        self.succeeded_at = Some(Instant::now());
        self.failed_at = None;
    }

    /// An error about this value from other work than its load (e.g. the
    /// store could not be opened for a sweep): shown like a failed load,
    /// the last value kept; a load running still runs.
    pub(crate) fn fail(&mut self, error: impl Into<String>) {
        self.error = Some(error.into());
        self.failed_at = Some(Instant::now());
    }

    /// The last value (`T::default()` before the first).
    pub(crate) fn value(&self) -> &T {
        &self.value
    }

    /// The last value, to change in place (a row updated by a command).
    pub(crate) fn value_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// A load is running.
    pub(crate) fn loading(&self) -> bool {
        self.loading
    }

    /// A value has arrived at least once (since the last reset).
    pub(crate) fn loaded(&self) -> bool {
        self.loaded
    }

    /// Why the last load failed, until one succeeds.
    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// When the value on screen arrived (`None`: nothing loaded yet).
    pub(crate) fn succeeded_at(&self) -> Option<Instant> {
        self.succeeded_at
    }

    /// When the last load failed, until one succeeds.
    pub(crate) fn failed_at(&self) -> Option<Instant> {
        self.failed_at
    }

    /// Moves both times `by` into the past, as if the loads had answered
    /// that long ago (tests of the age a pane shows).
    #[cfg(test)]
    pub(crate) fn age_by(&mut self, by: std::time::Duration) {
        let back = |at: Instant| at.checked_sub(by).unwrap_or(at);
        self.succeeded_at = self.succeeded_at.map(back);
        self.failed_at = self.failed_at.map(back);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_starts_unloaded_then_holds_its_value() {
        let mut list: Load<Vec<u32>> = Load::new();
        assert!(!list.loaded() && !list.loading() && list.error().is_none());
        let seq = list.start();
        assert!(list.loading() && !list.loaded());
        assert_eq!(list.finish(seq, Ok::<_, String>(vec![1, 2])), Some(Ok(())));
        assert!(list.loaded() && !list.loading());
        assert_eq!(list.value(), &[1, 2]);
    }

    #[test]
    fn a_late_answer_is_dropped_and_the_latest_is_taken() {
        let mut list: Load<Vec<u32>> = Load::new();
        let first = list.start();
        let second = list.start();
        assert_ne!(first, second);
        assert_eq!(list.finish(first, Ok::<_, String>(vec![1])), None);
        assert!(list.loading(), "the latest load still runs");
        assert!(!list.loaded());
        assert_eq!(list.finish(second, Ok::<_, String>(vec![2])), Some(Ok(())));
        assert_eq!(list.value(), &[2]);
        // An answer to the first load arriving after the second's is late too.
        assert_eq!(list.finish(first, Ok::<_, String>(vec![1])), None);
        assert_eq!(list.value(), &[2]);
    }

    #[test]
    fn a_failure_keeps_the_last_value_until_a_load_succeeds() {
        let mut list: Load<Vec<u32>> = Load::new();
        let seq = list.start();
        list.finish(seq, Ok::<_, String>(vec![7]));
        let seq = list.start();
        assert_eq!(list.value(), &[7], "the last value stays while reloading");
        assert_eq!(
            list.finish(seq, Err::<Vec<u32>, _>("the store is locked".to_owned())),
            Some(Err("the store is locked".to_owned()))
        );
        assert_eq!(list.error(), Some("the store is locked"));
        assert_eq!(list.value(), &[7]);
        assert!(list.loaded() && !list.loading());
        let seq = list.start();
        assert_eq!(
            list.error(),
            Some("the store is locked"),
            "kept while reloading"
        );
        list.finish(seq, Ok::<_, String>(vec![8]));
        assert_eq!(list.error(), None);
    }

    #[test]
    fn the_times_of_the_last_success_and_failure_are_kept() {
        let mut list: Load<Vec<u32>> = Load::new();
        assert!(list.succeeded_at().is_none() && list.failed_at().is_none());
        let before = Instant::now();
        let seq = list.start();
        list.finish(seq, Ok::<_, String>(vec![1]));
        let succeeded = list.succeeded_at().expect("a success is dated");
        assert!(succeeded >= before && list.failed_at().is_none());
        let seq = list.start();
        list.finish(seq, Err::<Vec<u32>, _>("refused".to_owned()));
        assert_eq!(list.succeeded_at(), Some(succeeded), "the data's age stays");
        assert!(list.failed_at().is_some_and(|at| at >= succeeded));
        let seq = list.start();
        list.finish(seq, Ok::<_, String>(vec![2]));
        assert!(list.failed_at().is_none(), "a success clears the failure");
        list.reset();
        assert!(list.succeeded_at().is_none());
    }

    #[test]
    fn finish_with_merges_into_the_last_value() {
        let mut list: Load<Vec<u32>> = Load::new();
        list.set(vec![1]);
        let seq = list.start();
        list.finish_with(seq, Ok::<_, String>(5), |rows, fresh| rows.push(fresh));
        assert_eq!(list.value(), &[1, 5]);
    }

    #[test]
    fn an_error_from_other_work_leaves_the_load_running() {
        let mut list: Load<Vec<u32>> = Load::new();
        let seq = list.start();
        list.fail("no store");
        assert!(list.loading());
        assert_eq!(list.error(), Some("no store"));
        list.finish(seq, Ok::<_, String>(vec![3]));
        assert_eq!(list.error(), None);
    }

    #[test]
    fn a_reset_forgets_the_value_and_a_new_load_drops_the_old_answer() {
        let mut list: Load<Vec<u32>> = Load::new();
        let old = list.start();
        list.reset();
        assert!(!list.loaded() && list.value().is_empty());
        let new = list.start();
        assert_eq!(list.finish(old, Ok::<_, String>(vec![1])), None);
        assert_eq!(list.finish(new, Ok::<_, String>(vec![2])), Some(Ok(())));
        assert_eq!(list.value(), &[2]);
    }
}
