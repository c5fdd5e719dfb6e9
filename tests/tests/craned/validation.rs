//! The autoscaling CRDs' own rules, enforced by the real API server (no webhook): `kubectl
//! apply` refuses each bad EHPA and TimeSeriesPrediction with a message that names the field,
//! on update as on creation, and still takes the objects Crane's docs show.

use std::io::Write;
use std::process::Stdio;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{Cluster, install_craned_crds};
use serde_json::{Value, json};

fn ehpa(patch: Value) -> Value {
    let mut object = json!({
        "apiVersion": "autoscaling.crane.io/v1alpha1",
        "kind": "EffectiveHorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 10, "scaleStrategy": "Auto",
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}],
            "prediction": {"predictionWindowSeconds": 3600,
                           "predictionAlgorithm": {"algorithmType": "dsp",
                                                   "dsp": {"sampleInterval": "60s", "historyLength": "3d"}}},
            "crons": [{"name": "busy", "timezone": "Asia/Shanghai", "description": "weekday mornings",
                       "start": "0 9 * * MON-FRI", "end": "0 12 * * MON-FRI", "targetReplicas": 4}]
        }
    });
    merge(&mut object["spec"], patch);
    object
}

fn tsp(patch: Value) -> Value {
    let mut object = json!({
        "apiVersion": "prediction.crane.io/v1alpha1",
        "kind": "TimeSeriesPrediction",
        "metadata": {"name": "web"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "predictionWindowSeconds": 3600,
            "predictionMetrics": [{"resourceIdentifier": "cpu", "type": "ExpressionQuery",
                "expressionQuery": {"expression": "sum(rate(container_cpu_usage_seconds_total[3m]))"},
                "algorithm": {"algorithmType": "percentile", "percentile": {"percentile": "0.95"}}}]
        }
    });
    merge(&mut object["spec"], patch);
    object
}

/// JSON merge patch (RFC 7386): `null` removes a field.
fn merge(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = json!({});
            }
            for (key, value) in fields {
                if value.is_null() {
                    target.as_object_mut().map(|t| t.remove(&key));
                } else {
                    merge(&mut target[&key], value);
                }
            }
        }
        other => *target = other,
    }
}

