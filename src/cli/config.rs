//! `earshot config init|show|path`: write the template config, show what a
//! command would connect with (key masked), and say where the files are.
//! The format and the resolution rules live in [`earshot_core::config`].

use std::process::ExitCode;

use color_eyre::eyre::WrapErr;
use serde_json::json;

use earshot_core::api::Endpoints;
use earshot_core::config::{self, Paths, ResolveOptions, Resolved};

#[derive(clap::Subcommand, Debug)]
pub(crate) enum ConfigCommand {
    /// Write a commented template config file (mode 0600) to edit.
    Init {
        /// Replace an existing config file.
        #[arg(long)]
        force: bool,
    },
    /// Show the resolved profile: endpoints, region, API key (masked) and
    /// its source, and its console settings (read-only, store, theme, low
    /// bandwidth).
    Show {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print where the config file and the state directory are.
    Path,
}

pub(crate) fn run(cmd: ConfigCommand, opts: &ResolveOptions) -> color_eyre::Result<ExitCode> {
    match cmd {
        ConfigCommand::Init { force } => init(opts, force),
        ConfigCommand::Show { json } => show(opts, json),
        ConfigCommand::Path => path(opts),
    }
}

fn init(opts: &ResolveOptions, force: bool) -> color_eyre::Result<ExitCode> {
    let paths = Paths::compute(opts.config_path.as_deref())?;
    let file = &paths.config_file;
    let exists = file
        .try_exists()
        .wrap_err_with(|| format!("cannot check whether {} exists", file.display()))?;
    if exists && !force {
        eprintln!(
            "error: {} already exists; not overwriting it (pass --force to replace it with the template)",
            file.display()
        );
        return Ok(ExitCode::from(1));
    }
    config::write_atomic(file, config::template().as_bytes(), config::PRIVATE_MODE)?;
    println!(
        "wrote a template config to {} (mode 0600){}",
        file.display(),
        if exists {
            ", replacing the old one"
        } else {
            ""
        }
    );
    println!(
        "next: edit the endpoints of profile `prod` in it, set {} (or choose another key source there), then run `earshot config show`",
        config::ENV_API_KEY
    );
    Ok(ExitCode::SUCCESS)
}

fn show(opts: &ResolveOptions, json: bool) -> color_eyre::Result<ExitCode> {
    let resolved = config::resolve(opts)?;
    if json {
        println!("{}", show_json(&resolved));
    } else {
        print!("{}", show_text(&resolved));
    }
    Ok(ExitCode::SUCCESS)
}

fn path(opts: &ResolveOptions) -> color_eyre::Result<ExitCode> {
    let paths = Paths::compute(opts.config_path.as_deref())?;
    let exists = paths.config_file.is_file();
    println!(
        "config file: {} ({})",
        paths.config_file.display(),
        if exists {
            "exists"
        } else {
            "does not exist; `earshot config init` creates it"
        }
    );
    println!("state dir:   {}", paths.state_dir.display());
    Ok(ExitCode::SUCCESS)
}

fn endpoint_rows(endpoints: &Endpoints) -> [(&'static str, &url::Url); 8] {
    [
        ("agents", &endpoints.agents),
        ("prerecorded", &endpoints.prerecorded),
        ("dictation", &endpoints.dictation),
        ("dictation_us", &endpoints.dictation_us),
        ("dictation_eu", &endpoints.dictation_eu),
        ("sync", &endpoints.sync),
        ("sync_us", &endpoints.sync_us),
        ("sync_eu", &endpoints.sync_eu),
    ]
}

fn show_text(r: &Resolved) -> String {
    let mut out = String::new();
    let profile = r
        .profile_name
        .as_deref()
        .unwrap_or("(none: --url override)");
    let exists = if r.config_exists {
        ""
    } else {
        " (does not exist)"
    };
    out.push_str(&format!("profile:     {profile}\n"));
    out.push_str(&format!(
        "config file: {}{exists}\n",
        r.config_file.display()
    ));
    out.push_str(&format!("region:      {}\n", r.region));
    let key = r
        .api_key
        .as_ref()
        .map_or_else(|| "(none)".to_owned(), |k| k.masked());
    out.push_str(&format!("api key:     {key}  from {}\n", r.api_key_source));
    if r.read_only {
        out.push_str(
            "read-only:   yes (the console hides every command that changes the platform)\n",
        );
    }
    if let Some(store) = &r.store {
        out.push_str(&format!("store:       {}\n", store.display()));
    }
    if let Some(theme) = &r.theme {
        out.push_str(&format!("theme:       {theme}\n"));
    }
    if r.low_bandwidth {
        out.push_str(
            "low bandwidth: yes (the console refreshes less often, without decorative colours)\n",
        );
    }
    if let Some(period) = r.retention {
        out.push_str(&format!(
            "retention:   {period} (listen --store removes what is older)\n"
        ));
    }
    out.push_str("endpoints:\n");
    for (name, url) in endpoint_rows(&r.endpoints) {
        out.push_str(&format!("  {name:<13} {url}\n"));
    }
    out
}

fn show_json(r: &Resolved) -> serde_json::Value {
    let endpoints: serde_json::Map<String, serde_json::Value> = endpoint_rows(&r.endpoints)
        .into_iter()
        .map(|(name, url)| (name.to_owned(), json!(url.as_str())))
        .collect();
    json!({
        "profile": r.profile_name,
        "config_file": r.config_file.display().to_string(),
        "config_exists": r.config_exists,
        "region": r.region.as_str(),
        "api_key": r.api_key.as_ref().map(|k| k.masked()),
        "api_key_source": r.api_key_source,
        "retention": r.retention.map(|period| period.to_string()),
        "endpoints": endpoints,
        "read_only": r.read_only,
        "store": r.store.as_ref().map(|store| store.display().to_string()),
        "theme": r.theme,
        "low_bandwidth": r.low_bandwidth,
    })
}
