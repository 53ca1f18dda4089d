//! `earshot verify --event ID --subscription SUB`: a delivery the receiver
//! refused with 401, checked honestly. earshot holds the event's exact
//! bytes (the observer's copy) but not the header the platform sent that
//! receiver, so it asks the receiver
//! ([`earshot_core::history::refused_delivery`]): the event signed with the
//! secret given (and a second one), then with a wrong one.
//!
//! Exit status: 0 the receiver accepts a secret given (and refuses a wrong
//! one); 1 it refuses it, checks no signature, is down or answers 5xx;
//! 2 bad input (unknown event or subscription, no secret).

use std::process::ExitCode;

use earshot_core::history::HistoryError;
use earshot_core::history::held_secret::{GIVEN, SECOND};
use earshot_core::history::recover::find_subscription;
use earshot_core::history::refused_delivery::{self, Checked, ObserverEvidence, observer_evidence};
use earshot_core::history::sweep::DEFAULT_BUDGET;
use earshot_core::redact::{SecretString, mask};
use earshot_core::store::outcomes::{self, Outcome};
use earshot_core::store::{self, Store, events};

use super::GlobalOptions;
use super::history_args::SweepArgs;
use super::output::short_id;
use super::secret_arg::{self, PREVIOUS_WEBHOOK_SECRET_ENV, WEBHOOK_SECRET_ENV};
use super::verify::VerifyArgs;

