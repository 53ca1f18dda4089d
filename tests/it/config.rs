//! Profiles, resolution order, API key sources, config errors, atomic
//! writes, and the `earshot config` subcommands run as a real binary.

use std::path::{Path, PathBuf};
use std::process::Output;

use earshot_core::api::Region;
use earshot_core::config::{
    self, ConfigError, Paths, ResolveOptions, Resolved, resolve_with_env, write_atomic,
};
use earshot_core::redact::SecretString;
use url::Url;

use crate::common;

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

// ---------------------------------------------------------------------------
// Resolution order.

#[test]
fn default_profile_from_the_file_is_used_when_no_profile_is_asked_for() {
    let (_dir, path) = config_file(&two_profiles(""));
    let r = resolve_ok(&opts(&path), &no_env);
    assert_eq!(r.profile_name.as_deref(), Some("prod"));
    assert_eq!(r.region, Region::Eu);
    assert_eq!(r.endpoints.agents.as_str(), "https://agents.test/");
    assert_eq!(r.endpoints.prerecorded.as_str(), "https://pre.test/v2base");
    assert_eq!(r.endpoints.sync_eu.as_str(), "https://sync-eu.test/");
    assert!(r.config_exists);
    assert_eq!(r.config_file, path);
}

#[test]
fn profile_option_beats_default_profile() {
    let (_dir, path) = config_file(&two_profiles(""));
    let o = ResolveOptions {
        profile: Some("staging".into()),
        ..opts(&path)
    };
    let r = resolve_ok(&o, &no_env);
    assert_eq!(r.profile_name.as_deref(), Some("staging"));
    assert_eq!(r.region, Region::Us);
    assert_eq!(r.endpoints.dictation_eu.as_str(), "http://127.0.0.1:9000/");
}

#[test]
fn url_option_puts_every_endpoint_at_one_origin_but_keeps_the_profile_region() {
    let (_dir, path) = config_file(&two_profiles(""));
    let origin = Url::parse("http://127.0.0.1:4567").unwrap();
    let o = ResolveOptions {
        url: Some(origin.clone()),
        ..opts(&path)
    };
    let r = resolve_ok(&o, &no_env);
    assert_eq!(r.endpoints, earshot_core::api::Endpoints::all_at(&origin));
    assert_eq!(r.region, Region::Eu);
    assert_eq!(r.profile_name.as_deref(), Some("prod"));
}

#[test]
fn api_key_option_beats_the_profile_source_which_is_then_not_consulted() {
    // The profile's variable is unset: consulting it would be an error.
    let (_dir, path) = config_file(&two_profiles("api_key_env = \"UNSET_VAR\""));
    let o = ResolveOptions {
        api_key: Some(SecretString::new("from-the-flag")),
        ..opts(&path)
    };
    let r = resolve_ok(&o, &no_env);
    assert_eq!(
        r.api_key.as_ref().map(|k| k.expose()),
        Some("from-the-flag")
    );
    assert!(
        r.api_key_source.contains("--api-key"),
        "{}",
        r.api_key_source
    );
}

#[test]
fn url_and_api_key_alone_need_no_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope/config.toml");
    let origin = Url::parse("http://127.0.0.1:4567").unwrap();
    let o = ResolveOptions {
        url: Some(origin.clone()),
        api_key: Some(SecretString::new("k")),
        ..opts(&missing)
    };
    let r = resolve_ok(&o, &no_env);
    assert!(!r.config_exists);
    assert_eq!(r.profile_name, None);
    assert_eq!(r.endpoints, earshot_core::api::Endpoints::all_at(&origin));
    assert_eq!(r.region, Region::Global);
    assert_eq!(r.api_key.as_ref().map(|k| k.expose()), Some("k"));
}

