//! The relist loop: every `--metrics-relist-interval`, list the series of each distinct
//! seriesQuery (custom and external rules together) over the last `--metrics-max-age`, and
//! update the registries the API answers from.
//!
//! Series are fetched without holding the registry lock; only the (CPU-only) update takes the
//! write lock. A failing query fails only its rules, which keep their last good metrics. A new
//! config (hot reload) is relisted into fresh registries that replace the old ones only once
//! filled, so a reload never empties discovery for the length of a relist.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use ferrocrane_core::kube::SharedMapper;
use ferrocrane_core::prometheus::PrometheusClient;
use ferrocrane_core::server::ReadyGate;
use prometheus::{Gauge, GaugeVec, Histogram, HistogramOpts, IntGaugeVec, Opts, Registry};
use tokio::sync::watch;

use crate::loader::CompiledConfig;
use crate::naming::{Namer, Series};
use crate::registry::{CustomRegistry, ExternalRegistry, UpdateReport, relist_plan};

/// What the custom and external APIs answer from.
#[derive(Debug)]
pub struct Registries {
    pub custom: CustomRegistry,
    pub external: ExternalRegistry,
}

impl Registries {
    /// Empty registries for a compiled config.
    pub fn new(config: &CompiledConfig) -> Self {
        Registries {
            custom: CustomRegistry::new(config.rules.clone()),
            external: ExternalRegistry::new(config.external_rules.clone()),
        }
    }
}

/// Registries shared between the relist loop (writer) and the handlers (readers).
pub type SharedRegistries = Arc<RwLock<Registries>>;

/// The compiled `resourceRules` in effect, swapped on reload (read by the metrics.k8s.io API).
pub use crate::resource_metrics::SharedQueries as SharedResourceQueries;

/// Self-metrics of the relist.
#[derive(Clone)]
pub struct RelistMetrics {
    duration: Histogram,
    last_success: Gauge,
    failed_queries: IntGaugeVec,
    metrics: IntGaugeVec,
    duplicates: IntGaugeVec,
    unresolved: IntGaugeVec,
    _info: GaugeVec,
}

impl RelistMetrics {
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let duration = Histogram::with_opts(
            HistogramOpts::new(
                "metrics_adapter_relist_duration_seconds",
                "Time taken by one relist of every distinct seriesQuery.",
            )
            .buckets(vec![
                0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
            ]),
        )?;
        let last_success = Gauge::new(
            "metrics_adapter_relist_last_success_timestamp_seconds",
            "Unix time of the last relist in which at least one series query succeeded.",
        )?;
        let failed_queries = IntGaugeVec::new(
            Opts::new(
                "metrics_adapter_relist_failed_rules",
                "Rules whose series query failed in the last relist (they keep their previous metrics).",
            ),
            &["api"],
        )?;
        let metrics = IntGaugeVec::new(
            Opts::new(
                "metrics_adapter_discovered_metrics",
                "Metrics served after the last relist.",
            ),
            &["api"],
        )?;
        let duplicates = IntGaugeVec::new(
            Opts::new(
                "metrics_adapter_duplicate_metrics",
                "Metrics produced by more than one rule or series in the last relist (the later rule wins, as upstream).",
            ),
            &["api"],
        )?;
        let unresolved = IntGaugeVec::new(
            Opts::new(
                "metrics_adapter_unresolved_resource_overrides",
                "Resource overrides naming a resource the API server does not serve (their labels are skipped).",
            ),
            &["api"],
        )?;
        let info = GaugeVec::new(
            Opts::new("metrics_adapter_build_info", "Always 1; the version built."),
            &["version"],
        )?;
        info.with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1.0);
        for c in [
            Box::new(duration.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(last_success.clone()),
            Box::new(failed_queries.clone()),
            Box::new(metrics.clone()),
            Box::new(duplicates.clone()),
            Box::new(unresolved.clone()),
            Box::new(info.clone()),
        ] {
            registry.register(c)?;
        }
        Ok(RelistMetrics {
            duration,
            last_success,
            failed_queries,
            metrics,
            duplicates,
            unresolved,
            _info: info,
        })
    }
}

/// What one relist did.
#[derive(Debug, Clone)]
pub struct RelistOutcome {
    /// Distinct series queries sent.
    pub queries: usize,
    /// Of which failed.
    pub failed_queries: usize,
    pub custom: UpdateReport<crate::registry::CustomMetricInfo>,
    pub external: UpdateReport<crate::registry::ExternalMetricInfo>,
    pub elapsed: Duration,
}

