//! `kube_validatingadmissionpolicy_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;

use super::util::created;
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<ValidatingAdmissionPolicy> {
    ResourceFamilies {
        resource: "validatingadmissionpolicies",
        // Upstream keeps a `namespace` label although the resource is cluster-scoped.
        identity_keys: &["namespace", "validatingadmissionpolicy"],
        identity: |p| {
            vec![
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_validatingadmissionpolicy_info",
                help: "Information about the ValidatingAdmissionPolicy.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    let spec = p.spec.as_ref();
                    let param = spec.and_then(|s| s.param_kind.as_ref());
                    vec![sample(
                        &["param_api_version", "param_kind", "failure_policy"],
                        vec![
                            param
                                .and_then(|k| k.api_version.clone())
                                .unwrap_or_default(),
                            param.and_then(|k| k.kind.clone()).unwrap_or_default(),
                            spec.and_then(|s| s.failure_policy.clone())
                                .unwrap_or_default(),
                        ],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_validatingadmissionpolicy_created",
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

    fn policy(v: serde_json::Value) -> ValidatingAdmissionPolicy {
        serde_json::from_value(v).expect("valid validatingadmissionpolicy")
    }

    #[test]
    fn golden_param_kind_and_failure_policy() {
        let p = policy(serde_json::json!({
            "metadata": { "name": "validatingadmissionpolicy1", "namespace": "ns1", "resourceVersion": "123456" },
            "spec": { "paramKind": { "apiVersion": "rules.example.com/v1", "kind": "Rule" }, "failurePolicy": "Fail" }
        }));
        let want = r#"# HELP kube_validatingadmissionpolicy_info Information about the ValidatingAdmissionPolicy.
# TYPE kube_validatingadmissionpolicy_info gauge
kube_validatingadmissionpolicy_info{namespace="ns1",validatingadmissionpolicy="validatingadmissionpolicy1",param_api_version="rules.example.com/v1",param_kind="Rule",failure_policy="Fail"} 1
# HELP kube_validatingadmissionpolicy_created Unix creation timestamp.
# TYPE kube_validatingadmissionpolicy_created gauge
"#;
        assert_eq!(
            families().render_document(&p, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_created_without_param_kind() {
        let p = policy(serde_json::json!({
            "metadata": { "name": "validatingadmissionpolicy2", "namespace": "ns2", "creationTimestamp": "2017-08-01T06:30:18Z" },
            "spec": { "failurePolicy": "Ignore" }
        }));
        let want = r#"# HELP kube_validatingadmissionpolicy_info Information about the ValidatingAdmissionPolicy.
# TYPE kube_validatingadmissionpolicy_info gauge
kube_validatingadmissionpolicy_info{namespace="ns2",validatingadmissionpolicy="validatingadmissionpolicy2",param_api_version="",param_kind="",failure_policy="Ignore"} 1
# HELP kube_validatingadmissionpolicy_created Unix creation timestamp.
# TYPE kube_validatingadmissionpolicy_created gauge
kube_validatingadmissionpolicy_created{namespace="ns2",validatingadmissionpolicy="validatingadmissionpolicy2"} 1.501569018e+09
"#;
        assert_eq!(
            families().render_document(&p, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn no_spec_gives_empty_labels() {
        let doc = families().render_document(
            &ValidatingAdmissionPolicy::default(),
            &FamilyContext::default(),
        );
        assert!(doc.contains(r#"{namespace="",validatingadmissionpolicy="",param_api_version="",param_kind="",failure_policy=""} 1"#), "{doc}");
    }
}
