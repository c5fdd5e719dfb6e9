//! The workload recommenders: Resource (per container), Replicas and HPA (on the workload's
//! totals and the forecast of its CPU).

use std::sync::Arc;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams};
use kube::core::Selector;
use serde_json::Value;

use super::{FIXED_HISTORY, Output, TargetRun};
use crate::controller::recommendation_rule::status::RunError;
use crate::datasource::WorkloadHistory;
use crate::prediction::Sample;
use crate::prediction::dsp::{DspConfig, DspPredictor};
use crate::recommender::resource::{ContainerInput, ResourceConfig, ResourceRecommender};
use crate::recommender::{Config, hpa, replicas};
use crate::workload::{spec_replicas, template_containers};

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

impl TargetRun<'_> {
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

    pub(super) async fn resource(&self, config: &Config) -> Result<Output, RunError> {
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

    pub(super) async fn replicas(&self, config: &Config) -> Result<Output, RunError> {
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

    pub(super) async fn hpa(&self, config: &Config) -> Result<Output, RunError> {
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
}
