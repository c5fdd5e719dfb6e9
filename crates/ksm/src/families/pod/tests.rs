use super::*;
use crate::families::{FamilyContext, KeyAllowlist};

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).expect("valid pod")
}

/// The document of the named families, in upstream's family order.
fn render(p: &Pod, names: &[&str]) -> String {
    let f = families();
    let mut enabled: Vec<usize> = names
        .iter()
        .map(|n| f.family_index(n).expect("known family"))
        .collect();
    enabled.sort_unstable();
    f.render_document_with(p, &FamilyContext::default(), &enabled)
}

/// A running pod exercising most families at once.
fn web_pod() -> Pod {
    pod(serde_json::json!({
        "metadata": {
            "name": "web-0", "namespace": "prod", "uid": "u-1",
            "creationTimestamp": "2017-07-14T02:40:00Z",
            "labels": { "app": "web" },
            "ownerReferences": [
                { "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s-1", "controller": true }
            ]
        },
        "spec": {
            "nodeName": "node-a",
            "priorityClassName": "high",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "web-sa",
            "runtimeClassName": "gvisor",
            "overhead": { "cpu": "250m", "memory": "120Mi" },
            "nodeSelector": { "kubernetes.io/os": "linux", "disk-type": "ssd" },
            "tolerations": [
                { "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 }
            ],
            "volumes": [
                { "name": "data", "persistentVolumeClaim": { "claimName": "data-web-0", "readOnly": true } },
                { "name": "scratch", "ephemeral": { "volumeClaimTemplate": { "spec": {} } } },
                { "name": "tmp", "emptyDir": {} }
            ],
            "initContainers": [
                {
                    "name": "init", "image": "busybox:1.36", "restartPolicy": "Always",
                    "resources": { "requests": { "cpu": "100m" } }
                }
            ],
            "containers": [
                {
                    "name": "app", "image": "nginx:1.25",
                    "resources": {
                        "limits": { "cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi" },
                        "requests": { "cpu": "500m", "memory": "256Mi", "ephemeral-storage": "1Gi" }
                    }
                },
                { "name": "sidecar", "image": "envoy:1.30" }
            ]
        },
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "hostIP": "10.0.0.5",
            "podIP": "10.1.2.3",
            "podIPs": [ { "ip": "10.1.2.3" }, { "ip": "fd00::3" } ],
            "startTime": "2017-07-14T02:40:05Z",
            "conditions": [
                { "type": "Initialized", "status": "True", "lastTransitionTime": "2017-07-14T02:40:10Z" },
                { "type": "Ready", "status": "True", "lastTransitionTime": "2017-07-14T02:40:20Z" },
                { "type": "ContainersReady", "status": "True", "lastTransitionTime": "2017-07-14T02:40:20Z" },
                { "type": "PodScheduled", "status": "True", "lastTransitionTime": "2017-07-14T02:40:01Z" }
            ],
            "initContainerStatuses": [
                {
                    "name": "init", "image": "docker.io/library/busybox:1.36", "imageID": "sha256:i1",
                    "containerID": "containerd://c0", "ready": true, "restartCount": 0,
                    "state": { "running": { "startedAt": "2017-07-14T02:40:06Z" } }
                }
            ],
            "containerStatuses": [
                {
                    "name": "app", "image": "docker.io/library/nginx:1.25", "imageID": "sha256:a1",
                    "containerID": "containerd://c1", "ready": true, "restartCount": 2,
                    "state": { "running": { "startedAt": "2017-07-14T02:40:15Z" } },
                    "lastState": { "terminated": { "exitCode": 137, "reason": "OOMKilled", "startedAt": "2017-07-14T02:40:11Z", "finishedAt": "2017-07-14T02:40:14Z" } }
                },
                {
                    "name": "sidecar", "image": "docker.io/envoyproxy/envoy:1.30", "imageID": "sha256:s1",
                    "ready": false, "restartCount": 0,
                    "state": { "waiting": { "reason": "ImagePullBackOff" } }
                }
            ]
        }
    }))
}

