//! Filing rate (`filing`): new events through the observer's writer, as
//! `listen --store` files them, into an empty store and into the built
//! store, interleaved round by round (the order alternating), each round
//! new events of the same shape as the built store's, live (sessions of
//! the last minute, random ids, as an observer receives them), and the
//! empty store given the built store's two subscriptions first (so each
//! event gets the same two outcome rows and counts in both). Events per
//! second for each, and their ratio, twice: filed (every request
//! answered), and filed and put in the free-text index (which the writer
//! does as the flood ebbs); every event is counted in the store after its
//! round (none lost).

use std::path::Path;

use chrono::Utc;
use earshot_core::store::{Store, deliveries};

use super::BoxError;
use super::builder::{Filed, LIVE_MS, file, plan, subscriptions};
use super::timing::median;

fn events_in(path: &Path) -> Result<i64, BoxError> {
    let conn = rusqlite::Connection::open(path)?;
    Ok(conn.query_row("SELECT count(*) FROM events", [], |row| row.get(0))?)
}

/// Files `count` new events into `path`: how long it took.
fn round(path: &Path, count: usize, seed: u64) -> Result<Filed, BoxError> {
    // Never the ids of an earlier run: they would be repeats, not filed.
    let nanos = u64::try_from(Utc::now().timestamp_nanos_opt().unwrap_or_default())?;
    let mut rng = fastrand::Rng::with_seed(seed ^ nanos);
    // Live traffic: sessions of the last minute, as an observer receives
    // them (a day's spread would land in the middle of every time index).
    let sessions = plan(count, Utc::now().timestamp_millis(), LIVE_MS, &mut rng);
    let planned = sessions.iter().flatten().count();
    let before = events_in(path).unwrap_or(0);
    let took = file(Store::open(path)?, sessions.iter().flatten())?;
    let after = events_in(path)?;
    let filed = usize::try_from(after - before)?;
    if filed != planned {
        return Err(format!("{}: {planned} sent, {filed} filed", path.display()).into());
    }
    Ok(took)
}

/// `rounds` rounds of `count` events into a new store beside `big` and
/// into `big` itself; `only` names one side to run (`empty` or `built`); empty, both.
pub fn run(big: &Path, count: usize, rounds: usize, only: &[String]) -> Result<(), BoxError> {
    if !big.exists() {
        return Err(format!("{} is not built: run `build` first", big.display()).into());
    }
    let dir = big.parent().ok_or("the store has no directory")?;
    // (filed, filed and indexed) events/s, each side.
    let (mut empty, mut full) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    println!("| round | into | events | filed, s | events/s | indexed too, s | events/s |");
    println!("|---|---|---|---|---|---|---|");
    for n in 0..rounds {
        let fresh = dir.join(format!("filing-empty-{n}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", fresh.display()));
        }
        let mut store = Store::open(&fresh)?;
        deliveries::replace_subscriptions(
            &mut store,
            &subscriptions()?,
            Utc::now().timestamp_millis(),
        )?;
        drop(store);
        let seed = 0xF11E_0000 + n as u64 * 2;
        let order: [(&Path, bool); 2] = if n % 2 == 0 {
            [(&fresh, true), (big, false)]
        } else {
            [(big, false), (&fresh, true)]
        };
        for (index, (path, is_empty)) in order.into_iter().enumerate() {
            let side = if is_empty { "empty" } else { "built" };
            if !only.is_empty() && !only.iter().any(|name| name == side) {
                continue;
            }
            let took = round(path, count, seed + index as u64)?;
            let filed = count as f64 / took.filed.as_secs_f64();
            let indexed = count as f64 / took.indexed.as_secs_f64();
            println!(
                "| {n} | {} | {count} | {:.2} | {filed:.0} | {:.2} | {indexed:.0} |",
                if is_empty { "empty" } else { "built store" },
                took.filed.as_secs_f64(),
                took.indexed.as_secs_f64()
            );
            let rates = if is_empty { &mut empty } else { &mut full };
            rates.0.push(filed);
            rates.1.push(indexed);
        }
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", fresh.display()));
        }
    }
    if empty.0.is_empty() || full.0.is_empty() {
        let one_side = if empty.0.is_empty() {
            &mut full
        } else {
            &mut empty
        };
        println!(
            "median: {:.0} events/s filed, {:.0} indexed too, none lost",
            median(&mut one_side.0),
            median(&mut one_side.1)
        );
        return Ok(());
    }
    for (what, empty, full) in [
        ("filed", &mut empty.0, &mut full.0),
        ("filed and indexed", &mut empty.1, &mut full.1),
    ] {
        let (empty, full) = (median(empty), median(full));
        println!(
            "median {what}: empty {empty:.0} events/s, built store {full:.0} events/s: {:.2}×",
            full / empty
        );
    }
    println!("none lost");
    Ok(())
}
