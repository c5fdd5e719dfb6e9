//! Serving an axum router over plain HTTP or TLS, with graceful drain on shutdown.

use std::{
    convert::Infallible,
    future::Future,
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt as _;

use super::{ServerError, tls::PeerCertificates};

/// Knobs of [`serve_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// How long in-flight requests may take to finish after shutdown starts. Kept below the
    /// default 30s pod termination grace period so we exit before the kubelet's SIGKILL.
    pub drain_timeout: Duration,
    /// A client that opens a connection and never finishes the handshake must not pin a task.
    pub tls_handshake_timeout: Duration,
    /// A request's headers must arrive within this, or the connection is closed (a slowloris
    /// client sends them a byte at a time). hyper starts the clock when it waits for the next
    /// request, so an idle keep-alive HTTP/1 connection is closed after this long too.
    /// `None`: no limit (Go's zero).
    pub header_read_timeout: Option<Duration>,
    /// A handler must answer within this (503 otherwise), and a response write that makes no
    /// progress for this long ends the connection: a client that stops reading must not pin a
    /// rendered body forever. `None`: no limit (Go's zero).
    pub write_timeout: Option<Duration>,
    /// Idle HTTP/2 connections are pinged this often and closed when a ping goes unanswered
    /// for as long.
    pub http2_keep_alive: Duration,
    /// Connections served at once; more wait in the listen backlog until one closes.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            drain_timeout: Duration::from_secs(25),
            tls_handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Some(Duration::from_secs(10)),
            write_timeout: Some(Duration::from_secs(60)),
            http2_keep_alive: Duration::from_secs(60),
            max_connections: 4096,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then drains.
/// See [`serve_with`].
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<ServerConfig>>,
    router: Router,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    serve_with(listener, tls, router, shutdown, ServeOptions::default()).await
}

/// Serves HTTP/1.1 and HTTP/2 (ALPN over TLS, prior knowledge in plain text).
///
/// On TLS connections with a verified client certificate the chain is inserted into each
/// request as a [`PeerCertificates`] extension.
///
/// When `shutdown` completes the listener is closed at once (new connections are refused),
/// open connections are told to finish (HTTP/1 `Connection: close`, HTTP/2 GOAWAY), and the
/// function returns when they are done or `drain_timeout` passed — the latter is reported as
/// [`ServerError::DrainTimeout`] so the caller can log it, though exiting is still right.
pub async fn serve_with(
    listener: TcpListener,
    tls: Option<Arc<ServerConfig>>,
    router: Router,
    shutdown: impl Future<Output = ()>,
    options: ServeOptions,
) -> Result<(), ServerError> {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .max_buf_size(MAX_HEADER_BYTES);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(options.http2_keep_alive)
        .keep_alive_timeout(options.http2_keep_alive)
        .max_header_list_size(u32::try_from(MAX_HEADER_BYTES).unwrap_or(u32::MAX))
        .max_concurrent_streams(250);
    let builder = Arc::new(builder);
    let connections = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let write_timeout = options.write_timeout;
    tokio::pin!(shutdown);

    loop {
        let permit = tokio::select! {
            biased;
            () = &mut shutdown => break,
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, remote) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Usually EMFILE or a connection reset before accept; retrying after a
                    // pause beats dying, which would drop every in-flight request.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let watcher = graceful.watcher();
        let router = router.clone();
        let acceptor = acceptor.clone();
        let builder = builder.clone();
        let handshake_timeout = options.tls_handshake_timeout;
        let header_timeout = options.header_read_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let result =
                match acceptor {
                    None => {
                        let svc = with_peer(router, None, write_timeout);
                        let io = ConnectionGuard::new(stream, write_timeout, header_timeout);
                        let conn = builder
                            .serve_connection_with_upgrades(TokioIo::new(io), svc)
                            .into_owned();
                        watcher.watch(conn).await
                    }
                    Some(acceptor) => {
                        let tls_stream =
                            match tokio::time::timeout(handshake_timeout, acceptor.accept(stream))
                                .await
                            {
                                Ok(Ok(s)) => s,
                                Ok(Err(e)) => {
                                    tracing::debug!(%remote, error = %e, "TLS handshake failed");
                                    return;
                                }
                                Err(_) => {
                                    tracing::debug!(%remote, "TLS handshake timed out");
                                    return;
                                }
                            };
                        let peer = tls_stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .filter(|c| !c.is_empty())
                            .map(|c| PeerCertificates(Arc::new(c.to_vec())));
                        let svc = with_peer(router, peer, write_timeout);
                        let io = ConnectionGuard::new(tls_stream, write_timeout, header_timeout);
                        let conn = builder
                            .serve_connection_with_upgrades(TokioIo::new(io), svc)
                            .into_owned();
                        watcher.watch(conn).await
                    }
                };
            if let Err(e) = result {
                tracing::debug!(%remote, error = %e, "connection ended with error");
            }
        });
    }

    drop(listener);
    tokio::time::timeout(options.drain_timeout, graceful.shutdown())
        .await
        .map_err(|_| ServerError::DrainTimeout(options.drain_timeout))
}

