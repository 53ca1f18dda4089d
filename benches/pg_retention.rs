//! Retention on PostgreSQL under load: one `earshot listen --store
//! postgres://…` (the release binary) on a throwaway cluster (the test
//! kit's `PgCluster`) files `rate` signed events/s for `seconds` s (the
//! test kit's flood, every tenth twice at once), and a third of the way in
//! a day of `n` old events, written straight into its partition by one
//! `INSERT … SELECT generate_series` (not through HTTP), is dropped by
//! `PgStore::prune` (DETACH PARTITION CONCURRENTLY, then DROP). Each round
//! runs a baseline flood with no drop first, then the one with the drop,
//! on the same observer. Loopback only.
//!
//! Per trial: events, 2xx answers per second of the flood, p50/p99/max
//! answer time of the 2xx answers (from the POST's start), lost (answered
//! 2xx and not in the store), unacked, and for the drop the rows and bytes
//! dropped and how long the prune took (its longest detach too).
//!
//! Run: `cargo build --release && cargo bench --bench pg_retention --
//! [n=200000] [rate=500] [seconds=20] [rounds=1] [in_flight=64]`

mod support;

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use earshot_core::redact::SecretString;
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::postgres::days::{DAY_MS, partition_name};
use earshot_core::store::postgres::{PasswordSources, PgPruneReport, PgStore, PgTarget};
use earshot_core::store::retention::Period;
use earshot_testkit::flood::{FloodPlan, FloodReport, flood};
use earshot_testkit::postgres::PgCluster;

type BenchError = Box<dyn std::error::Error + Send + Sync>;

const SECRET: &str = "whsec_bench_secret_0123456789abcdefghij";
const DATABASE: &str = "bench";

#[derive(Clone, Copy)]
struct Args {
    n: u64,
    rate: u32,
    seconds: u64,
    rounds: usize,
    in_flight: usize,
}

