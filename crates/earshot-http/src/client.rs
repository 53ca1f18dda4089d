//! Where every earshot HTTP client starts: [`client_builder`].
//!
//! With the `tls` feature reqwest speaks https through rustls without a
//! crypto provider of its own (`rustls-no-provider`), so the whole build
//! has one provider, ring, the one the server side uses too; a client
//! built before a process-wide provider is installed would panic, so the
//! builder installs ring's first. Without `tls` reqwest has no TLS and
//! there is nothing to install.

/// A `reqwest::ClientBuilder`, with rustls' ring provider installed as the
/// process default (`tls` feature) unless a provider already is.
pub fn client_builder() -> reqwest::ClientBuilder {
    #[cfg(feature = "tls")]
    install_crypto_provider();
    reqwest::Client::builder()
}

/// Installs ring as the process's rustls provider, once; a provider the
/// program installed before (its own choice) stays.
#[cfg(feature = "tls")]
pub fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Err only when a provider is already installed: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
