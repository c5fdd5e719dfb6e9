//! `kube_secret_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::Secret;

use super::util::{annotations_family, created, labels_family, owner_family, resource_version};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

pub fn families() -> ResourceFamilies<Secret> {
    ResourceFamilies {
        resource: "secrets",
        identity_keys: &["namespace", "secret"],
        identity: |s| {
            vec![
                s.metadata.namespace.clone().unwrap_or_default(),
                s.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_secret_info",
                help: "Information about secret.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |_, _| vec![bare(1.0)],
            },
            FamilySpec {
                name: "kube_secret_type",
                help: "Type about secret.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    vec![sample(
                        &["type"],
                        vec![s.type_.clone().unwrap_or_default()],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_secret_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| annotations_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_secret_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| labels_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_secret_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| created(&s.metadata),
            },
            FamilySpec {
                name: "kube_secret_metadata_resource_version",
                help: "Resource version representing a specific version of secret.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| resource_version(&s.metadata),
            },
            FamilySpec {
                name: "kube_secret_owner",
                help: "Information about the Secret's owner.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| owner_family(&s.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn secret(v: serde_json::Value) -> Secret {
        serde_json::from_value(v).expect("valid secret")
    }

    const HEADERS: [&str; 7] = [
        "# HELP kube_secret_info [STABLE] Information about secret.\n# TYPE kube_secret_info gauge\n",
        "# HELP kube_secret_type [STABLE] Type about secret.\n# TYPE kube_secret_type gauge\n",
        "# HELP kube_secret_annotations Kubernetes annotations converted to Prometheus labels.\n# TYPE kube_secret_annotations gauge\n",
        "# HELP kube_secret_labels [STABLE] Kubernetes labels converted to Prometheus labels.\n# TYPE kube_secret_labels gauge\n",
        "# HELP kube_secret_created [STABLE] Unix creation timestamp\n# TYPE kube_secret_created gauge\n",
        "# HELP kube_secret_metadata_resource_version Resource version representing a specific version of secret.\n# TYPE kube_secret_metadata_resource_version gauge\n",
        "# HELP kube_secret_owner Information about the Secret's owner.\n# TYPE kube_secret_owner gauge\n",
    ];

    fn doc(samples: [&str; 7]) -> String {
        HEADERS
            .iter()
            .zip(samples)
            .map(|(h, s)| format!("{h}{s}"))
            .collect()
    }

    #[test]
    fn golden_opaque_without_creation_timestamp() {
        let s = secret(serde_json::json!({
            "metadata": { "name": "secret1", "namespace": "ns1", "resourceVersion": "000000" },
            "type": "Opaque"
        }));
        let want = doc([
            "kube_secret_info{namespace=\"ns1\",secret=\"secret1\"} 1\n",
            "kube_secret_type{namespace=\"ns1\",secret=\"secret1\",type=\"Opaque\"} 1\n",
            "",
            "",
            "",
            "kube_secret_metadata_resource_version{namespace=\"ns1\",secret=\"secret1\"} 0\n",
            "kube_secret_owner{namespace=\"ns1\",secret=\"secret1\",owner_kind=\"\",owner_name=\"\",owner_is_controller=\"\"} 1\n",
        ]);
        assert_eq!(
            families().render_document(&s, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_non_numeric_resource_version() {
        let s = secret(serde_json::json!({
            "metadata": {
                "name": "secret2", "namespace": "ns2", "resourceVersion": "123456B",
                "creationTimestamp": "2017-08-01T06:30:18Z"
            },
            "type": "kubernetes.io/service-account-token"
        }));
        let want = doc([
            "kube_secret_info{namespace=\"ns2\",secret=\"secret2\"} 1\n",
            "kube_secret_type{namespace=\"ns2\",secret=\"secret2\",type=\"kubernetes.io/service-account-token\"} 1\n",
            "",
            "",
            "kube_secret_created{namespace=\"ns2\",secret=\"secret2\"} 1.501569018e+09\n",
            "",
            "kube_secret_owner{namespace=\"ns2\",secret=\"secret2\",owner_kind=\"\",owner_name=\"\",owner_is_controller=\"\"} 1\n",
        ]);
        assert_eq!(
            families().render_document(&s, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_owners_and_allowlisted_labels() {
        let s = secret(serde_json::json!({
            "metadata": {
                "name": "secret4", "namespace": "ns4", "resourceVersion": "0",
                "creationTimestamp": "2017-08-01T06:30:18Z",
                "labels": { "test-4": "test-4" },
                "annotations": { "skipped": "x" },
                "ownerReferences": [
                    { "apiVersion": "v1", "kind": "ManagedSecret", "name": "managed-secret4", "uid": "u1", "controller": true },
                    { "apiVersion": "v1", "kind": "Other", "name": "o", "uid": "u2" }
                ]
            },
            "type": "Opaque"
        }));
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::Keys(vec!["absent".into()]),
        };
        let want = doc([
            "kube_secret_info{namespace=\"ns4\",secret=\"secret4\"} 1\n",
            "kube_secret_type{namespace=\"ns4\",secret=\"secret4\",type=\"Opaque\"} 1\n",
            "kube_secret_annotations{namespace=\"ns4\",secret=\"secret4\"} 1\n",
            "kube_secret_labels{namespace=\"ns4\",secret=\"secret4\",label_test_4=\"test-4\"} 1\n",
            "kube_secret_created{namespace=\"ns4\",secret=\"secret4\"} 1.501569018e+09\n",
            "kube_secret_metadata_resource_version{namespace=\"ns4\",secret=\"secret4\"} 0\n",
            "kube_secret_owner{namespace=\"ns4\",secret=\"secret4\",owner_kind=\"ManagedSecret\",owner_name=\"managed-secret4\",owner_is_controller=\"true\"} 1\n\
             kube_secret_owner{namespace=\"ns4\",secret=\"secret4\",owner_kind=\"Other\",owner_name=\"o\",owner_is_controller=\"false\"} 1\n",
        ]);
        assert_eq!(families().render_document(&s, &ctx), want);
    }

    #[test]
    fn empty_secret_does_not_panic() {
        let doc = families().render_document(&Secret::default(), &FamilyContext::default());
        assert!(
            doc.contains("kube_secret_type{namespace=\"\",secret=\"\",type=\"\"} 1\n"),
            "{doc}"
        );
    }
}
