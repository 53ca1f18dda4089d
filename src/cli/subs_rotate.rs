//! `earshot subs rotate ID`: a staged rotation that loses no event.
//!
//! 1. **Prepare**: the new secret from `--secret-file`, or generated
//!    (`--generate-secret`, shown once or written 0600 with
//!    `--secret-out`): then it stops, saying the next command. Nothing goes
//!    to the platform.
//! 2. **Check**: the observer's bytes of an event this subscription was
//!    already delivered, sent signed with the new secret, the current one
//!    (`--current-secret-file` or `EARSHOT_WEBHOOK_SECRET`) and a wrong one;
//!    expected not-401, not-401, 401 (`history::rotation`).
//! 3. **Apply**: the `PATCH`, only when the check passed (or `--skip-check`).
//! 4. **Watch**: `--watch 10m` (default; `0` skips) of what was delivered
//!    since, any 401, and when the old secret can go.
//!
//! The store is a file or a PostgreSQL store (`--store postgres://…`): the
//! probe is read, the change recorded and the watch swept there. On
//! PostgreSQL the rotation is also staged there (`earshot.rotations`):
//! taken before the check, given back once applied or stopped, so a
//! second operator's rotation of the same subscription meanwhile is
//! refused (exit 2, naming who holds it) instead of interleaving.
//!
//! Exit 0 rotated (and no 401 while watching), 1 check failed / not rotated
//! / 401 seen / the store unreachable, 2 bad input or another rotation of
//! the subscription in flight.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::output::{emit, print_json, short_id};
use super::secret_arg::{self, WEBHOOK_SECRET_ENV};
use super::subs::{find, note_change};
use super::{GlobalOptions, history_args};
use earshot_core::api::Client;
use earshot_core::api::types::agents::{Subscription, SubscriptionPatch};
use earshot_core::history::incidents::operator;
use earshot_core::history::rotation::{
    CheckReport, ProbeEvent, WatchReport, check, probe_event, probe_event_postgres, watch,
};
use earshot_core::redact::SecretString;
use earshot_core::signature::generate_secret;
use earshot_core::store::postgres::rotations::{self, HeldBy, Rotation};
use earshot_core::store::postgres::{PasswordSources, PgStore, PgTarget};
use earshot_core::store::sweep_store::SweepStore;
use earshot_core::store::{self, changes};

/// How long a staged rotation on PostgreSQL is held at the most (its check
/// and `PATCH` take seconds): a process that died frees it then.
const STAGED_FOR_AT_MOST: Duration = Duration::from_secs(300);

/// Where the rotation reads its probe, records its change and watches.
enum RotateStore {
    File(store::Store),
    Postgres(PgStore),
}

#[derive(Args, Debug)]
pub(crate) struct RotateArgs {
    /// The subscription (its id, or a unique start of it).
    pub(crate) id: String,
    /// The new secret, from this file.
    #[arg(long, value_name = "FILE", required_unless_present = "generate_secret")]
    pub(crate) secret_file: Option<PathBuf>,
    /// Generate the new secret, show it once (or write it with
    /// --secret-out) and stop: nothing is sent to the platform yet.
    #[arg(long, conflicts_with = "secret_file")]
    pub(crate) generate_secret: bool,
    /// Where --generate-secret writes the new secret (created 0600).
    #[arg(long, value_name = "FILE", requires = "generate_secret")]
    pub(crate) secret_out: Option<PathBuf>,
    /// The secret the receiver holds now (or EARSHOT_WEBHOOK_SECRET), to
    /// check it still accepts it.
    #[arg(long, value_name = "FILE")]
    pub(crate) current_secret_file: Option<PathBuf>,
    /// Check the receiver accepts the new secret; do not rotate.
    #[arg(long, conflicts_with = "skip_check")]
    pub(crate) check_only: bool,
    /// Rotate without checking the receiver first (a leaked secret may
    /// matter more than the events refused until the receiver has the new one).
    #[arg(long)]
    pub(crate) skip_check: bool,
    /// With no delivered event in the store, check with a made-up event
    /// (the receiver will see it as a new event).
    #[arg(long)]
    pub(crate) synthetic_probe: bool,
    /// Probe a receiver on a private or loopback address too (an
    /// emulator's); without it such a URL is refused before anything is
    /// sent or changed.
    #[arg(long)]
    pub(crate) allow_private_urls: bool,
    /// How long to watch deliveries after the rotation (0 to skip).
    #[arg(long, default_value = "10m", value_parser = history_args::parse_duration, value_name = "DURATION")]
    pub(crate) watch: Duration,
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Serialize, Default)]
struct RotateJson {
    subscription_id: String,
    secret_version_before: u32,
    secret_version: u32,
    check: Option<CheckReport>,
    rotated: bool,
    watch: Option<WatchReport>,
    /// Why it stopped before rotating, if it did.
    stopped: Option<String>,
}

