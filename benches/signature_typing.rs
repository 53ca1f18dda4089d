//! Time to paste and to type N characters into the Signatures pane's
//! X-SVC-Signature field, through `App::update` as the console does, and
//! one frame of the pane with that value focused (120×40 `TestBackend`).
//!
//! Each size starts from an empty form: one `Event::Paste` of N
//! characters; then, from empty again, N key presses one at a time. The
//! console is driven through its door for benchmarks, `earshot::bench`.
//!
//! Run: `cargo bench --bench signature_typing -- [N ...]`
//! (default N: 100000 200000).

use std::time::{Duration, Instant};

use earshot::bench::Console;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;

/// A console on the Signatures pane, typing into the header field.
fn editing_header() -> Console {
    let mut console = Console::new();
    console.press(KeyCode::Char('5'));
    console.press(KeyCode::Enter);
    console
}

fn timed(work: impl FnOnce()) -> Duration {
    let started = Instant::now();
    work();
    started.elapsed()
}

fn frame(console: &Console) -> Duration {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("a test terminal");
    timed(|| console.draw(&mut terminal))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .map(|arg| arg.parse())
        .collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() {
        vec![100_000, 200_000]
    } else {
        sizes
    };
    println!("chars     paste (s)  type (s)   frame (ms)");
    for n in sizes {
        let mut pasted = editing_header();
        let paste = timed(|| {
            pasted.paste("a".repeat(n));
        });
        assert_eq!(pasted.signature_header().len(), n, "every character pasted");

        let mut typed = editing_header();
        let typing = timed(|| {
            for _ in 0..n {
                typed.press(KeyCode::Char('a'));
            }
        });
        assert_eq!(typed.signature_header().len(), n, "every character typed");
        let frame = frame(&typed);
        println!(
            "{n:<9} {:>9.3}  {:>8.3}  {:>10.3}",
            paste.as_secs_f64(),
            typing.as_secs_f64(),
            frame.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
