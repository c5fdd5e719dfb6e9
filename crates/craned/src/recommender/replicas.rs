//! The Replicas recommender: the fewest replicas that keep utilization under target.
//!
//! Crane (`recommender/replicas`): filter — current replicas ≥ `workload-min-replicas` (1), at
//! least one pod, and ≥ `pod-available-ratio` (0.5) of pods available for
//! `pod-min-ready-seconds` (30); then replicas = max(`default-min-replicas` (1, at least 1),
//! ceil(p95(cpu) / (`cpu-target-utilization` 0.5 × pod cpu request)),
//! ceil(p95(mem) / (`mem-target-utilization` 0.5 × pod memory request))), where p95 is
//! montanaflynn's percentile over the workload's total usage history (CPU history joined with
//! the DSP prediction of the next week when there is one).
//!
//! Difference, on purpose: the memory percentile is taken over the memory series (Crane passes
//! the CPU series as memory, so its memory bound is CPU cores divided by bytes). A pod template
//! without a request for a resource skips that resource's bound (Crane divides by zero).

use serde_json::json;

use super::config::{Config, ConfigValueError};
use super::{Proposal, RecommendError, to_yaml};
use crate::crd::actions;
use crate::prediction::{Sample, stats};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicasConfig {
    pub workload_min_replicas: i64,
    pub pod_min_ready_seconds: i64,
    pub pod_available_ratio: f64,
    /// In percent (Crane multiplies the configured fraction by 100).
    pub cpu_percentile: f64,
    pub mem_percentile: f64,
    pub default_min_replicas: i64,
    pub cpu_target_utilization: f64,
    pub mem_target_utilization: f64,
}

impl ReplicasConfig {
    pub fn from_config(c: &Config) -> Result<Self, ConfigValueError> {
        let pct = |key: &str| -> Result<f64, ConfigValueError> {
            let v = c.get_f64(key, 0.95)?;
            if v > 0.0 && v <= 1.0 {
                Ok(v * 100.0)
            } else {
                Err(ConfigValueError::new(key, "must be in (0, 1]"))
            }
        };
        let util = |key: &str| -> Result<f64, ConfigValueError> {
            let v = c.get_f64(key, 0.5)?;
            if v > 0.0 {
                Ok(v)
            } else {
                Err(ConfigValueError::new(key, "must be positive"))
            }
        };
        Ok(ReplicasConfig {
            workload_min_replicas: c.get_i64("workload-min-replicas", 1)?,
            pod_min_ready_seconds: c.get_i64("pod-min-ready-seconds", 30)?,
            pod_available_ratio: c.get_f64("pod-available-ratio", 0.5)?,
            cpu_percentile: pct("cpu-percentile")?,
            mem_percentile: pct("mem-percentile")?,
            default_min_replicas: c.get_i64("default-min-replicas", 1)?,
            cpu_target_utilization: util("cpu-target-utilization")?,
            mem_target_utilization: util("mem-target-utilization")?,
        })
    }

    /// Crane's Filter. `available_pods`: pods available for at least `pod_min_ready_seconds`.
    pub fn filter(
        &self,
        current_replicas: i32,
        pods: usize,
        available_pods: usize,
    ) -> Result<(), RecommendError> {
        if i64::from(current_replicas) < self.workload_min_replicas {
            return Err(RecommendError::NotApplicable(format!(
                "workload replicas {current_replicas} should be larger than {}",
                self.workload_min_replicas
            )));
        }
        if pods == 0 {
            return Err(RecommendError::NotApplicable(
                "existing pods should be larger than 0".into(),
            ));
        }
        if available_pods == 0 {
            return Err(RecommendError::NotApplicable(
                "pod available number must larger than zero".into(),
            ));
        }
        let ratio = available_pods as f64 / pods as f64;
        if ratio < self.pod_available_ratio {
            return Err(RecommendError::NotApplicable(format!(
                "pod available ratio is {ratio:.3} less than {:.3}",
                self.pod_available_ratio
            )));
        }
        Ok(())
    }
}

