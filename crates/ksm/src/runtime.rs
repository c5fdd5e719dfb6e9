//! Wiring: an [`Engine`] (a watcher per enabled resource, plus the custom-resource runtime)
//! feeds stores that the metrics port serves; self-metrics go to the telemetry port; ready
//! once every watcher has listed; drain on SIGTERM.
//!
//! What the engine exports is an [`EngineSpec`]. A new spec (a `--config` or custom
//! resource config reload, an auto-sharding replica change) starts a new engine next to the
//! running one; scrapes keep getting the old stores until the new watchers have listed, then
//! the stores are swapped and the old watchers stopped. A scrape never sees a half-built
//! engine.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{Context, Result};
use ferrocrane_core::kube::{SharedMapper, spawn_refresh};
use ferrocrane_core::server::{AdminState, Readiness, admin_router, serve_with, shutdown_signal};
use kube::Client;
use rustls::ServerConfig;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::custom_resource::{
    CustomResourceOptions, CustomResourceRuntime, CustomResourceStateConfig, run_custom_resources,
};
use crate::families::FamilyContext;
use crate::http::{MetricsState, router};
use crate::registry::{FamilyPredicate, ResourcePlan, start};
use crate::server_sharding::{UidRange, sharded_client};
use crate::sharding::Sharding;
use crate::store::{Serving, SharedServing};
use crate::telemetry::Telemetry;
use crate::watch::{ListSettings, NamespacePlan, ObjectOwnership, WatchSettings};

/// How often discovery is refreshed to notice CRDs created or deleted after start.
const DISCOVERY_INTERVAL: Duration = Duration::from_secs(5);

/// How long a reload waits for the new watchers' first lists before swapping anyway (a
/// resource the API server keeps failing must not block a config change forever).
const SWAP_TIMEOUT: Duration = Duration::from_secs(120);

/// What the watchers export; everything a config reload or re-sharding can change.
#[derive(Clone)]
pub struct EngineSpec {
    pub resources: Vec<String>,
    pub namespaces: Vec<String>,
    /// For namespaced resources watched cluster-wide (the namespace denylist).
    pub namespace_field_selector: Option<String>,
    /// `--node` / `--track-unscheduled-pods`: the extra selector of the pods watch.
    pub pod_field_selector: Option<String>,
    pub family_enabled: FamilyPredicate,
    pub context_for: Arc<dyn Fn(&str) -> FamilyContext + Send + Sync>,
    pub sharding: Sharding,
    /// `--server-side-sharding`: the API server sends only this shard's objects.
    pub server_side_sharding: bool,
    pub list: ListSettings,
    /// Custom resource state configuration; `None` for none.
    pub custom_resources: Option<Arc<CustomResourceStateConfig>>,
    pub gzip: bool,
}

/// Running watchers for one [`EngineSpec`]; dropping it stops them.
pub struct Engine {
    serving: Arc<Serving>,
    tasks: Vec<JoinHandle<()>>,
    _custom: Option<CustomResourceRuntime>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Lazily started discovery, shared by every engine of the process.
#[derive(Clone)]
pub struct Discovery {
    client: Client,
    mapper: Arc<std::sync::OnceLock<SharedMapper>>,
}

impl Discovery {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            mapper: Arc::default(),
        }
    }

    fn mapper(&self) -> SharedMapper {
        self.mapper
            .get_or_init(|| spawn_refresh(self.client.clone(), DISCOVERY_INTERVAL))
            .clone()
    }
}

