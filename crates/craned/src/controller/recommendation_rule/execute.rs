//! Running one recommender on one target: gather what it needs (the workload's pod template,
//! pods, history), call the pure recommender, and return its proposal. The workload
//! recommenders (Resource, Replicas, HPA) are in `workload.rs`, those that find objects
//! serving nothing (IdleNode, Service, Volume) in `idle.rs`.

mod idle;
mod workload;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kube::Client;
use serde_json::Value;
use tokio::sync::OnceCell;

pub use self::workload::available_pods;
use super::status::RunError;
use super::targets::Target;
use crate::crd::recommenders;
use crate::datasource::{History, WorkloadHistory, workload_window};
use crate::prediction::Sample;
use crate::recommender::resource::{OomRecord, ResourceConfig};
use crate::recommender::{Config, Proposal};

/// OOM kills of a target's containers (from the OOM recorder, matched by owner references).
pub type OomSource = Arc<dyn Fn(&Target) -> Vec<OomRecord> + Send + Sync>;

/// The IdleNode and Service recommenders read 7 days at 1 minute, whatever the Resource
/// recommender's window (Crane hard-codes it for both).
const FIXED_HISTORY: Duration = Duration::from_secs(7 * 24 * 3600);
const FIXED_STEP: Duration = Duration::from_secs(60);

/// Everything a round shares between the recommenders of one target.
pub struct TargetRun<'a> {
    pub client: &'a Client,
    pub history: &'a History,
    pub target: &'a Target,
    pub oom: &'a OomSource,
    pub now: SystemTime,
    /// Fetched at most once per target per round.
    pub cache: OnceCell<Arc<WorkloadHistory>>,
    /// The CPU forecast Replicas and HPA share, computed at most once per target per round.
    pub forecast: OnceCell<Arc<Vec<Sample>>>,
    /// History length and step for the workload queries.
    pub history_length: Duration,
    pub step: Duration,
}

/// The result of a run: the proposal plus what the metrics show.
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub proposal: Proposal,
    /// (container, cores, bytes) for `crane_analysis_resource_recommendation`.
    pub resources: Vec<(String, f64, f64)>,
    pub replicas: Option<i32>,
}

impl TargetRun<'_> {
    fn now_secs(&self) -> i64 {
        self.now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }

    fn jiff_now(&self) -> k8s_openapi::jiff::Timestamp {
        k8s_openapi::jiff::Timestamp::from_second(self.now_secs())
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    async fn workload_history(&self) -> Result<Arc<WorkloadHistory>, RunError> {
        self.cache
            .get_or_try_init(|| async {
                self.history
                    .workload(
                        &self.target.usage_queries(),
                        self.now,
                        self.history_length,
                        self.step,
                    )
                    .await
                    .map(Arc::new)
                    .map_err(|e| RunError::DataSource(e.to_string()))
            })
            .await
            .cloned()
    }

    /// One series over Crane's fixed window for nodes and Services: 7 days at 1 minute.
    async fn fixed_window_series(&self, promql: &str) -> Result<Vec<Sample>, RunError> {
        self.history
            .series(promql, self.now, FIXED_HISTORY, FIXED_STEP)
            .await
            .map_err(|e| RunError::DataSource(e.to_string()))
    }

    fn data(&self) -> &Value {
        &self.target.object.data
    }

    pub async fn run(&self, recommender: &str, config: &Config) -> Result<Output, RunError> {
        base_filter(
            recommender,
            config,
            &self.target.object.metadata,
            self.now_secs(),
        )?;
        match recommender {
            recommenders::RESOURCE => self.resource(config).await,
            recommenders::REPLICAS => self.replicas(config).await,
            recommenders::HPA => self.hpa(config).await,
            recommenders::IDLE_NODE => self.idle_node(config).await,
            recommenders::SERVICE => self.service(config).await,
            recommenders::VOLUME => self.volume().await,
            other => Err(RunError::NotConfigured(format!(
                "unknown recommender {other:?}"
            ))),
        }
    }
}