pub(crate) async fn run(
    args: RotateArgs,
    client: &Client,
    store_path: Option<&Path>,
    postgres: Option<PgTarget>,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    // The secret files first: a bad one is bad input (exit 2) whatever the
    // platform would have answered, and nothing is asked of it before.
    let given = if args.generate_secret {
        None
    } else {
        let path = args.secret_file.as_deref().unwrap_or(Path::new(""));
        let new = match secret_arg::read_secret_file(path) {
            Ok(secret) => secret,
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(ExitCode::from(2));
            }
        };
        let current = match secret_arg::resolve(
            None,
            args.current_secret_file.as_deref(),
            WEBHOOK_SECRET_ENV,
        ) {
            Ok(current) => current,
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(ExitCode::from(2));
            }
        };
        Some((new, current))
    };
    let record = find(client, &args.id).await?;
    let short = short_id(&record.id).to_owned();
    let mut report = RotateJson {
        subscription_id: record.id.clone(),
        secret_version_before: record.secret_version,
        secret_version: record.secret_version,
        ..RotateJson::default()
    };

    // 1. Prepare.
    let Some((new, current)) = given else {
        let secret = generate_secret()
            .map_err(|error| color_eyre::eyre::eyre!("could not generate a secret: {error}"))?;
        return prepared(&args, &short, &SecretString::new(secret));
    };
    let store = match postgres {
        None => RotateStore::File(history_args::open_store(store_path, global)?),
        Some(target) => match PgStore::connect(target, &PasswordSources::from_env()).await {
            Ok(store) => RotateStore::Postgres(store),
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(ExitCode::FAILURE);
            }
        },
    };
    // Staged on PostgreSQL: one operator's rotation of it at a time.
    let staged = match &store {
        RotateStore::File(_) => None,
        RotateStore::Postgres(pg) => {
            match rotations::take(
                pg,
                &record.id,
                &operator(),
                store::now_ms(),
                STAGED_FOR_AT_MOST,
            )
            .await?
            {
                Ok(rotation) => Some(rotation),
                Err(held) => {
                    eprintln!("error: {}", held_text(&short, &held));
                    return Ok(ExitCode::from(2));
                }
            }
        }
    };
    let applied =
        check_and_apply(&args, client, &store, &record, (new, current), &mut report).await;
    give_back(&store, staged).await;
    let rotated_ms = match applied? {
        Ok(rotated_ms) => rotated_ms,
        Err(code) => return Ok(code),
    };

    // 4. Watch.
    watch_after(&args, client, store, &record.id, &short, rotated_ms, report).await
}

/// Another operator's rotation in flight, in words.
fn held_text(short: &str, held: &HeldBy) -> String {
    format!(
        "not rotated: {} is rotating {short} since {} ({}); nothing was sent. Run again once it \
         is done (it is given up at {} at the latest)",
        held.operator,
        earshot_core::history::report::rfc3339(held.started_ms),
        held.holder,
        earshot_core::history::report::rfc3339(held.expires_ms),
    )
}

/// Gives a staged rotation back; a failure is said (it expires anyway).
async fn give_back(store: &RotateStore, staged: Option<Rotation>) {
    if let (RotateStore::Postgres(pg), Some(rotation)) = (store, staged)
        && let Err(error) = rotation.give_back(pg).await
    {
        eprintln!(
            "warning: the staged rotation was not given back ({error}); it expires within {}",
            earshot_core::duration_text::of(STAGED_FOR_AT_MOST)
        );
    }
}

