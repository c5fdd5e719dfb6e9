//! `kube_mutatingadmissionpolicybinding_*` (admissionregistration.k8s.io/v1, as upstream).

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicyBinding;

use super::util::{admission_policy_binding_info, created};
use super::{FamilySpec, ResourceFamilies, Stability::*};

pub fn families() -> ResourceFamilies<MutatingAdmissionPolicyBinding> {
    ResourceFamilies {
        resource: "mutatingadmissionpolicybindings",
        // Upstream keeps a `namespace` label although the resource is cluster-scoped.
        identity_keys: &["namespace", "mutatingadmissionpolicybinding"],
        identity: |b| {
            vec![
                b.metadata.namespace.clone().unwrap_or_default(),
                b.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_mutatingadmissionpolicybinding_info",
                help: "Information about the MutatingAdmissionPolicyBinding.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |b, _| {
                    let spec = b.spec.as_ref();
                    admission_policy_binding_info(
                        spec.and_then(|s| s.policy_name.clone()).unwrap_or_default(),
                        spec.and_then(|s| s.param_ref.as_ref()),
                    )
                },
            },
            FamilySpec {
                name: "kube_mutatingadmissionpolicybinding_created",
                help: "Unix creation timestamp.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |b, _| created(&b.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn binding(v: serde_json::Value) -> MutatingAdmissionPolicyBinding {
        serde_json::from_value(v).expect("valid mutatingadmissionpolicybinding")
    }

    #[test]
    fn golden_param_ref() {
        let b = binding(serde_json::json!({
            "metadata": { "name": "mutatingadmissionpolicybinding1", "namespace": "ns1", "resourceVersion": "123456" },
            "spec": {
                "policyName": "mutatingadmissionpolicy1",
                "paramRef": { "name": "param1", "namespace": "ns1", "parameterNotFoundAction": "Deny" }
            }
        }));
        let want = r#"# HELP kube_mutatingadmissionpolicybinding_info Information about the MutatingAdmissionPolicyBinding.
# TYPE kube_mutatingadmissionpolicybinding_info gauge
kube_mutatingadmissionpolicybinding_info{namespace="ns1",mutatingadmissionpolicybinding="mutatingadmissionpolicybinding1",policy_name="mutatingadmissionpolicy1",param_name="param1",param_namespace="ns1",param_not_found_action="Deny"} 1
# HELP kube_mutatingadmissionpolicybinding_created Unix creation timestamp.
# TYPE kube_mutatingadmissionpolicybinding_created gauge
"#;
        assert_eq!(
            families().render_document(&b, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_created_without_param_ref() {
        let b = binding(serde_json::json!({
            "metadata": {
                "name": "mutatingadmissionpolicybinding2", "namespace": "ns2",
                "creationTimestamp": "2017-08-01T06:30:18Z", "resourceVersion": "abcdef"
            },
            "spec": { "policyName": "mutatingadmissionpolicy2" }
        }));
        let want = r#"# HELP kube_mutatingadmissionpolicybinding_info Information about the MutatingAdmissionPolicyBinding.
# TYPE kube_mutatingadmissionpolicybinding_info gauge
kube_mutatingadmissionpolicybinding_info{namespace="ns2",mutatingadmissionpolicybinding="mutatingadmissionpolicybinding2",policy_name="mutatingadmissionpolicy2",param_name="",param_namespace="",param_not_found_action=""} 1
# HELP kube_mutatingadmissionpolicybinding_created Unix creation timestamp.
# TYPE kube_mutatingadmissionpolicybinding_created gauge
kube_mutatingadmissionpolicybinding_created{namespace="ns2",mutatingadmissionpolicybinding="mutatingadmissionpolicybinding2"} 1.501569018e+09
"#;
        assert_eq!(
            families().render_document(&b, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn no_spec_gives_empty_labels() {
        let doc = families().render_document(
            &MutatingAdmissionPolicyBinding::default(),
            &FamilyContext::default(),
        );
        assert!(
            doc.contains(
                r#"policy_name="",param_name="",param_namespace="",param_not_found_action=""} 1"#
            ),
            "{doc}"
        );
    }
}
