//! `earshot store check [--full] [--json]`: the whole-file check of the
//! store ([`earshot_core::store::check::whole_file`]), which opening a
//! store no longer runs. Read-only, so safe beside a running observer.
//! Exit 0 sound, 1 damaged (or the file cannot be read as a store).

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::GlobalOptions;
use super::history_args::StoreArg;
use super::output::plain;
use super::store_cmd::ProgressLine;
use earshot_core::duration_text;
use earshot_core::store::check::{self, Checked, Depth};

#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Also check that every index holds exactly its table's rows
    /// (`PRAGMA integrity_check`; slower than the default `quick_check`).
    #[arg(long)]
    pub(crate) full: bool,
    /// The result as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// How often the progress line is offered an update (it shows what is due).
const PROGRESS_POLL: Duration = Duration::from_millis(100);

pub(crate) async fn run(args: CheckArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let path = args.store.path(global)?;
    let depth = if args.full { Depth::Full } else { Depth::Quick };
    let size = std::fs::metadata(&path).map(|meta| meta.len()).ok();
    eprintln!(
        "checking every page of {}{} …",
        plain(&path.display().to_string()),
        size.map(|bytes| format!(" ({})", size_text(bytes)))
            .unwrap_or_default()
    );
    let checked = {
        let path = path.clone();
        with_progress(move || check::whole_file(&path, depth)).await?
    }?;
    let pragma = match depth {
        Depth::Quick => "quick_check",
        Depth::Full => "integrity_check",
    };
    if args.json {
        println!(
            "{}",
            json!({
                "path": path,
                "check": pragma,
                "bytes": checked.bytes,
                "seconds": checked.elapsed.as_secs_f64(),
                "sound": checked.is_sound(),
                "problems": checked.problems,
            })
        );
    } else {
        print!(
            "{}",
            report_text(&path.display().to_string(), pragma, &checked)
        );
    }
    Ok(if checked.is_sound() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Runs `check` on the blocking pool, saying on stderr how long it has
/// run ([`ProgressLine`]).
async fn with_progress<T: Send + 'static>(
    check: impl FnOnce() -> T + Send + 'static,
) -> color_eyre::Result<T> {
    let (done, finished) = mpsc::channel::<()>();
    let ticker = std::thread::spawn(move || {
        let mut progress = ProgressLine::new();
        while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(PROGRESS_POLL) {
            progress.show(|elapsed| {
                format!(
                    "still checking: {} so far",
                    duration_text::of_secs(elapsed.as_secs())
                )
            });
        }
        progress.finish();
    });
    let result = tokio::task::spawn_blocking(check).await;
    drop(done);
    let _ = ticker.join();
    Ok(result?)
}

fn report_text(path: &str, pragma: &str, checked: &Checked) -> String {
    let how = format!(
        "{pragma} of {} in {}",
        size_text(checked.bytes),
        duration_text::of(checked.elapsed)
    );
    if checked.is_sound() {
        return format!("{}: sound ({how})\n", plain(path));
    }
    let mut out = format!(
        "{}: DAMAGED ({how}; {} finding{}):\n",
        plain(path),
        checked.problems.len(),
        if checked.problems.len() == 1 { "" } else { "s" }
    );
    for problem in &checked.problems {
        out.push_str(&format!("  {}\n", plain(problem)));
    }
    out.push_str(
        "commands that read a damaged page stop with an error (never a wrong count); \
         restore a backup, or move the file aside (earshot starts a new store there)\n",
    );
    out
}

/// `4.8 GB`, `312 MB`, `20 KB`: a file size in decimal units.
pub(super) fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1_000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1_000.0 {
            break;
        }
        value /= 1_000.0;
        unit = next;
    }
    if value < 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_decimal_units() {
        assert_eq!(size_text(512), "512 B");
        assert_eq!(size_text(20_480), "20 KB");
        assert_eq!(size_text(4_800_000_000), "4.8 GB");
        assert_eq!(size_text(312_000_000), "312 MB");
    }

    #[test]
    fn a_damaged_report_lists_each_finding_and_what_to_do() {
        let checked = Checked {
            bytes: 4_096,
            elapsed: Duration::from_millis(20),
            problems: vec!["Tree 7 page 7: btreeInitPage() returns error code 11".into()],
        };
        let text = report_text("/tmp/earshot.db", "quick_check", &checked);
        assert!(
            text.starts_with("/tmp/earshot.db: DAMAGED (quick_check of 4.1 KB"),
            "{text}"
        );
        assert!(text.contains("1 finding):\n  Tree 7 page 7"), "{text}");
        assert!(text.contains("move the file aside"), "{text}");
    }
}
