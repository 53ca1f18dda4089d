//! [`template`]: the commented config file `earshot config init` writes,
//! which documents the format.

/// The commented config file `earshot config init` writes. It documents the
/// format and parses as is (its endpoints are placeholders under `.invalid`,
/// which never resolves, until the operator fills in real addresses).
pub fn template() -> String {
    TEMPLATE.to_owned()
}

const TEMPLATE: &str = r#"# earshot configuration.
#
# Which file: `--config FILE`, else $EARSHOT_CONFIG, else this per-user
# default (`earshot config path` shows which one is in use).
# This file may hold an API key: keep it private (`earshot config init`
# creates it with mode 0600).
#
# Order of precedence, lowest first: this file's defaults, the chosen
# profile, the environment, command-line flags:
#   --profile NAME / $EARSHOT_PROFILE   beats `default_profile` below
#   --url URL      / $EARSHOT_URL       puts every endpoint at one origin
#                                       (e.g. an emulator); no file needed
#   --api-key KEY  / $EARSHOT_API_KEY   beats the profile's key source
# Unknown keys are errors, so a typo never goes unnoticed.
# `earshot config show` prints what a command would use (key masked).

default_profile = "prod"

[profiles.prod]
# Default data-residency region for dictation and sync:
# "global" (default), "us" or "eu".
region = "global"

# How long `earshot listen --store` keeps what it stores (events with the
# callers' numbers, attempts, sessions, incidents, ...): a whole number of
# days, hours or minutes ("30d", "12h", "90m"). Older rows are removed
# shortly after listen starts, then hourly; without it nothing is removed.
# `earshot listen --retention D` beats it.
#   retention = "30d"

# Where the API key comes from: at most one of
#   api_key_env  = "VAR"          the environment variable VAR
#   api_key_file = "prod.key"     a file holding only the key; relative paths
#                                 are relative to this file's directory, `~/`
#                                 is your home; it must be mode 0600; a
#                                 trailing newline is ignored
#   api_key      = "..."          inline here (this file must then be 0600)
# With none, pass --api-key / $EARSHOT_API_KEY.
api_key_env = "EARSHOT_API_KEY"

# The console (`earshot`) with this profile:
#   read_only = true      hide every command that changes the platform, as
#                         `--read-only` does (which keeps it on for every
#                         profile of the run); `:ctx` switches profiles
#   store = "prod.db"     this account's incident history (relative to this
#                         file's directory, `~/` is your home); --store /
#                         $EARSHOT_STORE beat it; without it every profile
#                         shares earshot.db in the state directory
#   theme = "light"       default, light, high-contrast, mono or a file in
#                         themes/ beside this file; --theme and $NO_COLOR
#                         beat it
#   low_bandwidth = true  a thin link (SSH from afar): a slower refresh and
#                         no decorative colours, as `--low-bandwidth` does

# Shortcut: every endpoint at one origin (an emulator, a proxy); entries in
# the endpoints table below then override single ones:
#   url = "http://127.0.0.1:7300"
# Without `url`, all eight endpoints are required.

# The platform's addresses, one per placeholder of the platform interface.
# Replace these examples (`.invalid` never resolves) with your account's.
[profiles.prod.endpoints]
# {agents_url}: voice agent API: webhook subscriptions, sessions, deliveries.
agents = "https://agents.example.invalid"
# {base_url}: pre-recorded transcription API: uploads, transcript jobs.
prerecorded = "https://prerecorded.example.invalid"
# {dictation_url}: dictation, global default; routes to the nearest region.
dictation = "https://dictation.example.invalid"
# {dictation_url_us}: dictation, US data residency.
dictation_us = "https://dictation-us.example.invalid"
# {dictation_url_eu}: dictation, EU data residency.
dictation_eu = "https://dictation-eu.example.invalid"
# {sync_url}: sync transcription, global default; routes to the fastest region.
sync = "https://sync.example.invalid"
# {sync_url_us}: sync transcription, US data residency (data stays in the US).
sync_us = "https://sync-us.example.invalid"
# {sync_url_eu}: sync transcription, EU data residency (data stays in the EU).
sync_eu = "https://sync-eu.example.invalid"

# A second profile, e.g. for a local emulator (`earshot emulator` prints its
# URL first and its API key on the second line):
#
# [profiles.local]
# url = "http://127.0.0.1:7300"
# api_key_file = "local.key"
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ENDPOINT_NAMES;

    #[test]
    fn template_names_every_endpoint_key() {
        let t = template();
        for name in ENDPOINT_NAMES {
            assert!(t.contains(&format!("\n{name} = ")), "{name} missing");
        }
    }
}
