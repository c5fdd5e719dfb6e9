//! The requests sent to both adapters: discovery, every API's paths and selectors, bad input,
//! and the Accept headers the aggregator and kubectl send.

use super::world::World;
use super::{Request, get, get_as};

/// The requests sent to both, for `world`.
pub fn requests(world: &World) -> Vec<Request> {
    let ns = &world.ns;
    let other = &world.other_ns;
    let [node_a, _] = &world.nodes;
    let cm = "/apis/custom.metrics.k8s.io";
    let em = "/apis/external.metrics.k8s.io/v1beta1";
    let rm = "/apis/metrics.k8s.io/v1beta1";
    let mut r = vec![
        get("/apis"),
        get("/apis/custom.metrics.k8s.io"),
        get("/apis/external.metrics.k8s.io"),
        get("/apis/metrics.k8s.io"),
        get(format!("{cm}/v1beta1")),
        get(format!("{cm}/v1beta2")),
        get(em),
        get(rm),
        get("/openapi/v2"),
        get("/openapi/v3"),
        get("/no/such/route"),
        get("/apis/custom.metrics.k8s.io/v1beta3"),
    ];
    for v in ["v1beta1", "v1beta2"] {
        let base = format!("{cm}/{v}/namespaces/{ns}");
        let pods = format!("{base}/pods/*/http_requests_per_second");
        r.extend([
            get(format!("{base}/pods/web-0/http_requests_per_second")),
            get(pods.clone()),
            get(format!("{pods}?labelSelector=app%3Dweb")),
            get(format!("{pods}?labelSelector=app%21%3Dweb")),
            get(format!("{pods}?labelSelector=app+in+%28web%2Cdb%29")),
            get(format!("{pods}?labelSelector=app+notin+%28web%29")),
            get(format!("{pods}?labelSelector=tier")),
            get(format!("{pods}?labelSelector=%21tier")),
            get(format!("{pods}?labelSelector=app%3Dweb%2Ctier%3Dfront")),
            get(format!("{pods}?labelSelector=rank%3E1")),
            get(format!("{pods}?labelSelector=app%3D%3D%3D")),
            get(format!("{pods}?metricLabelSelector=code%3D200")),
            get(format!("{pods}?metricLabelSelector=code+in+%28500%29")),
            get(format!("{pods}?metricLabelSelector=code%3D%3D%3D")),
            get(format!("{pods}?fieldSelector=metadata.name%3Dweb-0")),
            get(format!(
                "{base}/pods/web-0/http_requests_per_second?fieldSelector=metadata.name%3Dweb-1"
            )),
            get(format!(
                "{base}/pods/web-0/http_requests_per_second?metricLabelSelector=code%3D500"
            )),
            get(format!("{base}/po/web-0/http_requests_per_second")),
            get(format!("{base}/po/*/http_requests_per_second")),
            get(format!("{base}/pod/web-0/http_requests_per_second")),
            get(format!("{base}/Pods/*/http_requests_per_second")),
            get(format!("{base}/pods/web-0")),
            get(format!("{base}/pods/missing/http_requests_per_second")),
            get(format!("{base}/pods/web-0/no_such_metric")),
            get(format!("{base}/pods/*/no_such_metric")),
            get(format!("{base}/widgets/x/http_requests_per_second")),
            get(format!("{base}/widgets/*/http_requests_per_second")),
            get(format!("{base}/services/web/queue_length")),
            get(format!("{base}/services/*/queue_length")),
            get(format!("{base}/metrics/namespace_budget_ratio")),
            get(format!("{base}/metrics/no_such_metric")),
            get(format!(
                "{base}/deployments.apps/web/deployment_queue_seconds"
            )),
            get(format!(
                "{base}/deployments.apps/*/deployment_queue_seconds"
            )),
            get(format!("{base}/deployments/web/deployment_queue_seconds")),
            get(format!(
                "{cm}/{v}/namespaces/{other}/pods/*/http_requests_per_second"
            )),
            get(format!("{cm}/{v}/nodes/{node_a}/node_temperature_celsius")),
            get(format!("{cm}/{v}/nodes/*/node_temperature_celsius")),
            get(format!(
                "{cm}/{v}/nodes/*/node_temperature_celsius?labelSelector=ferrocrane.io%2Fe2e%3D{ns}"
            )),
            get(format!("{cm}/{v}/nodes/missing/node_temperature_celsius")),
            get(format!("{cm}/{v}/pods/*/http_requests_per_second")),
            // Upstream's sample config names these.
            get(format!("{base}/pods/*/cpu_usage")),
            get(format!("{base}/pods/*/http_requests")),
            get(format!("{base}/metrics/http_requests")),
        ]);
    }
    for (n, metric, query) in [
        (ns, "queue_messages_ready", ""),
        (ns, "queue_messages_ready", "?labelSelector=queue%3Dorders"),
        (
            ns,
            "queue_messages_ready",
            "?labelSelector=queue+in+%28orders%2Cbilling%29",
        ),
        (
            ns,
            "queue_messages_ready",
            "?labelSelector=queue%21%3Dorders",
        ),
        (ns, "queue_messages_ready", "?labelSelector=queue%3D%3D%3D"),
        (other, "queue_messages_ready", ""),
        (ns, "cluster_backlog", ""),
        (ns, "cluster_backlog", "?labelSelector=team%3Da"),
        (ns, "no_such_metric", ""),
        (ns, "queue_consumer_lag", ""),
        (ns, "queue_depth", ""),
        (other, "queue_depth", ""),
    ] {
        r.push(get(format!("{em}/namespaces/{n}/{metric}{query}")));
    }
    r.push(get(format!("{em}/queue_messages_ready")));
    let e2e_nodes = format!("labelSelector=ferrocrane.io%2Fe2e%3D{ns}");
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    r.extend([
        get(format!("{rm}/nodes?{e2e_nodes}")),
        get(format!("{rm}/nodes/{node_a}")),
        get(format!("{rm}/nodes/missing")),
        get(format!("{rm}/nodes?labelSelector=rank%3E1")),
        get(format!("{rm}/namespaces/{ns}/pods")),
        get(format!("{rm}/namespaces/{ns}/pods/web-0")),
        get(format!("{rm}/namespaces/{ns}/pods/idle-0")),
        get(format!("{rm}/namespaces/{ns}/pods/missing")),
        get(format!("{rm}/namespaces/{ns}/pods?labelSelector=app%3Dweb")),
        get(format!(
            "{rm}/namespaces/{ns}/pods?labelSelector=app+in+%28web%2Cdb%29"
        )),
        get(format!("{rm}/namespaces/{ns}/pods?labelSelector=rank%3E1")),
        get(format!("{rm}/namespaces/{ns}/pods?labelSelector=rank%3C2")),
        get(format!(
            "{rm}/namespaces/{ns}/pods?labelSelector=app%3D%3D%3D"
        )),
        get(format!(
            "{rm}/namespaces/{ns}/pods?fieldSelector=metadata.name%3Dweb-1"
        )),
        get(format!(
            "{rm}/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3Dx"
        )),
        get(format!("{rm}/namespaces/{other}/pods")),
        get(format!("{rm}/namespaces/{ns}/po")),
        get(format!("{rm}/namespaces/{ns}/widgets")),
        get_as(format!("{rm}/namespaces/{ns}/pods"), table),
        get_as(format!("{rm}/nodes?{e2e_nodes}"), table),
    ]);
    r
}
