//! The HTTP side: a hyper HTTP/1.1 server on 127.0.0.1, over TLS ([`crate::http::tls`]) unless
//! plain HTTP is asked for, one task per connection, and the
//! network faults that need the socket itself: refusing connections (the listener is
//! closed and every open connection dropped, so a pooled keep-alive connection cannot
//! carry the next request) and resetting a connection (SO_LINGER 0, then close: RST).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming as Body};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::http::api::{self, Incoming, Reply};
use crate::store::State;

type Out = BoxBody<Bytes, Infallible>;

/// Everything the server tasks share with the `Sim` handle.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) addr: SocketAddr,
    /// The TLS side of every connection, or `None` for plain HTTP.
    tls: Option<TlsAcceptor>,
    conns: Mutex<JoinSet<()>>,
    /// Desired: refuse connections.
    pub(crate) refuse: watch::Sender<bool>,
    /// Actual: whether the listener is open.
    pub(crate) listening: watch::Sender<bool>,
    /// Bumped to end every open watch.
    pub(crate) close_watches: watch::Sender<u64>,
    /// Bumped (with the current resourceVersion) to send a BOOKMARK to every watch.
    pub(crate) bookmarks: watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops every open connection and waits until their tasks are gone.
    pub(crate) async fn drop_connections(&self) {
        let mut set = std::mem::take(&mut *self.conns.lock().unwrap_or_else(|p| p.into_inner()));
        set.abort_all();
        while set.join_next().await.is_some() {}
    }
}

/// Binds the listener and starts accepting.
pub(crate) async fn start(
    state: State,
    tls: Option<TlsAcceptor>,
) -> io::Result<(Arc<Shared>, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(Shared {
        state: Mutex::new(state),
        addr,
        tls,
        conns: Mutex::new(JoinSet::new()),
        refuse: watch::channel(false).0,
        listening: watch::channel(true).0,
        close_watches: watch::channel(0).0,
        bookmarks: watch::channel(0).0,
    });
    let task = tokio::spawn(accept_loop(shared.clone(), listener));
    Ok((shared, task))
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let mut listener = Some(listener);
    let mut refuse = shared.refuse.subscribe();
    loop {
        match &listener {
            Some(l) => {
                tokio::select! {
                    accepted = l.accept() => {
                        if let Ok((stream, _)) = accepted {
                            spawn_connection(&shared, stream);
                        }
                    }
                    changed = refuse.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        if *refuse.borrow_and_update() {
                            listener = None;
                            shared.listening.send_replace(false);
                        }
                    }
                }
            }
            None => {
                if refuse.changed().await.is_err() {
                    return;
                }
                if !*refuse.borrow_and_update() {
                    // SO_REUSEADDR (set by tokio on Unix) lets the same port be bound again.
                    listener = TcpListener::bind(shared.addr).await.ok();
                    shared.listening.send_replace(listener.is_some());
                }
            }
        }
    }
}

fn spawn_connection(shared: &Arc<Shared>, stream: TcpStream) {
    let reset = Arc::new(AtomicBool::new(false));
    let io = ResetIo { stream, reset: reset.clone() };
    let s = shared.clone();
    let svc = service_fn(move |req| serve(s.clone(), reset.clone(), req));
    let tls = shared.tls.clone();
    let mut conns = shared.conns.lock().unwrap_or_else(|p| p.into_inner());
    while conns.try_join_next().is_some() {}
    conns.spawn(async move {
        let http = http1::Builder::new();
        let _ = match tls {
            None => http.serve_connection(TokioIo::new(io), svc).await,
            Some(tls) => match tls.accept(io).await {
                Ok(io) => http.serve_connection(TokioIo::new(io), svc).await,
                // A client that gives up its handshake is no concern of the server's.
                Err(_) => return,
            },
        };
    });
}

/// The error that makes hyper drop a connection we mean to reset.
#[derive(Debug, thiserror::Error)]
#[error("the simulated cluster resets this connection (fault injection)")]
struct ResetConnection;

async fn serve(
    shared: Arc<Shared>,
    reset: Arc<AtomicBool>,
    req: Request<Body>,
) -> Result<Response<Out>, ResetConnection> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return Err(ResetConnection);
    };
    let h = |name: header::HeaderName| {
        parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
    };
    let auth = h(header::AUTHORIZATION);
    let inc = Incoming {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or_default().to_string(),
        token: auth.strip_prefix("Bearer ").map(str::to_string),
        accept: h(header::ACCEPT),
        content_type: h(header::CONTENT_TYPE),
        user_agent: h(header::USER_AGENT),
        body,
    };
    let processed = api::process(&mut shared.lock(), &inc);
    if let Some(d) = processed.delay {
        tokio::time::sleep(d).await;
    }
    let warnings = &processed.warnings;
    let response = match processed.reply {
        Reply::Reset => {
            reset.store(true, Ordering::SeqCst);
            return Err(ResetConnection);
        }
        Reply::Json(code, v) => {
            respond(code, "application/json", serde_json::to_vec(&v).unwrap_or_default(), warnings)
        }
        Reply::Text(code, t) => respond(code, "text/plain; charset=utf-8", t.into_bytes(), &[]),
        Reply::Follow(f) => {
            let (tx, rx) = mpsc::channel(64);
            tokio::spawn(crate::http::logs::stream(f, tx));
            Response::builder()
                .status(200)
                .header(header::CONTENT_TYPE, "text/plain")
                .body(ChannelBody(rx).boxed())
        }
        Reply::Watch(start) => {
            let (tx, rx) = mpsc::channel(1024);
            let closer = shared.close_watches.subscribe();
            let bookmarks = shared.bookmarks.subscribe();
            tokio::spawn(crate::http::watch::stream(start, tx, closer, bookmarks));
            Response::builder()
                .status(200)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::TRANSFER_ENCODING, "chunked")
                .body(ChannelBody(rx).boxed())
        }
    };
    Ok(response.unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed())))
}

/// A whole response, with a `Warning` header (RFC 7234's code 299, as the apiserver
/// sends them) for each warning.
fn respond(
    code: u16,
    content_type: &str,
    body: Vec<u8>,
    warnings: &[String],
) -> http::Result<Response<Out>> {
    let mut response = Response::builder().status(code).header(header::CONTENT_TYPE, content_type);
    for w in warnings {
        let quoted = w.replace('\\', "\\\\").replace('"', "\\\"");
        response = response.header(header::WARNING, format!("299 - \"{quoted}\""));
    }
    response.body(Full::new(Bytes::from(body)).boxed())
}

/// A response body fed by a channel (watch streams).
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

/// A TCP stream that closes with RST (SO_LINGER 0) when its connection is reset on
/// purpose.
struct ResetIo {
    stream: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for ResetIo {
    fn drop(&mut self) {
        if self.reset.load(Ordering::SeqCst) {
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for ResetIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ResetIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.reset.load(Ordering::SeqCst) {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.reset.load(Ordering::SeqCst) {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
