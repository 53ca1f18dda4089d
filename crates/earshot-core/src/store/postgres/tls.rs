//! TLS to the database with the rustls already linked (tokio-rustls under
//! tokio-postgres's TLS traits). The crypto provider is the one rustls is
//! built with (the process default when one is installed), so this code
//! does not change with it. The server's certificate is verified against
//! `sslrootcert` when the URL names one, else the system's roots (the
//! platform verifier reqwest uses). No channel binding: SCRAM logins run
//! without it.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};
use tokio_rustls::TlsConnector;

use crate::bounded_file;

/// Makes each connection's TLS; cheap to clone (one shared config).
#[derive(Clone)]
pub struct MakeRustls {
    config: Arc<ClientConfig>,
}

impl MakeRustls {
    /// TLS trusting the certificate authorities in `root_cert` (PEM), or
    /// the system's when `None`. An error says what is wrong with the file
    /// or the system's roots.
    pub fn new(root_cert: Option<&Path>) -> Result<MakeRustls, String> {
        let builder = ClientConfig::builder();
        let config = match root_cert {
            Some(path) => {
                let bytes = bounded_file::read(path, bounded_file::TLS_CERT_FILE)
                    .map_err(|error| error.to_string())?;
                let mut roots = RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(&bytes) {
                    let cert = cert.map_err(|error| {
                        format!("sslrootcert {} is not PEM: {error}", path.display())
                    })?;
                    roots.add(cert).map_err(|error| {
                        format!(
                            "sslrootcert {} holds a bad certificate: {error}",
                            path.display()
                        )
                    })?;
                }
                if roots.is_empty() {
                    return Err(format!(
                        "sslrootcert {} holds no certificate (-----BEGIN CERTIFICATE-----)",
                        path.display()
                    ));
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            None => {
                use rustls_platform_verifier::BuilderVerifierExt;
                builder
                    .with_platform_verifier()
                    .map_err(|error| format!("the system's certificate roots: {error}"))?
                    .with_no_client_auth()
            }
        };
        Ok(MakeRustls {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
        Ok(RustlsConnect {
            connector: TlsConnector::from(Arc::clone(&self.config)),
            name,
        })
    }
}

/// One connection's TLS handshake.
pub struct RustlsConnect {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let stream = self.connector.connect(self.name, stream).await?;
            Ok(RustlsStream(stream))
        })
    }
}

/// An encrypted connection to the database.
pub struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
