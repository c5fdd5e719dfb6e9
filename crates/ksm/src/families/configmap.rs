//! `kube_configmap_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::core::v1::ConfigMap;

use super::util::{annotations_family, created, labels_family, resource_version};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare};

pub fn families() -> ResourceFamilies<ConfigMap> {
    ResourceFamilies {
        resource: "configmaps",
        identity_keys: &["namespace", "configmap"],
        identity: |c| {
            vec![
                c.metadata.namespace.clone().unwrap_or_default(),
                c.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_configmap_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| annotations_family(&c.metadata, ctx),
            },
            FamilySpec {
                name: "kube_configmap_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| labels_family(&c.metadata, ctx),
            },
            FamilySpec {
                name: "kube_configmap_info",
                help: "Information about configmap.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |_, _| vec![bare(1.0)],
            },
            FamilySpec {
                name: "kube_configmap_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| created(&c.metadata),
            },
            FamilySpec {
                name: "kube_configmap_metadata_resource_version",
                help: "Resource version representing a specific version of the configmap.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| resource_version(&c.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn configmap() -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "settings", "namespace": "prod", "resourceVersion": "123",
                "creationTimestamp": "2017-08-01T12:30:18Z",
                "labels": { "app.kubernetes.io/name": "web", "team": "core" },
                "annotations": { "note": "x\"y" }
            }
        }))
        .expect("valid configmap")
    }

    #[test]
    fn golden_default() {
        let want = r#"# HELP kube_configmap_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_configmap_annotations gauge
# HELP kube_configmap_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_configmap_labels gauge
# HELP kube_configmap_info [STABLE] Information about configmap.
# TYPE kube_configmap_info gauge
kube_configmap_info{namespace="prod",configmap="settings"} 1
# HELP kube_configmap_created [STABLE] Unix creation timestamp
# TYPE kube_configmap_created gauge
kube_configmap_created{namespace="prod",configmap="settings"} 1.501590618e+09
# HELP kube_configmap_metadata_resource_version Resource version representing a specific version of the configmap.
# TYPE kube_configmap_metadata_resource_version gauge
kube_configmap_metadata_resource_version{namespace="prod",configmap="settings"} 123
"#;
        assert_eq!(
            families().render_document(&configmap(), &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_allowlisted_labels_and_annotations() {
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::Keys(vec!["note".into()]),
        };
        let doc = families().render_document(&configmap(), &ctx);
        assert!(
            doc.contains(r#"kube_configmap_labels{namespace="prod",configmap="settings",label_app_kubernetes_io_name="web",label_team="core"} 1"#),
            "{doc}"
        );
        assert!(doc.contains(r#"kube_configmap_annotations{namespace="prod",configmap="settings",annotation_note="x\"y"} 1"#), "{doc}");
    }
}
