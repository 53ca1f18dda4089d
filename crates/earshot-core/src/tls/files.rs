//! The certificate chain and private key of a TLS server, read from the
//! PEM files the operator names: read bounded ([`crate::bounded_file`]),
//! parsed with rustls' own PEM types, and the key checked against the
//! certificate. Every error names the file and says what to give instead;
//! none quotes a byte of either file.

use std::path::{Path, PathBuf};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::{Error as RustlsError, InconsistentKeys};

use crate::bounded_file::{self, FileError};

/// Why a certificate or key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Missing, not a regular file, too large or unreadable (the bounded
    /// reader's words, which name the file).
    #[error(transparent)]
    File(#[from] FileError),
    #[error(
        "the TLS certificate file {} is not valid PEM ({why}): give the certificate \
         chain in PEM, `-----BEGIN CERTIFICATE-----` blocks with the server's own first",
        path.display()
    )]
    CertNotPem { path: PathBuf, why: &'static str },
    #[error(
        "the TLS certificate file {} holds no certificate (`-----BEGIN CERTIFICATE-----`){hint}",
        path.display()
    )]
    NoCertificate { path: PathBuf, hint: &'static str },
    #[error(
        "the first certificate in the TLS certificate file {} cannot be used ({why}): \
         give the server's X.509 certificate first, then its intermediates",
        path.display()
    )]
    BadCertificate { path: PathBuf, why: String },
    #[error(
        "the TLS key file {} is not valid PEM ({why}): give the private key in PEM \
         (`-----BEGIN PRIVATE KEY-----`)",
        path.display()
    )]
    KeyNotPem { path: PathBuf, why: &'static str },
    #[error(
        "the TLS key file {} holds no private key (`-----BEGIN PRIVATE KEY-----`, \
         `RSA PRIVATE KEY` or `EC PRIVATE KEY`){hint}",
        path.display()
    )]
    NoKey { path: PathBuf, hint: &'static str },
    #[error(
        "the TLS key file {} holds a key earshot cannot use: give an ECDSA (P-256, \
         P-384), Ed25519 or RSA private key",
        path.display()
    )]
    UnusableKey { path: PathBuf },
    #[error(
        "the key in {} is not the key of the certificate in {}: give the key the \
         certificate was issued for",
        key.display(),
        cert.display()
    )]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    /// The TLS library refused the configuration (not the files).
    #[error("cannot set up TLS: {0}")]
    Setup(String),
}

/// The chain in `cert` (PEM, the server's certificate first) with the
/// private key in `key`, checked to belong together, as `provider` signs.
pub fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let cert_pem = bounded_file::read(cert, bounded_file::TLS_CERT_FILE)?;
    let key_pem = bounded_file::read(key, bounded_file::TLS_KEY_FILE)?;
    let chain = certificates(cert, &cert_pem)?;
    let private_key = private_key(key, &key_pem)?;
    let signing_key = provider
        .key_provider
        .load_private_key(private_key)
        .map_err(|_| TlsError::UnusableKey {
            path: key.to_owned(),
        })?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        // A key whose public half the provider cannot tell is taken as
        // given (rustls does the same).
        Ok(()) | Err(RustlsError::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(certified),
        Err(RustlsError::InconsistentKeys(_)) => Err(TlsError::KeyMismatch {
            cert: cert.to_owned(),
            key: key.to_owned(),
        }),
        Err(error) => Err(TlsError::BadCertificate {
            path: cert.to_owned(),
            why: error.to_string(),
        }),
    }
}

/// Every `CERTIFICATE` block of `pem`, in order; at least one.
fn certificates(path: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::CertNotPem {
            path: path.to_owned(),
            why: pem_problem(&error),
        })?;
    if chain.is_empty() {
        let hint = if PrivateKeyDer::from_pem_slice(pem).is_ok() {
            ": it holds a private key; is it the key file?"
        } else {
            ""
        };
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
            hint,
        });
    }
    Ok(chain)
}

/// The first private key block of `pem`.
fn private_key(path: &Path, pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|error| match error {
        pem::Error::NoItemsFound => TlsError::NoKey {
            path: path.to_owned(),
            hint: if CertificateDer::from_pem_slice(pem).is_ok() {
                ": it holds a certificate; is it the certificate file?"
            } else {
                ""
            },
        },
        error => TlsError::KeyNotPem {
            path: path.to_owned(),
            why: pem_problem(&error),
        },
    })
}

/// What is wrong with a PEM file, in words that quote none of its bytes
/// (rustls' own messages quote the offending line, which in a key file is
/// part of the key).
fn pem_problem(error: &pem::Error) -> &'static str {
    match error {
        pem::Error::MissingSectionEnd { .. } => "a BEGIN line has no END line",
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed",
        pem::Error::Base64Decode(_) => "a block is not valid base64",
        pem::Error::SectionTooLarge => "a block is too large",
        pem::Error::NoItemsFound => "nothing in it",
        _ => "it cannot be read as PEM",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_MARKER: &str = "SECRETKEYBYTES";

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn provider() -> CryptoProvider {
        rustls::crypto::ring::default_provider()
    }

    #[test]
    fn a_broken_key_file_is_named_and_never_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let cert = write(dir.path(), "cert.pem", "");
        let key = write(
            dir.path(),
            "key.pem",
            &format!("-----BEGIN PRIVATE KEY-----\n{KEY_MARKER}!!\n"),
        );
        let error = private_key(&key, &std::fs::read(&key).unwrap()).unwrap_err();
        let shown = format!("{error} {error:?}");
        assert!(shown.contains("key.pem"), "{shown}");
        assert!(shown.contains("no END line"), "{shown}");
        assert!(!shown.contains(KEY_MARKER), "{shown}");
        // Through `load`, the empty certificate file is found first.
        let error = load(&cert, &key, &provider()).unwrap_err();
        assert!(error.to_string().contains("cert.pem"), "{error}");
        assert!(!format!("{error:?}").contains(KEY_MARKER));
    }

    #[test]
    fn a_certificate_file_given_as_the_key_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let text = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let path = write(dir.path(), "swapped.pem", text);
        let error = private_key(&path, text.as_bytes()).unwrap_err();
        let shown = error.to_string();
        assert!(
            shown.contains("swapped.pem") && shown.contains("is it the certificate file?"),
            "{shown}"
        );
        let error = certificates(&path, b"no pem here").unwrap_err();
        assert!(
            matches!(error, TlsError::NoCertificate { hint: "", .. }),
            "{error}"
        );
    }
}
