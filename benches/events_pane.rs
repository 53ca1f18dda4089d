//! `cargo bench --bench events_pane [-- events=50000]`: the Events
//! pane's frame (target: < 1 ms).
//!
//! One full `view::draw` of the console on the Events pane at 120×40 on
//! ratatui's `TestBackend` (a fresh `Terminal::draw` each time, so buffer
//! diffing is included), holding what the pane holds at most: 5,000 events
//! (`LIST_LIMIT`), read from the realistic store (`store_scale/builder.rs`,
//! built on first use) by the console's own read (`console_read.rs`) and
//! answered the way the worker answers it
//! (`Action::Events(EventsResult::Loaded)`); with the selection at the top
//! and on the last row. Two filters: none (the newest 5,000: the typical
//! mix, mostly delivered) and `status:missed` (the worst: every row a
//! customer's missed outcome after its attempts, each outcome column
//! full). The reference, interleaved in the same run: the straightforward
//! frame that builds a ratatui `Table` row for every event and lets the
//! widget pick the window. Median and p99 of 100 frames after 10 warm-up
//! frames. The store read behind a filter is `store_scale -- list`.

use std::time::{Duration, Instant};

use earshot::bench::Console;
use earshot_core::history::event_list::EventRow;
use earshot_core::history::event_query::EventQuery;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Constraint;
use ratatui::widgets::{Row, Table, TableState};

// Only the store and the read are used here; the rest is the builder's.
#[allow(dead_code)]
#[path = "store_scale/builder.rs"]
mod builder;
#[path = "store_scale/console_read.rs"]
mod console_read;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SIZE: (u16, u16) = (120, 40);
const FRAMES: usize = 100;
const WARMUP: usize = 10;
const TARGET_MS: f64 = 1.0;
/// The filters: none (typical), and the store's worst rows.
const MIXES: [(&str, &str); 2] = [
    ("typical (newest, no filter)", ""),
    ("worst (status:missed)", "status:missed"),
];

/// Goes to the Events pane and answers its first read with `rows`.
fn loaded(rows: Vec<EventRow>) -> Result<Console, BoxError> {
    let mut console = Console::new();
    let load = console
        .press(KeyCode::Char('8'))
        .pop()
        .ok_or("the pane did not read the store on its first visit")?;
    let count = rows.len();
    console.answer_events(load, rows);
    if console.event_rows().len() != count {
        return Err(format!(
            "the pane holds {} of {count} rows",
            console.event_rows().len()
        )
        .into());
    }
    Ok(console)
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

/// The pane's frames and the reference's, interleaved.
fn measure(console: &Console, selected: usize) -> (Stats, Stats) {
    for _ in 0..WARMUP {
        pane_frame(console);
    }
    naive_frame(console.event_rows(), selected);
    let mut pane = Vec::with_capacity(FRAMES);
    let mut naive = Vec::with_capacity(FRAMES);
    for _ in 0..FRAMES {
        pane.push(pane_frame(console));
        naive.push(naive_frame(console.event_rows(), selected));
    }
    (stats(pane), stats(naive))
}

/// The frame shows the selected event (the measurement draws real rows).
fn shows(console: &Console, id: &str) -> Result<(), BoxError> {
    let screen = console.screen(SIZE);
    if !screen.contains(id) {
        return Err(format!("the frame does not show {id}:\n{screen}").into());
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let events = std::env::args()
        .find_map(|arg| arg.strip_prefix("events=").map(str::to_owned))
        .map_or(Ok(50_000), |text| text.parse())?;
    let path = builder::built(events)?;
    let now_ms = console_read::store_now(&path)?;
    println!();
    println!(
        "Events pane frame, {}x{}, TestBackend (ms), rows read from {}",
        SIZE.0,
        SIZE.1,
        path.display()
    );
    println!();
    println!(
        "{:<28} {:>6} {:>8} {:<7} {:>9} {:>9} {:>10} {:>10}  verdict",
        "mix", "rows", "outcomes", "where", "pane med", "pane p99", "naive med", "naive p99"
    );
    for (name, filter) in MIXES {
        let rows = console_read::read(&path, &EventQuery::parse(filter, now_ms)?, now_ms)?;
        let count = rows.len();
        if count == 0 {
            return Err(format!("`{filter}` lists nothing in {}", path.display()).into());
        }
        let outcomes = rows
            .iter()
            .map(|row| row.subscriptions.len())
            .sum::<usize>();
        let mut console = loaded(rows)?;
        for (place, selected) in [("top", 0), ("last", count - 1)] {
            if place == "last" {
                console.press(KeyCode::Char('G'));
            }
            let session = console.event_rows()[selected].session_id.clone();
            let on = console.event_selected().map(|row| row.session_id.as_str());
            if on != Some(session.as_str()) {
                return Err(format!("row {selected} is not selected ({on:?})").into());
            }
            // The session column shows the first 21 characters.
            shows(&console, &session[..session.len().min(21)])?;
            let (pane, naive) = measure(&console, selected);
            println!(
                "{:<28} {:>6} {:>8} {:<7} {:>9.3} {:>9.3} {:>10.1} {:>10.1}  {}",
                name,
                count,
                outcomes,
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
    Ok(())
}