impl Engine {
    /// Starts every watcher of `spec`. The receiver turns `true` once each built-in watcher
    /// has completed its first list (custom resources do not hold it: their CRDs may never
    /// exist).
    pub fn start(
        spec: &EngineSpec,
        client: &Client,
        discovery: &Discovery,
        telemetry: &Telemetry,
    ) -> Result<(Engine, watch::Receiver<bool>)> {
        let (synced_tx, synced_rx) = watch::channel(false);
        let synced_tx = Arc::new(synced_tx);
        let pending = Arc::new(AtomicUsize::new(0));
        // Server-side, the watchers' requests carry the shard's range and ownership uses the
        // same range; client-side, every object arrives and the jump hash picks ours.
        let (watch_client, ownership): (Client, Arc<dyn ObjectOwnership>) =
            if spec.server_side_sharding && spec.sharding.is_sharded() {
                let range = UidRange::of(spec.sharding);
                (sharded_client(client, range), Arc::new(range))
            } else {
                (client.clone(), Arc::new(spec.sharding))
            };
        let watch = WatchSettings {
            client: watch_client,
            namespaces: NamespacePlan {
                namespaces: spec.namespaces.clone(),
                denylist_selector: spec.namespace_field_selector.clone(),
            },
            ownership,
            telemetry: telemetry.clone(),
            list: spec.list,
        };
        let mut stores = Vec::new();
        let mut tasks = Vec::new();
        for resource in &spec.resources {
            let pending_for_cb = pending.clone();
            let synced = synced_tx.clone();
            let plan = ResourcePlan {
                watch: watch.clone(),
                field_selector: (resource == "pods")
                    .then(|| spec.pod_field_selector.clone())
                    .flatten(),
                ctx: (spec.context_for)(resource),
                family_enabled: spec.family_enabled.clone(),
                on_synced: Arc::new(move || {
                    if pending_for_cb.fetch_sub(1, Ordering::SeqCst) == 1 {
                        synced.send_replace(true);
                    }
                }),
            };
            let started = start(resource, &plan)
                .with_context(|| format!("resource {resource:?} is not supported"))?;
            pending.fetch_add(started.tasks.len(), Ordering::SeqCst);
            stores.push(started.store);
            tasks.extend(started.tasks);
        }
        if pending.load(Ordering::SeqCst) == 0 {
            synced_tx.send_replace(true);
        }
        let custom = spec.custom_resources.as_ref().map(|config| {
            run_custom_resources(
                (**config).clone(),
                discovery.mapper(),
                watch.clone(),
                CustomResourceOptions {
                    family_enabled: Some(spec.family_enabled.clone()),
                },
            )
        });
        let serving = Arc::new(Serving {
            stores,
            custom: custom.as_ref().map(|c| c.stores().clone()),
            gzip: spec.gzip,
        });
        tracing::info!(
            resources = ?spec.resources,
            custom_resources = spec.custom_resources.as_ref().map_or(0, |c| c.spec.resources.len()),
            shard = spec.sharding.shard,
            total_shards = spec.sharding.total,
            "watching"
        );
        Ok((
            Engine {
                serving,
                tasks,
                _custom: custom,
            },
            synced_rx,
        ))
    }
}

/// The listeners; fixed for the life of the process.
pub struct ServerSettings {
    pub metrics_addr: SocketAddr,
    pub telemetry_addr: SocketAddr,
    /// `--tls-config`, for both listeners.
    pub tls: Option<Arc<ServerConfig>>,
    /// The web config's `basic_auth_users`, for both listeners.
    pub basic_auth: Option<Arc<crate::basic_auth::BasicAuth>>,
    /// `--auth-filter`: TokenReview + SubjectAccessReview on `/metrics` of both listeners.
    pub auth_filter: Option<Arc<crate::auth_filter::AuthFilter>>,
    /// `--server-*-timeout`, for both listeners.
    pub serve: ferrocrane_core::server::ServeOptions,
}

