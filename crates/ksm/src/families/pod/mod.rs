//! `kube_pod_*`: the 60 pod families of kube-state-metrics v2.20, in the order
//! upstream registers them (`podMetricFamilies`), which is the order they are served.

mod containers;
mod spec;
mod status;

use ferrocrane_core::exposition::{Metric, MetricType, MetricType::Counter, MetricType::Gauge};
use k8s_openapi::api::core::v1::Pod;

use super::util::{
    annotations_family, created, deletion_timestamp, go_unix, labels_family, owner_family,
};
use super::{FamilyContext, FamilySpec, ResourceFamilies, Stability, Stability::*};
use containers::{containers, init_containers, init_statuses, limits, requests, statuses};

/// `spec.nodeName`, empty when unset.
fn node_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

fn family(
    name: &'static str,
    help: &'static str,
    kind: MetricType,
    stability: Stability,
    generate: fn(&Pod, &FamilyContext) -> Vec<Metric>,
) -> FamilySpec<Pod> {
    FamilySpec {
        name,
        help,
        kind,
        stability,
        deprecated_since: None,
        opt_in: false,
        generate,
    }
}

pub fn families() -> ResourceFamilies<Pod> {
    ResourceFamilies {
        resource: "pods",
        identity_keys: &["namespace", "pod", "uid"],
        identity: |p| {
            vec![
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
                p.metadata.uid.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            family(
                "kube_pod_completion_time",
                "Completion time in unix timestamp for a pod.",
                Gauge,
                Stable,
                |p, _| containers::completion_time(p),
            ),
            family(
                "kube_pod_container_info",
                "Information about a container in a pod.",
                Gauge,
                Stable,
                |p, _| containers::container_info(containers(p), statuses(p)),
            ),
            family(
                "kube_pod_container_resource_limits",
                "The number of requested limit resource by a container. It is recommended to use the kube_pod_resource_limits metric exposed by kube-scheduler instead, as it is more precise.",
                Gauge,
                Stable,
                |p, _| containers::resources(p, containers(p), limits),
            ),
            family(
                "kube_pod_container_resource_requests",
                "The number of requested request resource by a container. It is recommended to use the kube_pod_resource_requests metric exposed by kube-scheduler instead, as it is more precise.",
                Gauge,
                Stable,
                |p, _| containers::resources(p, containers(p), requests),
            ),
            family(
                "kube_pod_container_state_started",
                "Start time in unix timestamp for a pod container.",
                Gauge,
                Stable,
                |p, _| containers::state_started(statuses(p)),
            ),
            family(
                "kube_pod_container_status_last_terminated_reason",
                "Describes the last reason the container was in terminated state.",
                Gauge,
                Alpha,
                |p, _| containers::last_terminated_reason(statuses(p)),
            ),
            family(
                "kube_pod_container_status_last_terminated_exitcode",
                "Describes the exit code for the last container in terminated state.",
                Gauge,
                Alpha,
                |p, _| containers::last_terminated_exitcode(statuses(p)),
            ),
            family(
                "kube_pod_container_status_last_terminated_timestamp",
                "Last terminated time for a pod container in unix timestamp.",
                Gauge,
                Alpha,
                |p, _| containers::last_terminated_timestamp(statuses(p)),
            ),
            family(
                "kube_pod_container_status_ready",
                "Describes whether the containers readiness check succeeded.",
                Gauge,
                Stable,
                |p, _| containers::status_ready(statuses(p)),
            ),
            family(
                "kube_pod_container_status_restarts_total",
                "The number of container restarts per container.",
                Counter,
                Stable,
                |p, _| containers::restarts_total(statuses(p)),
            ),
            family(
                "kube_pod_container_status_running",
                "Describes whether the container is currently in running state.",
                Gauge,
                Stable,
                |p, _| containers::status_running(statuses(p)),
            ),
            family(
                "kube_pod_container_status_terminated",
                "Describes whether the container is currently in terminated state.",
                Gauge,
                Stable,
                |p, _| containers::status_terminated(statuses(p)),
            ),
            family(
                "kube_pod_container_status_terminated_reason",
                "Describes the reason the container is currently in terminated state.",
                Gauge,
                Alpha,
                |p, _| containers::terminated_reason(statuses(p)),
            ),
            family(
                "kube_pod_container_status_waiting",
                "Describes whether the container is currently in waiting state.",
                Gauge,
                Stable,
                |p, _| containers::status_waiting(statuses(p)),
            ),
            family(
                "kube_pod_container_status_waiting_reason",
                "Describes the reason the container is currently in waiting state.",
                Gauge,
                Stable,
                |p, _| containers::waiting_reason(statuses(p)),
            ),
            family(
                "kube_pod_created",
                "Unix creation timestamp",
                Gauge,
                Stable,
                |p, _| created(&p.metadata),
            ),
            family(
                "kube_pod_deletion_timestamp",
                "Unix deletion timestamp",
                Gauge,
                Alpha,
                |p, _| deletion_timestamp(&p.metadata),
            ),
            family(
                "kube_pod_info",
                "Information about pod.",
                Gauge,
                Stable,
                |p, _| status::info(p),
            ),
            family("kube_pod_ips", "Pod IP addresses", Gauge, Alpha, |p, _| {
                status::ips(p)
            }),
            family(
                "kube_pod_init_container_info",
                "Information about an init container in a pod.",
                Gauge,
                Stable,
                |p, _| containers::init_container_info(init_containers(p), init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_resource_limits",
                "The number of requested limit resource by an init container.",
                Gauge,
                Alpha,
                |p, _| containers::resources(p, init_containers(p), limits),
            ),
            family(
                "kube_pod_init_container_resource_requests",
                "The number of requested request resource by an init container.",
                Gauge,
                Alpha,
                |p, _| containers::resources(p, init_containers(p), requests),
            ),
            family(
                "kube_pod_init_container_state_started",
                "Start time in unix timestamp for a pod init container.",
                Gauge,
                Alpha,
                |p, _| containers::state_started(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_last_terminated_reason",
                "Describes the last reason the init container was in terminated state.",
                Gauge,
                Alpha,
                |p, _| containers::last_terminated_reason(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_last_terminated_exitcode",
                "Describes the exit code for the last init container in terminated state.",
                Gauge,
                Alpha,
                |p, _| containers::last_terminated_exitcode(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_last_terminated_timestamp",
                "Last terminated time for a pod init container in unix timestamp.",
                Gauge,
                Alpha,
                |p, _| containers::last_terminated_timestamp(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_ready",
                "Describes whether the init containers readiness check succeeded.",
                Gauge,
                Stable,
                |p, _| containers::status_ready(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_restarts_total",
                "The number of restarts for the init container.",
                Counter,
                Stable,
                |p, _| containers::restarts_total(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_running",
                "Describes whether the init container is currently in running state.",
                Gauge,
                Stable,
                |p, _| containers::status_running(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_terminated",
                "Describes whether the init container is currently in terminated state.",
                Gauge,
                Stable,
                |p, _| containers::status_terminated(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_terminated_reason",
                "Describes the reason the init container is currently in terminated state.",
                Gauge,
                Alpha,
                |p, _| containers::terminated_reason(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_waiting",
                "Describes whether the init container is currently in waiting state.",
                Gauge,
                Stable,
                |p, _| containers::status_waiting(init_statuses(p)),
            ),
            family(
                "kube_pod_init_container_status_waiting_reason",
                "Describes the reason the init container is currently in waiting state.",
                Gauge,
                Alpha,
                |p, _| containers::waiting_reason(init_statuses(p)),
            ),
            family(
                "kube_pod_annotations",
                "Kubernetes annotations converted to Prometheus labels.",
                Gauge,
                Alpha,
                |p, ctx| annotations_family(&p.metadata, ctx),
            ),
            family(
                "kube_pod_labels",
                "Kubernetes labels converted to Prometheus labels.",
                Gauge,
                Stable,
                |p, ctx| labels_family(&p.metadata, ctx),
            ),
            family(
                "kube_pod_overhead_cpu_cores",
                "The pod overhead in regards to cpu cores associated with running a pod.",
                Gauge,
                Alpha,
                |p, _| spec::overhead_cpu_cores(p),
            ),
            family(
                "kube_pod_overhead_memory_bytes",
                "The pod overhead in regards to memory associated with running a pod.",
                Gauge,
                Alpha,
                |p, _| spec::overhead_memory_bytes(p),
            ),
            family(
                "kube_pod_owner",
                "Information about the Pod's owner.",
                Gauge,
                Stable,
                |p, _| owner_family(&p.metadata),
            ),
            family(
                "kube_pod_resourceclaim_info",
                "Information about a DRA ResourceClaim referenced by a pod, one series per pod.spec.resourceClaims entry; claim_name is the pod-local reference and resourceclaim_name is the resolved ResourceClaim object name.",
                Gauge,
                Alpha,
                |p, _| spec::resourceclaim_info(p),
            ),
            family(
                "kube_pod_restart_policy",
                "Describes the restart policy in use by this pod.",
                Gauge,
                Stable,
                |p, _| spec::restart_policy(p),
            ),
            family(
                "kube_pod_runtimeclass_name_info",
                "The runtimeclass associated with the pod.",
                Gauge,
                Alpha,
                |p, _| spec::runtimeclass_name_info(p),
            ),
            family(
                "kube_pod_spec_volumes_persistentvolumeclaims_info",
                "Information about persistentvolumeclaim and ephemeral volumes in a pod.",
                Gauge,
                Stable,
                |p, _| spec::pvc_info(p),
            ),
            family(
                "kube_pod_spec_volumes_persistentvolumeclaims_readonly",
                "Describes whether a persistentvolumeclaim is mounted read only. Ephemeral volumes always report 0 since the ephemeral volume source does not support a read-only flag.",
                Gauge,
                Stable,
                |p, _| spec::pvc_readonly(p),
            ),
            family(
                "kube_pod_start_time",
                "Start time in unix timestamp for a pod.",
                Gauge,
                Stable,
                |p, _| status::start_time(p),
            ),
            family(
                "kube_pod_status_phase",
                "The pods current phase.",
                Gauge,
                Stable,
                |p, _| status::phase(p),
            ),
            family(
                "kube_pod_status_qos_class",
                "The pods current qosClass.",
                Gauge,
                Alpha,
                |p, _| status::qos_class(p),
            ),
            family(
                "kube_pod_status_ready",
                "Describes whether the pod is ready to serve requests.",
                Gauge,
                Stable,
                |p, _| status::condition_statuses(p, "Ready"),
            ),
            family(
                "kube_pod_status_ready_time",
                "Readiness achieved time in unix timestamp for a pod.",
                Gauge,
                Alpha,
                |p, _| status::condition_time(p, "Ready", "True"),
            ),
            family(
                "kube_pod_status_initialized_time",
                "Initialized time in unix timestamp for a pod.",
                Gauge,
                Alpha,
                |p, _| status::condition_time(p, "Initialized", "True"),
            ),
            family(
                "kube_pod_status_container_ready_time",
                "Readiness achieved time in unix timestamp for a pod containers.",
                Gauge,
                Alpha,
                |p, _| status::condition_time(p, "ContainersReady", "True"),
            ),
            family(
                "kube_pod_status_reason",
                "The pod status reasons",
                Gauge,
                Alpha,
                |p, _| status::reason(p),
            ),
            family(
                "kube_pod_status_disruption_reason",
                "The pod disruption condition reason",
                Gauge,
                Alpha,
                |p, _| status::disruption_reason(p),
            ),
            family(
                "kube_pod_status_scheduled",
                "Describes the status of the scheduling process for the pod.",
                Gauge,
                Stable,
                |p, _| status::condition_statuses(p, "PodScheduled"),
            ),
            family(
                "kube_pod_status_scheduled_time",
                "Unix timestamp when pod moved into scheduled status",
                Gauge,
                Stable,
                |p, _| status::condition_time(p, "PodScheduled", "True"),
            ),
            family(
                "kube_pod_status_unschedulable",
                "Describes the unschedulable status for the pod.",
                Gauge,
                Stable,
                |p, _| status::unschedulable(p),
            ),
            family(
                "kube_pod_status_unscheduled_time",
                "Unix timestamp when pod moved into unscheduled status",
                Gauge,
                Alpha,
                |p, _| status::condition_time(p, "PodScheduled", "False"),
            ),
            family(
                "kube_pod_tolerations",
                "Information about the pod tolerations",
                Gauge,
                Alpha,
                |p, _| spec::tolerations(p),
            ),
            FamilySpec {
                opt_in: true,
                ..family(
                    "kube_pod_nodeselectors",
                    "Describes the Pod nodeSelectors.",
                    Gauge,
                    Alpha,
                    |p, _| spec::nodeselectors(p),
                )
            },
            family(
                "kube_pod_service_account",
                "The service account for a pod.",
                Gauge,
                Alpha,
                |p, _| spec::service_account(p),
            ),
            family(
                "kube_pod_scheduler",
                "The scheduler for a pod.",
                Gauge,
                Alpha,
                |p, _| spec::scheduler(p),
            ),
        ],
    }
}

#[cfg(test)]
mod tests;
