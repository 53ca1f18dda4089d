//! One accepted connection's bytes: plain TCP, or TLS over it. The TLS
//! handshake is not made at accept but when the connection's own task
//! first reads or writes, so a client that is slow to finish it (or never
//! does) holds up no other client: it holds its connection slot like any
//! open connection, and the request-head timer of `http_server`, which
//! starts at accept, closes it.
//!
//! TLS is the `tls` feature's: without it no [`TlsAcceptor`] can be made,
//! and every connection is plain.

#[cfg(feature = "tls")]
use std::future::Future;
use std::io;
use std::pin::Pin;
#[cfg(feature = "tls")]
use std::task::ready;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
#[cfg(feature = "tls")]
use tokio_rustls::{Accept, server::TlsStream};

/// What makes a server's connections TLS: made from a
/// `tokio_rustls::TlsAcceptor` with the `tls` feature; without it none
/// exists, so every server is plain HTTP.
#[derive(Clone)]
pub struct TlsAcceptor(Acceptor);

#[cfg(feature = "tls")]
type Acceptor = tokio_rustls::TlsAcceptor;

/// No acceptor without the `tls` feature.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
enum Acceptor {}

#[cfg(feature = "tls")]
impl From<tokio_rustls::TlsAcceptor> for TlsAcceptor {
    fn from(acceptor: tokio_rustls::TlsAcceptor) -> TlsAcceptor {
        TlsAcceptor(acceptor)
    }
}

impl std::fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsAcceptor")
    }
}

/// A connection's stream.
pub(crate) enum Transport {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<Tls>),
}

/// Where a TLS connection is.
#[cfg(feature = "tls")]
pub(crate) enum Tls {
    /// The handshake is under way.
    Handshaking(Accept<TcpStream>),
    /// Handshake done: application data flows.
    Ready(TlsStream<TcpStream>),
    /// The handshake failed; the connection is being closed.
    Failed,
}

impl Transport {
    /// `stream` as is, or (with an acceptor) TLS over it, the handshake to
    /// come.
    pub(crate) fn new(stream: TcpStream, tls: Option<&TlsAcceptor>) -> Transport {
        match tls {
            #[cfg(feature = "tls")]
            Some(TlsAcceptor(acceptor)) => {
                Transport::Tls(Box::new(Tls::Handshaking(acceptor.accept(stream))))
            }
            #[cfg(not(feature = "tls"))]
            Some(TlsAcceptor(never)) => match *never {},
            None => Transport::Plain(stream),
        }
    }
}

#[cfg(feature = "tls")]
impl Tls {
    /// The stream once the handshake is done, driving it until then.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&mut TlsStream<TcpStream>>> {
        if let Tls::Handshaking(accept) = self {
            match ready!(Pin::new(accept).poll(cx)) {
                Ok(stream) => *self = Tls::Ready(stream),
                Err(error) => {
                    tracing::debug!(%error, "TLS handshake failed");
                    *self = Tls::Failed;
                    return Poll::Ready(Err(error));
                }
            }
        }
        match self {
            Tls::Ready(stream) => Poll::Ready(Ok(stream)),
            _ => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the TLS handshake failed",
            ))),
        }
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Transport::Tls(tls) => {
                let stream = ready!(tls.poll_ready(cx))?;
                Pin::new(stream).poll_read(cx, buf)
            }
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Transport::Tls(tls) => {
                let stream = ready!(tls.poll_ready(cx))?;
                Pin::new(stream).poll_write(cx, buf)
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            #[cfg(feature = "tls")]
            Transport::Tls(tls) => {
                let stream = ready!(tls.poll_ready(cx))?;
                Pin::new(stream).poll_write_vectored(cx, bufs)
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Transport::Plain(stream) => stream.is_write_vectored(),
            #[cfg(feature = "tls")]
            Transport::Tls(tls) => match tls.as_ref() {
                Tls::Ready(stream) => stream.is_write_vectored(),
                _ => false,
            },
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_flush(cx),
            #[cfg(feature = "tls")]
            Transport::Tls(tls) => {
                let stream = ready!(tls.poll_ready(cx))?;
                Pin::new(stream).poll_flush(cx)
            }
        }
    }

    /// Sends TLS's `close_notify` first when the handshake is done; a
    /// connection still in (or failed at) its handshake just closes.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Transport::Tls(tls) => match tls.as_mut() {
                Tls::Ready(stream) => Pin::new(stream).poll_shutdown(cx),
                Tls::Handshaking(accept) => match accept.get_mut() {
                    Some(stream) => Pin::new(stream).poll_shutdown(cx),
                    None => Poll::Ready(Ok(())),
                },
                Tls::Failed => Poll::Ready(Ok(())),
            },
        }
    }
}