/// The workload's facts: total usage series (summed over pods) and one pod's requests.
#[derive(Debug, Clone, Copy)]
pub struct ReplicasInput<'a> {
    pub cpu_usage: &'a [Sample],
    /// The DSP prediction of CPU for the next week, if any; joined to the history.
    pub cpu_predicted: &'a [Sample],
    pub memory_usage: &'a [Sample],
    /// Sum of the pod template's containers' requests.
    pub pod_cpu_request_millis: i64,
    pub pod_memory_request_bytes: i64,
    pub current_replicas: i32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinReplicas {
    pub replicas: i32,
    /// Highest CPU usage seen (history and prediction), cores.
    pub cpu_max: f64,
    /// The CPU percentile, cores.
    pub cpu_percentile: f64,
}

/// Crane's `ProposeMinReplicas`: `request` in milli-units (millicores, or bytes × 1000).
pub fn propose_min_replicas(
    cfg: &ReplicasConfig,
    usage: f64,
    request_milli: i64,
    target: f64,
) -> i32 {
    let floor =
        i32::try_from(cfg.default_min_replicas.clamp(1, i64::from(i32::MAX))).unwrap_or(i32::MAX);
    let min = (usage / (target * request_milli as f64 / 1000.0)).ceil();
    if min.is_finite() && min > f64::from(floor) {
        #[allow(
            clippy::cast_possible_truncation,
            reason = "finite, above the floor and capped at i32::MAX"
        )]
        let min = min.min(f64::from(i32::MAX)) as i32;
        min
    } else {
        floor
    }
}

/// Crane's `GetMinReplicas` (with the memory series for memory). `scratch` is reused.
pub fn min_replicas(
    cfg: &ReplicasConfig,
    input: &ReplicasInput<'_>,
    scratch: &mut Vec<f64>,
) -> Result<MinReplicas, RecommendError> {
    scratch.clear();
    scratch.extend(
        input
            .cpu_usage
            .iter()
            .chain(input.cpu_predicted)
            .map(|s| s.value),
    );
    let cpu_max = scratch.iter().copied().fold(0.0, f64::max);
    let cpu_p = stats::percentile(scratch, cfg.cpu_percentile).ok_or_else(|| {
        RecommendError::InsufficientData("not enough cpu usage samples for the percentile".into())
    })?;
    let mut replicas = propose_min_replicas(cfg, 0.0, 1, 1.0);
    if input.pod_cpu_request_millis > 0 {
        replicas = replicas.max(propose_min_replicas(
            cfg,
            cpu_p,
            input.pod_cpu_request_millis,
            cfg.cpu_target_utilization,
        ));
    }
    if input.pod_memory_request_bytes > 0 {
        scratch.clear();
        scratch.extend(input.memory_usage.iter().map(|s| s.value));
        let mem_p = stats::percentile(scratch, cfg.mem_percentile).ok_or_else(|| {
            RecommendError::InsufficientData(
                "not enough memory usage samples for the percentile".into(),
            )
        })?;
        replicas = replicas.max(propose_min_replicas(
            cfg,
            mem_p,
            input.pod_memory_request_bytes.saturating_mul(1000),
            cfg.mem_target_utilization,
        ));
    }
    Ok(MinReplicas {
        replicas,
        cpu_max,
        cpu_percentile: cpu_p,
    })
}

