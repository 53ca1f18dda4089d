//! One accepted connection's bytes ([`GuardedIo`]): the request head must
//! arrive in time, a kept-alive connection waits for its next request only
//! so long, an answer the client does not read ends it, and a connection
//! chosen to make room for a new client fails its next read or write.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};

use super::connections::ConnState;
use super::transport::Transport;
use super::{ServerLimits, Shared};

/// Where a connection is in its request/answer cycle, as seen from bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading a request head: it must end before the deadline.
    Head,
    /// Head read; the body and the handler run (their own limits apply).
    Message,
    /// Answer (being) sent; the next request must start before the
    /// deadline, which each write of the answer pushes back.
    KeepAlive,
}

/// One accepted connection: the stream (plain or TLS), its connection
/// slot (freed when hyper drops it), the head, keep-alive and
/// unread-answer timers, and its entry among the open connections.
pub struct GuardedIo {
    stream: Transport,
    _slot: OwnedSemaphorePermit,
    shared: Arc<Shared>,
    id: u64,
    pub(super) state: Arc<ConnState>,
    limits: ServerLimits,
    phase: Phase,
    /// The head or keep-alive deadline (none in [`Phase::Message`]).
    deadline: Option<Pin<Box<Sleep>>>,
    /// The last byte of the head so far was a line feed (a blank line ends
    /// the head; `\r` is passed over).
    line_feed: bool,
    /// Set while a write waits for the client to read.
    write_stall: Option<Pin<Box<Sleep>>>,
}

impl GuardedIo {
    pub(super) fn new(stream: Transport, slot: OwnedSemaphorePermit, shared: Arc<Shared>) -> Self {
        let limits = shared.limits;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState::new(shared.now_ms()));
        shared
            .open
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .insert(id, state.clone());
        Self {
            stream,
            _slot: slot,
            shared,
            id,
            state,
            limits,
            phase: Phase::Head,
            deadline: Some(Box::pin(tokio::time::sleep(limits.header_read))),
            line_feed: false,
            write_stall: None,
        }
    }

    fn arm(&mut self, after: Duration) {
        let at = Instant::now() + after;
        match &mut self.deadline {
            Some(deadline) => deadline.as_mut().reset(at),
            None => self.deadline = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    fn start_head(&mut self) {
        self.phase = Phase::Head;
        self.line_feed = false;
        self.arm(self.limits.header_read);
    }

    /// Follows bytes of a request head; a blank line ends it.
    fn scan_head(&mut self, bytes: &[u8]) {
        for byte in bytes {
            match byte {
                b'\n' if self.line_feed => {
                    self.phase = Phase::Message;
                    self.deadline = None;
                    return;
                }
                b'\n' => self.line_feed = true,
                b'\r' => {}
                _ => self.line_feed = false,
            }
        }
    }

    fn deadline_passed(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline
            .as_mut()
            .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready())
    }

    fn touch(&self) {
        self.state
            .last_byte
            .store(self.shared.now_ms(), Ordering::Release);
    }

    /// The connection was chosen to make room for a new client; until it
    /// is, the task is woken when it is.
    fn evicted(&self, cx: &mut Context<'_>) -> bool {
        self.state.waker.register(cx.waker());
        self.state.evicted.load(Ordering::Acquire)
    }

    /// A write or flush waits for the client to read: it fails once the
    /// connection is chosen to make room, or has waited `idle`.
    fn write_waits<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        if self.evicted(cx) {
            return Poll::Ready(Err(made_room()));
        }
        let idle = self.limits.idle;
        let stall = self
            .write_stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        if stall.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(timed_out("the client did not read the answer")));
        }
        Poll::Pending
    }

    /// Common bookkeeping of a write that made progress or waits;
    /// `first` is the start of what was written.
    fn on_write(
        &mut self,
        cx: &mut Context<'_>,
        first: &[u8],
        result: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match result {
            Poll::Pending => self.write_waits(cx),
            Poll::Ready(result) => {
                self.write_stall = None;
                if matches!(result, Ok(written) if written > 0) {
                    self.touch();
                }
                // `100 Continue` comes before the body is read: not the answer.
                let interim = self.phase == Phase::Message && first.starts_with(b"HTTP/1.1 1");
                if result.is_ok() && self.phase != Phase::Head && !interim {
                    // hyper waits on the socket without reading again after
                    // an answer, so the timer is polled (its wake-up
                    // registered) here: it alone ends an idle connection.
                    self.phase = Phase::KeepAlive;
                    self.arm(self.limits.idle);
                    let _ = self.deadline_passed(cx);
                }
                Poll::Ready(result)
            }
        }
    }
}

impl Drop for GuardedIo {
    fn drop(&mut self) {
        self.shared
            .open
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&self.id);
    }
}

fn timed_out(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what)
}

fn made_room() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "closed to make room for a new client",
    )
}

impl AsyncRead for GuardedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.evicted(cx) {
            return Poll::Ready(Err(made_room()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() == before {
                    return Poll::Ready(Ok(()));
                }
                this.touch();
                if this.phase == Phase::KeepAlive {
                    this.start_head();
                }
                if this.phase == Phase::Head {
                    // A head trickled in byte by byte still has to end in time.
                    if this.deadline_passed(cx) {
                        return Poll::Ready(Err(timed_out(
                            "the request head did not arrive in time",
                        )));
                    }
                    this.scan_head(&buf.filled()[before..]);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => {
                if this.deadline_passed(cx) {
                    return Poll::Ready(Err(timed_out(match this.phase {
                        Phase::KeepAlive => "no next request in time",
                        _ => "the request head did not arrive in time",
                    })));
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for GuardedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.on_write(cx, buf, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        let first = bufs
            .iter()
            .find(|buf| !buf.is_empty())
            .map_or(&[][..], |buf| &buf[..]);
        this.on_write(cx, first, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    /// Over TLS a flush sends what the TLS layer holds, so it can wait
    /// on a client that does not read, like a write.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_flush(cx) {
            Poll::Pending => this.write_waits(cx),
            Poll::Ready(result) => {
                this.write_stall = None;
                Poll::Ready(result)
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_shutdown(cx) {
            Poll::Pending => this.write_waits(cx),
            Poll::Ready(result) => Poll::Ready(result),
        }
    }
}
