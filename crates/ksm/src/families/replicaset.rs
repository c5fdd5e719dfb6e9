//! `kube_replicaset_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};

use super::util::{annotations_family, created, labels_family, owner_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

/// A status counter; an absent status or field counts as 0, as Go's zero value does.
fn status_value(r: &ReplicaSet, field: fn(&ReplicaSetStatus) -> Option<f64>) -> Vec<Metric> {
    vec![bare(r.status.as_ref().and_then(field).unwrap_or(0.0))]
}

pub fn families() -> ResourceFamilies<ReplicaSet> {
    ResourceFamilies {
        resource: "replicasets",
        identity_keys: &["namespace", "replicaset"],
        identity: |r| {
            vec![
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_replicaset_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| created(&r.metadata),
            },
            FamilySpec {
                name: "kube_replicaset_status_replicas",
                help: "The number of replicas per ReplicaSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| Some(f64::from(s.replicas))),
            },
            FamilySpec {
                name: "kube_replicaset_status_fully_labeled_replicas",
                help: "The number of fully labeled replicas per ReplicaSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| s.fully_labeled_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_replicaset_status_ready_replicas",
                help: "The number of ready replicas per ReplicaSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| s.ready_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_replicaset_status_terminating_replicas",
                help: "The number of terminating replicas per ReplicaSet.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                // A pointer upstream: nothing when unset.
                generate: |r, _| {
                    r.status
                        .as_ref()
                        .and_then(|s| s.terminating_replicas)
                        .map(|v| vec![bare(f64::from(v))])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_replicaset_status_observed_generation",
                help: "The generation observed by the ReplicaSet controller.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| s.observed_generation.map(|g| g as f64)),
            },
            FamilySpec {
                name: "kube_replicaset_spec_replicas",
                help: "Number of desired pods for a ReplicaSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| {
                    r.spec
                        .replicas
                        .map(|v| vec![bare(f64::from(v))])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_replicaset_metadata_generation",
                help: "Sequence number representing a specific generation of the desired state.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| vec![bare(r.metadata.generation.unwrap_or(0) as f64)],
            },
            FamilySpec {
                name: "kube_replicaset_owner",
                help: "Information about the ReplicaSet's owner.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| owner_family(&r.metadata),
            },
            FamilySpec {
                name: "kube_replicaset_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| annotations_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_replicaset_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| labels_family(&r.metadata, ctx),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn replicaset(v: serde_json::Value) -> ReplicaSet {
        serde_json::from_value(v).expect("valid replicaset")
    }

    fn sample_lines(doc: &str) -> String {
        doc.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn families_match_reference_list() {
        let names: Vec<&str> = families().families.iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "kube_replicaset_created",
                "kube_replicaset_status_replicas",
                "kube_replicaset_status_fully_labeled_replicas",
                "kube_replicaset_status_ready_replicas",
                "kube_replicaset_status_terminating_replicas",
                "kube_replicaset_status_observed_generation",
                "kube_replicaset_spec_replicas",
                "kube_replicaset_metadata_generation",
                "kube_replicaset_owner",
                "kube_replicaset_annotations",
                "kube_replicaset_labels",
            ]
        );
    }

    #[test]
    fn golden_rs1_owned_by_deployment() {
        let r = replicaset(serde_json::json!({
            "metadata": {
                "name": "rs1", "namespace": "ns1", "generation": 21,
                "creationTimestamp": "2017-07-14T02:40:00Z",
                "ownerReferences": [
                    { "apiVersion": "apps/v1", "kind": "Deployment", "name": "dp-name", "uid": "u1", "controller": true }
                ],
                "labels": { "app": "example1" }
            },
            "spec": { "replicas": 5 },
            "status": {
                "replicas": 5, "fullyLabeledReplicas": 10, "readyReplicas": 5,
                "terminatingReplicas": 3, "observedGeneration": 1
            }
        }));
        let want = r#"# HELP kube_replicaset_created [STABLE] Unix creation timestamp
# TYPE kube_replicaset_created gauge
kube_replicaset_created{namespace="ns1",replicaset="rs1"} 1.5e+09
# HELP kube_replicaset_status_replicas [STABLE] The number of replicas per ReplicaSet.
# TYPE kube_replicaset_status_replicas gauge
kube_replicaset_status_replicas{namespace="ns1",replicaset="rs1"} 5
# HELP kube_replicaset_status_fully_labeled_replicas [STABLE] The number of fully labeled replicas per ReplicaSet.
# TYPE kube_replicaset_status_fully_labeled_replicas gauge
kube_replicaset_status_fully_labeled_replicas{namespace="ns1",replicaset="rs1"} 10
# HELP kube_replicaset_status_ready_replicas [STABLE] The number of ready replicas per ReplicaSet.
# TYPE kube_replicaset_status_ready_replicas gauge
kube_replicaset_status_ready_replicas{namespace="ns1",replicaset="rs1"} 5
# HELP kube_replicaset_status_terminating_replicas The number of terminating replicas per ReplicaSet.
# TYPE kube_replicaset_status_terminating_replicas gauge
kube_replicaset_status_terminating_replicas{namespace="ns1",replicaset="rs1"} 3
# HELP kube_replicaset_status_observed_generation [STABLE] The generation observed by the ReplicaSet controller.
# TYPE kube_replicaset_status_observed_generation gauge
kube_replicaset_status_observed_generation{namespace="ns1",replicaset="rs1"} 1
# HELP kube_replicaset_spec_replicas [STABLE] Number of desired pods for a ReplicaSet.
# TYPE kube_replicaset_spec_replicas gauge
kube_replicaset_spec_replicas{namespace="ns1",replicaset="rs1"} 5
# HELP kube_replicaset_metadata_generation [STABLE] Sequence number representing a specific generation of the desired state.
# TYPE kube_replicaset_metadata_generation gauge
kube_replicaset_metadata_generation{namespace="ns1",replicaset="rs1"} 21
# HELP kube_replicaset_owner [STABLE] Information about the ReplicaSet's owner.
# TYPE kube_replicaset_owner gauge
kube_replicaset_owner{namespace="ns1",replicaset="rs1",owner_kind="Deployment",owner_name="dp-name",owner_is_controller="true"} 1
# HELP kube_replicaset_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_replicaset_annotations gauge
# HELP kube_replicaset_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_replicaset_labels gauge
"#;
        assert_eq!(
            families().render_document(&r, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_rs2_no_owner_zero_replicas() {
        let r = replicaset(serde_json::json!({
            "metadata": { "name": "rs2", "namespace": "ns2", "generation": 14, "labels": { "app": "example2", "env": "ex" } },
            "spec": { "replicas": 0 },
            "status": { "replicas": 0, "fullyLabeledReplicas": 5, "readyReplicas": 0, "observedGeneration": 5 }
        }));
        let want = r#"kube_replicaset_status_replicas{namespace="ns2",replicaset="rs2"} 0
kube_replicaset_status_fully_labeled_replicas{namespace="ns2",replicaset="rs2"} 5
kube_replicaset_status_ready_replicas{namespace="ns2",replicaset="rs2"} 0
kube_replicaset_status_observed_generation{namespace="ns2",replicaset="rs2"} 5
kube_replicaset_spec_replicas{namespace="ns2",replicaset="rs2"} 0
kube_replicaset_metadata_generation{namespace="ns2",replicaset="rs2"} 14
kube_replicaset_owner{namespace="ns2",replicaset="rs2",owner_kind="",owner_name="",owner_is_controller=""} 1
kube_replicaset_labels{namespace="ns2",replicaset="rs2",label_app="example2",label_env="ex"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::None,
        };
        assert_eq!(sample_lines(&families().render_document(&r, &ctx)), want);
    }

    #[test]
    fn missing_status_and_replicas_and_non_controller_owner() {
        let r = replicaset(serde_json::json!({
            "metadata": {
                "name": "rs3", "namespace": "ns3",
                "ownerReferences": [ { "apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "u" } ]
            }
        }));
        let want = r#"kube_replicaset_status_replicas{namespace="ns3",replicaset="rs3"} 0
kube_replicaset_status_fully_labeled_replicas{namespace="ns3",replicaset="rs3"} 0
kube_replicaset_status_ready_replicas{namespace="ns3",replicaset="rs3"} 0
kube_replicaset_status_observed_generation{namespace="ns3",replicaset="rs3"} 0
kube_replicaset_metadata_generation{namespace="ns3",replicaset="rs3"} 0
kube_replicaset_owner{namespace="ns3",replicaset="rs3",owner_kind="Thing",owner_name="t",owner_is_controller="false"} 1
"#;
        assert_eq!(
            sample_lines(&families().render_document(&r, &FamilyContext::default())),
            want
        );
    }
}