/// The observer's copy of a delivered event to probe with, from either
/// store.
async fn probe(
    store: &RotateStore,
    id: &str,
    synthetic: bool,
) -> color_eyre::Result<Option<ProbeEvent>> {
    Ok(match store {
        RotateStore::File(file) => probe_event(file, id, synthetic)?,
        RotateStore::Postgres(pg) => probe_event_postgres(pg, id, synthetic).await?,
    })
}

/// Records the rotation in either store's change log (tried twice).
async fn note_rotation(store: &RotateStore, id: &str, detail: String) {
    match store {
        RotateStore::File(file) => note_change(file, id, "rotate", detail),
        RotateStore::Postgres(pg) => {
            let change = changes::Change::now(operator(), id, "rotate", detail);
            if let Err(error) = changes::record_postgres_twice(pg, &change).await {
                eprintln!("warning: the change was not recorded: {error}");
            }
        }
    }
}

/// Steps 2 and 3: the check and the `PATCH`; when applied, its time, else
/// the exit code (what stopped it said).
async fn check_and_apply(
    args: &RotateArgs,
    client: &Client,
    store: &RotateStore,
    record: &Subscription,
    (new, current): (SecretString, Option<SecretString>),
    report: &mut RotateJson,
) -> color_eyre::Result<Result<i64, ExitCode>> {
    let say = |text: String| {
        if !args.json {
            let _ = emit(&format!("{text}\n"));
        }
    };
    let short = short_id(&record.id).to_owned();
    let stopped =
        |report: &mut RotateJson, why: String| -> color_eyre::Result<Result<i64, ExitCode>> {
            Ok(Err(stop(args, std::mem::take(report), why)?))
        };

    // 2. Check.
    if args.skip_check {
        say(format!(
            "WARNING: rotating {short} without checking the receiver: until it holds the new \
             secret, every event is refused with 401 and never retried (recover them with \
             `earshot redeliver {short}`)"
        ));
    } else {
        let Some(probe) = probe(store, &record.id, args.synthetic_probe).await? else {
            let why = format!(
                "no event delivered to {short} is in the store to check with: run the observer \
                 (`earshot listen --store`) and `earshot health`, or pass --synthetic-probe \
                 (the receiver sees a made-up event)"
            );
            return stopped(report, why);
        };
        say(format!(
            "checking {} with {} {} (signed three ways)",
            record.url,
            if probe.synthetic {
                "a synthetic event"
            } else {
                "the observer's copy of delivered event"
            },
            probe.event.event_id
        ));
        let policy = super::subs::url_policy(args.allow_private_urls);
        let checked = check(&record.url, &probe, &new, current.as_ref(), policy).await?;
        for answer in &checked.answers {
            say(super::subs::probe_line(answer));
        }
        if current.is_none() {
            say(format!(
                "  (not checked with the current secret: pass --current-secret-file or \
                 {WEBHOOK_SECRET_ENV} to check the receiver still accepts it)"
            ));
        }
        let passed = checked.passed;
        report.check = Some(checked);
        if !passed {
            let why = "not rotated: the check failed; fix the receiver and run again".to_owned();
            return stopped(report, why);
        }
        if args.check_only {
            say("check passed; not rotated (--check-only)".into());
            finish(args, report)?;
            return Ok(Err(ExitCode::SUCCESS));
        }
    }

    // 3. Apply.
    let patch = SubscriptionPatch {
        secret: Some(new),
        ..SubscriptionPatch::default()
    };
    let rotated_ms = store::now_ms();
    let updated = client.update_subscription(&record.id, &patch).await?;
    report.rotated = true;
    report.secret_version = updated.secret_version;
    note_rotation(
        store,
        &record.id,
        format!(
            "{}{}",
            changes::detail(Some(record), Some(&updated)),
            if args.skip_check {
                " (check skipped)"
            } else {
                ""
            }
        ),
    )
    .await;
    say(format!(
        "rotated {short} to secret version {}",
        updated.secret_version
    ));
    Ok(Ok(rotated_ms))
}

