//! Arguments shared by the incident-history commands (`sessions`, `health`,
//! `redeliver`, `listen --store`): where the store is, and `--since`.

use std::path::{Path, PathBuf};

use chrono::Utc;
use clap::Args;

use super::{Connection, GlobalOptions};
use earshot_core::config::Paths;
use earshot_core::history::sweep::{SweepReport, sweep};
use earshot_core::store::{self, AsyncStore, Store};

/// `--store PATH` (`EARSHOT_STORE`), else the profile's `store`, else
/// `earshot.db` in the state dir.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct StoreArg {
    /// The incident-history store [default: the profile's `store`, else
    /// earshot.db in the state directory].
    #[arg(long = "store", env = "EARSHOT_STORE", value_name = "PATH", value_parser = store_file)]
    pub(crate) path: Option<PathBuf>,
}

/// A `--store` value (or `EARSHOT_STORE`) as a store file: a PostgreSQL
/// URL is refused (exit 2) until the command can use one, rather than
/// made into a directory named `postgres:`.
pub(crate) fn store_file(text: &str) -> Result<PathBuf, String> {
    if earshot_core::store::postgres::is_postgres_url(text) {
        return Err(format!(
            "{}; give the path of a store file",
            earshot_core::store::postgres::NOT_SUPPORTED_YET
        ));
    }
    Ok(PathBuf::from(text))
}

impl StoreArg {
    pub(crate) fn open(&self, global: &GlobalOptions) -> color_eyre::Result<Store> {
        open_store(self.path.as_deref(), global)
    }

    /// The path [`StoreArg::open`] would open, without opening it.
    pub(crate) fn path(&self, global: &GlobalOptions) -> color_eyre::Result<PathBuf> {
        Ok(store_path(self.path.as_deref(), global)?.0)
    }
}

/// `path`, else the profile's `store`, else the default store of the state
/// directory (with that directory, which is earshot's own).
fn store_path(
    path: Option<&Path>,
    global: &GlobalOptions,
) -> color_eyre::Result<(PathBuf, Option<PathBuf>)> {
    let given = match path {
        // `listen` reads EARSHOT_STORE itself, past the value parser.
        Some(path) => {
            Some(store_file(&path.to_string_lossy()).map_err(color_eyre::eyre::Report::msg)?)
        }
        None => earshot_core::config::profile_store(
            global.config.as_deref(),
            global.profile.as_deref(),
        )?,
    };
    Ok(match given {
        Some(path) => (path, None),
        None => {
            let state_dir = Paths::compute(global.config.as_deref())?.state_dir;
            (store::default_path(&state_dir), Some(state_dir))
        }
    })
}

/// Opens `path`, else the profile's `store`, else the default store of
/// the state directory (earshot's own, so it is narrowed to 0700 too);
/// each mode narrowed is said on stderr.
pub(crate) fn open_store(path: Option<&Path>, global: &GlobalOptions) -> color_eyre::Result<Store> {
    let (path, own_dir) = store_path(path, global)?;
    let store = Store::open(&path)?;
    let own_dir = own_dir.and_then(|dir| store::private::tighten_dir(&dir));
    for tightened in own_dir.iter().chain(store.tightened()) {
        eprintln!("earshot: {tightened}");
    }
    Ok(store)
}

/// `--since`, `--budget`, `--no-sweep`: the window, and the sweep a
/// history command runs first.
#[derive(Args, Debug, Clone)]
pub(crate) struct SweepArgs {
    /// The window: a duration back from now (90s, 30m, 2h, 7d) or an RFC 3339 time.
    #[arg(long, default_value = "24h", value_parser = parse_since, value_name = "DURATION")]
    pub(crate) since: i64,
    /// Requests the sweep may send at most.
    #[arg(long, default_value_t = earshot_core::history::sweep::DEFAULT_BUDGET, value_name = "N")]
    pub(crate) budget: usize,
    /// Use the store as it is, without asking the platform first.
    #[arg(long)]
    pub(crate) no_sweep: bool,
}

impl SweepArgs {
    /// Sweeps into `store` unless `--no-sweep` (then an empty report),
    /// and hands the store back for the reads that follow; a sweep that
    /// stopped early is said on stderr and what it fetched kept.
    pub(crate) async fn sweep_first(
        &self,
        connection: &Connection,
        global: &GlobalOptions,
        store: Store,
    ) -> color_eyre::Result<(Store, SweepReport)> {
        if self.no_sweep {
            return Ok((store, SweepReport::default()));
        }
        let client = connection.client(global)?;
        let shared = AsyncStore::new(store);
        let report = sweep(&client, &shared, self.budget).await?;
        if let Some(why) = &report.stopped {
            eprintln!("warning: the sweep stopped early ({why}); using what the store holds");
        }
        Ok((plain(shared)?, report))
    }
}

/// The plain store again after async work on it (the sweep, recover), for
/// the synchronous reads that follow.
pub(crate) fn plain(shared: AsyncStore) -> color_eyre::Result<Store> {
    shared
        .into_inner()
        .map_err(|_| color_eyre::eyre::eyre!("the store is still held by work that did not finish"))
}

/// `--since`: a duration back from now (`90s`, `30m`, `2h`, `7d`) or an
/// RFC 3339 time; the start of the window in Unix milliseconds.
pub(crate) fn parse_since(text: &str) -> Result<i64, String> {
    earshot_core::history::event_query::since(text, Utc::now().timestamp_millis())
}

/// A duration (`0`, `90s`, `10m`, `2h`, `1h30m`): how long to watch, in
/// the one grammar ([`earshot_core::duration_text::parse`]).
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    if text.trim() == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    earshot_core::duration_text::parse(text).map_err(|error| error.to_string())
}