/// Crane's status for Replicas (action always Patch, as Crane's).
pub fn proposal(replicas: i32, current_replicas: i32) -> Proposal {
    Proposal {
        recommended_value: to_yaml(&json!({"replicasRecommendation": {"replicas": replicas}})),
        recommended_info: json!({"spec": {"replicas": replicas}}).to_string(),
        current_info: json!({"spec": {"replicas": current_replicas}}).to_string(),
        action: actions::PATCH,
        description: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(v: &[f64]) -> Vec<Sample> {
        v.iter()
            .enumerate()
            .map(|(i, &v)| Sample::new(i as i64 * 60, v))
            .collect()
    }

    fn cfg() -> ReplicasConfig {
        ReplicasConfig::from_config(&Config::default()).unwrap()
    }

    #[test]
    fn defaults_are_cranes() {
        let c = cfg();
        assert_eq!(c.cpu_percentile, 95.0);
        assert_eq!(c.mem_percentile, 95.0);
        assert_eq!(c.cpu_target_utilization, 0.5);
        assert_eq!(c.workload_min_replicas, 1);
        assert_eq!(c.pod_min_ready_seconds, 30);
        assert_eq!(c.pod_available_ratio, 0.5);
        assert!(
            ReplicasConfig::from_config(&Config::from_pairs([("cpu-percentile", "95")])).is_err()
        );
    }

    #[test]
    fn cpu_bound_from_p95_over_target_times_request() {
        // 1..=20 cores: p95 (index 19, whole) = 19; 19 / (0.5 × 2 cores) = 19.
        let cpu = series(&(1..=20).map(f64::from).collect::<Vec<_>>());
        let mem = series(&[1.0e9; 20]);
        let input = ReplicasInput {
            cpu_usage: &cpu,
            cpu_predicted: &[],
            memory_usage: &mem,
            pod_cpu_request_millis: 2000,
            pod_memory_request_bytes: 4_000_000_000,
            current_replicas: 3,
        };
        let r = min_replicas(&cfg(), &input, &mut Vec::new()).unwrap();
        assert_eq!(
            r,
            MinReplicas {
                replicas: 19,
                cpu_max: 20.0,
                cpu_percentile: 19.0
            }
        );
    }

    #[test]
    fn memory_bound_uses_the_memory_series() {
        // CPU needs 1 replica; memory p95 = 10 GB over 0.5 × 1 GB = 20 replicas.
        let cpu = series(&[0.1; 20]);
        let mem = series(&[10.0e9; 20]);
        let input = ReplicasInput {
            cpu_usage: &cpu,
            cpu_predicted: &[],
            memory_usage: &mem,
            pod_cpu_request_millis: 1000,
            pod_memory_request_bytes: 1_000_000_000,
            current_replicas: 3,
        };
        assert_eq!(
            min_replicas(&cfg(), &input, &mut Vec::new())
                .unwrap()
                .replicas,
            20
        );
    }

    #[test]
    fn prediction_joins_history_and_min_replicas_floor() {
        let cpu = series(&[0.1; 10]);
        let predicted = series(&[8.0; 10]);
        let input = ReplicasInput {
            cpu_usage: &cpu,
            cpu_predicted: &predicted,
            memory_usage: &[],
            pod_cpu_request_millis: 1000,
            pod_memory_request_bytes: 0,
            current_replicas: 1,
        };
        // 20 samples, p95 → index 19 → 8.0; 8 / 0.5 = 16.
        assert_eq!(
            min_replicas(&cfg(), &input, &mut Vec::new())
                .unwrap()
                .replicas,
            16
        );
        let c = ReplicasConfig {
            default_min_replicas: 30,
            ..cfg()
        };
        assert_eq!(
            min_replicas(&c, &input, &mut Vec::new()).unwrap().replicas,
            30
        );
        let idle = ReplicasInput {
            cpu_predicted: &[],
            ..input
        };
        assert_eq!(
            min_replicas(&cfg(), &idle, &mut Vec::new())
                .unwrap()
                .replicas,
            1
        );
        let empty = ReplicasInput {
            cpu_usage: &[],
            cpu_predicted: &[],
            ..input
        };
        assert!(matches!(
            min_replicas(&cfg(), &empty, &mut Vec::new()),
            Err(RecommendError::InsufficientData(_))
        ));
    }

    #[test]
    fn filter_like_crane() {
        let c = cfg();
        assert!(c.filter(0, 1, 1).is_err());
        assert!(c.filter(2, 0, 0).is_err());
        assert!(c.filter(2, 2, 0).is_err());
        assert!(c.filter(3, 3, 1).is_err());
        assert!(c.filter(2, 2, 1).is_ok());
    }

    #[test]
    fn proposal_patches_replicas() {
        let p = proposal(4, 2);
        assert_eq!(
            p.recommended_value,
            "replicasRecommendation:\n  replicas: 4\n"
        );
        assert_eq!(p.recommended_info, r#"{"spec":{"replicas":4}}"#);
        assert_eq!(p.current_info, r#"{"spec":{"replicas":2}}"#);
        assert_eq!(p.action, "Patch");
    }
}
