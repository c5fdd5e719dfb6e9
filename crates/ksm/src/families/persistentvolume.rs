//! `kube_persistentvolume_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use ferrocrane_core::quantity::Quantity;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeSpec};

use super::util::{annotations_family, bool_f64, created, deletion_timestamp, labels_family};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

fn spec(p: &PersistentVolume) -> Option<&PersistentVolumeSpec> {
    p.spec.as_ref()
}

pub fn families() -> ResourceFamilies<PersistentVolume> {
    ResourceFamilies {
        resource: "persistentvolumes",
        identity_keys: &["persistentvolume"],
        identity: |p| vec![p.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_persistentvolume_claim_ref",
                help: "Information about the Persistent Volume Claim Reference.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    spec(p)
                        .and_then(|s| s.claim_ref.as_ref())
                        .map(|c| {
                            vec![sample(
                                &["name", "claim_namespace"],
                                vec![
                                    c.name.clone().unwrap_or_default(),
                                    c.namespace.clone().unwrap_or_default(),
                                ],
                                1.0,
                            )]
                        })
                        .unwrap_or_default()
                },
            },
            FamilySpec {
                name: "kube_persistentvolume_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, ctx| annotations_family(&p.metadata, ctx),
            },
            FamilySpec {
                name: "kube_persistentvolume_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, ctx| labels_family(&p.metadata, ctx),
            },
            FamilySpec {
                name: "kube_persistentvolume_status_phase",
                help: "The phase indicates if a volume is available, bound to a claim, or released by a claim.",
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
                    ["Pending", "Available", "Bound", "Released", "Failed"]
                        .iter()
                        .map(|ph| sample(&["phase"], vec![ph.to_string()], bool_f64(phase == *ph)))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_persistentvolume_info",
                help: "Information about persistentvolume.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| info(p),
            },
            FamilySpec {
                name: "kube_persistentvolume_capacity_bytes",
                help: "Persistentvolume capacity in bytes.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    // A missing storage capacity is a zero quantity upstream, so 0 is reported.
                    let bytes = spec(p)
                        .and_then(|s| s.capacity.as_ref())
                        .and_then(|c| c.get("storage"))
                        .and_then(|q| Quantity::parse(&q.0).ok())
                        .map(|q| q.value() as f64)
                        .unwrap_or(0.0);
                    vec![bare(bytes)]
                },
            },
            FamilySpec {
                name: "kube_persistentvolume_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| created(&p.metadata),
            },
            FamilySpec {
                name: "kube_persistentvolume_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| deletion_timestamp(&p.metadata),
            },
            FamilySpec {
                name: "kube_persistentvolume_csi_attributes",
                help: "CSI attributes of the Persistent Volume.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: true,
                generate: |p, _| {
                    let Some(csi) = spec(p).and_then(|s| s.csi.as_ref()) else {
                        return Vec::new();
                    };
                    let attr = |k: &str| {
                        csi.volume_attributes
                            .as_ref()
                            .and_then(|a| a.get(k))
                            .cloned()
                            .unwrap_or_default()
                    };
                    vec![sample(
                        &["csi_mounter", "csi_map_options"],
                        vec![attr("mounter"), attr("mapOptions")],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_persistentvolume_volume_mode",
                help: "Volume Mode information for the PersistentVolume.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |p, _| {
                    // Filesystem is the API's default when volumeMode is omitted.
                    let mode = spec(p)
                        .and_then(|s| s.volume_mode.clone())
                        .unwrap_or_else(|| "Filesystem".to_string());
                    vec![sample(&["volumemode"], vec![mode], 1.0)]
                },
            },
            FamilySpec {
                name: "kube_persistentvolume_access_mode",
                help: "The access mode(s) specified by the persistent volume.",
                kind: Gauge,
                stability: Alpha,
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
        ],
    }
}

