//! `kube_storageclass_*` (storage.k8s.io/v1 StorageClass).

use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::storage::v1::StorageClass;

use super::util::{annotations_family, created, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, sample};

pub fn families() -> ResourceFamilies<StorageClass> {
    ResourceFamilies {
        resource: "storageclasses",
        identity_keys: &["storageclass"],
        identity: |s| vec![s.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_storageclass_info",
                help: "Information about storageclass.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| {
                    // Unset fields report the API's defaults.
                    vec![sample(
                        &["provisioner", "reclaim_policy", "volume_binding_mode"],
                        vec![
                            s.provisioner.clone(),
                            s.reclaim_policy
                                .clone()
                                .unwrap_or_else(|| "Delete".to_string()),
                            s.volume_binding_mode
                                .clone()
                                .unwrap_or_else(|| "Immediate".to_string()),
                        ],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_storageclass_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, _| created(&s.metadata),
            },
            FamilySpec {
                name: "kube_storageclass_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| annotations_family(&s.metadata, ctx),
            },
            FamilySpec {
                name: "kube_storageclass_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |s, ctx| labels_family(&s.metadata, ctx),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn storageclass(v: serde_json::Value) -> StorageClass {
        serde_json::from_value(v).expect("valid storageclass")
    }

    #[test]
    fn golden_defaults() {
        let s = storageclass(serde_json::json!({
            "metadata": { "name": "test_storageclass-info", "creationTimestamp": "2017-08-01T06:30:18Z" },
            "provisioner": "kubernetes.io/rbd"
        }));
        let want = r#"# HELP kube_storageclass_info [STABLE] Information about storageclass.
# TYPE kube_storageclass_info gauge
kube_storageclass_info{storageclass="test_storageclass-info",provisioner="kubernetes.io/rbd",reclaim_policy="Delete",volume_binding_mode="Immediate"} 1
# HELP kube_storageclass_created [STABLE] Unix creation timestamp
# TYPE kube_storageclass_created gauge
kube_storageclass_created{storageclass="test_storageclass-info"} 1.501569018e+09
# HELP kube_storageclass_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_storageclass_annotations gauge
# HELP kube_storageclass_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_storageclass_labels gauge
"#;
        assert_eq!(
            families().render_document(&s, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_explicit_fields_and_allowlists() {
        let s = storageclass(serde_json::json!({
            "metadata": {
                "name": "test_storageclass-labels",
                "labels": { "foo": "bar" },
                "annotations": { "storageclass.kubernetes.io/is-default-class": "true", "other": "x" }
            },
            "provisioner": "kubernetes.io/rbd",
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer"
        }));
        let want = r#"# HELP kube_storageclass_info [STABLE] Information about storageclass.
# TYPE kube_storageclass_info gauge
kube_storageclass_info{storageclass="test_storageclass-labels",provisioner="kubernetes.io/rbd",reclaim_policy="Retain",volume_binding_mode="WaitForFirstConsumer"} 1
# HELP kube_storageclass_created [STABLE] Unix creation timestamp
# TYPE kube_storageclass_created gauge
# HELP kube_storageclass_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_storageclass_annotations gauge
kube_storageclass_annotations{storageclass="test_storageclass-labels",annotation_storageclass_kubernetes_io_is_default_class="true"} 1
# HELP kube_storageclass_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_storageclass_labels gauge
kube_storageclass_labels{storageclass="test_storageclass-labels",label_foo="bar"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::Keys(vec![
                "storageclass.kubernetes.io/is-default-class".into(),
            ]),
        };
        assert_eq!(families().render_document(&s, &ctx), want);
    }
}
