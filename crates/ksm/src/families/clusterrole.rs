//! `kube_clusterrole_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::rbac::v1::ClusterRole;

use super::util::{annotations_family, created, labels_family, resource_version};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

pub fn families() -> ResourceFamilies<ClusterRole> {
    ResourceFamilies {
        resource: "clusterroles",
        identity_keys: &["clusterrole"],
        identity: |r| vec![r.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_clusterrole_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| annotations_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_clusterrole_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, ctx| labels_family(&r.metadata, ctx),
            },
            FamilySpec {
                name: "kube_clusterrole_info",
                help: "Information about cluster role.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |_, _| vec![bare(1.0)],
            },
            FamilySpec {
                name: "kube_clusterrole_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |r, _| created(&r.metadata),
            },
            FamilySpec {
                name: "kube_clusterrole_metadata_resource_version",
                help: "Resource version representing a specific version of the cluster role.",
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

    fn object(v: serde_json::Value) -> ClusterRole {
        serde_json::from_value(v).expect("valid clusterrole")
    }

    #[test]
    fn golden_allowlisted_and_non_numeric_resource_version() {
        let r = object(serde_json::json!({
            "metadata": {
                "name": "clusterrole1", "resourceVersion": "BBBBB",
                "annotations": { "app": "mysql-server", "app.k8s.io/owner": "@foo" },
                "labels": { "excluded": "me", "app": "mysql-server" }
            }
        }));
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["app".into()]),
            annotations: KeyAllowlist::Keys(vec!["app.k8s.io/owner".into()]),
        };
        let want = r#"# HELP kube_clusterrole_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_clusterrole_annotations gauge
kube_clusterrole_annotations{clusterrole="clusterrole1",annotation_app_k8s_io_owner="@foo"} 1
# HELP kube_clusterrole_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_clusterrole_labels gauge
kube_clusterrole_labels{clusterrole="clusterrole1",label_app="mysql-server"} 1
# HELP kube_clusterrole_info Information about cluster role.
# TYPE kube_clusterrole_info gauge
kube_clusterrole_info{clusterrole="clusterrole1"} 1
# HELP kube_clusterrole_created Unix creation timestamp
# TYPE kube_clusterrole_created gauge
# HELP kube_clusterrole_metadata_resource_version Resource version representing a specific version of the cluster role.
# TYPE kube_clusterrole_metadata_resource_version gauge
"#;
        assert_eq!(families().render_document(&r, &ctx), want);
    }

    #[test]
    fn golden_created_and_resource_version() {
        let r = object(serde_json::json!({
            "metadata": { "name": "clusterrole2", "creationTimestamp": "2017-08-01T06:30:18Z", "resourceVersion": "10596" }
        }));
        let want = r#"# HELP kube_clusterrole_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_clusterrole_annotations gauge
# HELP kube_clusterrole_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_clusterrole_labels gauge
# HELP kube_clusterrole_info Information about cluster role.
# TYPE kube_clusterrole_info gauge
kube_clusterrole_info{clusterrole="clusterrole2"} 1
# HELP kube_clusterrole_created Unix creation timestamp
# TYPE kube_clusterrole_created gauge
kube_clusterrole_created{clusterrole="clusterrole2"} 1.501569018e+09
# HELP kube_clusterrole_metadata_resource_version Resource version representing a specific version of the cluster role.
# TYPE kube_clusterrole_metadata_resource_version gauge
kube_clusterrole_metadata_resource_version{clusterrole="clusterrole2"} 10596
"#;
        assert_eq!(
            families().render_document(&r, &FamilyContext::default()),
            want
        );
    }
}
