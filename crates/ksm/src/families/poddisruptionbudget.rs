//! `kube_poddisruptionbudget_*` (policy/v1).

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};

use super::util::{annotations_family, created, deletion_timestamp, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

/// Upstream's status is a value, so an unset count reads as zero.
fn status_value(
    p: &PodDisruptionBudget,
    field: fn(&PodDisruptionBudgetStatus) -> Option<i64>,
) -> Vec<Metric> {
    vec![bare(p.status.as_ref().and_then(field).unwrap_or(0) as f64)]
}

pub fn families() -> ResourceFamilies<PodDisruptionBudget> {
    ResourceFamilies {
        resource: "poddisruptionbudgets",
        identity_keys: &["namespace", "poddisruptionbudget"],
        identity: |p| {
            vec![
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_poddisruptionbudget_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, ctx| annotations_family(&p.metadata, ctx),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, ctx| labels_family(&p.metadata, ctx),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| created(&p.metadata),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_status_current_healthy",
                help: "Current number of healthy pods",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| status_value(p, |s| s.current_healthy.map(i64::from)),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_status_desired_healthy",
                help: "Minimum desired number of healthy pods",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| status_value(p, |s| s.desired_healthy.map(i64::from)),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_status_pod_disruptions_allowed",
                help: "Number of pod disruptions that are currently allowed",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| status_value(p, |s| s.disruptions_allowed.map(i64::from)),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_status_expected_pods",
                help: "Total number of pods counted by this disruption budget",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| status_value(p, |s| s.expected_pods.map(i64::from)),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_status_observed_generation",
                help: "Most recent generation observed when updating this PDB status",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| status_value(p, |s| s.observed_generation),
            },
            FamilySpec {
                name: "kube_poddisruptionbudget_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| deletion_timestamp(&p.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn pdb(v: serde_json::Value) -> PodDisruptionBudget {
        serde_json::from_value(v).expect("valid pdb")
    }

    #[test]
    fn golden_pdb1() {
        let p = pdb(serde_json::json!({
            "metadata": {
                "name": "pdb1", "namespace": "ns1", "generation": 21,
                "creationTimestamp": "2017-07-14T02:40:00Z", "deletionTimestamp": "2027-01-15T08:00:00Z"
            },
            "status": { "currentHealthy": 12, "desiredHealthy": 10, "disruptionsAllowed": 2, "expectedPods": 15, "observedGeneration": 111 }
        }));
        let want = r#"# HELP kube_poddisruptionbudget_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_poddisruptionbudget_annotations gauge
# HELP kube_poddisruptionbudget_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_poddisruptionbudget_labels gauge
# HELP kube_poddisruptionbudget_created [STABLE] Unix creation timestamp
# TYPE kube_poddisruptionbudget_created gauge
kube_poddisruptionbudget_created{namespace="ns1",poddisruptionbudget="pdb1"} 1.5e+09
# HELP kube_poddisruptionbudget_status_current_healthy [STABLE] Current number of healthy pods
# TYPE kube_poddisruptionbudget_status_current_healthy gauge
kube_poddisruptionbudget_status_current_healthy{namespace="ns1",poddisruptionbudget="pdb1"} 12
# HELP kube_poddisruptionbudget_status_desired_healthy [STABLE] Minimum desired number of healthy pods
# TYPE kube_poddisruptionbudget_status_desired_healthy gauge
kube_poddisruptionbudget_status_desired_healthy{namespace="ns1",poddisruptionbudget="pdb1"} 10
# HELP kube_poddisruptionbudget_status_pod_disruptions_allowed [STABLE] Number of pod disruptions that are currently allowed
# TYPE kube_poddisruptionbudget_status_pod_disruptions_allowed gauge
kube_poddisruptionbudget_status_pod_disruptions_allowed{namespace="ns1",poddisruptionbudget="pdb1"} 2
# HELP kube_poddisruptionbudget_status_expected_pods [STABLE] Total number of pods counted by this disruption budget
# TYPE kube_poddisruptionbudget_status_expected_pods gauge
kube_poddisruptionbudget_status_expected_pods{namespace="ns1",poddisruptionbudget="pdb1"} 15
# HELP kube_poddisruptionbudget_status_observed_generation [STABLE] Most recent generation observed when updating this PDB status
# TYPE kube_poddisruptionbudget_status_observed_generation gauge
kube_poddisruptionbudget_status_observed_generation{namespace="ns1",poddisruptionbudget="pdb1"} 111
# HELP kube_poddisruptionbudget_deletion_timestamp Unix deletion timestamp
# TYPE kube_poddisruptionbudget_deletion_timestamp gauge
kube_poddisruptionbudget_deletion_timestamp{namespace="ns1",poddisruptionbudget="pdb1"} 1.8e+09
"#;
        assert_eq!(
            families().render_document(&p, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn without_status_reads_zero_and_labels_allowlisted() {
        let p = pdb(
            serde_json::json!({ "metadata": { "name": "pdb2", "namespace": "ns2", "labels": { "app": "web" } } }),
        );
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::None,
        };
        let doc: String = families()
            .render_document(&p, &ctx)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let want = r#"kube_poddisruptionbudget_labels{namespace="ns2",poddisruptionbudget="pdb2",label_app="web"} 1
kube_poddisruptionbudget_status_current_healthy{namespace="ns2",poddisruptionbudget="pdb2"} 0
kube_poddisruptionbudget_status_desired_healthy{namespace="ns2",poddisruptionbudget="pdb2"} 0
kube_poddisruptionbudget_status_pod_disruptions_allowed{namespace="ns2",poddisruptionbudget="pdb2"} 0
kube_poddisruptionbudget_status_expected_pods{namespace="ns2",poddisruptionbudget="pdb2"} 0
kube_poddisruptionbudget_status_observed_generation{namespace="ns2",poddisruptionbudget="pdb2"} 0
"#;
        assert_eq!(doc, want);
    }
}
