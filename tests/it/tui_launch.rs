//! `earshot` with no subcommand: without a config file it says how to make
//! one and suggests `earshot demo`, exiting 2, before touching the terminal.

use crate::common::cli::isolated;

#[test]
fn without_a_config_file_the_console_suggests_earshot_demo_and_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let output = isolated(home.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no config file"), "{stderr}");
    assert!(stderr.contains("earshot config init"), "{stderr}");
    assert!(stderr.contains("earshot demo"), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "nothing drawn: {:?}",
        output.stdout
    );
}

#[test]
fn read_only_is_a_console_flag_not_a_silent_no_op_on_subcommands() {
    let home = tempfile::tempdir().unwrap();
    let output = isolated(home.path())
        .args(["subs", "list", "--read-only"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--read-only"), "{stderr}");
}

/// The console flags work after `demo` too, as operators type
/// them; without a terminal the demo then says it needs one (not clap's
/// "unexpected argument").
#[test]
fn demo_takes_theme_and_read_only_after_the_subcommand() {
    let home = tempfile::tempdir().unwrap();
    let output = isolated(home.path())
        .args(["demo", "--theme", "light", "--read-only"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("unexpected argument"), "{stderr}");
    assert!(stderr.contains("needs a terminal"), "{stderr}");
}
