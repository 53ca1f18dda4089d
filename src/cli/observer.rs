//! `earshot observer setup URL`: the observer (`earshot listen --store`)
//! subscribed to all five voice-agent events at URL in one command.
//!
//! It creates the subscription, or finds the one at that URL and fixes
//! what keeps it from observing everything (missing events, paused), so a
//! second run changes nothing: exactly one subscription per URL. Several
//! at the URL, or one scoped to an agent, are listed, never guessed
//! between. The secret is chosen here (the platform never returns one)
//! and kept in a 0600 file ([`super::observer_secret`]); then it prints how
//! to run the observer ([`super::observer_service`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use color_eyre::eyre::eyre;
use url::{Host, Url};

use super::observer_replicas::Replicas;
use super::observer_secret::{self, Held, Staged};
use super::observer_service::{self, Service};
use super::observer_summary::{ListenFrom, Outcome, SecretAction, Summary, summary_text};
use super::output::{emit, print_json, short_id};
use super::subs::ChangeLog;
use super::{Connection, GlobalOptions, local_trial};
use earshot_core::api::Client;
use earshot_core::api::types::agents::{
    EventKind, NewSubscription, Subscription, SubscriptionPatch,
};
use earshot_core::api::url_identity;
use earshot_core::api::validate::{self, UrlPolicy};
use earshot_core::config::Paths;
use earshot_core::redact::SecretString;
use earshot_core::signature::generate_secret;
use earshot_core::store::postgres::{PgTarget, is_postgres_url};

/// Where `listen` binds when the URL is public: behind the reverse proxy
/// that terminates TLS for the URL.
const PROXIED_LISTEN: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

#[derive(Args, Debug)]
pub(crate) struct ObserverArgs {
    #[command(flatten)]
    pub(crate) connection: Connection,
    #[command(subcommand)]
    pub(crate) command: ObserverCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ObserverCommand {
    /// Subscribe the observer to all five events at URL (or find and fix
    /// the subscription there), keep its secret in a 0600 file, and print
    /// the `earshot listen` command and a systemd unit that run it.
    Setup(SetupArgs),
}

#[derive(Args, Debug)]
pub(crate) struct SetupArgs {
    /// The observer's URL: https:// and publicly reachable (http://127.0.0.1
    /// with --allow-private-urls, for a trial on an emulator).
    #[arg(value_name = "URL")]
    pub(crate) receiver_url: String,
    /// The file the subscription's secret is kept in: used when it exists,
    /// written (0600) when not [default: observer.secret in the state
    /// directory].
    #[arg(long, value_name = "FILE")]
    pub(crate) secret_file: Option<PathBuf>,
    /// Give the observer a new secret although the file holds one: the
    /// file is replaced, and a subscription that exists gets the new
    /// secret too (deliveries fail until listen runs with it).
    #[arg(long)]
    pub(crate) force: bool,
    /// Where the printed `listen` binds [default: the URL's own address
    /// for a loopback or private URL, else 127.0.0.1:8080 behind the proxy
    /// that terminates TLS].
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<SocketAddr>,
    /// Allow an http:// or private-address URL (for an emulator started
    /// with --allow-private-urls).
    #[arg(long)]
    pub(crate) allow_private_urls: bool,
    /// The store the printed `listen` keeps events in, and changes are
    /// recorded in [default: earshot.db in the state directory]; a
    /// postgres://USER@HOST:PORT/DB store prints units for --replicas.
    #[arg(
        long = "store",
        env = "EARSHOT_STORE",
        value_name = "PATH|URL",
        value_parser = super::listen_postgres::store_file_or_url
    )]
    pub(crate) store: Option<PathBuf>,
    /// With a postgres:// store: print this many `listen` units (ports
    /// from --listen's up, /healthz 1000 above each) and the load
    /// balancer's backend that spreads deliveries over them [default: 1].
    #[arg(long, value_name = "N")]
    pub(crate) replicas: Option<u16>,
    /// With a postgres:// store: the file holding its password alone, which
    /// each unit loads as a credential (the file is not read here).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/earshot/store-password"
    )]
    pub(crate) store_password_file: PathBuf,
    /// Print a summary as JSON (never the secret).
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) async fn run(
    args: ObserverArgs,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    match args.command {
        ObserverCommand::Setup(setup_args) => setup(setup_args, &args.connection, global).await,
    }
}

