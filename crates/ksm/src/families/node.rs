//! `kube_node_*`.

use ferrocrane_core::exposition::MetricType::Gauge;
use ferrocrane_core::exposition::{Metric, sanitize_label_name};
use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use super::resource_name::is_extended_resource_name;
use super::util::{
    annotations_family, bool_f64, condition_type_status_samples, created, deletion_timestamp,
    labels_family, quantity_value,
};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

const ROLE_PREFIX: &str = "node-role.kubernetes.io/";

pub fn families() -> ResourceFamilies<Node> {
    ResourceFamilies {
        resource: "nodes",
        identity_keys: &["node"],
        identity: |n| vec![n.metadata.name.clone().unwrap_or_default()],
        families: vec![
            FamilySpec {
                name: "kube_node_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, ctx| annotations_family(&n.metadata, ctx),
            },
            FamilySpec {
                name: "kube_node_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| created(&n.metadata),
            },
            FamilySpec {
                name: "kube_node_deletion_timestamp",
                help: "Unix deletion timestamp",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| deletion_timestamp(&n.metadata),
            },
            FamilySpec {
                name: "kube_node_info",
                help: "Information about a cluster node.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| info(n),
            },
            FamilySpec {
                name: "kube_node_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, ctx| labels_family(&n.metadata, ctx),
            },
            FamilySpec {
                name: "kube_node_role",
                help: "The role of a cluster node.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    n.metadata
                        .labels
                        .iter()
                        .flatten()
                        .filter_map(|(k, _)| k.strip_prefix(ROLE_PREFIX))
                        .map(|role| sample(&["role"], vec![role.to_string()], 1.0))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_node_spec_pod_cidrs",
                help: "The pod CIDRs of a cluster node.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    spec(n)
                        .and_then(|s| s.pod_cidrs.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|cidr| sample(&["pod_cidr"], vec![cidr.clone()], 1.0))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_node_spec_taint",
                help: "The taint of a cluster node.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    spec(n)
                        .and_then(|s| s.taints.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|t| {
                            sample(
                                &["key", "value", "effect"],
                                vec![
                                    t.key.clone(),
                                    t.value.clone().unwrap_or_default(),
                                    t.effect.clone(),
                                ],
                                1.0,
                            )
                        })
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_node_spec_unschedulable",
                help: "Whether a node can schedule new pods.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    vec![bare(bool_f64(
                        spec(n).and_then(|s| s.unschedulable).unwrap_or(false),
                    ))]
                },
            },
            FamilySpec {
                name: "kube_node_status_allocatable",
                help: "The allocatable for different resources of a node that are available for scheduling.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| resource_list(status(n).and_then(|s| s.allocatable.as_ref())),
            },
            FamilySpec {
                name: "kube_node_status_capacity",
                help: "The capacity for different resources of a node.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| resource_list(status(n).and_then(|s| s.capacity.as_ref())),
            },
            FamilySpec {
                name: "kube_node_status_condition",
                help: "The condition of a cluster node.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    status(n)
                        .and_then(|s| s.conditions.as_ref())
                        .into_iter()
                        .flatten()
                        .flat_map(|c| condition_type_status_samples(&c.type_, &c.status))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_node_status_addresses",
                help: "Node address information.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |n, _| {
                    status(n)
                        .and_then(|s| s.addresses.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            sample(
                                &["type", "address"],
                                vec![a.type_.clone(), a.address.clone()],
                                1.0,
                            )
                        })
                        .collect()
                },
            },
        ],
    }
}

fn spec(n: &Node) -> Option<&NodeSpec> {
    n.spec.as_ref()
}

fn status(n: &Node) -> Option<&NodeStatus> {
    n.status.as_ref()
}

