//! `earshot store index`: fills the free-text index of a store migrated
//! from before it ([`earshot_core::store::event_words::fill`]), in short
//! batches with pauses, so a running observer keeps filing; until it is
//! complete, free text in `events` and the console scans (correct, slower).
//! A store created by this version has it complete from the start. Stopped
//! by SIGINT, SIGTERM or SIGHUP, it keeps what it did (exit 128 + the
//! signal); run it again to go on.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::Args;

use super::GlobalOptions;
use super::history_args::StoreArg;
use super::store_cmd::{ProgressLine, thousands};
use earshot_core::duration_text;
use earshot_core::store::event_words::{self, FillProgress};

/// Rowids put in the index in one write transaction.
const BATCH: i64 = 2_000;

#[derive(Args, Debug)]
pub(crate) struct IndexArgs {
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

pub(crate) async fn run(args: IndexArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let mut store = args.store.open(global)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut signals = std::pin::pin!(earshot_core::shutdown::signals()?);
    let started = Instant::now();
    let mut task = tokio::task::spawn_blocking({
        let stop = stop.clone();
        move || -> Result<(u64, FillProgress), earshot_core::store::StoreError> {
            let mut progress = ProgressLine::new();
            let mut added = 0;
            loop {
                let batch_started = Instant::now();
                let step = event_words::fill(&mut store, BATCH)?;
                added += step.added;
                if step.complete || stop.load(Ordering::Relaxed) {
                    progress.finish();
                    return Ok((added, step));
                }
                progress.show(|elapsed| {
                    format!(
                        "indexing free text: {} events added, rowid {} of {} ({} %), {}",
                        thousands(added),
                        thousands(step.done_rowids.unsigned_abs()),
                        thousands(step.all_rowids.unsigned_abs()),
                        step.done_rowids * 100 / step.all_rowids.max(1),
                        duration_text::of_secs(elapsed.as_secs())
                    )
                });
                // Room for another writer (the observer) between batches.
                std::thread::sleep(batch_started.elapsed() / 2);
            }
        }
    });
    let (outcome, stopped_by) = tokio::select! {
        joined = &mut task => (joined, None),
        signal = &mut signals => {
            stop.store(true, Ordering::Relaxed);
            (task.await, Some(signal))
        }
    };
    let (added, last) = outcome??;
    let took = duration_text::of(started.elapsed());
    if last.complete {
        println!(
            "free-text index complete: {} events added in {took}",
            thousands(added)
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "free-text index not complete: {} events added in {took}, up to rowid {} of {}",
        thousands(added),
        thousands(last.done_rowids.unsigned_abs()),
        thousands(last.all_rowids.unsigned_abs())
    );
    match stopped_by {
        Some(signal) => {
            eprintln!(
                "stopped by {}: what was indexed stays; run the same command again to finish \
                 (free text scans until then)",
                signal.name()
            );
            Ok(signal.exit_code())
        }
        None => Ok(ExitCode::FAILURE),
    }
}