fn parse_args() -> Result<Args, BenchError> {
    let mut args = Args {
        n: 200_000,
        rate: 500,
        seconds: 20,
        rounds: 1,
        in_flight: 64,
    };
    for (key, value) in support::key_values()? {
        match key.as_str() {
            "n" => args.n = value.parse()?,
            "rate" => args.rate = value.parse()?,
            "seconds" => args.seconds = value.parse()?,
            "rounds" => args.rounds = value.parse()?,
            "in_flight" => args.in_flight = value.parse()?,
            _ => return Err(format!("unknown argument {key}").into()),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), BenchError> {
    let args = parse_args()?;
    let binary = support::release_binary().map_err(|error| error.to_string())?;
    let dir = tempfile::tempdir()?;
    let cluster = PgCluster::start()?;
    cluster.create_database(DATABASE)?;
    let url = cluster.url(DATABASE);
    let sources = PasswordSources {
        env_password: Some(SecretString::new(cluster.password())),
        ..PasswordSources::default()
    };
    let store = PgStore::connect(PgTarget::parse(&url)?, &sources).await?;
    let mut command = support::isolated(&binary, dir.path());
    command
        .args(["listen", "--secret", SECRET, "--store", &url])
        .env("PGPASSWORD", cluster.password());
    let (_observer, observer_url) = support::start_listen(command, Duration::from_secs(30))?;
    println!(
        "n={} rate={} seconds={} rounds={} in_flight={}",
        args.n, args.rate, args.seconds, args.rounds, args.in_flight
    );
    println!(
        "{:<14} {:>7} {:>7} {:>7} {:>7} {:>7} {:>5} {:>7} {:>9} {:>8} {:>8} {:>8}",
        "trial",
        "events",
        "2xx/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "lost",
        "unacked",
        "dropped",
        "MB freed",
        "prune s",
        "detach s"
    );
    for round in 0..args.rounds {
        let baseline = trial(&args, &observer_url, &format!("base{round}")).await;
        print_trial("no drop", &baseline, &cluster, None)?;

        let back = 3 + round as i64;
        let filled = Instant::now();
        fill_old_day(&store, &cluster, back, args.n).await?;
        println!(
            "  filled {} rows into {} in {:.1} s",
            args.n,
            partition_name(earshot_core::store::now_ms() - back * DAY_MS),
            filled.elapsed().as_secs_f64()
        );
        let prefix = format!("drop{round}");
        let flooding = {
            let url = observer_url.clone();
            let prefix = prefix.clone();
            tokio::spawn(async move { trial(&args, &url, &prefix).await })
        };
        tokio::time::sleep(Duration::from_secs(args.seconds) / 3).await;
        let started = Instant::now();
        let never = AtomicBool::new(false);
        let pruned = store
            .prune(
                Period::parse("1d")?,
                earshot_core::store::now_ms(),
                None,
                &never,
            )
            .await?;
        let prune_took = started.elapsed();
        let flooded = flooding.await?;
        print_trial(
            "while dropping",
            &flooded,
            &cluster,
            Some((&pruned, prune_took)),
        )?;
    }
    Ok(())
}

/// One flood of `args.rate` events/s for `args.seconds` to `url`.
async fn trial(args: &Args, url: &str, prefix: &str) -> (String, FloodReport) {
    let plan = FloodPlan {
        prefix: prefix.to_owned(),
        rate_per_s: args.rate,
        duration: Duration::from_secs(args.seconds),
        twice_every: 10,
        in_flight: args.in_flight,
    };
    (prefix.to_owned(), flood(url, SECRET, &plan).await)
}

/// `n` events on the day `back` days ago: its partition made by filing one
/// event, then one `INSERT … SELECT` of the rest (bodies of 300 bytes, 1,000
/// sessions).
async fn fill_old_day(
    store: &PgStore,
    cluster: &PgCluster,
    back: i64,
    n: u64,
) -> Result<(), BenchError> {
    let day = earshot_core::store::now_ms() - back * DAY_MS;
    let start = day.div_euclid(DAY_MS) * DAY_MS;
    store
        .file(&ObservedEvent {
            event_id: format!("old-{back}-first"),
            event: "call.failed".into(),
            session_id: "old".into(),
            kind: "call",
            occurred_ms: start,
            received_ms: start,
            delivery_id: None,
            headers: Vec::new(),
            body: b"{}".to_vec(),
        })
        .await?;
    let step = (DAY_MS - 1) / i64::try_from(n.max(1))?;
    cluster.psql(
        DATABASE,
        &format!(
            "INSERT INTO earshot.events (event_id, event, session_id, occurred_ms, received_ms, \
             delivery_id, headers, body) \
             SELECT 'old-{back}-' || g, 'call.failed', 'call-old-' || (g % 1000), \
             {start} + g * {step}, {start} + g * {step}, 'dlv-' || g, \
             '[[\"content-type\",\"application/json\"]]', convert_to(repeat('x', 300), 'UTF8') \
             FROM generate_series(1, {n}) g"
        ),
    )?;
    Ok(())
}

fn print_trial(
    name: &str,
    (prefix, flooded): &(String, FloodReport),
    cluster: &PgCluster,
    pruned: Option<(&PgPruneReport, Duration)>,
) -> Result<(), BenchError> {
    let kept: HashSet<String> = cluster
        .psql(
            DATABASE,
            &format!("SELECT event_id FROM earshot.events WHERE event_id LIKE '{prefix}-%'"),
        )?
        .lines()
        .map(str::to_owned)
        .collect();
    let lost = flooded.acked_ids().filter(|id| !kept.contains(*id)).count();
    let ms = |p| {
        flooded
            .latency_percentile(p)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    let acked = flooded.acked_ids().count();
    let (dropped, freed, took, detach) = match pruned {
        Some((report, took)) => (
            report.report.removed.total().to_string(),
            format!("{:.1}", report.bytes_freed() as f64 / 1e6),
            format!("{:.2}", took.as_secs_f64()),
            format!("{:.2}", report.report.longest_hold.as_secs_f64()),
        ),
        None => ("-".into(), "-".into(), "-".into(), "-".into()),
    };
    println!(
        "{:<14} {:>7} {:>7.0} {:>7.1} {:>7.1} {:>7.1} {:>5} {:>7} {:>9} {:>8} {:>8} {:>8}",
        name,
        flooded.events.len(),
        acked as f64 / flooded.elapsed.as_secs_f64(),
        ms(50.0),
        ms(99.0),
        ms(100.0),
        lost,
        flooded.unacked(),
        dropped,
        freed,
        took,
        detach
    );
    Ok(())
}
