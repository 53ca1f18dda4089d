//! The README's console keys against the console itself: its pane count
//! (`1`–`8`, `:1`…`:8`), its pane names, and its `:` commands
//! ([`command_line::commands`], the panes' `Pane::JUMP`, the registry's
//! [`PaneId`]): a pane or command missing from the README fails, and so
//! does one the README lists that the line refuses.

use crate::tui::console::command_line::{self, Typed};
use crate::tui::panes::PaneId;

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Every `` `…` `` span of `text`, line by line, outside fenced blocks.
fn code_spans(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut spans = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            spans.extend(line.split('`').skip(1).step_by(2));
        }
    }
    spans
}

/// What the line makes of `usage` as the README spells it, with its
/// placeholders filled in (`:sub ID` → `:sub db318dee`).
fn parsed(usage: &str) -> Result<Typed, String> {
    let line = usage
        .replace(" [NAME]", " prod")
        .replace(" NAME", " prod")
        .replace(" ID", " db318dee");
    command_line::parse(&line)
}

#[test]
fn every_command_the_readme_names_is_one_the_line_takes() {
    let readme = readme();
    let named: Vec<&str> = code_spans(&readme)
        .into_iter()
        .filter(|span| {
            span.strip_prefix(':')
                .and_then(|rest| rest.chars().next())
                .is_some_and(|first| first.is_ascii_lowercase() || first.is_ascii_digit())
        })
        .collect();
    assert!(named.len() > 10, "the README's `:` commands: {named:?}");
    for usage in named {
        assert!(
            parsed(usage).is_ok(),
            "the README names {usage}, which the line refuses: {:?}",
            parsed(usage)
        );
    }
}

#[test]
fn the_readme_counts_every_pane() {
    let readme = readme();
    let panes = PaneId::ALL.len();
    let keys = format!("`1`–`{panes}`");
    let jumps = format!("`:1`…`:{panes}`");
    assert!(readme.contains(&keys), "the README says {keys}");
    assert!(readme.contains(&jumps), "the README says {jumps}");
    for stale in 1..panes {
        assert!(
            !readme.contains(&format!("`1`–`{stale}`"))
                && !readme.contains(&format!("`:1`…`:{stale}`")),
            "the README still counts {stale} panes"
        );
    }
    // The quick start names them all.
    let quick = readme
        .split("\n\n")
        .find(|paragraph| paragraph.starts_with("In the console:"))
        .unwrap_or_else(|| panic!("the quick start's console paragraph"));
    for pane in PaneId::ALL {
        assert!(quick.contains(pane.title()), "{}: {quick}", pane.title());
    }
}

#[test]
fn the_readme_key_table_lists_every_line_command_and_pane() {
    let readme = readme();
    let row = readme
        .lines()
        .find(|line| line.starts_with("| | `:` |"))
        .unwrap_or_else(|| panic!("the Keys table's `:` row"));
    let spans = code_spans(row);
    for command in command_line::commands() {
        assert!(
            spans.contains(&command.usage),
            "the README's `:` row lacks {}: {row}",
            command.usage
        );
    }
    for pane in PaneId::ALL {
        let named = spans.iter().any(|span| {
            span.strip_prefix(':')
                .is_some_and(|name| !name.starts_with(|c: char| c.is_ascii_digit()))
                && parsed(span) == Ok(Typed::GoTo(pane))
        });
        assert!(
            named,
            "the README's `:` row names no {}: {row}",
            pane.title()
        );
    }
}

/// A table's header as the screen shows it, words single-spaced.
fn header_words<R>(schema: &crate::tui::widgets::table_view::Schema<R>) -> String {
    let headers: Vec<&str> = schema.columns.iter().map(|column| column.header).collect();
    headers
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The README's screen captures show each table with the columns the
/// console draws today (a capture taken before a column changed fails).
#[test]
fn the_readme_captures_show_every_table_with_its_columns() {
    use crate::tui::panes::{deliveries, events, health, inbox, jobs, subscriptions};
    let readme = readme();
    let mut fenced = false;
    let mut captured = Vec::new();
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            captured.push(line.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    let tables = [
        ("Health", header_words(&health::tables::BOARD)),
        ("Subscriptions", header_words(&subscriptions::table::TABLE)),
        ("Deliveries", header_words(&deliveries::table::TABLE)),
        ("Jobs", header_words(&jobs::table::TABLE)),
        ("Inbox", header_words(&inbox::table::TABLE)),
        ("Events", header_words(&events::table::TABLE)),
    ];
    for (pane, header) in tables {
        assert!(
            captured.contains(&header),
            "the README has no capture of {pane} with its header {header:?}"
        );
    }
}
