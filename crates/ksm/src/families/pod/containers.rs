//! Per-container families. Regular and init containers share every rule; the
//! family list picks which containers and statuses a generator reads.

use std::collections::BTreeMap;

use ferrocrane_core::exposition::{Metric, sanitize_label_name};
use ferrocrane_core::quantity::Quantity;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Pod, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use super::{go_unix, node_name};
use crate::families::resource_name::is_extended_resource_name;
use crate::families::sample;
use crate::families::util::{bool_f64, convert_value_to_f64};

/// The containers of the pod spec.
pub(super) fn containers(p: &Pod) -> &[Container] {
    p.spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or(&[])
}

/// The init containers of the pod spec.
pub(super) fn init_containers(p: &Pod) -> &[Container] {
    p.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[])
}

/// `status.containerStatuses`.
pub(super) fn statuses(p: &Pod) -> &[ContainerStatus] {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[])
}

/// `status.initContainerStatuses`.
pub(super) fn init_statuses(p: &Pod) -> &[ContainerStatus] {
    p.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or(&[])
}

fn state(cs: &ContainerStatus) -> Option<&ContainerState> {
    cs.state.as_ref()
}

fn terminated(cs: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    state(cs).and_then(|s| s.terminated.as_ref())
}

fn last_terminated(cs: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    cs.last_state.as_ref().and_then(|s| s.terminated.as_ref())
}

/// `kube_pod_container_info`: one sample per (spec container, status of that name).
pub(super) fn container_info(
    containers: &[Container],
    statuses: &[ContainerStatus],
) -> Vec<Metric> {
    let mut out = Vec::new();
    for c in containers {
        for cs in statuses.iter().filter(|cs| cs.name == c.name) {
            out.push(sample(
                &[
                    "container",
                    "image_spec",
                    "image",
                    "image_id",
                    "container_id",
                ],
                vec![
                    cs.name.clone(),
                    c.image.clone().unwrap_or_default(),
                    cs.image.clone(),
                    cs.image_id.clone(),
                    cs.container_id.clone().unwrap_or_default(),
                ],
                1.0,
            ));
        }
    }
    out
}

/// `kube_pod_init_container_info`: as [`container_info`] plus the container's restart policy.
pub(super) fn init_container_info(
    containers: &[Container],
    statuses: &[ContainerStatus],
) -> Vec<Metric> {
    let mut out = Vec::new();
    for c in containers {
        let restart_policy = c.restart_policy.clone().unwrap_or_default();
        for cs in statuses.iter().filter(|cs| cs.name == c.name) {
            out.push(sample(
                &[
                    "container",
                    "image_spec",
                    "image",
                    "image_id",
                    "container_id",
                    "restart_policy",
                ],
                vec![
                    cs.name.clone(),
                    c.image.clone().unwrap_or_default(),
                    cs.image.clone(),
                    cs.image_id.clone(),
                    cs.container_id.clone().unwrap_or_default(),
                    restart_policy.clone(),
                ],
                1.0,
            ));
        }
    }
    out
}

pub(super) fn limits(r: &ResourceRequirements) -> Option<&BTreeMap<String, KubeQuantity>> {
    r.limits.as_ref()
}

pub(super) fn requests(r: &ResourceRequirements) -> Option<&BTreeMap<String, KubeQuantity>> {
    r.requests.as_ref()
}

/// `kube_pod_[init_]container_resource_{limits,requests}`. Upstream walks a Go map
/// (random order); we emit resources in key order.
pub(super) fn resources(
    p: &Pod,
    containers: &[Container],
    pick: fn(&ResourceRequirements) -> Option<&BTreeMap<String, KubeQuantity>>,
) -> Vec<Metric> {
    const KEYS: &[&str] = &["container", "node", "resource", "unit"];
    let node = node_name(p);
    let mut out = Vec::new();
    for c in containers {
        let Some(map) = c.resources.as_ref().and_then(pick) else {
            continue;
        };
        for (name, q) in map {
            let Ok(q) = Quantity::parse(&q.0) else {
                continue;
            };
            let mut push = |unit: &str, value: f64| {
                out.push(sample(
                    KEYS,
                    vec![
                        c.name.clone(),
                        node.to_string(),
                        sanitize_label_name(name),
                        unit.to_string(),
                    ],
                    value,
                ));
            };
            match name.as_str() {
                "cpu" => push("core", convert_value_to_f64(&q)),
                "storage" | "ephemeral-storage" | "memory" => push("byte", q.value() as f64),
                _ => {
                    if name.starts_with("hugepages-") {
                        push("byte", q.value() as f64);
                    }
                    if name.starts_with("attachable-volumes-") {
                        push("byte", q.value() as f64);
                    }
                    if is_extended_resource_name(name) {
                        push("integer", q.value() as f64);
                    }
                }
            }
        }
    }
    out
}

