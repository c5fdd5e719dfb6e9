//! What the report says about each workload, computed from facts and usage by the pure
//! recommenders.

use ferrocrane_core::quantity::QuantityFormat::{BinarySi, DecimalSi};
use ferrocrane_core::quantity::{format_milli, format_value};
use serde::Serialize;

use crate::datasource::WorkloadHistory;
use crate::prediction::Sample;
use crate::prediction::dsp::{DspConfig, DspPredictor};
use crate::prediction::percentile::{
    DEFAULT_EPSILON, DEFAULT_MIN_SAMPLE_WEIGHT, HistogramOptions, PercentileConfig,
    PercentilePredictor,
};
use crate::recommender::replicas::{ReplicasConfig, ReplicasInput, min_replicas};
use crate::recommender::resource::{
    ContainerInput, OomRecord, ResourceHistogram, ResourceRecommender,
};
use crate::workload::TemplateContainer;

/// A workload as the API server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadFacts {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// `spec.replicas` (Deployments and StatefulSets; `None` for DaemonSets).
    pub replicas: Option<i32>,
    pub containers: Vec<TemplateContainer>,
}

/// Requests as quantities and as numbers (`None`: not set / not computed).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Requests {
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub cpu_millis: Option<i64>,
    pub memory_bytes: Option<i64>,
}

impl Requests {
    pub fn new(cpu_millis: Option<i64>, memory_bytes: Option<i64>) -> Self {
        Requests {
            cpu: cpu_millis.map(|m| format_milli(m, DecimalSi)),
            memory: memory_bytes.map(|b| format_value(b, BinarySi)),
            cpu_millis,
            memory_bytes,
        }
    }
}

/// One pod's usage, reduced for drawing: the maximum and the minimum of each slice.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSeries {
    pub pod: String,
    pub points: Vec<Sample>,
    /// Same timestamps as `points` (empty: draw the line only).
    pub lows: Vec<Sample>,
}

