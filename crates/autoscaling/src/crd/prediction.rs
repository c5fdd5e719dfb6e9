//! `prediction.crane.io/v1alpha1` `TimeSeriesPrediction`, wire-compatible with gocrane/api
//! v0.11 `prediction/v1alpha1/types.go`: the same kind, short name, printer columns, field
//! names and omitempty behaviour, status as a subresource. Every algorithm knob is a string,
//! as in Crane ("CRDs do not take floats").

// kube-derive's repeated `printcolumn(type_ = ...)` reads to clippy as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{is_false, is_zero};

/// API group of TimeSeriesPrediction.
pub const GROUP: &str = "prediction.crane.io";

/// The condition reasons of a TimeSeriesPrediction's `Ready` (Crane's `pkg/known`).
pub mod reasons {
    /// Every metric has a ready prediction covering the window.
    pub const PREDICT_SUCCEED: &str = "PredictSucceed";
    /// At least one metric has none yet (a model still learning, a query failing).
    pub const PREDICT_PARTIAL: &str = "PredictPartial";
}

/// The prediction of a workload's (or any object's) metrics over the next window.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "prediction.crane.io",
    version = "v1alpha1",
    kind = "TimeSeriesPrediction",
    namespaced,
    shortname = "tsp",
    status = "TimeSeriesPredictionStatus",
    doc = "TimeSeriesPrediction predicts the time series of some metrics of one object.",
    printcolumn(
        name = "TargetRefName",
        type_ = "string",
        json_path = ".spec.targetRef.name",
        description = "The name of the object the prediction is about."
    ),
    printcolumn(
        name = "TargetRefKind",
        type_ = "string",
        json_path = ".spec.targetRef.kind",
        description = "The kind of the object the prediction is about."
    ),
    printcolumn(
        name = "PredictionWindowSeconds",
        type_ = "integer",
        json_path = ".spec.predictionWindowSeconds",
        description = "How far ahead, in seconds, the prediction reaches."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "When the object was created."
    )
)]
#[serde(rename_all = "camelCase")]
// Crane's webhook rules, checked by the API server itself (no webhook to run), on update too
// (Crane's webhook checks only creation).
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.targetRef.name) && self.targetRef.name != ''",
     "fieldPath": ".targetRef.name",
     "message": "targetRef.name is required"},
    {"rule": "has(self.predictionWindowSeconds) && self.predictionWindowSeconds >= 600",
     "fieldPath": ".predictionWindowSeconds",
     "message": "predictionWindowSeconds must be at least 600"},
    {"rule": "has(self.predictionMetrics) && size(self.predictionMetrics) > 0",
     "fieldPath": ".predictionMetrics",
     "message": "predictionMetrics needs at least one metric"},
    {"rule": "!has(self.predictionMetrics) || self.predictionMetrics.all(m, !has(m.resourceIdentifier) || self.predictionMetrics.exists_one(n, has(n.resourceIdentifier) && n.resourceIdentifier == m.resourceIdentifier))",
     "fieldPath": ".predictionMetrics",
     "message": "each resourceIdentifier must be unique"}
]))]
pub struct TimeSeriesPredictionSpec {
    /// The metrics to predict, each with its query and algorithm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub prediction_metrics: Vec<PredictionMetric>,
    /// The object every metric is about.
    #[serde(default)]
    pub target_ref: ObjectReference,
    /// How far ahead to predict, in seconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prediction_window_seconds: i32,
}

