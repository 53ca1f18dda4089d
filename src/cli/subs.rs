//! `earshot subs list|get|create|update|pause|resume|rotate|delete`.
//!
//! Ids may be given whole or as a unique prefix (the eight-character short
//! id tables show). A new secret is printed once, to stdout, and nowhere else.
//! Every change is recorded in the store (`earshot changes`); the staged
//! rotation is in [`super::subs_rotate`].

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use color_eyre::eyre::eyre;
use serde_json::json;

use super::output::{Table, emit, print_json, short_id};
use super::read_store::{Place, ReadStoreArg};
use super::secret_arg::{SecretArgError, read_secret_file};
use super::{Connection, GlobalOptions, report};
use earshot_core::api::types::agents::{
    EventKind, NewSubscription, Subscription, SubscriptionPatch,
};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::api::{ApiError, Client};
use earshot_core::history::incidents::operator;
use earshot_core::redact::SecretString;
use earshot_core::signature::generate_secret;
use earshot_core::store::changes::{self, Change};
use earshot_core::store::incidents::{
    SubscriptionEnd, end_subscription, end_subscription_postgres,
};
use earshot_core::store::postgres::{PasswordSources, PgStore, PgTarget};
use earshot_core::store::{self, Store};

#[derive(Args, Debug)]
pub(crate) struct SubsArgs {
    #[command(flatten)]
    pub(crate) connection: Connection,
    /// The incident-history store changes are recorded in: a file
    /// [default: the profile's `store`, else earshot.db in the state
    /// directory] or postgres://USER@HOST:PORT/DATABASE.
    #[arg(
        long = "store",
        env = "EARSHOT_STORE",
        global = true,
        value_name = "PATH|URL",
        value_parser = super::listen_postgres::store_file_or_url
    )]
    pub(crate) store: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: SubsCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum SubsCommand {
    /// List subscriptions, newest first.
    List {
        /// Include paused subscriptions.
        #[arg(long)]
        include_disabled: bool,
        #[arg(long)]
        json: bool,
    },
    /// Show one subscription.
    Get {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Create a subscription.
    Create {
        /// The receiver's https:// URL.
        #[arg(value_name = "URL")]
        receiver_url: String,
        /// An event to deliver; repeat or separate with commas.
        #[arg(long = "event", required = true, value_delimiter = ',', value_parser = parse_event)]
        events: Vec<EventKind>,
        /// Deliver only this agent's events (a UUID).
        #[arg(long)]
        agent_id: Option<String>,
        /// Create it paused.
        #[arg(long)]
        paused: bool,
        /// Allow an http:// or private-address URL (for an emulator started
        /// with --allow-private-urls).
        #[arg(long)]
        allow_private_urls: bool,
        #[command(flatten)]
        secret: SecretSource,
        #[arg(long)]
        json: bool,
    },
    /// Stop deliveries to a subscription.
    Pause {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Start deliveries to a paused subscription again.
    Resume {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Replace a subscription's signing secret in stages: prepare, check the
    /// receiver accepts both secrets, apply, watch.
    Rotate(super::subs_rotate::RotateArgs),
    /// Change a subscription's URL or events, keeping its id, secret and
    /// delivery history.
    Update {
        id: String,
        /// The new receiver URL (`--url` is the platform's origin, as for
        /// every command).
        #[arg(long = "receiver-url", value_name = "URL")]
        receiver_url: Option<String>,
        /// The new events (all of them); repeat or separate with commas.
        #[arg(long = "event", value_delimiter = ',', value_parser = parse_event)]
        events: Vec<EventKind>,
        /// Allow an http:// or private-address URL (for an emulator started
        /// with --allow-private-urls).
        #[arg(long)]
        allow_private_urls: bool,
        /// With a new URL: the subscription's secret, in a file (or
        /// EARSHOT_WEBHOOK_SECRET), to check the new receiver accepts it
        /// (a signed duplicate of a delivered event) before the PATCH.
        #[arg(long, value_name = "FILE")]
        secret_file: Option<PathBuf>,
        /// Do not ask to type the short id.
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        json: bool,
    },
    /// Delete a subscription and its delivery history.
    Delete {
        id: String,
        /// Do not ask to type the short id.
        #[arg(long)]
        yes: bool,
    },
}

/// Where a new secret comes from: a file, or the OS random generator.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
pub(crate) struct SecretSource {
    /// Read the secret from this file (trailing newline ignored).
    #[arg(long, value_name = "FILE")]
    secret_file: Option<PathBuf>,
    /// Generate a strong secret and print it once.
    #[arg(long)]
    generate_secret: bool,
}

fn parse_event(name: &str) -> Result<EventKind, String> {
    EventKind::parse(name).ok_or_else(|| {
        format!(
            "unknown event {name:?}; choose from {}",
            EventKind::ALL.map(EventKind::as_str).join(", ")
        )
    })
}

impl SecretSource {
    /// The secret, and whether it was generated (and so must be shown).
    /// The inner error is a secret file that cannot be had: bad input
    /// (exit 2), as for every command's secret files; the outer one is a
    /// secret that could not be generated.
    fn load(&self) -> color_eyre::Result<Result<(SecretString, bool), SecretArgError>> {
        if let Some(path) = &self.secret_file {
            return Ok(read_secret_file(path).map(|secret| (secret, false)));
        }
        let secret =
            generate_secret().map_err(|error| eyre!("could not generate a secret: {error}"))?;
        Ok(Ok((SecretString::new(secret), true)))
    }
}

pub(crate) async fn run(args: SubsArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let place = ReadStoreArg {
        path: args.store.clone(),
    }
    .place(global)?;
    let postgres = match place {
        Ok(Place::Postgres(target)) => Some(target),
        Ok(Place::File(_)) => None,
        Err(refusal) => return Ok(refusal.say("subs")),
    };
    let client = args.connection.client(global)?;
    let changes = ChangeLog {
        store: args.store.clone(),
        postgres,
        global,
    };
    let result = match args.command {
        SubsCommand::List {
            include_disabled,
            json,
        } => list(&client, include_disabled, json).await,
        SubsCommand::Get { id, json } => get(&client, &id, json).await,
        SubsCommand::Create {
            receiver_url,
            events,
            agent_id,
            paused,
            allow_private_urls,
            secret,
            json,
        } => {
            let client = with_policy(&client, allow_private_urls);
            let request = NewSubscription {
                url: receiver_url,
                events,
                secret: SecretString::default(),
                agent_id,
                enabled: paused.then_some(false),
            };
            let created = Created {
                secret: &secret,
                allow_private_urls,
                json,
            };
            create(&client, request, created, &changes).await
        }
        SubsCommand::Pause { id, json } => set_enabled(&client, &id, false, json, &changes).await,
        SubsCommand::Resume { id, json } => set_enabled(&client, &id, true, json, &changes).await,
        SubsCommand::Rotate(rotate) => {
            let postgres = changes.postgres.clone();
            super::subs_rotate::run(rotate, &client, args.store.as_deref(), postgres, global).await
        }
        SubsCommand::Update {
            id,
            receiver_url,
            events,
            allow_private_urls,
            secret_file,
            yes,
            json,
        } => {
            let secret = match super::secret_arg::resolve(
                None,
                secret_file.as_deref(),
                super::secret_arg::WEBHOOK_SECRET_ENV,
            ) {
                Ok(secret) => secret,
                Err(error) => {
                    eprintln!("error: {error}");
                    return Ok(ExitCode::from(2));
                }
            };
            let client = with_policy(&client, allow_private_urls);
            let patch = SubscriptionPatch {
                url: receiver_url,
                events: (!events.is_empty()).then_some(events),
                ..SubscriptionPatch::default()
            };
            let update_args = Update {
                patch,
                secret,
                allow_private_urls,
                yes,
                json,
            };
            update(&client, &id, update_args, &changes).await
        }
        SubsCommand::Delete { id, yes } => delete(&client, &id, yes, &changes).await,
    };
    result.or_else(report)
}

async fn get(client: &Client, id: &str, json: bool) -> color_eyre::Result<ExitCode> {
    let record = find(client, id).await?;
    show(&record, json, None)
}

/// How `subs create` was asked to make its subscription.
struct Created<'a> {
    secret: &'a SecretSource,
    allow_private_urls: bool,
    json: bool,
}

async fn create(
    client: &Client,
    mut request: NewSubscription,
    asked: Created<'_>,
    changes: &ChangeLog<'_>,
) -> color_eyre::Result<ExitCode> {
    let Created {
        secret: source,
        allow_private_urls,
        json,
    } = asked;
    let (secret, generated) = match source.load()? {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    request.secret = secret.clone();
    let record = match client.create_subscription(&request).await {
        Ok(record) => record,
        Err(error) => return super::local_trial::report(error, allow_private_urls),
    };
    changes
        .note(&record.id, "create", changes::detail(None, Some(&record)))
        .await;
    show(&record, json, generated.then_some(&secret))
}

async fn list(client: &Client, include_disabled: bool, json: bool) -> color_eyre::Result<ExitCode> {
    let records = client.list_subscriptions(include_disabled).await?;
    if json {
        print_json(&records)?;
        return Ok(ExitCode::SUCCESS);
    }
    if records.is_empty() {
        let hint = if include_disabled {
            ""
        } else {
            " enabled (add --include-disabled to see paused ones)"
        };
        emit(&format!(
            "no subscriptions{hint}; create one with `earshot subs create URL --event EVENT --generate-secret`\n"
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Table::new(&["ID", "STATE", "SECRET", "AGENT", "EVENTS", "URL"]);
    for record in &records {
        table.row(vec![
            short_id(&record.id).to_owned(),
            state_word(record).to_owned(),
            format!("v{}", record.secret_version),
            record
                .agent_id
                .as_deref()
                .map_or_else(|| "all".to_owned(), |agent| short_id(agent).to_owned()),
            record.events.join(","),
            record.url.clone(),
        ]);
    }
    table.print()?;
    Ok(ExitCode::SUCCESS)
}

fn state_word(record: &Subscription) -> &'static str {
    if record.enabled { "enabled" } else { "paused" }
}

/// Prints one record; `new_secret` is printed once, when it was generated.
fn show(
    record: &Subscription,
    json: bool,
    new_secret: Option<&SecretString>,
) -> color_eyre::Result<ExitCode> {
    if json {
        let mut value = json!(record);
        if let Some(secret) = new_secret {
            value["secret"] = json!(secret.expose());
        }
        print_json(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    let agent = record.agent_id.as_deref().unwrap_or("all agents");
    let mut text = format!(
        "id              {}\nurl             {}\nevents          {}\nagent           {agent}\nstate           {}\nsecret version  {}\n",
        record.id,
        record.url,
        record.events.join(", "),
        state_word(record),
        record.secret_version,
    );
    if let Some(secret) = new_secret {
        text.push_str(&format!(
            "\nsecret          {}\n                (shown once: store it in the receiver now; earshot keeps no copy)\n",
            secret.expose()
        ));
    }
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// A subscription by full id or unique prefix. An empty id (a prefix of
/// every id, so the only subscription's) is refused like any id no
/// request could name.
pub(super) async fn find(client: &Client, id: &str) -> Result<Subscription, ApiError> {
    earshot_core::api::validate::path_id(id)?;
    if uuid::Uuid::parse_str(id).is_ok() {
        return client.get_subscription(id).await;
    }
    let all = client.list_subscriptions(true).await?;
    let matches: Vec<&Subscription> = all
        .iter()
        .filter(|record| record.id.starts_with(id))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ApiError::NotFound(format!(
            "no subscription id starts with {id:?} (see `earshot subs list --include-disabled`)"
        ))),
        many => Err(ApiError::Invalid(
            earshot_core::api::validate::ValidationError::new(
                "id",
                format!(
                    "{id:?} matches {} subscriptions ({}); give more characters",
                    many.len(),
                    many.iter()
                        .map(|record| short_id(&record.id))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        )),
    }
}

async fn set_enabled(
    client: &Client,
    id: &str,
    enabled: bool,
    json: bool,
    changes: &ChangeLog<'_>,
) -> color_eyre::Result<ExitCode> {
    let record = find(client, id).await?;
    let patch = SubscriptionPatch {
        enabled: Some(enabled),
        ..SubscriptionPatch::default()
    };
    let updated = client.update_subscription(&record.id, &patch).await?;
    let action = if enabled { "resume" } else { "pause" };
    changes
        .note(
            &record.id,
            action,
            changes::detail(Some(&record), Some(&updated)),
        )
        .await;
    if !enabled {
        changes.ended(&record.id, SubscriptionEnd::Paused).await;
    }
    show(&updated, json, None)
}

/// The client, taking http:// and private addresses when asked (an
/// emulator started with --allow-private-urls).
fn with_policy(client: &Client, allow_private_urls: bool) -> Client {
    client
        .clone()
        .with_url_policy(url_policy(allow_private_urls))
}

/// The URL rule `--allow-private-urls` chooses.
pub(crate) fn url_policy(allow_private_urls: bool) -> UrlPolicy {
    if allow_private_urls {
        UrlPolicy::AnyHttp
    } else {
        UrlPolicy::PublicHttps
    }
}

/// What `subs update` was asked.
struct Update {
    patch: SubscriptionPatch,
    /// The subscription's secret, to check a new URL with.
    secret: Option<SecretString>,
    allow_private_urls: bool,
    yes: bool,
    json: bool,
}

/// `subs update`: the diff, the signed-duplicate check of a new URL when
/// the secret is given, a typed confirmation, the `PATCH`; the id, secret
/// and history stay.
async fn update(
    client: &Client,
    id: &str,
    args: Update,
    changes: &ChangeLog<'_>,
) -> color_eyre::Result<ExitCode> {
    let Update {
        patch,
        secret,
        allow_private_urls,
        yes,
        json,
    } = args;
    if patch.url.is_none() && patch.events.is_none() {
        eprintln!("error: give --receiver-url and/or --event: nothing to change");
        return Ok(ExitCode::from(2));
    }
    // Every rule before anything is sent or asked: a refused URL is bad
    // input (exit 2), and the probe below would otherwise carry a delivered
    // event, signed with the real secret, to it.
    let policy = url_policy(allow_private_urls);
    if let Err(rule) = patch.validate(policy) {
        return super::local_trial::report(ApiError::Invalid(rule), allow_private_urls);
    }
    if let Err(error) = earshot_core::api::validate::path_id(id) {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(2));
    }
    let record = find(client, id).await?;
    let mut diff = Vec::new();
    if let Some(url) = patch.url.as_ref().filter(|url| **url != record.url) {
        diff.push(format!("url     {} → {url}", record.url));
    }
    if let Some(events) = &patch.events {
        let new: Vec<&str> = events.iter().map(|event| event.as_str()).collect();
        if new.join(",") != record.events.join(",") {
            diff.push(format!(
                "events  {} → {}",
                record.events.join(","),
                new.join(",")
            ));
        }
    }
    if diff.is_empty() {
        emit("nothing changes: the subscription already has these values\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let short = short_id(&record.id).to_owned();
    if let (Some(url), Some(secret)) = (patch.url.as_deref(), &secret)
        && url != record.url
        && !new_url_accepts(changes, &record, url, secret, policy).await?
    {
        eprintln!("not updated: the new receiver does not pass the check; fix it and run again");
        return Ok(ExitCode::from(1));
    }
    if !yes {
        eprintln!("{short} ({}):\n  {}", record.url, diff.join("\n  "));
        if !confirm_typed(&short, "update") {
            eprintln!("not updated");
            return Ok(ExitCode::from(1));
        }
    }
    let updated = match client.update_subscription(&record.id, &patch).await {
        Ok(updated) => updated,
        Err(error) => return super::local_trial::report(error, allow_private_urls),
    };
    changes
        .note(
            &record.id,
            "update",
            changes::detail(Some(&record), Some(&updated)),
        )
        .await;
    show(&updated, json, None)
}

/// Whether the receiver at `url` accepts an event the subscription was
/// already delivered (the observer's bytes) signed with its secret, and
/// refuses a wrong signature; each answer is said on stderr.
async fn new_url_accepts(
    changes: &ChangeLog<'_>,
    record: &Subscription,
    url: &str,
    secret: &SecretString,
    policy: UrlPolicy,
) -> color_eyre::Result<bool> {
    let store = super::history_args::open_store(changes.store.as_deref(), changes.global)?;
    let Some(probe) = earshot_core::history::rotation::probe_event(&store, &record.id, false)?
    else {
        eprintln!(
            "no event delivered to {} is in the store to check the new URL with: run the \
             observer (`earshot listen --store`) and `earshot health`, or update without \
             --secret-file",
            short_id(&record.id)
        );
        return Ok(false);
    };
    eprintln!(
        "checking {url} with the observer's copy of delivered event {}",
        probe.event.event_id
    );
    let checked = earshot_core::history::rotation::check(url, &probe, secret, None, policy).await?;
    for answer in &checked.answers {
        eprintln!("{}", probe_line(answer));
    }
    Ok(checked.passed)
}

/// One answer of a receiver check, as `subs update` and `subs rotate` say
/// it: `  ok   signed with the new secret: …`, `  FAIL signed with a wrong
/// secret: …`.
pub(super) fn probe_line(answer: &earshot_core::history::rotation::CheckAnswer) -> String {
    let mark = if answer.ok { "ok  " } else { "FAIL" };
    format!(
        "  {mark} signed with {}: {}",
        answer.signed_with, answer.verdict
    )
}

/// Where changes are recorded: the store at `--store` or the default, a
/// file or (`postgres`) a PostgreSQL store, connected when a change is
/// recorded.
pub(super) struct ChangeLog<'a> {
    pub(crate) store: Option<PathBuf>,
    pub(crate) postgres: Option<PgTarget>,
    pub(crate) global: &'a GlobalOptions,
}

impl ChangeLog<'_> {
    /// Records a change made on the platform (tried twice, as the console
    /// does); a store that cannot be written is said on stderr, and the
    /// change stands.
    pub(crate) async fn note(&self, subscription_id: &str, action: &str, detail: String) {
        let change = Change::now(operator(), subscription_id, action, detail);
        let recorded = match &self.postgres {
            Some(target) => match self.connect(target).await {
                Ok(store) => changes::record_postgres_twice(&store, &change).await,
                Err(error) => Err(error),
            },
            None => {
                let open = || super::history_args::open_store(self.store.as_deref(), self.global);
                changes::record_with_retry(open, &change)
            }
        };
        if let Err(error) = recorded {
            eprintln!("warning: the change was not recorded: {error}");
        }
    }

    /// The PostgreSQL store, connected (and migrated) as every command
    /// connects; the error in words.
    async fn connect(&self, target: &PgTarget) -> Result<PgStore, String> {
        PgStore::connect(target.clone(), &PasswordSources::from_env())
            .await
            .map_err(|error| error.to_string())
    }
}

impl ChangeLog<'_> {
    /// Resolves the open incidents of a subscription deleted or paused,
    /// with the reason; a store that cannot be written is said on stderr.
    pub(crate) async fn ended(&self, subscription_id: &str, end: SubscriptionEnd) {
        let ended = match &self.postgres {
            Some(target) => match self.connect(target).await {
                Ok(store) => {
                    end_subscription_postgres(&store, subscription_id, end, store::now_ms())
                        .await
                        .map_err(|error| error.to_string())
                }
                Err(error) => Err(error),
            },
            None => super::history_args::open_store(self.store.as_deref(), self.global)
                .map_err(|error| error.to_string())
                .and_then(|store| {
                    end_subscription(&store, subscription_id, end, store::now_ms())
                        .map_err(|error| error.to_string())
                }),
        };
        match ended {
            Ok(0) => {}
            Ok(count) => eprintln!(
                "resolved {count} open incident{}: {}",
                if count == 1 { "" } else { "s" },
                end.reason()
            ),
            Err(error) => eprintln!("warning: its incidents were not resolved: {error}"),
        }
    }
}

/// Records a change in `store`, as the operator (tried twice).
pub(super) fn note_change(store: &Store, subscription_id: &str, action: &str, detail: String) {
    let change = Change::now(operator(), subscription_id, action, detail);
    if let Err(error) = changes::record_twice(store, &change) {
        eprintln!("warning: the change was not recorded: {error}");
    }
}

async fn delete(
    client: &Client,
    id: &str,
    yes: bool,
    changes: &ChangeLog<'_>,
) -> color_eyre::Result<ExitCode> {
    let record = find(client, id).await?;
    let short = short_id(&record.id);
    if !yes && !confirm(short, &record.url) {
        eprintln!("not deleted");
        return Ok(ExitCode::from(1));
    }
    client.delete_subscription(&record.id).await?;
    changes
        .note(&record.id, "delete", changes::detail(Some(&record), None))
        .await;
    changes.ended(&record.id, SubscriptionEnd::Deleted).await;
    println!(
        "deleted subscription {} ({}) and its delivery history",
        record.id, record.url
    );
    Ok(ExitCode::SUCCESS)
}

/// Asks the operator to type the short id to `action`; false when stdin
/// is not a terminal.
fn confirm_typed(short: &str, action: &str) -> bool {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        eprintln!(
            "refusing to {action} without confirmation: pass --yes when not running in a terminal"
        );
        return false;
    }
    eprint!("type {short} to {action}: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer).is_ok() && answer.trim() == short
}

/// Asks the operator to type the short id to delete; false when stdin is
/// not a terminal.
fn confirm(short: &str, url: &str) -> bool {
    eprintln!("delete subscription {short} ({url}) and its delivery history?");
    confirm_typed(short, "delete")
}

#[cfg(test)]
mod tests {
    use super::probe_line;
    use earshot_core::history::rotation::CheckAnswer;

    fn answer(signed_with: &'static str, ok: bool) -> CheckAnswer {
        CheckAnswer {
            signed_with,
            should_accept: signed_with != "a wrong secret",
            http_status: Some(if ok { 200 } else { 401 }),
            error: None,
            ok,
            verdict: "accepted (200)".to_owned(),
        }
    }

    #[test]
    fn a_check_answer_reads_as_english() {
        assert_eq!(
            probe_line(&answer("the new secret", true)),
            "  ok   signed with the new secret: accepted (200)"
        );
        assert_eq!(
            probe_line(&answer("a wrong secret", false)),
            "  FAIL signed with a wrong secret: accepted (200)"
        );
    }
}
