//! Running one recommender on one target: gather what it needs (the workload's pod template,
//! pods, history), call the pure recommender, and return its proposal.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{PersistentVolume, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, ListParams};
use kube::core::Selector;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::status::RunError;
use super::targets::Target;
use crate::crd::recommenders;
use crate::datasource::{
    History, NetDirection, NodeUtilization, WorkloadHistory, pods_net_query, workload_window,
};
use crate::prediction::Sample;
use crate::prediction::dsp::{DspConfig, DspPredictor};
use crate::recommender::resource::{
    ContainerInput, OomRecord, ResourceConfig, ResourceRecommender,
};
use crate::recommender::{Config, Proposal, hpa, idlenode, replicas, service, volume};
use crate::workload::{spec_replicas, template_containers};

/// OOM kills of a target's containers (from the OOM recorder, matched by owner references).
pub type OomSource = Arc<dyn Fn(&Target) -> Vec<OomRecord> + Send + Sync>;

/// Crane's Replicas and HPA recommenders: a DSP forecast of the workload's CPU over the next
/// week (Crane's DSP defaults: 1-minute samples, its eight estimators). A history without a
/// daily or weekly period gives no forecast, which is not an error: the recommenders then use
/// the history alone, and HPA's `predictable` check fails. The FFTs take tens of milliseconds,
/// so they run off the async workers.
async fn next_week_forecast(cpu: &[Sample]) -> Vec<Sample> {
    let history = cpu.to_vec();
    let forecast = tokio::task::spawn_blocking(move || {
        let mut predictor = DspPredictor::new(DspConfig::default())?;
        predictor.forecast(&[&history])
    })
    .await;
    match forecast {
        Ok(Ok(f)) => {
            let end = f.start + FIXED_HISTORY.as_secs() as i64;
            f.samples()
                .into_iter()
                .take_while(|s| s.timestamp < end)
                .collect()
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "no CPU forecast");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!(error = %e, "the forecast task failed");
            Vec::new()
        }
    }
}

/// The IdleNode and Service recommenders read 7 days at 1 minute, whatever the Resource
/// recommender's window (Crane hard-codes it for both).
const FIXED_HISTORY: Duration = Duration::from_secs(7 * 24 * 3600);
const FIXED_STEP: Duration = Duration::from_secs(60);

/// Pods available for at least `min_ready_secs` at `now` (Ready condition True since then).
pub fn available_pods(
    pods: &[Pod],
    min_ready_secs: i64,
    now: k8s_openapi::jiff::Timestamp,
) -> usize {
    pods.iter()
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| {
                    c.type_ == "Ready"
                        && c.status == "True"
                        && c.last_transition_time
                            .as_ref()
                            .is_none_or(|t| now.duration_since(t.0).as_secs() >= min_ready_secs)
                })
        })
        .count()
}

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

/// A workload's totals (all pods and containers summed per timestamp) and one pod's requests.
struct Totals {
    cpu: Vec<Sample>,
    /// The DSP forecast of `cpu` for the next week; empty when the history shows no period.
    cpu_predicted: Arc<Vec<Sample>>,
    memory: Vec<Sample>,
    cpu_request: i64,
    memory_request: i64,
    current: i32,
}

