//! Where each setting comes from, in order (options, then the environment,
//! then the profile), and where the API key comes from.

use super::*;

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
