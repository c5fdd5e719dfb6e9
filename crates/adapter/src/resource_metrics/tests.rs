//! Pure-logic tests: samples plus object lists in, metrics.k8s.io JSON out; no I/O.

use std::collections::HashMap;
use std::time::Duration;

use ferrocrane_core::prometheus::{InstantSample, Sample};
use serde_json::json;

use super::*;

fn sample(labels: &[(&str, &str)], value: f64, timestamp_ms: i64) -> InstantSample {
    InstantSample {
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        sample: Sample {
            timestamp_ms,
            value,
        },
    }
}

fn obj(namespace: &str, name: &str, labels: &[(&str, &str)]) -> ObjectInfo {
    ObjectInfo {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

// 2024-01-02T03:04:05Z
const T0: i64 = 1_704_164_645_000;
const NOW: i64 = T0 + 60_000;

fn cx() -> AssembleContext<'static> {
    AssembleContext {
        cpu_container_label: "container",
        memory_container_label: "container",
        window: Duration::from_secs(300),
        now_ms: NOW,
    }
}

fn pod_results() -> QueryResults {
    QueryResults {
        cpu: index_samples(
            vec![
                sample(&[("pod", "web-0"), ("container", "app")], 0.25, T0),
                sample(
                    &[("pod", "web-0"), ("container", "sidecar")],
                    0.0015,
                    T0 - 2000,
                ),
                sample(&[("pod", "web-1"), ("container", "app")], f64::NAN, T0),
                sample(&[("pod", "cpu-only"), ("container", "app")], 1.0, T0),
            ],
            "pod",
        ),
        memory: index_samples(
            vec![
                sample(
                    &[("pod", "web-0"), ("container", "app")],
                    64.0 * 1048576.0,
                    T0,
                ),
                sample(&[("pod", "web-1"), ("container", "app")], -5.0, T0),
                sample(&[("pod", "web-1"), ("container", "mem-only")], 2048.0, T0),
            ],
            "pod",
        ),
    }
}

#[test]
fn nan_and_negative_samples_become_zero() {
    let idx = index_samples(
        vec![
            sample(&[("pod", "a")], f64::NAN, 1),
            sample(&[("pod", "a")], -1.0, 1),
            sample(&[("pod", "b")], 2.0, 1),
            sample(&[], 3.0, 1),
        ],
        "pod",
    );
    let a: Vec<f64> = idx["a"].iter().map(|s| s.sample.value).collect();
    assert_eq!(a, vec![0.0, 0.0]);
    assert_eq!(idx["b"][0].sample.value, 2.0);
    // A sample without the label is kept under "", which matches no object.
    assert_eq!(idx[""].len(), 1);
}

#[test]
fn pod_metrics_json_like_upstream() {
    let results = pod_results();
    let pod = obj("ns1", "web-0", &[("app", "web")]);
    let m = pod_metrics(&pod, Some(&results), &cx())
        .unwrap()
        .with_type_meta("metrics.k8s.io/v1beta1");
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({
            "kind": "PodMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {
                "name": "web-0",
                "namespace": "ns1",
                "creationTimestamp": "2024-01-02T03:05:05Z",
                "labels": {"app": "web"}
            },
            // The earliest sample of any container.
            "timestamp": "2024-01-02T03:04:03Z",
            "window": "5m0s",
            "containers": [
                {"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}},
                // Only CPU: memory reported as 0.
                {"name": "sidecar", "usage": {"cpu": "1m", "memory": "0"}}
            ]
        })
    );
    // Field order is Go's: kind, apiVersion, metadata, timestamp, window, containers.
    let text = serde_json::to_string(&m).unwrap();
    assert!(
        text.starts_with(r#"{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"name":"web-0","namespace":"ns1","creationTimestamp":"#),
        "{text}"
    );
}

#[test]
fn pods_lacking_cpu_or_memory_are_dropped() {
    let results = pod_results();
    // cpu-only has no memory sample at all; mem-less pods likewise; unknown pod has nothing.
    assert!(pod_metrics(&obj("ns1", "cpu-only", &[]), Some(&results), &cx()).is_none());
    assert!(pod_metrics(&obj("ns1", "nothing", &[]), Some(&results), &cx()).is_none());
    // Namespace whose queries failed.
    assert!(pod_metrics(&obj("ns1", "web-0", &[]), None, &cx()).is_none());
    // NaN CPU and negative memory count as zero, not as missing.
    let m = pod_metrics(&obj("ns1", "web-1", &[]), Some(&results), &cx()).unwrap();
    let c: Vec<_> = m
        .containers
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.usage.cpu.as_str(),
                c.usage.memory.as_str(),
            )
        })
        .collect();
    assert_eq!(c, vec![("app", "0", "0"), ("mem-only", "0", "2Ki")]);
}

