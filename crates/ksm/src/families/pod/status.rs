//! Families read from the pod status (phase, conditions, reasons, addresses).

use std::net::{Ipv4Addr, Ipv6Addr};

use ferrocrane_core::exposition::Metric;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};

use super::containers::statuses;
use super::{go_unix, node_name};
use crate::families::util::{bool_f64, condition_status_samples, unix_seconds};
use crate::families::{bare, sample};

/// Reasons `kube_pod_status_reason` reports by name; any other `status.reason` is `Other`.
const POD_STATUS_REASONS: &[&str] = &[
    "Evicted",
    "NodeAffinity",
    "NodeLost",
    "PreemptionByScheduler",
    "SchedulingGated",
    "Shutdown",
    "TerminationByKubelet",
    "UnexpectedAdmissionError",
];

/// `DisruptionTarget` condition reasons reported by name; others are `Other`.
const DISRUPTION_REASONS: &[&str] = &[
    "PreemptionByScheduler",
    "DeletionByTaintManager",
    "EvictionByEvictionAPI",
    "DeletionByPodGC",
    "TerminationByKubelet",
];

fn status(p: &Pod) -> Option<&PodStatus> {
    p.status.as_ref()
}

fn conditions(p: &Pod) -> &[PodCondition] {
    status(p)
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

/// `kube_pod_info`: addresses, node, controller, priority class and host network.
pub(super) fn info(p: &Pod) -> Vec<Metric> {
    let controller = p
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let spec = p.spec.as_ref();
    let st = status(p);
    vec![sample(
        &[
            "host_ip",
            "pod_ip",
            "node",
            "created_by_kind",
            "created_by_name",
            "priority_class",
            "host_network",
        ],
        vec![
            st.and_then(|s| s.host_ip.clone()).unwrap_or_default(),
            st.and_then(|s| s.pod_ip.clone()).unwrap_or_default(),
            node_name(p).to_string(),
            controller.map(|o| o.kind.clone()).unwrap_or_default(),
            controller.map(|o| o.name.clone()).unwrap_or_default(),
            spec.and_then(|s| s.priority_class_name.clone())
                .unwrap_or_default(),
            spec.and_then(|s| s.host_network)
                .unwrap_or(false)
                .to_string(),
        ],
        1.0,
    )]
}

/// The IP family Go's `netip.ParseAddr(s)` + `Unmap()` gives, or None when it fails to parse.
fn ip_family(s: &str) -> Option<&'static str> {
    if s.parse::<Ipv4Addr>().is_ok() {
        return Some("4");
    }
    let addr = match s.split_once('%') {
        Some((_, "")) => return None,
        Some((addr, _zone)) => addr,
        None => s,
    };
    let v6: Ipv6Addr = addr.parse().ok()?;
    Some(if v6.to_ipv4_mapped().is_some() {
        "4"
    } else {
        "6"
    })
}

/// `kube_pod_ips`: each parsable `status.podIPs` entry with its family.
pub(super) fn ips(p: &Pod) -> Vec<Metric> {
    status(p)
        .and_then(|s| s.pod_ips.as_deref())
        .unwrap_or(&[])
        .iter()
        .filter_map(|ip| {
            let family = ip_family(&ip.ip)?;
            Some(sample(
                &["ip", "ip_family"],
                vec![ip.ip.clone(), family.to_string()],
                1.0,
            ))
        })
        .collect()
}

pub(super) fn start_time(p: &Pod) -> Vec<Metric> {
    status(p)
        .and_then(|s| s.start_time.as_ref())
        .map(|t| vec![bare(unix_seconds(t))])
        .unwrap_or_default()
}

/// A one-hot set over `options`, or nothing when the field is empty.
fn one_hot(key: &'static str, current: Option<&str>, options: &[&str]) -> Vec<Metric> {
    let current = current.unwrap_or("");
    if current.is_empty() {
        return Vec::new();
    }
    options
        .iter()
        .map(|o| sample(&[key], vec![o.to_string()], bool_f64(*o == current)))
        .collect()
}

