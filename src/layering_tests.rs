//! The layering rule, enforced: the library below the front ends (the
//! client, signatures, polling, the emulator, the stores, the receiver,
//! configuration and the shared helpers at the crate root) never imports
//! the console (`tui`) or the command line (`cli`). See
//! `docs/architecture.md`. Reads only this crate's `src/`.

use std::path::{Path, PathBuf};

/// Directories under `src/` that must not reach up to a front end.
const LOWER_DIRS: [&str; 10] = [
    "api",
    "signature",
    "poll",
    "emulator",
    "store",
    "history",
    "receiver",
    "config",
    "tls",
    "observer",
];

/// Front ends: nothing below them may name them.
const FRONT_ENDS: [&str; 2] = ["tui", "cli"];

/// Lines of `source` that name a front end in a path (`crate::tui`,
/// `crate::{cli, …}`, `super::super::tui`), comments aside.
fn front_end_paths(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    // A `use crate::{…}` group may span lines: track whether we are in one.
    let mut in_crate_group = false;
    for (index, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("").trim();
        if code.is_empty() {
            continue;
        }
        let starts_group = code.contains("crate::{");
        let names_front_end = FRONT_ENDS.iter().any(|name| {
            code.contains(&format!("crate::{name}"))
                || code.contains(&format!("super::{name}::"))
                || code.contains(&format!("super::{name};"))
                || ((in_crate_group || starts_group) && group_names(code, name))
        });
        if names_front_end {
            found.push((index + 1, line.trim().to_owned()));
        }
        if starts_group && !code.contains("};") {
            in_crate_group = true;
        } else if in_crate_group && code.contains("};") {
            in_crate_group = false;
        }
    }
    found
}

/// Whether `name` is an item of a `{…}` use group on this line.
fn group_names(code: &str, name: &str) -> bool {
    let inner = code.rsplit('{').next().unwrap_or(code);
    inner
        .split([',', '}', ';'])
        .map(str::trim)
        .any(|item| item == name || item.starts_with(&format!("{name}::")))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).expect("src/ is readable");
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_lower_layers_never_import_the_front_ends() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in LOWER_DIRS {
        rust_files(&src.join(dir), &mut files);
    }
    // The shared helpers at the crate root (lib.rs, main.rs and this file
    // aside).
    for entry in std::fs::read_dir(&src).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_file()
            && name.ends_with(".rs")
            && !matches!(name, "lib.rs" | "main.rs" | "layering_tests.rs")
        {
            files.push(path);
        }
    }
    assert!(files.len() > 50, "only {} files found", files.len());
    let mut violations = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a source file is UTF-8");
        for (line, text) in front_end_paths(&source) {
            let shown = file.strip_prefix(&src).unwrap_or(file).display();
            violations.push(format!("src/{shown}:{line}: {text}"));
        }
    }
    assert!(
        violations.is_empty(),
        "below the front ends, these name tui/ or cli/:\n{}",
        violations.join("\n")
    );
}

/// Inside the console, the key machinery and the widgets know no pane:
/// panes declare their commands in their own types (`PaneCommands`) and
/// `tui/command.rs` wraps them.
#[test]
fn the_key_machinery_and_widgets_never_import_a_pane() {
    let tui = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui");
    let mut files = vec![tui.join("keymap.rs")];
    rust_files(&tui.join("widgets"), &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a source file is UTF-8");
        for (index, line) in source.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("panes::") || code.contains("command::") {
                violations.push(format!("{}:{}: {}", file.display(), index + 1, line.trim()));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "the key machinery or a widget names a pane:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_scanner_sees_every_way_of_naming_a_front_end() {
    let bad = [
        "use crate::tui::theme::Theme;",
        "use crate::cli::output;",
        "use crate::{api::Client, tui};",
        "use crate::{\n    api::Client,\n    cli::secret_arg,\n};",
        "let x = crate::tui::panes::PaneId::Jobs;",
        "use super::super::cli::output;",
    ];
    for source in bad {
        assert!(!front_end_paths(source).is_empty(), "missed: {source}");
    }
    let fine = [
        "use crate::api::Client;",
        "// see crate::tui::app for the console",
        "use crate::{api::Client, signature};",
        "let tuition = 3;",
        "use crate::{\n    api::Client,\n    poll,\n};",
    ];
    for source in fine {
        assert!(front_end_paths(source).is_empty(), "false alarm: {source}");
    }
}
