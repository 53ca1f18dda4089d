//! `cargo bench --bench poller`: earshot's poll scheduler as its real
//! callers use it, against a poller that spends the same budget blindly,
//! the fixed-interval pollers of the official SDKs, and a true floor, in
//! simulated time, on a simulated platform that enforces the spec's limits
//! the way the emulator does.
//!
//! The platform: pre-recorded jobs run at most `concurrency` at once
//! (`max(5, N/10)`), the rest wait FIFO (spec part 3). A job's processing
//! time is `overhead + ratio × audio duration`, with overhead 0.5–2 s and
//! ratio 0.25 × (0.85–1.15); audio durations are log-uniform between 10 s and
//! 60 min; 3% of jobs end in `error`. Jobs are submitted at random over the
//! first minute. Every request takes a round trip of 50–150 ms (uniform):
//! the platform answers from the job's state at the middle of it. Limits
//! (spec part 8 E), over sliding windows, counting only the requests a limit
//! lets through (as the emulator does, `crates/earshot-emulator/src/limits.rs`): more than
//! 20,000 requests of the account in any 300 s → 403; more than 60 GETs of
//! one transcript in any 60 s → 429 with `Retry-After` (whole seconds until
//! the window has room, so obeying it exactly works). A GET refused with 429
//! has passed the account limit and counts there.
//!
//! Pollers (at most 16 requests in flight, like the watcher, except the
//! fixed ones, which poll every job in its own loop):
//!
//! - **earshot, hint-less** (the headline: what `jobs watch` gets): the
//!   default [`Scheduler`] given bare ids; the only hint is the record's
//!   `audio_duration`, taken (as the watcher does) from the final record
//!   only, the least a platform may show.
//! - **earshot, hinted** (what the console gets for a file it submits): the
//!   submit time and audio duration up front.
//! - **round robin**: the budget-respecting baseline. The same request rate
//!   as earshot's share (2,000 per 5 min: one request every 0.15 s) spent
//!   cycling over the unfinished jobs, each at most 50 times a minute.
//! - **fixed 1 s / 3 s**: every job polled that long after each answer until
//!   it is seen finished, ignoring `Retry-After` and errors (SDK behaviour).
//! - **floor**: a true lower bound for any poller with earshot's budget,
//!   even one that knows when every change happens (see [`floor`]): half
//!   the shortest round trip, more where the changes in a 5-minute window
//!   outnumber what its budget can show.
//!
//! Detection lag: for each real status change (queued → processing,
//! processing → completed/error), the time from the change until the
//! poller holds an answer showing that state or a later one. A change never
//! seen counts with the lag it had when the run stopped ("never" in the
//! max column), so a poller cannot look fast by missing changes. Each run
//! stops 10 min of simulated time after the last change.

mod floor;
mod platform;
mod pollers;
mod report;

use std::collections::BinaryHeap;

use crate::floor::floor;
use crate::platform::Scenario;
use crate::pollers::{Earshot, Fixed, Poller, RoundRobin, simulate};
use crate::report::{Run, percentile, print_header, print_run, seconds};

const ACCOUNT_LIMIT: usize = 20_000;
const ACCOUNT_WINDOW: f64 = 300.0;
const JOB_LIMIT: usize = 60;
const JOB_WINDOW: f64 = 60.0;
const SUBMIT_SPREAD: f64 = 60.0;
const TAIL: f64 = 600.0;
/// Requests in flight at once, per poller (the watcher's `MAX_IN_FLIGHT`).
const MAX_IN_FLIGHT: usize = 16;
/// Round trip of a request, seconds: uniform in this range.
const ROUND_TRIP: (f64, f64) = (0.05, 0.15);
/// earshot's default share of the account limit, and the round robin's.
const BUDGET: usize = 2_000;
/// The round robin's per-job cap (earshot's default), polls per minute.
const ROUND_ROBIN_PER_JOB: f64 = 50.0;
/// Job counts, and how many scenarios (seeds) each is averaged over.
const SIZES: [(usize, usize); 4] = [(10, 30), (100, 5), (1_000, 2), (10_000, 1)];

