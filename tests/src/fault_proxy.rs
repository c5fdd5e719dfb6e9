//! A fault-injecting proxy in front of a real Prometheus, for the fault e2e tests: it passes
//! requests through, or fails them the ways a Prometheus, a proxy or a network does. (Mocks
//! are for fault injection only: whatever it passes through is the real Prometheus' answer.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::pinned::relay;

/// How the proxy answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Forwards to Prometheus.
    None,
    /// Nothing listens: connections are refused (Prometheus is down).
    Down,
    /// Waits this long, then forwards.
    Slow(Duration),
    /// Answers this status with Prometheus' error JSON.
    Status(u16),
    /// Answers 200 with an HTML page (the login or error page of a proxy in between).
    Garbage,
    /// Answers 200 with a valid Prometheus JSON body padded to this many bytes.
    Oversized(usize),
    /// Forwards requests whose request target (path and query) is at most this long and
    /// answers longer ones 414 URI Too Long, as nginx, ingress controllers and API gateways in
    /// front of a Prometheus do (prometheus-adapter #668).
    UriLimit(usize),
}

#[derive(Debug)]
struct Shared {
    fault: Mutex<Fault>,
    upstream: String,
    http: reqwest::Client,
    requests: AtomicU64,
    refused_uris: AtomicU64,
    /// Instant queries (`/api/v1/query`) received and not yet answered.
    queries_in_flight: AtomicU64,
}

/// The proxy, on a fixed loopback port until dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The running server: its shutdown signal and task; `None` while [`Fault::Down`].
    server: tokio::sync::Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some((_, task)) = self.server.get_mut().take() {
            task.abort();
        }
    }
}

impl FaultProxy {
    /// Starts forwarding to `upstream` (a base URL such as `http://127.0.0.1:9090`).
    pub async fn start(upstream: &str) -> Result<Self> {
        let shared = Arc::new(Shared {
            fault: Mutex::new(Fault::None),
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()?,
            requests: AtomicU64::new(0),
            queries_in_flight: AtomicU64::new(0),
            refused_uris: AtomicU64::new(0),
        });
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let addr = listener.local_addr()?;
        let server = serve(listener, shared.clone());
        Ok(Self {
            addr,
            shared,
            server: tokio::sync::Mutex::new(Some(server)),
        })
    }

    /// The base URL to give a service as its Prometheus.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// From now on, answers as `fault` says. [`Fault::Down`] closes the listener and every
    /// connection once its request in flight is answered; any other fault listens again on
    /// the same port.
    pub async fn set(&self, fault: Fault) -> Result<()> {
        let down = fault == Fault::Down;
        *self
            .shared
            .fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = fault;
        let mut server = self.server.lock().await;
        match (down, server.take()) {
            (true, Some((stop, task))) => {
                let _ = stop.send(());
                let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
            }
            (false, None) => *server = Some(serve(bind(self.addr)?, self.shared.clone())),
            (_, running) => *server = running,
        }
        Ok(())
    }

    /// Requests received so far (passed through or not).
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// Instant queries (`/api/v1/query`) the proxy holds right now (a [`Fault::Slow`] holds
    /// each for its delay): a test waits on this to know its requests reached Prometheus.
    pub fn queries_in_flight(&self) -> u64 {
        self.shared.queries_in_flight.load(Ordering::Relaxed)
    }

    /// Requests answered 414 by [`Fault::UriLimit`] so far.
    pub fn refused_uris(&self) -> u64 {
        self.shared.refused_uris.load(Ordering::Relaxed)
    }
}

/// Binds with SO_REUSEADDR, so the port can be taken again right after a [`Fault::Down`]
/// (its closed connections linger in TIME_WAIT).
fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket
        .bind(addr)
        .with_context(|| format!("binding the fault proxy to {addr}"))?;
    Ok(socket.listen(128)?)
}

fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let app = axum::Router::new().fallback(answer).with_state(shared);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    (stop, task)
}

/// Counts an instant query in flight until dropped, however its answer ends.
struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    shared.requests.fetch_add(1, Ordering::Relaxed);
    let _query = (request.uri().path() == "/api/v1/query").then(|| {
        shared.queries_in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&shared.queries_in_flight)
    });
    let fault = shared
        .fault
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    match fault {
        // A request that slipped in while the listener closed.
        Fault::Down => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Fault::None => forward(&shared, request).await,
        Fault::UriLimit(n) => {
            let target = request
                .uri()
                .path_and_query()
                .map_or(0, |pq| pq.as_str().len());
            if target > n {
                shared.refused_uris.fetch_add(1, Ordering::Relaxed);
                (
                    StatusCode::URI_TOO_LONG,
                    "<html><body><h1>414 Request-URI Too Large</h1></body></html>",
                )
                    .into_response()
            } else {
                forward(&shared, request).await
            }
        }
        Fault::Slow(d) => {
            tokio::time::sleep(d).await;
            forward(&shared, request).await
        }
        Fault::Status(code) => (
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"status":"error","errorType":"internal","error":"injected by the fault proxy"}"#,
        )
            .into_response(),
        Fault::Garbage => (
            [(header::CONTENT_TYPE, "text/html")],
            "<html><body><h1>Sign in</h1><form action=/login></form></body></html>",
        )
            .into_response(),
        Fault::Oversized(n) => {
            // The data object closed, then padding, then the outer brace.
            let head = br#"{"status":"success","data":{"resultType":"vector","result":[]}"#;
            let mut body = Vec::with_capacity(n.max(head.len() + 1));
            body.extend_from_slice(head);
            body.resize(n.max(head.len() + 1) - 1, b' ');
            body.push(b'}');
            (
                [(header::CONTENT_TYPE, "application/json")],
                Body::from(body),
            )
                .into_response()
        }
    }
}

async fn forward(shared: &Shared, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let relayed = async {
        let body: Bytes = axum::body::to_bytes(body, 64 << 20).await?;
        let path = parts.uri.path().to_owned();
        let query = parts.uri.query().unwrap_or("").to_owned();
        relay(
            &shared.http,
            &shared.upstream,
            parts,
            &path,
            &query,
            body.to_vec(),
        )
        .await
    };
    match relayed.await {
        Ok(r) => r,
        Err(e) => (StatusCode::BAD_GATEWAY, format!("fault proxy: {e:#}")).into_response(),
    }
}
