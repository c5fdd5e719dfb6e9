//! The HPA recommender: an EffectiveHorizontalPodAutoscaler proposal.
//!
//! Crane (`recommender/hpa`), on top of the Replicas recommender's minReplicas:
//! * the highest CPU usage must reach `min-cpu-usage-threshold` (1 core);
//! * fluctuation = max / min of the hourly medians of the CPU history (min 0 → 0.1) must reach
//!   `fluctuation-threshold` (1.5);
//! * target utilization = ceil(Σ containers' CPU p99 × 1.15 (percentile histogram) × 1000 /
//!   pod CPU request × 100), clamped to [`min-cpu-target-utilization` 30,
//!   `max-cpu-target-utilization` 75];
//! * maxReplicas = ceil(p95 CPU × 100 × 1000 × `max-replicas-factor` (3) / (pod request ×
//!   target)), at least minReplicas.
//!
//! Difference, on purpose: the fluctuation threshold is read with its default (Crane parses the
//! raw map entry, so without an explicit `fluctuation-threshold` every HPA recommendation fails
//! with `ParseFloat ""`). Hours are UTC (Crane uses the process' local zone).

use serde_json::{Value, json};

use super::config::{Config, ConfigValueError};
use super::replicas::{self, ReplicasConfig, ReplicasInput};
use super::{Proposal, RecommendError, to_yaml};
use crate::crd::actions;
use crate::prediction::percentile::{PercentileConfig, PercentilePredictor};
use crate::prediction::{Predictor, Sample, stats};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HpaConfig {
    pub replicas: ReplicasConfig,
    pub predictable: bool,
    pub reference_hpa: bool,
    pub min_cpu_usage_threshold: f64,
    pub fluctuation_threshold: f64,
    pub min_cpu_target_utilization: i64,
    pub max_cpu_target_utilization: i64,
    pub max_replicas_factor: f64,
}

impl HpaConfig {
    pub fn from_config(c: &Config) -> Result<Self, ConfigValueError> {
        let cfg = HpaConfig {
            replicas: ReplicasConfig::from_config(c)?,
            predictable: c.get_bool("predictable", false)?,
            reference_hpa: c.get_bool("reference-hpa", true)?,
            min_cpu_usage_threshold: c.get_f64("min-cpu-usage-threshold", 1.0)?,
            fluctuation_threshold: c.get_f64("fluctuation-threshold", 1.5)?,
            min_cpu_target_utilization: c.get_i64("min-cpu-target-utilization", 30)?,
            max_cpu_target_utilization: c.get_i64("max-cpu-target-utilization", 75)?,
            max_replicas_factor: c.get_f64("max-replicas-factor", 3.0)?,
        };
        if !(1..=100).contains(&cfg.min_cpu_target_utilization) {
            return Err(ConfigValueError::new(
                "min-cpu-target-utilization",
                "must be in 1..=100",
            ));
        }
        if cfg.max_cpu_target_utilization < cfg.min_cpu_target_utilization {
            return Err(ConfigValueError::new(
                "max-cpu-target-utilization",
                "must not be below min-cpu-target-utilization",
            ));
        }
        if cfg.max_replicas_factor <= 0.0 {
            return Err(ConfigValueError::new(
                "max-replicas-factor",
                "must be positive",
            ));
        }
        Ok(cfg)
    }
}

/// The percentile settings Crane's HPA recommender estimates each container's CPU with:
/// p99, margin 0.15, linear 0.1 core buckets to 100.
pub fn container_cpu_percentile_config() -> PercentileConfig {
    PercentileConfig {
        margin_fraction: 0.15,
        ..PercentileConfig::crane_default()
    }
}

