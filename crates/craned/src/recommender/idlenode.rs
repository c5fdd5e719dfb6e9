//! The IdleNode recommender: nodes that only run DaemonSet pods or whose utilization stays low.
//!
//! Crane: a node whose pods are all owned by DaemonSets is idle ("Node is owned by DaemonSet").
//! Otherwise each configured threshold (`cpu-usage-utilization`, `memory-usage-utilization`,
//! `cpu-request-utilization`, `memory-request-utilization`; 0 = unchecked, at least one must be
//! set) must not be exceeded by the `cpu-percentile`/`memory-percentile` (0.99) of its 7-day
//! series. Difference, on purpose: a pod with no owner counts as a workload (Crane's loop counts
//! it as a DaemonSet pod, so a node running only bare pods would be called idle).

use super::config::{Config, ConfigValueError};
use super::{Proposal, RecommendError, first_busy};
use crate::crd::actions;
use crate::prediction::Sample;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleNodeConfig {
    pub cpu_request_utilization: f64,
    pub cpu_usage_utilization: f64,
    /// Percent.
    pub cpu_percentile: f64,
    pub memory_request_utilization: f64,
    pub memory_usage_utilization: f64,
    pub memory_percentile: f64,
}

impl IdleNodeConfig {
    pub fn from_config(c: &Config) -> Result<Self, ConfigValueError> {
        Ok(IdleNodeConfig {
            cpu_request_utilization: c.get_f64("cpu-request-utilization", 0.0)?,
            cpu_usage_utilization: c.get_f64("cpu-usage-utilization", 0.0)?,
            cpu_percentile: c.get_f64("cpu-percentile", 0.99)? * 100.0,
            memory_request_utilization: c.get_f64("memory-request-utilization", 0.0)?,
            memory_usage_utilization: c.get_f64("memory-usage-utilization", 0.0)?,
            memory_percentile: c.get_f64("memory-percentile", 0.99)? * 100.0,
        })
    }
}

/// The node's facts: the owner kinds of each pod on it (empty for a bare pod) and the
/// utilization series (ratios) of the configured checks.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdleNodeInput<'a> {
    pub pod_owner_kinds: &'a [&'a [&'a str]],
    pub cpu_usage_utilization: &'a [Sample],
    pub memory_usage_utilization: &'a [Sample],
    pub cpu_request_utilization: &'a [Sample],
    pub memory_request_utilization: &'a [Sample],
}

/// Crane's first rule: every pod on the node (none counts too) is owned by a DaemonSet.
pub fn only_daemonset_pods(pod_owner_kinds: &[&[&str]]) -> bool {
    pod_owner_kinds
        .iter()
        .all(|owners| !owners.is_empty() && owners.iter().all(|k| *k == "DaemonSet"))
}

pub fn recommend(
    cfg: &IdleNodeConfig,
    node: &str,
    input: &IdleNodeInput<'_>,
) -> Result<Proposal, RecommendError> {
    let delete = |d: &str| Proposal {
        action: actions::DELETE,
        description: d.to_string(),
        ..Default::default()
    };
    if only_daemonset_pods(input.pod_owner_kinds) {
        return Ok(delete("Node is owned by DaemonSet"));
    }
    let checks = [
        (
            "cpu usage utilization",
            cfg.cpu_usage_utilization,
            cfg.cpu_percentile,
            input.cpu_usage_utilization,
        ),
        (
            "memory usage utilization",
            cfg.memory_usage_utilization,
            cfg.memory_percentile,
            input.memory_usage_utilization,
        ),
        (
            "cpu request utilization",
            cfg.cpu_request_utilization,
            cfg.cpu_percentile,
            input.cpu_request_utilization,
        ),
        (
            "memory request utilization",
            cfg.memory_request_utilization,
            cfg.memory_percentile,
            input.memory_request_utilization,
        ),
    ];
    if checks.iter().all(|c| c.1 == 0.0) {
        return Err(RecommendError::NotApplicable(format!(
            "Node {node} is not a idle node"
        )));
    }
    if let Some((what, threshold, _, v)) = first_busy(checks)? {
        return Err(RecommendError::NotApplicable(format!(
            "Node {node} is not a idle node, because the config value is {threshold}, but the node {what} is {v}"
        )));
    }
    Ok(delete("Node resource utilization is low"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(v: f64) -> Vec<Sample> {
        (0..100).map(|i| Sample::new(i * 60, v)).collect()
    }

    #[test]
    fn daemonset_only_node_is_idle() {
        let cfg = IdleNodeConfig::from_config(&Config::default()).unwrap();
        let ds: &[&str] = &["DaemonSet"];
        let p = recommend(
            &cfg,
            "n1",
            &IdleNodeInput {
                pod_owner_kinds: &[ds, ds],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            (p.action, p.description.as_str()),
            ("Delete", "Node is owned by DaemonSet")
        );
        // A bare pod is a workload.
        let bare: &[&str] = &[];
        let r = recommend(
            &cfg,
            "n1",
            &IdleNodeInput {
                pod_owner_kinds: &[ds, bare],
                ..Default::default()
            },
        );
        assert!(matches!(r, Err(RecommendError::NotApplicable(_))));
    }

    #[test]
    fn thresholds_on_percentiles() {
        let cfg = IdleNodeConfig::from_config(&Config::from_pairs([
            ("cpu-usage-utilization", "0.2"),
            ("memory-request-utilization", "0.3"),
        ]))
        .unwrap();
        let rs: &[&str] = &["ReplicaSet"];
        let low_cpu = flat(0.1);
        let low_mem = flat(0.25);
        let input = IdleNodeInput {
            pod_owner_kinds: &[rs],
            cpu_usage_utilization: &low_cpu,
            memory_request_utilization: &low_mem,
            ..Default::default()
        };
        let p = recommend(&cfg, "n1", &input).unwrap();
        assert_eq!(p.description, "Node resource utilization is low");
        let busy = flat(0.5);
        let r = recommend(
            &cfg,
            "n1",
            &IdleNodeInput {
                memory_request_utilization: &busy,
                ..input
            },
        );
        assert!(
            matches!(r, Err(RecommendError::NotApplicable(m)) if m.contains("memory request utilization is 0.5"))
        );
        let r = recommend(
            &cfg,
            "n1",
            &IdleNodeInput {
                cpu_usage_utilization: &[],
                ..input
            },
        );
        assert!(matches!(r, Err(RecommendError::InsufficientData(_))));
    }
}
