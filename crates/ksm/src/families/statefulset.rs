//! `kube_statefulset_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};

use super::util::{annotations_family, created, deletion_timestamp, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

/// A status counter; an absent status or field counts as 0, as Go's zero value does.
fn status_value(s: &StatefulSet, field: fn(&StatefulSetStatus) -> Option<f64>) -> Vec<Metric> {
    vec![bare(s.status.as_ref().and_then(field).unwrap_or(0.0))]
}

/// The revision families: always one sample, with an empty revision when unset.
fn revision(s: &StatefulSet, field: fn(&StatefulSetStatus) -> Option<&String>) -> Vec<Metric> {
    let rev = s
        .status
        .as_ref()
        .and_then(field)
        .cloned()
        .unwrap_or_default();
    vec![sample(&["revision"], vec![rev], 1.0)]
}

/// Only when the policy sets at least one of its two fields.
fn retention_policy(s: &StatefulSet) -> Vec<Metric> {
    let policy = s.spec.persistent_volume_claim_retention_policy.as_ref();
    let deleted = policy
        .and_then(|p| p.when_deleted.clone())
        .unwrap_or_default();
    let scaled = policy
        .and_then(|p| p.when_scaled.clone())
        .unwrap_or_default();
    if deleted.is_empty() && scaled.is_empty() {
        return Vec::new();
    }
    vec![sample(
        &["when_deleted", "when_scaled"],
        vec![deleted, scaled],
        1.0,
    )]
}

pub fn families() -> ResourceFamilies<StatefulSet> {
    ResourceFamilies {
        resource: "statefulsets",
        identity_keys: &["namespace", "statefulset"],
        identity: |s| {
            vec![
                s.metadata.namespace.clone().unwrap_or_default(),
                s.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_statefulset_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| created(&s.metadata),
            },
            FamilySpec {
                name: "kube_statefulset_status_replicas",
                help: "The number of replicas per StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| status_value(s, |st| Some(f64::from(st.replicas))),
            },
            FamilySpec {
                name: "kube_statefulset_status_replicas_available",
                help: "The number of available replicas per StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| status_value(s, |st| st.available_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_statefulset_status_replicas_current",
                help: "The number of current replicas per StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| status_value(s, |st| st.current_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_statefulset_status_replicas_ready",
                help: "The number of ready replicas per StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| status_value(s, |st| st.ready_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_statefulset_status_replicas_updated",
                help: "The number of updated replicas per StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| status_value(s, |st| st.updated_replicas.map(f64::from)),
            },
            FamilySpec {
                name: "kube_statefulset_status_observed_generation",
                help: "The generation observed by the StatefulSet controller.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| status_value(s, |st| st.observed_generation.map(|g| g as f64)),
            },
            FamilySpec {
                name: "kube_statefulset_replicas",
                help: "Number of desired pods for a StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    s.spec
                        .replicas
                        .map(|v| vec![bare(f64::from(v))])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_statefulset_ordinals_start",
                help: "Start ordinal of the StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    s.spec
                        .ordinals
                        .as_ref()
                        .map(|o| vec![bare(f64::from(o.start.unwrap_or(0)))])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_statefulset_metadata_generation",
                help: "Sequence number representing a specific generation of the desired state for the StatefulSet.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| vec![bare(s.metadata.generation.unwrap_or(0) as f64)],
            },
            FamilySpec {
                name: "kube_statefulset_persistentvolumeclaim_retention_policy",
                help: "Count of retention policy for StatefulSet template PVCs",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| retention_policy(s),
            },
            FamilySpec {
                name: "kube_statefulset_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| annotations_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_statefulset_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| labels_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_statefulset_status_current_revision",
                help: "Indicates the version of the StatefulSet used to generate Pods in the sequence [0,currentReplicas).",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| revision(s, |st| st.current_revision.as_ref()),
            },
            FamilySpec {
                name: "kube_statefulset_status_update_revision",
                help: "Indicates the version of the StatefulSet used to generate Pods in the sequence [replicas-updatedReplicas,replicas)",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| revision(s, |st| st.update_revision.as_ref()),
            },
            FamilySpec {
                name: "kube_statefulset_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| deletion_timestamp(&s.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn statefulset(v: serde_json::Value) -> StatefulSet {
        serde_json::from_value(v).expect("valid statefulset")
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
                "kube_statefulset_created",
                "kube_statefulset_status_replicas",
                "kube_statefulset_status_replicas_available",
                "kube_statefulset_status_replicas_current",
                "kube_statefulset_status_replicas_ready",
                "kube_statefulset_status_replicas_updated",
                "kube_statefulset_status_observed_generation",
                "kube_statefulset_replicas",
                "kube_statefulset_ordinals_start",
                "kube_statefulset_metadata_generation",
                "kube_statefulset_persistentvolumeclaim_retention_policy",
                "kube_statefulset_annotations",
                "kube_statefulset_labels",
                "kube_statefulset_status_current_revision",
                "kube_statefulset_status_update_revision",
                "kube_statefulset_deletion_timestamp",
            ]
        );
    }

    #[test]
    fn golden_statefulset1() {
        let s = statefulset(serde_json::json!({
            "metadata": {
                "name": "statefulset1", "namespace": "ns1", "generation": 3,
                "creationTimestamp": "2017-07-14T02:40:00Z", "labels": { "app": "example1" }
            },
            "spec": { "replicas": 3, "serviceName": "statefulset1service" },
            "status": { "observedGeneration": 1, "replicas": 2, "updateRevision": "ur1", "currentRevision": "cr1" }
        }));
        let want = r#"# HELP kube_statefulset_created [STABLE] Unix creation timestamp
# TYPE kube_statefulset_created gauge
kube_statefulset_created{namespace="ns1",statefulset="statefulset1"} 1.5e+09
# HELP kube_statefulset_status_replicas [STABLE] The number of replicas per StatefulSet.
# TYPE kube_statefulset_status_replicas gauge
kube_statefulset_status_replicas{namespace="ns1",statefulset="statefulset1"} 2
# HELP kube_statefulset_status_replicas_available [STABLE] The number of available replicas per StatefulSet.
# TYPE kube_statefulset_status_replicas_available gauge
kube_statefulset_status_replicas_available{namespace="ns1",statefulset="statefulset1"} 0
# HELP kube_statefulset_status_replicas_current [STABLE] The number of current replicas per StatefulSet.
# TYPE kube_statefulset_status_replicas_current gauge
kube_statefulset_status_replicas_current{namespace="ns1",statefulset="statefulset1"} 0
# HELP kube_statefulset_status_replicas_ready [STABLE] The number of ready replicas per StatefulSet.
# TYPE kube_statefulset_status_replicas_ready gauge
kube_statefulset_status_replicas_ready{namespace="ns1",statefulset="statefulset1"} 0
# HELP kube_statefulset_status_replicas_updated [STABLE] The number of updated replicas per StatefulSet.
# TYPE kube_statefulset_status_replicas_updated gauge
kube_statefulset_status_replicas_updated{namespace="ns1",statefulset="statefulset1"} 0
# HELP kube_statefulset_status_observed_generation [STABLE] The generation observed by the StatefulSet controller.
# TYPE kube_statefulset_status_observed_generation gauge
kube_statefulset_status_observed_generation{namespace="ns1",statefulset="statefulset1"} 1
# HELP kube_statefulset_replicas [STABLE] Number of desired pods for a StatefulSet.
# TYPE kube_statefulset_replicas gauge
kube_statefulset_replicas{namespace="ns1",statefulset="statefulset1"} 3
# HELP kube_statefulset_ordinals_start [STABLE] Start ordinal of the StatefulSet.
# TYPE kube_statefulset_ordinals_start gauge
# HELP kube_statefulset_metadata_generation [STABLE] Sequence number representing a specific generation of the desired state for the StatefulSet.
# TYPE kube_statefulset_metadata_generation gauge
kube_statefulset_metadata_generation{namespace="ns1",statefulset="statefulset1"} 3
# HELP kube_statefulset_persistentvolumeclaim_retention_policy [STABLE] Count of retention policy for StatefulSet template PVCs
# TYPE kube_statefulset_persistentvolumeclaim_retention_policy gauge
# HELP kube_statefulset_annotations [STABLE] Kubernetes annotations converted to Prometheus labels.
# TYPE kube_statefulset_annotations gauge
# HELP kube_statefulset_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_statefulset_labels gauge
# HELP kube_statefulset_status_current_revision [STABLE] Indicates the version of the StatefulSet used to generate Pods in the sequence [0,currentReplicas).
# TYPE kube_statefulset_status_current_revision gauge
kube_statefulset_status_current_revision{namespace="ns1",statefulset="statefulset1",revision="cr1"} 1
# HELP kube_statefulset_status_update_revision [STABLE] Indicates the version of the StatefulSet used to generate Pods in the sequence [replicas-updatedReplicas,replicas)
# TYPE kube_statefulset_status_update_revision gauge
kube_statefulset_status_update_revision{namespace="ns1",statefulset="statefulset1",revision="ur1"} 1
# HELP kube_statefulset_deletion_timestamp [STABLE] Unix deletion timestamp
# TYPE kube_statefulset_deletion_timestamp gauge
"#;
        assert_eq!(
            families().render_document(&s, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_statefulset2_full_status() {
        let s = statefulset(serde_json::json!({
            "metadata": { "name": "statefulset2", "namespace": "ns2", "generation": 21, "labels": { "app": "example2" } },
            "spec": { "replicas": 6, "serviceName": "statefulset2service" },
            "status": {
                "currentReplicas": 2, "observedGeneration": 2, "readyReplicas": 5, "replicas": 5,
                "availableReplicas": 4, "updatedReplicas": 3, "updateRevision": "ur2", "currentRevision": "cr2"
            }
        }));
        let want = r#"kube_statefulset_status_replicas{namespace="ns2",statefulset="statefulset2"} 5
kube_statefulset_status_replicas_available{namespace="ns2",statefulset="statefulset2"} 4
kube_statefulset_status_replicas_current{namespace="ns2",statefulset="statefulset2"} 2
kube_statefulset_status_replicas_ready{namespace="ns2",statefulset="statefulset2"} 5
kube_statefulset_status_replicas_updated{namespace="ns2",statefulset="statefulset2"} 3
kube_statefulset_status_observed_generation{namespace="ns2",statefulset="statefulset2"} 2
kube_statefulset_replicas{namespace="ns2",statefulset="statefulset2"} 6
kube_statefulset_metadata_generation{namespace="ns2",statefulset="statefulset2"} 21
kube_statefulset_labels{namespace="ns2",statefulset="statefulset2",label_app="example2"} 1
kube_statefulset_status_current_revision{namespace="ns2",statefulset="statefulset2",revision="cr2"} 1
kube_statefulset_status_update_revision{namespace="ns2",statefulset="statefulset2",revision="ur2"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["app".into()]),
            annotations: KeyAllowlist::None,
        };
        assert_eq!(sample_lines(&families().render_document(&s, &ctx)), want);
    }

    #[test]
    fn golden_retention_policy_ordinals_and_deletion() {
        let s = statefulset(serde_json::json!({
            "metadata": {
                "name": "statefulset4", "namespace": "ns4", "generation": 1,
                "deletionTimestamp": "2027-01-15T08:00:00Z"
            },
            "spec": {
                "replicas": 3, "serviceName": "statefulset4service",
                "ordinals": { "start": 2 },
                "persistentVolumeClaimRetentionPolicy": { "whenDeleted": "Retain", "whenScaled": "Delete" }
            },
            "status": { "replicas": 7, "updateRevision": "ur3", "currentRevision": "cr3" }
        }));
        let want = r#"kube_statefulset_status_replicas{namespace="ns4",statefulset="statefulset4"} 7
kube_statefulset_status_replicas_available{namespace="ns4",statefulset="statefulset4"} 0
kube_statefulset_status_replicas_current{namespace="ns4",statefulset="statefulset4"} 0
kube_statefulset_status_replicas_ready{namespace="ns4",statefulset="statefulset4"} 0
kube_statefulset_status_replicas_updated{namespace="ns4",statefulset="statefulset4"} 0
kube_statefulset_status_observed_generation{namespace="ns4",statefulset="statefulset4"} 0
kube_statefulset_replicas{namespace="ns4",statefulset="statefulset4"} 3
kube_statefulset_ordinals_start{namespace="ns4",statefulset="statefulset4"} 2
kube_statefulset_metadata_generation{namespace="ns4",statefulset="statefulset4"} 1
kube_statefulset_persistentvolumeclaim_retention_policy{namespace="ns4",statefulset="statefulset4",when_deleted="Retain",when_scaled="Delete"} 1
kube_statefulset_status_current_revision{namespace="ns4",statefulset="statefulset4",revision="cr3"} 1
kube_statefulset_status_update_revision{namespace="ns4",statefulset="statefulset4",revision="ur3"} 1
kube_statefulset_deletion_timestamp{namespace="ns4",statefulset="statefulset4"} 1.8e+09
"#;
        assert_eq!(
            sample_lines(&families().render_document(&s, &FamilyContext::default())),
            want
        );
    }

    #[test]
    fn bare_object_defaults() {
        // No spec fields, no status: zero counters, empty revisions; an empty ordinals
        // block still reports start 0 and a half-set policy still reports.
        let s = statefulset(serde_json::json!({
            "metadata": { "name": "s", "namespace": "n" },
            "spec": { "ordinals": {}, "persistentVolumeClaimRetentionPolicy": { "whenScaled": "Retain" } }
        }));
        let want = r#"kube_statefulset_status_replicas{namespace="n",statefulset="s"} 0
kube_statefulset_status_replicas_available{namespace="n",statefulset="s"} 0
kube_statefulset_status_replicas_current{namespace="n",statefulset="s"} 0
kube_statefulset_status_replicas_ready{namespace="n",statefulset="s"} 0
kube_statefulset_status_replicas_updated{namespace="n",statefulset="s"} 0
kube_statefulset_status_observed_generation{namespace="n",statefulset="s"} 0
kube_statefulset_ordinals_start{namespace="n",statefulset="s"} 0
kube_statefulset_metadata_generation{namespace="n",statefulset="s"} 0
kube_statefulset_persistentvolumeclaim_retention_policy{namespace="n",statefulset="s",when_deleted="",when_scaled="Retain"} 1
kube_statefulset_status_current_revision{namespace="n",statefulset="s",revision=""} 1
kube_statefulset_status_update_revision{namespace="n",statefulset="s",revision=""} 1
"#;
        assert_eq!(
            sample_lines(&families().render_document(&s, &FamilyContext::default())),
            want
        );
    }
}
