//! Admin endpoints every service exposes: liveness, readiness and its own telemetry.
//!
//! Liveness only says the process can still answer HTTP: restarting a pod because, say, the
//! API server is unreachable would not fix anything. Readiness is where dependencies show.

use std::{
    fmt::Write as _,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use axum::{
    Router,
    extract::{RawQuery, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

/// Named readiness gates: the service is ready once every gate registered is ready.
///
/// Gates are registered during wiring, before serving starts, so there is no window where no
/// gate exists yet and the service looks ready too early. A gate whose handle is dropped
/// without being marked ready keeps the service unready, which is what a crashed startup task
/// should look like.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    gates: Arc<Mutex<Vec<GateEntry>>>,
}

type GateEntry = (String, Arc<AtomicBool>);

/// Handle to one readiness gate.
#[derive(Debug, Clone)]
pub struct ReadyGate {
    name: String,
    flag: Arc<AtomicBool>,
}

impl ReadyGate {
    /// Marks the gate ready.
    pub fn ready(&self) {
        self.flag.store(true, Ordering::Release);
    }

    /// Sets the gate; `false` takes the service out of load balancing again (for example while
    /// a watch has lost the API server for too long).
    pub fn set(&self, ready: bool) {
        self.flag.store(ready, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a new gate, initially not ready.
    pub fn gate(&self, name: impl Into<String>) -> ReadyGate {
        let gate = ReadyGate {
            name: name.into(),
            flag: Arc::new(AtomicBool::new(false)),
        };
        self.lock().push((gate.name.clone(), gate.flag.clone()));
        gate
    }

    pub fn is_ready(&self) -> bool {
        self.lock().iter().all(|(_, f)| f.load(Ordering::Acquire))
    }

    /// Every gate with its state, in registration order.
    pub fn gates(&self) -> Vec<(String, bool)> {
        self.lock()
            .iter()
            .map(|(n, f)| (n.clone(), f.load(Ordering::Acquire)))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<GateEntry>> {
        // A panic while holding this lock cannot leave the Vec inconsistent, so recover.
        self.gates.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the admin router needs.
#[derive(Clone, Default)]
pub struct AdminState {
    pub readiness: Readiness,
    /// The service's self-telemetry; never the metrics it exports for others.
    pub registry: prometheus::Registry,
}

impl AdminState {
    pub fn new(readiness: Readiness, registry: prometheus::Registry) -> Self {
        Self {
            readiness,
            registry,
        }
    }
}

/// `/healthz`, `/livez`, `/readyz` (with `?verbose`) and `/metrics`.
pub fn admin_router(state: AdminState) -> Router {
    Router::new()
        .route("/healthz", get(alive))
        .route("/livez", get(alive))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn alive() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<AdminState>, RawQuery(query): RawQuery) -> Response {
    let gates = state.readiness.gates();
    let ready = gates.iter().all(|(_, ok)| *ok);
    let verbose = query.as_deref().is_some_and(|q| {
        q.split('&')
            .any(|kv| kv == "verbose" || kv.starts_with("verbose="))
    });
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut body = String::new();
    if verbose {
        // Same shape as kube-apiserver's verbose health output, which people already grep.
        for (name, ok) in &gates {
            if *ok {
                let _ = writeln!(body, "[+]{name} ok");
            } else {
                let _ = writeln!(body, "[-]{name} failed: not ready");
            }
        }
        let _ = writeln!(
            body,
            "readyz check {}",
            if ready { "passed" } else { "failed" }
        );
    } else if ready {
        body.push_str("ok");
    } else {
        let pending: Vec<&str> = gates
            .iter()
            .filter(|(_, ok)| !*ok)
            .map(|(n, _)| n.as_str())
            .collect();
        let _ = write!(body, "not ready: {}", pending.join(", "));
    }
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn metrics(State(state): State<AdminState>) -> Response {
    use prometheus::Encoder;
    let encoder = prometheus::TextEncoder::new();
    let mut buf = Vec::new();
    match encoder.encode(&state.registry.gather(), &mut buf) {
        Ok(()) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], buf).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding metrics: {e}"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::{Body, to_bytes};
    use http::Request;
    use tower::ServiceExt;

    async fn get(router: &Router, uri: &str) -> (StatusCode, String) {
        let resp = router
            .clone()
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let body = to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn liveness_is_unconditional() {
        let state = AdminState::default();
        let _gate = state.readiness.gate("informers");
        let router = admin_router(state);
        assert_eq!(
            get(&router, "/healthz").await,
            (StatusCode::OK, "ok".into())
        );
        assert_eq!(get(&router, "/livez").await, (StatusCode::OK, "ok".into()));
    }

    #[tokio::test]
    async fn readiness_follows_gates() {
        let state = AdminState::default();
        let informers = state.readiness.gate("informers");
        let config = state.readiness.gate("config");
        let router = admin_router(state.clone());

        let (status, body) = get(&router, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "not ready: informers, config");

        informers.ready();
        let (status, body) = get(&router, "/readyz?verbose").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            "[+]informers ok\n[-]config failed: not ready\nreadyz check failed\n"
        );

        config.ready();
        assert_eq!(get(&router, "/readyz").await, (StatusCode::OK, "ok".into()));
        let (status, body) = get(&router, "/readyz?verbose=1").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.ends_with("readyz check passed\n"), "{body}");

        config.set(false);
        assert!(!state.readiness.is_ready());
    }

    #[tokio::test]
    async fn no_gates_means_ready() {
        let router = admin_router(AdminState::default());
        assert_eq!(get(&router, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn metrics_are_encoded() {
        let registry = prometheus::Registry::new();
        let counter =
            prometheus::IntCounter::new("ferrocrane_test_total", "A test counter.").unwrap();
        registry.register(Box::new(counter.clone())).unwrap();
        counter.inc_by(3);
        let router = admin_router(AdminState::new(Readiness::new(), registry));
        let (status, body) = get(&router, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            body.contains("# TYPE ferrocrane_test_total counter"),
            "{body}"
        );
        assert!(body.contains("ferrocrane_test_total 3"), "{body}");
    }
}