/// One metric to predict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.type) || self.type != 'ResourceQuery' || has(self.resourceQuery)",
     "message": "type is ResourceQuery, but no resourceQuery is given"},
    {"rule": "!has(self.type) || self.type != 'MetricQuery' || has(self.metricQuery)",
     "message": "type is MetricQuery, but no metricQuery is given"},
    {"rule": "!has(self.type) || self.type != 'ExpressionQuery' || has(self.expressionQuery)",
     "message": "type is ExpressionQuery, but no expressionQuery is given"}
]))]
pub struct PredictionMetric {
    /// Names the metric within the prediction (`resource.cpu`, `pods.http_requests`...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub resource_identifier: String,
    /// `ResourceQuery`, `MetricQuery` or `ExpressionQuery`: which query field applies.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// `cpu` or `memory` of the target's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_query: Option<String>,
    /// A metric name with label conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_query: Option<MetricQuery>,
    /// A PromQL expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression_query: Option<ExpressionQuery>,
    /// The algorithm that predicts it.
    #[serde(default)]
    pub algorithm: Algorithm,
}

/// The query types of a [`PredictionMetric`].
pub mod metric_types {
    pub const RESOURCE_QUERY: &str = "ResourceQuery";
    pub const METRIC_QUERY: &str = "MetricQuery";
    pub const EXPRESSION_QUERY: &str = "ExpressionQuery";
}

/// A metric selected by name and label conditions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricQuery {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub metric_name: String,
    /// Label conditions (Crane's JSON name is `labels`).
    #[serde(default, rename = "labels", skip_serializing_if = "Vec::is_empty")]
    pub query_conditions: Vec<QueryCondition>,
}

/// `key operator value...`: operators `=`, `!=`, `=~`, `!~` and `in`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryCondition {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value: Vec<String>,
}

/// A PromQL expression.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpressionQuery {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expression: String,
}

/// Which algorithm predicts a metric, and its knobs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Algorithm {
    /// `dsp` or `percentile`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub algorithm_type: String,
    #[serde(default, rename = "dsp", skip_serializing_if = "Option::is_none")]
    pub dsp: Option<Dsp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<Percentile>,
}

/// The algorithm types.
pub mod algorithm_types {
    pub const DSP: &str = "dsp";
    pub const PERCENTILE: &str = "percentile";
}

/// The periodic-signal (FFT) predictor's knobs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dsp {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sample_interval: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub history_length: String,
    #[serde(default)]
    pub estimators: Estimators,
}

/// The DSP estimators it chooses the best of.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Estimators {
    #[serde(default, rename = "maxValue", skip_serializing_if = "Vec::is_empty")]
    pub max_value: Vec<MaxValueEstimator>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fft: Vec<FftEstimator>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaxValueEstimator {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub margin_fraction: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FftEstimator {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub margin_fraction: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub low_amplitude_threshold: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub high_frequency_threshold: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_num_of_spectrum_items: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_of_spectrum_items: Option<i32>,
}

/// The percentile predictor's knobs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Percentile {
    #[serde(default, skip_serializing_if = "is_false")]
    pub aggregated: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub history_length: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sample_interval: String,
    #[serde(default)]
    pub histogram: HistogramConfig,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub min_sample_weight: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub margin_fraction: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub percentile: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_utilization: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistogramConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub max_value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub epsilon: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub half_life: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bucket_size: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub first_bucket_size: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bucket_size_growth_ratio: String,
}

/// What the controller predicted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimeSeriesPredictionStatus {
    /// One entry per metric of the spec, by resourceIdentifier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prediction_metrics: Vec<PredictionMetricStatus>,
    /// `Ready`, with reason `PredictSucceed` or `PredictPartial`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One metric's predicted series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PredictionMetricStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_identifier: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prediction: Vec<MetricTimeSeries>,
    /// Whether every series covers the window (always written, as in Crane).
    #[serde(default)]
    pub ready: bool,
}

