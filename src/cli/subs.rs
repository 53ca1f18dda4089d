//! `earshot subs list|get|create|pause|resume|rotate|delete`.
//!
//! Ids may be given whole or as a unique prefix (the eight-character short
//! id tables show). A new secret is printed once, to stdout, and nowhere else.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use color_eyre::eyre::eyre;
use serde_json::json;

use super::output::{Table, emit, print_json, short_id};
use super::{Connection, GlobalOptions, report};
use crate::api::types::agents::{EventKind, NewSubscription, Subscription, SubscriptionPatch};
use crate::api::validate::UrlPolicy;
use crate::api::{ApiError, Client};
use crate::redact::SecretString;
use crate::signature::generate_secret;

#[derive(Args, Debug)]
pub struct SubsArgs {
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: SubsCommand,
}

#[derive(Subcommand, Debug)]
pub enum SubsCommand {
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
    /// Replace a subscription's signing secret.
    Rotate {
        id: String,
        #[command(flatten)]
        secret: SecretSource,
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
pub struct SecretSource {
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
    fn load(&self) -> color_eyre::Result<(SecretString, bool)> {
        if let Some(path) = &self.secret_file {
            let text = crate::bounded_file::read_to_string(path, crate::bounded_file::SECRET_FILE)?;
            let secret = text.strip_suffix('\n').unwrap_or(&text);
            let secret = secret.strip_suffix('\r').unwrap_or(secret);
            return Ok((SecretString::new(secret), false));
        }
        let secret =
            generate_secret().map_err(|error| eyre!("could not generate a secret: {error}"))?;
        Ok((SecretString::new(secret), true))
    }
}

pub async fn run(args: SubsArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let client = args.connection.client(global)?;
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
            let policy = if allow_private_urls {
                UrlPolicy::AnyHttp
            } else {
                UrlPolicy::PublicHttps
            };
            let client = client.clone().with_url_policy(policy);
            let request = NewSubscription {
                url: receiver_url,
                events,
                secret: SecretString::default(),
                agent_id,
                enabled: paused.then_some(false),
            };
            create(&client, request, &secret, json).await
        }
        SubsCommand::Pause { id, json } => set_enabled(&client, &id, false, json).await,
        SubsCommand::Resume { id, json } => set_enabled(&client, &id, true, json).await,
        SubsCommand::Rotate { id, secret, json } => rotate(&client, &id, &secret, json).await,
        SubsCommand::Delete { id, yes } => delete(&client, &id, yes).await,
    };
    result.or_else(report)
}

async fn get(client: &Client, id: &str, json: bool) -> color_eyre::Result<ExitCode> {
    let record = find(client, id).await?;
    show(&record, json, None)
}

async fn create(
    client: &Client,
    mut request: NewSubscription,
    source: &SecretSource,
    json: bool,
) -> color_eyre::Result<ExitCode> {
    let (secret, generated) = source.load()?;
    request.secret = secret.clone();
    let record = client.create_subscription(&request).await?;
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

/// A subscription by full id or unique prefix.
async fn find(client: &Client, id: &str) -> Result<Subscription, ApiError> {
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
        [] => Err(ApiError::Invalid(
            crate::api::validate::ValidationError::new(
                "id",
                format!(
                    "no subscription id starts with {id:?} (see `earshot subs list --include-disabled`)"
                ),
            ),
        )),
        many => Err(ApiError::Invalid(
            crate::api::validate::ValidationError::new(
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
) -> color_eyre::Result<ExitCode> {
    let record = find(client, id).await?;
    let patch = SubscriptionPatch {
        enabled: Some(enabled),
        ..SubscriptionPatch::default()
    };
    let updated = client.update_subscription(&record.id, &patch).await?;
    show(&updated, json, None)
}

async fn rotate(
    client: &Client,
    id: &str,
    source: &SecretSource,
    json: bool,
) -> color_eyre::Result<ExitCode> {
    let (secret, generated) = source.load()?;
    let record = find(client, id).await?;
    let patch = SubscriptionPatch {
        secret: Some(secret.clone()),
        ..SubscriptionPatch::default()
    };
    let updated = client.update_subscription(&record.id, &patch).await?;
    let code = show(&updated, json, generated.then_some(&secret))?;
    if !json {
        println!();
        println!(
            "rotated to secret version {}. Deliveries already in flight were signed with the old secret:",
            updated.secret_version
        );
        println!(
            "keep accepting both secrets in the receiver until they drain, then drop the old one."
        );
    }
    Ok(code)
}

async fn delete(client: &Client, id: &str, yes: bool) -> color_eyre::Result<ExitCode> {
    let record = find(client, id).await?;
    let short = short_id(&record.id);
    if !yes && !confirm(short, &record.url) {
        eprintln!("not deleted");
        return Ok(ExitCode::from(1));
    }
    client.delete_subscription(&record.id).await?;
    println!(
        "deleted subscription {} ({}) and its delivery history",
        record.id, record.url
    );
    Ok(ExitCode::SUCCESS)
}

/// Asks the operator to type the short id; false when stdin is not a terminal.
fn confirm(short: &str, url: &str) -> bool {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        eprintln!(
            "refusing to delete without confirmation: pass --yes when not running in a terminal"
        );
        return false;
    }
    eprint!(
        "delete subscription {short} ({url}) and its delivery history? type {short} to confirm: "
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer).is_ok() && answer.trim() == short
}
