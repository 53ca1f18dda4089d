//! Filing throughput and failover of the observer: three `earshot listen
//! --store postgres://…` replicas (the release binary) on one database of
//! a throwaway cluster (the test kit's `PgCluster`), behind the test kit's
//! round-robin TCP proxy, against one `listen --store` on SQLite behind the
//! same proxy, in the same run and interleaved (PostgreSQL, SQLite,
//! PostgreSQL, …). Each trial sends `rate` signed events/s for `seconds`
//! s (every tenth twice at once), then sends what was not answered 2xx
//! again, as the platform retries. With `kill=1` one PostgreSQL replica is
//! killed with SIGKILL halfway through the flood. Loopback only.
//!
//! Per trial: events answered 2xx during the flood per second of it
//! (filed/s), p50/p99 answer time of the 2xx answers (from the POST's
//! start; a POST waiting for one of `in_flight` slots is not timed), lost
//! (answered 2xx during the flood and not in the store), duplicate rows,
//! events the flood did not get a 2xx for (retried), and events still
//! unacked after the retries.
//!
//! Run: `cargo build --release && cargo bench --bench pg_failover --
//! [rate=500] [seconds=10] [kill=1] [rounds=1] [in_flight=64]`

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use earshot_testkit::flood::{FloodPlan, FloodReport, flood, resend_unacked};
use earshot_testkit::postgres::PgCluster;
use earshot_testkit::proxy::{RoundRobinProxy, addr_of};

type BenchError = Box<dyn std::error::Error + Send + Sync>;

const SECRET: &str = "whsec_bench_secret_0123456789abcdefghij";
const DATABASE: &str = "bench";
/// How long the retries after a flood may take.
const RETRIES_WITHIN: Duration = Duration::from_secs(30);

struct Args {
    rate: u32,
    seconds: u64,
    kill: bool,
    rounds: usize,
    in_flight: usize,
}

fn parse_args() -> Result<Args, BenchError> {
    let mut args = Args {
        rate: 500,
        seconds: 10,
        kill: true,
        rounds: 1,
        in_flight: 64,
    };
    for (key, value) in support::key_values()? {
        match key.as_str() {
            "rate" => args.rate = value.parse()?,
            "seconds" => args.seconds = value.parse()?,
            "kill" => args.kill = value != "0",
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
    let pg_url = cluster.url(DATABASE);
    let sqlite = dir.path().join("earshot.db");
    println!(
        "rate={} seconds={} kill={} rounds={} in_flight={}",
        args.rate, args.seconds, args.kill, args.rounds, args.in_flight
    );
    println!(
        "{:<22} {:>7} {:>9} {:>8} {:>8} {:>5} {:>5} {:>8} {:>8}",
        "trial", "events", "filed/s", "p50 ms", "p99 ms", "lost", "dups", "retried", "unacked"
    );
    for round in 0..args.rounds {
        // PostgreSQL: three replicas.
        let mut replicas = Vec::new();
        for _ in 0..3 {
            let mut command = support::isolated(&binary, dir.path());
            command
                .args(["listen", "--secret", SECRET, "--store", &pg_url])
                .env("PGPASSWORD", cluster.password());
            replicas.push(support::start_listen(command, Duration::from_secs(30))?);
        }
        let prefix = format!("pg{round}");
        let trial = Trial::run(&args, &prefix, &mut replicas).await?;
        let rows = pg_rows(&cluster, &prefix)?;
        let name = if args.kill {
            "postgres x3, 1 killed"
        } else {
            "postgres x3"
        };
        trial.print(name, &rows);
        drop(replicas);

        // SQLite: one observer.
        let mut command = support::isolated(&binary, dir.path());
        command
            .args(["listen", "--secret", SECRET, "--store"])
            .arg(&sqlite);
        let mut one = vec![support::start_listen(command, Duration::from_secs(30))?];
        let prefix = format!("sq{round}");
        let trial = Trial::run(
            &Args {
                kill: false,
                ..args
            },
            &prefix,
            &mut one,
        )
        .await?;
        trial.print("sqlite x1", &sqlite_rows(&sqlite, &prefix)?);
        drop(one);
    }
    Ok(())
}

/// One flood through the proxy and its retries.
struct Trial {
    flooded: FloodReport,
    acked_by_flood: Vec<String>,
    after_retries: FloodReport,
}

impl Trial {
    async fn run(
        args: &Args,
        prefix: &str,
        replicas: &mut [(support::ChildGuard, String)],
    ) -> Result<Trial, BenchError> {
        let addrs = replicas.iter().map(|(_, url)| addr_of(url)).collect();
        let proxy = RoundRobinProxy::start(addrs).await?;
        let plan = FloodPlan {
            prefix: prefix.to_owned(),
            rate_per_s: args.rate,
            duration: Duration::from_secs(args.seconds),
            twice_every: 10,
            in_flight: args.in_flight,
        };
        let url = proxy.url();
        let sending = tokio::spawn(async move { flood(&url, SECRET, &plan).await });
        if args.kill
            && let Some((victim, _)) = replicas.get_mut(1)
        {
            tokio::time::sleep(Duration::from_secs(args.seconds) / 2).await;
            victim.0.kill()?;
            victim.0.wait()?;
        }
        let flooded = sending.await?;
        let acked_by_flood = flooded.acked_ids().map(str::to_owned).collect();
        let after_retries = resend_unacked(
            &proxy.url(),
            SECRET,
            flooded.clone(),
            args.in_flight.min(16),
            RETRIES_WITHIN,
        )
        .await;
        Ok(Trial {
            flooded,
            acked_by_flood,
            after_retries,
        })
    }

    fn print(&self, name: &str, rows: &HashMap<String, usize>) {
        let ms = |p| {
            self.flooded
                .latency_percentile(p)
                .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
        };
        let lost = self
            .acked_by_flood
            .iter()
            .filter(|id| !rows.contains_key(*id))
            .count();
        let duplicates: usize = rows.values().map(|n| n.saturating_sub(1)).sum();
        let filed_per_s = self.acked_by_flood.len() as f64 / self.flooded.elapsed.as_secs_f64();
        let retried = self.flooded.events.len() - self.acked_by_flood.len();
        println!(
            "{:<22} {:>7} {:>9.0} {:>8.1} {:>8.1} {:>5} {:>5} {:>8} {:>8}",
            name,
            self.flooded.events.len(),
            filed_per_s,
            ms(50.0),
            ms(99.0),
            lost,
            duplicates,
            retried,
            self.after_retries.unacked()
        );
    }
}

/// The event ids of the PostgreSQL store starting with `prefix`, with
/// their row counts.
fn pg_rows(cluster: &PgCluster, prefix: &str) -> Result<HashMap<String, usize>, BenchError> {
    let text = cluster.psql(
        DATABASE,
        &format!("SELECT event_id FROM earshot.events WHERE event_id LIKE '{prefix}-%'"),
    )?;
    Ok(count_lines(&text))
}

/// The same of the SQLite store, read apart from earshot.
fn sqlite_rows(path: &Path, prefix: &str) -> Result<HashMap<String, usize>, BenchError> {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut query = db.prepare("SELECT event_id FROM events WHERE event_id LIKE ?1")?;
    let ids = query
        .query_map([format!("{prefix}-%")], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(count_lines(&ids.join("\n")))
}

fn count_lines(text: &str) -> HashMap<String, usize> {
    let mut rows = HashMap::new();
    for id in text.lines().filter(|line| !line.is_empty()) {
        *rows.entry(id.to_owned()).or_insert(0) += 1;
    }
    rows
}