#[test]
fn pod_list_sorted_by_namespace_then_name_and_skips_failed_namespaces() {
    let mut by_ns = HashMap::new();
    by_ns.insert("b".to_owned(), pod_results());
    by_ns.insert("a".to_owned(), pod_results());
    let pods = vec![
        obj("b", "web-1", &[]),
        obj("b", "web-0", &[]),
        obj("a", "web-0", &[]),
        obj("a", "cpu-only", &[]),
        obj("failed", "web-0", &[]),
    ];
    let items = pod_metrics_list(&pods, &by_ns, &cx());
    let names: Vec<_> = items
        .iter()
        .map(|m| format!("{}/{}", m.metadata.namespace, m.metadata.name))
        .collect();
    assert_eq!(names, vec!["a/web-0", "b/web-0", "b/web-1"]);
    let list = serde_json::to_value(model_list("PodMetricsList", items)).unwrap();
    assert_eq!(list["kind"], "PodMetricsList");
    assert_eq!(list["apiVersion"], "metrics.k8s.io/v1beta1");
    assert_eq!(list["metadata"], json!({}));
    // List items carry no kind/apiVersion, as the API server encodes them.
    assert!(list["items"][0].get("kind").is_none());
}

fn model_list<T>(kind: &'static str, items: Vec<T>) -> MetricsList<T> {
    super::model::list(kind, "metrics.k8s.io/v1beta1", items)
}

fn node_results() -> QueryResults {
    QueryResults {
        cpu: index_samples(
            vec![
                sample(&[("node", "n2")], 1.5, T0),
                sample(&[("node", "n1")], 0.123456, T0 - 1000),
                sample(&[("node", "cpu-only")], 1.0, T0),
            ],
            "node",
        ),
        memory: index_samples(
            vec![
                sample(&[("node", "n1")], 2.0 * 1073741824.0, T0),
                sample(&[("node", "n2")], 1_000_000_000.0, T0 - 3000),
            ],
            "node",
        ),
    }
}

#[test]
fn node_metrics_json_like_upstream() {
    let n = obj("", "n1", &[("kubernetes.io/hostname", "n1")]);
    let m = node_metrics(&n, &node_results(), &cx())
        .unwrap()
        .with_type_meta("metrics.k8s.io/v1");
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({
            "kind": "NodeMetrics",
            "apiVersion": "metrics.k8s.io/v1",
            "metadata": {
                "name": "n1",
                "creationTimestamp": "2024-01-02T03:05:05Z",
                "labels": {"kubernetes.io/hostname": "n1"}
            },
            "timestamp": "2024-01-02T03:04:04Z",
            "window": "5m0s",
            "usage": {"cpu": "123m", "memory": "2Gi"}
        })
    );
}

#[test]
fn node_list_sorted_skips_incomplete_and_is_empty_when_queries_failed() {
    let nodes = vec![
        obj("", "n2", &[]),
        obj("", "cpu-only", &[]),
        obj("", "n1", &[]),
        obj("", "unknown", &[]),
    ];
    let results = node_results();
    let items = node_metrics_list(&nodes, Some(&results), &cx());
    let got: Vec<_> = items
        .iter()
        .map(|m| {
            (
                m.metadata.name.as_str(),
                m.usage.cpu.as_str(),
                m.usage.memory.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![("n1", "123m", "2Gi"), ("n2", "1500m", "1000000000")]
    );
    // The earlier of the two sample times.
    assert_eq!(
        serde_json::to_value(&items[1].timestamp).unwrap(),
        "2024-01-02T03:04:02Z"
    );
    assert!(node_metrics_list(&nodes, None, &cx()).is_empty());
}

#[test]
fn containers_follow_each_rules_container_label() {
    let results = QueryResults {
        cpu: index_samples(
            vec![sample(&[("pod", "p"), ("container", "c")], 2.0, T0)],
            "pod",
        ),
        memory: index_samples(
            vec![sample(&[("pod", "p"), ("container_name", "c")], 1024.0, T0)],
            "pod",
        ),
    };
    let cx = AssembleContext {
        memory_container_label: "container_name",
        ..cx()
    };
    let m = pod_metrics(&obj("ns", "p", &[]), Some(&results), &cx).unwrap();
    assert_eq!(m.containers.len(), 1);
    assert_eq!(m.containers[0].usage.cpu, "2");
    assert_eq!(m.containers[0].usage.memory, "1Ki");
}

#[test]
fn status_bodies_like_apimachinery() {
    assert_eq!(
        serde_json::to_value(object_not_found("metrics.k8s.io", "podmetrics", "ns/web-0")).unwrap(),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "podmetrics.metrics.k8s.io \"ns/web-0\" not found",
            "reason": "NotFound",
            "details": {"name": "ns/web-0", "group": "metrics.k8s.io", "kind": "podmetrics"},
            "code": 404
        })
    );
    assert_eq!(
        serde_json::to_value(object_not_found("", "node", "n1")).unwrap(),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "node \"n1\" not found",
            "reason": "NotFound",
            "details": {"name": "n1", "kind": "node"},
            "code": 404
        })
    );
}

