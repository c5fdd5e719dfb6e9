//! `kube_volumeattachment_*` (storage.k8s.io/v1 VolumeAttachment).

use std::collections::BTreeMap;

use ferrocrane_core::exposition::MetricType::Gauge;
use ferrocrane_core::exposition::{Metric, kube_btree_labels_to_prometheus};
use k8s_openapi::api::storage::v1::VolumeAttachment;

use super::util::{bool_f64, created};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

pub fn families() -> ResourceFamilies<VolumeAttachment> {
    ResourceFamilies {
        resource: "volumeattachments",
        identity_keys: &["volumeattachment"],
        identity: |v| vec![v.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_volumeattachment_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                // Upstream takes no allowlist for this resource: every label is exported.
                generate: |v, _| vec![map_family("label", v.metadata.labels.as_ref())],
            },
            FamilySpec {
                name: "kube_volumeattachment_info",
                help: "Information about volumeattachment.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |v, _| {
                    vec![sample(
                        &["attacher", "node"],
                        vec![v.spec.attacher.clone(), v.spec.node_name.clone()],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_volumeattachment_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |v, _| created(&v.metadata),
            },
            FamilySpec {
                name: "kube_volumeattachment_spec_source_persistentvolume",
                help: "PersistentVolume source reference.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |v, _| {
                    v.spec
                        .source
                        .persistent_volume_name
                        .as_ref()
                        .map(|pv| vec![sample(&["volumename"], vec![pv.clone()], 1.0)])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_volumeattachment_status_attached",
                help: "Information about volumeattachment.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |v, _| {
                    vec![bare(bool_f64(
                        v.status.as_ref().is_some_and(|s| s.attached),
                    ))]
                },
            },
            FamilySpec {
                name: "kube_volumeattachment_status_attachment_metadata",
                help: "volumeattachment metadata.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |v, _| {
                    vec![map_family(
                        "metadata",
                        v.status
                            .as_ref()
                            .and_then(|s| s.attachment_metadata.as_ref()),
                    )]
                },
            },
        ],
    }
}

/// Every key of `map` as a `<prefix>_*` label on one sample, emitted even when empty.
fn map_family(prefix: &str, map: Option<&BTreeMap<String, String>>) -> Metric {
    let empty = BTreeMap::new();
    let (keys, values) = kube_btree_labels_to_prometheus(prefix, map.unwrap_or(&empty));
    Metric::new(keys.into_iter().map(Into::into).collect(), values, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FamilyContext;

    fn va(v: serde_json::Value) -> VolumeAttachment {
        serde_json::from_value(v).expect("valid volumeattachment")
    }

    #[test]
    fn golden_attached() {
        let v = va(serde_json::json!({
            "metadata": {
                "name": "csi-5ff16a1a", "generation": 2, "creationTimestamp": "2017-07-14T02:40:00Z",
                "labels": { "app": "foobar" }
            },
            "spec": {
                "attacher": "cinder.csi.openstack.org", "nodeName": "node1",
                "source": { "persistentVolumeName": "pvc-44f6ff3f-ba9b-49c4-9b95-8b01c4bd4bab" }
            },
            "status": { "attached": true, "attachmentMetadata": { "DevicePath": "/dev/sdd" } }
        }));
        let want = r#"# HELP kube_volumeattachment_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_volumeattachment_labels gauge
kube_volumeattachment_labels{volumeattachment="csi-5ff16a1a",label_app="foobar"} 1
# HELP kube_volumeattachment_info Information about volumeattachment.
# TYPE kube_volumeattachment_info gauge
kube_volumeattachment_info{volumeattachment="csi-5ff16a1a",attacher="cinder.csi.openstack.org",node="node1"} 1
# HELP kube_volumeattachment_created Unix creation timestamp
# TYPE kube_volumeattachment_created gauge
kube_volumeattachment_created{volumeattachment="csi-5ff16a1a"} 1.5e+09
# HELP kube_volumeattachment_spec_source_persistentvolume PersistentVolume source reference.
# TYPE kube_volumeattachment_spec_source_persistentvolume gauge
kube_volumeattachment_spec_source_persistentvolume{volumeattachment="csi-5ff16a1a",volumename="pvc-44f6ff3f-ba9b-49c4-9b95-8b01c4bd4bab"} 1
# HELP kube_volumeattachment_status_attached Information about volumeattachment.
# TYPE kube_volumeattachment_status_attached gauge
kube_volumeattachment_status_attached{volumeattachment="csi-5ff16a1a"} 1
# HELP kube_volumeattachment_status_attachment_metadata volumeattachment metadata.
# TYPE kube_volumeattachment_status_attachment_metadata gauge
kube_volumeattachment_status_attachment_metadata{volumeattachment="csi-5ff16a1a",metadata_device_path="/dev/sdd"} 1
"#;
        // Labels are exported without any allowlist, as upstream does for this resource.
        assert_eq!(
            families().render_document(&v, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_no_status_no_labels() {
        let v = va(serde_json::json!({
            "metadata": { "name": "va" },
            "spec": { "attacher": "a", "nodeName": "n", "source": {} }
        }));
        let want = r#"# HELP kube_volumeattachment_labels Kubernetes labels converted to Prometheus labels.
# TYPE kube_volumeattachment_labels gauge
kube_volumeattachment_labels{volumeattachment="va"} 1
# HELP kube_volumeattachment_info Information about volumeattachment.
# TYPE kube_volumeattachment_info gauge
kube_volumeattachment_info{volumeattachment="va",attacher="a",node="n"} 1
# HELP kube_volumeattachment_created Unix creation timestamp
# TYPE kube_volumeattachment_created gauge
# HELP kube_volumeattachment_spec_source_persistentvolume PersistentVolume source reference.
# TYPE kube_volumeattachment_spec_source_persistentvolume gauge
# HELP kube_volumeattachment_status_attached Information about volumeattachment.
# TYPE kube_volumeattachment_status_attached gauge
kube_volumeattachment_status_attached{volumeattachment="va"} 0
# HELP kube_volumeattachment_status_attachment_metadata volumeattachment metadata.
# TYPE kube_volumeattachment_status_attachment_metadata gauge
kube_volumeattachment_status_attachment_metadata{volumeattachment="va"} 1
"#;
        assert_eq!(
            families().render_document(&v, &FamilyContext::default()),
            want
        );
    }
}
