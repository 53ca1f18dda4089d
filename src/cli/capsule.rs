//! `earshot capsule export|compare`: an incident kept in one file
//! (`earshot_core::capsule`, where the format is documented), and what its
//! replay (`earshot emulator --replay FILE`) did beside what was recorded.
//! Export exits 0 when it wrote events, 1 when none matched; compare exits
//! 0 when the replay delivered every event, 1 when one was not, 2 on bad
//! input.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::GlobalOptions;
use super::history_args::{StoreArg, parse_since};
use super::output::{emit, plain};
use earshot_core::capsule::{self, compare, export, format};
use earshot_core::clock_text::utc_datetime;
use earshot_core::history::recover;

/// The most events one capsule holds unless `--limit` says otherwise.
const DEFAULT_LIMIT: usize = 10_000;

#[derive(Args, Debug)]
pub(crate) struct CapsuleArgs {
    #[command(subcommand)]
    pub(crate) command: CapsuleCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum CapsuleCommand {
    /// Write what the store holds about an incident to a file: each
    /// event's bytes and headers (no signature, no credential) and per
    /// subscription its attempts, personal data masked.
    Export(ExportArgs),
    /// Per event, what happened in the incident and in its replay.
    Compare(CompareArgs),
}

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// The window: a duration back from now (90s, 30m, 2h, 7d) or an RFC
    /// 3339 time.
    #[arg(long, default_value = "24h", value_parser = parse_since, value_name = "DURATION")]
    pub(crate) since: i64,
    /// One subscription's events and attempts only (its id, or any unique
    /// prefix); else every subscription's but the observer's.
    #[arg(long, value_name = "ID")]
    pub(crate) subscription: Option<String>,
    /// These sessions or calls only (full ids; repeatable).
    #[arg(long = "session", value_name = "ID", num_args = 1..)]
    pub(crate) sessions: Vec<String>,
    /// Keep phone numbers and presigned links in the bodies (masked
    /// otherwise: the bytes are then the masked JSON).
    #[arg(long)]
    pub(crate) keep_personal_data: bool,
    /// At most N events (the newest of the window).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT)]
    pub(crate) limit: usize,
    /// The capsule file to write (replaced).
    #[arg(long, value_name = "FILE")]
    pub(crate) out: PathBuf,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// The capsule.
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// The replay's results [default: FILE.replay.jsonl, where `earshot
    /// emulator --replay FILE` writes them].
    #[arg(long, value_name = "FILE")]
    pub(crate) results: Option<PathBuf>,
    /// One JSON object per event and subscription on stdout, nothing else.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: CapsuleArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    match args.command {
        CapsuleCommand::Export(args) => run_export(args, global),
        CapsuleCommand::Compare(args) => run_compare(args),
    }
}

fn run_export(args: ExportArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let path = args.store.path(global)?;
    if !path.exists() {
        eprintln!(
            "error: no store at {}: the observer (`earshot listen --store`) keeps the events \
             a capsule holds",
            path.display()
        );
        return Ok(ExitCode::from(1));
    }
    let store = args.store.open(global)?;
    // Any unique prefix of the id, as every command takes it.
    let subscription = match &args.subscription {
        Some(id) => Some(recover::find_subscription(&store, id)?.id),
        None => None,
    };
    let selection = export::Selection {
        since_ms: args.since,
        subscription,
        sessions: args.sessions,
        keep_personal_data: args.keep_personal_data,
        limit: args.limit,
    };
    let (capsule, unknown) = export::export(&store, &selection)?;
    if capsule.events.is_empty() {
        eprintln!("nothing in the store matches: list what it holds with `earshot events`");
        return Ok(ExitCode::from(1));
    }
    format::write(&capsule, &args.out)?;
    eprintln!(
        "wrote {} event(s) recorded {} for {} subscription(s) to {}; personal data {}, \
         signatures dropped",
        capsule.events.len(),
        window(&capsule.header),
        capsule.subscriptions.len(),
        plain(&args.out.display().to_string()),
        capsule.header.personal_data
    );
    if unknown > 0 {
        eprintln!(
            "note: {unknown} outcome(s) read `unknown`: their attempts were never swept; run \
             `earshot health` first to record them"
        );
    }
    if capsule.events.len() == args.limit {
        eprintln!("note: the newest {} events only (--limit)", args.limit);
    }
    Ok(ExitCode::SUCCESS)
}

/// `from 2026-12-05 21:15:34Z to 2026-12-05 21:40:02Z`, the capsule's
/// recorded window.
fn window(header: &format::Header) -> String {
    match (header.first_ms, header.last_ms) {
        (Some(first), Some(last)) => {
            format!("from {} to {}", utc_datetime(first), utc_datetime(last))
        }
        _ => "at unknown times".to_owned(),
    }
}

fn run_compare(args: CompareArgs) -> color_eyre::Result<ExitCode> {
    let capsule = match format::read(&args.file) {
        Ok(capsule) => capsule,
        Err(error) => {
            eprintln!("error: {}", plain(&error.to_string()));
            return Ok(ExitCode::from(2));
        }
    };
    let results_path = args
        .results
        .unwrap_or_else(|| capsule::results_path(&args.file));
    if !results_path.exists() {
        eprintln!(
            "error: no replay results at {}: replay the capsule first with `earshot emulator \
             --replay {} --deliver-to URL`",
            plain(&results_path.display().to_string()),
            plain(&args.file.display().to_string())
        );
        return Ok(ExitCode::from(2));
    }
    let results = format::read_results(&results_path)?;
    if let Some(replayed) = &results.header.capsule_sha256
        && *replayed != format::digest(&args.file)?
    {
        eprintln!(
            "error: {} holds the replay of another capsule than {}: give its results with \
             --results, or replay this one",
            plain(&results_path.display().to_string()),
            plain(&args.file.display().to_string())
        );
        return Ok(ExitCode::from(2));
    }
    let (lines, summaries) = compare::compare(&capsule, &results);
    for line in &lines {
        if args.json {
            println!("{}", serde_json::to_string(line)?);
        } else {
            emit(&format!("{}\n", line.line()))?;
        }
    }
    let out = |text: String| {
        if args.json {
            eprintln!("{}", plain(&text));
            Ok(())
        } else {
            emit(&format!("{text}\n"))
        }
    };
    out(format!(
        "recorded {}, {} event(s); replayed at speed {} to {}",
        window(&capsule.header),
        capsule.events.len(),
        results.header.speed,
        results.header.target
    ))?;
    for summary in &summaries {
        out(summary.line())?;
    }
    let all_delivered = lines.iter().all(|line| line.replay.state == "delivered");
    Ok(if all_delivered {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