/// Runs the check; see the module doc for the exit status.
pub(crate) async fn run(args: VerifyArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let (Some(event_id), Some(wanted)) = (args.event.clone(), args.subscription.clone()) else {
        return bad("give --event ID and --subscription SUB together");
    };
    let store = args.store.open(global)?;
    let sweep = SweepArgs {
        since: 0,
        budget: DEFAULT_BUDGET,
        no_sweep: args.no_sweep,
    };
    let (store, _) = sweep.sweep_first(&args.connection, global, store).await?;
    let record = match find_subscription(&store, &wanted) {
        Ok(record) => record,
        Err(
            error @ (HistoryError::UnknownSubscription(_) | HistoryError::AmbiguousSubscription(_)),
        ) => return bad(&error.to_string()),
        Err(error) => return Err(error.into()),
    };
    let short = short_id(&record.id).to_owned();
    let Some(event) = events::get(&store, &event_id)? else {
        return bad(&format!(
            "the store holds no event {event_id}: the check sends the observer's exact bytes, \
             and the observer never filed this one; list the events it holds with `earshot \
             events sub:{short}`"
        ));
    };
    let outcome = outcomes::get(&store, &record.id, (&event.session_id, &event_id))?;
    let Some(given) = secret(&args, 0)? else {
        return no_secret(&store, &record, &event_id, global);
    };
    let second = secret(&args, 1)?;
    let now_ms = store::now_ms();
    let (_, from) = refused_delivery::stored(&store, &record.id)?
        .unwrap_or((record.clone(), refused_delivery::RecordFrom::Platform));
    let known = refused_delivery::known(&store, &record, from, now_ms)?;
    if !args.json {
        println!(
            "asking the receiver of subscription {short} ({}) about event {event_id} ({}, {})",
            record.url, event.event, event.session_id
        );
        println!("  the store: {}", outcome_words(outcome.as_ref()));
        println!(
            "  earshot holds these exact bytes (the observer's copy) but not the header the \
             platform sent this receiver, so it sends them signed with the secret you gave{}, \
             then with a wrong one (a duplicate event_id, which a receiver deduplicates)",
            if second.is_some() {
                " and the second one"
            } else {
                ""
            }
        );
    }
    let checked = refused_delivery::check(
        &record,
        &known,
        &event,
        (&given, second.as_ref()),
        (now_ms, crate::tui::widgets::utc_clock),
        super::subs::url_policy(args.allow_private_urls),
    )
    .await?;
    if args.json {
        let mut value = serde_json::to_value(&checked)?;
        value["accepts_given"] = checked.accepts_given().into();
        value["store_state"] = outcome
            .as_ref()
            .map(|outcome| outcome.state.as_str())
            .into();
        println!("{value}");
    } else {
        print!("{}", text(&checked, &given, second.as_ref()));
    }
    Ok(if checked.accepts_given() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn bad(message: &str) -> color_eyre::Result<ExitCode> {
    eprintln!("earshot verify: {message}");
    Ok(ExitCode::from(2))
}

/// The secret given first (`index` 0: `--secret`, `--secret-file`,
/// `EARSHOT_WEBHOOK_SECRET`) or second (1: a second `--secret`,
/// `--previous-secret-file`, `EARSHOT_PREVIOUS_WEBHOOK_SECRET`).
fn secret(args: &VerifyArgs, index: usize) -> color_eyre::Result<Option<SecretString>> {
    let (file, env) = if index == 0 {
        (args.secret_file.as_deref(), WEBHOOK_SECRET_ENV)
    } else {
        (
            args.previous_secret_file.as_deref(),
            PREVIOUS_WEBHOOK_SECRET_ENV,
        )
    };
    Ok(secret_arg::resolve(args.secrets.get(index), file, env)?)
}

/// What the store says of the event for the subscription.
fn outcome_words(outcome: Option<&Outcome>) -> String {
    let Some(outcome) = outcome else {
        return "no attempt of this subscription for this event is stored (not swept yet, or it \
                was not sent this event)"
            .to_owned();
    };
    let last = match (outcome.http_status_code, outcome.error_class.as_str()) {
        (0, "") => "no failed attempt".to_owned(),
        (0, class) => format!("last failure {class}"),
        (code, _) => format!("last failed attempt answered {code}"),
    };
    format!(
        "{} for this subscription after {} attempt{}, {last}",
        outcome.state.as_str(),
        outcome.attempts,
        if outcome.attempts == 1 { "" } else { "s" }
    )
}

fn text(checked: &Checked, given: &SecretString, second: Option<&SecretString>) -> String {
    let mut out = String::new();
    for answer in &checked.answers {
        let masked = match answer.signed_with {
            GIVEN => format!(" ({})", mask(given.expose())),
            SECOND => second
                .map(|secret| format!(" ({})", mask(secret.expose())))
                .unwrap_or_default(),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  signed with {}{masked}: {}\n",
            answer.signed_with,
            answer.answer_text()
        ));
    }
    let mark = if checked.accepts_given() {
        "✓"
    } else {
        "✗"
    };
    out.push_str(&format!("{mark} {}\n", checked.verdict));
    if let Some(next) = &checked.next {
        out.push_str(&format!("\nNext: {next}\n"));
    }
    out
}

/// No secret given: what the check needs, and the observer's secret where
/// the subscription's URL is the observer's own (by evidence).
fn no_secret(
    store: &Store,
    record: &earshot_core::api::types::agents::Subscription,
    event_id: &str,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    eprintln!(
        "earshot verify: no secret given. The check signs the observer's copy of event \
         {event_id} with the secret you give and asks the receiver at {} whether it accepts it \
         (and refuses a wrong one); {}. A second secret to try: --previous-secret-file FILE or \
         {PREVIOUS_WEBHOOK_SECRET_ENV}.",
        record.url,
        secret_arg::missing("--secret", WEBHOOK_SECRET_ENV)
    );
    let path = earshot_core::config::Paths::compute(global.config.as_deref())?
        .state_dir
        .join(super::observer_secret::DEFAULT_FILE_NAME);
    let offer = match secret_arg::read_secret_file(&path) {
        Err(_) => None,
        Ok(secret) => Some(observer_evidence(store, record, &secret)?),
    };
    if let Some(ObserverEvidence::Fits {
        observer_subscription,
        event_id: signed,
    }) = offer
    {
        eprintln!(
            "This subscription's URL is the observer's own (subscription {}, whose attempts the \
             observer filed), and {} verifies the signature the observer received with event \
             {signed}: to ask with the observer's secret, add --secret-file {}",
            short_id(&observer_subscription),
            path.display(),
            path.display()
        );
    }
    Ok(ExitCode::from(2))
}
