//! The `earshot` binary: parse the command line, install color-eyre, dispatch.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    if let Err(error) = color_eyre::install() {
        eprintln!("warning: could not install the error reporter: {error}");
    }
    let cli = earshot::cli::Cli::parse();
    match earshot::cli::run(cli) {
        Ok(code) => code,
        Err(report) => earshot::cli::exit_with(&report),
    }
}