type PeerService = TowerToHyperService<
    tower::util::BoxCloneSyncService<http::Request<Incoming>, axum::response::Response, Infallible>,
>;

/// Request headers (line and fields) larger than this are refused (431 for HTTP/1).
const MAX_HEADER_BYTES: usize = 64 * 1024;

fn with_peer(
    router: Router,
    peer: Option<PeerCertificates>,
    answer_within: Option<Duration>,
) -> PeerService {
    let svc = tower::service_fn(move |mut req: http::Request<Incoming>| {
        if let Some(peer) = &peer {
            req.extensions_mut().insert(peer.clone());
        }
        // A handler that panics (a bug met by one request's input) answers that request 500;
        // the connection, the others and the process go on.
        let answer = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
            router.clone().oneshot(req),
        ));
        async move {
            let answered = match answer_within {
                None => answer.await,
                Some(limit) => match tokio::time::timeout(limit, answer).await {
                    Ok(answered) => answered,
                    Err(_) => return Ok(handler_timed_out(limit)),
                },
            };
            answered.unwrap_or_else(|panic| Ok(handler_panicked(panic.as_ref())))
        }
    });
    TowerToHyperService::new(tower::util::BoxCloneSyncService::new(svc))
}

fn handler_timed_out(limit: Duration) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    (
        http::StatusCode::SERVICE_UNAVAILABLE,
        format!("the request was not answered within the server's write timeout ({limit:?})\n"),
    )
        .into_response()
}

fn handler_panicked(panic: &(dyn std::any::Any + Send)) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(panic = %message, "a request handler panicked (a bug; please report it)");
    (
        http::StatusCode::INTERNAL_SERVER_ERROR,
        "internal error: the request handler failed\n",
    )
        .into_response()
}

/// Bytes hyper reads to tell an HTTP/2 prior-knowledge preface from an HTTP/1 request.
const PREFACE_BYTES: usize = 24;

/// Two bounds hyper does not apply itself:
/// - a write pending for `write_timeout` with no progress fails, so a client that stops
///   reading releases its connection and the response it holds;
/// - the first [`PREFACE_BYTES`] must arrive within the header-read timeout of the
///   connection's start: hyper's header clock starts only once it has told HTTP/1 from
///   HTTP/2 by them, so a client trickling them a byte a minute would otherwise hold the
///   connection forever.
///
/// Later reads pass through: an idle connection waits for its next request under hyper's
/// header-read timeout.
struct ConnectionGuard<T> {
    inner: T,
    write_timeout: Option<Duration>,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    preface_deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    read_so_far: usize,
}

impl<T> ConnectionGuard<T> {
    fn new(inner: T, write_timeout: Option<Duration>, header_timeout: Option<Duration>) -> Self {
        Self {
            inner,
            write_timeout,
            stalled: None,
            preface_deadline: header_timeout.map(|t| Box::pin(tokio::time::sleep(t))),
            read_so_far: 0,
        }
    }

    fn guard_write<R>(
        &mut self,
        cx: &mut Context<'_>,
        attempt: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        let Some(timeout) = self.write_timeout.filter(|_| attempt.is_pending()) else {
            self.stalled = None;
            return attempt;
        };
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if stalled.as_mut().poll(cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {timeout:?}"),
            )));
        }
        Poll::Pending
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ConnectionGuard<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let attempt = Pin::new(&mut self.inner).poll_read(cx, buf);
        let Some(deadline) = self.preface_deadline.as_mut() else {
            return attempt;
        };
        match attempt {
            Poll::Ready(Ok(())) => {
                let read = buf.filled().len() - before;
                self.read_so_far += read;
                if self.read_so_far >= PREFACE_BYTES || read == 0 {
                    self.preface_deadline = None;
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                self.preface_deadline = None;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the request did not start within the header-read timeout",
                )))
            }
            other => other,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ConnectionGuard<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let attempt = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.guard_write(cx, attempt)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let attempt = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.guard_write(cx, attempt)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let attempt = Pin::new(&mut self.inner).poll_flush(cx);
        self.guard_write(cx, attempt)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Completes on SIGTERM (what the kubelet sends) or SIGINT (Ctrl-C when run by hand).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("received SIGINT, shutting down"),
        () = term => tracing::info!("received SIGTERM, shutting down"),
    }
}
