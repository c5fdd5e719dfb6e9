//! `kube_validatingadmissionpolicybinding_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;

use super::util::{admission_policy_binding_info, created};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<ValidatingAdmissionPolicyBinding> {
    ResourceFamilies {
        resource: "validatingadmissionpolicybindings",
        // Upstream keeps a `namespace` label although the resource is cluster-scoped.
        identity_keys: &["namespace", "validatingadmissionpolicybinding"],
        identity: |b| {
            vec![
                b.metadata.namespace.clone().unwrap_or_default(),
                b.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_validatingadmissionpolicybinding_info",
                help: "Information about the ValidatingAdmissionPolicyBinding.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |b, _| {
                    admission_policy_binding_info(
                        b.spec.policy_name.clone(),
                        b.spec.param_ref.as_ref(),
                    )
                },
            },
            FamilySpec {
                name: "kube_validatingadmissionpolicybinding_created",
                help: "Unix creation timestamp.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |b, _| created(&b.metadata),
            },
            FamilySpec {
                name: "kube_validatingadmissionpolicybinding_validation_action",
                help: "Validation actions for the ValidatingAdmissionPolicyBinding.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |b, _| {
                    b.spec
                        .validation_actions
                        .iter()
                        .map(|a| sample(&["action"], vec![a.clone()], 1.0))
                        .collect()
                },
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn binding(v: serde_json::Value) -> ValidatingAdmissionPolicyBinding {
        serde_json::from_value(v).expect("valid validatingadmissionpolicybinding")
    }

    #[test]
    fn golden_param_ref_and_actions() {
        let b = binding(serde_json::json!({
            "metadata": { "name": "validatingadmissionpolicybinding1", "namespace": "ns1", "resourceVersion": "123456" },
            "spec": {
                "policyName": "validatingadmissionpolicy1",
                "paramRef": { "name": "param1", "namespace": "ns1", "parameterNotFoundAction": "Deny" },
                "validationActions": ["Deny", "Warn"]
            }
        }));
        let want = r#"# HELP kube_validatingadmissionpolicybinding_info Information about the ValidatingAdmissionPolicyBinding.
# TYPE kube_validatingadmissionpolicybinding_info gauge
kube_validatingadmissionpolicybinding_info{namespace="ns1",validatingadmissionpolicybinding="validatingadmissionpolicybinding1",policy_name="validatingadmissionpolicy1",param_name="param1",param_namespace="ns1",param_not_found_action="Deny"} 1
# HELP kube_validatingadmissionpolicybinding_created Unix creation timestamp.
# TYPE kube_validatingadmissionpolicybinding_created gauge
# HELP kube_validatingadmissionpolicybinding_validation_action Validation actions for the ValidatingAdmissionPolicyBinding.
# TYPE kube_validatingadmissionpolicybinding_validation_action gauge
kube_validatingadmissionpolicybinding_validation_action{namespace="ns1",validatingadmissionpolicybinding="validatingadmissionpolicybinding1",action="Deny"} 1
kube_validatingadmissionpolicybinding_validation_action{namespace="ns1",validatingadmissionpolicybinding="validatingadmissionpolicybinding1",action="Warn"} 1
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
                "name": "validatingadmissionpolicybinding2", "namespace": "ns2",
                "creationTimestamp": "2017-08-01T06:30:18Z", "resourceVersion": "abcdef"
            },
            "spec": { "policyName": "validatingadmissionpolicy2" }
        }));
        let want = r#"# HELP kube_validatingadmissionpolicybinding_info Information about the ValidatingAdmissionPolicyBinding.
# TYPE kube_validatingadmissionpolicybinding_info gauge
kube_validatingadmissionpolicybinding_info{namespace="ns2",validatingadmissionpolicybinding="validatingadmissionpolicybinding2",policy_name="validatingadmissionpolicy2",param_name="",param_namespace="",param_not_found_action=""} 1
# HELP kube_validatingadmissionpolicybinding_created Unix creation timestamp.
# TYPE kube_validatingadmissionpolicybinding_created gauge
kube_validatingadmissionpolicybinding_created{namespace="ns2",validatingadmissionpolicybinding="validatingadmissionpolicybinding2"} 1.501569018e+09
# HELP kube_validatingadmissionpolicybinding_validation_action Validation actions for the ValidatingAdmissionPolicyBinding.
# TYPE kube_validatingadmissionpolicybinding_validation_action gauge
"#;
        assert_eq!(
            families().render_document(&b, &FamilyContext::default()),
            want
        );
    }
}
