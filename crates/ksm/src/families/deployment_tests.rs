//! Golden tests of `kube_deployment_*`.

use super::*;
use crate::families::{FamilyContext, KeyAllowlist};

fn deployment(v: serde_json::Value) -> Deployment {
    serde_json::from_value(v).expect("valid deployment")
}

/// Only the sample lines of the named families, in family order.
fn samples(d: &Deployment, names: &[&str]) -> String {
    let f = families();
    let enabled: Vec<usize> = names
        .iter()
        .map(|n| f.family_index(n).expect("known family"))
        .collect();
    f.render(d, &FamilyContext::default(), &enabled)
        .into_iter()
        .map(|b| String::from_utf8(b).expect("utf-8"))
        .collect()
}

#[test]
fn families_match_reference_list() {
    let names: Vec<&str> = families().families.iter().map(|f| f.name).collect();
    assert_eq!(
        names,
        [
            "kube_deployment_owner",
            "kube_deployment_created",
            "kube_deployment_status_replicas",
            "kube_deployment_status_replicas_ready",
            "kube_deployment_status_replicas_available",
            "kube_deployment_status_replicas_unavailable",
            "kube_deployment_status_replicas_updated",
            "kube_deployment_status_terminating_replicas",
            "kube_deployment_status_observed_generation",
            "kube_deployment_status_condition",
            "kube_deployment_spec_replicas",
            "kube_deployment_spec_paused",
            "kube_deployment_spec_strategy_rollingupdate_max_unavailable",
            "kube_deployment_spec_strategy_rollingupdate_max_surge",
            "kube_deployment_metadata_generation",
            "kube_deployment_deletion_timestamp",
            "kube_deployment_annotations",
            "kube_deployment_labels",
        ]
    );
}

