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
            "metadata": {"name": "ehpa-web", "namespace": "shop", "uid": "tsp-uid", "labels": {
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
        // As the registry gathers them: families without series are left out.
        let mut present = families(&out);
        present.retain(|f| !f.get_metric().is_empty());
        prometheus::Encoder::encode(&prometheus::TextEncoder::new(), &present, &mut buf).unwrap();
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

#[test]
fn prediction_errors_go_with_their_tsp_and_metric() {
    use crate::prediction::accuracy::Score;
    let now = Timestamp::from_second(1_709_287_200).unwrap();
    let live = tsp(now.as_second());
    let uid = live.metadata.uid.clone().unwrap();
    let score = Score {
        error_ratio: 0.2,
        samples: 12,
        at: now.as_second(),
    };
    let key = |name: &str, id: &str| ("shop".to_owned(), name.to_owned(), id.to_owned());
    let scores = [
        (key("ehpa-web", "resource.cpu"), uid.clone(), score),
        (key("ehpa-web", "resource.memory"), uid, score),
        (
            key("ehpa-gone", "resource.cpu"),
            "another-uid".to_owned(),
            score,
        ),
    ];
    let out = prediction_errors(&[live], &scores);
    let ratios: Vec<(&[String], f64)> = out
        .iter()
        .filter(|e| e.family == "craned_prediction_error_ratio")
        .map(|e| (e.labels.as_slice(), e.value))
        .collect();
    assert_eq!(
        ratios,
        [(
            [
                "shop".to_owned(),
                "ehpa-web".to_owned(),
                "resource.cpu".to_owned()
            ]
            .as_slice(),
            0.2
        )],
        "a deleted TSP's and a dropped metric's scores are not exported"
    );
    assert!(
        out.iter()
            .any(|e| e.family == "craned_prediction_error_samples" && e.value == 12.0)
    );
}
