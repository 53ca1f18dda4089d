//! Rate-aware polling of pre-recorded transcript jobs.
//!
//! The platform refuses more than 60 GETs of one transcript per minute (429
//! with `Retry-After`) and more than 20,000 requests per account in five
//! minutes (403, for the whole account, production traffic included). This
//! module decides *when* to poll *which* job so that earshot sees each status
//! change soon and never causes either refusal. It sends nothing itself:
//! [`schedule::Scheduler`] is pure (time is a [`Tick`] passed in, randomness
//! comes from a seed), so the benchmark can simulate an hour of thousands of
//! jobs in a fraction of a second; `watcher` is the tokio driver that sends
//! what the scheduler asks for.
//!
//! - [`budget`]: the limiters. A sliding-window log guarantees at most `N`
//!   requests in *any* window (per job: 50 a minute by default; account
//!   share: 2,000 per five minutes by default); a small token bucket spreads
//!   the account share evenly.
//! - [`schedule`]: the cadence and priority of polls.
//! - [`hints`]: what front ends know about a job (WAV duration, submit
//!   time, a record's `audio_duration`) as a [`JobHint`].
//!
//! # Cadence and priority
//!
//! Every job has a desired next-poll time that follows what is known about
//! it:
//!
//! - **New**: polled at once (the answer to the submission, fed in as a free
//!   observation, saves even that).
//! - **Queued**: backs off (half its time in the queue, 2 s to 60 s, times
//!   √(1 + its place in the queue)). The queue is FIFO (spec part 3), so each
//!   completion earshot sees gives the oldest queued job an immediate poll (it
//!   has probably just started), a job seen started or finished does the same
//!   for every queued job ahead of it, and a job found queued lets the
//!   never-polled jobs submitted after it be taken as queued without a
//!   request.
//! - **Processing**: polled densely around its expected completion, `start +
//!   overhead + ratio × audio duration`, with a learned spread `s`: at distance
//!   `d` from the expectation the gap is `g·√(1 + (d/s)²)`, at least a tenth
//!   of `d − s`, with `g` as small as the spread deserves and the per-job
//!   window sustains (250 ms to 1.2 s). Polls close in geometrically, land on
//!   the expected time, then thin out if the job runs late. The model is
//!   learned from the jobs earshot saw start and finish; the prior (a ratio
//!   of 0.25) is only a starting point. With no audio duration (a job
//!   `jobs watch` was given by id, until a record shows one), processing
//!   times span decades and no expectation is worth landing on: the gap is
//!   a tenth of the time it has been running (250 ms to 20 s), so the lag
//!   stays a small fraction of the processing time.
//! - **Completed / error**: never polled again.
//!
//! These desired rates are the demand. When it exceeds the account share,
//! every job's gap is stretched by the same factor (jobs on screen excepted);
//! when the budget allows, every job is also polled at least every 20 s, and
//! spare budget shrinks all gaps up to twice; a running job of unknown
//! audio is also polled at least at an even split of the spare supply among
//! the running jobs (at most the per-job limit), its gaps counted from one
//! sending to the next. What a job's per-job window has left is spread over
//! the time until its oldest poll leaves it (fully from half the window
//! on), so a burst never locks it out. Jobs whose time has come wait in a
//! ready set served in
//! order: focused (on screen) first, then never seen, then the oldest
//! information, then add order. A poll goes out only when the job's window,
//! the account window, the job's `Retry-After` and any account pause all
//! allow it.
//!
//! Failures never drop a job: a 429 waits out `Retry-After` for that job and
//! lowers the per-job limit below the count that was refused (for every job
//! when that count was 3 or more: the platform's limit is lower than
//! configured); a poll past the most polls per window the platform has
//! answered is a probe, and no other job goes past that count until it is
//! answered, so jobs polled in step pay one 429 between them. A
//! 403 pauses every poll (30 s doubling to 5 min, with jitter), a network
//! error, a 404 or a poll never answered backs the job off (1 s doubling to
//! 60 s, with jitter); such a job, like any job whose last good observation is
//! older than `stale_after` (30 s), shows as stale.

use std::time::Duration;

pub mod budget;
pub mod hints;
pub mod schedule;
pub mod watcher;

pub use budget::{SlidingWindow, TokenBucket};
pub use schedule::{
    Decision, JobHint, JobProblem, JobView, Pause, PollOutcome, Scheduler, SchedulerConfig,
};

/// Time since the scheduler's epoch. The scheduler never reads a clock.
pub type Tick = Duration;
