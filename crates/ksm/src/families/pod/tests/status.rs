//! Goldens of container resources and states, and of the pod's status fields.

use super::*;

#[test]
fn golden_container_resources() {
    let res = serde_json::json!({
        "cpu": "200m", "memory": "100M", "ephemeral-storage": "300M", "storage": "400M", "nvidia.com/gpu": "1"
    });
    let p = pod(serde_json::json!({
        "metadata": { "name": "pod1", "namespace": "ns1", "uid": "uid1" },
        "spec": {
            "containers": [
                { "name": "pod1_con1", "resources": { "requests": res, "limits": res } },
                { "name": "pod1_con2", "resources": {
                    "requests": { "cpu": "300m", "memory": "200M" }, "limits": { "cpu": "300m", "memory": "200M" } } },
                { "name": "pod1_con3" }
            ],
            "initContainers": [ { "name": "pod1_initcon1", "resources": { "limits": res } } ]
        }
    }));
    let want = r#"# HELP kube_pod_container_resource_limits [STABLE] The number of requested limit resource by a container. It is recommended to use the kube_pod_resource_limits metric exposed by kube-scheduler instead, as it is more precise.
# TYPE kube_pod_container_resource_limits gauge
kube_pod_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="cpu",unit="core"} 0.2
kube_pod_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="ephemeral_storage",unit="byte"} 3e+08
kube_pod_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="memory",unit="byte"} 1e+08
kube_pod_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="nvidia_com_gpu",unit="integer"} 1
kube_pod_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="storage",unit="byte"} 4e+08
kube_pod_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con2",node="",resource="cpu",unit="core"} 0.3
kube_pod_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con2",node="",resource="memory",unit="byte"} 2e+08
# HELP kube_pod_container_resource_requests [STABLE] The number of requested request resource by a container. It is recommended to use the kube_pod_resource_requests metric exposed by kube-scheduler instead, as it is more precise.
# TYPE kube_pod_container_resource_requests gauge
kube_pod_container_resource_requests{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="cpu",unit="core"} 0.2
kube_pod_container_resource_requests{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="ephemeral_storage",unit="byte"} 3e+08
kube_pod_container_resource_requests{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="memory",unit="byte"} 1e+08
kube_pod_container_resource_requests{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="nvidia_com_gpu",unit="integer"} 1
kube_pod_container_resource_requests{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con1",node="",resource="storage",unit="byte"} 4e+08
kube_pod_container_resource_requests{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con2",node="",resource="cpu",unit="core"} 0.3
kube_pod_container_resource_requests{namespace="ns1",pod="pod1",uid="uid1",container="pod1_con2",node="",resource="memory",unit="byte"} 2e+08
# HELP kube_pod_init_container_resource_limits The number of requested limit resource by an init container.
# TYPE kube_pod_init_container_resource_limits gauge
kube_pod_init_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_initcon1",node="",resource="cpu",unit="core"} 0.2
kube_pod_init_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_initcon1",node="",resource="ephemeral_storage",unit="byte"} 3e+08
kube_pod_init_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_initcon1",node="",resource="memory",unit="byte"} 1e+08
kube_pod_init_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_initcon1",node="",resource="nvidia_com_gpu",unit="integer"} 1
kube_pod_init_container_resource_limits{namespace="ns1",pod="pod1",uid="uid1",container="pod1_initcon1",node="",resource="storage",unit="byte"} 4e+08
# HELP kube_pod_init_container_resource_requests The number of requested request resource by an init container.
# TYPE kube_pod_init_container_resource_requests gauge
"#;
    let names = [
        "kube_pod_container_resource_limits",
        "kube_pod_container_resource_requests",
        "kube_pod_init_container_resource_limits",
        "kube_pod_init_container_resource_requests",
    ];
    assert_eq!(render(&p, &names), want);
}

#[test]
fn golden_completion_time_info_and_owner() {
    let p = pod(serde_json::json!({
        "metadata": {
            "name": "pod2", "namespace": "ns2", "uid": "abc-456-xxx",
            "ownerReferences": [ { "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-name", "uid": "r", "controller": true } ]
        },
        "spec": { "nodeName": "node2", "containers": [] },
        "status": {
            "hostIP": "1.1.1.1", "podIP": "2.3.4.5",
            "containerStatuses": [
                { "name": "c1", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                  "state": { "terminated": { "exitCode": 0, "finishedAt": "2017-08-03T16:16:58Z" } } },
                { "name": "c2", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                  "state": { "terminated": { "exitCode": 0, "finishedAt": "2017-08-04T23:06:58Z" } } },
                { "name": "c3", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                  "state": { "terminated": { "exitCode": 0, "finishedAt": "2017-08-02T09:26:58Z" } } }
            ]
        }
    }));
    let want = r#"# HELP kube_pod_completion_time [STABLE] Completion time in unix timestamp for a pod.
# TYPE kube_pod_completion_time gauge
kube_pod_completion_time{namespace="ns2",pod="pod2",uid="abc-456-xxx"} 1.501888018e+09
# HELP kube_pod_created [STABLE] Unix creation timestamp
# TYPE kube_pod_created gauge
# HELP kube_pod_info [STABLE] Information about pod.
# TYPE kube_pod_info gauge
kube_pod_info{namespace="ns2",pod="pod2",uid="abc-456-xxx",host_ip="1.1.1.1",pod_ip="2.3.4.5",node="node2",created_by_kind="ReplicaSet",created_by_name="rs-name",priority_class="",host_network="false"} 1
# HELP kube_pod_owner [STABLE] Information about the Pod's owner.
# TYPE kube_pod_owner gauge
kube_pod_owner{namespace="ns2",pod="pod2",uid="abc-456-xxx",owner_kind="ReplicaSet",owner_name="rs-name",owner_is_controller="true"} 1
# HELP kube_pod_start_time [STABLE] Start time in unix timestamp for a pod.
# TYPE kube_pod_start_time gauge
"#;
    let names = [
        "kube_pod_created",
        "kube_pod_info",
        "kube_pod_start_time",
        "kube_pod_completion_time",
        "kube_pod_owner",
    ];
    assert_eq!(render(&p, &names), want);
}

#[test]
fn golden_ips() {
    let p = pod(serde_json::json!({
        "metadata": { "name": "pod1", "namespace": "ns1", "uid": "abc-123-xxx" },
        "status": { "podIPs": [
            { "ip": "1.2.3.4" }, { "ip": "fc00:1234:5678:90ab:cdef:cafe:f00d:d00d" }, { "ip": "::ffff:1.2.3.4" }, { "ip": "bogus" }
        ] }
    }));
    let want = r#"# HELP kube_pod_ips Pod IP addresses
# TYPE kube_pod_ips gauge
kube_pod_ips{namespace="ns1",pod="pod1",uid="abc-123-xxx",ip="1.2.3.4",ip_family="4"} 1
kube_pod_ips{namespace="ns1",pod="pod1",uid="abc-123-xxx",ip="fc00:1234:5678:90ab:cdef:cafe:f00d:d00d",ip_family="6"} 1
kube_pod_ips{namespace="ns1",pod="pod1",uid="abc-123-xxx",ip="::ffff:1.2.3.4",ip_family="4"} 1
"#;
    assert_eq!(render(&p, &["kube_pod_ips"]), want);
}

#[test]
fn golden_terminated_containers_and_zero_times() {
    // A terminated state without timestamps reports Go's zero time, as upstream does,
    // and keeps kube_pod_completion_time away.
    let p = pod(serde_json::json!({
        "metadata": { "name": "pod6", "namespace": "ns6", "uid": "uid6" },
        "status": {
            "containerStatuses": [
                { "name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 3,
                  "state": { "terminated": { "exitCode": 1, "reason": "Error" } },
                  "lastState": { "terminated": { "exitCode": 2, "reason": "Completed" } } }
            ],
            "initContainerStatuses": [
                { "name": "i", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                  "state": { "waiting": { "reason": "CrashLoopBackOff" } },
                  "lastState": { "terminated": { "exitCode": 1, "reason": "Error", "finishedAt": "2017-08-03T16:16:58Z" } } }
            ]
        }
    }));
    let want = r#"# HELP kube_pod_completion_time [STABLE] Completion time in unix timestamp for a pod.
# TYPE kube_pod_completion_time gauge
# HELP kube_pod_container_state_started [STABLE] Start time in unix timestamp for a pod container.
# TYPE kube_pod_container_state_started gauge
kube_pod_container_state_started{namespace="ns6",pod="pod6",uid="uid6",container="c"} -6.21355968e+10
# HELP kube_pod_container_status_last_terminated_reason Describes the last reason the container was in terminated state.
# TYPE kube_pod_container_status_last_terminated_reason gauge
kube_pod_container_status_last_terminated_reason{namespace="ns6",pod="pod6",uid="uid6",container="c",reason="Completed"} 1
# HELP kube_pod_container_status_last_terminated_exitcode Describes the exit code for the last container in terminated state.
# TYPE kube_pod_container_status_last_terminated_exitcode gauge
kube_pod_container_status_last_terminated_exitcode{namespace="ns6",pod="pod6",uid="uid6",container="c"} 2
# HELP kube_pod_container_status_last_terminated_timestamp Last terminated time for a pod container in unix timestamp.
# TYPE kube_pod_container_status_last_terminated_timestamp gauge
kube_pod_container_status_last_terminated_timestamp{namespace="ns6",pod="pod6",uid="uid6",container="c"} -6.21355968e+10
# HELP kube_pod_container_status_terminated [STABLE] Describes whether the container is currently in terminated state.
# TYPE kube_pod_container_status_terminated gauge
kube_pod_container_status_terminated{namespace="ns6",pod="pod6",uid="uid6",container="c"} 1
# HELP kube_pod_container_status_terminated_reason Describes the reason the container is currently in terminated state.
# TYPE kube_pod_container_status_terminated_reason gauge
kube_pod_container_status_terminated_reason{namespace="ns6",pod="pod6",uid="uid6",container="c",reason="Error"} 1
# HELP kube_pod_init_container_state_started Start time in unix timestamp for a pod init container.
# TYPE kube_pod_init_container_state_started gauge
# HELP kube_pod_init_container_status_last_terminated_reason Describes the last reason the init container was in terminated state.
# TYPE kube_pod_init_container_status_last_terminated_reason gauge
kube_pod_init_container_status_last_terminated_reason{namespace="ns6",pod="pod6",uid="uid6",container="i",reason="Error"} 1
# HELP kube_pod_init_container_status_last_terminated_exitcode Describes the exit code for the last init container in terminated state.
# TYPE kube_pod_init_container_status_last_terminated_exitcode gauge
kube_pod_init_container_status_last_terminated_exitcode{namespace="ns6",pod="pod6",uid="uid6",container="i"} 1
# HELP kube_pod_init_container_status_last_terminated_timestamp Last terminated time for a pod init container in unix timestamp.
# TYPE kube_pod_init_container_status_last_terminated_timestamp gauge
kube_pod_init_container_status_last_terminated_timestamp{namespace="ns6",pod="pod6",uid="uid6",container="i"} 1.501777018e+09
# HELP kube_pod_init_container_status_waiting_reason Describes the reason the init container is currently in waiting state.
# TYPE kube_pod_init_container_status_waiting_reason gauge
kube_pod_init_container_status_waiting_reason{namespace="ns6",pod="pod6",uid="uid6",container="i",reason="CrashLoopBackOff"} 1
"#;
    let names = [
        "kube_pod_completion_time",
        "kube_pod_container_state_started",
        "kube_pod_container_status_last_terminated_reason",
        "kube_pod_container_status_last_terminated_exitcode",
        "kube_pod_container_status_last_terminated_timestamp",
        "kube_pod_container_status_terminated",
        "kube_pod_container_status_terminated_reason",
        "kube_pod_init_container_state_started",
        "kube_pod_init_container_status_last_terminated_reason",
        "kube_pod_init_container_status_last_terminated_exitcode",
        "kube_pod_init_container_status_last_terminated_timestamp",
        "kube_pod_init_container_status_waiting_reason",
    ];
    assert_eq!(render(&p, &names), want);
}

#[test]
fn golden_status_reason() {
    let reason_of = |status: serde_json::Value| {
        let p = pod(
            serde_json::json!({ "metadata": { "name": "pod4", "namespace": "ns4", "uid": "uid4" }, "status": status }),
        );
        render(&p, &["kube_pod_status_reason"])
            .lines()
            .skip(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let line = |r: &str| {
        format!(r#"kube_pod_status_reason{{namespace="ns4",pod="pod4",uid="uid4",reason="{r}"}} 1"#)
    };
    for r in [
        "NodeLost",
        "Evicted",
        "UnexpectedAdmissionError",
        "NodeAffinity",
        "Shutdown",
        "PreemptionByScheduler",
        "TerminationByKubelet",
    ] {
        assert_eq!(
            reason_of(serde_json::json!({ "phase": "Running", "reason": r })),
            [line(r)]
        );
    }
    assert_eq!(
        reason_of(serde_json::json!({ "phase": "Running", "reason": "other reason" })),
        [line("Other")]
    );
    assert_eq!(
        reason_of(
            serde_json::json!({ "phase": "Pending", "conditions": [ { "type": "PodScheduled", "status": "False", "reason": "SchedulingGated" } ] })
        ),
        [line("SchedulingGated")]
    );
    // Known reasons from conditions and terminated containers, in upstream's list order.
    assert_eq!(
        reason_of(serde_json::json!({
            "reason": "Evicted",
            "conditions": [ { "type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet" } ],
            "containerStatuses": [ { "name": "c", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                "state": { "terminated": { "exitCode": 0, "reason": "Shutdown" } } } ]
        })),
        [
            line("Evicted"),
            line("Shutdown"),
            line("TerminationByKubelet")
        ]
    );
    assert!(reason_of(serde_json::json!({ "phase": "Running" })).is_empty());
}

#[test]
fn golden_disruption_reason() {
    let p = pod(serde_json::json!({
        "metadata": { "name": "pod5", "namespace": "ns5", "uid": "uid5" },
        "status": { "conditions": [
            { "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI" },
            { "type": "Ready", "status": "False", "reason": "EvictionByEvictionAPI" },
            { "type": "DisruptionTarget", "status": "True", "reason": "SomeFutureReason" }
        ] }
    }));
    let want = r#"# HELP kube_pod_status_disruption_reason The pod disruption condition reason
# TYPE kube_pod_status_disruption_reason gauge
kube_pod_status_disruption_reason{namespace="ns5",pod="pod5",uid="uid5",reason="EvictionByEvictionAPI"} 1
kube_pod_status_disruption_reason{namespace="ns5",pod="pod5",uid="uid5",reason="Other"} 1
"#;
    assert_eq!(render(&p, &["kube_pod_status_disruption_reason"]), want);
}

#[test]
fn golden_unscheduled() {
    let p = pod(serde_json::json!({
        "metadata": { "name": "pod2", "namespace": "ns2", "uid": "uid2" },
        "status": { "conditions": [
            { "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "2017-08-02T09:26:58Z" }
        ] }
    }));
    let want = r#"# HELP kube_pod_status_scheduled [STABLE] Describes the status of the scheduling process for the pod.
# TYPE kube_pod_status_scheduled gauge
kube_pod_status_scheduled{namespace="ns2",pod="pod2",uid="uid2",condition="true"} 0
kube_pod_status_scheduled{namespace="ns2",pod="pod2",uid="uid2",condition="false"} 1
kube_pod_status_scheduled{namespace="ns2",pod="pod2",uid="uid2",condition="unknown"} 0
# HELP kube_pod_status_scheduled_time [STABLE] Unix timestamp when pod moved into scheduled status
# TYPE kube_pod_status_scheduled_time gauge
# HELP kube_pod_status_unschedulable [STABLE] Describes the unschedulable status for the pod.
# TYPE kube_pod_status_unschedulable gauge
kube_pod_status_unschedulable{namespace="ns2",pod="pod2",uid="uid2"} 1
# HELP kube_pod_status_unscheduled_time Unix timestamp when pod moved into unscheduled status
# TYPE kube_pod_status_unscheduled_time gauge
kube_pod_status_unscheduled_time{namespace="ns2",pod="pod2",uid="uid2"} 1.501666018e+09
"#;
    let names = [
        "kube_pod_status_scheduled",
        "kube_pod_status_scheduled_time",
        "kube_pod_status_unschedulable",
        "kube_pod_status_unscheduled_time",
    ];
    assert_eq!(render(&p, &names), want);
}

#[test]
fn golden_tolerations_deduplicated() {
    let p = pod(serde_json::json!({
        "metadata": { "name": "pod1", "namespace": "ns1", "uid": "uid1" },
        "spec": { "containers": [], "tolerations": [
            { "key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule" },
            { "key": "key2", "operator": "Exists" },
            { "key": "key3", "operator": "Equal", "value": "value3" },
            { "key": "key3", "operator": "Equal", "value": "value3" },
            {}
        ] }
    }));
    let want = r#"# HELP kube_pod_tolerations Information about the pod tolerations
# TYPE kube_pod_tolerations gauge
kube_pod_tolerations{namespace="ns1",pod="pod1",uid="uid1",key="key1",operator="Equal",value="value1",effect="NoSchedule",toleration_seconds=""} 1
kube_pod_tolerations{namespace="ns1",pod="pod1",uid="uid1",key="key2",operator="Exists",value="",effect="",toleration_seconds=""} 1
kube_pod_tolerations{namespace="ns1",pod="pod1",uid="uid1",key="key3",operator="Equal",value="value3",effect="",toleration_seconds=""} 1
kube_pod_tolerations{namespace="ns1",pod="pod1",uid="uid1",key="",operator="",value="",effect="",toleration_seconds=""} 1
"#;
    assert_eq!(render(&p, &["kube_pod_tolerations"]), want);
}

#[test]
fn golden_phase_and_qos_absent_when_empty() {
    let p = pod(serde_json::json!({
        "metadata": { "name": "p", "namespace": "n", "uid": "u" },
        "status": { "phase": "", "qosClass": "BestEffort" }
    }));
    let want = r#"# HELP kube_pod_status_phase [STABLE] The pods current phase.
# TYPE kube_pod_status_phase gauge
# HELP kube_pod_status_qos_class The pods current qosClass.
# TYPE kube_pod_status_qos_class gauge
kube_pod_status_qos_class{namespace="n",pod="p",uid="u",qos_class="BestEffort"} 1
kube_pod_status_qos_class{namespace="n",pod="p",uid="u",qos_class="Burstable"} 0
kube_pod_status_qos_class{namespace="n",pod="p",uid="u",qos_class="Guaranteed"} 0
"#;
    assert_eq!(
        render(&p, &["kube_pod_status_phase", "kube_pod_status_qos_class"]),
        want
    );
}