/// `kube_pod_[init_]container_state_started`: running start, else terminated start.
pub(super) fn state_started(statuses: &[ContainerStatus]) -> Vec<Metric> {
    statuses
        .iter()
        .filter_map(|cs| {
            let s = state(cs)?;
            let started = if let Some(r) = &s.running {
                r.started_at.as_ref()
            } else if let Some(t) = &s.terminated {
                t.started_at.as_ref()
            } else {
                return None;
            };
            Some(sample(
                &["container"],
                vec![cs.name.clone()],
                go_unix(started),
            ))
        })
        .collect()
}

/// `*_last_terminated_reason`.
pub(super) fn last_terminated_reason(statuses: &[ContainerStatus]) -> Vec<Metric> {
    statuses
        .iter()
        .filter_map(|cs| {
            let t = last_terminated(cs)?;
            Some(sample(
                &["container", "reason"],
                vec![cs.name.clone(), t.reason.clone().unwrap_or_default()],
                1.0,
            ))
        })
        .collect()
}

/// `*_last_terminated_exitcode`.
pub(super) fn last_terminated_exitcode(statuses: &[ContainerStatus]) -> Vec<Metric> {
    statuses
        .iter()
        .filter_map(|cs| {
            let t = last_terminated(cs)?;
            Some(sample(
                &["container"],
                vec![cs.name.clone()],
                f64::from(t.exit_code),
            ))
        })
        .collect()
}

/// `*_last_terminated_timestamp`.
pub(super) fn last_terminated_timestamp(statuses: &[ContainerStatus]) -> Vec<Metric> {
    statuses
        .iter()
        .filter_map(|cs| {
            let t = last_terminated(cs)?;
            Some(sample(
                &["container"],
                vec![cs.name.clone()],
                go_unix(t.finished_at.as_ref()),
            ))
        })
        .collect()
}

/// One sample per status, labelled with the container name.
fn per_status(statuses: &[ContainerStatus], value: fn(&ContainerStatus) -> f64) -> Vec<Metric> {
    statuses
        .iter()
        .map(|cs| sample(&["container"], vec![cs.name.clone()], value(cs)))
        .collect()
}

pub(super) fn status_ready(statuses: &[ContainerStatus]) -> Vec<Metric> {
    per_status(statuses, |cs| bool_f64(cs.ready))
}

pub(super) fn restarts_total(statuses: &[ContainerStatus]) -> Vec<Metric> {
    per_status(statuses, |cs| f64::from(cs.restart_count))
}

pub(super) fn status_running(statuses: &[ContainerStatus]) -> Vec<Metric> {
    per_status(statuses, |cs| {
        bool_f64(state(cs).is_some_and(|s| s.running.is_some()))
    })
}

pub(super) fn status_terminated(statuses: &[ContainerStatus]) -> Vec<Metric> {
    per_status(statuses, |cs| bool_f64(terminated(cs).is_some()))
}

pub(super) fn status_waiting(statuses: &[ContainerStatus]) -> Vec<Metric> {
    per_status(statuses, |cs| {
        bool_f64(state(cs).is_some_and(|s| s.waiting.is_some()))
    })
}

/// `*_status_terminated_reason`: only containers currently terminated.
pub(super) fn terminated_reason(statuses: &[ContainerStatus]) -> Vec<Metric> {
    statuses
        .iter()
        .filter_map(|cs| {
            let t = terminated(cs)?;
            Some(sample(
                &["container", "reason"],
                vec![cs.name.clone(), t.reason.clone().unwrap_or_default()],
                1.0,
            ))
        })
        .collect()
}

/// `*_status_waiting_reason`: only containers currently waiting.
pub(super) fn waiting_reason(statuses: &[ContainerStatus]) -> Vec<Metric> {
    statuses
        .iter()
        .filter_map(|cs| {
            let w = state(cs)?.waiting.as_ref()?;
            Some(sample(
                &["container", "reason"],
                vec![cs.name.clone(), w.reason.clone().unwrap_or_default()],
                1.0,
            ))
        })
        .collect()
}

/// `kube_pod_completion_time`: the latest finish time of a terminated container,
/// only when it is after the epoch (upstream's `lastFinishTime > 0`).
pub(super) fn completion_time(p: &Pod) -> Vec<Metric> {
    let mut last = 0.0_f64;
    for cs in statuses(p) {
        if let Some(t) = terminated(cs) {
            let finished = go_unix(t.finished_at.as_ref());
            if last == 0.0 || last < finished {
                last = finished;
            }
        }
    }
    if last > 0.0 {
        vec![crate::families::bare(last)]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_resource_names() {
        assert!(is_extended_resource_name("nvidia.com/gpu"));
        assert!(is_extended_resource_name("example.com/Foo_bar"));
        assert!(!is_extended_resource_name("kubernetes.io/foo"));
        assert!(!is_extended_resource_name("cpu"));
        assert!(!is_extended_resource_name("hugepages-2Mi"));
        assert!(!is_extended_resource_name("Example.com/gpu"));
        assert!(!is_extended_resource_name("a/b/c"));
        assert!(!is_extended_resource_name("example.com/"));
        assert!(!is_extended_resource_name("example.com/-gpu"));
    }
}
