//! The help overlay: its layout, wrapping within each column, and
//! scrolling to every key of every pane.

use ratatui::crossterm::event::KeyCode;

use super::{app, key, keys, pane_area, render, snapshot};

#[test]
fn help_overlay() {
    let mut app = app();
    keys(&mut app, "?");
    snapshot("help_overlay", &app);
}

/// Long key descriptions wrap within their own column, under their
/// First line, not back to the box's left edge.
#[test]
fn help_overlay_on_deliveries_wraps_within_each_column() {
    let mut app = app();
    keys(&mut app, "3?");
    let size = (120, 40);
    let terminal = render(&app, size);
    insta::assert_snapshot!("help_overlay_deliveries_120x40", pane_area(&terminal));
    // Every row of the overlay that holds text is either a section title,
    // a key with its description, or a continuation indented to the
    // description column: never text starting at a column's left edge
    // that is not a title.
    let sections = app.help_sections();
    let titles: Vec<&str> = sections.iter().map(|section| section.title).collect();
    let buffer = terminal.backend().buffer();
    let row = |y: u16, from: u16, to: u16| -> String {
        (from..to).map(|x| buffer[(x, y)].symbol()).collect()
    };
    // The box is 104 wide, centred; two columns of 51 inside its border.
    let left = (size.0 - 104) / 2 + 1;
    let mut checked = 0;
    for y in 0..size.1 {
        if buffer[(left - 1, y)].symbol() != "│" {
            continue; // outside the box
        }
        for start in [left, left + 51] {
            let text = row(y, start, start + 51);
            let trimmed = text.trim_end();
            if trimmed.is_empty() || trimmed.starts_with(' ') {
                continue;
            }
            assert!(
                titles.iter().any(|title| trimmed.starts_with(title)),
                "row {y} starts a column with {trimmed:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "the overlay did not draw its sections");
}
/// Wrapped descriptions count: scrolling the help reaches the last key of
/// every section of every pane, in one column and in two.
#[test]
fn help_scrolls_to_every_key_of_every_pane() {
    for size in [(80, 24), (120, 40), (200, 70)] {
        for pane in ["1", "2", "3", "4", "5", "6", "7", "8"] {
            let mut app = app();
            keys(&mut app, pane);
            let sections = app.help_sections();
            keys(&mut app, "?");
            let mut seen = String::new();
            for _ in 0..80 {
                let terminal = render(&app, size);
                let buffer = terminal.backend().buffer();
                for y in 0..size.1 {
                    seen.extend((0..size.0).map(|x| buffer[(x, y)].symbol()));
                    seen.push('\n');
                }
                app.update(key(KeyCode::Down));
            }
            for section in sections {
                let last = section.commands.last().expect("a section has keys");
                let start: String = last.description.chars().take(14).collect();
                assert!(
                    seen.contains(section.title) && seen.contains(&start),
                    "pane {pane} at {size:?}: help never shows {:?} / {start:?}",
                    section.title
                );
            }
        }
    }
}