#[derive(Debug, Clone, Copy)]
pub struct HpaInput<'a> {
    pub replicas: ReplicasInput<'a>,
    /// Each container's CPU usage series (one per pod), for the target utilization.
    pub container_cpu_usage: &'a [&'a [&'a [Sample]]],
    /// Whether a DSP prediction was available.
    pub predictable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpaRecommendation {
    pub min_replicas: i32,
    pub max_replicas: i32,
    pub target_utilization: i32,
}

/// min and max of the per-hour (UTC) medians.
pub fn min_max_hourly_medians(series: &[Sample]) -> Option<(f64, f64)> {
    let mut hours: [Vec<f64>; 24] = Default::default();
    for s in series {
        // rem_euclid keeps it in 0..86400, so the hour in 0..24.
        let hour = usize::try_from(s.timestamp.rem_euclid(86_400) / 3600).unwrap_or(0);
        hours[hour].push(s.value);
    }
    let medians: Vec<f64> = hours.iter_mut().filter_map(|h| stats::median(h)).collect();
    if medians.is_empty() {
        return None;
    }
    let max = medians.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
    let min = medians.iter().copied().fold(f64::MAX, f64::min);
    Some((min, max))
}

pub fn recommend(
    cfg: &HpaConfig,
    input: &HpaInput<'_>,
) -> Result<HpaRecommendation, RecommendError> {
    if cfg.predictable && !input.predictable {
        return Err(RecommendError::NotApplicable(
            "cannot predict target".into(),
        ));
    }
    let pod_request = input.replicas.pod_cpu_request_millis;
    if pod_request <= 0 {
        return Err(RecommendError::NotApplicable(
            "pod template has no cpu request".into(),
        ));
    }
    let min = replicas::min_replicas(&cfg.replicas, &input.replicas, &mut Vec::new())?;
    if min.cpu_max < cfg.min_cpu_usage_threshold {
        return Err(RecommendError::NotApplicable(format!(
            "target cpu usage {} is under min-cpu-usage-threshold {}",
            min.cpu_max, cfg.min_cpu_usage_threshold
        )));
    }
    let (median_min, median_max) = min_max_hourly_medians(input.replicas.cpu_usage)
        .ok_or_else(|| RecommendError::InsufficientData("no cpu usage history".into()))?;
    let median_min = if median_min == 0.0 { 0.1 } else { median_min };
    let fluctuation = median_max / median_min;
    if fluctuation < cfg.fluctuation_threshold {
        return Err(RecommendError::NotApplicable(format!(
            "target cpu fluctuation {fluctuation} is under fluctuation-threshold {}",
            cfg.fluctuation_threshold
        )));
    }

    let mut predictor = PercentilePredictor::new(container_cpu_percentile_config())
        .map_err(|e| RecommendError::InsufficientData(e.to_string()))?;
    let mut cpu_usage = 0.0;
    for history in input.container_cpu_usage {
        cpu_usage += predictor.estimate(history).map_err(|_| {
            RecommendError::InsufficientData("no container cpu usage samples".into())
        })?;
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "Go's int64(math.Ceil(x)); out of range it saturates and the clamp below bounds it"
    )]
    let target = ((cpu_usage * 1000.0 / pod_request as f64) * 100.0).ceil() as i64;
    // The maximum is only checked to be at least the minimum: it may exceed i32.
    let target = i32::try_from(target.clamp(
        cfg.min_cpu_target_utilization,
        cfg.max_cpu_target_utilization,
    ))
    .unwrap_or(i32::MAX);

    let max = (min.cpu_percentile * 100.0 * 1000.0 * cfg.max_replicas_factor)
        / (pod_request as f64 * f64::from(target));
    #[allow(
        clippy::cast_possible_truncation,
        reason = "capped at i32::MAX first; NaN becomes 0 and the max() below restores the minimum"
    )]
    let max_replicas = (max.ceil().min(f64::from(i32::MAX)) as i32).max(min.replicas);
    Ok(HpaRecommendation {
        min_replicas: min.replicas,
        max_replicas,
        target_utilization: target,
    })
}

