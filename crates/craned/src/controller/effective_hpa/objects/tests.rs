use serde_json::json;

use super::*;

fn ehpa(spec: Value) -> EffectiveHorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.crane.io/v1alpha1",
        "kind": "EffectiveHorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-1",
            "annotations": {"metric-query.autoscaling.crane.io/pods.http_requests": "sum(rate(http_requests_total{app=\"web\"}[5m]))"}},
        "spec": spec,
    }))
    .unwrap()
}

fn full() -> EffectiveHorizontalPodAutoscaler {
    ehpa(json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2, "maxReplicas": 10,
        "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
            {"type": "Pods", "pods": {"metric": {"name": "http_requests"}, "target": {"type": "AverageValue", "averageValue": "100"}}},
            {"type": "External", "external": {"metric": {"name": "queue_depth", "selector": {"matchLabels": {"queue": "jobs", "app": "web"}}},
                "target": {"type": "AverageValue", "averageValue": "30"}}}
        ],
        "crons": [{"name": "day", "start": "0 9 * * *", "end": "0 17 * * *", "targetReplicas": 5}],
        "prediction": {"predictionWindowSeconds": 3600, "predictionAlgorithm": {"algorithmType": "dsp"}},
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}
    }))
}

#[test]
fn the_hpa_carries_the_users_metrics_the_ready_predictions_and_one_cron_metric() {
    let e = full();
    let requests = |r: &str| {
        (r == "cpu").then_some(Requests {
            total_milli: 1500,
            pods: 3,
        })
    };
    let hpa = horizontal_pod_autoscaler(&e, &|id| id != "external.queue_depth", &requests);
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    assert_eq!(hpa["metadata"]["name"], "ehpa-web");
    assert_eq!(
        hpa["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "effective-hpa-controller"
    );
    assert_eq!(
        hpa["metadata"]["labels"]["autoscaling.crane.io/effective-hpa-uid"],
        "u-1"
    );
    assert_eq!(hpa["metadata"]["ownerReferences"][0]["controller"], true);
    let spec = &hpa["spec"];
    assert_eq!(spec["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(
        (spec["minReplicas"].as_i64(), spec["maxReplicas"].as_i64()),
        (Some(2), Some(10))
    );
    assert_eq!(
        spec["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    let metrics = spec["metrics"].as_array().unwrap();
    // 3 user metrics, cpu and http_requests predicted (the queue is not ready), one cron.
    assert_eq!(metrics.len(), 6, "{metrics:#?}");
    let cpu = &metrics[3]["external"];
    assert_eq!(cpu["metric"]["name"], "crane_autoscaling_prediction");
    assert_eq!(
        cpu["metric"]["selector"]["matchLabels"],
        json!({"targetKind": "Deployment", "targetName": "web", "targetNamespace": "shop", "resourceIdentifier": "resource.cpu"})
    );
    // 50% of the average request of 500m.
    assert_eq!(
        cpu["target"],
        json!({"type": "AverageValue", "averageValue": "250m"})
    );
    assert_eq!(metrics[4]["external"]["target"]["averageValue"], "100");
    let cron = &metrics[5]["external"];
    assert_eq!(cron["metric"]["name"], "crane_autoscaling_cron");
    assert_eq!(
        cron["metric"]["selector"]["matchLabels"]["resourceIdentifier"],
        "cron"
    );
    assert_eq!(cron["target"]["averageValue"], "1");
}

#[test]
fn without_requests_a_utilization_prediction_is_left_out_and_preview_scales_the_substitute() {
    let mut e = full();
    e.spec.scale_strategy = ScaleStrategy::Preview;
    let hpa = horizontal_pod_autoscaler(&e, &|_| true, &|_| None);
    let names: Vec<&str> = hpa["spec"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| {
            m["external"]["metric"]["selector"]["matchLabels"]["resourceIdentifier"].as_str()
        })
        .collect();
    assert_eq!(
        names,
        ["pods.http_requests", "external.queue_depth", "cron"]
    );
    assert_eq!(
        hpa["spec"]["scaleTargetRef"],
        json!({"apiVersion": "autoscaling.crane.io/v1alpha1", "kind": "Substitute", "name": "ehpa-web"})
    );
    let s = substitute(&e, 4);
    assert_eq!(s["spec"]["replicas"], 4);
    assert_eq!(s["spec"]["substituteTargetRef"]["name"], "web");
}

#[test]
fn the_prediction_uses_the_annotation_or_cranes_default_queries() {
    let e = full();
    let tsp = time_series_prediction(&e).unwrap();
    assert_eq!(tsp["metadata"]["name"], "ehpa-web");
    let l = &tsp["metadata"]["labels"];
    assert_eq!(
        (
            l["app.kubernetes.io/target-kind"].as_str(),
            l["app.kubernetes.io/target-name"].as_str(),
            l["app.kubernetes.io/target-namespace"].as_str()
        ),
        (Some("Deployment"), Some("web"), Some("shop"))
    );
    assert_eq!(tsp["spec"]["predictionWindowSeconds"], 3600);
    assert_eq!(
        tsp["spec"]["targetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "shop"})
    );
    let m = tsp["spec"]["predictionMetrics"].as_array().unwrap();
    let query = |i: usize| {
        m[i]["expressionQuery"]["expression"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(m[0]["resourceIdentifier"], "resource.cpu");
    assert!(query(0).starts_with(
        "sum(irate(container_cpu_usage_seconds_total{namespace=\"shop\",pod=~\"^web-"
    ));
    assert_eq!(query(1), "sum(rate(http_requests_total{app=\"web\"}[5m]))");
    assert_eq!(query(2), "sum(queue_depth{app=\"web\",queue=\"jobs\"})");
    assert_eq!(m[0]["algorithm"], json!({"algorithmType": "dsp"}));
    assert!(m.iter().all(|m| m["type"] == "ExpressionQuery"));
}

#[test]
fn no_prediction_without_a_window_and_an_algorithm() {
    let mut e = full();
    e.spec.prediction.as_mut().unwrap().prediction_algorithm = None;
    assert!(time_series_prediction(&e).is_none());
    let hpa = horizontal_pod_autoscaler(&e, &|_| true, &|_| None);
    assert_eq!(
        hpa["spec"]["metrics"].as_array().unwrap().len(),
        4,
        "user metrics and the cron"
    );
}
