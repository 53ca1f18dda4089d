//! The `earshot` binary: parse the command line, install color-eyre, dispatch.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    if let Err(error) = color_eyre::install() {
        eprintln!("warning: could not install the error reporter: {error}");
    }
    // Hidden, for tests of this binary: the shortest silence that counts
    // (60 s otherwise), so they need not wait a minute.
    if let Some(ms) = std::env::var("EARSHOT_SILENCE_FLOOR_MS")
        .ok()
        .and_then(|value| value.parse::<i64>().ok())
    {
        earshot_core::history::coverage::set_silence_floor_ms(ms);
    }
    let cli = earshot::Cli::parse();
    match earshot::run(cli) {
        Ok(code) => code,
        Err(report) => earshot::exit_with(&report),
    }
}