/// Every default family of `web_pod()`, headers included, in upstream's serving order.
const WEB_POD_DOCUMENT: &str = r#"# HELP kube_pod_completion_time [STABLE] Completion time in unix timestamp for a pod.
# TYPE kube_pod_completion_time gauge
# HELP kube_pod_container_info [STABLE] Information about a container in a pod.
# TYPE kube_pod_container_info gauge
kube_pod_container_info{namespace="prod",pod="web-0",uid="u-1",container="app",image_spec="nginx:1.25",image="docker.io/library/nginx:1.25",image_id="sha256:a1",container_id="containerd://c1"} 1
kube_pod_container_info{namespace="prod",pod="web-0",uid="u-1",container="sidecar",image_spec="envoy:1.30",image="docker.io/envoyproxy/envoy:1.30",image_id="sha256:s1",container_id=""} 1
# HELP kube_pod_container_resource_limits [STABLE] The number of requested limit resource by a container. It is recommended to use the kube_pod_resource_limits metric exposed by kube-scheduler instead, as it is more precise.
# TYPE kube_pod_container_resource_limits gauge
kube_pod_container_resource_limits{namespace="prod",pod="web-0",uid="u-1",container="app",node="node-a",resource="cpu",unit="core"} 1
kube_pod_container_resource_limits{namespace="prod",pod="web-0",uid="u-1",container="app",node="node-a",resource="hugepages_2Mi",unit="byte"} 4.194304e+06
kube_pod_container_resource_limits{namespace="prod",pod="web-0",uid="u-1",container="app",node="node-a",resource="memory",unit="byte"} 5.36870912e+08
kube_pod_container_resource_limits{namespace="prod",pod="web-0",uid="u-1",container="app",node="node-a",resource="nvidia_com_gpu",unit="integer"} 1
# HELP kube_pod_container_resource_requests [STABLE] The number of requested request resource by a container. It is recommended to use the kube_pod_resource_requests metric exposed by kube-scheduler instead, as it is more precise.
# TYPE kube_pod_container_resource_requests gauge
kube_pod_container_resource_requests{namespace="prod",pod="web-0",uid="u-1",container="app",node="node-a",resource="cpu",unit="core"} 0.5
kube_pod_container_resource_requests{namespace="prod",pod="web-0",uid="u-1",container="app",node="node-a",resource="ephemeral_storage",unit="byte"} 1.073741824e+09
kube_pod_container_resource_requests{namespace="prod",pod="web-0",uid="u-1",container="app",node="node-a",resource="memory",unit="byte"} 2.68435456e+08
# HELP kube_pod_container_state_started [STABLE] Start time in unix timestamp for a pod container.
# TYPE kube_pod_container_state_started gauge
kube_pod_container_state_started{namespace="prod",pod="web-0",uid="u-1",container="app"} 1.500000015e+09
# HELP kube_pod_container_status_last_terminated_reason Describes the last reason the container was in terminated state.
# TYPE kube_pod_container_status_last_terminated_reason gauge
kube_pod_container_status_last_terminated_reason{namespace="prod",pod="web-0",uid="u-1",container="app",reason="OOMKilled"} 1
# HELP kube_pod_container_status_last_terminated_exitcode Describes the exit code for the last container in terminated state.
# TYPE kube_pod_container_status_last_terminated_exitcode gauge
kube_pod_container_status_last_terminated_exitcode{namespace="prod",pod="web-0",uid="u-1",container="app"} 137
# HELP kube_pod_container_status_last_terminated_timestamp Last terminated time for a pod container in unix timestamp.
# TYPE kube_pod_container_status_last_terminated_timestamp gauge
kube_pod_container_status_last_terminated_timestamp{namespace="prod",pod="web-0",uid="u-1",container="app"} 1.500000014e+09
# HELP kube_pod_container_status_ready [STABLE] Describes whether the containers readiness check succeeded.
# TYPE kube_pod_container_status_ready gauge
kube_pod_container_status_ready{namespace="prod",pod="web-0",uid="u-1",container="app"} 1
kube_pod_container_status_ready{namespace="prod",pod="web-0",uid="u-1",container="sidecar"} 0
# HELP kube_pod_container_status_restarts_total [STABLE] The number of container restarts per container.
# TYPE kube_pod_container_status_restarts_total counter
kube_pod_container_status_restarts_total{namespace="prod",pod="web-0",uid="u-1",container="app"} 2
kube_pod_container_status_restarts_total{namespace="prod",pod="web-0",uid="u-1",container="sidecar"} 0
# HELP kube_pod_container_status_running [STABLE] Describes whether the container is currently in running state.
# TYPE kube_pod_container_status_running gauge
kube_pod_container_status_running{namespace="prod",pod="web-0",uid="u-1",container="app"} 1
kube_pod_container_status_running{namespace="prod",pod="web-0",uid="u-1",container="sidecar"} 0
# HELP kube_pod_container_status_terminated [STABLE] Describes whether the container is currently in terminated state.
# TYPE kube_pod_container_status_terminated gauge
kube_pod_container_status_terminated{namespace="prod",pod="web-0",uid="u-1",container="app"} 0
kube_pod_container_status_terminated{namespace="prod",pod="web-0",uid="u-1",container="sidecar"} 0
# HELP kube_pod_container_status_terminated_reason Describes the reason the container is currently in terminated state.
# TYPE kube_pod_container_status_terminated_reason gauge
# HELP kube_pod_container_status_waiting [STABLE] Describes whether the container is currently in waiting state.
# TYPE kube_pod_container_status_waiting gauge
kube_pod_container_status_waiting{namespace="prod",pod="web-0",uid="u-1",container="app"} 0
kube_pod_container_status_waiting{namespace="prod",pod="web-0",uid="u-1",container="sidecar"} 1
# HELP kube_pod_container_status_waiting_reason [STABLE] Describes the reason the container is currently in waiting state.
# TYPE kube_pod_container_status_waiting_reason gauge
kube_pod_container_status_waiting_reason{namespace="prod",pod="web-0",uid="u-1",container="sidecar",reason="ImagePullBackOff"} 1
# HELP kube_pod_created [STABLE] Unix creation timestamp
# TYPE kube_pod_created gauge
kube_pod_created{namespace="prod",pod="web-0",uid="u-1"} 1.5e+09
# HELP kube_pod_deletion_timestamp Unix deletion timestamp
# TYPE kube_pod_deletion_timestamp gauge
# HELP kube_pod_info [STABLE] Information about pod.
# TYPE kube_pod_info gauge
kube_pod_info{namespace="prod",pod="web-0",uid="u-1",host_ip="10.0.0.5",pod_ip="10.1.2.3",node="node-a",created_by_kind="StatefulSet",created_by_name="web",priority_class="high",host_network="false"} 1
# HELP kube_pod_ips Pod IP addresses
# TYPE kube_pod_ips gauge
kube_pod_ips{namespace="prod",pod="web-0",uid="u-1",ip="10.1.2.3",ip_family="4"} 1
kube_pod_ips{namespace="prod",pod="web-0",uid="u-1",ip="fd00::3",ip_family="6"} 1
# HELP kube_pod_init_container_info [STABLE] Information about an init container in a pod.
# TYPE kube_pod_init_container_info gauge
kube_pod_init_container_info{namespace="prod",pod="web-0",uid="u-1",container="init",image_spec="busybox:1.36",image="docker.io/library/busybox:1.36",image_id="sha256:i1",container_id="containerd://c0",restart_policy="Always"} 1
# HELP kube_pod_init_container_resource_limits The number of requested limit resource by an init container.
# TYPE kube_pod_init_container_resource_limits gauge
# HELP kube_pod_init_container_resource_requests The number of requested request resource by an init container.
# TYPE kube_pod_init_container_resource_requests gauge
kube_pod_init_container_resource_requests{namespace="prod",pod="web-0",uid="u-1",container="init",node="node-a",resource="cpu",unit="core"} 0.1
# HELP kube_pod_init_container_state_started Start time in unix timestamp for a pod init container.
# TYPE kube_pod_init_container_state_started gauge
kube_pod_init_container_state_started{namespace="prod",pod="web-0",uid="u-1",container="init"} 1.500000006e+09
# HELP kube_pod_init_container_status_last_terminated_reason Describes the last reason the init container was in terminated state.
# TYPE kube_pod_init_container_status_last_terminated_reason gauge
# HELP kube_pod_init_container_status_last_terminated_exitcode Describes the exit code for the last init container in terminated state.
# TYPE kube_pod_init_container_status_last_terminated_exitcode gauge
# HELP kube_pod_init_container_status_last_terminated_timestamp Last terminated time for a pod init container in unix timestamp.
# TYPE kube_pod_init_container_status_last_terminated_timestamp gauge
# HELP kube_pod_init_container_status_ready [STABLE] Describes whether the init containers readiness check succeeded.
# TYPE kube_pod_init_container_status_ready gauge
kube_pod_init_container_status_ready{namespace="prod",pod="web-0",uid="u-1",container="init"} 1
# HELP kube_pod_init_container_status_restarts_total [STABLE] The number of restarts for the init container.
# TYPE kube_pod_init_container_status_restarts_total counter
kube_pod_init_container_status_restarts_total{namespace="prod",pod="web-0",uid="u-1",container="init"} 0
# HELP kube_pod_init_container_status_running [STABLE] Describes whether the init container is currently in running state.
# TYPE kube_pod_init_container_status_running gauge
kube_pod_init_container_status_running{namespace="prod",pod="web-0",uid="u-1",container="init"} 1
# HELP kube_pod_init_container_status_terminated [STABLE] Describes whether the init container is currently in terminated state.
# TYPE kube_pod_init_container_status_terminated gauge
kube_pod_init_container_status_terminated{namespace="prod",pod="web-0",uid="u-1",container="init"} 0
# HELP kube_pod_init_container_status_terminated_reason Describes the reason the init container is currently in terminated state.
# TYPE kube_pod_init_container_status_terminated_reason gauge
# HELP kube_pod_init_container_status_waiting [STABLE] Describes whether the init container is currently in waiting state.
# TYPE kube_pod_init_container_status_waiting gauge
kube_pod_init_container_status_waiting{namespace="prod",pod="web-0",uid="u-1",container="init"} 0
# HELP kube_pod_init_container_status_waiting_reason Describes the reason the init container is currently in waiting state.
# TYPE kube_pod_init_container_status_waiting_reason gauge
# HELP kube_pod_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_pod_annotations gauge
# HELP kube_pod_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_pod_labels gauge
# HELP kube_pod_overhead_cpu_cores The pod overhead in regards to cpu cores associated with running a pod.
# TYPE kube_pod_overhead_cpu_cores gauge
kube_pod_overhead_cpu_cores{namespace="prod",pod="web-0",uid="u-1"} 0.25
# HELP kube_pod_overhead_memory_bytes The pod overhead in regards to memory associated with running a pod.
# TYPE kube_pod_overhead_memory_bytes gauge
kube_pod_overhead_memory_bytes{namespace="prod",pod="web-0",uid="u-1"} 1.2582912e+08
# HELP kube_pod_owner [STABLE] Information about the Pod's owner.
# TYPE kube_pod_owner gauge
kube_pod_owner{namespace="prod",pod="web-0",uid="u-1",owner_kind="StatefulSet",owner_name="web",owner_is_controller="true"} 1
# HELP kube_pod_resourceclaim_info Information about a DRA ResourceClaim referenced by a pod, one series per pod.spec.resourceClaims entry; claim_name is the pod-local reference and resourceclaim_name is the resolved ResourceClaim object name.
# TYPE kube_pod_resourceclaim_info gauge
# HELP kube_pod_restart_policy [STABLE] Describes the restart policy in use by this pod.
# TYPE kube_pod_restart_policy gauge
kube_pod_restart_policy{namespace="prod",pod="web-0",uid="u-1",type="Always"} 1
# HELP kube_pod_runtimeclass_name_info The runtimeclass associated with the pod.
# TYPE kube_pod_runtimeclass_name_info gauge
kube_pod_runtimeclass_name_info{namespace="prod",pod="web-0",uid="u-1",runtimeclass_name="gvisor"} 1
# HELP kube_pod_spec_volumes_persistentvolumeclaims_info [STABLE] Information about persistentvolumeclaim and ephemeral volumes in a pod.
# TYPE kube_pod_spec_volumes_persistentvolumeclaims_info gauge
kube_pod_spec_volumes_persistentvolumeclaims_info{namespace="prod",pod="web-0",uid="u-1",volume="data",persistentvolumeclaim="data-web-0",ephemeral="false"} 1
kube_pod_spec_volumes_persistentvolumeclaims_info{namespace="prod",pod="web-0",uid="u-1",volume="scratch",persistentvolumeclaim="web-0-scratch",ephemeral="true"} 1
# HELP kube_pod_spec_volumes_persistentvolumeclaims_readonly [STABLE] Describes whether a persistentvolumeclaim is mounted read only. Ephemeral volumes always report 0 since the ephemeral volume source does not support a read-only flag.
# TYPE kube_pod_spec_volumes_persistentvolumeclaims_readonly gauge
kube_pod_spec_volumes_persistentvolumeclaims_readonly{namespace="prod",pod="web-0",uid="u-1",volume="data",persistentvolumeclaim="data-web-0",ephemeral="false"} 1
kube_pod_spec_volumes_persistentvolumeclaims_readonly{namespace="prod",pod="web-0",uid="u-1",volume="scratch",persistentvolumeclaim="web-0-scratch",ephemeral="true"} 0
# HELP kube_pod_start_time [STABLE] Start time in unix timestamp for a pod.
# TYPE kube_pod_start_time gauge
kube_pod_start_time{namespace="prod",pod="web-0",uid="u-1"} 1.500000005e+09
# HELP kube_pod_status_phase [STABLE] The pods current phase.
# TYPE kube_pod_status_phase gauge
kube_pod_status_phase{namespace="prod",pod="web-0",uid="u-1",phase="Pending"} 0
kube_pod_status_phase{namespace="prod",pod="web-0",uid="u-1",phase="Succeeded"} 0
kube_pod_status_phase{namespace="prod",pod="web-0",uid="u-1",phase="Failed"} 0
kube_pod_status_phase{namespace="prod",pod="web-0",uid="u-1",phase="Unknown"} 0
kube_pod_status_phase{namespace="prod",pod="web-0",uid="u-1",phase="Running"} 1
# HELP kube_pod_status_qos_class The pods current qosClass.
# TYPE kube_pod_status_qos_class gauge
kube_pod_status_qos_class{namespace="prod",pod="web-0",uid="u-1",qos_class="BestEffort"} 0
kube_pod_status_qos_class{namespace="prod",pod="web-0",uid="u-1",qos_class="Burstable"} 1
kube_pod_status_qos_class{namespace="prod",pod="web-0",uid="u-1",qos_class="Guaranteed"} 0
# HELP kube_pod_status_ready [STABLE] Describes whether the pod is ready to serve requests.
# TYPE kube_pod_status_ready gauge
kube_pod_status_ready{namespace="prod",pod="web-0",uid="u-1",condition="true"} 1
kube_pod_status_ready{namespace="prod",pod="web-0",uid="u-1",condition="false"} 0
kube_pod_status_ready{namespace="prod",pod="web-0",uid="u-1",condition="unknown"} 0
# HELP kube_pod_status_ready_time Readiness achieved time in unix timestamp for a pod.
# TYPE kube_pod_status_ready_time gauge
kube_pod_status_ready_time{namespace="prod",pod="web-0",uid="u-1"} 1.50000002e+09
# HELP kube_pod_status_initialized_time Initialized time in unix timestamp for a pod.
# TYPE kube_pod_status_initialized_time gauge
kube_pod_status_initialized_time{namespace="prod",pod="web-0",uid="u-1"} 1.50000001e+09
# HELP kube_pod_status_container_ready_time Readiness achieved time in unix timestamp for a pod containers.
# TYPE kube_pod_status_container_ready_time gauge
kube_pod_status_container_ready_time{namespace="prod",pod="web-0",uid="u-1"} 1.50000002e+09
# HELP kube_pod_status_reason The pod status reasons
# TYPE kube_pod_status_reason gauge
# HELP kube_pod_status_disruption_reason The pod disruption condition reason
# TYPE kube_pod_status_disruption_reason gauge
# HELP kube_pod_status_scheduled [STABLE] Describes the status of the scheduling process for the pod.
# TYPE kube_pod_status_scheduled gauge
kube_pod_status_scheduled{namespace="prod",pod="web-0",uid="u-1",condition="true"} 1
kube_pod_status_scheduled{namespace="prod",pod="web-0",uid="u-1",condition="false"} 0
kube_pod_status_scheduled{namespace="prod",pod="web-0",uid="u-1",condition="unknown"} 0
# HELP kube_pod_status_scheduled_time [STABLE] Unix timestamp when pod moved into scheduled status
# TYPE kube_pod_status_scheduled_time gauge
kube_pod_status_scheduled_time{namespace="prod",pod="web-0",uid="u-1"} 1.500000001e+09
# HELP kube_pod_status_unschedulable [STABLE] Describes the unschedulable status for the pod.
# TYPE kube_pod_status_unschedulable gauge
# HELP kube_pod_status_unscheduled_time Unix timestamp when pod moved into unscheduled status
# TYPE kube_pod_status_unscheduled_time gauge
# HELP kube_pod_tolerations Information about the pod tolerations
# TYPE kube_pod_tolerations gauge
kube_pod_tolerations{namespace="prod",pod="web-0",uid="u-1",key="node.kubernetes.io/not-ready",operator="Exists",value="",effect="NoExecute",toleration_seconds="300"} 1
# HELP kube_pod_service_account The service account for a pod.
# TYPE kube_pod_service_account gauge
kube_pod_service_account{namespace="prod",pod="web-0",uid="u-1",service_account="web-sa"} 1
# HELP kube_pod_scheduler The scheduler for a pod.
# TYPE kube_pod_scheduler gauge
kube_pod_scheduler{namespace="prod",pod="web-0",uid="u-1",name="default-scheduler"} 1
"#;

