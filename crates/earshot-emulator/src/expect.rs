//! Expectations a test sets on the requests the emulator will receive
//! ([`Emulator::expect`](crate::Emulator::expect)), checked at the end by
//! [`Emulator::verify`](crate::Emulator::verify), or when the handle is
//! dropped unverified (a panic with the same diff, unless the thread is
//! already panicking).

use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Emulator;
use super::journal::JournalEntry;
use super::route::Route;

/// How many requests an expectation allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Times {
    Exactly(u64),
    AtLeast(u64),
    AtMost(u64),
}

impl Times {
    fn allows(self, count: u64) -> bool {
        match self {
            Times::Exactly(n) => count == n,
            Times::AtLeast(n) => count >= n,
            Times::AtMost(n) => count <= n,
        }
    }
}

impl fmt::Display for Times {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (how, n) = match *self {
            Times::Exactly(0) | Times::AtMost(0) => return f.write_str("no request"),
            Times::Exactly(n) => ("exactly", n),
            Times::AtLeast(n) => ("at least", n),
            Times::AtMost(n) => ("at most", n),
        };
        write!(f, "{how} {}", requests(n))
    }
}

fn requests(n: u64) -> String {
    if n == 1 {
        "1 request".to_owned()
    } else {
        format!("{n} requests")
    }
}

/// An expectation being set: say how many requests with
/// [`times`](ExpectRoute::times), [`at_least`](ExpectRoute::at_least),
/// [`at_most`](ExpectRoute::at_most) or [`never`](ExpectRoute::never).
/// Requests are counted from the call to [`Emulator::expect`], whatever
/// their status (an injected fault's included).
#[must_use = "an expectation is set by .times(n), .at_least(n), .at_most(n) or .never()"]
pub struct ExpectRoute<'a> {
    emulator: &'a Emulator,
    route: Route,
}

impl ExpectRoute<'_> {
    /// Exactly `n` requests to the route.
    pub fn times(self, n: u64) {
        self.set(Times::Exactly(n));
    }

    /// `n` requests to the route or more.
    pub fn at_least(self, n: u64) {
        self.set(Times::AtLeast(n));
    }

    /// `n` requests to the route or fewer.
    pub fn at_most(self, n: u64) {
        self.set(Times::AtMost(n));
    }

    /// No request to the route.
    pub fn never(self) {
        self.set(Times::Exactly(0));
    }

    fn set(self, times: Times) {
        let (counter, from_seq) = self.emulator.state.journal.watch(self.route);
        let mut expectations = self.emulator.expectations.lock();
        expectations.checked = false;
        expectations.set.push(Expectation {
            route: self.route,
            times,
            counter,
            from_seq,
        });
    }
}

/// One expectation: a route, how many, and its counter.
struct Expectation {
    route: Route,
    times: Times,
    counter: Arc<AtomicU64>,
    /// The first journal entry it counts.
    from_seq: u64,
}

/// The expectations of one emulator, and whether they were checked since
/// the last was set.
#[derive(Default)]
pub(crate) struct Expectations {
    set: Vec<Expectation>,
    checked: bool,
}

/// The lock on an emulator's expectations.
#[derive(Default)]
pub(crate) struct Shared(Mutex<Expectations>);

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Expectations> {
        self.0.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

/// One expectation not met: the route, what was expected and received,
/// and the journal's entries for the route since it was set.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Unmet {
    pub route: Route,
    pub expected: Times,
    pub received: u64,
    /// The requests counted that the journal still holds, oldest first.
    pub requests: Vec<JournalEntry>,
}

/// Why [`Emulator::verify`](crate::Emulator::verify) failed: every
/// expectation not met. Its `Display` is the diff a test prints, and so is
/// its `Debug` (what `.unwrap()` and `.expect()` show).
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub struct VerifyError {
    pub unmet: Vec<Unmet>,
}

impl fmt::Debug for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for VerifyError {
    /// ```text
    /// 1 expectation on the emulator not met:
    /// - POST /v2/transcript: expected exactly 3 requests, received 2
    ///     #4 18:20:01 UTC  POST /v2/transcript → 201 (96 B body)
    ///     #7 18:20:02 UTC  POST /v2/transcript → 503 (96 B body)
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.unmet.len();
        let noun = if count == 1 {
            "expectation"
        } else {
            "expectations"
        };
        write!(f, "{count} {noun} on the emulator not met:")?;
        for unmet in &self.unmet {
            write!(
                f,
                "\n- {}: expected {}, received {}",
                unmet.route, unmet.expected, unmet.received
            )?;
            let kept = unmet.requests.len() as u64;
            if kept < unmet.received {
                write!(
                    f,
                    "\n    ({} earlier no longer in the journal)",
                    unmet.received - kept
                )?;
            }
            for entry in &unmet.requests {
                write!(f, "\n    {entry}")?;
            }
        }
        Ok(())
    }
}

impl Emulator {
    /// Sets an expectation on the requests to `route` from now on, checked
    /// by [`verify`](Emulator::verify) or when the emulator is dropped:
    /// `emulator.expect(Route::CreateTranscript).times(3)`.
    pub fn expect(&self, route: Route) -> ExpectRoute<'_> {
        ExpectRoute {
            emulator: self,
            route,
        }
    }

    /// Checks every expectation set; the error lists those not met, each
    /// with the requests it counted. Once verified, dropping the emulator
    /// checks nothing more (until another expectation is set).
    pub fn verify(&self) -> Result<(), VerifyError> {
        let mut expectations = self.expectations.lock();
        expectations.checked = true;
        let unmet: Vec<Unmet> = expectations
            .set
            .iter()
            .filter_map(|expectation| {
                let received = expectation.counter.load(Ordering::Relaxed);
                (!expectation.times.allows(received)).then(|| Unmet {
                    route: expectation.route,
                    expected: expectation.times,
                    received,
                    requests: self
                        .state
                        .journal
                        .entries()
                        .into_iter()
                        .filter(|entry| {
                            entry.route == Some(expectation.route)
                                && entry.seq >= expectation.from_seq
                        })
                        .collect(),
                })
            })
            .collect();
        if unmet.is_empty() {
            Ok(())
        } else {
            Err(VerifyError { unmet })
        }
    }

    /// The check on drop: panics with the diff when expectations were set,
    /// never verified, and not met, unless the thread is already panicking.
    pub(crate) fn verify_on_drop(&self) {
        if std::thread::panicking() {
            return;
        }
        let unchecked = {
            let expectations = self.expectations.lock();
            !expectations.checked && !expectations.set.is_empty()
        };
        if !unchecked {
            return;
        }
        if let Err(error) = self.verify() {
            panic!("{error}\n(the emulator was dropped without `verify()`)");
        }
    }
}
