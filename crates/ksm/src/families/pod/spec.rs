//! Families read from the pod spec and metadata (owners, volumes, scheduling hints).

use std::collections::HashSet;

use ferrocrane_core::exposition::{Metric, kube_btree_labels_to_prometheus};
use ferrocrane_core::quantity::Quantity;
use k8s_openapi::api::core::v1::{Pod, PodSpec};

use crate::families::util::{bool_f64, convert_value_to_f64};
use crate::families::{bare, sample};

fn spec(p: &Pod) -> Option<&PodSpec> {
    p.spec.as_ref()
}

/// The `spec.overhead` entry for `resource`, as a parsed quantity.
fn overhead(p: &Pod, resource: &str) -> Option<Quantity> {
    let q = spec(p)?.overhead.as_ref()?.get(resource)?;
    Quantity::parse(&q.0).ok()
}

pub(super) fn overhead_cpu_cores(p: &Pod) -> Vec<Metric> {
    overhead(p, "cpu")
        .map(|q| vec![bare(convert_value_to_f64(&q))])
        .unwrap_or_default()
}

pub(super) fn overhead_memory_bytes(p: &Pod) -> Vec<Metric> {
    overhead(p, "memory")
        .map(|q| vec![bare(q.value() as f64)])
        .unwrap_or_default()
}

/// `kube_pod_resourceclaim_info`: one sample per `spec.resourceClaims` entry naming a
/// claim or a template; a template's claim name is resolved from the status.
pub(super) fn resourceclaim_info(p: &Pod) -> Vec<Metric> {
    let claims = spec(p)
        .and_then(|s| s.resource_claims.as_deref())
        .unwrap_or(&[]);
    let resolved = p
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_deref())
        .unwrap_or(&[]);
    claims
        .iter()
        .filter(|rc| rc.resource_claim_name.is_some() || rc.resource_claim_template_name.is_some())
        .map(|rc| {
            let claim = match &rc.resource_claim_name {
                Some(name) => name.clone(),
                // Like upstream's map, the last status of a name wins.
                None => resolved
                    .iter()
                    .rev()
                    .find(|s| s.name == rc.name && s.resource_claim_name.is_some())
                    .and_then(|s| s.resource_claim_name.clone())
                    .unwrap_or_default(),
            };
            sample(
                &[
                    "claim_name",
                    "resourceclaim_name",
                    "resourceclaim_template_name",
                ],
                vec![
                    rc.name.clone(),
                    claim,
                    rc.resource_claim_template_name.clone().unwrap_or_default(),
                ],
                1.0,
            )
        })
        .collect()
}

pub(super) fn restart_policy(p: &Pod) -> Vec<Metric> {
    let policy = spec(p)
        .and_then(|s| s.restart_policy.clone())
        .unwrap_or_default();
    vec![sample(&["type"], vec![policy], 1.0)]
}

pub(super) fn runtimeclass_name_info(p: &Pod) -> Vec<Metric> {
    spec(p)
        .and_then(|s| s.runtime_class_name.clone())
        .map(|name| vec![sample(&["runtimeclass_name"], vec![name], 1.0)])
        .unwrap_or_default()
}

/// `(volume, claim, ephemeral, read_only)` for each PVC-backed or ephemeral volume;
/// an ephemeral volume's claim is named `<pod>-<volume>` (`ephemeral.VolumeClaimName`).
fn claim_volumes(p: &Pod) -> Vec<(String, String, &'static str, bool)> {
    let pod_name = p.metadata.name.as_deref().unwrap_or("");
    spec(p)
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or(&[])
        .iter()
        .filter_map(|v| {
            if let Some(pvc) = &v.persistent_volume_claim {
                Some((
                    v.name.clone(),
                    pvc.claim_name.clone(),
                    "false",
                    pvc.read_only.unwrap_or(false),
                ))
            } else if v.ephemeral.is_some() {
                Some((
                    v.name.clone(),
                    format!("{pod_name}-{}", v.name),
                    "true",
                    false,
                ))
            } else {
                None
            }
        })
        .collect()
}

const VOLUME_KEYS: &[&str] = &["volume", "persistentvolumeclaim", "ephemeral"];

pub(super) fn pvc_info(p: &Pod) -> Vec<Metric> {
    claim_volumes(p)
        .into_iter()
        .map(|(volume, claim, ephemeral, _)| {
            sample(VOLUME_KEYS, vec![volume, claim, ephemeral.to_string()], 1.0)
        })
        .collect()
}

pub(super) fn pvc_readonly(p: &Pod) -> Vec<Metric> {
    claim_volumes(p)
        .into_iter()
        .map(|(volume, claim, ephemeral, ro)| {
            sample(
                VOLUME_KEYS,
                vec![volume, claim, ephemeral.to_string()],
                bool_f64(ro),
            )
        })
        .collect()
}

/// `kube_pod_tolerations`: one sample per distinct toleration, first occurrence order.
pub(super) fn tolerations(p: &Pod) -> Vec<Metric> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for t in spec(p)
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
    {
        let values = vec![
            t.key.clone().unwrap_or_default(),
            t.operator.clone().unwrap_or_default(),
            t.value.clone().unwrap_or_default(),
            t.effect.clone().unwrap_or_default(),
            t.toleration_seconds
                .map(|s| s.to_string())
                .unwrap_or_default(),
        ];
        if seen.insert(values.clone()) {
            out.push(sample(
                &["key", "operator", "value", "effect", "toleration_seconds"],
                values,
                1.0,
            ));
        }
    }
    out
}

/// `kube_pod_nodeselectors` (opt-in): every selector as `nodeselector_*`, always one sample.
pub(super) fn nodeselectors(p: &Pod) -> Vec<Metric> {
    let empty = Default::default();
    let selectors = spec(p)
        .and_then(|s| s.node_selector.as_ref())
        .unwrap_or(&empty);
    let (keys, values) = kube_btree_labels_to_prometheus("nodeselector", selectors);
    vec![Metric::new(
        keys.into_iter().map(Into::into).collect(),
        values,
        1.0,
    )]
}

pub(super) fn service_account(p: &Pod) -> Vec<Metric> {
    let name = spec(p)
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_default();
    vec![sample(&["service_account"], vec![name], 1.0)]
}

pub(super) fn scheduler(p: &Pod) -> Vec<Metric> {
    let name = spec(p)
        .and_then(|s| s.scheduler_name.clone())
        .unwrap_or_default();
    vec![sample(&["name"], vec![name], 1.0)]
}