#[test]
fn golden_default_document() {
    assert_eq!(
        families().render_document(&web_pod(), &FamilyContext::default()),
        WEB_POD_DOCUMENT
    );
}

#[test]
fn families_match_upstream_list() {
    let f = families();
    assert_eq!(f.families.len(), 60);
    let opt_in: Vec<&str> = f
        .families
        .iter()
        .filter(|s| s.opt_in)
        .map(|s| s.name)
        .collect();
    assert_eq!(opt_in, ["kube_pod_nodeselectors"]);
    let counters: Vec<&str> = f
        .families
        .iter()
        .filter(|s| s.kind == MetricType::Counter)
        .map(|s| s.name)
        .collect();
    assert_eq!(
        counters,
        [
            "kube_pod_container_status_restarts_total",
            "kube_pod_init_container_status_restarts_total"
        ]
    );
    assert!(f.families.iter().all(|s| s.deprecated_since.is_none()));
}

#[test]
fn golden_nodeselectors_opt_in() {
    let want = r#"# HELP kube_pod_nodeselectors Describes the Pod nodeSelectors.
# TYPE kube_pod_nodeselectors gauge
kube_pod_nodeselectors{namespace="prod",pod="web-0",uid="u-1",nodeselector_disk_type="ssd",nodeselector_kubernetes_io_os="linux"} 1
"#;
    assert_eq!(render(&web_pod(), &["kube_pod_nodeselectors"]), want);
    assert!(!WEB_POD_DOCUMENT.contains("kube_pod_nodeselectors"));
    // Without selectors upstream still emits the sample, with identity labels only.
    let bare_pod =
        pod(serde_json::json!({ "metadata": { "name": "p", "namespace": "n", "uid": "u" } }));
    assert!(
        render(&bare_pod, &["kube_pod_nodeselectors"])
            .ends_with("kube_pod_nodeselectors{namespace=\"n\",pod=\"p\",uid=\"u\"} 1\n")
    );
}