/// `kubectl apply` of one object: Ok(stdout) or Err(stderr).
fn apply(
    cluster: &Cluster,
    ns: &str,
    object: &Value,
    dry_run: bool,
) -> Result<Result<String, String>> {
    let mut kubectl = cluster.kubectl()?;
    kubectl.args(["apply", "-n", ns, "-f", "-"]);
    if dry_run {
        kubectl.arg("--dry-run=server");
    }
    let mut child = kubectl
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .context("kubectl's stdin")?
        .write_all(object.to_string().as_bytes())?;
    let out = child.wait_with_output()?;
    Ok(if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

fn refused(cluster: &Cluster, ns: &str, object: &Value, field: &str, says: &str) -> Result<()> {
    match apply(cluster, ns, object, true)? {
        Ok(out) => anyhow::bail!("accepted ({out}):\n{object:#}"),
        Err(err) => {
            ensure!(
                err.contains(field) && err.contains(says),
                "the refusal should name {field:?} and say {says:?}:\n{err}"
            );
            Ok(())
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_apply_refuses_bad_autoscaling_objects_naming_the_field() -> Result<()> {
    let cluster = Cluster::get()?;
    let client = cluster.client().await?;
    install_craned_crds(cluster, &client).await?;
    let ns = cluster.namespace("craned-validation").await?;
    let n = ns.name.as_str();

    // What Crane's docs show is taken.
    for good in [
        ehpa(json!({})),
        ehpa(
            json!({"crons": [{"name": "tz", "start": "CRON_TZ=Europe/Paris 0 9 * * *", "end": "@midnight", "targetReplicas": 2}]}),
        ),
        tsp(json!({})),
    ] {
        if let Err(err) = apply(cluster, n, &good, true)? {
            anyhow::bail!("refused {good:#}:\n{err}");
        }
    }

    let cron = |name: &str, start: &str, end: &str| json!({"name": name, "start": start, "end": end, "targetReplicas": 3});
    let ehpa_cases = [
        (
            json!({"minReplicas": 5, "maxReplicas": 3}),
            "spec.minReplicas",
            "minReplicas must not be above maxReplicas",
        ),
        (
            json!({"maxReplicas": null}),
            "spec.maxReplicas",
            "Required value",
        ),
        (
            json!({"scaleStrategy": "Sometimes"}),
            "spec.scaleStrategy",
            "Unsupported value",
        ),
        (
            json!({"crons": [cron("a", "0 9 * * *", "0 10 * * *"), cron("a", "0 11 * * *", "0 12 * * *")]}),
            "spec.crons",
            "each cron's name must be unique",
        ),
        (
            json!({"crons": [{"name": "a", "start": "0 9 * * *", "targetReplicas": 3}]}),
            "spec.crons[0]",
            "a cron needs a start and an end",
        ),
        (
            json!({"crons": [cron("a", "0 9 * * *", "0 9 * * *")]}),
            "spec.crons[0]",
            "start and end must differ",
        ),
        (
            json!({"crons": [cron("a", "0 0 9 * * *", "0 10 * * *")]}),
            "spec.crons[0].start",
            "must be a cron schedule",
        ),
        (
            json!({"crons": [cron("a", "0 9 * * *", "0 10 * *")]}),
            "spec.crons[0].end",
            "must be a cron schedule",
        ),
        (
            json!({"prediction": {"predictionWindowSeconds": 300}}),
            "spec.prediction.predictionWindowSeconds",
            "at least 600",
        ),
    ];
    for (patch, field, says) in ehpa_cases {
        refused(cluster, n, &ehpa(patch), field, says)?;
    }

    let metric = |id: &str| json!({"resourceIdentifier": id, "type": "ExpressionQuery", "expressionQuery": {"expression": "up"}});
    let tsp_cases = [
        (
            json!({"targetRef": {"name": null}}),
            "spec.targetRef.name",
            "targetRef.name is required",
        ),
        (
            json!({"predictionWindowSeconds": 599}),
            "spec.predictionWindowSeconds",
            "at least 600",
        ),
        (
            json!({"predictionWindowSeconds": null}),
            "spec.predictionWindowSeconds",
            "at least 600",
        ),
        (
            json!({"predictionMetrics": null}),
            "spec.predictionMetrics",
            "at least one metric",
        ),
        (
            json!({"predictionMetrics": [metric("cpu"), metric("cpu")]}),
            "spec.predictionMetrics",
            "each resourceIdentifier must be unique",
        ),
        (
            json!({"predictionMetrics": [{"resourceIdentifier": "cpu", "type": "ExpressionQuery"}]}),
            "spec.predictionMetrics[0]",
            "no expressionQuery is given",
        ),
        (
            json!({"predictionMetrics": [{"resourceIdentifier": "cpu", "type": "ResourceQuery"}]}),
            "spec.predictionMetrics[0]",
            "no resourceQuery is given",
        ),
        (
            json!({"predictionMetrics": [{"resourceIdentifier": "cpu", "type": "MetricQuery"}]}),
            "spec.predictionMetrics[0]",
            "no metricQuery is given",
        ),
    ];
    for (patch, field, says) in tsp_cases {
        refused(cluster, n, &tsp(patch), field, says)?;
    }

    // On update too (Crane's webhook checks a TimeSeriesPrediction only when it is created).
    if let Err(err) = apply(cluster, n, &tsp(json!({})), false)? {
        anyhow::bail!("creating the TimeSeriesPrediction:\n{err}");
    }
    refused(
        cluster,
        n,
        &tsp(json!({"predictionWindowSeconds": 60})),
        "spec.predictionWindowSeconds",
        "at least 600",
    )?;
    Ok(())
}