#[test]
fn golden_depl1_with_annotation_allowlist() {
    let d = deployment(serde_json::json!({
        "metadata": {
            "name": "depl1", "namespace": "ns1", "generation": 21,
            "creationTimestamp": "2017-07-14T02:40:00Z",
            "annotations": { "company.io/team": "my-brilliant-team" },
            "labels": { "app": "example1" }
        },
        "spec": {
            "replicas": 200,
            "strategy": { "rollingUpdate": { "maxUnavailable": 10, "maxSurge": 10 } }
        },
        "status": {
            "replicas": 15, "readyReplicas": 10, "availableReplicas": 10, "unavailableReplicas": 5,
            "updatedReplicas": 2, "terminatingReplicas": 3, "observedGeneration": 111,
            "conditions": [
                { "type": "Available", "status": "True", "reason": "MinimumReplicasAvailable" },
                { "type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable" }
            ]
        }
    }));
    let ctx = FamilyContext {
        labels: KeyAllowlist::None,
        annotations: KeyAllowlist::Keys(vec!["company.io/team".into()]),
    };
    let want = r#"# HELP kube_deployment_owner Information about the Deployment's owner.
# TYPE kube_deployment_owner gauge
kube_deployment_owner{namespace="ns1",deployment="depl1",owner_kind="",owner_name=""} 1
# HELP kube_deployment_created [STABLE] Unix creation timestamp
# TYPE kube_deployment_created gauge
kube_deployment_created{namespace="ns1",deployment="depl1"} 1.5e+09
# HELP kube_deployment_status_replicas [STABLE] The number of replicas per deployment.
# TYPE kube_deployment_status_replicas gauge
kube_deployment_status_replicas{namespace="ns1",deployment="depl1"} 15
# HELP kube_deployment_status_replicas_ready [STABLE] The number of ready replicas per deployment.
# TYPE kube_deployment_status_replicas_ready gauge
kube_deployment_status_replicas_ready{namespace="ns1",deployment="depl1"} 10
# HELP kube_deployment_status_replicas_available [STABLE] The number of available replicas per deployment.
# TYPE kube_deployment_status_replicas_available gauge
kube_deployment_status_replicas_available{namespace="ns1",deployment="depl1"} 10
# HELP kube_deployment_status_replicas_unavailable [STABLE] The number of unavailable replicas per deployment.
# TYPE kube_deployment_status_replicas_unavailable gauge
kube_deployment_status_replicas_unavailable{namespace="ns1",deployment="depl1"} 5
# HELP kube_deployment_status_replicas_updated [STABLE] The number of updated replicas per deployment.
# TYPE kube_deployment_status_replicas_updated gauge
kube_deployment_status_replicas_updated{namespace="ns1",deployment="depl1"} 2
# HELP kube_deployment_status_terminating_replicas The number of terminating replicas per deployment.
# TYPE kube_deployment_status_terminating_replicas gauge
kube_deployment_status_terminating_replicas{namespace="ns1",deployment="depl1"} 3
# HELP kube_deployment_status_observed_generation [STABLE] The generation observed by the deployment controller.
# TYPE kube_deployment_status_observed_generation gauge
kube_deployment_status_observed_generation{namespace="ns1",deployment="depl1"} 111
# HELP kube_deployment_status_condition [STABLE] The current status conditions of a deployment.
# TYPE kube_deployment_status_condition gauge
kube_deployment_status_condition{namespace="ns1",deployment="depl1",reason="MinimumReplicasAvailable",condition="Available",status="true"} 1
kube_deployment_status_condition{namespace="ns1",deployment="depl1",reason="MinimumReplicasAvailable",condition="Available",status="false"} 0
kube_deployment_status_condition{namespace="ns1",deployment="depl1",reason="MinimumReplicasAvailable",condition="Available",status="unknown"} 0
kube_deployment_status_condition{namespace="ns1",deployment="depl1",reason="NewReplicaSetAvailable",condition="Progressing",status="true"} 1
kube_deployment_status_condition{namespace="ns1",deployment="depl1",reason="NewReplicaSetAvailable",condition="Progressing",status="false"} 0
kube_deployment_status_condition{namespace="ns1",deployment="depl1",reason="NewReplicaSetAvailable",condition="Progressing",status="unknown"} 0
# HELP kube_deployment_spec_replicas [STABLE] Number of desired pods for a deployment.
# TYPE kube_deployment_spec_replicas gauge
kube_deployment_spec_replicas{namespace="ns1",deployment="depl1"} 200
# HELP kube_deployment_spec_paused [STABLE] Whether the deployment is paused and will not be processed by the deployment controller.
# TYPE kube_deployment_spec_paused gauge
kube_deployment_spec_paused{namespace="ns1",deployment="depl1"} 0
# HELP kube_deployment_spec_strategy_rollingupdate_max_unavailable [STABLE] Maximum number of unavailable replicas during a rolling update of a deployment.
# TYPE kube_deployment_spec_strategy_rollingupdate_max_unavailable gauge
kube_deployment_spec_strategy_rollingupdate_max_unavailable{namespace="ns1",deployment="depl1"} 10
# HELP kube_deployment_spec_strategy_rollingupdate_max_surge [STABLE] Maximum number of replicas that can be scheduled above the desired number of replicas during a rolling update of a deployment.
# TYPE kube_deployment_spec_strategy_rollingupdate_max_surge gauge
kube_deployment_spec_strategy_rollingupdate_max_surge{namespace="ns1",deployment="depl1"} 10
# HELP kube_deployment_metadata_generation [STABLE] Sequence number representing a specific generation of the desired state.
# TYPE kube_deployment_metadata_generation gauge
kube_deployment_metadata_generation{namespace="ns1",deployment="depl1"} 21
# HELP kube_deployment_deletion_timestamp Unix deletion timestamp
# TYPE kube_deployment_deletion_timestamp gauge
# HELP kube_deployment_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_deployment_annotations gauge
kube_deployment_annotations{namespace="ns1",deployment="depl1",annotation_company_io_team="my-brilliant-team"} 1
# HELP kube_deployment_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_deployment_labels gauge
"#;
    assert_eq!(families().render_document(&d, &ctx), want);
}

