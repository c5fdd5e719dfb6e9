use super::*;
use serde_json::{Value, json};

fn hpa(metrics: Value, current: Value, replicas: i32) -> HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "metadata": {"name": "ehpa-web"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                 "minReplicas": 2, "maxReplicas": 10, "metrics": metrics},
        "status": {"currentReplicas": replicas, "desiredReplicas": replicas, "currentMetrics": current}
    }))
    .unwrap()
}

fn cpu(target: i32) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}})
}

fn cpu_now(utilization: i32) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": utilization, "averageValue": "100m"}}})
}

fn external(name: &str, identifier: &str) -> Value {
    json!({"type": "External", "external": {
        "metric": {"name": name, "selector": {"matchLabels": {"resourceIdentifier": identifier}}},
        "target": {"type": "AverageValue", "averageValue": if name == CRON_METRIC { "1" } else { "250m" }}}})
}

fn external_now(name: &str, average: &str) -> Value {
    json!({"type": "External", "external": {"metric": {"name": name}, "current": {"averageValue": average}}})
}

fn cron(name: &str, start: &str, end: &str, target: i32) -> CronSpec {
    CronSpec {
        name: name.into(),
        start: start.into(),
        end: end.into(),
        target_replicas: target,
        timezone: Some("UTC".into()),
        ..CronSpec::default()
    }
}

fn source(hpa: &HorizontalPodAutoscaler, crons: &[CronSpec]) -> Option<(String, String, i32)> {
    let noon = "2024-03-01T12:00:00Z".parse().unwrap();
    replicas_source(hpa, crons, &DefaultZone::utc(), noon).map(|s| (s.type_, s.name, s.replicas))
}

#[test]
fn the_open_cron_with_the_largest_target_is_named() {
    let crons = [
        cron("morning", "0 11 * * *", "0 13 * * *", 4),
        cron("lunch", "30 11 * * *", "30 12 * * *", 6),
        cron("night", "0 22 * * *", "0 2 * * *", 9),
    ];
    // Two pods, the cron metric at 6 in all: 3 per pod against a target of 1.
    let h = hpa(
        json!([cpu(50), external(CRON_METRIC, "cron")]),
        json!([cpu_now(40), external_now(CRON_METRIC, "3")]),
        2,
    );
    assert_eq!(source(&h, &crons), Some(("Cron".into(), "lunch".into(), 6)));
}

#[test]
fn the_metric_asking_for_the_most_is_the_source() {
    // cpu: 2 pods at 150% of a 50% target → 6; prediction 1.25 per pod over 250m → 10.
    let h = hpa(
        json!([
            cpu(50),
            external(PREDICTION_METRIC, "resource.cpu"),
            external(CRON_METRIC, "cron")
        ]),
        json!([
            cpu_now(150),
            external_now(PREDICTION_METRIC, "1250m"),
            external_now(CRON_METRIC, "1")
        ]),
        2,
    );
    assert_eq!(
        source(&h, &[]),
        Some(("Prediction".into(), "resource.cpu".into(), 10))
    );
    let h = hpa(
        json!([cpu(50), external(PREDICTION_METRIC, "resource.cpu")]),
        json!([cpu_now(150), external_now(PREDICTION_METRIC, "200m")]),
        2,
    );
    assert_eq!(
        source(&h, &[]),
        Some(("Metric".into(), "Resource cpu".into(), 6))
    );
}

#[test]
fn nothing_above_min_replicas_says_so_and_no_evaluation_says_nothing() {
    let h = hpa(json!([cpu(50)]), json!([cpu_now(20)]), 2);
    assert_eq!(
        source(&h, &[]),
        Some(("MinReplicas".into(), String::new(), 2))
    );
    let fresh = hpa(json!([cpu(50)]), json!([]), 2);
    assert_eq!(source(&fresh, &[]), None);
    let scaled_to_zero = hpa(json!([cpu(50)]), json!([cpu_now(20)]), 0);
    assert_eq!(source(&scaled_to_zero, &[]), None);
}

#[test]
fn a_tie_goes_to_the_first_and_a_failing_metric_is_skipped() {
    // cpu asks 4 (2 × 100/50), the cron asks 4; a Pods metric the HPA could not read has an
    // empty status.
    let pods = json!({"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}});
    let h = hpa(
        json!([cpu(50), pods, external(CRON_METRIC, "cron")]),
        json!([cpu_now(100), {"type": ""}, external_now(CRON_METRIC, "2")]),
        2,
    );
    assert_eq!(
        source(&h, &[cron("a", "0 11 * * *", "0 13 * * *", 4)]),
        Some(("Metric".into(), "Resource cpu".into(), 4))
    );
}
