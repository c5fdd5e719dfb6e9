//! Serving an axum router over plain HTTP or TLS, with graceful drain on shutdown.

use std::{convert::Infallible, future::Future, sync::Arc, time::Duration};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use rustls::ServerConfig;
use tokio::net::TcpListener;
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
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            drain_timeout: Duration::from_secs(25),
            tls_handshake_timeout: Duration::from_secs(10),
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
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    tokio::pin!(shutdown);

    loop {
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
        tokio::spawn(async move {
            let result =
                match acceptor {
                    None => {
                        let svc = with_peer(router, None);
                        let conn = builder
                            .serve_connection_with_upgrades(TokioIo::new(stream), svc)
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
                        let svc = with_peer(router, peer);
                        let conn = builder
                            .serve_connection_with_upgrades(TokioIo::new(tls_stream), svc)
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

fn with_peer(router: Router, peer: Option<PeerCertificates>) -> PeerService {
    let svc = tower::service_fn(move |mut req: http::Request<Incoming>| {
        if let Some(peer) = &peer {
            req.extensions_mut().insert(peer.clone());
        }
        router.clone().oneshot(req)
    });
    TowerToHyperService::new(tower::util::BoxCloneSyncService::new(svc))
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