#[test]
fn a_named_profile_without_a_config_file_is_an_error_even_with_url() {
    let dir = tempfile::tempdir().unwrap();
    let o = ResolveOptions {
        url: Some(Url::parse("http://127.0.0.1:1").unwrap()),
        profile: Some("prod".into()),
        ..opts(&dir.path().join("config.toml"))
    };
    let e = resolve_err(&o, &no_env);
    assert!(matches!(e, ConfigError::NoConfigFile { .. }), "{e:?}");
}

#[test]
fn no_config_file_says_how_to_create_one_and_how_to_run_without_an_account() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let e = resolve_err(&opts(&path), &no_env);
    assert!(matches!(e, ConfigError::NoConfigFile { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("earshot config init"), "{msg}");
    assert!(msg.contains("earshot demo"), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
}

// ---------------------------------------------------------------------------
// API key sources.

#[test]
fn api_key_env_reads_the_named_variable() {
    let (_dir, path) = config_file(&two_profiles("api_key_env = \"MY_KEY\""));
    let env = |name: &str| (name == "MY_KEY").then(|| "env-key\n".to_owned());
    let r = resolve_ok(&opts(&path), &env);
    assert_eq!(r.api_key.as_ref().map(|k| k.expose()), Some("env-key"));
    assert_eq!(r.api_key_source, "env MY_KEY");
}

#[test]
fn api_key_env_that_is_unset_names_the_variable() {
    let e = error_of(&two_profiles("api_key_env = \"MY_KEY\""));
    assert!(matches!(e, ConfigError::KeyEnvUnset { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("MY_KEY") && msg.contains("not set"), "{msg}");
}

#[test]
fn api_key_env_that_is_empty_is_an_error_not_an_empty_key() {
    let (_dir, path) = config_file(&two_profiles("api_key_env = \"MY_KEY\""));
    let env = |_: &str| Some(String::new());
    let msg = resolve_err(&opts(&path), &env).to_string();
    assert!(msg.contains("MY_KEY") && msg.contains("empty"), "{msg}");
}

#[test]
fn api_key_file_is_relative_to_the_config_file_and_its_newline_is_trimmed() {
    let (dir, path) = config_file(&two_profiles("api_key_file = \"prod.key\""));
    let key_file = key_file(dir.path(), "prod.key", "file-key\n", 0o600);
    let r = resolve_ok(&opts(&path), &no_env);
    assert_eq!(r.api_key.as_ref().map(|k| k.expose()), Some("file-key"));
    assert_eq!(r.api_key_source, format!("file {}", key_file.display()));
}

#[test]
fn api_key_file_that_cannot_be_read_names_the_path() {
    let (dir, path) = config_file(&two_profiles("api_key_file = \"absent.key\""));
    let e = resolve_err(&opts(&path), &no_env);
    assert!(matches!(e, ConfigError::KeyFileUnreadable { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains(&dir.path().join("absent.key").display().to_string()),
        "{msg}"
    );
}

#[test]
fn empty_api_key_file_is_an_error() {
    let (dir, path) = config_file(&two_profiles("api_key_file = \"prod.key\""));
    key_file(dir.path(), "prod.key", "\n", 0o600);
    let e = resolve_err(&opts(&path), &no_env);
    assert!(matches!(e, ConfigError::EmptyKey { .. }), "{e:?}");
}

#[cfg(unix)]
#[test]
fn api_key_file_readable_by_others_is_refused_with_the_fix() {
    let (dir, path) = config_file(&two_profiles("api_key_file = \"prod.key\""));
    let key_file = key_file(dir.path(), "prod.key", "file-key", 0o644);
    let e = resolve_err(&opts(&path), &no_env);
    assert!(matches!(e, ConfigError::KeyFileTooOpen { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("chmod 600"), "{msg}");
    assert!(msg.contains(&key_file.display().to_string()), "{msg}");
    assert!(!msg.contains("file-key"), "{msg}");
}

#[test]
fn inline_api_key_is_used_and_its_source_names_the_config_file() {
    let (_dir, path) = config_file(&two_profiles("api_key = \"inline-key\""));
    let r = resolve_ok(&opts(&path), &no_env);
    assert_eq!(r.api_key.as_ref().map(|k| k.expose()), Some("inline-key"));
    assert_eq!(r.api_key_source, format!("inline in {}", path.display()));
}

#[cfg(unix)]
#[test]
fn inline_api_key_in_a_world_readable_config_is_refused() {
    let (_dir, path) = config_file(&two_profiles("api_key = \"inline-key\""));
    set_mode(&path, 0o644);
    let e = resolve_err(&opts(&path), &no_env);
    assert!(matches!(e, ConfigError::KeyFileTooOpen { .. }), "{e:?}");
}

#[test]
fn an_empty_api_key_env_name_is_an_error_pointing_at_it() {
    let e = error_of(&two_profiles("api_key_env = \"\""));
    let (_, line, _, field, _) = invalid_parts(&e);
    assert_eq!(line, 5);
    assert_eq!(field.as_deref(), Some("profiles.prod.api_key_env"));
}

#[test]
fn two_api_key_sources_in_one_profile_are_an_error() {
    let e = error_of(&two_profiles("api_key_env = \"A\"\napi_key = \"inline\""));
    let msg = e.to_string();
    assert!(matches!(e, ConfigError::Invalid { .. }), "{e:?}");
    assert!(
        msg.contains("api_key_env") && msg.contains("api_key"),
        "{msg}"
    );
    assert!(msg.contains("exactly one"), "{msg}");
}

#[test]
fn a_profile_without_key_source_resolves_but_require_api_key_explains() {
    let (_dir, path) = config_file(&two_profiles(""));
    let r = resolve_ok(&opts(&path), &no_env);
    assert!(r.api_key.is_none());
    assert_eq!(r.api_key_source, "none");
    let msg = match r.require_api_key() {
        Ok(_) => panic!("expected no key"),
        Err(e) => e.to_string(),
    };
    assert!(msg.contains("--api-key") && msg.contains("prod"), "{msg}");
}

#[test]
fn an_empty_api_key_option_is_an_error() {
    let (_dir, path) = config_file(&two_profiles(""));
    let o = ResolveOptions {
        api_key: Some(SecretString::new("  ")),
        ..opts(&path)
    };
    let e = resolve_err(&o, &no_env);
    assert!(matches!(e, ConfigError::EmptyKey { .. }), "{e:?}");
}

// ---------------------------------------------------------------------------
// Broken files.

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

#[test]
fn unknown_field_error_names_the_file_the_line_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = "default_profile = \"prod\"\n\n[profiles.prod]\nurl = \"http://127.0.0.1:1\"\napi_kye_env = \"X\"\n";
    let path = write_config(dir.path(), text);
    let e = resolve_err(&opts(&path), &no_env);
    let (file, line, column, field, message) = invalid_parts(&e);
    assert_eq!(file, path);
    assert_eq!((line, column), (5, 1));
    assert_eq!(field.as_deref(), Some("profiles.prod.api_kye_env"));
    assert!(message.contains("api_kye_env"), "{message}");
    let shown = e.to_string();
    assert!(shown.contains(&path.display().to_string()), "{shown}");
    assert!(shown.contains("line 5"), "{shown}");
    assert!(shown.contains("api_kye_env"), "{shown}");
}

#[test]
fn unknown_endpoint_name_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "default_profile = \"prod\"\n[profiles.prod.endpoints]\n{ENDPOINTS}dictation_uk = \"https://x.test\"\n"
    );
    let path = write_config(dir.path(), &text);
    let e = resolve_err(&opts(&path), &no_env);
    let (_, line, _, field, message) = invalid_parts(&e);
    assert_eq!(line, 12);
    assert_eq!(
        field.as_deref(),
        Some("profiles.prod.endpoints.dictation_uk")
    );
    assert!(message.contains("dictation_uk"), "{message}");
}

#[test]
fn bad_url_names_the_field_and_its_line() {
    let text = two_profiles("").replace("https://dict-us.test", "not a url");
    let e = error_of(&text);
    let (_, line, _, field, message) = invalid_parts(&e);
    let expected_line = text
        .lines()
        .position(|l| l.contains("not a url"))
        .map(|i| i + 1);
    assert_eq!(Some(line), expected_line);
    assert_eq!(
        field.as_deref(),
        Some("profiles.prod.endpoints.dictation_us")
    );
    assert!(message.contains("not a url"), "{message}");
    assert!(e.to_string().contains("dictation_us"));
}

#[test]
fn a_url_that_is_not_http_is_refused() {
    let text = two_profiles("").replace("https://sync.test", "ftp://sync.test");
    let e = error_of(&text);
    let (_, _, _, field, message) = invalid_parts(&e);
    assert_eq!(field.as_deref(), Some("profiles.prod.endpoints.sync"));
    assert!(message.contains("ftp"), "{message}");
}

#[test]
fn unknown_region_names_the_field_and_the_choices() {
    let text = two_profiles("").replace("region = \"eu\"", "region = \"mars\"");
    let e = error_of(&text);
    let (_, line, _, field, message) = invalid_parts(&e);
    assert_eq!(line, 4);
    assert_eq!(field.as_deref(), Some("profiles.prod.region"));
    assert!(
        message.contains("mars") && message.contains("global"),
        "{message}"
    );
}

#[test]
fn toml_syntax_error_gives_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), "default_profile = \"prod\"\n[profiles.prod\n");
    let e = resolve_err(&opts(&path), &no_env);
    let (file, line, _, _, _) = invalid_parts(&e);
    assert_eq!(file, path);
    assert_eq!(line, 2);
}

#[test]
fn missing_endpoints_without_url_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let text = two_profiles("")
        .replace("sync_us = \"https://sync-us.test\"\n", "")
        .replace("agents = \"https://agents.test\"\n", "");
    let path = write_config(dir.path(), &text);
    let e = resolve_err(&opts(&path), &no_env);
    let (_, _, _, field, message) = invalid_parts(&e);
    assert_eq!(field.as_deref(), Some("profiles.prod.endpoints"));
    assert!(
        message.contains("agents") && message.contains("sync_us"),
        "{message}"
    );
    assert!(!message.contains("dictation_eu"), "{message}");
    assert!(message.contains("url"), "{message}");
}

#[test]
fn profile_url_fills_every_endpoint_and_the_table_overrides_single_ones() {
    let dir = tempfile::tempdir().unwrap();
    let text = "default_profile = \"p\"\n[profiles.p]\nurl = \"http://127.0.0.1:7300\"\n\
                [profiles.p.endpoints]\nsync_eu = \"https://sync-eu.test\"\n";
    let path = write_config(dir.path(), text);
    let r = resolve_ok(&opts(&path), &no_env);
    assert_eq!(r.endpoints.agents.as_str(), "http://127.0.0.1:7300/");
    assert_eq!(r.endpoints.dictation_us.as_str(), "http://127.0.0.1:7300/");
    assert_eq!(r.endpoints.sync_eu.as_str(), "https://sync-eu.test/");
    assert_eq!(r.region, Region::Global);
}

#[test]
fn missing_profile_is_named_and_the_existing_ones_listed() {
    let (_dir, path) = config_file(&two_profiles(""));
    let o = ResolveOptions {
        profile: Some("prdo".into()),
        ..opts(&path)
    };
    let e = resolve_err(&o, &no_env);
    assert!(matches!(e, ConfigError::ProfileNotFound { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("`prdo`"), "{msg}");
    assert!(msg.contains("`prod`") && msg.contains("`staging`"), "{msg}");
    assert!(msg.contains("--profile"), "{msg}");
}

#[test]
fn default_profile_naming_a_missing_profile_points_at_its_line() {
    let text = two_profiles("").replace("default_profile = \"prod\"", "default_profile = \"gone\"");
    let (_dir, path) = config_file(&text);
    let msg = resolve_err(&opts(&path), &no_env).to_string();
    assert!(msg.contains("`gone`"), "{msg}");
    assert!(msg.contains("`default_profile` at line 1"), "{msg}");
}

#[test]
fn no_profile_selected_is_an_error_listing_the_profiles() {
    let text = two_profiles("").replace("default_profile = \"prod\"", "");
    let e = error_of(&text);
    assert!(matches!(e, ConfigError::NoProfileSelected { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("`prod`") && msg.contains("`staging`"), "{msg}");
}

// ---------------------------------------------------------------------------
// The template.

#[test]
fn template_parses_and_resolves_with_its_default_key_variable() {
    let (_dir, path) = config_file(&config::template());
    let env = |name: &str| (name == "EARSHOT_API_KEY").then(|| KNOWN_KEY.to_owned());
    let r = resolve_ok(&opts(&path), &env);
    assert_eq!(r.profile_name.as_deref(), Some("prod"));
    assert_eq!(r.region, Region::Global);
    assert_eq!(r.api_key_source, "env EARSHOT_API_KEY");
    assert_eq!(r.api_key.as_ref().map(|k| k.expose()), Some(KNOWN_KEY));
    // Every endpoint is distinct, so none was left to a shared default.
    let e = &r.endpoints;
    let mut all = vec![
        &e.agents,
        &e.prerecorded,
        &e.dictation,
        &e.dictation_us,
        &e.dictation_eu,
        &e.sync,
        &e.sync_us,
        &e.sync_eu,
    ];
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 8);
}

#[test]
fn template_keeps_no_key_inline() {
    let t = config::template();
    assert!(
        !t.lines().any(|l| l.trim_start().starts_with("api_key =")),
        "{t}"
    );
    assert!(t.contains("api_key_env = \"EARSHOT_API_KEY\""));
}

// ---------------------------------------------------------------------------
// Paths and writing.

#[test]
fn config_override_is_the_config_file() {
    let paths = Paths::compute(Some(Path::new("/x/y.toml"))).unwrap();
    assert_eq!(paths.config_file, PathBuf::from("/x/y.toml"));
    assert!(!paths.state_dir.as_os_str().is_empty());
}

#[cfg(unix)]
#[test]
fn write_atomic_creates_parent_dirs_and_a_0600_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/config.toml");
    write_atomic(&path, b"hello", 0o600).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
    assert_eq!(mode_of(&path), 0o600);
}

#[cfg(unix)]
#[test]
fn write_atomic_replaces_content_and_mode_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "old content that is longer than the new").unwrap();
    set_mode(&path, 0o644);
    write_atomic(&path, b"new", 0o600).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(mode_of(&path), 0o600);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("config.toml")]);
}

