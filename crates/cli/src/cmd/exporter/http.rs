//! The exporter's HTTP server: hyper's HTTP/1 server on a tokio runtime
//! in the calling thread, with a bound on everything a client controls.
//!
//! - A request head (request line and headers) is read into a buffer of
//!   at most [`MAX_HEAD_BYTES`]; a longer one, or one of more than
//!   [`MAX_HEADERS`] fields, is answered 431. A request target over
//!   [`MAX_TARGET_BYTES`] is answered 414. A request that announces a
//!   body (any `Content-Length` above 0, any `Transfer-Encoding`) is
//!   answered 413 without reading it. Unparsable requests are answered
//!   400. Every refusal closes the connection.
//! - At most `max_connections` connections are open; when one more comes
//!   (or no file descriptor is left), the least recently active
//!   connection is closed to make room, so idle connections cannot lock
//!   a scraper out.
//! - A connection must deliver each request head within [`HEAD_TIMEOUT`]
//!   of being ready for it (this is also the idle keep-alive timeout),
//!   and take each answer within [`WRITE_TIMEOUT`] of its first byte.
//! - One thread: connections cost a task and their buffers, not a thread.
//!   Requests are answered one at a time, each by the handler, in order.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Body as _, Incoming};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Sleep;

/// Request line and headers together, in bytes (also hyper's smallest
/// buffer limit). Beyond it: 431.
pub const MAX_HEAD_BYTES: usize = 8192;
/// Header fields in a request. Beyond it: 431.
pub const MAX_HEADERS: usize = 100;
/// The request target (path and query), in bytes. Beyond it: 414.
pub const MAX_TARGET_BYTES: usize = 2048;
/// Time for a request head to arrive, counted from when the connection
/// is ready for it: from its opening, or from the end of the previous
/// answer (so also the keep-alive idle time). Then the connection closes.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for the client to take an answer, counted from its first byte.
/// Then the connection closes.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Open connections by default (`--max-connections`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// The most `--max-connections` accepts.
pub const MAX_CONNECTIONS_LIMIT: usize = 4096;

/// What the handler answers to a request.
pub struct Answer {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body (left out by hyper for `HEAD`).
    pub body: String,
}

/// A bound listening socket, not yet serving.
pub struct Server {
    listener: std::net::TcpListener,
    max_connections: usize,
}

impl Server {
    /// Binds `addr`; `max_connections` is at least 1.
    pub fn bind(addr: SocketAddr, max_connections: usize) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(Self { listener, max_connections: max_connections.max(1) })
    }

    /// The address actually bound (port 0 becomes a real port).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until the process ends; `handler(method, path)` answers
    /// every request that passed the limits. Returns only if the runtime
    /// cannot start.
    pub fn serve<H>(self, handler: H) -> io::Result<Infallible>
    where
        H: Fn(&str, &str) -> Answer + 'static,
    {
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, accept_loop(self.listener, self.max_connections, Rc::new(handler)))
    }
}

/// An open connection, as the accept loop sees it.
struct Open {
    /// When a byte last went in or out.
    last_active: Rc<Cell<Instant>>,
    task: JoinHandle<()>,
}

type Registry = Rc<RefCell<HashMap<u64, Open>>>;

async fn accept_loop<H>(listener: std::net::TcpListener, max: usize, handler: Rc<H>) -> io::Result<Infallible>
where
    H: Fn(&str, &str) -> Answer + 'static,
{
    let listener = TcpListener::from_std(listener)?;
    let open: Registry = Rc::default();
    let mut next_id = 0u64;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                // No descriptor for the waiting connection: make room.
                if !close_least_active(&open).await {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                continue;
            }
            Err(_) => {
                // A connection reset before it was accepted, or a
                // shortage that passes: never a reason to stop serving.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        while open.borrow().len() >= max {
            if !close_least_active(&open).await {
                break;
            }
        }
        let id = next_id;
        next_id += 1;
        let last_active = Rc::new(Cell::new(Instant::now()));
        let unregister = Unregister { id, open: Rc::clone(&open) };
        let task =
            tokio::task::spawn_local(connection(stream, Rc::clone(&handler), Rc::clone(&last_active), unregister));
        open.borrow_mut().insert(id, Open { last_active, task });
    }
}

