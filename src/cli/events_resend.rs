//! `earshot events resend QUERY… --to URL`: the observer's exact bytes of
//! the events a query finds (an event id is free text that finds it),
//! sent to any URL (your receiver under development), oldest first, each
//! signed now with the secret that receiver checks, one line per event
//! with its answer. The Events pane's send-to-URL goes through the same
//! `recover::send_event`. Exit 0 when every event got a 2xx, 1 when one
//! did not or nothing matched, 2 on bad input (nothing sent).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::GlobalOptions;
use super::edit_body;
use super::history_args::StoreArg;
use super::output::{emit, plain};
use super::secret_arg;
use earshot_core::history::event_list::list;
use earshot_core::history::event_query::EventQuery;
use earshot_core::history::recover::{self, Sent};
use earshot_core::store;

/// The most events one run sends unless `--limit` says otherwise.
const DEFAULT_LIMIT: usize = 100;

#[derive(Args, Debug)]
pub(crate) struct ResendArgs {
    /// What to send: event ids, or the `/` language (type:call.ended
    /// session:call_… since:1h, free text); every term must match.
    #[arg(required = true, value_name = "QUERY")]
    pub(crate) query: Vec<String>,
    /// Where to send them: http:// or https://, any host (your app).
    #[arg(long, value_name = "URL")]
    pub(crate) to: String,
    /// File holding the secret the receiver checks (or set
    /// EARSHOT_WEBHOOK_SECRET). Never taken on the command line.
    #[arg(long, value_name = "FILE")]
    pub(crate) secret_file: Option<PathBuf>,
    /// At most N events (the newest N the query finds), sent oldest first.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT)]
    pub(crate) limit: usize,
    /// One JSON object per event on stdout, nothing else there.
    #[arg(long)]
    pub(crate) json: bool,
    /// Edit the body in $VISUAL or $EDITOR first (one event: the query must
    /// find exactly one); the change is said, and the edited bytes signed.
    #[arg(long)]
    pub(crate) edit: bool,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

/// The URL of the operator's own app given to `flag` (`--to`,
/// `--forward-to`), if events can be sent there: http or https, a host,
/// no control character.
pub(super) fn app_url(flag: &str, text: &str) -> Result<url::Url, String> {
    if text.chars().any(char::is_control) {
        return Err(format!("{flag} holds a control character"));
    }
    let url = url::Url::parse(text).map_err(|error| format!("{flag} {text}: {error}"))?;
    match url.scheme() {
        "http" | "https" if url.host().is_some() => Ok(url),
        _ => Err(format!("{flag} {text}: give an http:// or https:// URL")),
    }
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    sent: &'a Sent,
    to: &'a str,
}

pub(crate) async fn run(args: ResendArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let bad = |message: String| {
        eprintln!("error: {message}");
        Ok(ExitCode::from(2))
    };
    let query = match EventQuery::parse(&args.query.join(" "), store::now_ms()) {
        Ok(query) => query,
        Err(error) => return bad(error.to_string()),
    };
    let url = match app_url("--to", &args.to) {
        Ok(url) => url,
        Err(message) => return bad(message),
    };
    let secret = match secret_arg::receivers(args.secret_file.as_deref()) {
        Ok(secret) => secret,
        Err(message) => return bad(message),
    };
    // Nothing to send from a store that is not there: none is created.
    let path = args.store.path(global)?;
    if !path.exists() {
        eprintln!(
            "error: no store at {}: the observer (`earshot listen --store`) keeps the events \
             this sends",
            path.display()
        );
        return Ok(ExitCode::from(1));
    }
    let store = args.store.open(global)?;
    // Since the store's first event unless the query says `since:`.
    let mut rows = list(&store, &query, i64::MIN, args.limit)?;
    if rows.is_empty() {
        eprintln!(
            "nothing in the store matches `{}`: list what it holds with `earshot events`",
            plain(&args.query.join(" "))
        );
        return Ok(ExitCode::from(1));
    }
    if args.edit && rows.len() != 1 {
        eprintln!(
            "error: --edit sends one event, and `{}` finds {}: give its event id",
            plain(&args.query.join(" ")),
            rows.len()
        );
        return Ok(ExitCode::from(2));
    }
    // Oldest first; events of the same time in the order they were
    // received (a timestamp may have whole seconds only).
    rows.sort_by_key(|row| (row.occurred_ms, row.received_ms));
    let http = recover::sender()?;
    let mut failed = 0;
    for row in &rows {
        let mut event = recover::observed_event(&store, &row.event_id)?;
        if args.edit {
            let edited = match edit_body::edit(&event.body) {
                Ok(edited) => edited,
                Err(message) => {
                    eprintln!("error: {}", plain(&message));
                    return Ok(ExitCode::from(2));
                }
            };
            match edit_body::diff(&event.body, &edited).as_str() {
                "" if edited == event.body => eprintln!("unchanged: sending the stored bytes"),
                "" => eprintln!("changed in white space only"),
                changes => eprint!("{}", plain(changes)),
            }
            event.body = edited;
        }
        let sent = recover::send_event(&http, url.as_str(), &secret, &event).await;
        failed += usize::from(!sent.delivered);
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&Line {
                    sent: &sent,
                    to: url.as_str()
                })?
            );
        } else {
            emit(&format!(
                "{} {} {}: {}\n",
                sent.event_id,
                sent.event,
                sent.session_id,
                sent.summary(url.as_str())
            ))?;
        }
    }
    eprintln!(
        "sent {} event(s) to {}: {} delivered, {failed} not",
        rows.len(),
        url.as_str().split('?').next().unwrap_or_default(),
        rows.len() - failed
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::app_url;

    #[test]
    fn only_an_http_or_https_url_with_a_host_is_an_apps() {
        let target = |text| app_url("--to", text);
        assert!(target("http://127.0.0.1:3000/hooks").is_ok());
        assert!(target("https://app.example.invalid/hooks?token=x").is_ok());
        for refused in [
            "ftp://127.0.0.1/x",
            "127.0.0.1:3000",
            "http://a/\r\nX: y",
            "file:///tmp/x",
        ] {
            assert!(target(refused).is_err(), "{refused}");
        }
    }
}