#[test]
fn golden_minimal_pod() {
    // Only families upstream emits unconditionally produce samples; nothing panics on a
    // pod without spec or status.
    let p = pod(serde_json::json!({ "metadata": { "name": "p", "namespace": "n", "uid": "u" } }));
    let doc = families().render_document(&p, &FamilyContext::default());
    let samples: Vec<&str> = doc.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        samples,
        [
            r#"kube_pod_info{namespace="n",pod="p",uid="u",host_ip="",pod_ip="",node="",created_by_kind="",created_by_name="",priority_class="",host_network="false"} 1"#,
            r#"kube_pod_owner{namespace="n",pod="p",uid="u",owner_kind="",owner_name="",owner_is_controller=""} 1"#,
            r#"kube_pod_restart_policy{namespace="n",pod="p",uid="u",type=""} 1"#,
            r#"kube_pod_service_account{namespace="n",pod="p",uid="u",service_account=""} 1"#,
            r#"kube_pod_scheduler{namespace="n",pod="p",uid="u",name=""} 1"#,
        ]
    );
    assert_eq!(doc.lines().filter(|l| l.starts_with("# HELP")).count(), 59);
}

#[test]
fn golden_labels_and_annotations_allowlisted() {
    let ctx = FamilyContext {
        labels: KeyAllowlist::All,
        annotations: KeyAllowlist::Keys(vec!["missing".into()]),
    };
    let f = families();
    let enabled = [
        f.family_index("kube_pod_annotations").unwrap(),
        f.family_index("kube_pod_labels").unwrap(),
    ];
    let want = r#"# HELP kube_pod_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_pod_annotations gauge
kube_pod_annotations{namespace="prod",pod="web-0",uid="u-1"} 1
# HELP kube_pod_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_pod_labels gauge
kube_pod_labels{namespace="prod",pod="web-0",uid="u-1",label_app="web"} 1
"#;
    assert_eq!(f.render_document_with(&web_pod(), &ctx, &enabled), want);
}

