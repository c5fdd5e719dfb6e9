//! `craned recommend`: a one-shot report of Resource and Replicas recommendations for the
//! workloads running now, with nothing installed in the cluster.
//!
//! It lists the Deployments, StatefulSets and DaemonSets of a namespace (or all), reads their
//! pod templates' requests, fetches 7 days (the Resource recommender's history length) of CPU
//! and memory usage from Prometheus — the controller's two range queries per workload, grouped
//! by container and pod, over the same pods —, runs the same pure recommenders the controller
//! runs, and prints current vs recommended requests as a table, JSON, CSV, or a self-contained
//! HTML page that draws each container's usage with its percentile, recommendation and current
//! request.
//!
//! OOM kills recorded by a running craned (ConfigMap `oom-record`) are honoured when the
//! ConfigMap can be read; Crane's pod-availability filter of the Replicas recommender is not
//! applied (the report shows the number the usage asks for).

pub mod model;
pub mod query;
pub mod render;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use ferrocrane_core::kube::ClientArgs;
use ferrocrane_core::prometheus::{PrometheusClient, PrometheusConfig};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use crate::crd::recommenders;
use crate::datasource::{History, Retry, workload_window};
use crate::oom::{self, OomStore};
use crate::recommender::config::{Config, RecommendationConfiguration};
use crate::recommender::replicas::ReplicasConfig;
use crate::recommender::resource::{ResourceConfig, ResourceRecommender};
pub use model::{Engine, Report};
pub use render::{Format, render};

/// Workloads whose usage is fetched at once (each is two range queries).
const CONCURRENCY: usize = 4;

/// Flags of `craned recommend`.
#[derive(Debug, Clone, clap::Args)]
pub struct RecommendArgs {
    /// Prometheus to read usage history from.
    #[arg(long = "prometheus-address")]
    pub prometheus_address: String,
    /// Only this namespace (default: every namespace).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Crane's recommendation configuration file; the Resource and Replicas entries' config
    /// maps are used (default: Crane's defaults).
    #[arg(long = "recommendation-configuration-file")]
    pub recommendation_configuration_file: Option<PathBuf>,
    /// Where craned keeps its `oom-record` ConfigMap.
    #[arg(long = "oom-record-namespace", env = "CRANE_SYSTEM_NAMESPACE", default_value = oom::DEFAULT_NAMESPACE)]
    pub oom_record_namespace: String,
    #[command(flatten)]
    pub kube: ClientArgs,
}

/// The Resource and Replicas configs of the file, or Crane's defaults.
pub fn configs(file: Option<&std::path::Path>) -> anyhow::Result<(ResourceConfig, ReplicasConfig)> {
    let maps = match file {
        None => (Config::default(), Config::default()),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let file = RecommendationConfiguration::parse(&path.display().to_string(), &text)?;
            let get = |name: &str| {
                file.recommender(name)
                    .map(|r| Config::new(r.config.clone()))
                    .unwrap_or_default()
            };
            (get(recommenders::RESOURCE), get(recommenders::REPLICAS))
        }
    };
    Ok((
        ResourceConfig::from_config(&maps.0).context("Resource recommender")?,
        ReplicasConfig::from_config(&maps.1).context("Replicas recommender")?,
    ))
}

async fn oom_store(client: &kube::Client, namespace: &str) -> OomStore {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let text = match api.get_opt(oom::CONFIGMAP_NAME).await {
        Ok(Some(cm)) => cm
            .data
            .and_then(|mut d| d.remove(oom::CONFIGMAP_KEY))
            .unwrap_or_default(),
        Ok(None) => String::new(),
        Err(e) => {
            tracing::debug!(error = %e, "OOM records not readable; OOM protection off");
            String::new()
        }
    };
    match oom::decode(&text) {
        Ok((records, _)) => OomStore::new(records),
        Err(_) => OomStore::default(),
    }
}

/// Builds the report (the I/O part); [`render`] prints it.
pub async fn build(args: &RecommendArgs, now: i64) -> anyhow::Result<Report> {
    let (resource_cfg, replicas_cfg) = configs(args.recommendation_configuration_file.as_deref())?;
    let window = workload_window(&resource_cfg);
    let oom_window = resource_cfg.oom_history_length_secs;
    let mut engine = Engine::new(ResourceRecommender::new(resource_cfg)?, replicas_cfg);
    let client = ferrocrane_core::kube::build_client(&args.kube).await?;
    let prometheus = PrometheusClient::new(PrometheusConfig::new(&args.prometheus_address))
        .with_context(|| format!("--prometheus-address {}", args.prometheus_address))?;
    let history = History::new(prometheus, CONCURRENCY, Retry::default());
    let targets = query::list_targets(&client, args.namespace.as_deref())
        .await
        .context("listing workloads")?;
    let ooms = oom_store(&client, &args.oom_record_namespace).await;
    let end = UNIX_EPOCH + Duration::from_secs(now.max(0) as u64);
    let usages: Vec<_> = futures::stream::iter(targets.iter())
        .map(|f| query::fetch_usage(&history, f, end, window))
        .buffered(CONCURRENCY)
        .collect()
        .await;
    let mut workloads = Vec::with_capacity(targets.len());
    for (f, usage) in targets.iter().zip(usages) {
        let usage = usage
            .with_context(|| format!("querying usage of {} {}/{}", f.kind, f.namespace, f.name))?;
        let records = ooms.records_for_workload(&f.namespace, &f.kind, &f.name, now - oom_window);
        workloads.push(engine.workload(f, &usage, &records, now));
    }
    Ok(Report {
        generated_at: oom::format_time(now),
        now,
        history_seconds: window.0.as_secs() as i64,
        workloads,
    })
}

/// `craned recommend`: build and print.
pub async fn run(args: RecommendArgs) -> anyhow::Result<()> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let report = build(&args, now).await?;
    print!("{}", render(&report, args.format));
    Ok(())
}
