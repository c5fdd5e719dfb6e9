//! `kube_daemonset_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};

use super::util::{annotations_family, created, deletion_timestamp, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

/// A status counter; an absent status or field counts as 0, as Go's zero value does.
fn status_value(d: &DaemonSet, field: fn(&DaemonSetStatus) -> Option<f64>) -> Vec<Metric> {
    vec![bare(d.status.as_ref().and_then(field).unwrap_or(0.0))]
}

pub fn families() -> ResourceFamilies<DaemonSet> {
    ResourceFamilies {
        resource: "daemonsets",
        identity_keys: &["namespace", "daemonset"],
        identity: |d| {
            vec![
                d.metadata.namespace.clone().unwrap_or_default(),
                d.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_daemonset_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| created(&d.metadata),
            },
            FamilySpec {
                name: "kube_daemonset_status_current_number_scheduled",
                help: "The number of nodes running at least one daemon pod and are supposed to.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| Some(f64::from(s.current_number_scheduled))),
            },
            FamilySpec {
                name: "kube_daemonset_status_desired_number_scheduled",
                help: "The number of nodes that should be running the daemon pod.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| Some(f64::from(s.desired_number_scheduled))),
            },
            FamilySpec {
                name: "kube_daemonset_status_number_available",
                help: "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.number_available.map(f64::from)),
            },
            FamilySpec {
                name: "kube_daemonset_status_number_misscheduled",
                help: "The number of nodes running a daemon pod but are not supposed to.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| Some(f64::from(s.number_misscheduled))),
            },
            FamilySpec {
                name: "kube_daemonset_status_number_ready",
                help: "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| Some(f64::from(s.number_ready))),
            },
            FamilySpec {
                name: "kube_daemonset_status_number_unavailable",
                help: "The number of nodes that should be running the daemon pod and have none of the daemon pod running and available",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.number_unavailable.map(f64::from)),
            },
            FamilySpec {
                name: "kube_daemonset_status_observed_generation",
                help: "The most recent generation observed by the daemon set controller.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.observed_generation.map(|g| g as f64)),
            },
            FamilySpec {
                name: "kube_daemonset_status_updated_number_scheduled",
                help: "The total number of nodes that are running updated daemon pod",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| status_value(d, |s| s.updated_number_scheduled.map(f64::from)),
            },
            FamilySpec {
                name: "kube_daemonset_metadata_generation",
                help: "Sequence number representing a specific generation of the desired state.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| vec![bare(d.metadata.generation.unwrap_or(0) as f64)],
            },
            FamilySpec {
                name: "kube_daemonset_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |d, _| deletion_timestamp(&d.metadata),
            },
            FamilySpec {
                name: "kube_daemonset_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |d, ctx| annotations_family(&d.metadata, ctx),
            },
            FamilySpec {
                name: "kube_daemonset_labels",
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
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn daemonset(v: serde_json::Value) -> DaemonSet {
        serde_json::from_value(v).expect("valid daemonset")
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
                "kube_daemonset_created",
                "kube_daemonset_status_current_number_scheduled",
                "kube_daemonset_status_desired_number_scheduled",
                "kube_daemonset_status_number_available",
                "kube_daemonset_status_number_misscheduled",
                "kube_daemonset_status_number_ready",
                "kube_daemonset_status_number_unavailable",
                "kube_daemonset_status_observed_generation",
                "kube_daemonset_status_updated_number_scheduled",
                "kube_daemonset_metadata_generation",
                "kube_daemonset_deletion_timestamp",
                "kube_daemonset_annotations",
                "kube_daemonset_labels",
            ]
        );
    }

    #[test]
    fn golden_ds1_with_annotation_allowlist() {
        let d = daemonset(serde_json::json!({
            "metadata": {
                "name": "ds1", "namespace": "ns1", "generation": 21,
                "labels": { "app": "example1" },
                "annotations": { "app": "mysql-server", "app.k8s.io/owner": "@foo" }
            },
            "status": {
                "currentNumberScheduled": 15, "numberMisscheduled": 10, "desiredNumberScheduled": 5,
                "numberReady": 5, "observedGeneration": 2
            }
        }));
        let ctx = FamilyContext {
            labels: KeyAllowlist::None,
            annotations: KeyAllowlist::Keys(vec!["app.k8s.io/owner".into()]),
        };
        let want = r#"# HELP kube_daemonset_created [STABLE] Unix creation timestamp
# TYPE kube_daemonset_created gauge
# HELP kube_daemonset_status_current_number_scheduled [STABLE] The number of nodes running at least one daemon pod and are supposed to.
# TYPE kube_daemonset_status_current_number_scheduled gauge
kube_daemonset_status_current_number_scheduled{namespace="ns1",daemonset="ds1"} 15
# HELP kube_daemonset_status_desired_number_scheduled [STABLE] The number of nodes that should be running the daemon pod.
# TYPE kube_daemonset_status_desired_number_scheduled gauge
kube_daemonset_status_desired_number_scheduled{namespace="ns1",daemonset="ds1"} 5
# HELP kube_daemonset_status_number_available [STABLE] The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available
# TYPE kube_daemonset_status_number_available gauge
kube_daemonset_status_number_available{namespace="ns1",daemonset="ds1"} 0
# HELP kube_daemonset_status_number_misscheduled [STABLE] The number of nodes running a daemon pod but are not supposed to.
# TYPE kube_daemonset_status_number_misscheduled gauge
kube_daemonset_status_number_misscheduled{namespace="ns1",daemonset="ds1"} 10
# HELP kube_daemonset_status_number_ready [STABLE] The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.
# TYPE kube_daemonset_status_number_ready gauge
kube_daemonset_status_number_ready{namespace="ns1",daemonset="ds1"} 5
# HELP kube_daemonset_status_number_unavailable [STABLE] The number of nodes that should be running the daemon pod and have none of the daemon pod running and available
# TYPE kube_daemonset_status_number_unavailable gauge
kube_daemonset_status_number_unavailable{namespace="ns1",daemonset="ds1"} 0
# HELP kube_daemonset_status_observed_generation [STABLE] The most recent generation observed by the daemon set controller.
# TYPE kube_daemonset_status_observed_generation gauge
kube_daemonset_status_observed_generation{namespace="ns1",daemonset="ds1"} 2
# HELP kube_daemonset_status_updated_number_scheduled [STABLE] The total number of nodes that are running updated daemon pod
# TYPE kube_daemonset_status_updated_number_scheduled gauge
kube_daemonset_status_updated_number_scheduled{namespace="ns1",daemonset="ds1"} 0
# HELP kube_daemonset_metadata_generation [STABLE] Sequence number representing a specific generation of the desired state.
# TYPE kube_daemonset_metadata_generation gauge
kube_daemonset_metadata_generation{namespace="ns1",daemonset="ds1"} 21
# HELP kube_daemonset_deletion_timestamp Unix deletion timestamp
# TYPE kube_daemonset_deletion_timestamp gauge
# HELP kube_daemonset_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_daemonset_annotations gauge
kube_daemonset_annotations{namespace="ns1",daemonset="ds1",annotation_app_k8s_io_owner="@foo"} 1
# HELP kube_daemonset_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_daemonset_labels gauge
"#;
        assert_eq!(families().render_document(&d, &ctx), want);
    }

    #[test]
    fn golden_ds2_created_and_deleting() {
        let d = daemonset(serde_json::json!({
            "metadata": {
                "name": "ds2", "namespace": "ns2", "generation": 14,
                "creationTimestamp": "2017-07-14T02:40:00Z", "deletionTimestamp": "2027-01-15T08:00:00Z",
                "labels": { "app": "example2" }
            },
            "status": {
                "currentNumberScheduled": 10, "numberMisscheduled": 5, "desiredNumberScheduled": 0,
                "numberReady": 0, "numberAvailable": 3, "numberUnavailable": 7, "updatedNumberScheduled": 2
            }
        }));
        let want = r#"kube_daemonset_created{namespace="ns2",daemonset="ds2"} 1.5e+09
kube_daemonset_status_current_number_scheduled{namespace="ns2",daemonset="ds2"} 10
kube_daemonset_status_desired_number_scheduled{namespace="ns2",daemonset="ds2"} 0
kube_daemonset_status_number_available{namespace="ns2",daemonset="ds2"} 3
kube_daemonset_status_number_misscheduled{namespace="ns2",daemonset="ds2"} 5
kube_daemonset_status_number_ready{namespace="ns2",daemonset="ds2"} 0
kube_daemonset_status_number_unavailable{namespace="ns2",daemonset="ds2"} 7
kube_daemonset_status_observed_generation{namespace="ns2",daemonset="ds2"} 0
kube_daemonset_status_updated_number_scheduled{namespace="ns2",daemonset="ds2"} 2
kube_daemonset_metadata_generation{namespace="ns2",daemonset="ds2"} 14
kube_daemonset_deletion_timestamp{namespace="ns2",daemonset="ds2"} 1.8e+09
kube_daemonset_labels{namespace="ns2",daemonset="ds2",label_app="example2"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::None,
        };
        assert_eq!(sample_lines(&families().render_document(&d, &ctx)), want);
    }

    #[test]
    fn no_status_reports_zeroes() {
        let d = daemonset(serde_json::json!({ "metadata": { "name": "d", "namespace": "n" } }));
        let doc = sample_lines(&families().render_document(&d, &FamilyContext::default()));
        assert_eq!(doc.lines().count(), 9, "{doc}");
        assert!(doc.lines().all(|l| l.ends_with(" 0")), "{doc}");
    }
}
