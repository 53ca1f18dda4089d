//! Retention: how long the store keeps what it holds ([`Period`]) and the
//! prune that removes what is older ([`prune`]).
//!
//! Each row goes by its own time: an event by when the observer received
//! it, an attempt by when it was made, a recovery by when it was sent, a
//! change by when it was made, a session once it was last active and
//! nothing of it is left. Kept past the period, for at most one more: the
//! sessions an open incident still counts (an event of theirs `missed` or
//! `pending` in it) or a recovery never finished, so that what an operator
//! is working on does not vanish under them ([`Rules`]). The rules are
//! documented table by table in `docs/store.md`.
//!
//! The prune runs in small transactions, each sized to hold the write lock
//! about [`TARGET_HOLD`] and followed by a pause twice as long, in which it
//! also checkpoints what it wrote, so a running observer keeps filing
//! events (and its commits stay free of the prune's checkpoints) while it
//! runs. Candidates are read before the lock is taken. Deleted content is
//! overwritten with zeros (`PRAGMA secure_delete`), not left in free pages.
//!
//! Its parts: the period and the rules of one prune (`policy`), the
//! prune's batches and pauses (`run`), its steps (`steps`: tables whose
//! rows go by their own time, `aged`; count tables, `counts`), and what
//! it reports (`report`).

mod aged;
mod counts;
mod policy;
mod report;
mod run;
mod steps;

pub use policy::{Period, PeriodError, Rules, held_sessions};
pub use report::{PruneReport, Removed, Table};
pub use run::{TARGET_HOLD, prune};

#[cfg(test)]
mod tests;
