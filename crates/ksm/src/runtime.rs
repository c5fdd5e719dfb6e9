//! Wiring: start a watcher per enabled resource, serve the stores on the metrics port and
//! self-metrics on the telemetry port, turn ready once every watcher has listed, drain on
//! SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
use ferrocrane_core::server::{AdminState, Readiness, admin_router, serve, shutdown_signal};
use kube::Client;

use crate::families::FamilyContext;
use crate::http::{MetricsState, router};
use crate::registry::{FamilyPredicate, ResourcePlan, start};
use crate::telemetry::Telemetry;
use crate::watch::ObjectOwnership;

/// Everything the runtime needs, already validated (see `options`).
pub struct Settings {
    pub resources: Vec<String>,
    pub namespaces: Vec<String>,
    pub namespace_field_selector: Option<String>,
    /// `--node`: export only pods scheduled to this node.
    pub pod_field_selector: Option<String>,
    pub family_enabled: FamilyPredicate,
    pub context_for: Arc<dyn Fn(&str) -> FamilyContext + Send + Sync>,
    pub ownership: Arc<dyn ObjectOwnership>,
    pub shard: (i32, i32),
    pub metrics_addr: SocketAddr,
    pub telemetry_addr: SocketAddr,
    pub gzip: bool,
}

pub async fn run(settings: Settings, client: Client) -> Result<()> {
    let telemetry = Telemetry::new().context("registering self-metrics")?;
    telemetry.set_sharding(settings.shard.0, settings.shard.1);
    let readiness = Readiness::new();
    let synced_gate = readiness.gate("informers-synced");

    let pending = Arc::new(AtomicUsize::new(0));
    let mut stores = Vec::new();
    for resource in &settings.resources {
        let gate = synced_gate.clone();
        let pending_for_cb = pending.clone();
        let plan = ResourcePlan {
            client: client.clone(),
            namespaces: settings.namespaces.clone(),
            namespace_field_selector: settings.namespace_field_selector.clone(),
            field_selector: (resource == "pods")
                .then(|| settings.pod_field_selector.clone())
                .flatten(),
            ctx: (settings.context_for)(resource),
            family_enabled: settings.family_enabled.clone(),
            ownership: settings.ownership.clone(),
            telemetry: telemetry.clone(),
            on_synced: Arc::new(move || {
                if pending_for_cb.fetch_sub(1, Ordering::SeqCst) == 1 {
                    gate.ready();
                }
            }),
        };
        let started = start(resource, &plan)
            .with_context(|| format!("resource {resource:?} is not supported"))?;
        pending.fetch_add(started.watchers, Ordering::SeqCst);
        stores.push(started.store);
    }
    if pending.load(Ordering::SeqCst) == 0 {
        synced_gate.ready();
    }
    tracing::info!(resources = ?settings.resources, "watching");

    let metrics_app = router(MetricsState {
        stores: Arc::new(stores),
        gzip: settings.gzip,
        telemetry: telemetry.clone(),
    });
    let telemetry_app = admin_router(AdminState::new(readiness, telemetry.registry.clone()));
    let metrics_listener = tokio::net::TcpListener::bind(settings.metrics_addr)
        .await
        .with_context(|| format!("binding the metrics port {}", settings.metrics_addr))?;
    let telemetry_listener = tokio::net::TcpListener::bind(settings.telemetry_addr)
        .await
        .with_context(|| format!("binding the telemetry port {}", settings.telemetry_addr))?;
    tracing::info!(metrics = %settings.metrics_addr, telemetry = %settings.telemetry_addr, "serving");

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let metrics = tokio::spawn(serve(
        metrics_listener,
        None,
        metrics_app,
        stopped(stop_rx.clone()),
    ));
    let telemetry_server = tokio::spawn(serve(
        telemetry_listener,
        None,
        telemetry_app,
        stopped(stop_rx),
    ));
    shutdown_signal().await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    metrics
        .await
        .context("metrics server task")?
        .context("metrics server")?;
    telemetry_server
        .await
        .context("telemetry server task")?
        .context("telemetry server")?;
    Ok(())
}
