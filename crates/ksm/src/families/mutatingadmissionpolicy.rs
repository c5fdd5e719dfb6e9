//! `kube_mutatingadmissionpolicy_*` (admissionregistration.k8s.io/v1, as upstream).

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicy;

use super::util::created;
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<MutatingAdmissionPolicy> {
    ResourceFamilies {
        resource: "mutatingadmissionpolicies",
        // Upstream keeps a `namespace` label although the resource is cluster-scoped.
        identity_keys: &["namespace", "mutatingadmissionpolicy"],
        identity: |p| {
            vec![
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_mutatingadmissionpolicy_info",
                help: "Information about the MutatingAdmissionPolicy.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    let spec = p.spec.as_ref();
                    let param = spec.and_then(|s| s.param_kind.as_ref());
                    vec![sample(
                        &[
                            "param_api_version",
                            "param_kind",
                            "failure_policy",
                            "reinvocation_policy",
                        ],
                        vec![
                            param
                                .and_then(|k| k.api_version.clone())
                                .unwrap_or_default(),
                            param.and_then(|k| k.kind.clone()).unwrap_or_default(),
                            spec.and_then(|s| s.failure_policy.clone())
                                .unwrap_or_default(),
                            spec.and_then(|s| s.reinvocation_policy.clone())
                                .unwrap_or_default(),
                        ],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_mutatingadmissionpolicy_created",
                help: "Unix creation timestamp.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| created(&p.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn policy(v: serde_json::Value) -> MutatingAdmissionPolicy {
        serde_json::from_value(v).expect("valid mutatingadmissionpolicy")
    }

    #[test]
    fn golden_param_kind_and_policies() {
        let p = policy(serde_json::json!({
            "metadata": { "name": "mutatingadmissionpolicy1", "namespace": "ns1", "resourceVersion": "123456" },
            "spec": {
                "paramKind": { "apiVersion": "rules.example.com/v1", "kind": "Rule" },
                "failurePolicy": "Fail", "reinvocationPolicy": "Never"
            }
        }));
        let want = r#"# HELP kube_mutatingadmissionpolicy_info Information about the MutatingAdmissionPolicy.
# TYPE kube_mutatingadmissionpolicy_info gauge
kube_mutatingadmissionpolicy_info{namespace="ns1",mutatingadmissionpolicy="mutatingadmissionpolicy1",param_api_version="rules.example.com/v1",param_kind="Rule",failure_policy="Fail",reinvocation_policy="Never"} 1
# HELP kube_mutatingadmissionpolicy_created Unix creation timestamp.
# TYPE kube_mutatingadmissionpolicy_created gauge
"#;
        assert_eq!(
            families().render_document(&p, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_created_without_param_kind() {
        let p = policy(serde_json::json!({
            "metadata": { "name": "mutatingadmissionpolicy2", "namespace": "ns2", "creationTimestamp": "2017-08-01T06:30:18Z" },
            "spec": { "failurePolicy": "Ignore", "reinvocationPolicy": "IfNeeded" }
        }));
        let want = r#"# HELP kube_mutatingadmissionpolicy_info Information about the MutatingAdmissionPolicy.
# TYPE kube_mutatingadmissionpolicy_info gauge
kube_mutatingadmissionpolicy_info{namespace="ns2",mutatingadmissionpolicy="mutatingadmissionpolicy2",param_api_version="",param_kind="",failure_policy="Ignore",reinvocation_policy="IfNeeded"} 1
# HELP kube_mutatingadmissionpolicy_created Unix creation timestamp.
# TYPE kube_mutatingadmissionpolicy_created gauge
kube_mutatingadmissionpolicy_created{namespace="ns2",mutatingadmissionpolicy="mutatingadmissionpolicy2"} 1.501569018e+09
"#;
        assert_eq!(
            families().render_document(&p, &FamilyContext::default()),
            want
        );
    }
}