/// `kube_persistentvolume_info`: the first volume source set (in upstream's order of
/// checks) fills its labels; all others stay empty.
fn info(p: &PersistentVolume) -> Vec<Metric> {
    const KEYS: &[&str] = &[
        "storageclass",
        "gce_persistent_disk_name",
        "ebs_volume_id",
        "azure_disk_name",
        "fc_wwids",
        "fc_lun",
        "fc_target_wwns",
        "iscsi_target_portal",
        "iscsi_iqn",
        "iscsi_lun",
        "iscsi_initiator_name",
        "nfs_server",
        "nfs_path",
        "csi_driver",
        "csi_volume_handle",
        "local_path",
        "local_fs",
        "host_path",
        "host_path_type",
        "reclaim_policy",
    ];
    // Indexes into KEYS.
    const GCE: usize = 1;
    const EBS: usize = 2;
    const AZURE: usize = 3;
    const FC_WWIDS: usize = 4;
    const FC_LUN: usize = 5;
    const FC_WWNS: usize = 6;
    const ISCSI_PORTAL: usize = 7;
    const ISCSI_IQN: usize = 8;
    const ISCSI_LUN: usize = 9;
    const ISCSI_INITIATOR: usize = 10;
    const NFS_SERVER: usize = 11;
    const NFS_PATH: usize = 12;
    const CSI_DRIVER: usize = 13;
    const CSI_HANDLE: usize = 14;
    const LOCAL_PATH: usize = 15;
    const LOCAL_FS: usize = 16;
    const HOST_PATH: usize = 17;
    const HOST_PATH_TYPE: usize = 18;

    let mut v = vec![String::new(); KEYS.len()];
    if let Some(s) = spec(p) {
        v[0] = s.storage_class_name.clone().unwrap_or_default();
        v[KEYS.len() - 1] = s
            .persistent_volume_reclaim_policy
            .clone()
            .unwrap_or_default();
        if let Some(gce) = &s.gce_persistent_disk {
            v[GCE] = gce.pd_name.clone();
        } else if let Some(ebs) = &s.aws_elastic_block_store {
            v[EBS] = ebs.volume_id.clone();
        } else if let Some(az) = &s.azure_disk {
            v[AZURE] = az.disk_name.clone();
        } else if let Some(fc) = &s.fc {
            v[FC_LUN] = fc.lun.map(|l| l.to_string()).unwrap_or_default();
            v[FC_WWNS] = comma_join(fc.target_wwns.as_deref().unwrap_or_default());
            v[FC_WWIDS] = comma_join(fc.wwids.as_deref().unwrap_or_default());
        } else if let Some(iscsi) = &s.iscsi {
            v[ISCSI_PORTAL] = iscsi.target_portal.clone();
            v[ISCSI_IQN] = iscsi.iqn.clone();
            v[ISCSI_LUN] = iscsi.lun.to_string();
            v[ISCSI_INITIATOR] = iscsi.initiator_name.clone().unwrap_or_default();
        } else if let Some(nfs) = &s.nfs {
            v[NFS_SERVER] = nfs.server.clone();
            v[NFS_PATH] = nfs.path.clone();
        } else if let Some(csi) = &s.csi {
            v[CSI_DRIVER] = csi.driver.clone();
            v[CSI_HANDLE] = csi.volume_handle.clone();
        } else if let Some(local) = &s.local {
            v[LOCAL_PATH] = local.path.clone();
            v[LOCAL_FS] = local.fs_type.clone().unwrap_or_default();
        } else if let Some(hp) = &s.host_path {
            v[HOST_PATH] = hp.path.clone();
            v[HOST_PATH_TYPE] = hp.type_.clone().unwrap_or_default();
        }
    }
    vec![sample(KEYS, v, 1.0)]
}

