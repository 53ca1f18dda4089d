//! `earshot listen --tls-cert FILE --tls-key FILE`: serve https, and
//! reload the certificate and key on SIGHUP (what `systemctl reload` and a
//! certbot deploy hook send) without dropping open connections.

use std::path::PathBuf;

use earshot_core::shutdown::OnHangup;
use earshot_core::tls::ServerTls;

/// The TLS flags of `listen`; both or neither (clap refuses one alone,
/// exit 2).
#[derive(clap::Args, Debug, Default)]
pub(crate) struct TlsArgs {
    /// Serve https with the certificate chain in FILE (PEM, the server's
    /// certificate first, then its intermediates). Needs --tls-key. SIGHUP
    /// then reloads both files instead of stopping `listen`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert, in FILE (PEM; never printed).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The server's TLS when both flags are given; the error is the
    /// message for exit 2 (it names the file at fault, never quotes it).
    pub(crate) fn load(&self) -> Result<Option<ServerTls>, String> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => ServerTls::load(cert, key)
                .map(Some)
                .map_err(|error| error.to_string()),
            (None, None) => Ok(None),
            _ => Err("--tls-cert and --tls-key go together: give both, or neither".to_owned()),
        }
    }
}

/// What SIGHUP does to `listen`: with TLS it reloads the certificate
/// ([`reload_on_hangup`], installed now), without it it stops `listen`
/// like SIGINT and SIGTERM.
pub(crate) fn on_hangup(tls: Option<ServerTls>) -> std::io::Result<OnHangup> {
    match tls {
        Some(tls) => {
            reload_on_hangup(tls)?;
            Ok(OnHangup::Continue)
        }
        None => Ok(OnHangup::Stop),
    }
}

/// From now on each SIGHUP reloads `tls` from its files, and says on
/// stderr what happened: the new certificate for the next handshakes, or
/// (a file missing or bad) the one in use kept. Installed before this
/// returns, so a SIGHUP right after it is not lost (nor fatal).
fn reload_on_hangup(tls: ServerTls) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup())?;
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                let reloading = tls.clone();
                let line = match tokio::task::spawn_blocking(move || reloading.reload()).await {
                    Ok(Ok(())) => format!(
                        "SIGHUP: reloaded the TLS certificate {} and key {}; new connections \
                         use them",
                        tls.cert_path().display(),
                        tls.key_path().display()
                    ),
                    Ok(Err(error)) => {
                        format!("SIGHUP: kept the TLS certificate in use: {error}")
                    }
                    Err(error) => format!("SIGHUP: kept the TLS certificate in use: {error}"),
                };
                eprintln!("earshot listen: {}", super::output::plain(&line));
            }
        });
    }
    #[cfg(not(unix))]
    let _ = tls;
    Ok(())
}
