//! The binary: `earshot config init|show|path`, and the console's profile
//! settings (`read_only`, `store`, `theme`) as the commands show and use
//! them.

use super::*;

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
    assert!(!prod.low_bandwidth, "off unless asked");
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
fn a_read_only_or_low_bandwidth_that_is_not_a_boolean_is_an_error_at_its_line() {
    let e = error_of(&two_profiles("read_only = \"yes\"\n"));
    let shown = e.to_string();
    assert!(matches!(e, ConfigError::Invalid { line: 5, .. }), "{shown}");
    assert!(shown.contains("read_only"), "{shown}");
    assert!(shown.contains("boolean"), "{shown}");
    let e = error_of(&two_profiles("low_bandwidth = 1\n"));
    let shown = e.to_string();
    assert!(matches!(e, ConfigError::Invalid { line: 5, .. }), "{shown}");
    assert!(shown.contains("low_bandwidth"), "{shown}");
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
        &two_profiles(
            "read_only = true\nstore = \"prod.db\"\ntheme = \"mono\"\nlow_bandwidth = true\n",
        ),
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
    assert_eq!(v["low_bandwidth"], true);
    let out = earshot(home.path(), &config, &["config", "show"], &[]);
    let shown = text(&out);
    assert!(shown.contains("read-only:   yes"), "{shown}");
    assert!(shown.contains("theme:       mono"), "{shown}");
    assert!(shown.contains("low bandwidth: yes"), "{shown}");
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
