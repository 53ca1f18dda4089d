//! Time to paste and to type N characters into the Signatures pane's
//! X-SVC-Signature field, through `App::update` as the console does, and
//! one frame of the pane with that value focused (120×40 `TestBackend`).
//!
//! Each size starts from an empty form: one `Event::Paste` of N
//! characters; then, from empty again, N key presses one at a time. Only
//! the public API is used, so the same file runs against an older tree.
//!
//! Run: `cargo run --release --example signature_typing [N ...]`
//! (default N: 100000 200000).

use std::time::{Duration, Instant};

use earshot::tui::action::Action;
use earshot::tui::app::{App, AppConfig};
use earshot::tui::theme::Theme;
use earshot::tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

fn key(code: KeyCode) -> Action {
    Action::Input(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

/// A console on the Signatures pane, typing into the header field.
fn editing_header() -> App {
    let mut app = App::new(AppConfig::default());
    app.update(key(KeyCode::Char('5')));
    app.update(key(KeyCode::Enter));
    app
}

fn timed(work: impl FnOnce()) -> Duration {
    let started = Instant::now();
    work();
    started.elapsed()
}

fn frame(app: &App, theme: &Theme) -> Duration {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("a test terminal");
    timed(|| {
        terminal
            .draw(|frame| view::draw(frame, app, theme))
            .expect("drawn");
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|arg| arg.parse())
        .collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() {
        vec![100_000, 200_000]
    } else {
        sizes
    };
    let theme = Theme::fallback();
    println!("chars     paste (s)  type (s)   frame (ms)");
    for n in sizes {
        let mut pasted = editing_header();
        let paste = timed(|| {
            pasted.update(Action::Input(Event::Paste("a".repeat(n))));
        });
        assert_eq!(
            pasted.sigs.header.value().len(),
            n,
            "every character pasted"
        );

        let mut typed = editing_header();
        let typing = timed(|| {
            for _ in 0..n {
                typed.update(key(KeyCode::Char('a')));
            }
        });
        assert_eq!(typed.sigs.header.value().len(), n, "every character typed");
        let frame = frame(&typed, &theme);
        println!(
            "{n:<9} {:>9.3}  {:>8.3}  {:>10.3}",
            paste.as_secs_f64(),
            typing.as_secs_f64(),
            frame.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