#[test]
fn shared_queries_swap() {
    let q = SharedQueries::default();
    assert!(q.get().is_none());
    let rr = Some(default_queries());
    q.set(rr);
    let got = q.get().unwrap();
    assert_eq!(got.window, Duration::from_secs(300));
    q.set(None);
    assert!(q.get().is_none());
    // A request that took the old queries keeps them.
    assert_eq!(got.cpu.container_label(), "container");
}

#[test]
fn default_config_queries() {
    let rr = default_queries();
    let m = crate::naming::tests::mapper();
    let flat = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        flat(
            rr.cpu
                .container_query_for(&m, "ns1", &["a".into(), "b".into()])
                .unwrap()
        ),
        r#"sum by (pod,container) ( irate ( container_cpu_usage_seconds_total{namespace="ns1",pod=~"a|b",container!="",pod!=""}[4m] ) )"#
    );
    assert_eq!(
        flat(rr.memory.node_query_for(&m, &["n1".into()]).unwrap()),
        r#"sum by (node) ( node_memory_working_set_bytes{node="n1"} )"#
    );
}

// --- the router's answers that need neither Prometheus nor the API server ---

async fn call(
    queries: Option<crate::naming::ResourceQueries>,
    uri: &str,
) -> (u16, serde_json::Value) {
    use tower::ServiceExt;
    // Nothing listens on port 9: the watches started by the router retry in the background,
    // and these requests are answered before anything would be listed.
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let state = std::sync::Arc::new(ResourceMetricsState {
        prometheus: ferrocrane_core::prometheus::PrometheusClient::from_url("http://127.0.0.1:9")
            .unwrap(),
        client: kube::Client::try_from(config).unwrap(),
        mapper: ferrocrane_core::kube::SharedMapper::fixed(Default::default()),
        queries: SharedQueries::new(queries),
    });
    let resp = router(state)
        .oneshot(
            axum::http::Request::get(uri)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (code, serde_json::from_slice(&body).unwrap_or_default())
}

fn default_queries() -> crate::naming::ResourceQueries {
    crate::loader::parse_str(
        "default-config.yaml",
        include_str!("../../../../config/adapter/default-config.yaml"),
    )
    .unwrap()
    .compile()
    .unwrap()
    .resource_rules
    .unwrap()
}

#[tokio::test]
async fn without_resource_rules_nothing_is_served() {
    let (code, body) = call(None, "/apis/metrics.k8s.io/v1beta1/nodes").await;
    // Go's API server answers a path of a group it does not serve with its path index.
    assert_eq!(code, 404);
    let paths = body["paths"].as_array().unwrap();
    assert!(
        paths
            .iter()
            .any(|p| p == "/apis/custom.metrics.k8s.io/v1beta1")
    );
    assert!(!paths.iter().any(|p| p == "/apis/metrics.k8s.io"));
}

#[tokio::test]
async fn bad_selectors_are_bad_requests() {
    let (code, body) = call(
        Some(default_queries()),
        "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn1",
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        r#""spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    let (code, body) = call(
        Some(default_queries()),
        "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=a%20in%20(",
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
}

#[tokio::test]
async fn v1_and_v1beta1_are_both_routed_and_nothing_else() {
    for version in ["v1", "v1beta1"] {
        let (code, body) = call(
            Some(default_queries()),
            &format!("/apis/metrics.k8s.io/{version}/nodes?labelSelector=a%20in%20("),
        )
        .await;
        assert_eq!(code, 400, "{version}: {body}");
    }
    let (code, _) = call(
        Some(default_queries()),
        "/apis/metrics.k8s.io/v2/nodes?labelSelector=a%20in%20(",
    )
    .await;
    assert_eq!(code, 404);
}