/// Serves until SIGTERM/SIGINT, following `specs`: the current value is started at once,
/// each later value replaces the running engine as described in the module docs.
pub async fn run(
    server: ServerSettings,
    client: Client,
    telemetry: Telemetry,
    mut specs: watch::Receiver<Arc<EngineSpec>>,
) -> Result<()> {
    let readiness = Readiness::new();
    let synced_gate = readiness.gate("informers-synced");
    let discovery = Discovery::new(client.clone());

    let spec = specs.borrow_and_update().clone();
    telemetry.set_sharding(spec.sharding.shard, spec.sharding.total);
    let (engine, mut synced) = Engine::start(&spec, &client, &discovery, &telemetry)?;
    let serving: SharedServing = Arc::new(RwLock::new(engine.serving.clone()));
    tokio::spawn(async move {
        if synced.wait_for(|s| *s).await.is_ok() {
            synced_gate.ready();
        }
    });
    let supervisor = tokio::spawn(follow_specs(
        engine,
        specs,
        client.clone(),
        discovery,
        telemetry.clone(),
        serving.clone(),
    ));

    let metrics_app = router(MetricsState {
        serving,
        telemetry: telemetry.clone(),
    });
    let telemetry_app = admin_router(AdminState::new(readiness, telemetry.registry.clone()));
    let (metrics_app, telemetry_app) = match &server.basic_auth {
        Some(auth) => {
            let layer =
                || axum::middleware::from_fn_with_state(auth.clone(), crate::basic_auth::require);
            (metrics_app.layer(layer()), telemetry_app.layer(layer()))
        }
        None => (metrics_app, telemetry_app),
    };
    // Added last, so it runs first: basic auth (when also configured) comes after it.
    let (metrics_app, telemetry_app) = match &server.auth_filter {
        Some(filter) => {
            let layer = || {
                axum::middleware::from_fn_with_state(filter.clone(), crate::auth_filter::require)
            };
            (metrics_app.layer(layer()), telemetry_app.layer(layer()))
        }
        None => (metrics_app, telemetry_app),
    };
    let metrics_listener = tokio::net::TcpListener::bind(server.metrics_addr)
        .await
        .with_context(|| format!("binding the metrics port {}", server.metrics_addr))?;
    let telemetry_listener = tokio::net::TcpListener::bind(server.telemetry_addr)
        .await
        .with_context(|| format!("binding the telemetry port {}", server.telemetry_addr))?;
    tracing::info!(
        metrics = %server.metrics_addr,
        telemetry = %server.telemetry_addr,
        tls = server.tls.is_some(),
        "serving"
    );

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let metrics = tokio::spawn(serve_with(
        metrics_listener,
        server.tls.clone(),
        metrics_app,
        stopped(stop_rx.clone()),
        server.serve,
    ));
    let telemetry_server = tokio::spawn(serve_with(
        telemetry_listener,
        server.tls,
        telemetry_app,
        stopped(stop_rx),
        server.serve,
    ));
    shutdown_signal().await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    supervisor.abort();
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

/// Replaces the engine on every new spec; owns the running engine.
async fn follow_specs(
    mut engine: Engine,
    mut specs: watch::Receiver<Arc<EngineSpec>>,
    client: Client,
    discovery: Discovery,
    telemetry: Telemetry,
    serving: SharedServing,
) {
    while specs.changed().await.is_ok() {
        let spec = specs.borrow_and_update().clone();
        let (next, mut synced) = match Engine::start(&spec, &client, &discovery, &telemetry) {
            Ok(started) => started,
            Err(e) => {
                // Options were validated, so this is a bug; keep serving what we have.
                tracing::error!(error = %e, "cannot apply the new configuration; keeping the running one");
                continue;
            }
        };
        if tokio::time::timeout(SWAP_TIMEOUT, synced.wait_for(|s| *s))
            .await
            .is_err()
        {
            tracing::warn!(
                timeout = ?SWAP_TIMEOUT,
                "new watchers have not all listed yet; switching to them anyway"
            );
        }
        *serving.write().unwrap_or_else(|e| e.into_inner()) = next.serving.clone();
        telemetry.set_sharding(spec.sharding.shard, spec.sharding.total);
        let dropped = engine.serving.resources_not_in(&next.serving);
        // Dropping the old engine stops its watchers; then their object gauges can go.
        engine = next;
        let labels: Vec<String> = dropped
            .iter()
            .map(|name| match crate::registry::resource_kind(name) {
                Some(kind) => kind.telemetry_label(),
                None => (*name).to_string(),
            })
            .collect();
        telemetry.forget_resources(labels.iter().map(String::as_str));
        tracing::info!("configuration applied");
    }
    // The spec source ended (shutdown); keep the engine until the process stops.
    let _engine = engine;
    std::future::pending::<()>().await;
}
