//! What an embedder builds: `cargo tree -p earshot-emulator -e normal`
//! (the crates a dependent compiles, features as for this crate alone)
//! holds no SQLite, metrics, configuration or TLS crate, and not
//! `earshot-core`; the `tls` feature is what brings TLS in, on ring, the
//! one crypto provider of the build (not aws-lc-rs and its C library).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Crates an embedder must not build: the store's SQLite, the observer's
/// metrics, configuration files and directories, TLS and its C crypto.
const HEAVY: [&str; 10] = [
    "earshot-core",
    "rusqlite",
    "libsqlite3-sys",
    "prometheus-client",
    "toml",
    "directories",
    "rustls",
    "aws-lc-rs",
    "aws-lc-sys",
    "ring",
];

/// The crate names in this crate's normal dependency tree, with `features`.
fn normal_tree(features: &[&str]) -> Result<BTreeSet<String>, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let mut command = Command::new(env!("CARGO"));
    command
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["-p", "earshot-emulator", "--manifest-path"])
        .arg(&manifest);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    let output = command
        .output()
        .map_err(|error| format!("running cargo tree: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

#[test]
fn an_embedder_builds_no_sqlite_metrics_configuration_or_tls() {
    let tree = normal_tree(&[]).unwrap_or_else(|error| panic!("{error}"));
    assert!(
        tree.contains("earshot-protocol") && tree.contains("earshot-http"),
        "the tree was not read: {tree:?}"
    );
    let heavy: Vec<&str> = HEAVY
        .into_iter()
        .filter(|name| tree.contains(*name))
        .collect();
    assert!(heavy.is_empty(), "under the emulator: {heavy:?}");
}

#[test]
fn the_tls_feature_is_what_brings_tls_in() {
    let tree = normal_tree(&["tls"]).unwrap_or_else(|error| panic!("{error}"));
    assert!(tree.contains("rustls"), "no rustls with `tls`: {tree:?}");
    assert!(tree.contains("ring"), "not on ring: {tree:?}");
    assert!(
        !tree.contains("aws-lc-rs") && !tree.contains("aws-lc-sys"),
        "a second crypto provider: {tree:?}"
    );
    assert!(!tree.contains("rusqlite") && !tree.contains("earshot-core"));
}