impl RelistOutcome {
    /// At least one query answered, or there was nothing to ask: the registries reflect
    /// Prometheus. This is what readiness waits for.
    pub fn usable(&self) -> bool {
        self.queries == 0 || self.failed_queries < self.queries
    }
}

/// One query's series as discovery sees them: each distinct name and label-name set once.
#[derive(Debug, Clone, Default)]
pub struct ListedSeries {
    pub distinct: Vec<Series>,
    /// How many series Prometheus listed (before reduction), for logs and check-config.
    pub listed: usize,
}

/// Series queries of one relist in flight at once. Answers are decoded as they arrive (a few
/// chunks each), so memory hardly grows with this; two keep the relist well ahead of
/// Prometheus without making it answer every query at once.
const RELIST_CONCURRENCY: usize = 2;

/// Lists the series of every distinct query, [`RELIST_CONCURRENCY`] at a time. Results are in
/// `queries` order. Label values are dropped as the answer is decoded: discovery only looks at
/// names, and 100,000 label sets held at once were most of the adapter's peak memory.
pub async fn fetch_series(
    prometheus: &PrometheusClient,
    queries: &[String],
    start: Option<SystemTime>,
) -> Vec<Result<Arc<ListedSeries>, String>> {
    let permits = &tokio::sync::Semaphore::new(RELIST_CONCURRENCY);
    futures::future::join_all(queries.iter().map(|q| async move {
        // The semaphore lives for this call and is never closed.
        let _permit = permits.acquire().await.ok();
        prometheus
            .series_shapes(std::slice::from_ref(q), start, None)
            .await
            .map(|shapes| {
                Arc::new(ListedSeries {
                    distinct: shapes.shapes.into_iter().map(Series::from).collect(),
                    listed: shapes.series,
                })
            })
            .map_err(|e| format!("unable to fetch metrics for query {q:?}: {e}"))
    }))
    .await
}

/// Hands each namer its query's result.
fn per_rule(
    plan: &[usize],
    results: &[Result<Arc<ListedSeries>, String>],
) -> Vec<Result<Arc<ListedSeries>, String>> {
    plan.iter().map(|&i| results[i].clone()).collect()
}

struct SeriesSlice(Arc<ListedSeries>);

impl AsRef<[Series]> for SeriesSlice {
    fn as_ref(&self) -> &[Series] {
        &self.0.distinct
    }
}

/// One relist into `registries`.
pub async fn relist_once(
    prometheus: &PrometheusClient,
    mapper: &SharedMapper,
    registries: &RwLock<Registries>,
    max_age: Duration,
) -> Result<RelistOutcome, crate::registry::RegistryError> {
    let started = Instant::now();
    let (custom_namers, external_namers): (Vec<Namer>, Vec<Namer>) = {
        let r = registries.read().unwrap_or_else(|e| e.into_inner());
        (r.custom.namers().to_vec(), r.external.namers().to_vec())
    };
    let n_custom = custom_namers.len();
    let mut all = custom_namers;
    all.extend(external_namers);
    let (queries, plan) = relist_plan(&all);
    let start = SystemTime::now().checked_sub(max_age);
    let results = fetch_series(prometheus, &queries, start).await;
    let failed_queries = results.iter().filter(|r| r.is_err()).count();
    let rule_results = per_rule(&plan, &results);
    let (custom_results, external_results) = rule_results.split_at(n_custom);
    let mapper = mapper.current();
    let wrap = |rs: &[Result<Arc<ListedSeries>, String>]| -> Vec<Result<SeriesSlice, String>> {
        rs.iter()
            .map(|r| r.clone().map(SeriesSlice))
            .collect::<Vec<_>>()
    };
    let mut r = registries.write().unwrap_or_else(|e| e.into_inner());
    let custom = r.custom.update(&mapper, wrap(custom_results))?;
    let external = r.external.update(wrap(external_results))?;
    Ok(RelistOutcome {
        queries: queries.len(),
        failed_queries,
        custom,
        external,
        elapsed: started.elapsed(),
    })
}