/// Closes the connection that has been quiet longest, and waits until its
/// socket is closed. False if none is open.
async fn close_least_active(open: &Registry) -> bool {
    let oldest = open.borrow().iter().min_by_key(|(_, c)| c.last_active.get()).map(|(id, _)| *id);
    let Some(conn) = oldest.and_then(|id| open.borrow_mut().remove(&id)) else { return false };
    conn.task.abort();
    // Aborted: the task (and its socket) is dropped before this returns.
    let _ = conn.task.await;
    true
}

/// Takes a connection out of the registry when its task ends (or is
/// aborted).
struct Unregister {
    id: u64,
    open: Registry,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        if let Ok(mut open) = self.open.try_borrow_mut() {
            open.remove(&self.id);
        }
    }
}

async fn connection<H>(stream: TcpStream, handler: Rc<H>, last_active: Rc<Cell<Instant>>, _unregister: Unregister)
where
    H: Fn(&str, &str) -> Answer + 'static,
{
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Guarded { stream, last_active, write_deadline: None });
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        std::future::ready(Ok::<_, Infallible>(respond(&*handler, &req)))
    });
    // Errors (timeouts, resets, refused requests) end the connection; the
    // client has had its answer where there was one to give.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        .serve_connection(io, service)
        .await;
}

/// The answer to a request whose head passed hyper's limits.
fn respond<H: Fn(&str, &str) -> Answer>(handler: &H, req: &Request<Incoming>) -> Response<String> {
    if !req.body().is_end_stream() {
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, "numakit exporter: requests with a body are not accepted\n");
    }
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_TARGET_BYTES {
        return refusal(StatusCode::URI_TOO_LONG, "numakit exporter: request target too long\n");
    }
    let answer = handler(req.method().as_str(), req.uri().path());
    let mut resp = Response::new(answer.body);
    *resp.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(answer.content_type));
    resp
}

/// A refusal that closes the connection.
fn refusal(status: StatusCode, why: &'static str) -> Response<String> {
    let mut resp = Response::new(why.to_string());
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    resp.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// A connection's socket that records its activity and fails a write
/// that has not been taken within [`WRITE_TIMEOUT`] of its first byte.
struct Guarded {
    stream: TcpStream,
    last_active: Rc<Cell<Instant>>,
    /// Armed by the first write of an answer, cleared when it is flushed.
    write_deadline: Option<Pin<Box<Sleep>>>,
}

impl Guarded {
    fn arm(&mut self) {
        if self.write_deadline.is_none() {
            self.write_deadline = Some(Box::pin(tokio::time::sleep(WRITE_TIMEOUT)));
        }
    }

    /// A write that cannot proceed now: pending, or an error once the
    /// deadline has passed.
    fn stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.write_deadline.as_mut().map(|d| d.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => {
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client did not take the answer")))
            }
            _ => Poll::Pending,
        }
    }

    fn wrote(&mut self, r: Poll<io::Result<usize>>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        match r {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.last_active.set(Instant::now());
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => self.stalled(cx),
            other => other,
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.last_active.set(Instant::now());
        }
        r
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.arm();
        let r = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.wrote(r, cx)
    }

    /// No: hyper then writes through `send` with `MSG_NOSIGNAL`, where
    /// `writev` to a client that has hung up raises SIGPIPE (fatal if the
    /// process ever stops ignoring it).
    fn is_write_vectored(&self) -> bool {
        false
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_flush(cx) {
            Poll::Ready(Ok(())) => {
                this.write_deadline = None;
                Poll::Ready(Ok(()))
            }
            Poll::Pending => this.stalled(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
