//! TLS for earshot's servers (`earshot listen --tls-cert --tls-key`):
//!
//! - [`files`]: the certificate chain and key, read from PEM files;
//! - [`ServerTls`]: the rustls server configuration over them. Its
//!   certificate is looked up at each handshake, so [`ServerTls::reload`]
//!   changes what new connections get while open ones keep theirs, and a
//!   reload that fails changes nothing;
//! - [`ServerTls::acceptor`]: what `http_server` (`earshot-http`, its
//!   `tls` feature) makes each connection's TLS with, the handshake run by
//!   the connection's own task after accept, under the same limits.
//!
//! The crypto provider is aws-lc-rs, the one reqwest already links.

pub mod files;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

pub use files::TlsError;

/// A server's TLS: the files it was loaded from, the certificate and key
/// in use, and the rustls configuration handshakes are made with. Clones
/// share all of it (a reload through one is seen by every clone).
#[derive(Clone)]
pub struct ServerTls {
    inner: Arc<Inner>,
}

struct Inner {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Arc<CurrentKey>,
    config: Arc<ServerConfig>,
}

impl ServerTls {
    /// TLS with the chain in `cert` and the key in `key` (PEM); an error
    /// names the file at fault.
    pub fn load(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certified = files::load(cert, key, &provider)?;
        let current = Arc::new(CurrentKey(RwLock::new(Arc::new(certified))));
        let mut config = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|error| TlsError::Setup(error.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        // The servers speak HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            inner: Arc::new(Inner {
                cert_path: cert.to_owned(),
                key_path: key.to_owned(),
                provider,
                current,
                config: Arc::new(config),
            }),
        })
    }

    /// Reads the two files again and, when they are good, gives their
    /// certificate to every handshake from now on; connections already
    /// open keep theirs. On an error the certificate in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let inner = &self.inner;
        let certified = files::load(&inner.cert_path, &inner.key_path, &inner.provider)?;
        inner.current.replace(certified);
        Ok(())
    }

    /// The certificate file (PEM) given.
    pub fn cert_path(&self) -> &Path {
        &self.inner.cert_path
    }

    /// The key file (PEM) given.
    pub fn key_path(&self) -> &Path {
        &self.inner.key_path
    }

    /// The acceptor a server wraps each accepted connection with; it
    /// sees every [`reload`](ServerTls::reload) made after.
    pub fn acceptor(&self) -> crate::http_server::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.inner.config.clone()).into()
    }
}

impl fmt::Debug for ServerTls {
    /// The file names only: never a byte of the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert", &self.inner.cert_path)
            .field("key", &self.inner.key_path)
            .finish()
    }
}

/// The certificate and key new handshakes get.
struct CurrentKey(RwLock<Arc<CertifiedKey>>);

impl CurrentKey {
    fn get(&self) -> Arc<CertifiedKey> {
        // A poisoned lock still holds a whole `Arc`: use it.
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn replace(&self, certified: CertifiedKey) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(certified);
    }
}

impl ResolvesServerCert for CurrentKey {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

impl fmt::Debug for CurrentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurrentKey")
            .field("chain_len", &self.get().cert.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for localhost and its key, as PEM files
    /// in `dir`: (cert path, key path, key PEM).
    fn write_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let pem = |label: &str, der: &[u8]| {
            use base64::Engine;
            let text = base64::engine::general_purpose::STANDARD.encode(der);
            format!("-----BEGIN {label}-----\n{text}\n-----END {label}-----\n")
        };
        let key_pem = pem("PRIVATE KEY", &key.serialize_der());
        let cert_path = dir.join(format!("{name}-cert.pem"));
        let key_path = dir.join(format!("{name}-key.pem"));
        std::fs::write(&cert_path, pem("CERTIFICATE", cert.der())).unwrap();
        std::fs::write(&key_path, &key_pem).unwrap();
        (cert_path, key_path, key_pem)
    }

    #[test]
    fn a_failed_reload_keeps_the_pair_in_use_and_a_good_one_swaps_it() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key, key_pem) = write_pair(dir.path(), "first");
        let tls = ServerTls::load(&cert, &key).unwrap();
        let first = tls.inner.current.get();

        // The key of another certificate: refused, the first pair stays.
        let (_, other_key, _) = write_pair(dir.path(), "other");
        std::fs::copy(&other_key, &key).unwrap();
        let error = tls.reload().unwrap_err();
        assert!(matches!(error, TlsError::KeyMismatch { .. }), "{error}");
        assert!(Arc::ptr_eq(&first, &tls.inner.current.get()));

        // A matching pair in place: swapped, for every clone.
        let (second_cert, second_key, _) = write_pair(dir.path(), "second");
        std::fs::copy(&second_cert, &cert).unwrap();
        std::fs::copy(&second_key, &key).unwrap();
        let clone = tls.clone();
        tls.reload().unwrap();
        let now = clone.inner.current.get();
        assert!(!Arc::ptr_eq(&first, &now));
        assert_ne!(first.cert, now.cert);

        // Debug shows the paths, never the key.
        let shown = format!("{tls:?} {:?}", tls.inner.current);
        let key_body = key_pem.lines().nth(1).unwrap();
        assert!(shown.contains("first-key.pem"), "{shown}");
        assert!(!shown.contains(&key_body[..32]), "{shown}");
    }
}
