//! Profiles, resolution order, API key sources, config errors, atomic
//! writes, and the `earshot config` subcommands run as a real binary.
//!
//! The library's resolution ([`resolution`]: the order of the sources of a
//! setting, and where the API key comes from), what it says of broken
//! files and how it writes them ([`files`]), and the binary's `earshot
//! config` commands and the console's profile settings ([`commands`]).

use std::path::{Path, PathBuf};
use std::process::Output;

use earshot_core::api::Region;
use earshot_core::config::{
    self, ConfigError, Paths, ResolveOptions, Resolved, resolve_with_env, write_atomic,
};
use earshot_core::redact::SecretString;
use url::Url;

use crate::common;

mod commands;
mod files;
mod resolution;

const ENDPOINTS: &str = r#"
agents = "https://agents.test"
prerecorded = "https://pre.test/v2base"
dictation = "https://dict.test"
dictation_us = "https://dict-us.test"
dictation_eu = "https://dict-eu.test"
sync = "https://sync.test"
sync_us = "https://sync-us.test"
sync_eu = "https://sync-eu.test"
"#;

const KNOWN_KEY: &str = "sk_test_0123456789abcdefghijklmnopqrstuv";

fn no_env(_: &str) -> Option<String> {
    None
}

/// Writes `text` as `config.toml` (mode 0600) in `dir`.
fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    set_mode(&path, 0o600);
    path
}

/// `config.toml` with `text` (mode 0600) in a new temp dir: the dir (the
/// guard that keeps it) and the file.
fn config_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), text);
    (dir, path)
}

/// The error a config file with `text` resolves to (no environment).
fn error_of(text: &str) -> ConfigError {
    let (_dir, path) = config_file(text);
    resolve_err(&opts(&path), &no_env)
}

/// A key file `name` in `dir` holding `text`, with `mode`.
fn key_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    set_mode(&path, mode);
    path
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) {}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn opts(path: &Path) -> ResolveOptions {
    ResolveOptions {
        config_path: Some(path.to_path_buf()),
        ..ResolveOptions::default()
    }
}

/// Two profiles with full endpoint tables; `prod` is the default.
fn two_profiles(prod_extra: &str) -> String {
    format!(
        "default_profile = \"prod\"\n\n\
         [profiles.prod]\nregion = \"eu\"\n{prod_extra}\n\
         [profiles.prod.endpoints]\n{ENDPOINTS}\n\
         [profiles.staging]\nregion = \"us\"\nurl = \"http://127.0.0.1:9000\"\n"
    )
}

fn resolve_ok(opts: &ResolveOptions, env: &dyn Fn(&str) -> Option<String>) -> Resolved {
    match resolve_with_env(opts, env) {
        Ok(resolved) => resolved,
        Err(e) => panic!("expected the config to resolve, got: {e}"),
    }
}

fn resolve_err(opts: &ResolveOptions, env: &dyn Fn(&str) -> Option<String>) -> ConfigError {
    match resolve_with_env(opts, env) {
        Ok(resolved) => panic!("expected an error, got {resolved:?}"),
        Err(e) => e,
    }
}

/// The parts of a `ConfigError::Invalid`: path, line, column, field and
/// message.
fn invalid_parts(e: &ConfigError) -> (PathBuf, usize, usize, Option<String>, String) {
    match e {
        ConfigError::Invalid {
            path,
            line,
            column,
            field,
            message,
            ..
        } => (path.clone(), *line, *column, field.clone(), message.clone()),
        other => panic!("expected Invalid, got {other:?}"),
    }
}
