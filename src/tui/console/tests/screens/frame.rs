//! The frame around the pane on screen, checked once here (every other
//! snapshot holds the pane's area only): the tab bar names the registry's
//! panes in tab order, the number keys count them, and the footer and
//! status bar frame the pane.

use super::{SIZES, app, colour, fg_at, find, go_to_range, keys, render, rows, screen_text};
use crate::tui::panes::PaneId;
use crate::tui::theme::Role;

#[test]
fn the_tab_bar_and_the_go_to_keys_follow_the_registry() {
    let app = app();
    for size in SIZES {
        let terminal = render(&app, size);
        let bar = rows(&terminal, 0..1);
        let mut from = 0;
        for (index, pane) in PaneId::ALL.into_iter().enumerate() {
            let number = index + 1;
            // Full titles, else short ones, else only the number (the
            // bar's room decides).
            let at = [pane.title(), pane.short_title(), ""]
                .into_iter()
                .find_map(|title| {
                    let label = if title.is_empty() {
                        format!(" {number} ")
                    } else {
                        format!(" {number} {title} ")
                    };
                    bar[from..].find(&label).map(|at| from + at + label.len())
                })
                .unwrap_or_else(|| panic!("tab {number} ({pane:?}) after byte {from}: {bar}"));
            from = at;
        }
        let on_screen = format!(" 2 {}", PaneId::Subscriptions.short_title());
        let (x, y) = find(&terminal, &on_screen);
        assert_eq!(y, 0, "the tabs are the first row");
        assert_eq!(
            fg_at(&terminal, (x + 1, y)),
            colour(Role::Accent),
            "the pane on screen stands out"
        );
    }
    let mut helped = app;
    keys(&mut helped, "?");
    let text = screen_text(&render(&helped, (120, 40)));
    assert!(text.contains(&go_to_range()), "{text}");
    assert!(text.contains("go to pane"), "{text}");
    assert_eq!(go_to_range(), format!("1–{}", PaneId::ALL.len()));
}

#[test]
fn the_footer_and_status_bar_frame_every_pane() {
    let app = app();
    for (width, height) in SIZES {
        let terminal = render(&app, (width, height));
        insta::assert_snapshot!(
            format!("frame_footer_status_{width}x{height}"),
            rows(&terminal, height - 2..height)
        );
    }
}
