//! The contract between an EHPA's HPA and whoever serves its external metrics (metrics-adapter
//! from Crane's objects, or any Prometheus adapter from craned's exports): the metric names,
//! the selector labels that name the workload, and the values served.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::MetricSpec;

use crate::crd::prediction::{PredictionMetricStatus, TimeSeriesPredictionStatus};

/// The replicas an EHPA's crons ask for (the HPA's target: an average value of 1).
pub const CRON_METRIC: &str = "crane_autoscaling_cron";
/// The largest predicted value of a metric over the prediction window.
pub const PREDICTION_METRIC: &str = "crane_autoscaling_prediction";

/// Selector labels of both metrics.
pub const TARGET_KIND: &str = "targetKind";
pub const TARGET_NAME: &str = "targetName";
pub const TARGET_NAMESPACE: &str = "targetNamespace";
pub const RESOURCE_IDENTIFIER: &str = "resourceIdentifier";
/// `resourceIdentifier` of the cron metric.
pub const CRON_IDENTIFIER: &str = "cron";

/// Labels of the objects an EHPA owns (its HPA, TimeSeriesPrediction and Substitute).
pub mod labels {
    pub const NAME: &str = "app.kubernetes.io/name";
    pub const PART_OF: &str = "app.kubernetes.io/part-of";
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// The value of [`MANAGED_BY`].
    pub const EHPA_CONTROLLER: &str = "effective-hpa-controller";
    pub const TARGET_KIND: &str = "app.kubernetes.io/target-kind";
    pub const TARGET_NAMESPACE: &str = "app.kubernetes.io/target-namespace";
    pub const TARGET_NAME: &str = "app.kubernetes.io/target-name";
    pub const EHPA_UID: &str = "autoscaling.crane.io/effective-hpa-uid";
}

/// Annotations of an EHPA that give a predicted metric's query:
/// `metric-query.autoscaling.crane.io/<identifier>`.
pub const METRIC_QUERY_ANNOTATION_PREFIX: &str = "metric-query.autoscaling.crane.io";

/// The name of everything an EHPA owns: `ehpa-<name>`.
pub fn owned_name(ehpa: &str) -> String {
    format!("ehpa-{ehpa}")
}

/// A metric's identifier in the TSP and the prediction selector: `resource.cpu`,
/// `pods.<name>`, `external.<name>`; other kinds are not predicted.
pub fn metric_identifier(spec: &MetricSpec) -> Option<String> {
    match spec.type_.as_str() {
        "Resource" => spec
            .resource
            .as_ref()
            .map(|r| format!("resource.{}", r.name)),
        "Pods" => spec
            .pods
            .as_ref()
            .map(|p| format!("pods.{}", p.metric.name)),
        "External" => spec
            .external
            .as_ref()
            .map(|e| format!("external.{}", e.metric.name)),
        _ => None,
    }
}

/// The selector labels naming a workload (and the metric of it).
pub fn selector(
    kind: &str,
    name: &str,
    namespace: &str,
    identifier: &str,
) -> BTreeMap<String, String> {
    [
        (TARGET_KIND, kind),
        (TARGET_NAME, name),
        (TARGET_NAMESPACE, namespace),
        (RESOURCE_IDENTIFIER, identifier),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Why a prediction cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PredictionError {
    #[error("the TimeSeriesPrediction has no prediction of {0:?}")]
    Missing(String),
    #[error("the prediction of {0:?} is not ready")]
    NotReady(String),
    #[error("the prediction of {0:?} has {1} series; one is needed to scale on")]
    Series(String, usize),
    #[error("the prediction of {0:?} has no sample in the next window")]
    Outdated(String),
}

/// The metric `identifier`'s ready prediction: exactly one series (Crane's rule: a query
/// `by (pod)` gives several, and which to scale on is not said).
pub fn ready_prediction<'a>(
    status: &'a TimeSeriesPredictionStatus,
    identifier: &str,
) -> Result<&'a PredictionMetricStatus, PredictionError> {
    let m = status
        .prediction_metrics
        .iter()
        .find(|m| m.resource_identifier == identifier)
        .ok_or_else(|| PredictionError::Missing(identifier.to_owned()))?;
    if !m.ready {
        return Err(PredictionError::NotReady(identifier.to_owned()));
    }
    if m.prediction.len() != 1 {
        return Err(PredictionError::Series(
            identifier.to_owned(),
            m.prediction.len(),
        ));
    }
    Ok(m)
}

