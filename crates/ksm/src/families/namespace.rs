//! `kube_namespace_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::Namespace;

use super::util::{
    annotations_family, bool_f64, condition_type_status_samples, created, labels_family,
};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<Namespace> {
    ResourceFamilies {
        resource: "namespaces",
        identity_keys: &["namespace"],
        identity: |n| vec![n.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_namespace_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| created(&n.metadata),
            },
            FamilySpec {
                name: "kube_namespace_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, ctx| annotations_family(&n.metadata, ctx),
            },
            FamilySpec {
                name: "kube_namespace_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, ctx| labels_family(&n.metadata, ctx),
            },
            FamilySpec {
                name: "kube_namespace_status_phase",
                help: "kubernetes namespace status phase.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    let phase = n
                        .status
                        .as_ref()
                        .and_then(|s| s.phase.as_deref())
                        .unwrap_or("");
                    ["Active", "Terminating"]
                        .iter()
                        .map(|p| sample(&["phase"], vec![p.to_string()], bool_f64(phase == *p)))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_namespace_status_condition",
                help: "The condition of a namespace.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    n.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .into_iter()
                        .flatten()
                        .flat_map(|c| condition_type_status_samples(&c.type_, &c.status))
                        .collect()
                },
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn namespace(v: serde_json::Value) -> Namespace {
        serde_json::from_value(v).expect("valid namespace")
    }

    const HEADERS: [&str; 5] = [
        "# HELP kube_namespace_created [STABLE] Unix creation timestamp\n# TYPE kube_namespace_created gauge\n",
        "# HELP kube_namespace_annotations Kubernetes annotations converted to Prometheus labels.\n# TYPE kube_namespace_annotations gauge\n",
        "# HELP kube_namespace_labels [STABLE] Kubernetes labels converted to Prometheus labels.\n# TYPE kube_namespace_labels gauge\n",
        "# HELP kube_namespace_status_phase [STABLE] kubernetes namespace status phase.\n# TYPE kube_namespace_status_phase gauge\n",
        "# HELP kube_namespace_status_condition The condition of a namespace.\n# TYPE kube_namespace_status_condition gauge\n",
    ];

    #[test]
    fn golden_terminating_with_conditions() {
        let ns = namespace(serde_json::json!({
            "metadata": { "name": "nsTerminateWithConditionTest" },
            "spec": { "finalizers": ["kubernetes"] },
            "status": {
                "phase": "Terminating",
                "conditions": [
                    { "type": "NamespaceDeletionDiscoveryFailure", "status": "True" },
                    { "type": "NamespaceDeletionContentFailure", "status": "False" },
                    { "type": "NamespaceDeletionGroupVersionParsingFailure", "status": "Unknown" }
                ]
            }
        }));
        let want = [
            HEADERS[0],
            HEADERS[1],
            HEADERS[2],
            HEADERS[3],
            r#"kube_namespace_status_phase{namespace="nsTerminateWithConditionTest",phase="Active"} 0
kube_namespace_status_phase{namespace="nsTerminateWithConditionTest",phase="Terminating"} 1
"#,
            HEADERS[4],
            r#"kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionDiscoveryFailure",status="true"} 1
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionDiscoveryFailure",status="false"} 0
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionDiscoveryFailure",status="unknown"} 0
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionContentFailure",status="true"} 0
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionContentFailure",status="false"} 1
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionContentFailure",status="unknown"} 0
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionGroupVersionParsingFailure",status="true"} 0
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionGroupVersionParsingFailure",status="false"} 0
kube_namespace_status_condition{namespace="nsTerminateWithConditionTest",condition="NamespaceDeletionGroupVersionParsingFailure",status="unknown"} 1
"#,
        ]
        .concat();
        assert_eq!(
            families().render_document(&ns, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_active_with_labels() {
        let ns = namespace(serde_json::json!({
            "metadata": {
                "name": "ns1", "creationTimestamp": "2017-07-14T02:40:00Z",
                "labels": { "app": "example1", "l2": "label2" },
                "annotations": { "owner": "team-a" }
            },
            "status": { "phase": "Active" }
        }));
        let want = [
            HEADERS[0],
            "kube_namespace_created{namespace=\"ns1\"} 1.5e+09\n",
            HEADERS[1],
            "kube_namespace_annotations{namespace=\"ns1\",annotation_owner=\"team-a\"} 1\n",
            HEADERS[2],
            "kube_namespace_labels{namespace=\"ns1\",label_app=\"example1\",label_l2=\"label2\"} 1\n",
            HEADERS[3],
            "kube_namespace_status_phase{namespace=\"ns1\",phase=\"Active\"} 1\n",
            "kube_namespace_status_phase{namespace=\"ns1\",phase=\"Terminating\"} 0\n",
            HEADERS[4],
        ]
        .concat();
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::All,
        };
        assert_eq!(families().render_document(&ns, &ctx), want);
    }

    #[test]
    fn golden_no_status() {
        let ns = namespace(serde_json::json!({ "metadata": { "name": "bare" } }));
        let want = [
            HEADERS[0],
            HEADERS[1],
            HEADERS[2],
            HEADERS[3],
            "kube_namespace_status_phase{namespace=\"bare\",phase=\"Active\"} 0\n",
            "kube_namespace_status_phase{namespace=\"bare\",phase=\"Terminating\"} 0\n",
            HEADERS[4],
        ]
        .concat();
        assert_eq!(
            families().render_document(&ns, &FamilyContext::default()),
            want
        );
    }
}
