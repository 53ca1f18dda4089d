//! A broken config file is named with the line and the fix; the template
//! resolves as written; the file is written atomically and private.

use super::*;

// Broken files.

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
