use serde_json::json;

use super::*;

fn ehpa() -> Arc<EffectiveHorizontalPodAutoscaler> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "autoscaling.crane.io/v1alpha1",
            "kind": "EffectiveHorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10,
                "crons": [{"name": "day", "start": "0 9 * * *", "end": "0 17 * * *", "targetReplicas": 6}]
            },
            "status": {"expectReplicas": 6}
        }))
        .unwrap(),
    )
}

fn tsp(now: i64) -> Arc<TimeSeriesPrediction> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "prediction.crane.io/v1alpha1",
            "kind": "TimeSeriesPrediction",
            "metadata": {"name": "ehpa-web", "namespace": "shop", "labels": {
                "app.kubernetes.io/managed-by": "effective-hpa-controller",
                "app.kubernetes.io/target-kind": "Deployment",
                "app.kubernetes.io/target-name": "web",
                "app.kubernetes.io/target-namespace": "shop"}},
            "spec": {"predictionWindowSeconds": 600, "predictionMetrics": [
                {"resourceIdentifier": "resource.cpu", "type": "ExpressionQuery",
                 "algorithm": {"algorithmType": "dsp"}}]},
            "status": {"predictionMetrics": [{"resourceIdentifier": "resource.cpu", "ready": true,
                "prediction": [{"samples": [
                    {"timestamp": now - 60, "value": "9.00000"},
                    {"timestamp": now + 60, "value": "0.42000"},
                    {"timestamp": now + 300, "value": "0.75000"},
                    {"timestamp": now + 900, "value": "5.00000"}]}]}]}
        }))
        .unwrap(),
    )
}

#[test]
fn every_family_from_the_objects() {
    let now = Timestamp::from_second(1_709_287_200).unwrap(); // 2024-03-01T10:00:00Z
    let hpa: Arc<HorizontalPodAutoscaler> = Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "ehpa-web", "namespace": "shop"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10},
            "status": {"desiredReplicas": 6, "currentReplicas": 2}
        }))
        .unwrap(),
    );
    let out = exported(
        &[ehpa()],
        &[tsp(now.as_second())],
        &[hpa],
        &DefaultZone::utc(),
        now,
    );
    let find = |family: &str| out.iter().find(|e| e.family == family).cloned().unwrap();
    assert_eq!(find("crane_autoscaling_cron").value, 6.0);
    assert_eq!(
        find("crane_autoscaling_cron").labels,
        ["Deployment", "web", "shop", "cron"]
    );
    let p = find("crane_autoscaling_prediction");
    assert_eq!((p.value, p.labels.last().unwrap().as_str()), (0.75, "dsp"));
    let t = find("crane_prediction_tsp");
    assert_eq!(
        (t.value, t.timestamp_ms),
        (0.42, Some((now.as_second() + 60) * 1000))
    );
    assert_eq!(find("crane_autoscaling_hpa_replicas").value, 6.0);
    assert_eq!(
        find("crane_autoscaling_effective_hpa_replicas").labels,
        ["shop", "web"]
    );

    let text = {
        let mut buf = Vec::new();
        prometheus::Encoder::encode(&prometheus::TextEncoder::new(), &families(&out), &mut buf)
            .unwrap();
        String::from_utf8(buf).unwrap()
    };
    assert!(text.contains("# HELP crane_autoscaling_cron external metrics value of cron for HorizontalPodAutoscaler\n"), "{text}");
    assert!(text.contains(&format!(
        "crane_prediction_tsp{{targetKind=\"Deployment\",targetName=\"web\",targetNamespace=\"shop\",resourceIdentifier=\"resource.cpu\",algorithm=\"dsp\"}} 0.42 {}\n",
        (now.as_second() + 60) * 1000
    )), "{text}");
}

#[test]
fn a_bad_cron_or_a_missing_prediction_skips_only_its_own_series() {
    let now = Timestamp::from_second(1_709_287_200).unwrap();
    let mut bad = (*ehpa()).clone();
    bad.spec.crons[0].start = "not a schedule".into();
    let mut other = (*ehpa()).clone();
    other.metadata.name = Some("db".into());
    other.spec.scale_target_ref.name = "db".into();
    let mut unready = (*tsp(now.as_second())).clone();
    unready.status.as_mut().unwrap().prediction_metrics[0].ready = false;
    let out = exported(
        &[Arc::new(bad), Arc::new(other)],
        &[Arc::new(unready)],
        &[],
        &DefaultZone::utc(),
        now,
    );
    let crons: Vec<&str> = out
        .iter()
        .filter(|e| e.family == "crane_autoscaling_cron")
        .map(|e| e.labels[1].as_str())
        .collect();
    assert_eq!(crons, ["db"]);
    assert!(
        !out.iter()
            .any(|e| e.family == "crane_autoscaling_prediction"
                || e.family == "crane_prediction_tsp")
    );
}
