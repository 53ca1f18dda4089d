//! `earshot health`, `events` and `incidents` over a PostgreSQL store of
//! an account's day (issue 34): a throwaway cluster (the test kit's
//! `PgCluster`, loopback, its socket in its directory) kept in
//! `target/pg-scale/events-N/` and reused when present, filled once by
//! SQL on the server (`fill.rs`; the events and sessions checked against
//! the filing path, `verify.rs`), then the release binary timed as a user
//! runs it, each command beside the plain SQL of the same answer in the
//! same run, interleaved (`timing.rs`).
//!
//! Run: `cargo build --release && cargo bench --bench pg_scale --
//! [events=1000000] [runs=5] [refill=1] [binary=PATH]`

#[path = "../support/mod.rs"]
mod support;

mod fill;
mod timing;
mod verify;

use std::path::PathBuf;
use std::time::Instant;

use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::postgres::PgCluster;

type BenchError = Box<dyn std::error::Error + Send + Sync>;

const DATABASE: &str = "bench";
const OBSERVER_SUB: &str = "0b5e4e00-7d3a-4e6b-9c0f-0000000000aa";
const CUSTOMER_SUB: &str = "c0570000-7d3a-4e6b-9c0f-0000000000bb";
/// Events a statement of the fill inserts.
const CHUNK: i64 = 100_000;

struct Args {
    events: i64,
    runs: usize,
    refill: bool,
    /// Another earshot binary to time (an earlier build, for a before).
    binary: Option<PathBuf>,
}

fn parse_args() -> Result<Args, BenchError> {
    let mut args = Args {
        events: 1_000_000,
        runs: 5,
        refill: false,
        binary: None,
    };
    for (key, value) in support::key_values()? {
        match key.as_str() {
            "events" => args.events = value.parse()?,
            "runs" => args.runs = value.parse()?,
            "refill" => args.refill = value == "1",
            "binary" => args.binary = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown argument {key}").into()),
        }
    }
    Ok(args)
}

fn main() -> Result<(), BenchError> {
    let args = parse_args()?;
    let binary = match &args.binary {
        Some(binary) => binary.clone(),
        None => support::release_binary().map_err(|error| error.to_string())?,
    };
    let kept = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("pg-scale")
        .join(format!("events-{}", args.events));
    if args.refill {
        let _ = std::fs::remove_dir_all(&kept);
    }
    // The cluster is started on this thread, which lives to the end.
    let cluster = PgCluster::start_kept(&kept)?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run(&args, &cluster, &binary, &kept))
}

async fn run(
    args: &Args,
    cluster: &PgCluster,
    binary: &std::path::Path,
    kept: &std::path::Path,
) -> Result<(), BenchError> {
    let marker = kept.join("filled-at-ms");
    let events_marker = kept.join("events-at-ms");
    let read = |path: &std::path::Path| -> Option<i64> {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
    };
    let url = cluster.url(DATABASE);
    let client = match (read(&marker), read(&events_marker)) {
        (Some(_), _) => connect(cluster).await?,
        (None, events_at) => {
            let now_ms = match events_at {
                Some(now_ms) => now_ms,
                None => {
                    cluster.create_database(DATABASE)?;
                    earshot_core::store::now_ms()
                }
            };
            let client = connect(cluster).await?;
            if events_at.is_none() {
                fill_events(args.events, now_ms, cluster, &client).await?;
                std::fs::write(&events_marker, now_ms.to_string())?;
            }
            fill_sweep(args.events, now_ms, &client).await?;
            std::fs::write(&marker, now_ms.to_string())?;
            client
        }
    };
    let filled_at = std::fs::read_to_string(&marker)?.trim().parse::<i64>()?;
    // The outcome rows say every session was swept at the fill; a store
    // filled before the sessions said so too gets it now (once).
    let swept = client
        .execute(
            "UPDATE earshot.sessions SET last_swept_ms = $1, unsettled = false
             WHERE last_swept_ms IS NULL",
            &[&filled_at],
        )
        .await?;
    if swept > 0 {
        client
            .batch_execute("VACUUM ANALYZE earshot.sessions")
            .await?;
        println!("  {swept} sessions marked swept at the fill");
    }
    let age_min = (earshot_core::store::now_ms() - filled_at) / 60_000;
    println!(
        "store: {} events over the 24 h before the fill, filled {age_min} min ago, in {}",
        args.events,
        kept.display()
    );
    let dir = tempfile::tempdir()?;
    timing::table(
        &client,
        binary,
        dir.path(),
        &url,
        cluster.password(),
        args.runs,
    )
    .await
}

/// A client of the bench database over loopback TCP, its connection
/// driven on the runtime.
async fn connect(cluster: &PgCluster) -> Result<tokio_postgres::Client, BenchError> {
    let (client, connection) = tokio_postgres::Config::new()
        .host("127.0.0.1")
        .port(cluster.port())
        .user(earshot_testkit::postgres::PG_USER)
        .password(cluster.password())
        .dbname(DATABASE)
        .connect_timeout(std::time::Duration::from_secs(10))
        .connect(tokio_postgres::NoTls)
        .await?;
    tokio::spawn(connection);
    Ok(client)
}

/// The schema by earshot's own migration, the sample filed through the
/// filing path, then the rest of the events and the sessions by SQL;
/// each step timed.
async fn fill_events(
    n: i64,
    now_ms: i64,
    cluster: &PgCluster,
    client: &tokio_postgres::Client,
) -> Result<(), BenchError> {
    let started = Instant::now();
    let store = PgStore::connect(
        PgTarget::parse(&cluster.url(DATABASE))?,
        &cluster.password_sources(),
    )
    .await?;
    client.batch_execute(fill::PRESIGNED).await?;
    verify::file_sample(client, &store, n, now_ms).await?;
    let mut lo = verify::SAMPLE;
    while lo < n {
        let hi = (lo + CHUNK).min(n) - 1;
        let step = Instant::now();
        client
            .batch_execute(&fill::events_and_sessions(n, now_ms, lo, hi))
            .await?;
        println!(
            "  events {lo}..={hi} in {:.1} s",
            step.elapsed().as_secs_f64()
        );
        lo = hi + 1;
    }
    let step = Instant::now();
    client.batch_execute(fill::SESSIONS).await?;
    println!("  sessions in {:.1} s", step.elapsed().as_secs_f64());
    println!(
        "events and sessions filled in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The sweep's tables, `VACUUM ANALYZE` (what autovacuum would have
/// done), then the check of the sampled rows.
async fn fill_sweep(
    n: i64,
    now_ms: i64,
    client: &tokio_postgres::Client,
) -> Result<(), BenchError> {
    let step = Instant::now();
    client
        .batch_execute(&fill::sweep_tables(now_ms, OBSERVER_SUB, CUSTOMER_SUB))
        .await?;
    println!(
        "  subscriptions, attempts, outcome rows, their counts, incident in {:.1} s",
        step.elapsed().as_secs_f64()
    );
    let step = Instant::now();
    client.batch_execute("VACUUM ANALYZE").await?;
    println!("  VACUUM ANALYZE in {:.1} s", step.elapsed().as_secs_f64());
    let (events, sessions) = verify::differences(client, n, now_ms).await?;
    println!(
        "the {} sampled events filed by PgStore::file: {events} events and {sessions} sessions \
         differ from the generator's",
        verify::SAMPLE
    );
    if events != 0 || sessions != 0 {
        return Err("the generated rows are not the filing path's".into());
    }
    Ok(())
}