/// Upstream's join: a comma goes before an item only once the text so far is non-empty,
/// so empty items at the front leave no separator (`["", "a"]` is `a`).
fn comma_join(items: &[String]) -> String {
    let mut out = String::new();
    for item in items {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(item);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn pv(v: serde_json::Value) -> PersistentVolume {
        serde_json::from_value(v).expect("valid persistentvolume")
    }

    const INFO_EMPTY_SOURCES: &str = r#"gce_persistent_disk_name="",ebs_volume_id="",azure_disk_name="",fc_wwids="",fc_lun="",fc_target_wwns="",iscsi_target_portal="",iscsi_iqn="",iscsi_lun="",iscsi_initiator_name="",nfs_server="",nfs_path="",csi_driver="",csi_volume_handle="",local_path="",local_fs="",host_path="",host_path_type="""#;

    #[test]
    fn golden_nfs_bound() {
        let p = pv(serde_json::json!({
            "metadata": {
                "name": "test-pv-nfs", "creationTimestamp": "2017-07-14T02:40:00Z",
                "deletionTimestamp": "2017-07-14T02:40:01Z", "labels": { "tier": "gold" },
                "annotations": { "pv.kubernetes.io/provisioned-by": "nfs" }
            },
            "spec": {
                "storageClassName": "test", "persistentVolumeReclaimPolicy": "Retain",
                "capacity": { "storage": "5Gi" }, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                "claimRef": { "kind": "PersistentVolumeClaim", "name": "pvc-test", "namespace": "default" },
                "nfs": { "server": "127.0.0.1", "path": "/export" },
                "csi": { "driver": "ignored.because.nfs.comes.first", "volumeHandle": "h" }
            },
            "status": { "phase": "Bound" }
        }));
        let want = r#"# HELP kube_persistentvolume_claim_ref [STABLE] Information about the Persistent Volume Claim Reference.
# TYPE kube_persistentvolume_claim_ref gauge
kube_persistentvolume_claim_ref{persistentvolume="test-pv-nfs",name="pvc-test",claim_namespace="default"} 1
# HELP kube_persistentvolume_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_persistentvolume_annotations gauge
kube_persistentvolume_annotations{persistentvolume="test-pv-nfs",annotation_pv_kubernetes_io_provisioned_by="nfs"} 1
# HELP kube_persistentvolume_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_persistentvolume_labels gauge
kube_persistentvolume_labels{persistentvolume="test-pv-nfs",label_tier="gold"} 1
# HELP kube_persistentvolume_status_phase [STABLE] The phase indicates if a volume is available, bound to a claim, or released by a claim.
# TYPE kube_persistentvolume_status_phase gauge
kube_persistentvolume_status_phase{persistentvolume="test-pv-nfs",phase="Pending"} 0
kube_persistentvolume_status_phase{persistentvolume="test-pv-nfs",phase="Available"} 0
kube_persistentvolume_status_phase{persistentvolume="test-pv-nfs",phase="Bound"} 1
kube_persistentvolume_status_phase{persistentvolume="test-pv-nfs",phase="Released"} 0
kube_persistentvolume_status_phase{persistentvolume="test-pv-nfs",phase="Failed"} 0
# HELP kube_persistentvolume_info [STABLE] Information about persistentvolume.
# TYPE kube_persistentvolume_info gauge
kube_persistentvolume_info{persistentvolume="test-pv-nfs",storageclass="test",gce_persistent_disk_name="",ebs_volume_id="",azure_disk_name="",fc_wwids="",fc_lun="",fc_target_wwns="",iscsi_target_portal="",iscsi_iqn="",iscsi_lun="",iscsi_initiator_name="",nfs_server="127.0.0.1",nfs_path="/export",csi_driver="",csi_volume_handle="",local_path="",local_fs="",host_path="",host_path_type="",reclaim_policy="Retain"} 1
# HELP kube_persistentvolume_capacity_bytes [STABLE] Persistentvolume capacity in bytes.
# TYPE kube_persistentvolume_capacity_bytes gauge
kube_persistentvolume_capacity_bytes{persistentvolume="test-pv-nfs"} 5.36870912e+09
# HELP kube_persistentvolume_created Unix creation timestamp
# TYPE kube_persistentvolume_created gauge
kube_persistentvolume_created{persistentvolume="test-pv-nfs"} 1.5e+09
# HELP kube_persistentvolume_deletion_timestamp Unix deletion timestamp
# TYPE kube_persistentvolume_deletion_timestamp gauge
kube_persistentvolume_deletion_timestamp{persistentvolume="test-pv-nfs"} 1.500000001e+09
# HELP kube_persistentvolume_volume_mode Volume Mode information for the PersistentVolume.
# TYPE kube_persistentvolume_volume_mode gauge
kube_persistentvolume_volume_mode{persistentvolume="test-pv-nfs",volumemode="Filesystem"} 1
# HELP kube_persistentvolume_access_mode The access mode(s) specified by the persistent volume.
# TYPE kube_persistentvolume_access_mode gauge
kube_persistentvolume_access_mode{persistentvolume="test-pv-nfs",access_mode="ReadWriteOnce"} 1
kube_persistentvolume_access_mode{persistentvolume="test-pv-nfs",access_mode="ReadOnlyMany"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::All,
        };
        assert_eq!(families().render_document(&p, &ctx), want);
    }

    #[test]
    fn golden_empty() {
        let p = pv(serde_json::json!({ "metadata": { "name": "bare" } }));
        let want = format!(
            r#"# HELP kube_persistentvolume_claim_ref [STABLE] Information about the Persistent Volume Claim Reference.
# TYPE kube_persistentvolume_claim_ref gauge
# HELP kube_persistentvolume_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_persistentvolume_annotations gauge
# HELP kube_persistentvolume_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_persistentvolume_labels gauge
# HELP kube_persistentvolume_status_phase [STABLE] The phase indicates if a volume is available, bound to a claim, or released by a claim.
# TYPE kube_persistentvolume_status_phase gauge
# HELP kube_persistentvolume_info [STABLE] Information about persistentvolume.
# TYPE kube_persistentvolume_info gauge
kube_persistentvolume_info{{persistentvolume="bare",storageclass="",{INFO_EMPTY_SOURCES},reclaim_policy=""}} 1
# HELP kube_persistentvolume_capacity_bytes [STABLE] Persistentvolume capacity in bytes.
# TYPE kube_persistentvolume_capacity_bytes gauge
kube_persistentvolume_capacity_bytes{{persistentvolume="bare"}} 0
# HELP kube_persistentvolume_created Unix creation timestamp
# TYPE kube_persistentvolume_created gauge
# HELP kube_persistentvolume_deletion_timestamp Unix deletion timestamp
# TYPE kube_persistentvolume_deletion_timestamp gauge
# HELP kube_persistentvolume_volume_mode Volume Mode information for the PersistentVolume.
# TYPE kube_persistentvolume_volume_mode gauge
kube_persistentvolume_volume_mode{{persistentvolume="bare",volumemode="Filesystem"}} 1
# HELP kube_persistentvolume_access_mode The access mode(s) specified by the persistent volume.
# TYPE kube_persistentvolume_access_mode gauge
"#
        );
        assert_eq!(
            families().render_document(&p, &FamilyContext::default()),
            want
        );
    }

    fn info_line(spec: serde_json::Value) -> String {
        let p = pv(serde_json::json!({ "metadata": { "name": "pv" }, "spec": spec }));
        let doc = families().render_document(&p, &FamilyContext::default());
        doc.lines()
            .find(|l| l.starts_with("kube_persistentvolume_info{"))
            .expect("info line")
            .to_string()
    }

    #[test]
    fn info_volume_sources() {
        let fc = info_line(serde_json::json!({
            "fc": { "lun": 123, "targetWWNs": ["0123456789abcdef", "abcdef0123456789"], "wwids": ["", "b", ""] }
        }));
        assert!(
            fc.contains(
                r#"fc_wwids="b,",fc_lun="123",fc_target_wwns="0123456789abcdef,abcdef0123456789","#
            ),
            "{fc}"
        );
        let iscsi = info_line(serde_json::json!({
            "iscsi": { "targetPortal": "1.2.3.4:3260", "iqn": "iqn.my.test.server.target00", "lun": 0, "initiatorName": "iqn.my.test.initiator:112233" }
        }));
        assert!(iscsi.contains(r#"iscsi_target_portal="1.2.3.4:3260",iscsi_iqn="iqn.my.test.server.target00",iscsi_lun="0",iscsi_initiator_name="iqn.my.test.initiator:112233","#), "{iscsi}");
        let gce = info_line(
            serde_json::json!({ "gcePersistentDisk": { "pdName": "name" }, "awsElasticBlockStore": { "volumeID": "aws://eu-west-1c/vol-012d34d567890123b" } }),
        );
        assert!(
            gce.contains(r#"gce_persistent_disk_name="name",ebs_volume_id="","#),
            "{gce}"
        );
        let ebs = info_line(
            serde_json::json!({ "awsElasticBlockStore": { "volumeID": "aws://eu-west-1c/vol-012d34d567890123b" } }),
        );
        assert!(
            ebs.contains(r#"ebs_volume_id="aws://eu-west-1c/vol-012d34d567890123b""#),
            "{ebs}"
        );
        let az = info_line(
            serde_json::json!({ "azureDisk": { "diskName": "azure_disk_1", "diskURI": "" } }),
        );
        assert!(az.contains(r#"azure_disk_name="azure_disk_1""#), "{az}");
        let local =
            info_line(serde_json::json!({ "local": { "path": "/mnt/data", "fsType": "ext4" } }));
        assert!(
            local.contains(r#"local_path="/mnt/data",local_fs="ext4","#),
            "{local}"
        );
        let host =
            info_line(serde_json::json!({ "hostPath": { "path": "/data", "type": "Directory" } }));
        assert!(
            host.contains(r#"host_path="/data",host_path_type="Directory",reclaim_policy="""#),
            "{host}"
        );
        let csi = info_line(
            serde_json::json!({ "csi": { "driver": "test-driver", "volumeHandle": "test-volume-handle" } }),
        );
        assert!(
            csi.contains(r#"csi_driver="test-driver",csi_volume_handle="test-volume-handle","#),
            "{csi}"
        );
    }

    #[test]
    fn golden_csi_attributes_opt_in() {
        let f = families();
        let enabled = [f
            .family_index("kube_persistentvolume_csi_attributes")
            .expect("family")];
        let with_attrs = pv(serde_json::json!({
            "metadata": { "name": "test-pv-csi" },
            "spec": { "csi": { "driver": "rbd.csi.ceph.com", "volumeHandle": "h",
                "volumeAttributes": { "mounter": "rbd", "mapOptions": "krbd:rxbounce", "other": "x" } } }
        }));
        let want = r#"# HELP kube_persistentvolume_csi_attributes CSI attributes of the Persistent Volume.
# TYPE kube_persistentvolume_csi_attributes gauge
kube_persistentvolume_csi_attributes{persistentvolume="test-pv-csi",csi_mounter="rbd",csi_map_options="krbd:rxbounce"} 1
"#;
        assert_eq!(
            f.render_document_with(&with_attrs, &FamilyContext::default(), &enabled),
            want
        );

        let no_attrs = pv(
            serde_json::json!({ "metadata": { "name": "c" }, "spec": { "csi": { "driver": "d", "volumeHandle": "h" } } }),
        );
        assert!(f.render_document_with(&no_attrs, &FamilyContext::default(), &enabled)
            .ends_with("kube_persistentvolume_csi_attributes{persistentvolume=\"c\",csi_mounter=\"\",csi_map_options=\"\"} 1\n"));

        let no_csi = pv(
            serde_json::json!({ "metadata": { "name": "n" }, "spec": { "volumeMode": "Block" } }),
        );
        assert!(
            !f.render_document_with(&no_csi, &FamilyContext::default(), &enabled)
                .contains("kube_persistentvolume_csi_attributes{")
        );
        assert!(
            f.render_document(&no_csi, &FamilyContext::default())
                .contains("volumemode=\"Block\"")
        );
        assert!(
            !f.render_document(&with_attrs, &FamilyContext::default())
                .contains("csi_attributes")
        );
    }
}
