//! The Signatures pane: the empty form and a failing diagnosis with the
//! secret masked.

use super::{SIZES, app, keys, render, snapshot};

#[test]
fn signatures_empty_form() {
    let mut app = app();
    keys(&mut app, "5");
    snapshot("sigs_empty", &app);
}

#[test]
fn signatures_failing_diagnosis() {
    use crate::tui::panes::signatures::Field;
    let secret = "~!@#$%^&*()_+{}|:<>?`-=[]\\;',./0123456789AB";
    let mut app = app();
    keys(&mut app, "5");
    // Shared vector `valid-4`, pasted through a terminal that dropped the
    // CR of its CRLF body, and checked 301 s late.
    app.panes.sigs.set(
        Field::Header,
        "t=1795300004,v1=9a928240ac8edcb8b8409e2ed771db207345e5dd606f1fed3cc53b42048f8b64",
    );
    app.panes.sigs.set(Field::Body, "{\"a\":1}\n");
    app.panes.sigs.set(Field::Current, secret);
    app.panes.sigs.set(Field::Now, "1795300305");
    for size in SIZES {
        let screen = render(&app, size).backend().to_string();
        assert!(!screen.contains(secret), "the secret is masked");
    }
    snapshot("sigs_failing", &app);
}