pub(super) fn phase(p: &Pod) -> Vec<Metric> {
    let phase = status(p).and_then(|s| s.phase.as_deref());
    one_hot(
        "phase",
        phase,
        &["Pending", "Succeeded", "Failed", "Unknown", "Running"],
    )
}

pub(super) fn qos_class(p: &Pod) -> Vec<Metric> {
    let class = status(p).and_then(|s| s.qos_class.as_deref());
    one_hot(
        "qos_class",
        class,
        &["BestEffort", "Burstable", "Guaranteed"],
    )
}

/// Upstream's `addConditionMetrics` for every condition of type `type_`:
/// `condition="true|false|unknown"`, 1 for the one matching the status.
pub(super) fn condition_statuses(p: &Pod, type_: &str) -> Vec<Metric> {
    conditions(p)
        .iter()
        .filter(|c| c.type_ == type_)
        .flat_map(|c| condition_status_samples(&c.status))
        .collect()
}

/// The last transition time of every condition of type `type_` with status `status`.
pub(super) fn condition_time(p: &Pod, type_: &str, status: &str) -> Vec<Metric> {
    conditions(p)
        .iter()
        .filter(|c| c.type_ == type_ && c.status == status)
        .map(|c| bare(go_unix(c.last_transition_time.as_ref())))
        .collect()
}

/// `kube_pod_status_unschedulable`: 1 per `PodScheduled=False` condition.
pub(super) fn unschedulable(p: &Pod) -> Vec<Metric> {
    conditions(p)
        .iter()
        .filter(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|_| bare(1.0))
        .collect()
}

fn has_status_reason(p: &Pod, reason: &str) -> bool {
    status(p).and_then(|s| s.reason.as_deref()) == Some(reason)
        || conditions(p)
            .iter()
            .any(|c| c.reason.as_deref() == Some(reason))
        || statuses(p).iter().any(|cs| {
            cs.state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .and_then(|t| t.reason.as_deref())
                == Some(reason)
        })
}

/// `kube_pod_status_reason`: each known reason found on the pod, its conditions or its
/// terminated containers, then `Other` for an unknown `status.reason`.
pub(super) fn reason(p: &Pod) -> Vec<Metric> {
    let mut out: Vec<Metric> = POD_STATUS_REASONS
        .iter()
        .filter(|r| has_status_reason(p, r))
        .map(|r| sample(&["reason"], vec![r.to_string()], 1.0))
        .collect();
    let own = status(p).and_then(|s| s.reason.as_deref()).unwrap_or("");
    if !own.is_empty() && !POD_STATUS_REASONS.contains(&own) {
        out.push(sample(&["reason"], vec!["Other".to_string()], 1.0));
    }
    out
}

/// `kube_pod_status_disruption_reason`: one sample per `DisruptionTarget` condition.
pub(super) fn disruption_reason(p: &Pod) -> Vec<Metric> {
    conditions(p)
        .iter()
        .filter(|c| c.type_ == "DisruptionTarget")
        .map(|c| {
            let reason = c.reason.as_deref().unwrap_or("");
            let reason = if DISRUPTION_REASONS.contains(&reason) {
                reason
            } else {
                "Other"
            };
            sample(&["reason"], vec![reason.to_string()], 1.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ip_family;

    #[test]
    fn ip_families_follow_go_netip() {
        assert_eq!(ip_family("10.0.0.1"), Some("4"));
        assert_eq!(ip_family("fd00::1"), Some("6"));
        assert_eq!(ip_family("::ffff:10.0.0.1"), Some("4"));
        assert_eq!(ip_family("fe80::1%eth0"), Some("6"));
        assert_eq!(ip_family("fe80::1%"), None);
        assert_eq!(ip_family("010.0.0.1"), None);
        assert_eq!(ip_family("not-an-ip"), None);
        assert_eq!(ip_family(""), None);
    }
}
