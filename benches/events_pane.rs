//! `cargo bench --bench events_pane`: the Events pane's frame (target:
//! < 1 ms at 1,000,000 events).
//!
//! One full `view::draw` of the console on the Events pane at 120×40 on
//! ratatui's `TestBackend` (a fresh `Terminal::draw` each time, so buffer
//! diffing is included), holding 5,000 events (what a store read gives the
//! pane, `LIST_LIMIT`) and 1,000,000, with the selection at the top and on
//! the last row; the events loaded the way the worker answers a read
//! (`Action::Events(EventsResult::Loaded)`). Two mixes: typical (one
//! subscription, delivered) and worst (five subscriptions, every one
//! missed after many attempts, so each row fills its outcome column and
//! is cut). The reference, interleaved in the same run: the
//! straightforward frame that builds a ratatui `Table` row for every event
//! and lets the widget pick the window. Median and p99 of 100 frames after
//! 10 warm-up frames (the reference: 100 at 5,000 events, 5 at 1,000,000). The store read behind a filter is measured by
//! `examples/history_bench` (`only=eventlist`, docs/store.md).

use std::time::{Duration, Instant};

use earshot::bench::Console;
use earshot_core::history::event_list::{EventRow, SubscriptionOutcome};
use earshot_core::store::outcomes::EventState;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Constraint;
use ratatui::widgets::{Row, Table, TableState};

const SIZE: (u16, u16) = (120, 40);
const FRAMES: usize = 100;
const WARMUP: usize = 10;
const COUNTS: [usize; 2] = [5_000, 1_000_000];
const TARGET_MS: f64 = 1.0;

#[derive(Clone, Copy)]
enum Mix {
    Typical,
    Worst,
}

impl Mix {
    fn name(self) -> &'static str {
        match self {
            Mix::Typical => "typical (1 sub delivered)",
            Mix::Worst => "worst (5 subs missed ×12)",
        }
    }

    fn row(self, n: usize) -> EventRow {
        let (subscriptions, state, attempts) = match self {
            Mix::Typical => (1, EventState::Delivered, 1),
            Mix::Worst => (5, EventState::Missed, 12),
        };
        EventRow {
            event_id: format!("{n:08x}-5d3a-4c8e-9f10-2b4c6d8e0a1f"),
            event: "call.ended".into(),
            session_id: format!("call_{n:032x}"),
            occurred_at: String::new(),
            occurred_ms: 1_800_000_000_000 - n as i64 * 1_000,
            received_ms: 0,
            subscriptions: (0..subscriptions)
                .map(|s| SubscriptionOutcome {
                    id: format!("{s:08x}-0000-4000-8000-000000000000"),
                    state,
                    attempts,
                    observer: false,
                })
                .collect(),
        }
    }
}

/// Goes to the Events pane and answers its first read with `rows`.
fn loaded(rows: Vec<EventRow>) -> Console {
    let mut console = Console::new();
    let load = console
        .press(KeyCode::Char('8'))
        .pop()
        .expect("the pane reads the store on first visit");
    let count = rows.len();
    console.answer_events(load, rows);
    assert_eq!(console.event_rows().len(), count);
    console
}

fn terminal() -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(SIZE.0, SIZE.1)).expect("test terminal")
}

fn pane_frame(console: &Console) -> Duration {
    let mut terminal = terminal();
    let started = Instant::now();
    console.draw(&mut terminal);
    let elapsed = started.elapsed();
    std::hint::black_box(terminal.backend());
    elapsed
}

/// The reference: every event becomes a `Row`, the widget windows them.
fn naive_frame(rows: &[EventRow], selected: usize) -> Duration {
    let mut terminal = terminal();
    let started = Instant::now();
    terminal
        .draw(|frame| {
            let table_rows = rows.iter().map(|row| {
                let outcomes: Vec<String> = row
                    .subscriptions
                    .iter()
                    .map(|o| format!("{} {} ×{}", &o.id[..8], o.state.as_str(), o.attempts))
                    .collect();
                Row::new(vec![
                    row.occurred_ms.to_string(),
                    row.event.clone(),
                    row.session_id.clone(),
                    outcomes.join(" · "),
                ])
            });
            let widths = [
                Constraint::Length(8),
                Constraint::Length(18),
                Constraint::Length(22),
                Constraint::Min(10),
            ];
            let mut state = TableState::default().with_selected(Some(selected));
            frame.render_stateful_widget(Table::new(table_rows, widths), frame.area(), &mut state);
        })
        .expect("draws");
    let elapsed = started.elapsed();
    std::hint::black_box(terminal.backend());
    elapsed
}

struct Stats {
    median: f64,
    p99: f64,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        median: pick(0.5).as_secs_f64() * 1e3,
        p99: pick(0.99).as_secs_f64() * 1e3,
    }
}

/// The pane's frames and the reference's, interleaved (the reference
/// takes about a second a frame at 1,000,000 events, so it draws one frame
/// in every `naive_every`).
fn measure(console: &Console, selected: usize) -> (Stats, Stats) {
    let naive_every = (console.event_rows().len() / 50_000).max(1);
    for _ in 0..WARMUP {
        pane_frame(console);
    }
    naive_frame(console.event_rows(), selected);
    let mut pane = Vec::with_capacity(FRAMES);
    let mut naive = Vec::new();
    for frame in 0..FRAMES {
        pane.push(pane_frame(console));
        if frame % naive_every == 0 {
            naive.push(naive_frame(console.event_rows(), selected));
        }
    }
    (stats(pane), stats(naive))
}

/// The frame shows the selected event (the measurement draws real rows).
fn shows(console: &Console, id: &str) {
    let screen = console.screen(SIZE);
    assert!(screen.contains(id), "the frame shows {id}:\n{screen}");
}

fn main() {
    println!();
    println!("Events pane frame, {}x{}, TestBackend (ms)", SIZE.0, SIZE.1);
    println!();
    println!(
        "{:<28} {:>9} {:<7} {:>11} {:>9} {:>12} {:>10}  verdict",
        "mix", "events", "where", "pane med", "pane p99", "naive med", "naive p99"
    );
    for count in COUNTS {
        for mix in [Mix::Typical, Mix::Worst] {
            let mut console = loaded((0..count).map(|n| mix.row(n)).collect());
            for (place, selected) in [("top", 0), ("last", count - 1)] {
                if place == "last" {
                    console.press(KeyCode::Char('G'));
                }
                let session = format!("call_{selected:032x}");
                let on = console.event_selected().map(|row| row.session_id.as_str());
                assert_eq!(on, Some(session.as_str()));
                // The session column shows the first 21 characters.
                shows(&console, &session[..21]);
                let (pane, naive) = measure(&console, selected);
                println!(
                    "{:<28} {:>9} {:<7} {:>11.3} {:>9.3} {:>12.1} {:>10.1}  {}",
                    mix.name(),
                    count,
                    place,
                    pane.median,
                    pane.p99,
                    naive.median,
                    naive.p99,
                    if pane.median < TARGET_MS {
                        "ok"
                    } else {
                        "OVER"
                    }
                );
            }
        }
    }
}
