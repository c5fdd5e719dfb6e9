//! `kube_clusterrolebinding_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;

use super::util::{annotations_family, created, labels_family, resource_version};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<ClusterRoleBinding> {
    ResourceFamilies {
        resource: "clusterrolebindings",
        identity_keys: &["clusterrolebinding"],
        identity: |r| vec![r.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_clusterrolebinding_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| annotations_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_clusterrolebinding_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| labels_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_clusterrolebinding_info",
                help: "Information about clusterrolebinding.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| {
                    vec![sample(
                        &["roleref_kind", "roleref_name"],
                        vec![r.role_ref.kind.clone(), r.role_ref.name.clone()],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_clusterrolebinding_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| created(&r.metadata),
            },
            FamilySpec {
                name: "kube_clusterrolebinding_metadata_resource_version",
                help: "Resource version representing a specific version of the clusterrolebinding.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| resource_version(&r.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn object(v: serde_json::Value) -> ClusterRoleBinding {
        serde_json::from_value(v).expect("valid clusterrolebinding")
    }

    #[test]
    fn golden_allowlisted_and_non_numeric_resource_version() {
        let r = object(serde_json::json!({
            "metadata": {
                "name": "clusterrolebinding1", "resourceVersion": "BBBBB",
                "annotations": { "app": "mysql-server", "app.k8s.io/owner": "@foo" },
                "labels": { "excluded": "me", "app": "mysql-server" }
            },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role" }
        }));
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["app".into()]),
            annotations: KeyAllowlist::Keys(vec!["app.k8s.io/owner".into()]),
        };
        let want = r#"# HELP kube_clusterrolebinding_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_clusterrolebinding_annotations gauge
kube_clusterrolebinding_annotations{clusterrolebinding="clusterrolebinding1",annotation_app_k8s_io_owner="@foo"} 1
# HELP kube_clusterrolebinding_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_clusterrolebinding_labels gauge
kube_clusterrolebinding_labels{clusterrolebinding="clusterrolebinding1",label_app="mysql-server"} 1
# HELP kube_clusterrolebinding_info Information about clusterrolebinding.
# TYPE kube_clusterrolebinding_info gauge
kube_clusterrolebinding_info{clusterrolebinding="clusterrolebinding1",roleref_kind="Role",roleref_name="role"} 1
# HELP kube_clusterrolebinding_created Unix creation timestamp
# TYPE kube_clusterrolebinding_created gauge
# HELP kube_clusterrolebinding_metadata_resource_version Resource version representing a specific version of the clusterrolebinding.
# TYPE kube_clusterrolebinding_metadata_resource_version gauge
"#;
        assert_eq!(families().render_document(&r, &ctx), want);
    }

    #[test]
    fn golden_created_and_resource_version() {
        let r = object(serde_json::json!({
            "metadata": { "name": "clusterrolebinding2", "creationTimestamp": "2017-08-01T06:30:18Z", "resourceVersion": "10596" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role" }
        }));
        let want = r#"# HELP kube_clusterrolebinding_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_clusterrolebinding_annotations gauge
# HELP kube_clusterrolebinding_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_clusterrolebinding_labels gauge
# HELP kube_clusterrolebinding_info Information about clusterrolebinding.
# TYPE kube_clusterrolebinding_info gauge
kube_clusterrolebinding_info{clusterrolebinding="clusterrolebinding2",roleref_kind="Role",roleref_name="role"} 1
# HELP kube_clusterrolebinding_created Unix creation timestamp
# TYPE kube_clusterrolebinding_created gauge
kube_clusterrolebinding_created{clusterrolebinding="clusterrolebinding2"} 1.501569018e+09
# HELP kube_clusterrolebinding_metadata_resource_version Resource version representing a specific version of the clusterrolebinding.
# TYPE kube_clusterrolebinding_metadata_resource_version gauge
kube_clusterrolebinding_metadata_resource_version{clusterrolebinding="clusterrolebinding2"} 10596
"#;
        assert_eq!(
            families().render_document(&r, &FamilyContext::default()),
            want
        );
    }
}
