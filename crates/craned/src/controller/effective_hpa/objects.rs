//! What an EHPA owns, built from it (pure): the HPA `ehpa-<name>` (written as
//! `autoscaling/v2`, a deliberate fix: Crane's `v2beta2` is not served from Kubernetes 1.26
//! on), its TimeSeriesPrediction, and in Preview its Substitute; each labelled as Crane labels
//! them and owned by the EHPA, so deleting the EHPA deletes them.

use std::collections::BTreeMap;

use ferrocrane_autoscaling::external::{
    CRON_IDENTIFIER, CRON_METRIC, METRIC_QUERY_ANNOTATION_PREFIX, PREDICTION_METRIC, labels,
    metric_identifier, owned_name, selector,
};
use ferrocrane_core::quantity::{Quantity, QuantityFormat, format_milli};
use k8s_openapi::api::autoscaling::v2::MetricSpec;
use kube::ResourceExt;
use serde_json::{Value, json};

use crate::controller::time_series_prediction::query::{workload_cpu, workload_memory};
use crate::crd::autoscaling::{EffectiveHorizontalPodAutoscaler, ScaleStrategy};

/// The replicas an HPA reads from the cron metric: one per unit (Crane's value).
const CRON_TARGET: &str = "1";

/// The labels of everything the EHPA owns (Crane's, so selectors written for Crane work).
pub fn owned_labels(ehpa: &EffectiveHorizontalPodAutoscaler) -> BTreeMap<String, String> {
    let name = ehpa.name_any();
    [
        (labels::NAME, owned_name(&name)),
        (labels::PART_OF, name),
        (labels::MANAGED_BY, labels::EHPA_CONTROLLER.to_owned()),
        (labels::EHPA_UID, ehpa.uid().unwrap_or_default()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The EHPA as the controlling owner of what it creates.
pub fn owner_reference(ehpa: &EffectiveHorizontalPodAutoscaler) -> Value {
    json!([{
        "apiVersion": "autoscaling.crane.io/v1alpha1",
        "kind": "EffectiveHorizontalPodAutoscaler",
        "name": ehpa.name_any(),
        "uid": ehpa.uid().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

/// Whether prediction is on: a window and an algorithm (Crane's rule).
pub fn predicts(ehpa: &EffectiveHorizontalPodAutoscaler) -> bool {
    ehpa.spec
        .prediction
        .as_ref()
        .is_some_and(|p| p.prediction_window_seconds.is_some() && p.prediction_algorithm.is_some())
}

/// The metrics to predict: every Resource, Pods and External metric, with its identifier.
pub fn predicted_metrics(ehpa: &EffectiveHorizontalPodAutoscaler) -> Vec<(String, &MetricSpec)> {
    ehpa.spec
        .metrics
        .iter()
        .filter_map(|m| Some((metric_identifier(m)?, m)))
        .collect()
}

/// The PromQL of a predicted metric: the EHPA's `metric-query.autoscaling.crane.io/<id>`
/// annotation, else Crane's default (the workload's CPU or memory, or the Pods or External
/// metric summed over its selector's labels).
pub fn prediction_query(
    ehpa: &EffectiveHorizontalPodAutoscaler,
    identifier: &str,
    spec: &MetricSpec,
) -> Option<String> {
    let annotation = format!("{METRIC_QUERY_ANNOTATION_PREFIX}/{identifier}");
    if let Some(q) = ehpa.annotations().get(&annotation) {
        return Some(q.clone());
    }
    let ns = ehpa.namespace().unwrap_or_default();
    let target = &ehpa.spec.scale_target_ref;
    let summed =
        |name: &str,
         selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>| {
            let matchers: Vec<String> = selector
                .and_then(|s| s.match_labels.clone())
                .unwrap_or_default()
                .into_iter()
                .collect::<BTreeMap<_, _>>()
                .iter()
                .map(|(k, v)| ferrocrane_core::promql::label_eq(k, v))
                .collect();
            format!("sum({name}{{{}}})", matchers.join(","))
        };
    match spec.type_.as_str() {
        "Resource" => match spec.resource.as_ref()?.name.as_str() {
            "cpu" => Some(workload_cpu(&ns, &target.kind, &target.name)),
            "memory" => Some(workload_memory(&ns, &target.kind, &target.name)),
            _ => None,
        },
        "Pods" => spec
            .pods
            .as_ref()
            .map(|p| summed(&p.metric.name, p.metric.selector.as_ref())),
        "External" => spec
            .external
            .as_ref()
            .map(|e| summed(&e.metric.name, e.metric.selector.as_ref())),
        _ => None,
    }
}

/// The TimeSeriesPrediction `ehpa-<name>` of the EHPA's predicted metrics; `None` when
/// prediction is off or nothing is predicted.
pub fn time_series_prediction(ehpa: &EffectiveHorizontalPodAutoscaler) -> Option<Value> {
    if !predicts(ehpa) {
        return None;
    }
    let prediction = ehpa.spec.prediction.as_ref()?;
    let algorithm = prediction.prediction_algorithm.as_ref()?;
    let metrics: Vec<Value> = predicted_metrics(ehpa)
        .into_iter()
        .filter_map(|(id, spec)| {
            let query = prediction_query(ehpa, &id, spec)?;
            Some(json!({
                "resourceIdentifier": id,
                "type": "ExpressionQuery",
                "expressionQuery": {"expression": query},
                "algorithm": {
                    "algorithmType": algorithm.algorithm_type,
                    "dsp": algorithm.dsp,
                    "percentile": algorithm.percentile,
                },
            }))
        })
        .collect();
    if metrics.is_empty() {
        return None;
    }
    let ns = ehpa.namespace().unwrap_or_default();
    let target = &ehpa.spec.scale_target_ref;
    let mut labels = owned_labels(ehpa);
    labels.extend([
        (labels::TARGET_KIND.to_owned(), target.kind.clone()),
        (labels::TARGET_NAMESPACE.to_owned(), ns.clone()),
        (labels::TARGET_NAME.to_owned(), target.name.clone()),
    ]);
    Some(strip_nulls(json!({
        "apiVersion": "prediction.crane.io/v1alpha1",
        "kind": "TimeSeriesPrediction",
        "metadata": {
            "name": owned_name(&ehpa.name_any()),
            "namespace": ns,
            "labels": labels,
            "ownerReferences": owner_reference(ehpa),
        },
        "spec": {
            "predictionWindowSeconds": prediction.prediction_window_seconds,
            "targetRef": {
                "apiVersion": target.api_version,
                "kind": target.kind,
                "name": target.name,
                "namespace": ns,
            },
            "predictionMetrics": metrics,
        }
    })))
}

/// The per-pod target of a predicted Resource metric with a utilization target: that share of
/// the available pods' average request (Crane's conversion), in milli-units.
pub struct Requests {
    /// The summed requests of the available pods, milli-units (millicores, millibytes).
    pub total_milli: i64,
    pub pods: i64,
}

/// The HPA target of the prediction of `spec`: its own average value, or for a Resource
/// utilization target the equivalent average value from `requests`.
fn prediction_target(spec: &MetricSpec, requests: Option<&Requests>) -> Option<String> {
    let target = match spec.type_.as_str() {
        "Resource" => &spec.resource.as_ref()?.target,
        "Pods" => &spec.pods.as_ref()?.target,
        "External" => &spec.external.as_ref()?.target,
        _ => return None,
    };
    if let Some(value) = &target.average_value {
        return Some(value.0.clone());
    }
    let utilization = i64::from(target.average_utilization?);
    let r = requests.filter(|r| r.pods > 0)?;
    let milli = r.total_milli.checked_mul(utilization)? / 100 / r.pods;
    Some(format_milli(milli, QuantityFormat::DecimalSi))
}

/// The HPA `ehpa-<name>`: the user's metrics, the prediction of each predicted metric whose
/// prediction is ready (`ready(id)`), and one cron metric when there are crons; it scales the
/// workload, or in Preview the Substitute.
pub fn horizontal_pod_autoscaler(
    ehpa: &EffectiveHorizontalPodAutoscaler,
    ready: &dyn Fn(&str) -> bool,
    requests: &dyn Fn(&str) -> Option<Requests>,
) -> Value {
    let ns = ehpa.namespace().unwrap_or_default();
    let name = owned_name(&ehpa.name_any());
    let target = &ehpa.spec.scale_target_ref;
    let mut metrics: Vec<Value> = ehpa
        .spec
        .metrics
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect();
    if predicts(ehpa) {
        for (id, spec) in predicted_metrics(ehpa) {
            if !ready(&id) {
                continue;
            }
            let resource = spec
                .resource
                .as_ref()
                .map(|r| r.name.clone())
                .unwrap_or_default();
            let Some(value) = prediction_target(spec, requests(&resource).as_ref()) else {
                continue;
            };
            metrics.push(external_metric(
                PREDICTION_METRIC,
                selector(&target.kind, &target.name, &ns, &id),
                &value,
            ));
        }
    }
    if !ehpa.spec.crons.is_empty() {
        metrics.push(external_metric(
            CRON_METRIC,
            selector(&target.kind, &target.name, &ns, CRON_IDENTIFIER),
            CRON_TARGET,
        ));
    }
    let scale_target = match ehpa.spec.scale_strategy {
        ScaleStrategy::Auto => json!(target),
        ScaleStrategy::Preview => json!({
            "apiVersion": "autoscaling.crane.io/v1alpha1",
            "kind": "Substitute",
            "name": name,
        }),
    };
    strip_nulls(json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": owned_labels(ehpa),
            "ownerReferences": owner_reference(ehpa),
        },
        "spec": {
            "scaleTargetRef": scale_target,
            "minReplicas": ehpa.spec.min_replicas,
            "maxReplicas": ehpa.spec.max_replicas,
            "metrics": metrics,
            "behavior": ehpa.spec.behavior,
        }
    }))
}

fn external_metric(name: &str, labels: BTreeMap<String, String>, average_value: &str) -> Value {
    json!({
        "type": "External",
        "external": {
            "metric": {"name": name, "selector": {"matchLabels": labels}},
            "target": {"type": "AverageValue", "averageValue": average_value},
        }
    })
}

/// The Substitute `ehpa-<name>` standing in for the workload, starting at `replicas`.
pub fn substitute(ehpa: &EffectiveHorizontalPodAutoscaler, replicas: i32) -> Value {
    json!({
        "apiVersion": "autoscaling.crane.io/v1alpha1",
        "kind": "Substitute",
        "metadata": {
            "name": owned_name(&ehpa.name_any()),
            "namespace": ehpa.namespace().unwrap_or_default(),
            "labels": owned_labels(ehpa),
            "ownerReferences": owner_reference(ehpa),
        },
        "spec": {
            "replicas": replicas,
            "substituteTargetRef": ehpa.spec.scale_target_ref,
        }
    })
}

/// `null` fields dropped, so an apply does not claim fields it does not set.
fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// A quantity's milli-value, `None` for one that does not parse.
pub fn milli(q: &str) -> Option<i64> {
    Quantity::parse(q).ok().map(|q| q.milli_value())
}

#[cfg(test)]
mod tests;