#[test]
fn golden_depl2_paused_percentages_and_failed_conditions() {
    let d = deployment(serde_json::json!({
        "metadata": { "name": "depl2", "namespace": "ns2", "generation": 14, "labels": { "app": "example2" } },
        "spec": {
            "paused": true, "replicas": 5,
            "strategy": { "rollingUpdate": { "maxUnavailable": "25%", "maxSurge": "20%" } }
        },
        "status": {
            "replicas": 10, "readyReplicas": 5, "availableReplicas": 5, "unavailableReplicas": 0,
            "updatedReplicas": 1, "observedGeneration": 1111,
            "conditions": [
                { "type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable" },
                { "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded" },
                { "type": "ReplicaFailure", "status": "True", "reason": "ReplicaSetCreateError" }
            ]
        }
    }));
    let want = r#"kube_deployment_owner{namespace="ns2",deployment="depl2",owner_kind="",owner_name=""} 1
kube_deployment_status_replicas{namespace="ns2",deployment="depl2"} 10
kube_deployment_status_replicas_ready{namespace="ns2",deployment="depl2"} 5
kube_deployment_status_replicas_available{namespace="ns2",deployment="depl2"} 5
kube_deployment_status_replicas_unavailable{namespace="ns2",deployment="depl2"} 0
kube_deployment_status_replicas_updated{namespace="ns2",deployment="depl2"} 1
kube_deployment_status_observed_generation{namespace="ns2",deployment="depl2"} 1111
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="MinimumReplicasUnavailable",condition="Available",status="true"} 0
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="MinimumReplicasUnavailable",condition="Available",status="false"} 1
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="MinimumReplicasUnavailable",condition="Available",status="unknown"} 0
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="ProgressDeadlineExceeded",condition="Progressing",status="true"} 0
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="ProgressDeadlineExceeded",condition="Progressing",status="false"} 1
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="ProgressDeadlineExceeded",condition="Progressing",status="unknown"} 0
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="ReplicaSetCreateError",condition="ReplicaFailure",status="true"} 1
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="ReplicaSetCreateError",condition="ReplicaFailure",status="false"} 0
kube_deployment_status_condition{namespace="ns2",deployment="depl2",reason="ReplicaSetCreateError",condition="ReplicaFailure",status="unknown"} 0
kube_deployment_spec_replicas{namespace="ns2",deployment="depl2"} 5
kube_deployment_spec_paused{namespace="ns2",deployment="depl2"} 1
kube_deployment_spec_strategy_rollingupdate_max_unavailable{namespace="ns2",deployment="depl2"} 1
kube_deployment_spec_strategy_rollingupdate_max_surge{namespace="ns2",deployment="depl2"} 1
kube_deployment_metadata_generation{namespace="ns2",deployment="depl2"} 14
"#;
    let doc = families().render_document(&d, &FamilyContext::default());
    let lines: String = doc
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(lines, want);
}

#[test]
fn golden_depl3_unlisted_reason_and_missing_status() {
    let d = deployment(serde_json::json!({
        "metadata": { "name": "depl3", "namespace": "ns3" },
        "spec": { "replicas": 1 },
        "status": {
            "conditions": [
                { "type": "Available", "status": "False", "reason": "ThisReasonIsNotAllowed" },
                { "type": "Progressing", "status": "True" }
            ]
        }
    }));
    let want = r#"kube_deployment_owner{namespace="ns3",deployment="depl3",owner_kind="",owner_name=""} 1
kube_deployment_status_replicas{namespace="ns3",deployment="depl3"} 0
kube_deployment_status_replicas_ready{namespace="ns3",deployment="depl3"} 0
kube_deployment_status_replicas_available{namespace="ns3",deployment="depl3"} 0
kube_deployment_status_replicas_unavailable{namespace="ns3",deployment="depl3"} 0
kube_deployment_status_replicas_updated{namespace="ns3",deployment="depl3"} 0
kube_deployment_status_observed_generation{namespace="ns3",deployment="depl3"} 0
kube_deployment_status_condition{namespace="ns3",deployment="depl3",reason="unknown",condition="Available",status="true"} 0
kube_deployment_status_condition{namespace="ns3",deployment="depl3",reason="unknown",condition="Available",status="false"} 1
kube_deployment_status_condition{namespace="ns3",deployment="depl3",reason="unknown",condition="Available",status="unknown"} 0
kube_deployment_status_condition{namespace="ns3",deployment="depl3",reason="",condition="Progressing",status="true"} 1
kube_deployment_status_condition{namespace="ns3",deployment="depl3",reason="",condition="Progressing",status="false"} 0
kube_deployment_status_condition{namespace="ns3",deployment="depl3",reason="",condition="Progressing",status="unknown"} 0
kube_deployment_spec_replicas{namespace="ns3",deployment="depl3"} 1
kube_deployment_spec_paused{namespace="ns3",deployment="depl3"} 0
kube_deployment_metadata_generation{namespace="ns3",deployment="depl3"} 0
"#;
    let doc = families().render_document(&d, &FamilyContext::default());
    let lines: String = doc
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(lines, want);
}