struct Verdict {
    n: usize,
    clean: bool,
    p50_vs_rr: f64,
    p95_vs_rr: f64,
    p50_vs_floor: f64,
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    println!("earshot poller benchmark: simulated time, round trips of 50–150 ms");
    println!(
        "platform: FIFO queue, concurrency max(5, N/10); processing 0.5–2 s + 0.25 × (0.85–1.15) × \
         audio, audio log-uniform 10 s–60 min, 3% end in error, submissions over the first \
         minute"
    );
    println!(
        "limits: 60 GET/60 s per job (429 + Retry-After), 20,000/300 s per account (403); sliding \
         windows counting only what a limit let through (as the emulator); runs stop 10 min after \
         the last change"
    );
    println!(
        "lag: change to the answer that shows it; an unseen change counts until the run stopped \
         (max \"never\"); RR: round robin at earshot's budget (2,000 per 5 min)"
    );
    println!();
    let mut verdicts = Vec::new();
    for (size, &(n, seeds)) in SIZES.iter().enumerate() {
        let concurrency = (n / 10).max(5);
        let scenarios: Vec<Scenario> = (0..seeds)
            .map(|seed| Scenario::new(n, concurrency, 0xbe9c_4000 + (size * 1_000 + seed) as u64))
            .collect();
        let changes: usize = scenarios.iter().map(Scenario::changes).sum();
        let mean_active = scenarios.iter().map(|s| s.mean_active).sum::<f64>() / seeds as f64;
        let last_change = scenarios.iter().map(|s| s.last_change).sum::<f64>() / seeds as f64;
        let blind = mean_active * (ACCOUNT_WINDOW / BUDGET as f64) / 2.0;
        println!(
            "N = {n}: concurrency {concurrency}, {seeds} scenario(s), {changes} changes, last at \
             {last_change:.0} s on average, mean unfinished jobs {mean_active:.1} (a blind even \
             spread of the budget would average {blind:.2} s)",
        );
        print_header();
        let run_all = |make: &dyn Fn(&Scenario) -> Box<dyn Poller>| {
            scenarios
                .iter()
                .map(|scenario| {
                    let mut poller = make(scenario);
                    simulate(scenario, poller.as_mut(), scenario.last_change + TAIL)
                })
                .reduce(Run::merge)
        };
        let Some(round_robin) = run_all(&|s| Box::new(RoundRobin::new(s.jobs.len()))) else {
            continue;
        };
        let Some(hintless) = run_all(&|s| Box::new(Earshot::new(s, false))) else {
            continue;
        };
        let Some(hinted) = run_all(&|s| Box::new(Earshot::new(s, true))) else {
            continue;
        };
        let Some(bound) = scenarios.iter().map(floor).reduce(Run::merge) else {
            continue;
        };
        print_run("earshot hint-less", &hintless, Some(&round_robin));
        print_run("earshot hinted", &hinted, Some(&round_robin));
        print_run("round robin (RR)", &round_robin, Some(&round_robin));
        for (name, interval) in [("fixed 1 s", 1.0), ("fixed 3 s", 3.0)] {
            if let Some(run) = run_all(&|_| {
                Box::new(Fixed {
                    interval,
                    timers: BinaryHeap::new(),
                })
            }) {
                print_run(name, &run, Some(&round_robin));
            }
        }
        print_run("floor (bound)", &bound, Some(&round_robin));
        for (name, run) in [("hint-less", &hintless), ("hinted", &hinted)] {
            println!(
                "  earshot {name}: p50 {:.1} × floor; queued → processing p50/p95 {} / {}, \
                 processing → finished {} / {}",
                run.p(0.5) / bound.p(0.5),
                seconds(percentile(&run.start_lags, 0.5)),
                seconds(percentile(&run.start_lags, 0.95)),
                seconds(percentile(&run.end_lags, 0.5)),
                seconds(percentile(&run.end_lags, 0.95)),
            );
        }
        println!();
        verdicts.push(Verdict {
            n,
            clean: hintless.too_many == 0 && hintless.forbidden == 0 && hintless.unseen == 0,
            p50_vs_rr: hintless.p(0.5) / round_robin.p(0.5),
            p95_vs_rr: hintless.p(0.95) / round_robin.p(0.95),
            p50_vs_floor: hintless.p(0.5) / bound.p(0.5),
        });
    }

    // Throughput: an hour of 1,000 jobs that keep the scheduler busy.
    let scenario = Scenario::new(1_000, 20, 0x0e4d_0001);
    let mut earshot = Earshot::new(&scenario, false);
    let run = simulate(&scenario, &mut earshot, 3_600.0);
    println!(
        "throughput: 1,000 jobs (concurrency 20), {:.0} s simulated in {:.3} s wall, {} requests \
         ({:.2} µs per request, simulator included)",
        run.simulated,
        run.wall.as_secs_f64(),
        run.requests,
        run.wall.as_secs_f64() * 1e6 / run.requests.max(1) as f64,
    );
    println!();

    println!("earshot hint-less (what `jobs watch` gets) against the same budget spent blindly:");
    let mut all = true;
    for verdict in &verdicts {
        let ok = verdict.clean && verdict.p50_vs_rr <= 1.0 && verdict.p95_vs_rr <= 1.0;
        all &= ok;
        println!(
            "  N = {:>6}: no 429/403 and every change seen: {}; p50 {:.2} × RR, p95 {:.2} × RR \
             (both ≤ 1: {}); p50 {:.1} × the floor",
            verdict.n,
            yes(verdict.clean),
            verdict.p50_vs_rr,
            verdict.p95_vs_rr,
            yes(verdict.p50_vs_rr <= 1.0 && verdict.p95_vs_rr <= 1.0),
            verdict.p50_vs_floor,
        );
    }
    println!("  all met: {}", yes(all));
}

fn yes(ok: bool) -> &'static str {
    if ok { "yes" } else { "NO" }
}
