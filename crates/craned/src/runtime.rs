//! Wiring of the manager: configuration watcher, Prometheus, discovery, leader election,
//! the controller, and the two HTTP ports (`/metrics`; `/healthz`, `/readyz`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use axum::Router;
use ferrocrane_core::config::{ConfigWatcher, WatchOptions};
use ferrocrane_core::kube::{build_client, spawn_refresh};
use ferrocrane_core::prometheus::{MetricsOptions, PrometheusClient};
use ferrocrane_core::server::{AdminState, Readiness, admin_router, serve, shutdown_signal};

use crate::controller::leader::LeaderState;
use crate::controller::recommendation_rule::execute::OomSource;
use crate::controller::{
    self, effective_hpa, leader, recommendation_rule, substitute, time_series_prediction,
};
use crate::datasource::{History, Retry};
use crate::metrics::CraneMetrics;
use crate::metrics::reconcile::ReconcileFamilies;
use crate::oom::{self, OomStore};
use crate::options::Settings;
use crate::recommender::RecommendationConfiguration;

/// How often discovery is refreshed (new CRDs with a scale subresource become selectable).
const DISCOVERY_REFRESH: Duration = Duration::from_secs(300);

/// How often the `crane_analysis_recommendations_status` ages are recomputed.
const STATUS_REFRESH: Duration = Duration::from_secs(30);

/// This replica's identity in the Lease: hostname (the pod name in a cluster) and pid, so two
/// processes on one machine differ too.
pub fn hostname() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "craned".into());
    format!("{host}_{}", std::process::id())
}

async fn bind(addr: Option<SocketAddr>, what: &str) -> Result<Option<tokio::net::TcpListener>> {
    match addr {
        None => Ok(None),
        Some(a) => {
            Ok(Some(tokio::net::TcpListener::bind(a).await.with_context(
                || format!("binding the {what} address {a}"),
            )?))
        }
    }
}

/// Resolves when `rx` turns true.
async fn stopped(mut rx: tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Resolves when this replica stops leading (never, with leader election off).
async fn leadership_lost(mut leader: LeaderState) {
    loop {
        match leader.changed().await {
            Some(false) => return,
            Some(true) => {}
            None => std::future::pending::<()>().await,
        }
    }
}

/// Runs the OOM recorder while this replica leads (it writes the `oom-record` ConfigMap, and
/// only the leader writes), publishing its store in `slot`. Returns when `stop` turns true,
/// after the recorder's last write.
async fn run_oom_recorder(
    client: kube::Client,
    settings: Settings,
    leader: LeaderState,
    slot: Arc<std::sync::RwLock<Option<OomStore>>>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            () = leader.wait_leader() => {}
            () = stopped(stop.clone()) => return,
        }
        let until = {
            let (leader, stop) = (leader.clone(), stop.clone());
            async move {
                tokio::select! {
                    () = leadership_lost(leader) => {}
                    () = stopped(stop) => {}
                }
            }
        };
        let handle = oom::spawn(
            client.clone(),
            settings.namespace.clone(),
            settings.oom_record_max_number,
            until,
        );
        *slot.write().unwrap_or_else(|e| e.into_inner()) = Some(handle.store());
        handle.join().await;
        if *stop.borrow() {
            return;
        }
    }
}

/// The autoscaling half, for the kinds the API server serves (a cluster with only the
/// recommendation CRDs runs the rest of craned as before): the TimeSeriesPrediction
/// controller, and the EHPA and Substitute controllers.
/// What the autoscaling half starts from.
struct Autoscaling {
    client: kube::Client,
    history: History,
    leader: leader::LeaderState,
    families: Arc<ReconcileFamilies>,
    mapper: ferrocrane_core::kube::SharedMapper,
    settings: Settings,
    registry: prometheus::Registry,
}