/// A container's line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerReport {
    pub name: String,
    pub current: Requests,
    /// Absent when the recommender could not decide (see `error`).
    pub recommended: Option<Requests>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Memory was raised by OOM protection.
    pub oom_protected: bool,
    /// The usage percentile the recommendation starts from (before margin), cores and bytes.
    pub cpu_percentile: Option<f64>,
    pub memory_percentile: Option<f64>,
    /// Samples of history used (all pods).
    pub cpu_samples: usize,
    pub memory_samples: usize,
    #[serde(skip)]
    pub cpu_history: Vec<PodSeries>,
    #[serde(skip)]
    pub memory_history: Vec<PodSeries>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicasReport {
    pub current: Option<i32>,
    pub recommended: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the CPU bound used the DSP prediction of the next periods.
    pub predicted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReport {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// Absent for DaemonSets (one pod per node: nothing to recommend).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicasReport>,
    pub containers: Vec<ContainerReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// RFC 3339.
    pub generated_at: String,
    /// Unix seconds the history ends at.
    pub now: i64,
    pub history_seconds: i64,
    pub workloads: Vec<WorkloadReport>,
}

/// How many slices of each pod's series the HTML draws.
pub const CHART_POINTS: usize = 720;

/// Reduces `samples` to at most `n` equal time slices: each slice's maximum (so peaks stay
/// visible) and minimum (so the body of the usage does too), at the slice's first timestamp.
pub fn downsample(samples: &[Sample], n: usize) -> (Vec<Sample>, Vec<Sample>) {
    if samples.len() <= n || n == 0 {
        return (samples.to_vec(), samples.to_vec());
    }
    let (first, last) = (samples[0].timestamp, samples[samples.len() - 1].timestamp);
    let span = (last - first).max(1) as f64;
    let mut highs: Vec<Sample> = Vec::with_capacity(n);
    let mut lows: Vec<Sample> = Vec::with_capacity(n);
    let mut current: Option<(usize, Sample, Sample)> = None;
    for s in samples {
        // Sorted samples: (timestamp - first) / span is in 0..=1, so the slot in 0..n.
        #[allow(clippy::cast_possible_truncation, reason = "in 0..n, see above")]
        let slot = (((s.timestamp - first) as f64 / span) * (n - 1) as f64) as usize;
        match &mut current {
            Some((k, hi, lo)) if *k == slot => {
                hi.value = hi.value.max(s.value);
                lo.value = lo.value.min(s.value);
            }
            _ => {
                if let Some((_, hi, lo)) = current.take() {
                    highs.push(hi);
                    lows.push(lo);
                }
                current = Some((slot, *s, *s));
            }
        }
    }
    if let Some((_, hi, lo)) = current {
        highs.push(hi);
        lows.push(lo);
    }
    (highs, lows)
}

fn percentile_predictor(h: &ResourceHistogram, decay: bool) -> Option<PercentilePredictor> {
    PercentilePredictor::new(PercentileConfig {
        options: HistogramOptions::linear(h.max_value, h.bucket_size, DEFAULT_EPSILON).ok()?,
        percentile: h.percentile,
        margin_fraction: 0.0,
        target_utilization: 1.0,
        min_sample_weight: DEFAULT_MIN_SAMPLE_WEIGHT,
        decay_half_life_secs: decay.then_some(h.half_life_secs),
    })
    .ok()
}

/// The recommenders a report runs, built once.
#[derive(Debug)]
pub struct Engine {
    pub resource: ResourceRecommender,
    pub replicas: ReplicasConfig,
    cpu_percentile: Option<PercentilePredictor>,
    memory_percentile: Option<PercentilePredictor>,
    dsp: Option<DspPredictor>,
    scratch: Vec<f64>,
}

impl Engine {
    pub fn new(resource: ResourceRecommender, replicas: ReplicasConfig) -> Self {
        let cfg = resource.config().clone();
        Engine {
            cpu_percentile: percentile_predictor(&cfg.cpu, cfg.histogram_decay),
            memory_percentile: percentile_predictor(&cfg.memory, cfg.histogram_decay),
            dsp: DspPredictor::new(DspConfig::default()).ok(),
            resource,
            replicas,
            scratch: Vec::new(),
        }
    }

    /// The report of one workload at `now` (Unix seconds), with its OOM records.
    pub fn workload(
        &mut self,
        facts: &WorkloadFacts,
        usage: &WorkloadHistory,
        ooms: &[OomRecord],
        now: i64,
    ) -> WorkloadReport {
        let containers = facts
            .containers
            .iter()
            .map(|c| self.container(c, usage, ooms, now))
            .collect();
        let replicas = facts
            .replicas
            .map(|current| self.replicas(facts, usage, current));
        WorkloadReport {
            namespace: facts.namespace.clone(),
            kind: facts.kind.clone(),
            name: facts.name.clone(),
            replicas,
            containers,
        }
    }

    fn container(
        &mut self,
        spec: &TemplateContainer,
        usage: &WorkloadHistory,
        ooms: &[OomRecord],
        now: i64,
    ) -> ContainerReport {
        let cpu = usage.cpu.pods(&spec.name);
        let memory = usage.memory.pods(&spec.name);
        let cpu_series: Vec<&[Sample]> = cpu.iter().map(|(_, s)| *s).collect();
        let memory_series: Vec<&[Sample]> = memory.iter().map(|(_, s)| *s).collect();
        let cfg = self.resource.config().clone();
        let percentile = |p: &mut Option<PercentilePredictor>, series: &[&[Sample]], from| {
            p.as_mut()
                .and_then(|p| (p.fill(series, from) > 0).then(|| p.current_estimate()))
        };
        let cpu_percentile = percentile(
            &mut self.cpu_percentile,
            &cpu_series,
            now - cfg.cpu.history_length_secs,
        );
        let memory_percentile = percentile(
            &mut self.memory_percentile,
            &memory_series,
            now - cfg.memory.history_length_secs,
        );
        let input = ContainerInput {
            name: &spec.name,
            current_cpu_millis: spec.cpu_millis,
            current_memory_bytes: spec.memory_bytes,
            cpu_usage: &cpu_series,
            memory_usage: &memory_series,
        };
        let (recommended, error, oom_protected) =
            match self.resource.recommend_container(&input, ooms, now) {
                Ok(r) => (
                    Some(Requests::new(Some(r.cpu_millis), Some(r.memory_bytes))),
                    None,
                    r.oom_protected,
                ),
                Err(e) => (None, Some(e.to_string()), false),
            };
        let history = |series: &[(&str, &[Sample])]| {
            series
                .iter()
                .map(|(pod, s)| {
                    let (points, lows) = downsample(s, CHART_POINTS);
                    PodSeries {
                        pod: pod.to_string(),
                        points,
                        lows,
                    }
                })
                .collect()
        };
        ContainerReport {
            name: spec.name.clone(),
            current: Requests::new(spec.cpu_millis, spec.memory_bytes),
            recommended,
            error,
            oom_protected,
            cpu_percentile,
            memory_percentile,
            cpu_samples: cpu_series.iter().map(|s| s.len()).sum(),
            memory_samples: memory_series.iter().map(|s| s.len()).sum(),
            cpu_history: history(&cpu),
            memory_history: history(&memory),
        }
    }

    fn replicas(
        &mut self,
        facts: &WorkloadFacts,
        usage: &WorkloadHistory,
        current: i32,
    ) -> ReplicasReport {
        let cpu = usage.cpu.total();
        let memory = usage.memory.total();
        // Crane joins the DSP prediction of the next periods to the history when the CPU has
        // a daily or weekly period.
        let predicted = self
            .dsp
            .as_mut()
            .and_then(|d| d.forecast(&[&cpu]).ok())
            .map(|f| f.samples())
            .unwrap_or_default();
        let input = ReplicasInput {
            cpu_usage: &cpu,
            cpu_predicted: &predicted,
            memory_usage: &memory,
            pod_cpu_request_millis: facts.containers.iter().filter_map(|c| c.cpu_millis).sum(),
            pod_memory_request_bytes: facts.containers.iter().filter_map(|c| c.memory_bytes).sum(),
            current_replicas: current,
        };
        match min_replicas(&self.replicas, &input, &mut self.scratch) {
            Ok(r) => ReplicasReport {
                current: Some(current),
                recommended: Some(r.replicas),
                error: None,
                predicted: !predicted.is_empty(),
            },
            Err(e) => ReplicasReport {
                current: Some(current),
                recommended: None,
                error: Some(e.to_string()),
                predicted: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recommender::config::Config;
    use crate::recommender::resource::ResourceConfig;

    pub(crate) fn engine() -> Engine {
        let resource =
            ResourceRecommender::new(ResourceConfig::from_config(&Config::default()).unwrap())
                .unwrap();
        Engine::new(
            resource,
            ReplicasConfig::from_config(&Config::default()).unwrap(),
        )
    }

    const NOW: i64 = 1_714_521_600;

    fn flat(v: f64, minutes: i64) -> Vec<Sample> {
        (0..minutes)
            .map(|i| Sample::new(NOW - (minutes - i) * 60, v))
            .collect()
    }

    fn facts() -> WorkloadFacts {
        WorkloadFacts {
            namespace: "shop".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            replicas: Some(2),
            containers: vec![
                TemplateContainer {
                    name: "app".into(),
                    cpu_millis: Some(500),
                    memory_bytes: Some(512 << 20),
                },
                TemplateContainer {
                    name: "idle".into(),
                    cpu_millis: None,
                    memory_bytes: None,
                },
            ],
        }
    }

    fn usage() -> WorkloadHistory {
        let mut u = WorkloadHistory::default();
        for pod in ["web-1-aaaaa", "web-1-bbbbb"] {
            u.cpu.push("app", pod.into(), flat(0.25, 600));
            u.memory
                .push("app", pod.into(), flat(200.0 * 1048576.0, 600));
        }
        u
    }

    #[test]
    fn containers_get_percentile_recommendations_and_gaps_say_why() {
        let mut e = engine();
        let r = e.workload(&facts(), &usage(), &[], NOW);
        assert_eq!(r.containers.len(), 2);
        let app = &r.containers[0];
        // 0.25 cores sits in the 0.2–0.3 bucket: p99 = 0.3, × 1.15 = 345m.
        assert_eq!(app.cpu_percentile, Some(0.30000000000000004));
        assert_eq!(
            app.recommended,
            Some(Requests::new(Some(345), Some(361_758_720)))
        );
        assert_eq!(
            app.recommended.as_ref().unwrap().cpu.as_deref(),
            Some("345m")
        );
        assert_eq!(
            app.recommended.as_ref().unwrap().memory.as_deref(),
            Some("345Mi")
        );
        assert_eq!(app.current, Requests::new(Some(500), Some(512 << 20)));
        assert_eq!(app.cpu_samples, 1200);
        assert_eq!(app.cpu_history.len(), 2);
        assert!(!app.oom_protected);
        let idle = &r.containers[1];
        assert_eq!(idle.recommended, None);
        assert_eq!(
            idle.error.as_deref(),
            Some("insufficient data: container idle: no cpu usage samples")
        );
        // 2 pods × 0.25 = 0.5 cores at p95, over 0.5 × 500m = 2 replicas.
        assert_eq!(
            r.replicas,
            Some(ReplicasReport {
                current: Some(2),
                recommended: Some(2),
                error: None,
                predicted: false
            })
        );
    }

    #[test]
    fn oom_records_raise_memory_and_daemonsets_have_no_replicas() {
        let mut e = engine();
        let ooms = [OomRecord {
            container: "app".into(),
            memory_bytes: 1 << 30,
            oom_at: NOW - 3600,
        }];
        let mut f = facts();
        f.kind = "DaemonSet".into();
        f.replicas = None;
        let r = e.workload(&f, &usage(), &ooms, NOW);
        let app = &r.containers[0];
        assert!(app.oom_protected);
        // max(1Gi + 100Mi, 1Gi × 1.2)
        assert_eq!(
            app.recommended.as_ref().unwrap().memory_bytes,
            Some(((1u64 << 30) as f64 * 1.2) as i64)
        );
        assert_eq!(r.replicas, None);
    }

    #[test]
    fn downsampling_keeps_peaks() {
        let s: Vec<Sample> = (0..1000)
            .map(|i| Sample::new(i * 60, if i == 537 { 9.0 } else { 1.0 }))
            .collect();
        let (d, lows) = downsample(&s, 100);
        assert!(d.len() <= 100, "{}", d.len());
        assert_eq!(d.len(), lows.len());
        assert_eq!(d.iter().filter(|p| p.value == 9.0).count(), 1);
        assert!(lows.iter().all(|p| p.value == 1.0));
        assert_eq!(d[0].timestamp, 0);
        assert_eq!(downsample(&s[..10], 100).0, s[..10].to_vec());
    }
}
