//! Retention for `earshot listen --store`: the period (`--retention D`,
//! else the profile's `retention`, else none: keep everything) and the
//! observer's pruner ([`earshot_core::store::pruner`]), whose runs are said on
//! stderr.

use std::path::Path;

use super::GlobalOptions;
use super::store_cmd::{removed_list, thousands};
use earshot_core::store::pruner::{self, Pruner};
use earshot_core::store::retention::Period;
use earshot_core::{config, duration_text};

/// `--retention` if given, else the chosen profile's `retention`; the
/// error is the message for exit 2.
pub(super) fn period(
    flag: Option<Period>,
    global: &GlobalOptions,
) -> Result<Option<Period>, String> {
    if flag.is_some() {
        return Ok(flag);
    }
    config::profile_retention_of(global.config.as_deref(), global.profile.as_deref())
        .map_err(|error| error.to_string())
}

/// Starts pruning the store at `path` to `period`, and says so.
pub(super) fn start(path: &Path, period: Period) -> color_eyre::Result<Pruner> {
    let every = pruner::interval(period);
    eprintln!(
        "keeping {period}: older rows are removed {} after the start, then every {}",
        duration_text::of(pruner::FIRST_RUN_AFTER),
        duration_text::of(every)
    );
    let pruner = Pruner::start(path.to_owned(), period, move |outcome| match outcome {
        Ok(report) => {
            if report.removed.total() > 0 || report.kept_rows > 0 {
                let kept = if report.kept_rows > 0 {
                    format!(
                        "; kept {} older rows an open incident or an unfinished recovery needs",
                        thousands(report.kept_rows)
                    )
                } else {
                    String::new()
                };
                eprintln!(
                    "earshot listen: removed {} rows older than {period} ({}) in {}{kept}",
                    thousands(report.removed.total()),
                    removed_list(&report.removed),
                    duration_text::of(report.elapsed)
                );
            }
        }
        Err(error) => eprintln!(
            "earshot listen: the retention prune failed ({error}); trying again in {}",
            duration_text::of(every)
        ),
    })?;
    Ok(pruner)
}
