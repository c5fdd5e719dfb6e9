//! The router end to end without I/O: discovery from a filled registry, and every answer that
//! is decided before Kubernetes or Prometheus would be asked.

use std::sync::{Arc, RwLock};

use axum::body::{Body, to_bytes};
use ferrocrane_core::kube::SharedMapper;
use tower::ServiceExt;

use super::*;
use crate::api::external::prometheus::PrometheusRules;
use crate::api::external::{ExternalMetrics, Source};
use crate::loader::parse_str;
use crate::naming::Series;
use crate::relist::Registries;
use crate::resource_metrics::SharedQueries;

const CONFIG: &str = r#"
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_depth{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"#;

async fn app() -> Router {
    let compiled = parse_str("test.yaml", CONFIG).unwrap().compile().unwrap();
    let mapper = crate::naming::tests::mapper();
    let mut regs = Registries::new(&compiled);
    let pod = Series::new(
        "http_requests_total",
        [("namespace", "ns1"), ("pod", "web-1")],
    );
    regs.custom
        .update(&mapper, [Ok::<_, String>(vec![pod])])
        .unwrap();
    regs.external
        .update([Ok::<_, String>(vec![Series::new(
            "queue_depth",
            [("namespace", "ns1")],
        )])])
        .unwrap();
    // Nothing below may be contacted: these answers are decided before any I/O.
    let client =
        kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
    let registries = Arc::new(RwLock::new(regs));
    let prometheus = PrometheusClient::from_url("http://127.0.0.1:1").unwrap();
    router(ApiState {
        external: Arc::new(ExternalMetrics::new(vec![Source::PrometheusRules(
            PrometheusRules {
                registries: registries.clone(),
                prometheus: prometheus.clone(),
            },
        )])),
        registries,
        resource_queries: SharedQueries::new(None),
        prometheus,
        objects: Arc::new(crate::objects::ObjectCaches::new(client.clone(), false)),
        lister: client,
        mapper: SharedMapper::fixed(mapper),
        secure_port: 443,
    })
}

async fn get(app: &Router, uri: &str) -> (u16, serde_json::Value) {
    let resp = app
        .clone()
        .oneshot(http::Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let body = to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    (code, serde_json::from_slice(&body).unwrap_or_default())
}

#[tokio::test]
async fn discovery_lists_what_the_registry_holds() {
    let app = app().await;
    let (code, v) = get(&app, "/apis").await;
    assert_eq!(code, 200);
    let groups: Vec<&str> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    // No resourceRules: metrics.k8s.io is not claimed.
    assert_eq!(groups, ["custom.metrics.k8s.io", "external.metrics.k8s.io"]);

    let (code, v) = get(&app, "/apis/custom.metrics.k8s.io/v1beta1").await;
    assert_eq!(code, 200);
    assert_eq!(v["groupVersion"], "custom.metrics.k8s.io/v1beta1");
    let names: Vec<&str> = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // The pod series names a pod and a namespace: both are resources of the metric.
    assert_eq!(names, ["namespaces/http_requests", "pods/http_requests"]);
    assert_eq!(v["resources"][1]["namespaced"], true);
    assert_eq!(v["resources"][0]["namespaced"], false);
    assert_eq!(v["resources"][1]["kind"], "MetricValueList");

    let (_, v) = get(&app, "/apis/external.metrics.k8s.io/v1beta1").await;
    assert_eq!(v["resources"][0]["name"], "queue_depth");
    assert_eq!(v["resources"][0]["kind"], "ExternalMetricValueList");

    let (code, v) = get(&app, "/apis/custom.metrics.k8s.io").await;
    assert_eq!(code, 200);
    assert_eq!(v["preferredVersion"]["version"], "v1beta2");

    assert_eq!(get(&app, "/apis/metrics.k8s.io/v1beta1").await.0, 404);
    assert_eq!(get(&app, "/apis/custom.metrics.k8s.io/v1").await.0, 404);
    assert_eq!(get(&app, "/openapi/v2").await.0, 200);
    let (_, v) = get(&app, "/openapi/v3").await;
    assert!(
        v["paths"]
            .get("apis/custom.metrics.k8s.io/v1beta2")
            .is_some()
    );
}

#[tokio::test]
async fn answers_decided_before_any_io() {
    let app = app().await;
    let (code, v) = get(
        &app,
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/%2A/nope",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        v["message"],
        "the server could not find the metric nope for pods"
    );
    // A resource the cluster does not have.
    let (code, v) = get(
        &app,
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/widgets/w/http_requests",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        v["message"],
        "the server could not find the metric http_requests for widgets"
    );
    // Pods are namespaced: the cluster-scoped form does not exist.
    let (code, _) = get(
        &app,
        "/apis/custom.metrics.k8s.io/v1beta1/pods/web-1/http_requests",
    )
    .await;
    assert_eq!(code, 404);
    let (code, v) = get(
        &app,
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns1/pods",
    )
    .await;
    assert_eq!(
        (code, v["message"].as_str()),
        (
            404,
            Some("the server could not find the requested resource")
        )
    );
    let (code, v) = get(
        &app,
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns1/pods/web-1/http_requests?metricLabelSelector=a%3E1",
    )
    .await;
    assert_eq!(code, 400, "{v}");
    let (code, v) = get(
        &app,
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/nope",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        v["message"],
        "the server could not find the metric nope for namespaces"
    );
}

#[tokio::test]
async fn prometheus_failure_is_an_internal_error_without_details() {
    let app = app().await;
    // Port 1 refuses: the query fails and the client sees upstream's generic message.
    let (code, v) = get(
        &app,
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns1/queue_depth",
    )
    .await;
    assert_eq!(code, 500);
    assert_eq!(
        v["message"],
        "Internal error occurred: unable to fetch metrics"
    );
    let (code, v) = get(
        &app,
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns1/pods/web-1/http_requests",
    )
    .await;
    assert_eq!(code, 500);
    assert_eq!(v["reason"], "InternalError");
}