fn info(n: &Node) -> Vec<Metric> {
    let s = spec(n);
    let ni = status(n).and_then(|s| s.node_info.as_ref());
    let from_info = |f: fn(&k8s_openapi::api::core::v1::NodeSystemInfo) -> &String| {
        ni.map(f).cloned().unwrap_or_default()
    };
    // Upstream keeps the last InternalIP address (kept for compatibility; see kube_node_status_addresses).
    let internal_ip = status(n)
        .and_then(|s| s.addresses.as_ref())
        .into_iter()
        .flatten()
        .rfind(|a| a.type_ == "InternalIP")
        .map(|a| a.address.clone())
        .unwrap_or_default();
    vec![sample(
        &[
            "kernel_version",
            "os_image",
            "container_runtime_version",
            "kubelet_version",
            "kubeproxy_version",
            "provider_id",
            "pod_cidr",
            "system_uuid",
            "internal_ip",
        ],
        vec![
            from_info(|i| &i.kernel_version),
            from_info(|i| &i.os_image),
            from_info(|i| &i.container_runtime_version),
            from_info(|i| &i.kubelet_version),
            "deprecated".to_string(),
            s.and_then(|s| s.provider_id.clone()).unwrap_or_default(),
            s.and_then(|s| s.pod_cidr.clone()).unwrap_or_default(),
            from_info(|i| &i.system_uuid),
            internal_ip,
        ],
        1.0,
    )]
}