async fn setup(
    args: SetupArgs,
    connection: &Connection,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let policy = if args.allow_private_urls {
        UrlPolicy::AnyHttp
    } else {
        UrlPolicy::PublicHttps
    };
    let url = match validate::url_under(&args.receiver_url, policy).and_then(no_fragment) {
        Ok(url) => url,
        Err(rule) => {
            eprintln!("error: {rule}\n  hint: {}", local_trial::BEFORE_SENDING);
            return Ok(ExitCode::from(2));
        }
    };
    let (listen, listen_from) = match args.listen {
        Some(listen) => (listen, ListenFrom::Flag),
        None => default_listen(&url),
    };
    let secret_file = match &args.secret_file {
        Some(path) => std::path::absolute(path)?,
        None => Paths::compute(global.config.as_deref())?
            .state_dir
            .join(observer_secret::DEFAULT_FILE_NAME),
    };
    let held = match observer_secret::inspect(&secret_file, args.force) {
        Ok(held) => held,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    // A PostgreSQL store: its URL checked, and the replicas' ports, before
    // the platform is asked anything (exit 2).
    let store_url = args
        .store
        .as_deref()
        .map(|path| path.to_string_lossy().into_owned())
        .filter(|text| is_postgres_url(text));
    let replicas = match (&store_url, args.replicas) {
        (Some(text), count) => match PgTarget::parse(text) {
            Ok(target) => Some((target.to_string(), count.unwrap_or(1))),
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(ExitCode::from(2));
            }
        },
        (None, Some(_)) => {
            eprintln!(
                "error: --replicas needs a postgres://USER@HOST:PORT/DB store: replicas share one \
                 database, and a store file is one process's"
            );
            return Ok(ExitCode::from(2));
        }
        (None, None) => None,
    };
    let password_file = std::path::absolute(&args.store_password_file)?;
    let executable = observer_service::current_executable();
    if let Some((store_url, count)) = &replicas {
        let check = Replicas {
            url: url.as_str(),
            first: listen,
            count: *count,
            secret_file: &secret_file,
            store_url,
            password_file: &password_file,
            executable: &executable,
        }
        .check();
        if let Err(why) = check {
            eprintln!("error: {why}");
            return Ok(ExitCode::from(2));
        }
    }
    let store = match &replicas {
        Some(_) => args.store.clone(),
        None => args.store.as_deref().map(std::path::absolute).transpose()?,
    };
    let client = connection.client(global)?.with_url_policy(policy);
    // Setup's change goes to the store's change log, where `earshot
    // changes` and the consoles read it: a PostgreSQL store's (its URL
    // checked above), else the store file.
    let changes = ChangeLog {
        store: if replicas.is_some() {
            None
        } else {
            store.clone()
        },
        postgres: store_url
            .as_deref()
            .and_then(|text| PgTarget::parse(text).ok()),
        global,
    };
    let existing = client.list_subscriptions(true).await?;
    let at_url: Vec<Subscription> = existing
        .into_iter()
        .filter(|record| same_url(&record.url, &url))
        .collect();
    let wanted = Wanted {
        raw_url: args.receiver_url.trim(),
        secret_file: &secret_file,
        held,
        force: args.force,
        allow_private_urls: args.allow_private_urls,
    };
    let done = match at_url.as_slice() {
        [] => create(&client, wanted, &changes).await?,
        [one] => fix(&client, one, wanted, &changes).await?,
        several => {
            refuse_several(&url, several);
            return Ok(ExitCode::FAILURE);
        }
    };
    let done = match done {
        Ok(done) => done,
        Err(code) => return Ok(code),
    };
    let service = Service {
        url: url.as_str(),
        listen,
        secret_file: &secret_file,
        store: store.as_deref(),
        executable: &executable,
    };
    let summary = Summary {
        subscription_id: done.record.id.clone(),
        outcome: done.outcome,
        created: done.outcome == Outcome::Created,
        url: done.record.url.clone(),
        events: done.record.events.clone(),
        enabled: done.record.enabled,
        changes: done.changes,
        secret_file: secret_file.clone(),
        secret: done.secret,
        listen,
        listen_command: service.listen_command(),
        systemd_unit: None,
        systemd_units: None,
        load_balancer: None,
    };
    let summary = match &replicas {
        None => Summary {
            systemd_unit: Some(service.systemd_unit_for(&url)),
            ..summary
        },
        Some((store_url, count)) => {
            let shown = shown_url(&url);
            let replicas = Replicas {
                url: shown.as_str(),
                first: listen,
                count: *count,
                secret_file: &secret_file,
                store_url,
                password_file: &password_file,
                executable: &executable,
            };
            Summary {
                systemd_units: Some(replicas.units()),
                load_balancer: Some(replicas.load_balancer()),
                ..summary
            }
        }
    };
    if args.json {
        print_json(&summary)?;
    } else {
        emit(&summary_text(&summary, listen_from, done.masked.as_deref()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What the subscription should be, and the secret file as found.
struct Wanted<'a> {
    raw_url: &'a str,
    secret_file: &'a Path,
    held: Held,
    /// `--force`: a new secret even for a subscription that exists.
    force: bool,
    allow_private_urls: bool,
}

/// The subscription after setup, and what was done.
struct Done {
    record: Subscription,
    outcome: Outcome,
    changes: Vec<String>,
    secret: SecretAction,
    /// The secret's masked form, when it was chosen here.
    masked: Option<String>,
}

/// A new secret, generated.
fn new_secret() -> color_eyre::Result<SecretString> {
    generate_secret()
        .map(SecretString::new)
        .map_err(|error| eyre!("could not generate a secret: {error}"))
}

/// Stages `secret` for `path`; the error is said and becomes exit 1.
fn stage(path: &Path, secret: &SecretString) -> Result<Staged, ExitCode> {
    observer_secret::stage(path, secret).map_err(|error| {
        eprintln!("error: {error}; nothing was sent to the platform");
        ExitCode::FAILURE
    })
}

/// Moves a staged secret into place once the platform has it; a failure
/// names where the secret is (exit 1).
fn commit(staged: Staged, replace: bool) -> Result<(), ExitCode> {
    staged.commit(replace).map_err(|error| {
        eprintln!("error: {error}");
        ExitCode::FAILURE
    })
}

/// No subscription at the URL: one to all five events, enabled, with the
/// file's secret or a new one (written once the platform has it).
async fn create(
    client: &Client,
    wanted: Wanted<'_>,
    changes: &ChangeLog<'_>,
) -> color_eyre::Result<Result<Done, ExitCode>> {
    let (secret, staged, action) = match wanted.held {
        Held::Secret(secret) => (secret, None, SecretAction::Kept),
        Held::Missing | Held::Replaced => {
            let secret = new_secret()?;
            let staged = match stage(wanted.secret_file, &secret) {
                Ok(staged) => staged,
                Err(code) => return Ok(Err(code)),
            };
            let action = if matches!(wanted.held, Held::Missing) {
                SecretAction::Written
            } else {
                SecretAction::Replaced
            };
            (secret, Some(staged), action)
        }
    };
    let request = NewSubscription {
        url: wanted.raw_url.to_owned(),
        events: EventKind::ALL.to_vec(),
        secret: secret.clone(),
        agent_id: None,
        enabled: None,
    };
    let record = match client.create_subscription(&request).await {
        Ok(record) => record,
        Err(error) => {
            return local_trial::report(error, wanted.allow_private_urls).map(Err);
        }
    };
    changes
        .note(
            &record.id,
            "create",
            format!(
                "{} (observer setup)",
                earshot_core::store::changes::detail(None, Some(&record))
            ),
        )
        .await;
    if let Some(staged) = staged
        && let Err(code) = commit(staged, action == SecretAction::Replaced)
    {
        return Ok(Err(code));
    }
    Ok(Ok(Done {
        record,
        outcome: Outcome::Created,
        changes: Vec::new(),
        secret: action,
        masked: Some(secret.masked()),
    }))
}

/// The one subscription at the URL: made to observe everything (all five
/// events, enabled; a new secret with `--force`), or refused when it
/// cannot be (scoped to an agent, or its secret is nowhere here).
async fn fix(
    client: &Client,
    record: &Subscription,
    wanted: Wanted<'_>,
    changes: &ChangeLog<'_>,
) -> color_eyre::Result<Result<Done, ExitCode>> {
    let short = short_id(&record.id);
    if let Some(agent) = &record.agent_id {
        eprintln!(
            "error: subscription {short} at {} gets only agent {agent}'s events; the observer \
             needs every agent's, and a subscription's agent cannot change. Delete it (`earshot \
             subs delete {short}`) and run setup again. Nothing was changed",
            record.url
        );
        return Ok(Err(ExitCode::FAILURE));
    }
    if matches!(wanted.held, Held::Missing) && !wanted.force {
        eprintln!(
            "error: subscription {short} already sends to {}, but its secret is not in {} (the \
             platform never returns a secret). Give --secret-file the file that holds it, or run \
             again with --force to give the subscription a new secret, written there (deliveries \
             fail until listen runs with it). Nothing was changed",
            record.url,
            wanted.secret_file.display()
        );
        return Ok(Err(ExitCode::FAILURE));
    }
    let mut patch = SubscriptionPatch::default();
    let mut said = Vec::new();
    let missing: Vec<&str> = EventKind::ALL
        .iter()
        .map(|kind| kind.as_str())
        .filter(|name| !record.events.iter().any(|event| event == name))
        .collect();
    if !missing.is_empty() {
        said.push(format!(
            "events: {} → all five (added {})",
            record.events.join(","),
            missing.join(",")
        ));
        patch.events = Some(EventKind::ALL.to_vec());
    }
    if !record.enabled {
        said.push("state: paused → enabled".to_owned());
        patch.enabled = Some(true);
    }
    // Past the refusal above, a missing file means --force.
    let new_file = match wanted.held {
        Held::Missing => Some(SecretAction::Written),
        Held::Replaced => Some(SecretAction::Replaced),
        Held::Secret(_) => None,
    };
    let (staged, secret, masked) = match new_file {
        Some(action) => {
            let secret = new_secret()?;
            let staged = match stage(wanted.secret_file, &secret) {
                Ok(staged) => staged,
                Err(code) => return Ok(Err(code)),
            };
            said.push(format!(
                "secret: v{} → v{} (--force)",
                record.secret_version,
                record.secret_version + 1
            ));
            let masked = secret.masked();
            patch.secret = Some(secret);
            (Some(staged), action, Some(masked))
        }
        None => (None, SecretAction::Kept, None),
    };
    if said.is_empty() {
        return Ok(Ok(Done {
            record: record.clone(),
            outcome: Outcome::Found,
            changes: said,
            secret,
            masked,
        }));
    }
    let updated = match client.update_subscription(&record.id, &patch).await {
        Ok(updated) => updated,
        Err(error) => return local_trial::report(error, wanted.allow_private_urls).map(Err),
    };
    note_fixes(changes, record, &updated, &patch).await;
    if let Some(staged) = staged
        && let Err(code) = commit(staged, secret == SecretAction::Replaced)
    {
        return Ok(Err(code));
    }
    Ok(Ok(Done {
        record: updated,
        outcome: Outcome::Updated,
        changes: said,
        secret,
        masked,
    }))
}

/// Records setup's change in the change log, worded as every change is
/// ([`changes::detail`]): a rotation when it gave a new secret, else an
/// update when it added events, else a resume.
async fn note_fixes(
    changes: &ChangeLog<'_>,
    before: &Subscription,
    after: &Subscription,
    patch: &SubscriptionPatch,
) {
    let action = if patch.secret.is_some() {
        "rotate"
    } else if patch.events.is_some() {
        "update"
    } else {
        "resume"
    };
    let forced = if patch.secret.is_some() {
        " --force"
    } else {
        ""
    };
    let detail = earshot_core::store::changes::detail(Some(before), Some(after));
    changes
        .note(
            &before.id,
            action,
            format!("{detail} (observer setup{forced})"),
        )
        .await;
}

/// Several subscriptions send to the URL: listed, none chosen.
fn refuse_several(url: &Url, several: &[Subscription]) {
    let mut text = format!(
        "error: {} subscriptions send to {url}; the observer needs exactly one, and setup does \
         not guess which. Delete the extra ones (`earshot subs delete ID`) and run setup again. \
         Nothing was changed:",
        several.len()
    );
    for record in several {
        text.push_str(&format!(
            "\n  {}  {:<7}  {}  {}",
            short_id(&record.id),
            if record.enabled { "enabled" } else { "paused" },
            record.agent_id.as_deref().map_or("all agents", short_id),
            record.events.join(",")
        ));
    }
    eprintln!("{}", super::output::plain(&text));
}

/// Whether two receiver URLs name the same receiver (`https://Host`,
/// `https://host/`, `https://host./` and `https://host//` do).
fn same_url(recorded: &str, wanted: &Url) -> bool {
    Url::parse(recorded.trim()).is_ok_and(|recorded| url_identity::same_receiver(&recorded, wanted))
}

/// The platform never sends a fragment, so a URL with one (even an empty
/// `#`) is a typing slip that would read as another receiver.
fn no_fragment(url: Url) -> Result<Url, validate::ValidationError> {
    match url.fragment() {
        Some(_) => Err(validate::ValidationError::new(
            "url",
            "has a fragment (`#…`), which is never sent to the receiver; give the URL without it",
        )),
        None => Ok(url),
    }
}

/// The URL's own address when it is loopback or private (a local trial,
/// or a receiver on this machine's private address); else a loopback
/// port behind the proxy that terminates TLS for the public URL.
fn default_listen(url: &Url) -> (SocketAddr, ListenFrom) {
    let port = url.port_or_known_default().unwrap_or(443);
    let ip = match url.host() {
        Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        }
        _ => None,
    };
    match ip.filter(|ip| validate::non_public_reason(*ip).is_some()) {
        Some(ip) => (SocketAddr::new(ip, port), ListenFrom::Url),
        None => (PROXIED_LISTEN, ListenFrom::Proxy),
    }
}

/// `url` without what may be a credential (a query, user info), as the
/// units name it.
fn shown_url(url: &Url) -> Url {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown
}

impl Service<'_> {
    /// [`Service::systemd_unit`] naming `url` without what may be a
    /// credential (a query, user info).
    fn systemd_unit_for(&self, url: &Url) -> String {
        let shown = shown_url(url);
        Service {
            url: shown.as_str(),
            ..self.clone()
        }
        .systemd_unit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_match_as_parsed_not_as_spelled() {
        let wanted = Url::parse("https://Hooks.Example.com").unwrap();
        assert!(same_url("https://hooks.example.com/", &wanted));
        assert!(same_url("https://hooks.example.com:443/", &wanted));
        assert!(!same_url("https://hooks.example.com/other", &wanted));
        assert!(!same_url("not a url", &wanted));
        let obs = Url::parse("https://hooks.example.com/obs").unwrap();
        assert!(same_url("https://hooks.example.com//obs/", &obs));
    }

    #[test]
    fn the_listen_address_is_the_urls_own_only_for_this_machine() {
        let at = |raw: &str| default_listen(&Url::parse(raw).unwrap());
        assert_eq!(
            at("http://127.0.0.1:41234/observer"),
            ("127.0.0.1:41234".parse().unwrap(), ListenFrom::Url)
        );
        assert_eq!(
            at("http://localhost/x"),
            ("127.0.0.1:80".parse().unwrap(), ListenFrom::Url)
        );
        assert_eq!(
            at("http://[::1]:9000/"),
            ("[::1]:9000".parse().unwrap(), ListenFrom::Url)
        );
        assert_eq!(
            at("https://hooks.example.com/earshot"),
            (PROXIED_LISTEN, ListenFrom::Proxy)
        );
        assert_eq!(
            at("https://93.184.216.34/hook"),
            (PROXIED_LISTEN, ListenFrom::Proxy)
        );
    }

    #[test]
    fn the_unit_names_the_url_without_its_query_or_user() {
        let url = Url::parse("https://user:pw@hooks.example.com/h?token=abc#x").unwrap();
        let unit = observer_service::documented_example().systemd_unit_for(&url);
        assert!(
            unit.contains("receiver for https://hooks.example.com/h\n"),
            "{unit}"
        );
        assert!(!unit.contains("token") && !unit.contains("pw"), "{unit}");
    }
}