/// Step 4: what was delivered since, swept into either store.
async fn watch_after(
    args: &RotateArgs,
    client: &Client,
    store: RotateStore,
    id: &str,
    short: &str,
    rotated_ms: i64,
    mut report: RotateJson,
) -> color_eyre::Result<ExitCode> {
    let say = |text: String| {
        if !args.json {
            let _ = emit(&format!("{text}\n"));
        }
    };
    if args.watch.is_zero() {
        say(
            "deliveries in flight were signed with the old secret: keep both in the receiver until \
             `earshot health` shows none pending from before the rotation"
                .into(),
        );
        finish(args, &report)?;
        return Ok(ExitCode::SUCCESS);
    }
    say(format!(
        "watching {short} for {} (ctrl-c stops watching; the rotation stays)",
        earshot_core::duration_text::of(args.watch)
    ));
    let mut last = None;
    // The store's last use: the watch sweeps into it.
    let (file, pg);
    let swept_into: SweepStore<'_> = match store {
        RotateStore::File(owned) => {
            file = store::AsyncStore::new(owned);
            (&file).into()
        }
        RotateStore::Postgres(owned) => {
            pg = owned;
            (&pg).into()
        }
    };
    let watched = watch(client, swept_into, id, rotated_ms, args.watch, |tick| {
        let line = format!(
            "  delivered since: {}, refused (401): {}, from before the rotation still \
                 pending: {}",
            tick.delivered_since,
            tick.refused_sessions.len(),
            tick.old_pending
        );
        if last.as_ref() != Some(&line) {
            say(line.clone());
            last = Some(line);
        }
    })
    .await?;
    let refused = !watched.refused_sessions.is_empty();
    if refused {
        say(format!(
            "STOP: the receiver refused events with 401 after the rotation (sessions {}): it \
             does not verify with the new secret. Fix it, then `earshot redeliver {short}`",
            watched.refused_sessions.join(", ")
        ));
    } else if watched.safe_to_drop_old_secret() {
        say(
            "safe to remove the old secret from the receiver: nothing signed with it is pending"
                .into(),
        );
    } else {
        say(format!(
            "keep the old secret: {} events from before the rotation are still being retried",
            watched.old_pending
        ));
    }
    report.watch = Some(watched);
    finish(args, &report)?;
    Ok(if refused {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Step 1 alone: the generated secret shown once or written, and the next
/// command.
fn prepared(args: &RotateArgs, short: &str, secret: &SecretString) -> color_eyre::Result<ExitCode> {
    let next = match &args.secret_out {
        Some(path) => {
            if let Err(error) = write_private(path, secret) {
                eprintln!("error: cannot write {}: {error}", path.display());
                return Ok(ExitCode::from(2));
            }
            emit(&format!(
                "wrote the new secret to {} (0600). Nothing was sent to the platform.\n",
                path.display()
            ))?;
            path.display().to_string()
        }
        None => {
            emit(&format!(
                "new secret  {}\n            (shown once; earshot keeps no copy. Nothing was \
                 sent to the platform.)\n",
                secret.expose()
            ))?;
            "NEW_SECRET_FILE".to_owned()
        }
    };
    emit(&format!(
        "next: add it to the receiver next to the current secret, then run\n  earshot subs \
         rotate {short} --secret-file {next} --current-secret-file CURRENT_SECRET_FILE\n"
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Creates `path` (never replacing a file) readable by its owner only.
fn write_private(path: &Path, secret: &SecretString) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(secret.expose().as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

fn stop(args: &RotateArgs, mut report: RotateJson, why: String) -> color_eyre::Result<ExitCode> {
    if args.json {
        report.stopped = Some(why);
        print_json(&report)?;
    } else {
        emit(&format!("{why}\n"))?;
    }
    Ok(ExitCode::FAILURE)
}

fn finish(args: &RotateArgs, report: &RotateJson) -> color_eyre::Result<()> {
    if args.json {
        print_json(report)?;
    }
    Ok(())
}
