//! `kube_replicationcontroller_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::{ReplicationController, ReplicationControllerStatus};

use super::util::{created, owner_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

/// A status counter; an absent status or field counts as 0, as Go's zero value does.
fn status_value(
    r: &ReplicationController,
    field: fn(&ReplicationControllerStatus) -> Option<f64>,
) -> Vec<Metric> {
    vec![bare(r.status.as_ref().and_then(field).unwrap_or(0.0))]
}

pub fn families() -> ResourceFamilies<ReplicationController> {
    ResourceFamilies {
        resource: "replicationcontrollers",
        identity_keys: &["namespace", "replicationcontroller"],
        identity: |r| {
            vec![
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_replicationcontroller_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| created(&r.metadata),
            },
            FamilySpec {
                name: "kube_replicationcontroller_status_replicas",
                help: "The number of replicas per ReplicationController.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| Some(f64::from(s.replicas))),
            },
            FamilySpec {
                name: "kube_replicationcontroller_status_fully_labeled_replicas",
                help: "The number of fully labeled replicas per ReplicationController.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| s.fully_labeled_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_replicationcontroller_status_ready_replicas",
                help: "The number of ready replicas per ReplicationController.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| s.ready_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_replicationcontroller_status_available_replicas",
                help: "The number of available replicas per ReplicationController.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| s.available_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_replicationcontroller_status_observed_generation",
                help: "The generation observed by the ReplicationController controller.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| status_value(r, |s| s.observed_generation.map(|g| g as f64)),
            },
            FamilySpec {
                name: "kube_replicationcontroller_spec_replicas",
                help: "Number of desired pods for a ReplicationController.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| {
                    r.spec
                        .as_ref()
                        .and_then(|s| s.replicas)
                        .map(|v| vec![bare(f64::from(v))])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_replicationcontroller_metadata_generation",
                help: "Sequence number representing a specific generation of the desired state.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| vec![bare(r.metadata.generation.unwrap_or(0) as f64)],
            },
            FamilySpec {
                name: "kube_replicationcontroller_owner",
                help: "Information about the ReplicationController's owner.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| owner_family(&r.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn rc(v: serde_json::Value) -> ReplicationController {
        serde_json::from_value(v).expect("valid replicationcontroller")
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
                "kube_replicationcontroller_created",
                "kube_replicationcontroller_status_replicas",
                "kube_replicationcontroller_status_fully_labeled_replicas",
                "kube_replicationcontroller_status_ready_replicas",
                "kube_replicationcontroller_status_available_replicas",
                "kube_replicationcontroller_status_observed_generation",
                "kube_replicationcontroller_spec_replicas",
                "kube_replicationcontroller_metadata_generation",
                "kube_replicationcontroller_owner",
            ]
        );
    }

    #[test]
    fn golden_rc1_controlled() {
        let r = rc(serde_json::json!({
            "metadata": {
                "name": "rc1", "namespace": "ns1", "generation": 21,
                "creationTimestamp": "2017-07-14T02:40:00Z",
                "ownerReferences": [
                    { "apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig", "name": "dc-name", "uid": "u", "controller": true }
                ]
            },
            "spec": { "replicas": 5 },
            "status": { "replicas": 5, "fullyLabeledReplicas": 10, "readyReplicas": 5, "availableReplicas": 3, "observedGeneration": 1 }
        }));
        let want = r#"# HELP kube_replicationcontroller_created [STABLE] Unix creation timestamp
# TYPE kube_replicationcontroller_created gauge
kube_replicationcontroller_created{namespace="ns1",replicationcontroller="rc1"} 1.5e+09
# HELP kube_replicationcontroller_status_replicas [STABLE] The number of replicas per ReplicationController.
# TYPE kube_replicationcontroller_status_replicas gauge
kube_replicationcontroller_status_replicas{namespace="ns1",replicationcontroller="rc1"} 5
# HELP kube_replicationcontroller_status_fully_labeled_replicas [STABLE] The number of fully labeled replicas per ReplicationController.
# TYPE kube_replicationcontroller_status_fully_labeled_replicas gauge
kube_replicationcontroller_status_fully_labeled_replicas{namespace="ns1",replicationcontroller="rc1"} 10
# HELP kube_replicationcontroller_status_ready_replicas [STABLE] The number of ready replicas per ReplicationController.
# TYPE kube_replicationcontroller_status_ready_replicas gauge
kube_replicationcontroller_status_ready_replicas{namespace="ns1",replicationcontroller="rc1"} 5
# HELP kube_replicationcontroller_status_available_replicas [STABLE] The number of available replicas per ReplicationController.
# TYPE kube_replicationcontroller_status_available_replicas gauge
kube_replicationcontroller_status_available_replicas{namespace="ns1",replicationcontroller="rc1"} 3
# HELP kube_replicationcontroller_status_observed_generation [STABLE] The generation observed by the ReplicationController controller.
# TYPE kube_replicationcontroller_status_observed_generation gauge
kube_replicationcontroller_status_observed_generation{namespace="ns1",replicationcontroller="rc1"} 1
# HELP kube_replicationcontroller_spec_replicas [STABLE] Number of desired pods for a ReplicationController.
# TYPE kube_replicationcontroller_spec_replicas gauge
kube_replicationcontroller_spec_replicas{namespace="ns1",replicationcontroller="rc1"} 5
# HELP kube_replicationcontroller_metadata_generation [STABLE] Sequence number representing a specific generation of the desired state.
# TYPE kube_replicationcontroller_metadata_generation gauge
kube_replicationcontroller_metadata_generation{namespace="ns1",replicationcontroller="rc1"} 21
# HELP kube_replicationcontroller_owner Information about the ReplicationController's owner.
# TYPE kube_replicationcontroller_owner gauge
kube_replicationcontroller_owner{namespace="ns1",replicationcontroller="rc1",owner_kind="DeploymentConfig",owner_name="dc-name",owner_is_controller="true"} 1
"#;
        assert_eq!(
            families().render_document(&r, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_rc2_no_owner() {
        let r = rc(serde_json::json!({
            "metadata": { "name": "rc2", "namespace": "ns2", "generation": 14 },
            "spec": { "replicas": 0 },
            "status": { "replicas": 0, "fullyLabeledReplicas": 5, "readyReplicas": 0, "availableReplicas": 0, "observedGeneration": 5 }
        }));
        let want = r#"kube_replicationcontroller_status_replicas{namespace="ns2",replicationcontroller="rc2"} 0
kube_replicationcontroller_status_fully_labeled_replicas{namespace="ns2",replicationcontroller="rc2"} 5
kube_replicationcontroller_status_ready_replicas{namespace="ns2",replicationcontroller="rc2"} 0
kube_replicationcontroller_status_available_replicas{namespace="ns2",replicationcontroller="rc2"} 0
kube_replicationcontroller_status_observed_generation{namespace="ns2",replicationcontroller="rc2"} 5
kube_replicationcontroller_spec_replicas{namespace="ns2",replicationcontroller="rc2"} 0
kube_replicationcontroller_metadata_generation{namespace="ns2",replicationcontroller="rc2"} 14
kube_replicationcontroller_owner{namespace="ns2",replicationcontroller="rc2",owner_kind="",owner_name="",owner_is_controller=""} 1
"#;
        assert_eq!(
            sample_lines(&families().render_document(&r, &FamilyContext::default())),
            want
        );
    }

    #[test]
    fn golden_rc3_owner_without_controller_flag_and_no_spec() {
        let r = rc(serde_json::json!({
            "metadata": {
                "name": "rc3", "namespace": "ns3", "generation": 5,
                "ownerReferences": [ { "apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig", "name": "dc-test", "uid": "u" } ]
            }
        }));
        let want = r#"kube_replicationcontroller_status_replicas{namespace="ns3",replicationcontroller="rc3"} 0
kube_replicationcontroller_status_fully_labeled_replicas{namespace="ns3",replicationcontroller="rc3"} 0
kube_replicationcontroller_status_ready_replicas{namespace="ns3",replicationcontroller="rc3"} 0
kube_replicationcontroller_status_available_replicas{namespace="ns3",replicationcontroller="rc3"} 0
kube_replicationcontroller_status_observed_generation{namespace="ns3",replicationcontroller="rc3"} 0
kube_replicationcontroller_metadata_generation{namespace="ns3",replicationcontroller="rc3"} 5
kube_replicationcontroller_owner{namespace="ns3",replicationcontroller="rc3",owner_kind="DeploymentConfig",owner_name="dc-test",owner_is_controller="false"} 1
"#;
        assert_eq!(
            sample_lines(&families().render_document(&r, &FamilyContext::default())),
            want
        );
    }
}