async fn run_autoscaling(a: Autoscaling, stop: tokio::sync::watch::Receiver<bool>) {
    let Autoscaling {
        client,
        history,
        leader,
        families,
        mapper,
        settings,
        registry,
    } = a;
    use crate::crd::autoscaling::{EffectiveHorizontalPodAutoscaler, Substitute};
    use crate::crd::prediction::TimeSeriesPrediction;
    let mut tasks = Vec::new();
    let scores = std::sync::Arc::new(crate::prediction::accuracy::Scores::default());
    let tsps_served = ferrocrane_core::kube::served::<TimeSeriesPrediction>(&client).await;
    let ehpas_served =
        ferrocrane_core::kube::served::<EffectiveHorizontalPodAutoscaler>(&client).await;
    if tsps_served && ehpas_served {
        let collector = crate::metrics::autoscaling::AutoscalingCollector::new(
            ferrocrane_core::kube::reflected(&client),
            ferrocrane_core::kube::reflected(&client),
            ferrocrane_core::kube::reflected(&client),
            ferrocrane_autoscaling::cron::DefaultZone::system(),
            scores.clone(),
        );
        match collector {
            Ok(c) => {
                if let Err(error) = registry.register(Box::new(c)) {
                    tracing::warn!(%error, "the crane_autoscaling_* metrics are off");
                }
            }
            Err(error) => tracing::warn!(%error, "the crane_autoscaling_* metrics are off"),
        }
    }
    if tsps_served {
        let wiring = time_series_prediction::Wiring {
            client: client.clone(),
            history,
            leader: leader.clone(),
            metrics: families.controller(
                time_series_prediction::NAME,
                time_series_prediction::METRIC_LABELS,
            ),
            update_period: settings.prediction.update_period,
            fitting: time_series_prediction::Fitting {
                refresh: settings.prediction.model_refresh,
                retry: settings
                    .prediction
                    .update_period
                    .max(std::time::Duration::from_secs(60)),
                concurrency: settings.prediction.concurrency,
            },
            scores,
        };
        tasks.push(tokio::spawn(time_series_prediction::run(
            wiring,
            stopped(stop.clone()),
        )));
    } else {
        tracing::warn!(
            "TimeSeriesPredictions are not served (apply deploy/crds/): their controller is off"
        );
    }
    if ehpas_served && ferrocrane_core::kube::served::<Substitute>(&client).await {
        let wiring = effective_hpa::Wiring {
            client: client.clone(),
            leader: leader.clone(),
            metrics: families.controller(effective_hpa::NAME, effective_hpa::METRIC_LABELS),
            mapper: mapper.clone(),
            identity: settings.identity.clone(),
            zone: ferrocrane_autoscaling::cron::DefaultZone::system(),
        };
        tasks.push(tokio::spawn(effective_hpa::run(
            wiring,
            stopped(stop.clone()),
        )));
        let ctx = substitute::Context {
            client,
            leader,
            metrics: families.controller(substitute::NAME, substitute::METRIC_LABELS),
            mapper,
        };
        tasks.push(tokio::spawn(substitute::run(ctx, stopped(stop.clone()))));
    } else {
        tracing::warn!(
            "EffectiveHorizontalPodAutoscalers are not served (apply deploy/crds/): their controller is off"
        );
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Runs the manager until SIGTERM/SIGINT.
pub async fn run(settings: Settings) -> Result<()> {
    let registry = prometheus::Registry::new();
    registry
        .register(Box::new(ferrocrane_core::process::ProcessMetrics::new()?))
        .context("registering metrics")?;
    let metrics = Arc::new(CraneMetrics::new(registry.clone()).context("registering metrics")?);
    let reconcile_families =
        Arc::new(ReconcileFamilies::new(&registry).context("registering metrics")?);
    let config = ConfigWatcher::<RecommendationConfiguration>::start(
        &settings.configuration_file,
        WatchOptions {
            metrics: Some((registry.clone(), "craned".into())),
            ..WatchOptions::default()
        },
    )
    .context("--recommendation-configuration-file")?;
    let client = build_client(&settings.kube).await.context("--kubeconfig")?;
    let mut prom_config = settings.prometheus.clone();
    prom_config.metrics = Some(MetricsOptions {
        registry: registry.clone(),
        namespace: "craned".into(),
    });
    let prometheus = PrometheusClient::new(prom_config).context("--prometheus-address")?;
    let history = History::new(prometheus, settings.query_concurrency, Retry::default())
        .reading(settings.history_read);

    let readiness = Readiness::new();
    let discovery_gate = readiness.gate("discovery");
    let mapper = spawn_refresh(client.clone(), DISCOVERY_REFRESH);
    {
        let mapper = mapper.clone();
        tokio::spawn(async move {
            if mapper.ready().await.is_ok() {
                discovery_gate.ready();
            }
        });
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let leader = match settings.leader_election {
        Some(l) => leader::spawn(
            client.clone(),
            &settings.namespace,
            settings.identity.clone(),
            l,
            stopped(stop_rx.clone()),
        ),
        None => leader::LeaderState::always(),
    };
    {
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(STATUS_REFRESH);
            loop {
                tick.tick().await;
                metrics.refresh_status();
            }
        });
    }

    // OOM records, matched to workloads by owner references, for the Resource recommender.
    let oom_slot: Arc<std::sync::RwLock<Option<OomStore>>> = Arc::default();
    let oom_task = tokio::spawn(run_oom_recorder(
        client.clone(),
        settings.clone(),
        leader.clone(),
        oom_slot.clone(),
        stop_rx.clone(),
    ));
    let oom: OomSource = Arc::new(move |t| {
        oom_slot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            // The recommender applies oom-history-length itself.
            .map(|s| s.records_for_workload(&t.namespace, &t.kind, &t.name, i64::MIN))
            .unwrap_or_default()
    });

    let app: Router = admin_router(AdminState::new(readiness, registry.clone()));
    let mut servers = Vec::new();
    let metrics_listener = bind(settings.metrics_addr, "--metrics-bind-address").await?;
    let health_listener = bind(settings.health_addr, "--health-probe-bind-address").await?;
    for l in [metrics_listener, health_listener].into_iter().flatten() {
        servers.push(tokio::spawn(serve(
            l,
            None,
            app.clone(),
            stopped(stop_rx.clone()),
        )));
    }
    tracing::info!(
        metrics = ?settings.metrics_addr,
        health = ?settings.health_addr,
        leader_election = settings.leader_election.is_some(),
        "craned started"
    );
    let status_writes = controller::StatusWrites::detect(&client).await;

    let autoscaling = tokio::spawn(run_autoscaling(
        Autoscaling {
            client: client.clone(),
            history: history.clone(),
            leader: leader.clone(),
            families: reconcile_families.clone(),
            mapper: mapper.clone(),
            settings: settings.clone(),
            registry: registry.clone(),
        },
        stop_rx.clone(),
    ));
    recommendation_rule::run(
        recommendation_rule::Wiring {
            client,
            config: config.subscribe(),
            history,
            metrics,
            reconcile_metrics: reconcile_families.controller(
                recommendation_rule::NAME,
                recommendation_rule::METRIC_LABELS,
            ),
            mapper,
            namespace: settings.namespace.clone(),
            identity: settings.identity.clone(),
            auto_adoption: settings.auto_adoption,
            leader,
            oom,
            concurrency: settings.query_concurrency,
            status_writes,
            skip_unchanged_writes: settings.skip_unchanged_writes,
        },
        stopped(stop_rx.clone()),
    )
    .await;
    tracing::info!("shutting down");
    let _ = autoscaling.await;
    let _ = oom_task.await;
    for s in servers {
        s.await.context("server task")?.context("server")?;
    }
    drop(config);
    Ok(())
}