/// The largest predicted value of `identifier` within `[now, now + window]`. Values below 0
/// count as none (Crane: "outdated"). Full precision: Crane truncates to an integer, so a
/// workload under one core predicts 0 cores.
pub fn predicted_max(
    status: &TimeSeriesPredictionStatus,
    identifier: &str,
    window_secs: i64,
    now: Timestamp,
) -> Result<f64, PredictionError> {
    let m = ready_prediction(status, identifier)?;
    let (from, to) = (now.as_second(), now.as_second().saturating_add(window_secs));
    m.prediction[0]
        .samples
        .iter()
        .filter(|s| (from..=to).contains(&s.timestamp))
        .filter_map(|s| s.value.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .reduce(f64::max)
        .ok_or_else(|| PredictionError::Outdated(identifier.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::prediction::{MetricTimeSeries, Sample};

    fn status(ready: bool, series: usize, samples: &[(i64, &str)]) -> TimeSeriesPredictionStatus {
        let one = MetricTimeSeries {
            labels: vec![],
            samples: samples
                .iter()
                .map(|(t, v)| Sample {
                    timestamp: *t,
                    value: (*v).into(),
                })
                .collect(),
        };
        TimeSeriesPredictionStatus {
            prediction_metrics: vec![PredictionMetricStatus {
                resource_identifier: "resource.cpu".into(),
                prediction: vec![one; series],
                ready,
            }],
            conditions: vec![],
        }
    }

    #[test]
    fn the_largest_value_in_the_window_with_its_fraction() {
        let s = status(
            true,
            1,
            &[
                (900, "9.0"),
                (1000, "0.25000"),
                (1300, "0.73000"),
                (1700, "5.0"),
            ],
        );
        let now = Timestamp::from_second(1000).unwrap();
        assert_eq!(predicted_max(&s, "resource.cpu", 600, now).unwrap(), 0.73);
    }

    #[test]
    fn what_cannot_be_served_says_why() {
        let now = Timestamp::from_second(1000).unwrap();
        let err = |s: &TimeSeriesPredictionStatus, id: &str| {
            predicted_max(s, id, 600, now).unwrap_err().to_string()
        };
        let ok = status(true, 1, &[(1000, "1.0")]);
        assert_eq!(
            err(&ok, "pods.qps"),
            "the TimeSeriesPrediction has no prediction of \"pods.qps\""
        );
        assert_eq!(
            err(&status(false, 1, &[]), "resource.cpu"),
            "the prediction of \"resource.cpu\" is not ready"
        );
        assert_eq!(
            err(&status(true, 2, &[(1000, "1.0")]), "resource.cpu"),
            "the prediction of \"resource.cpu\" has 2 series; one is needed to scale on"
        );
        assert_eq!(
            err(
                &status(true, 1, &[(100, "1.0"), (1200, "0.00000")]),
                "resource.cpu"
            ),
            "the prediction of \"resource.cpu\" has no sample in the next window"
        );
    }

    #[test]
    fn identifiers_and_names_are_cranes() {
        let spec: MetricSpec = serde_json::from_value(serde_json::json!({
            "type": "Pods", "pods": {"metric": {"name": "http_requests"},
            "target": {"type": "AverageValue", "averageValue": "10"}}}))
        .unwrap();
        assert_eq!(
            metric_identifier(&spec).as_deref(),
            Some("pods.http_requests")
        );
        let spec: MetricSpec = serde_json::from_value(serde_json::json!({
            "type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}))
        .unwrap();
        assert_eq!(metric_identifier(&spec).as_deref(), Some("resource.cpu"));
        assert_eq!(owned_name("web"), "ehpa-web");
    }
}