// The cases below are upstream's pod_test.go cases, with lines in our (upstream's
// emission) label order instead of the sorted order its comparison uses.

#[test]
fn golden_resourceclaim_info() {
    let p = pod(serde_json::json!({
        "metadata": { "name": "pod1", "namespace": "ns1", "uid": "uid1" },
        "spec": {
            "containers": [],
            "resourceClaims": [
                { "name": "gpu", "resourceClaimName": "shared-gpu-claim" },
                { "name": "gpu-tmpl", "resourceClaimTemplateName": "gpu-template" },
                { "name": "pending", "resourceClaimTemplateName": "gpu-template" },
                { "name": "bad" }
            ]
        },
        "status": { "resourceClaimStatuses": [ { "name": "gpu-tmpl", "resourceClaimName": "pod1-gpu-tmpl-abcde" } ] }
    }));
    let want = r#"# HELP kube_pod_resourceclaim_info Information about a DRA ResourceClaim referenced by a pod, one series per pod.spec.resourceClaims entry; claim_name is the pod-local reference and resourceclaim_name is the resolved ResourceClaim object name.
# TYPE kube_pod_resourceclaim_info gauge
kube_pod_resourceclaim_info{namespace="ns1",pod="pod1",uid="uid1",claim_name="gpu",resourceclaim_name="shared-gpu-claim",resourceclaim_template_name=""} 1
kube_pod_resourceclaim_info{namespace="ns1",pod="pod1",uid="uid1",claim_name="gpu-tmpl",resourceclaim_name="pod1-gpu-tmpl-abcde",resourceclaim_template_name="gpu-template"} 1
kube_pod_resourceclaim_info{namespace="ns1",pod="pod1",uid="uid1",claim_name="pending",resourceclaim_name="",resourceclaim_template_name="gpu-template"} 1
"#;
    assert_eq!(render(&p, &["kube_pod_resourceclaim_info"]), want);
}

mod status;