/// `kube_node_status_allocatable` / `_capacity`: known resources with their unit,
/// in the key order of the resource list.
fn resource_list(list: Option<&std::collections::BTreeMap<String, KubeQuantity>>) -> Vec<Metric> {
    let mut out = Vec::new();
    for (name, q) in list.into_iter().flatten() {
        let Some(value) = quantity_value(q) else {
            continue;
        };
        let mut push = |unit: &str| {
            out.push(sample(
                &["resource", "unit"],
                vec![sanitize_label_name(name), unit.to_string()],
                value,
            ));
        };
        match name.as_str() {
            "cpu" => push("core"),
            "storage" | "ephemeral-storage" | "memory" => push("byte"),
            "pods" => push("integer"),
            _ => {
                if name.starts_with("hugepages-") {
                    push("byte");
                }
                if name.starts_with("attachable-volumes-") {
                    push("byte");
                }
                if is_extended_resource_name(name) {
                    push("integer");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn node(v: serde_json::Value) -> Node {
        serde_json::from_value(v).expect("valid node")
    }

    fn full() -> Node {
        node(serde_json::json!({
            "metadata": {
                "name": "127.0.0.1",
                "creationTimestamp": "2017-07-14T02:40:00Z",
                "deletionTimestamp": "2017-07-14T02:40:01Z",
                "labels": { "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": "true", "zone": "a" },
                "annotations": { "team": "infra" }
            },
            "spec": {
                "unschedulable": true,
                "providerID": "provider://i-randomidentifier",
                "podCIDR": "172.24.10.0/24",
                "podCIDRs": ["10.244.0.0/24", "2001:db8::/64"],
                "taints": [
                    { "key": "node.kubernetes.io/memory-pressure", "value": "true", "effect": "PreferNoSchedule" },
                    { "key": "Dedicated", "effect": "NoSchedule" }
                ]
            },
            "status": {
                "nodeInfo": {
                    "kernelVersion": "kernel", "kubeletVersion": "kubelet", "kubeProxyVersion": "kubeproxy",
                    "osImage": "osimage", "containerRuntimeVersion": "rkt",
                    "systemUUID": "6a934e21-5207-4a84-baea-3a952d926c80",
                    "architecture": "", "bootID": "", "machineID": "", "operatingSystem": ""
                },
                "addresses": [
                    { "type": "InternalIP", "address": "1.2.3.4" },
                    { "type": "ExternalIP", "address": "5.6.7.8" },
                    { "type": "InternalIP", "address": "fc00::" }
                ],
                "capacity": {
                    "cpu": "4.3", "memory": "10000T", "pods": "1000", "storage": "3G",
                    "ephemeral-storage": "4G", "nvidia.com/gpu": "4"
                },
                "allocatable": {
                    "cpu": "3", "memory": "1G", "pods": "555", "storage": "2G", "ephemeral-storage": "3G",
                    "nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi", "attachable-volumes-aws-ebs": "39",
                    "kubernetes.io/batch-limit": "1", "example.com/Bad_": "1", "requests.example.com/x": "1"
                },
                "conditions": [
                    { "type": "Ready", "status": "True" },
                    { "type": "CustomizedType", "status": "Unknown" }
                ]
            }
        }))
    }

    #[test]
    fn golden_full() {
        let want = r#"# HELP kube_node_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_node_annotations gauge
# HELP kube_node_created [STABLE] Unix creation timestamp
# TYPE kube_node_created gauge
kube_node_created{node="127.0.0.1"} 1.5e+09
# HELP kube_node_deletion_timestamp Unix deletion timestamp
# TYPE kube_node_deletion_timestamp gauge
kube_node_deletion_timestamp{node="127.0.0.1"} 1.500000001e+09
# HELP kube_node_info [STABLE] Information about a cluster node.
# TYPE kube_node_info gauge
kube_node_info{node="127.0.0.1",kernel_version="kernel",os_image="osimage",container_runtime_version="rkt",kubelet_version="kubelet",kubeproxy_version="deprecated",provider_id="provider://i-randomidentifier",pod_cidr="172.24.10.0/24",system_uuid="6a934e21-5207-4a84-baea-3a952d926c80",internal_ip="fc00::"} 1
# HELP kube_node_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_node_labels gauge
# HELP kube_node_role The role of a cluster node.
# TYPE kube_node_role gauge
kube_node_role{node="127.0.0.1",role="master"} 1
kube_node_role{node="127.0.0.1",role="worker"} 1
# HELP kube_node_spec_pod_cidrs The pod CIDRs of a cluster node.
# TYPE kube_node_spec_pod_cidrs gauge
kube_node_spec_pod_cidrs{node="127.0.0.1",pod_cidr="10.244.0.0/24"} 1
kube_node_spec_pod_cidrs{node="127.0.0.1",pod_cidr="2001:db8::/64"} 1
# HELP kube_node_spec_taint [STABLE] The taint of a cluster node.
# TYPE kube_node_spec_taint gauge
kube_node_spec_taint{node="127.0.0.1",key="node.kubernetes.io/memory-pressure",value="true",effect="PreferNoSchedule"} 1
kube_node_spec_taint{node="127.0.0.1",key="Dedicated",value="",effect="NoSchedule"} 1
# HELP kube_node_spec_unschedulable [STABLE] Whether a node can schedule new pods.
# TYPE kube_node_spec_unschedulable gauge
kube_node_spec_unschedulable{node="127.0.0.1"} 1
# HELP kube_node_status_allocatable [STABLE] The allocatable for different resources of a node that are available for scheduling.
# TYPE kube_node_status_allocatable gauge
kube_node_status_allocatable{node="127.0.0.1",resource="attachable_volumes_aws_ebs",unit="byte"} 39
kube_node_status_allocatable{node="127.0.0.1",resource="cpu",unit="core"} 3
kube_node_status_allocatable{node="127.0.0.1",resource="ephemeral_storage",unit="byte"} 3e+09
kube_node_status_allocatable{node="127.0.0.1",resource="hugepages_2Mi",unit="byte"} 4.194304e+06
kube_node_status_allocatable{node="127.0.0.1",resource="memory",unit="byte"} 1e+09
kube_node_status_allocatable{node="127.0.0.1",resource="nvidia_com_gpu",unit="integer"} 1
kube_node_status_allocatable{node="127.0.0.1",resource="pods",unit="integer"} 555
kube_node_status_allocatable{node="127.0.0.1",resource="storage",unit="byte"} 2e+09
# HELP kube_node_status_capacity [STABLE] The capacity for different resources of a node.
# TYPE kube_node_status_capacity gauge
kube_node_status_capacity{node="127.0.0.1",resource="cpu",unit="core"} 4.3
kube_node_status_capacity{node="127.0.0.1",resource="ephemeral_storage",unit="byte"} 4e+09
kube_node_status_capacity{node="127.0.0.1",resource="memory",unit="byte"} 1e+16
kube_node_status_capacity{node="127.0.0.1",resource="nvidia_com_gpu",unit="integer"} 4
kube_node_status_capacity{node="127.0.0.1",resource="pods",unit="integer"} 1000
kube_node_status_capacity{node="127.0.0.1",resource="storage",unit="byte"} 3e+09
# HELP kube_node_status_condition [STABLE] The condition of a cluster node.
# TYPE kube_node_status_condition gauge
kube_node_status_condition{node="127.0.0.1",condition="Ready",status="true"} 1
kube_node_status_condition{node="127.0.0.1",condition="Ready",status="false"} 0
kube_node_status_condition{node="127.0.0.1",condition="Ready",status="unknown"} 0
kube_node_status_condition{node="127.0.0.1",condition="CustomizedType",status="true"} 0
kube_node_status_condition{node="127.0.0.1",condition="CustomizedType",status="false"} 0
kube_node_status_condition{node="127.0.0.1",condition="CustomizedType",status="unknown"} 1
# HELP kube_node_status_addresses Node address information.
# TYPE kube_node_status_addresses gauge
kube_node_status_addresses{node="127.0.0.1",type="InternalIP",address="1.2.3.4"} 1
kube_node_status_addresses{node="127.0.0.1",type="ExternalIP",address="5.6.7.8"} 1
kube_node_status_addresses{node="127.0.0.1",type="InternalIP",address="fc00::"} 1
"#;
        assert_eq!(
            families().render_document(&full(), &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_empty_node() {
        let want = r#"# HELP kube_node_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_node_annotations gauge
# HELP kube_node_created [STABLE] Unix creation timestamp
# TYPE kube_node_created gauge
# HELP kube_node_deletion_timestamp Unix deletion timestamp
# TYPE kube_node_deletion_timestamp gauge
# HELP kube_node_info [STABLE] Information about a cluster node.
# TYPE kube_node_info gauge
kube_node_info{node="",kernel_version="",os_image="",container_runtime_version="",kubelet_version="",kubeproxy_version="deprecated",provider_id="",pod_cidr="",system_uuid="",internal_ip=""} 1
# HELP kube_node_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_node_labels gauge
# HELP kube_node_role The role of a cluster node.
# TYPE kube_node_role gauge
# HELP kube_node_spec_pod_cidrs The pod CIDRs of a cluster node.
# TYPE kube_node_spec_pod_cidrs gauge
# HELP kube_node_spec_taint [STABLE] The taint of a cluster node.
# TYPE kube_node_spec_taint gauge
# HELP kube_node_spec_unschedulable [STABLE] Whether a node can schedule new pods.
# TYPE kube_node_spec_unschedulable gauge
kube_node_spec_unschedulable{node=""} 0
# HELP kube_node_status_allocatable [STABLE] The allocatable for different resources of a node that are available for scheduling.
# TYPE kube_node_status_allocatable gauge
# HELP kube_node_status_capacity [STABLE] The capacity for different resources of a node.
# TYPE kube_node_status_capacity gauge
# HELP kube_node_status_condition [STABLE] The condition of a cluster node.
# TYPE kube_node_status_condition gauge
# HELP kube_node_status_addresses Node address information.
# TYPE kube_node_status_addresses gauge
"#;
        assert_eq!(
            families().render_document(
                &node(serde_json::json!({ "metadata": {} })),
                &FamilyContext::default()
            ),
            want
        );
    }

    #[test]
    fn allowlisted_labels_and_annotations() {
        let ctx = FamilyContext {
            labels: KeyAllowlist::Keys(vec!["zone".into()]),
            annotations: KeyAllowlist::All,
        };
        let doc = families().render_document(&full(), &ctx);
        assert!(
            doc.contains("kube_node_labels{node=\"127.0.0.1\",label_zone=\"a\"} 1\n"),
            "{doc}"
        );
        assert!(
            doc.contains("kube_node_annotations{node=\"127.0.0.1\",annotation_team=\"infra\"} 1\n"),
            "{doc}"
        );
    }
}
