//! Arguments shared by the incident-history commands (`sessions`, `health`,
//! `redeliver`, `listen --store`): where the store is, and `--since`.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use clap::Args;

use super::{Connection, GlobalOptions};
use crate::config::Paths;
use crate::history::sweep::{SweepReport, sweep};
use crate::store::{self, Store};

/// `--store PATH` (`EARSHOT_STORE`), default `earshot.db` in the state dir.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArg {
    /// The incident-history store [default: earshot.db in the state directory].
    #[arg(long = "store", env = "EARSHOT_STORE", value_name = "PATH")]
    pub path: Option<PathBuf>,
}

impl StoreArg {
    pub fn open(&self, global: &GlobalOptions) -> color_eyre::Result<Store> {
        open_store(self.path.as_deref(), global)
    }
}

/// Opens `path`, or the default store of the state directory.
pub fn open_store(path: Option<&Path>, global: &GlobalOptions) -> color_eyre::Result<Store> {
    let path = match path {
        Some(path) => path.to_owned(),
        None => store::default_path(&Paths::compute(global.config.as_deref())?.state_dir),
    };
    Ok(Store::open(&path)?)
}

/// `--since`, `--budget`, `--no-sweep`: the window, and the sweep a
/// history command runs first.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// The window: a duration back from now (90s, 30m, 2h, 7d) or an RFC 3339 time.
    #[arg(long, default_value = "24h", value_parser = parse_since, value_name = "DURATION")]
    pub since: i64,
    /// Requests the sweep may send at most.
    #[arg(long, default_value_t = crate::history::sweep::DEFAULT_BUDGET, value_name = "N")]
    pub budget: usize,
    /// Use the store as it is, without asking the platform first.
    #[arg(long)]
    pub no_sweep: bool,
}

impl SweepArgs {
    /// Sweeps into `store` unless `--no-sweep` (then an empty report); a
    /// sweep that stopped early is said on stderr and what it fetched kept.
    pub async fn sweep_first(
        &self,
        connection: &Connection,
        global: &GlobalOptions,
        store: &mut Store,
    ) -> color_eyre::Result<SweepReport> {
        if self.no_sweep {
            return Ok(SweepReport::default());
        }
        let client = connection.client(global)?;
        let report = sweep(&client, store, self.budget).await?;
        if let Some(why) = &report.stopped {
            eprintln!("warning: the sweep stopped early ({why}); using what the store holds");
        }
        Ok(report)
    }
}

/// `--since`: a duration back from now (`90s`, `30m`, `2h`, `7d`) or an
/// RFC 3339 time; the start of the window in Unix milliseconds.
pub fn parse_since(text: &str) -> Result<i64, String> {
    since_at(text, Utc::now())
}

fn since_at(text: &str, now: DateTime<Utc>) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.timestamp_millis());
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds_per = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "`{text}`: give a duration like 90s, 30m, 2h or 7d, or an RFC 3339 time"
            ));
        }
    };
    let count: i64 = number.parse().map_err(|_| {
        format!("`{text}`: the duration needs a whole number before its unit (30m)")
    })?;
    let back = count
        .checked_mul(seconds_per * 1_000)
        .ok_or_else(|| format!("`{text}` is too far back"))?;
    Ok(now.timestamp_millis().saturating_sub(back))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_durations_and_times() {
        let now = DateTime::parse_from_rfc3339("2026-11-23T12:00:00Z")
            .unwrap()
            .to_utc();
        let ms = now.timestamp_millis();
        assert_eq!(since_at("90s", now), Ok(ms - 90_000));
        assert_eq!(since_at("30m", now), Ok(ms - 1_800_000));
        assert_eq!(since_at("2h", now), Ok(ms - 7_200_000));
        assert_eq!(since_at("7d", now), Ok(ms - 604_800_000));
        assert_eq!(since_at("2026-11-23T11:00:00Z", now), Ok(ms - 3_600_000));
        assert!(since_at("2 hours", now).is_err());
        assert!(since_at("h", now).is_err());
    }
}