/// A predicted series: its labels and samples in time order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricTimeSeries {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<Label>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Label {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// A predicted value (written with five decimals, as Crane writes it) at a Unix second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub timestamp: i64,
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::inspect::{columns, schema};
    use kube::core::CustomResourceExt;
    use serde_json::json;

    #[test]
    fn names_columns_and_subresources_are_cranes() {
        let crd = TimeSeriesPrediction::crd();
        assert_eq!(crd.spec.group, GROUP);
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.plural, "timeseriespredictions");
        assert_eq!(crd.spec.names.short_names, Some(vec!["tsp".into()]));
        let subresources = crd.spec.versions[0].subresources.as_ref().unwrap();
        assert!(subresources.status.is_some());
        assert_eq!(
            columns(&crd),
            [
                ["TargetRefName", "string", ".spec.targetRef.name"],
                ["TargetRefKind", "string", ".spec.targetRef.kind"],
                [
                    "PredictionWindowSeconds",
                    "integer",
                    ".spec.predictionWindowSeconds"
                ],
                ["AGE", "date", ".metadata.creationTimestamp"],
            ]
        );
        let s = schema(&crd);
        let metric = &s["properties"]["spec"]["properties"]["predictionMetrics"]["items"];
        for field in [
            "resourceIdentifier",
            "type",
            "resourceQuery",
            "metricQuery",
            "expressionQuery",
            "algorithm",
        ] {
            assert!(metric["properties"].get(field).is_some(), "{field}");
        }
    }

    /// A TimeSeriesPrediction as Crane's EHPA controller writes it, with the status its TSP
    /// controller writes, reads and writes back unchanged.
    #[test]
    fn a_crane_tsp_round_trips() {
        let crane = json!({
            "apiVersion": "prediction.crane.io/v1alpha1",
            "kind": "TimeSeriesPrediction",
            "metadata": {"name": "ehpa-web", "namespace": "default"},
            "spec": {
                "predictionWindowSeconds": 3600,
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default"},
                "predictionMetrics": [{
                    "resourceIdentifier": "resource.cpu",
                    "type": "ExpressionQuery",
                    "expressionQuery": {"expression": "sum(irate(container_cpu_usage_seconds_total{namespace=\"default\",pod=~\"^web-[a-z0-9]+-[a-z0-9]{5}$\",container!=\"\"}[3m]))"},
                    "algorithm": {"algorithmType": "dsp", "dsp": {"sampleInterval": "60s", "historyLength": "7d",
                        "estimators": {"fft": [{"marginFraction": "0.05", "lowAmplitudeThreshold": "1.0",
                            "highFrequencyThreshold": "0.05", "minNumOfSpectrumItems": 10, "maxNumOfSpectrumItems": 20}]}}}
                }, {
                    "resourceIdentifier": "pods.requests",
                    "type": "MetricQuery",
                    "metricQuery": {"metricName": "http_requests", "labels": [{"key": "app", "operator": "in", "value": ["web"]}]},
                    "algorithm": {"algorithmType": "percentile", "percentile": {"aggregated": true, "historyLength": "7d",
                        "histogram": {"maxValue": "10000", "bucketSize": "10"}, "percentile": "0.95"}}
                }]
            },
            "status": {
                "conditions": [{"type": "Ready", "status": "False", "reason": "PredictPartial",
                    "message": "not all metric predicted", "lastTransitionTime": "2023-01-01T00:00:00Z"}],
                "predictionMetrics": [
                    {"resourceIdentifier": "resource.cpu", "ready": true, "prediction": [{
                        "labels": [{"name": "pod", "value": "web-1"}],
                        "samples": [{"value": "0.25000", "timestamp": 1700000000}, {"value": "0.31000", "timestamp": 1700000060}]}]},
                    {"resourceIdentifier": "pods.requests", "ready": false}
                ]
            }
        });
        let tsp: TimeSeriesPrediction = serde_json::from_value(crane.clone()).unwrap();
        let status = tsp.status.as_ref().unwrap();
        assert!(status.prediction_metrics[0].ready);
        assert_eq!(
            status.prediction_metrics[0].prediction[0].samples[1].timestamp,
            1_700_000_060
        );
        assert_eq!(serde_json::to_value(&tsp).unwrap(), crane);
    }
}