/// Crane's filter before every recommender: a target created less than `creation-cooldown`
/// ago (a Go duration, 3 minutes by default; an unparsable value means the default, as in
/// Crane) is skipped this round, and so is one being deleted.
fn base_filter(
    recommender: &str,
    config: &Config,
    meta: &kube::api::ObjectMeta,
    now_secs: i64,
) -> Result<(), RunError> {
    const DEFAULT_COOLDOWN_SECS: i64 = 180;
    let cooldown = config
        .get_duration_secs(CREATION_COOLDOWN, DEFAULT_COOLDOWN_SECS)
        .unwrap_or(DEFAULT_COOLDOWN_SECS);
    if let Some(created) = &meta.creation_timestamp
        && now_secs < created.0.as_second().saturating_add(cooldown)
    {
        return Err(RunError::Target(format!(
            "recommender {recommender} is failed at filter, created at {} (less than {CREATION_COOLDOWN} {cooldown}s ago)",
            created.0
        )));
    }
    if meta.deletion_timestamp.is_some() {
        return Err(RunError::Target(format!(
            "recommender {recommender} is failed at filter, the target is being deleted"
        )));
    }
    Ok(())
}

/// The recommender setting for how long a new target is left alone (Crane's key).
pub const CREATION_COOLDOWN: &str = "creation-cooldown";

/// History length and step for a rule's workload queries: the Resource recommender's CPU
/// settings when it runs (its defaults otherwise: 7 days at 1 minute).
pub fn history_window(resource: Option<&Config>) -> (Duration, Duration) {
    let cfg = resource
        .and_then(|c| ResourceConfig::from_config(c).ok())
        .or_else(|| ResourceConfig::from_config(&Config::default()).ok());
    match cfg {
        Some(c) => workload_window(&c),
        None => (Duration::from_secs(7 * 86_400), Duration::from_secs(60)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_and_deleting_targets_are_filtered_out_like_crane() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let created = k8s_openapi::jiff::Timestamp::from_second(1_000_000).unwrap();
        let meta = kube::api::ObjectMeta {
            creation_timestamp: Some(Time(created)),
            ..Default::default()
        };
        let default = Config::default();
        assert!(base_filter("Resource", &default, &meta, 1_000_000 + 179).is_err());
        assert!(base_filter("Resource", &default, &meta, 1_000_000 + 180).is_ok());
        let none = Config::from_pairs([(CREATION_COOLDOWN, "0s")]);
        assert!(base_filter("Resource", &none, &meta, 1_000_000).is_ok());
        let hour = Config::from_pairs([(CREATION_COOLDOWN, "1h")]);
        assert!(base_filter("Replicas", &hour, &meta, 1_000_000 + 3599).is_err());
        // Crane falls back to its default on a value it cannot parse.
        let bad = Config::from_pairs([(CREATION_COOLDOWN, "soon")]);
        assert!(base_filter("Resource", &bad, &meta, 1_000_000 + 179).is_err());
        let deleting = kube::api::ObjectMeta {
            deletion_timestamp: Some(Time(created)),
            ..meta.clone()
        };
        let e = base_filter("Resource", &none, &deleting, 2_000_000).unwrap_err();
        assert!(e.to_string().contains("being deleted"), "{e}");
    }

    #[test]
    fn history_window_follows_the_resource_config() {
        assert_eq!(
            history_window(None),
            (Duration::from_secs(7 * 86_400), Duration::from_secs(60))
        );
        let c = Config::from_pairs([
            ("cpu-model-history-length", "24h"),
            ("mem-model-history-length", "48h"),
            ("cpu-sample-interval", "5m"),
        ]);
        assert_eq!(
            history_window(Some(&c)),
            (Duration::from_secs(48 * 3600), Duration::from_secs(300))
        );
    }
}
