//! `kube_persistentvolumeclaim_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use ferrocrane_core::quantity::Quantity;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec};

use super::util::{
    annotations_family, bool_f64, condition_type_status_samples, created, deletion_timestamp,
    labels_family,
};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

/// The beta annotation that, when present, wins over `spec.storageClassName`.
const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

fn spec(p: &PersistentVolumeClaim) -> Option<&PersistentVolumeClaimSpec> {
    p.spec.as_ref()
}

pub fn families() -> ResourceFamilies<PersistentVolumeClaim> {
    ResourceFamilies {
        resource: "persistentvolumeclaims",
        identity_keys: &["namespace", "persistentvolumeclaim"],
        identity: |p| {
            vec![
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_persistentvolumeclaim_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, ctx| labels_family(&p.metadata, ctx),
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, ctx| annotations_family(&p.metadata, ctx),
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_info",
                help: "Information about persistent volume claim.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    let class = p
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
                        .cloned()
                        .or_else(|| spec(p).and_then(|s| s.storage_class_name.clone()))
                        .unwrap_or_default();
                    vec![sample(
                        &["storageclass", "volumename", "volumemode"],
                        vec![
                            class,
                            spec(p)
                                .and_then(|s| s.volume_name.clone())
                                .unwrap_or_default(),
                            spec(p)
                                .and_then(|s| s.volume_mode.clone())
                                .unwrap_or_default(),
                        ],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_status_phase",
                help: "The phase the persistent volume claim is currently in.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    let phase = p
                        .status
                        .as_ref()
                        .and_then(|s| s.phase.as_deref())
                        .unwrap_or("");
                    if phase.is_empty() {
                        return Vec::new();
                    }
                    ["Lost", "Bound", "Pending"]
                        .iter()
                        .map(|ph| sample(&["phase"], vec![ph.to_string()], bool_f64(phase == *ph)))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_resource_requests_storage_bytes",
                help: "The capacity of storage requested by the persistent volume claim.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    spec(p)
                        .and_then(|s| s.resources.as_ref())
                        .and_then(|r| r.requests.as_ref())
                        .and_then(|r| r.get("storage"))
                        .and_then(|q| Quantity::parse(&q.0).ok())
                        .map(|q| vec![bare(q.value() as f64)])
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_access_mode",
                help: "The access mode(s) specified by the persistent volume claim.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    spec(p)
                        .and_then(|s| s.access_modes.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|m| sample(&["access_mode"], vec![m.clone()], 1.0))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_status_condition",
                help: "Information about status of different conditions of persistent volume claim.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    p.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .into_iter()
                        .flatten()
                        .flat_map(|c| condition_type_status_samples(&c.type_, &c.status))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| created(&p.metadata),
            },
            FamilySpec {
                name: "kube_persistentvolumeclaim_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| deletion_timestamp(&p.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn pvc(v: serde_json::Value) -> PersistentVolumeClaim {
        serde_json::from_value(v).expect("valid persistentvolumeclaim")
    }

    #[test]
    fn golden_bound() {
        let p = pvc(serde_json::json!({
            "metadata": {
                "name": "mysql-data", "namespace": "default",
                "creationTimestamp": "2017-07-14T02:40:00Z", "deletionTimestamp": "2017-07-14T02:40:01Z",
                "labels": { "app": "mysql-server" }
            },
            "spec": {
                "storageClassName": "rbd", "volumeName": "pvc-mysql-data", "volumeMode": "Filesystem",
                "accessModes": ["ReadWriteOnce"],
                "resources": { "requests": { "storage": "1Gi" } }
            },
            "status": {
                "phase": "Bound",
                "conditions": [
                    { "type": "FileSystemResizePending", "status": "True" },
                    { "type": "Resizing", "status": "False" }
                ]
            }
        }));
        let want = r#"# HELP kube_persistentvolumeclaim_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_persistentvolumeclaim_labels gauge
kube_persistentvolumeclaim_labels{namespace="default",persistentvolumeclaim="mysql-data",label_app="mysql-server"} 1
# HELP kube_persistentvolumeclaim_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_persistentvolumeclaim_annotations gauge
# HELP kube_persistentvolumeclaim_info [STABLE] Information about persistent volume claim.
# TYPE kube_persistentvolumeclaim_info gauge
kube_persistentvolumeclaim_info{namespace="default",persistentvolumeclaim="mysql-data",storageclass="rbd",volumename="pvc-mysql-data",volumemode="Filesystem"} 1
# HELP kube_persistentvolumeclaim_status_phase [STABLE] The phase the persistent volume claim is currently in.
# TYPE kube_persistentvolumeclaim_status_phase gauge
kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="mysql-data",phase="Lost"} 0
kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="mysql-data",phase="Bound"} 1
kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="mysql-data",phase="Pending"} 0
# HELP kube_persistentvolumeclaim_resource_requests_storage_bytes [STABLE] The capacity of storage requested by the persistent volume claim.
# TYPE kube_persistentvolumeclaim_resource_requests_storage_bytes gauge
kube_persistentvolumeclaim_resource_requests_storage_bytes{namespace="default",persistentvolumeclaim="mysql-data"} 1.073741824e+09
# HELP kube_persistentvolumeclaim_access_mode [STABLE] The access mode(s) specified by the persistent volume claim.
# TYPE kube_persistentvolumeclaim_access_mode gauge
kube_persistentvolumeclaim_access_mode{namespace="default",persistentvolumeclaim="mysql-data",access_mode="ReadWriteOnce"} 1
# HELP kube_persistentvolumeclaim_status_condition Information about status of different conditions of persistent volume claim.
# TYPE kube_persistentvolumeclaim_status_condition gauge
kube_persistentvolumeclaim_status_condition{namespace="default",persistentvolumeclaim="mysql-data",condition="FileSystemResizePending",status="true"} 1
kube_persistentvolumeclaim_status_condition{namespace="default",persistentvolumeclaim="mysql-data",condition="FileSystemResizePending",status="false"} 0
kube_persistentvolumeclaim_status_condition{namespace="default",persistentvolumeclaim="mysql-data",condition="FileSystemResizePending",status="unknown"} 0
kube_persistentvolumeclaim_status_condition{namespace="default",persistentvolumeclaim="mysql-data",condition="Resizing",status="true"} 0
kube_persistentvolumeclaim_status_condition{namespace="default",persistentvolumeclaim="mysql-data",condition="Resizing",status="false"} 1
kube_persistentvolumeclaim_status_condition{namespace="default",persistentvolumeclaim="mysql-data",condition="Resizing",status="unknown"} 0
# HELP kube_persistentvolumeclaim_created Unix creation timestamp
# TYPE kube_persistentvolumeclaim_created gauge
kube_persistentvolumeclaim_created{namespace="default",persistentvolumeclaim="mysql-data"} 1.5e+09
# HELP kube_persistentvolumeclaim_deletion_timestamp Unix deletion timestamp
# TYPE kube_persistentvolumeclaim_deletion_timestamp gauge
kube_persistentvolumeclaim_deletion_timestamp{namespace="default",persistentvolumeclaim="mysql-data"} 1.500000001e+09
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["app".into()]),
            annotations: KeyAllowlist::None,
        };
        assert_eq!(families().render_document(&p, &ctx), want);
    }

    #[test]
    fn golden_pending_without_spec_details() {
        let p = pvc(serde_json::json!({
            "metadata": { "name": "prometheus-data", "namespace": "default" },
            "spec": {},
            "status": { "phase": "Pending" }
        }));
        let want = r#"# HELP kube_persistentvolumeclaim_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_persistentvolumeclaim_labels gauge
# HELP kube_persistentvolumeclaim_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_persistentvolumeclaim_annotations gauge
# HELP kube_persistentvolumeclaim_info [STABLE] Information about persistent volume claim.
# TYPE kube_persistentvolumeclaim_info gauge
kube_persistentvolumeclaim_info{namespace="default",persistentvolumeclaim="prometheus-data",storageclass="",volumename="",volumemode=""} 1
# HELP kube_persistentvolumeclaim_status_phase [STABLE] The phase the persistent volume claim is currently in.
# TYPE kube_persistentvolumeclaim_status_phase gauge
kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="prometheus-data",phase="Lost"} 0
kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="prometheus-data",phase="Bound"} 0
kube_persistentvolumeclaim_status_phase{namespace="default",persistentvolumeclaim="prometheus-data",phase="Pending"} 1
# HELP kube_persistentvolumeclaim_resource_requests_storage_bytes [STABLE] The capacity of storage requested by the persistent volume claim.
# TYPE kube_persistentvolumeclaim_resource_requests_storage_bytes gauge
# HELP kube_persistentvolumeclaim_access_mode [STABLE] The access mode(s) specified by the persistent volume claim.
# TYPE kube_persistentvolumeclaim_access_mode gauge
# HELP kube_persistentvolumeclaim_status_condition Information about status of different conditions of persistent volume claim.
# TYPE kube_persistentvolumeclaim_status_condition gauge
# HELP kube_persistentvolumeclaim_created Unix creation timestamp
# TYPE kube_persistentvolumeclaim_created gauge
# HELP kube_persistentvolumeclaim_deletion_timestamp Unix deletion timestamp
# TYPE kube_persistentvolumeclaim_deletion_timestamp gauge
"#;
        assert_eq!(
            families().render_document(&p, &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn beta_storage_class_annotation_wins_and_no_status_means_no_phase() {
        let p = pvc(serde_json::json!({
            "metadata": {
                "name": "c", "namespace": "n",
                "annotations": { "volume.beta.kubernetes.io/storage-class": "beta-class" }
            },
            "spec": { "storageClassName": "spec-class" }
        }));
        let doc = families().render_document(&p, &FamilyContext::default());
        assert!(doc.contains(r#"kube_persistentvolumeclaim_info{namespace="n",persistentvolumeclaim="c",storageclass="beta-class",volumename="",volumemode=""} 1"#), "{doc}");
        assert!(
            !doc.contains("kube_persistentvolumeclaim_status_phase{"),
            "{doc}"
        );
    }
}