impl Totals {
    fn input(&self) -> replicas::ReplicasInput<'_> {
        replicas::ReplicasInput {
            cpu_usage: &self.cpu,
            cpu_predicted: &self.cpu_predicted,
            memory_usage: &self.memory,
            pod_cpu_request_millis: self.cpu_request,
            pod_memory_request_bytes: self.memory_request,
            current_replicas: self.current,
        }
    }
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

    async fn pods(&self) -> Result<Vec<Pod>, RunError> {
        let sel: Option<LabelSelector> = self
            .data()
            .pointer("/spec/selector")
            .and_then(|s| serde_json::from_value(s.clone()).ok());
        let Some(sel) = sel else {
            return Err(RunError::Target(format!(
                "{} {} has no spec.selector",
                self.target.kind, self.target.name
            )));
        };
        let selector: Selector = sel
            .try_into()
            .map_err(|e: kube::core::ParseExpressionError| RunError::Target(e.to_string()))?;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.target.namespace);
        api.list(&ListParams::default().labels_from(&selector))
            .await
            .map(|l| l.items)
            .map_err(|e| RunError::Target(format!("listing pods: {e}")))
    }

    pub async fn run(&self, recommender: &str, config: &Config) -> Result<Output, RunError> {
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

    async fn resource(&self, config: &Config) -> Result<Output, RunError> {
        let cfg = ResourceConfig::from_config(config)
            .map_err(crate::recommender::RecommendError::from)?;
        let containers = template_containers(self.data());
        if containers.is_empty() {
            return Err(RunError::Target(format!(
                "{} {} has no pod template containers",
                self.target.kind, self.target.name
            )));
        }
        let history = self.workload_history().await?;
        let cpu: Vec<Vec<&[Sample]>> = containers
            .iter()
            .map(|c| history.cpu.per_pod(&c.name))
            .collect();
        let mem: Vec<Vec<&[Sample]>> = containers
            .iter()
            .map(|c| history.memory.per_pod(&c.name))
            .collect();
        let inputs: Vec<ContainerInput<'_>> = containers
            .iter()
            .zip(cpu.iter().zip(&mem))
            .map(|(c, (cpu, mem))| ContainerInput {
                name: &c.name,
                current_cpu_millis: c.cpu_millis,
                current_memory_bytes: c.memory_bytes,
                cpu_usage: cpu,
                memory_usage: mem,
            })
            .collect();
        let ooms = (self.oom)(self.target);
        let mut r = ResourceRecommender::new(cfg)?;
        let (recs, proposal) = r.recommend(&inputs, &ooms, self.now_secs())?;
        Ok(Output {
            proposal,
            resources: recs
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        c.cpu_millis as f64 / 1000.0,
                        c.memory_bytes as f64,
                    )
                })
                .collect(),
            replicas: None,
        })
    }

    /// The Replicas inputs: filter on pods, then the workload totals.
    async fn replicas_input(
        &self,
        cfg: &replicas::ReplicasConfig,
    ) -> Result<(Arc<WorkloadHistory>, Totals), RunError> {
        let current = spec_replicas(self.data());
        let pods = self.pods().await?;
        let available = available_pods(&pods, cfg.pod_min_ready_seconds, self.jiff_now());
        cfg.filter(current, pods.len(), available)?;
        let containers = template_containers(self.data());
        let history = self.workload_history().await?;
        let cpu = history.cpu.total();
        let cpu_predicted = self
            .forecast
            .get_or_init(|| async { Arc::new(next_week_forecast(&cpu).await) })
            .await
            .clone();
        let totals = Totals {
            cpu,
            cpu_predicted,
            memory: history.memory.total(),
            cpu_request: containers.iter().filter_map(|c| c.cpu_millis).sum(),
            memory_request: containers.iter().filter_map(|c| c.memory_bytes).sum(),
            current,
        };
        Ok((history, totals))
    }

    async fn replicas(&self, config: &Config) -> Result<Output, RunError> {
        let cfg = replicas::ReplicasConfig::from_config(config)
            .map_err(crate::recommender::RecommendError::from)?;
        let (_, totals) = self.replicas_input(&cfg).await?;
        let min = replicas::min_replicas(&cfg, &totals.input(), &mut Vec::new())?;
        Ok(Output {
            proposal: replicas::proposal(min.replicas, totals.current),
            resources: Vec::new(),
            replicas: Some(min.replicas),
        })
    }

    async fn hpa(&self, config: &Config) -> Result<Output, RunError> {
        let cfg = hpa::HpaConfig::from_config(config)
            .map_err(crate::recommender::RecommendError::from)?;
        let (history, totals) = self.replicas_input(&cfg.replicas).await?;
        let per_container: Vec<Vec<&[Sample]>> = history
            .cpu
            .containers
            .keys()
            .map(|c| history.cpu.per_pod(c))
            .collect();
        let per_container_refs: Vec<&[&[Sample]]> =
            per_container.iter().map(Vec::as_slice).collect();
        let input = hpa::HpaInput {
            replicas: totals.input(),
            container_cpu_usage: &per_container_refs,
            predictable: !totals.cpu_predicted.is_empty(),
        };
        let rec = hpa::recommend(&cfg, &input)?;
        let extra = if cfg.reference_hpa {
            self.existing_hpa_metrics().await?
        } else {
            Vec::new()
        };
        let target = self.target.key("").target_ref();
        Ok(Output {
            proposal: hpa::proposal(&rec, &target, input.predictable, &extra, false),
            resources: Vec::new(),
            replicas: None,
        })
    }

    /// The non-CPU metrics of an HPA that scales the target (Crane's `reference-hpa`).
    async fn existing_hpa_metrics(&self) -> Result<Vec<Value>, RunError> {
        let api: Api<HorizontalPodAutoscaler> =
            Api::namespaced(self.client.clone(), &self.target.namespace);
        let hpas = api
            .list(&ListParams::default())
            .await
            .map_err(|e| RunError::Target(format!("listing HPAs: {e}")))?;
        let mut out = Vec::new();
        for h in hpas.items {
            let spec = h.spec;
            if spec.scale_target_ref.kind != self.target.kind
                || spec.scale_target_ref.name != self.target.name
            {
                continue;
            }
            for m in spec.metrics.unwrap_or_default() {
                let is_cpu =
                    m.type_ == "Resource" && m.resource.as_ref().is_some_and(|r| r.name == "cpu");
                if !is_cpu && let Ok(v) = serde_json::to_value(&m) {
                    out.push(v);
                }
            }
        }
        Ok(out)
    }

    async fn idle_node(&self, config: &Config) -> Result<Output, RunError> {
        let cfg = idlenode::IdleNodeConfig::from_config(config)
            .map_err(crate::recommender::RecommendError::from)?;
        let api: Api<Pod> = Api::all(self.client.clone());
        let pods = api
            .list(&ListParams::default().fields(&format!("spec.nodeName={}", self.target.name)))
            .await
            .map_err(|e| RunError::Target(format!("listing pods on the node: {e}")))?;
        let owners: Vec<Vec<String>> = pods
            .items
            .iter()
            .filter(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .map(|p| {
                p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|o| o.kind.clone())
                    .collect()
            })
            .collect();
        let owner_refs: Vec<Vec<&str>> = owners
            .iter()
            .map(|o| o.iter().map(String::as_str).collect())
            .collect();
        let owner_slices: Vec<&[&str]> = owner_refs.iter().map(Vec::as_slice).collect();
        // Only the checks with a threshold are queried, as Crane does, and none for a node
        // the DaemonSet rule already calls idle.
        let node = &self.target.name;
        let by_daemonsets = idlenode::only_daemonset_pods(&owner_slices);
        let checked = |threshold: f64, what: NodeUtilization| async move {
            if threshold > 0.0 && !by_daemonsets {
                self.fixed_window_series(&what.query(node)).await
            } else {
                Ok(Vec::new())
            }
        };
        let (cpu_usage, memory_usage, cpu_request, memory_request) = tokio::try_join!(
            checked(cfg.cpu_usage_utilization, NodeUtilization::CpuUsage),
            checked(cfg.memory_usage_utilization, NodeUtilization::MemoryUsage),
            checked(cfg.cpu_request_utilization, NodeUtilization::CpuRequest),
            checked(
                cfg.memory_request_utilization,
                NodeUtilization::MemoryRequest
            ),
        )?;
        let input = idlenode::IdleNodeInput {
            pod_owner_kinds: &owner_slices,
            cpu_usage_utilization: &cpu_usage,
            memory_usage_utilization: &memory_usage,
            cpu_request_utilization: &cpu_request,
            memory_request_utilization: &memory_request,
        };
        Ok(Output {
            proposal: idlenode::recommend(&cfg, &self.target.name, &input)?,
            ..Default::default()
        })
    }

    async fn service(&self, config: &Config) -> Result<Output, RunError> {
        let cfg = service::ServiceConfig::from_config(config)
            .map_err(crate::recommender::RecommendError::from)?;
        let svc: Service =
            serde_json::from_value(serde_json::to_value(&self.target.object).unwrap_or_default())
                .map_err(|e| RunError::Target(format!("reading the Service: {e}")))?;
        let spec = svc.spec.unwrap_or_default();
        let slices: Api<EndpointSlice> =
            Api::namespaced(self.client.clone(), &self.target.namespace);
        let addresses: usize = slices
            .list(
                &ListParams::default()
                    .labels(&format!("kubernetes.io/service-name={}", self.target.name)),
            )
            .await
            .map_err(|e| RunError::Target(format!("listing EndpointSlices: {e}")))?
            .items
            .iter()
            .flat_map(|s| s.endpoints.iter().flatten())
            .map(|e| e.addresses.len())
            .sum();
        let pods: Vec<String> = match spec.selector.filter(|s| !s.is_empty()) {
            None => Vec::new(),
            Some(sel) => {
                let label = sel
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.target.namespace);
                api.list_metadata(&ListParams::default().labels(&label))
                    .await
                    .map_err(|e| RunError::Target(format!("listing pods: {e}")))?
                    .items
                    .into_iter()
                    .filter_map(|p| p.metadata.name)
                    .collect()
            }
        };
        let service_type = spec.type_.as_deref().unwrap_or("ClusterIP");
        // Traffic is read only when it can decide: an orphan LoadBalancer with pods behind it
        // and a threshold set.
        let names: Vec<&str> = pods.iter().map(String::as_str).collect();
        let traffic = |threshold: f64, direction: NetDirection| {
            let wanted = threshold > 0.0
                && service_type == "LoadBalancer"
                && addresses == 0
                && !names.is_empty();
            let query = pods_net_query(direction, &self.target.namespace, &names);
            async move {
                if wanted {
                    self.fixed_window_series(&query).await
                } else {
                    Ok(Vec::new())
                }
            }
        };
        let (receive, transmit) = tokio::try_join!(
            traffic(cfg.net_receive_bytes, NetDirection::Receive),
            traffic(cfg.net_transfer_bytes, NetDirection::Transmit),
        )?;
        let input = service::ServiceInput {
            service_type,
            endpoint_addresses: addresses,
            pods: pods.len(),
            net_receive_bytes: &receive,
            net_transfer_bytes: &transmit,
        };
        Ok(Output {
            proposal: service::recommend(&cfg, &self.target.name, &input)?,
            ..Default::default()
        })
    }

    async fn volume(&self) -> Result<Output, RunError> {
        let pv: PersistentVolume =
            serde_json::from_value(serde_json::to_value(&self.target.object).unwrap_or_default())
                .map_err(|e| RunError::Target(format!("reading the PersistentVolume: {e}")))?;
        let claim = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        let claim_ns = claim.and_then(|c| c.namespace.clone());
        let claim_name = claim.and_then(|c| c.name.clone());
        let mut mounted: Vec<String> = Vec::new();
        if let Some(ns) = &claim_ns {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
            for p in api
                .list(&ListParams::default())
                .await
                .map_err(|e| RunError::Target(format!("listing pods: {e}")))?
                .items
            {
                for v in p
                    .spec
                    .into_iter()
                    .flat_map(|s| s.volumes.unwrap_or_default())
                {
                    if let Some(c) = v.persistent_volume_claim {
                        mounted.push(c.claim_name);
                    }
                }
            }
        }
        Ok(Output {
            proposal: volume::recommend(
                &self.target.name,
                claim_name.as_deref(),
                mounted.iter().map(String::as_str),
            )?,
            ..Default::default()
        })
    }
}

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

    #[tokio::test]
    async fn a_daily_pattern_gets_a_week_of_forecast_and_an_hour_gets_none() {
        let day = 86_400;
        let daily: Vec<Sample> = (0..7 * 24 * 60)
            .map(|i| {
                let t = i * 60;
                let phase = (t % day) as f64 / day as f64 * std::f64::consts::TAU;
                Sample::new(t, 2.0 + phase.sin())
            })
            .collect();
        let f = next_week_forecast(&daily).await;
        let last = daily.last().unwrap().timestamp;
        assert!(!f.is_empty());
        assert_eq!(f[0].timestamp, last + 60);
        assert!(f.last().unwrap().timestamp < last + 60 + 7 * day);
        assert!(f.iter().any(|s| s.value > 2.5), "the peaks are forecast");
        // An hour of history holds no whole day: no forecast, no error.
        assert!(next_week_forecast(&daily[..60]).await.is_empty());
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
