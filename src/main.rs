//! The `earshot` binary: parse the command line, install color-eyre, dispatch.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    if let Err(error) = color_eyre::install() {
        eprintln!("warning: could not install the error reporter: {error}");
    }
    let cli = earshot::Cli::parse();
    match earshot::run(cli) {
        Ok(code) => code,
        Err(report) => earshot::exit_with(&report),
    }
}
