//! `earshot sign`: prints the `X-SVC-Signature` value the platform would send
//! for a body, so a receiver can be tested with a delivery made by hand.
//! The signing itself is [`earshot_core::signature::sign`]; this file only reads the
//! arguments and the body.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use earshot_core::bounded_file;
use earshot_core::redact::SecretString;
use earshot_core::signature;

use super::secret_arg;

/// Sign a webhook body the way the platform does.
#[derive(clap::Args, Debug)]
pub(crate) struct SignArgs {
    /// The subscription secret (any length; it is never printed). Prefer
    /// --secret-file or EARSHOT_WEBHOOK_SECRET: a value given here is
    /// visible to other users in `ps`.
    #[arg(long, value_name = "S", conflicts_with = "secret_file")]
    pub(crate) secret: Option<SecretString>,

    /// Read the secret from FILE (trailing newline ignored).
    #[arg(long, value_name = "FILE")]
    pub(crate) secret_file: Option<PathBuf>,

    /// The raw body to sign; `-` reads standard input.
    #[arg(long, value_name = "F")]
    pub(crate) body_file: PathBuf,

    /// Unix seconds to sign at (default: now).
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub(crate) timestamp: Option<i64>,
}

/// Prints `t=<T>,v1=<hex>` on standard output. Exit 2 when the secret or
/// the body cannot be read.
pub(crate) fn run(args: SignArgs) -> color_eyre::Result<ExitCode> {
    let secret = match secret_arg::resolve(
        args.secret.as_ref(),
        args.secret_file.as_deref(),
        secret_arg::WEBHOOK_SECRET_ENV,
    ) {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            eprintln!(
                "earshot sign: {}",
                secret_arg::missing("--secret", secret_arg::WEBHOOK_SECRET_ENV)
            );
            return Ok(ExitCode::from(2));
        }
        Err(error) => {
            eprintln!("earshot sign: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let body = match read_body(&args.body_file) {
        Ok(body) => body,
        Err(message) => {
            eprintln!("earshot sign: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    let timestamp = args.timestamp.unwrap_or_else(unix_now);
    println!(
        "{}",
        signature::sign(secret.expose().as_bytes(), timestamp, &body)
    );
    Ok(ExitCode::SUCCESS)
}

/// Reads the body file byte for byte (`-` is standard input); the error says
/// which file and why, ready to show.
pub(crate) fn read_body(path: &Path) -> Result<Vec<u8>, String> {
    if path == Path::new("-") {
        return bounded_file::read_from(
            std::io::stdin().lock(),
            Path::new("standard input"),
            bounded_file::BODY_FILE,
        )
        .map_err(|error| error.to_string());
    }
    bounded_file::read(path, bounded_file::BODY_FILE).map_err(|error| {
        format!("{error} (pass the raw request body as a file, or - for standard input)")
    })
}

/// The current Unix time in seconds.
pub(crate) fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}
