//! `kube_role_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::rbac::v1::Role;

use super::util::{annotations_family, created, labels_family, resource_version};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

pub fn families() -> ResourceFamilies<Role> {
    ResourceFamilies {
        resource: "roles",
        identity_keys: &["namespace", "role"],
        identity: |r| {
            vec![
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_role_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| annotations_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_role_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| labels_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_role_info",
                help: "Information about role.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |_, _| vec![bare(1.0)],
            },
            FamilySpec {
                name: "kube_role_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| created(&r.metadata),
            },
            FamilySpec {
                name: "kube_role_metadata_resource_version",
                help: "Resource version representing a specific version of the role.",
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

    fn object(v: serde_json::Value) -> Role {
        serde_json::from_value(v).expect("valid role")
    }

    #[test]
    fn golden_allowlisted_and_non_numeric_resource_version() {
        let r = object(serde_json::json!({
            "metadata": {
                "name": "role1", "namespace": "ns1", "resourceVersion": "BBBBB",
                "annotations": { "app": "mysql-server", "app.k8s.io/owner": "@foo" },
                "labels": { "excluded": "me", "app": "mysql-server" }
            }
        }));
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["app".into()]),
            annotations: KeyAllowlist::Keys(vec!["app.k8s.io/owner".into()]),
        };
        let want = r#"# HELP kube_role_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_role_annotations gauge
kube_role_annotations{namespace="ns1",role="role1",annotation_app_k8s_io_owner="@foo"} 1
# HELP kube_role_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_role_labels gauge
kube_role_labels{namespace="ns1",role="role1",label_app="mysql-server"} 1
# HELP kube_role_info Information about role.
# TYPE kube_role_info gauge
kube_role_info{namespace="ns1",role="role1"} 1
# HELP kube_role_created Unix creation timestamp
# TYPE kube_role_created gauge
# HELP kube_role_metadata_resource_version Resource version representing a specific version of the role.
# TYPE kube_role_metadata_resource_version gauge
"#;
        assert_eq!(families().render_document(&r, &ctx), want);
    }

    #[test]
    fn golden_created_and_resource_version() {
        let r = object(serde_json::json!({
            "metadata": { "name": "role2", "namespace": "ns2", "creationTimestamp": "2017-08-01T06:30:18Z", "resourceVersion": "10596" }
        }));
        let want = r#"# HELP kube_role_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_role_annotations gauge
# HELP kube_role_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_role_labels gauge
# HELP kube_role_info Information about role.
# TYPE kube_role_info gauge
kube_role_info{namespace="ns2",role="role2"} 1
# HELP kube_role_created Unix creation timestamp
# TYPE kube_role_created gauge
kube_role_created{namespace="ns2",role="role2"} 1.501569018e+09
# HELP kube_role_metadata_resource_version Resource version representing a specific version of the role.
# TYPE kube_role_metadata_resource_version gauge
kube_role_metadata_resource_version{namespace="ns2",role="role2"} 10596
"#;
        assert_eq!(
            families().render_document(&r, &FamilyContext::default()),
            want
        );
    }
}
