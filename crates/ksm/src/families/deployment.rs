//! `kube_deployment_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::util::{
    annotations_family, bool_f64, condition_status_values, created, deletion_timestamp,
    labels_family, owner_kind_name_family,
};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

/// Condition reasons the deployment controller sets; any other reason is reported as
/// `unknown` to bound the label's cardinality (upstream's `allowedDeploymentReasons`).
const ALLOWED_REASONS: &[&str] = &[
    "ReplicaSetUpdated",
    "ReplicaSetCreateError",
    "NewReplicaSetCreated",
    "FoundNewReplicaSet",
    "NewReplicaSetAvailable",
    "ProgressDeadlineExceeded",
    "DeploymentPaused",
    "DeploymentResumed",
    "MinimumReplicasAvailable",
    "MinimumReplicasUnavailable",
    "",
];

/// A status counter; an absent status or field counts as 0, as Go's zero value does.
fn status_value(d: &Deployment, field: fn(&DeploymentStatus) -> Option<f64>) -> Vec<Metric> {
    vec![bare(d.status.as_ref().and_then(field).unwrap_or(0.0))]
}

/// apimachinery's `intstr.GetScaledValueFromIntOrPercent`: an int as is, `"N%"` scaled
/// against `total` (rounded up or down); anything else, or nothing, is an error (None).
fn scaled_value(v: Option<&IntOrString>, total: i32, round_up: bool) -> Option<f64> {
    match v? {
        IntOrString::Int(i) => Some(f64::from(*i)),
        IntOrString::String(s) => {
            let percent: i64 = s.strip_suffix('%')?.parse().ok()?;
            let scaled = percent as f64 * f64::from(total) / 100.0;
            // Go converts the rounded float to int; the value is then reported as float64.
            #[allow(
                clippy::cast_possible_truncation,
                reason = "Go's int() of the rounded float, exact in range; out of range Rust saturates where Go's is undefined"
            )]
            Some(
                (if round_up {
                    scaled.ceil()
                } else {
                    scaled.floor()
                }) as i64 as f64,
            )
        }
    }
}

/// The rolling-update families: only with a rolling update, desired replicas and a
/// value that scales.
fn rolling_update(d: &Deployment, surge: bool) -> Vec<Metric> {
    let (Some(ru), Some(replicas)) = (
        d.spec
            .strategy
            .as_ref()
            .and_then(|s| s.rolling_update.as_ref()),
        d.spec.replicas,
    ) else {
        return Vec::new();
    };
    let value = if surge {
        ru.max_surge.as_ref()
    } else {
        ru.max_unavailable.as_ref()
    };
    scaled_value(value, replicas, surge)
        .map(|v| vec![bare(v)])
        .unwrap_or_default()
}

fn conditions(d: &Deployment) -> Vec<Metric> {
    let mut out = Vec::new();
    for c in d
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
    {
        let reason = c.reason.as_deref().unwrap_or("");
        let reason = if ALLOWED_REASONS.contains(&reason) {
            reason
        } else {
            "unknown"
        };
        let kind = c.type_.as_deref().unwrap_or("");
        let status = c.status.as_deref().unwrap_or("");
        for (label, value) in condition_status_values(status) {
            out.push(sample(
                &["reason", "condition", "status"],
                vec![reason.to_string(), kind.to_string(), label.to_string()],
                value,
            ));
        }
    }
    out
}

pub fn families() -> ResourceFamilies<Deployment> {
    ResourceFamilies {
        resource: "deployments",
        identity_keys: &["namespace", "deployment"],
        identity: |d| {
            vec![
                d.metadata.namespace.clone().unwrap_or_default(),
                d.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_deployment_owner",
                help: "Information about the Deployment's owner.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| owner_kind_name_family(&d.metadata),
            },
            FamilySpec {
                name: "kube_deployment_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| created(&d.metadata),
            },
            FamilySpec {
                name: "kube_deployment_status_replicas",
                help: "The number of replicas per deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_deployment_status_replicas_ready",
                help: "The number of ready replicas per deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.ready_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_deployment_status_replicas_available",
                help: "The number of available replicas per deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.available_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_deployment_status_replicas_unavailable",
                help: "The number of unavailable replicas per deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.unavailable_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_deployment_status_replicas_updated",
                help: "The number of updated replicas per deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.updated_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_deployment_status_terminating_replicas",
                help: "The number of terminating replicas per deployment.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                // A pointer upstream: nothing when unset.
                generate: |d, _| {
                    d.status
                        .as_ref()
                        .and_then(|s| s.terminating_replicas)
                        .map(|v| vec![bare(f64::from(v))])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_deployment_status_observed_generation",
                help: "The generation observed by the deployment controller.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.observed_generation.map(|g| g as f64)),
            },
            FamilySpec {
                name: "kube_deployment_status_condition",
                help: "The current status conditions of a deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| conditions(d),
            },
            FamilySpec {
                name: "kube_deployment_spec_replicas",
                help: "Number of desired pods for a deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| {
                    d.spec
                        .replicas
                        .map(|r| vec![bare(f64::from(r))])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_deployment_spec_paused",
                help: "Whether the deployment is paused and will not be processed by the deployment controller.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| vec![bare(bool_f64(d.spec.paused.unwrap_or(false)))],
            },
            FamilySpec {
                name: "kube_deployment_spec_strategy_rollingupdate_max_unavailable",
                help: "Maximum number of unavailable replicas during a rolling update of a deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| rolling_update(d, false),
            },
            FamilySpec {
                name: "kube_deployment_spec_strategy_rollingupdate_max_surge",
                help: "Maximum number of replicas that can be scheduled above the desired number of replicas during a rolling update of a deployment.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| rolling_update(d, true),
            },
            FamilySpec {
                name: "kube_deployment_metadata_generation",
                help: "Sequence number representing a specific generation of the desired state.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| vec![bare(d.metadata.generation.unwrap_or(0) as f64)],
            },
            FamilySpec {
                name: "kube_deployment_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| deletion_timestamp(&d.metadata),
            },
            FamilySpec {
                name: "kube_deployment_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |d, ctx| annotations_family(&d.metadata, ctx),
            },
            FamilySpec {
                name: "kube_deployment_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, ctx| labels_family(&d.metadata, ctx),
            },
        ],
    }
}

#[cfg(test)]
#[path = "deployment_tests.rs"]
mod tests;