#[test]
fn no_status_at_all_reports_zeroes() {
    let d = deployment(serde_json::json!({ "metadata": { "name": "bare", "namespace": "ns" } }));
    let got = samples(
        &d,
        &[
            "kube_deployment_status_replicas",
            "kube_deployment_status_condition",
            "kube_deployment_spec_replicas",
        ],
    );
    assert_eq!(
        got,
        "kube_deployment_status_replicas{namespace=\"ns\",deployment=\"bare\"} 0\n"
    );
}

#[test]
fn golden_deletion_timestamp() {
    let d = deployment(serde_json::json!({
        "metadata": {
            "name": "deployment-terminating", "namespace": "ns4", "generation": 22,
            "creationTimestamp": "2020-09-13T12:26:40Z", "deletionTimestamp": "2027-01-15T08:00:00Z"
        },
        "spec": { "paused": true, "replicas": 10 }
    }));
    assert_eq!(
        samples(&d, &["kube_deployment_deletion_timestamp"]),
        "kube_deployment_deletion_timestamp{namespace=\"ns4\",deployment=\"deployment-terminating\"} 1.8e+09\n"
    );
}

#[test]
fn golden_owner() {
    let d = deployment(serde_json::json!({
        "metadata": {
            "name": "deployment-with-owner", "namespace": "ns5",
            "ownerReferences": [
                { "apiVersion": "x/v1", "kind": "Application", "name": "my-app", "uid": "u1", "controller": true },
                { "apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2" }
            ]
        },
        "spec": { "replicas": 200 }
    }));
    assert_eq!(
        samples(&d, &["kube_deployment_owner"]),
        "kube_deployment_owner{namespace=\"ns5\",deployment=\"deployment-with-owner\",owner_kind=\"Application\",owner_name=\"my-app\"} 1\n\
             kube_deployment_owner{namespace=\"ns5\",deployment=\"deployment-with-owner\",owner_kind=\"ConfigMap\",owner_name=\"cm\"} 1\n"
    );
}

const ROLLING: &[&str] = &[
    "kube_deployment_spec_replicas",
    "kube_deployment_spec_strategy_rollingupdate_max_unavailable",
    "kube_deployment_spec_strategy_rollingupdate_max_surge",
];

#[test]
fn rolling_update_needs_replicas() {
    let d = deployment(serde_json::json!({
        "metadata": { "name": "deployment-nil-replicas", "namespace": "ns6" },
        "spec": { "strategy": { "rollingUpdate": { "maxUnavailable": 10, "maxSurge": 10 } } }
    }));
    assert_eq!(samples(&d, ROLLING), "");
}

#[test]
fn rolling_update_unset_values_emit_nothing() {
    let d = deployment(serde_json::json!({
        "metadata": { "name": "deployment-nil-rollingupdate-values", "namespace": "ns7" },
        "spec": { "replicas": 1, "strategy": { "rollingUpdate": {} } }
    }));
    assert_eq!(
        samples(&d, ROLLING),
        "kube_deployment_spec_replicas{namespace=\"ns7\",deployment=\"deployment-nil-rollingupdate-values\"} 1\n"
    );
}

#[test]
fn rolling_update_malformed_values_emit_nothing() {
    let d = deployment(serde_json::json!({
        "metadata": { "name": "deployment-malformed-rollingupdate-values", "namespace": "ns8" },
        "spec": { "replicas": 1, "strategy": { "rollingUpdate": { "maxUnavailable": "not-a-percentage", "maxSurge": "abc%" } } }
    }));
    assert_eq!(
        samples(&d, ROLLING),
        "kube_deployment_spec_replicas{namespace=\"ns8\",deployment=\"deployment-malformed-rollingupdate-values\"} 1\n"
    );
}

#[test]
fn scaled_value_rounds_like_apimachinery() {
    let s = |v: &str| IntOrString::String(v.to_string());
    assert_eq!(scaled_value(Some(&s("25%")), 5, false), Some(1.0));
    assert_eq!(scaled_value(Some(&s("25%")), 5, true), Some(2.0));
    assert_eq!(scaled_value(Some(&s("0%")), 5, true), Some(0.0));
    assert_eq!(scaled_value(Some(&s("+50%")), 3, false), Some(1.0));
    assert_eq!(scaled_value(Some(&s("5")), 5, false), None);
    assert_eq!(scaled_value(Some(&s("%")), 5, false), None);
    assert_eq!(
        scaled_value(Some(&IntOrString::Int(-3)), 5, false),
        Some(-3.0)
    );
    assert_eq!(scaled_value(None, 5, false), None);
}