/// Crane's status for HPA: `effectiveHPA` in recommendedValue; Create (a whole EHPA in
/// Preview mode) when the workload has none, else Patch of its spec. `extra_metrics`: the
/// existing HPA's non-CPU metric specs when `reference-hpa` is on.
pub fn proposal(
    rec: &HpaRecommendation,
    target: &k8s_openapi::api::core::v1::ObjectReference,
    predictable: bool,
    extra_metrics: &[Value],
    ehpa_exists: bool,
) -> Proposal {
    let mut metrics = vec![
        json!({"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": rec.target_utilization}}}),
    ];
    metrics.extend(extra_metrics.iter().cloned());
    let mut ehpa = json!({
        "minReplicas": rec.min_replicas,
        "maxReplicas": rec.max_replicas,
        "metrics": metrics,
    });
    if predictable {
        ehpa["prediction"] = json!({
            "predictionWindowSeconds": 3600,
            "predictionAlgorithm": {"algorithmType": "dsp",
                "dsp": {"sampleInterval": "1m", "historyLength": "7d", "estimators": {}}},
        });
    }
    let value = to_yaml(&json!({"effectiveHPA": ehpa}));
    let (info, action) = if ehpa_exists {
        (
            json!({"spec": {"minReplicas": rec.min_replicas, "maxReplicas": rec.max_replicas,
                "metrics": ehpa["metrics"]}}),
            actions::PATCH,
        )
    } else {
        let mut spec = json!({
            "minReplicas": rec.min_replicas, "maxReplicas": rec.max_replicas,
            "metrics": ehpa["metrics"], "scaleStrategy": "Preview",
            "scaleTargetRef": {"kind": target.kind, "apiVersion": target.api_version, "name": target.name},
        });
        if predictable {
            spec["prediction"] = ehpa["prediction"].clone();
        }
        (
            json!({"kind": "EffectiveHorizontalPodAutoscaler",
                "apiVersion": "autoscaling.crane.io/v1alpha1",
                "metadata": {"namespace": target.namespace, "name": target.name},
                "spec": spec}),
            actions::CREATE,
        )
    };
    Proposal {
        recommended_value: value,
        recommended_info: info.to_string(),
        current_info: String::new(),
        action,
        description: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> HpaConfig {
        HpaConfig::from_config(&Config::default()).unwrap()
    }

    /// A day of minutes: 1 core at night (00-11 UTC), 4 cores by day (12-23 UTC).
    fn day() -> Vec<Sample> {
        (0..1440)
            .map(|m| Sample::new(m * 60, if m < 720 { 1.0 } else { 4.0 }))
            .collect()
    }

    #[test]
    fn defaults_are_cranes() {
        let c = cfg();
        assert_eq!(c.fluctuation_threshold, 1.5);
        assert_eq!(c.min_cpu_usage_threshold, 1.0);
        assert_eq!(
            (c.min_cpu_target_utilization, c.max_cpu_target_utilization),
            (30, 75)
        );
        assert_eq!(c.max_replicas_factor, 3.0);
        assert!(c.reference_hpa && !c.predictable);
    }

    #[test]
    fn hourly_medians() {
        assert_eq!(min_max_hourly_medians(&day()), Some((1.0, 4.0)));
        assert_eq!(min_max_hourly_medians(&[]), None);
    }

    #[test]
    fn recommends_min_max_and_target() {
        let cpu = day();
        // One container, one pod, using 0.5 core per 1-core request... per pod: the workload
        // total is `cpu`; the container's own series is 1/4 of it (4 pods).
        let per_pod: Vec<Sample> = cpu
            .iter()
            .map(|s| Sample::new(s.timestamp, s.value / 4.0))
            .collect();
        let pods: [&[Sample]; 1] = [&per_pod];
        let containers: [&[&[Sample]]; 1] = [&pods];
        let input = HpaInput {
            replicas: ReplicasInput {
                cpu_usage: &cpu,
                cpu_predicted: &[],
                memory_usage: &[],
                pod_cpu_request_millis: 1000,
                pod_memory_request_bytes: 0,
                current_replicas: 4,
            },
            container_cpu_usage: &containers,
            predictable: false,
        };
        let r = recommend(&cfg(), &input).unwrap();
        // minReplicas: p95 = 4 cores / (0.5 × 1 core) = 8.
        assert_eq!(r.min_replicas, 8);
        // Container p99 = bucket end of 1.0 → 1.1 × 1.15 = 1.265 cores of 1 → 127% → clamp 75.
        assert_eq!(r.target_utilization, 75);
        // max = ceil(4 × 100 × 1000 × 3 / (1000 × 75)) = 16.
        assert_eq!(r.max_replicas, 16);

        let flat: Vec<Sample> = (0..1440).map(|m| Sample::new(m * 60, 2.0)).collect();
        let input2 = HpaInput {
            replicas: ReplicasInput {
                cpu_usage: &flat,
                ..input.replicas
            },
            ..input
        };
        assert!(
            matches!(recommend(&cfg(), &input2), Err(RecommendError::NotApplicable(m)) if m.contains("fluctuation"))
        );

        let low: Vec<Sample> = cpu
            .iter()
            .map(|s| Sample::new(s.timestamp, s.value / 10.0))
            .collect();
        let input3 = HpaInput {
            replicas: ReplicasInput {
                cpu_usage: &low,
                ..input.replicas
            },
            ..input
        };
        assert!(
            matches!(recommend(&cfg(), &input3), Err(RecommendError::NotApplicable(m)) if m.contains("min-cpu-usage-threshold"))
        );

        let strict = HpaConfig {
            predictable: true,
            ..cfg()
        };
        assert!(recommend(&strict, &input).is_err());
    }

    #[test]
    fn proposal_creates_or_patches_ehpa() {
        let rec = HpaRecommendation {
            min_replicas: 2,
            max_replicas: 6,
            target_utilization: 50,
        };
        let target = k8s_openapi::api::core::v1::ObjectReference {
            kind: Some("Deployment".into()),
            api_version: Some("apps/v1".into()),
            namespace: Some("default".into()),
            name: Some("web".into()),
            ..Default::default()
        };
        let p = proposal(&rec, &target, false, &[], false);
        assert_eq!(p.action, "Create");
        assert!(
            p.recommended_value.starts_with("effectiveHPA:\n"),
            "{}",
            p.recommended_value
        );
        assert!(p.recommended_value.contains("averageUtilization: 50"));
        let info: Value = serde_json::from_str(&p.recommended_info).unwrap();
        assert_eq!(info["spec"]["scaleStrategy"], "Preview");
        assert_eq!(info["spec"]["scaleTargetRef"]["name"], "web");
        let p = proposal(&rec, &target, true, &[json!({"type": "Pods"})], true);
        assert_eq!(p.action, "Patch");
        let info: Value = serde_json::from_str(&p.recommended_info).unwrap();
        assert_eq!(info["spec"]["metrics"][1]["type"], "Pods");
        assert!(
            p.recommended_value
                .contains("predictionWindowSeconds: 3600")
        );
    }
}