/// Logs and records an outcome.
pub fn report(outcome: &RelistOutcome, metrics: Option<&RelistMetrics>) {
    for f in outcome.custom.failed.iter() {
        tracing::warn!(rule = format!("rules[{}]", f.rule), series_query = %f.series_query, kept_previous = f.kept_previous, error = %f.error, "series query failed");
    }
    for f in outcome.external.failed.iter() {
        tracing::warn!(rule = format!("externalRules[{}]", f.rule), series_query = %f.series_query, kept_previous = f.kept_previous, error = %f.error, "series query failed");
    }
    for d in &outcome.custom.duplicates {
        let sources: Vec<String> = d
            .sources
            .iter()
            .map(|(r, s)| format!("rules[{r}] series {s}"))
            .collect();
        tracing::warn!(metric = %d.metric, sources = %sources.join(", "), "metric produced by more than one source; the last one wins");
    }
    for d in &outcome.external.duplicates {
        let sources: Vec<String> = d
            .sources
            .iter()
            .map(|(r, s)| format!("externalRules[{r}] series {s}"))
            .collect();
        tracing::warn!(metric = %d.metric.metric, sources = %sources.join(", "), "external metric produced by more than one source; the last one wins");
    }
    for u in &outcome.custom.unresolved_overrides {
        tracing::debug!(rule = format!("rules[{}]", u.rule), label = %u.label, resource = %u.resource, "resource override names a resource the API server does not serve");
    }
    tracing::info!(
        queries = outcome.queries,
        failed = outcome.failed_queries,
        custom_metrics = outcome.custom.metrics,
        external_metrics = outcome.external.metrics,
        elapsed_ms = u64::try_from(outcome.elapsed.as_millis()).unwrap_or(u64::MAX),
        "relisted metrics"
    );
    if let Some(m) = metrics {
        m.duration.observe(outcome.elapsed.as_secs_f64());
        if outcome.usable() {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            m.last_success.set(now);
        }
        let set = |v: &IntGaugeVec, api: &str, n: usize| v.with_label_values(&[api]).set(n as i64);
        set(&m.failed_queries, "custom", outcome.custom.failed.len());
        set(&m.failed_queries, "external", outcome.external.failed.len());
        set(&m.metrics, "custom", outcome.custom.metrics);
        set(&m.metrics, "external", outcome.external.metrics);
        set(&m.duplicates, "custom", outcome.custom.duplicates.len());
        set(&m.duplicates, "external", outcome.external.duplicates.len());
        set(
            &m.unresolved,
            "custom",
            outcome.custom.unresolved_overrides.len(),
        );
    }
}

/// Everything the loop needs.
pub struct RelistLoop {
    pub prometheus: PrometheusClient,
    pub mapper: SharedMapper,
    pub registries: SharedRegistries,
    pub resource_queries: SharedResourceQueries,
    pub interval: Duration,
    pub max_age: Duration,
    pub gate: ReadyGate,
    pub metrics: Option<RelistMetrics>,
}

impl RelistLoop {
    /// Relists now and every interval; on a new config, relists it into fresh registries and
    /// swaps them in. Runs until `configs` closes.
    pub async fn run(self, mut configs: watch::Receiver<Arc<CompiledConfig>>) {
        // Wait (bounded) for the first discovery so override labels resolve on the first relist;
        // the built-in core resources work without it.
        let _ = tokio::time::timeout(Duration::from_secs(30), self.mapper.ready()).await;
        let mut ticker = tokio::time::interval(self.interval.max(Duration::from_secs(1)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    self.relist_current().await;
                }
                changed = configs.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let config = configs.borrow_and_update().clone();
                    self.apply(&config).await;
                    ticker.reset();
                }
            }
        }
    }

    async fn relist_current(&self) {
        match relist_once(
            &self.prometheus,
            &self.mapper,
            &self.registries,
            self.max_age,
        )
        .await
        {
            Ok(outcome) => {
                report(&outcome, self.metrics.as_ref());
                if outcome.usable() {
                    self.gate.ready();
                }
            }
            Err(e) => tracing::error!(error = %e, "relist failed"),
        }
    }

    /// A reloaded config: new namers, relisted before they replace the old ones.
    pub async fn apply(&self, config: &CompiledConfig) {
        let fresh = RwLock::new(Registries::new(config));
        match relist_once(&self.prometheus, &self.mapper, &fresh, self.max_age).await {
            Ok(outcome) => report(&outcome, self.metrics.as_ref()),
            Err(e) => tracing::error!(error = %e, "relist of the reloaded config failed"),
        }
        let fresh = fresh.into_inner().unwrap_or_else(|e| e.into_inner());
        *self.registries.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        self.resource_queries.set(config.resource_rules.clone());
        tracing::info!(
            rules = config.rules.len(),
            external_rules = config.external_rules.len(),
            resource_rules = config.resource_rules.is_some(),
            "applied reloaded config"
        );
    }
}