#[test]
fn write_atomic_failure_leaves_the_old_file_and_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    // The target is a directory: the rename must fail and the directory stay.
    let path = dir.path().join("config.toml");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("keep"), "kept").unwrap();
    let e = match write_atomic(&path, b"new", 0o600) {
        Ok(()) => panic!("expected writing over a directory to fail"),
        Err(e) => e,
    };
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    assert_eq!(std::fs::read_to_string(path.join("keep")).unwrap(), "kept");
}

// ---------------------------------------------------------------------------
// The binary: `earshot config init|show|path`.

/// Runs the binary [isolated](common::cli::isolate) in `home`, with
/// `EARSHOT_CONFIG` set to `config`, no colour, and `env` on top.
fn earshot(home: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    common::cli::isolated(home)
        .env("NO_COLOR", "1")
        .env("EARSHOT_CONFIG", config)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn config_init_writes_the_template_with_mode_0600_and_says_what_next() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("cfg/config.toml");
    let out = earshot(home.path(), &config, &["config", "init"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        config::template()
    );
    #[cfg(unix)]
    assert_eq!(mode_of(&config), 0o600);
    let shown = text(&out);
    assert!(shown.contains(&config.display().to_string()), "{shown}");
    assert!(shown.contains("earshot config show"), "{shown}");
}

#[test]
fn config_init_refuses_to_overwrite_without_force() {
    let home = tempfile::tempdir().unwrap();
    let config = write_config(home.path(), "# mine\n");
    let out = earshot(home.path(), &config, &["config", "init"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("--force"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "# mine\n");

    let out = earshot(home.path(), &config, &["config", "init", "--force"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        config::template()
    );
}

#[test]
fn config_show_prints_the_profile_with_the_key_masked() {
    let home = tempfile::tempdir().unwrap();
    let config = write_config(home.path(), &config::template());
    let out = earshot(
        home.path(),
        &config,
        &["config", "show"],
        &[("EARSHOT_API_KEY", KNOWN_KEY)],
    );
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(!shown.contains(KNOWN_KEY), "{shown}");
    assert!(!shown.contains(&KNOWN_KEY[4..]), "{shown}");
    assert!(
        shown.contains(&SecretString::new(KNOWN_KEY).masked()),
        "{shown}"
    );
    assert!(shown.contains("prod"), "{shown}");
    assert!(
        shown.contains("https://dictation-eu.example.invalid"),
        "{shown}"
    );
    assert!(shown.contains(&config.display().to_string()), "{shown}");
}

#[test]
fn config_show_json_is_one_object_with_the_key_masked() {
    let home = tempfile::tempdir().unwrap();
    let config = write_config(home.path(), &config::template());
    let out = earshot(
        home.path(),
        &config,
        &["config", "show", "--json"],
        &[("EARSHOT_API_KEY", KNOWN_KEY)],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(KNOWN_KEY), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["profile"], "prod");
    assert_eq!(v["region"], "global");
    assert_eq!(v["api_key"], SecretString::new(KNOWN_KEY).masked());
    assert_eq!(
        v["endpoints"]["sync_us"],
        "https://sync-us.example.invalid/"
    );
    assert_eq!(v["config_exists"], true);
}

#[test]
fn config_show_profile_flag_beats_profile_env_which_beats_the_file() {
    let home = tempfile::tempdir().unwrap();
    let text_ = format!(
        "{}\n[profiles.other]\nurl = \"http://127.0.0.1:9001\"\n",
        two_profiles("")
    );
    let config = write_config(home.path(), &text_);
    let profile_of = |args: &[&str], env: &[(&str, &str)]| {
        let mut full = vec!["config", "show", "--json"];
        full.extend_from_slice(args);
        let out = earshot(home.path(), &config, &full, env);
        assert!(out.status.success(), "{}", text(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["profile"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(profile_of(&[], &[]), "prod");
    assert_eq!(
        profile_of(&[], &[("EARSHOT_PROFILE", "staging")]),
        "staging"
    );
    assert_eq!(
        profile_of(&["--profile", "other"], &[("EARSHOT_PROFILE", "staging")]),
        "other"
    );
}

#[test]
fn config_show_without_a_file_points_to_init_and_demo() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("missing/config.toml");
    let out = earshot(home.path(), &config, &["config", "show"], &[]);
    assert!(!out.status.success());
    let shown = text(&out);
    assert!(shown.contains("earshot config init"), "{shown}");
    assert!(shown.contains("earshot demo"), "{shown}");
}

#[test]
fn config_path_prints_the_config_file_state_dir_and_whether_it_exists() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    let out = earshot(home.path(), &config, &["config", "path"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(shown.contains(&config.display().to_string()), "{shown}");
    assert!(shown.contains("does not exist"), "{shown}");
    assert!(shown.contains("state dir"), "{shown}");

    write_config(home.path(), "");
    let out = earshot(home.path(), &config, &["config", "path"], &[]);
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(shown.contains("(exists)"), "{shown}");
}

// ---------------------------------------------------------------------------
// The console's profile settings: read_only, store, theme (`:ctx`).

#[test]
fn read_only_store_and_theme_are_read_from_the_profile() {
    let (dir, path) = config_file(&two_profiles(
        "read_only = true\nstore = \"history/prod.db\"\ntheme = \"light\"\n",
    ));
    let prod = resolve_ok(&opts(&path), &no_env);
    assert!(prod.read_only);
    assert_eq!(prod.store, Some(dir.path().join("history/prod.db")));
    assert_eq!(prod.theme.as_deref(), Some("light"));
    let staging = resolve_ok(
        &ResolveOptions {
            profile: Some("staging".into()),
            ..opts(&path)
        },
        &no_env,
    );
    assert!(!staging.read_only);
    assert_eq!((staging.store, staging.theme), (None, None));
}

#[test]
fn a_read_only_that_is_not_a_boolean_is_an_error_at_its_line() {
    let e = error_of(&two_profiles("read_only = \"yes\"\n"));
    let shown = e.to_string();
    assert!(matches!(e, ConfigError::Invalid { line: 5, .. }), "{shown}");
    assert!(shown.contains("read_only"), "{shown}");
    assert!(shown.contains("boolean"), "{shown}");
}

#[test]
fn an_empty_store_or_theme_is_an_error_naming_the_field() {
    for (line, field) in [
        ("store = \"  \"\n", "profiles.prod.store"),
        ("theme = \"\"\n", "profiles.prod.theme"),
    ] {
        let shown = error_of(&two_profiles(line)).to_string();
        assert!(shown.contains(field), "{shown}");
        assert!(shown.contains("is empty"), "{shown}");
    }
}

#[test]
fn the_profile_list_names_each_profile_with_its_agents_origin_and_read_only() {
    let (_dir, path) = config_file(&two_profiles("read_only = true\n"));
    let listed = config::profiles(Some(&path)).unwrap();
    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["prod", "staging"]);
    assert!(listed[0].read_only && !listed[1].read_only);
    assert_eq!(listed[0].agents.as_deref(), Some("https://agents.test"));
    assert_eq!(listed[1].agents.as_deref(), Some("http://127.0.0.1:9000"));
    assert_eq!(listed[1].region, Region::Us);
    let none = config::profiles(Some(&path.with_file_name("absent.toml"))).unwrap();
    assert!(none.is_empty());
}

#[test]
fn config_show_prints_the_console_settings_of_the_profile() {
    let home = tempfile::tempdir().unwrap();
    let config = write_config(
        home.path(),
        &two_profiles("read_only = true\nstore = \"prod.db\"\ntheme = \"mono\"\n"),
    );
    let out = earshot(home.path(), &config, &["config", "show", "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["read_only"], true);
    assert_eq!(
        v["store"],
        home.path().join("prod.db").display().to_string()
    );
    assert_eq!(v["theme"], "mono");
    let out = earshot(home.path(), &config, &["config", "show"], &[]);
    let shown = text(&out);
    assert!(shown.contains("read-only:   yes"), "{shown}");
    assert!(shown.contains("theme:       mono"), "{shown}");
}

/// The history commands use the profile's store, so `earshot listen
/// --store --profile prod` files events where the console on `prod` reads.
#[test]
fn history_commands_use_the_store_of_the_profile_unless_told_otherwise() {
    let home = tempfile::tempdir().unwrap();
    let config = write_config(home.path(), &two_profiles("store = \"prod.db\"\n"));
    let run = |args: &[&str]| {
        let out = earshot(home.path(), &config, args, &[]);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["sessions", "add", "ses_prod_only"]);
    assert!(home.path().join("prod.db").is_file(), "prod's store");
    assert!(run(&["sessions", "list"]).contains("ses_prod_only"));
    // staging has no store of its own: the shared default one.
    assert!(!run(&["--profile", "staging", "sessions", "list"]).contains("ses_prod_only"));
    // --store beats the profile's.
    let elsewhere = home.path().join("elsewhere.db");
    let elsewhere = elsewhere.to_str().unwrap();
    assert!(!run(&["sessions", "list", "--store", elsewhere]).contains("ses_prod_only"));
}
