//! `autoscaling.crane.io/v1alpha1`: `EffectiveHorizontalPodAutoscaler` (EHPA) and
//! `Substitute`, wire-compatible with gocrane/api v0.11 `autoscaling/v1alpha1/ehpa_types.go`:
//! the same kinds, short names, printer columns, field names, defaults (minReplicas 1,
//! scaleStrategy Auto, predictionWindowSeconds 3600) and omitempty behaviour; status as a
//! subresource, and the Substitute's scale subresource the HPA scales in Preview.
//!
//! The metric, behavior and target-reference types are Kubernetes' `autoscaling/v2` ones,
//! whose JSON is `autoscaling/v2beta2`'s, so Crane's objects read unchanged.

// kube-derive's repeated `printcolumn(type_ = ...)` reads to clippy as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscalerBehavior, MetricSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_zero;
use super::prediction::{Dsp, Percentile};

/// API group of EHPA and Substitute.
pub const GROUP: &str = "autoscaling.crane.io";

/// Condition types and reasons of an EHPA (Crane's, so `kubectl wait` and alerts carry over).
pub mod conditions {
    /// The whole autoscaling works as asked.
    pub const READY: &str = "Ready";
    /// The prediction of its metrics is ready (copied from its TimeSeriesPrediction).
    pub const PREDICTION_READY: &str = "PredictionReady";
}

/// An HPA with cron schedules and predicted metrics on top of the user's metrics.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "autoscaling.crane.io",
    version = "v1alpha1",
    kind = "EffectiveHorizontalPodAutoscaler",
    namespaced,
    shortname = "ehpa",
    status = "EffectiveHorizontalPodAutoscalerStatus",
    doc = "EffectiveHorizontalPodAutoscaler scales a workload on its metrics, cron schedules and predictions.",
    printcolumn(
        name = "STRATEGY",
        type_ = "string",
        json_path = ".spec.scaleStrategy",
        description = "Auto, or Preview (computed, not applied)."
    ),
    printcolumn(
        name = "MINPODS",
        type_ = "integer",
        json_path = ".spec.minReplicas",
        description = "The fewest replicas it scales to."
    ),
    printcolumn(
        name = "MAXPODS",
        type_ = "integer",
        json_path = ".spec.maxReplicas",
        description = "The most replicas it scales to."
    ),
    printcolumn(
        name = "SPECIFICPODS",
        type_ = "integer",
        json_path = ".spec.specificReplicas",
        description = "The replicas Preview holds the workload at."
    ),
    printcolumn(
        name = "REPLICAS",
        type_ = "integer",
        json_path = ".status.expectReplicas",
        description = "The replicas the autoscaler wants."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "When the object was created."
    )
)]
#[serde(rename_all = "camelCase")]
// Beyond Crane's webhook, and refused by the API server itself (no webhook to run).
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",
     "fieldPath": ".minReplicas",
     "message": "minReplicas must not be above maxReplicas"},
    {"rule": "!has(self.crons) || self.crons.all(c, self.crons.exists_one(d, d.name == c.name))",
     "fieldPath": ".crons",
     "message": "each cron's name must be unique"}
]))]
pub struct EffectiveHorizontalPodAutoscalerSpec {
    /// The workload to scale (any kind with a scale subresource).
    pub scale_target_ref: CrossVersionObjectReference,
    /// The fewest replicas (1 unless set).
    #[serde(
        default = "default_min_replicas",
        skip_serializing_if = "Option::is_none"
    )]
    pub min_replicas: Option<i32>,
    /// The most replicas.
    pub max_replicas: i32,
    /// `Auto` scales the workload; `Preview` only computes what it would do.
    #[serde(default)]
    pub scale_strategy: ScaleStrategy,
    /// In Preview, the replicas to hold the workload at; unset, Preview leaves it alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specific_replicas: Option<i32>,
    /// The user's HPA metrics; the HPA takes the most replicas any metric asks for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricSpec>,
    /// Scheduled replicas: the largest target of the windows open now, minReplicas outside.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub crons: Vec<CronSpec>,
    /// The HPA's scale-up and scale-down behavior, copied to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<HorizontalPodAutoscalerBehavior>,
    /// Predict the Resource, Pods and External metrics and scale ahead of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<Prediction>,
}

// Crane's default (`+kubebuilder:default=1`), also applied when craned reads an object written
// without the CRD's defaulting.
#[allow(clippy::unnecessary_wraps)]
fn default_min_replicas() -> Option<i32> {
    Some(1)
}

/// Whether the EHPA scales the workload or only says what it would do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ScaleStrategy {
    #[default]
    Auto,
    Preview,
}

/// A window in which the workload runs at least `targetReplicas`: it opens at each `start`
/// and closes at the next `end` (five-field cron schedules, in `timezone`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.start) && has(self.end) && self.start != \"\" && self.end != \"\"",
     "message": "a cron needs a start and an end"},
    {"rule": "!has(self.start) || !has(self.end) || self.start != self.end",
     "message": "start and end must differ (the same schedule would keep the window open for ever)"},
    {"rule": "!has(self.start) || self.start.matches(crons_shape)".replace("crons_shape", super::CRON_SHAPE_CEL),
     "fieldPath": ".start",
     "message": "start must be a cron schedule: five fields (minute hour day-of-month month day-of-week) or a @descriptor"},
    {"rule": "!has(self.end) || self.end.matches(crons_shape)".replace("crons_shape", super::CRON_SHAPE_CEL),
     "fieldPath": ".end",
     "message": "end must be a cron schedule: five fields (minute hour day-of-month month day-of-week) or a @descriptor"}
]))]
pub struct CronSpec {
    /// Unique within the EHPA.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// An IANA time zone (`Europe/Paris`); see docs/craned.md for the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// When the window opens (cron syntax).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 256))]
    pub start: String,
    /// When the window closes (cron syntax).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 256))]
    pub end: String,
    /// The replicas inside the window.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub target_replicas: i32,
}

/// How far ahead to predict, and with which algorithm.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// The TimeSeriesPrediction craned writes for it would be refused below 600 s (Crane: the EHPA is
// accepted and its prediction then fails in an event).
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.predictionWindowSeconds) || self.predictionWindowSeconds >= 600",
     "fieldPath": ".predictionWindowSeconds",
     "message": "predictionWindowSeconds must be at least 600"}
]))]
pub struct Prediction {
    /// How far ahead, in seconds (3600 unless set).
    #[serde(
        default = "default_prediction_window",
        skip_serializing_if = "Option::is_none"
    )]
    pub prediction_window_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction_algorithm: Option<PredictionAlgorithm>,
}

#[allow(clippy::unnecessary_wraps)]
fn default_prediction_window() -> Option<i32> {
    Some(3600)
}

/// The algorithm (`dsp` or `percentile`) and its knobs, as a TimeSeriesPrediction takes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PredictionAlgorithm {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub algorithm_type: String,
    #[serde(default, rename = "dsp", skip_serializing_if = "Option::is_none")]
    pub dsp: Option<Dsp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<Percentile>,
}

/// What the EHPA's HPA wants and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveHorizontalPodAutoscalerStatus {
    /// The replicas the HPA wants (its desiredReplicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_replicas: Option<i32>,
    /// The workload's replicas now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_replicas: Option<i32>,
    /// When the workload was last scaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<Time>,
    /// `Ready`, `PredictionReady` and the HPA's own conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Which source asks for the most replicas (an addition to Crane's status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas_source: Option<ReplicasSource>,
}

/// The source that sets an EHPA's replicas: of everything its HPA reads, the one that asks for
/// the most (the HPA takes the largest), as of the HPA's last evaluation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicasSource {
    /// `Cron`, `Prediction`, `Metric`, or `MinReplicas` when none asks for more.
    #[serde(rename = "type")]
    pub type_: String,
    /// The cron's name, the predicted metric's `resourceIdentifier`, or the metric
    /// (`Resource cpu`, `Pods requests_per_second`, `External queue_depth`...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The replicas it asks for (the HPA then clamps to maxReplicas).
    pub replicas: i32,
}

/// The types of a [`ReplicasSource`].
pub mod replicas_sources {
    pub const CRON: &str = "Cron";
    pub const PREDICTION: &str = "Prediction";
    pub const METRIC: &str = "Metric";
    pub const MIN_REPLICAS: &str = "MinReplicas";
}

/// The stand-in an EHPA in Preview points its HPA at: the HPA "scales" it through its scale
/// subresource, against the real workload's pods (the selector is copied), and the real
/// workload is left alone.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "autoscaling.crane.io",
    version = "v1alpha1",
    kind = "Substitute",
    namespaced,
    shortname = "subs",
    status = "SubstituteStatus",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.labelSelector"
    ),
    doc = "Substitute stands in for a workload so an HPA can compute replicas without scaling it.",
    printcolumn(
        name = "REPLICAS",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "The replicas the HPA would give the workload."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "When the object was created."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SubstituteSpec {
    /// The replicas the HPA set (reset to the workload's own by the Substitute controller).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: i32,
    /// The workload it stands in for.
    pub substitute_target_ref: CrossVersionObjectReference,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubstituteStatus {
    /// The workload's pod selector, for the HPA.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
    /// The replicas the HPA would give the workload.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::inspect::{columns, schema};
    use kube::core::CustomResourceExt;
    use serde_json::json;

    #[test]
    fn names_columns_and_subresources_are_cranes() {
        let crd = EffectiveHorizontalPodAutoscaler::crd();
        assert_eq!(crd.spec.group, GROUP);
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.plural, "effectivehorizontalpodautoscalers");
        assert_eq!(crd.spec.names.short_names, Some(vec!["ehpa".into()]));
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        let subresources = version.subresources.as_ref().unwrap();
        assert!(subresources.status.is_some());
        assert!(subresources.scale.is_none());
        assert_eq!(
            columns(&crd),
            [
                ["STRATEGY", "string", ".spec.scaleStrategy"],
                ["MINPODS", "integer", ".spec.minReplicas"],
                ["MAXPODS", "integer", ".spec.maxReplicas"],
                ["SPECIFICPODS", "integer", ".spec.specificReplicas"],
                ["REPLICAS", "integer", ".status.expectReplicas"],
                ["AGE", "date", ".metadata.creationTimestamp"],
            ]
        );

        let subs = Substitute::crd();
        assert_eq!(subs.spec.names.plural, "substitutes");
        assert_eq!(subs.spec.names.short_names, Some(vec!["subs".into()]));
        let scale = subs.spec.versions[0]
            .subresources
            .as_ref()
            .unwrap()
            .scale
            .clone()
            .unwrap();
        assert_eq!(scale.spec_replicas_path, ".spec.replicas");
        assert_eq!(scale.status_replicas_path, ".status.replicas");
        assert_eq!(
            scale.label_selector_path.as_deref(),
            Some(".status.labelSelector")
        );
        assert_eq!(
            columns(&subs),
            [
                ["REPLICAS", "integer", ".status.replicas"],
                ["AGE", "date", ".metadata.creationTimestamp"],
            ]
        );
    }

    #[test]
    fn defaults_and_required_fields_are_cranes() {
        let s = schema(&EffectiveHorizontalPodAutoscaler::crd());
        let spec = &s["properties"]["spec"];
        assert_eq!(spec["required"], json!(["maxReplicas", "scaleTargetRef"]));
        let p = &spec["properties"];
        assert_eq!(p["minReplicas"]["default"], 1);
        assert_eq!(p["scaleStrategy"]["default"], "Auto");
        assert_eq!(p["scaleStrategy"]["enum"], json!(["Auto", "Preview"]));
        assert_eq!(
            p["prediction"]["properties"]["predictionWindowSeconds"]["default"],
            3600
        );
        let target = &p["scaleTargetRef"];
        assert_eq!(target["required"], json!(["kind", "name"]));
        let subs = schema(&Substitute::crd());
        assert_eq!(
            subs["properties"]["spec"]["required"],
            json!(["substituteTargetRef"])
        );
    }

    /// An EHPA as Crane's docs write them reads unchanged, and writes back the same JSON (an
    /// empty `estimators` included: Go's omitempty never drops a struct).
    #[test]
    fn a_crane_ehpa_round_trips() {
        let crane = json!({
            "apiVersion": "autoscaling.crane.io/v1alpha1",
            "kind": "EffectiveHorizontalPodAutoscaler",
            "metadata": {"name": "php-apache", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "php-apache"},
                "minReplicas": 1,
                "maxReplicas": 10,
                "scaleStrategy": "Preview",
                "specificReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}],
                "crons": [{"name": "cron1", "timezone": "Asia/Shanghai",
                    "description": "scale down", "start": "0 6 ? * *", "end": "0 9 ? * *",
                    "targetReplicas": 1}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300,
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}},
                "prediction": {"predictionWindowSeconds": 3600, "predictionAlgorithm": {
                    "algorithmType": "dsp",
                    "dsp": {"sampleInterval": "60s", "historyLength": "7d", "estimators": {}}}}
            },
            "status": {"expectReplicas": 2, "currentReplicas": 1,
                "conditions": [{"type": "Ready", "status": "True", "reason": "EffectiveHorizontalPodAutoscalerReady",
                    "message": "Effective HPA is ready", "lastTransitionTime": "2023-01-01T00:00:00Z"}]}
        });
        let ehpa: EffectiveHorizontalPodAutoscaler = serde_json::from_value(crane.clone()).unwrap();
        assert_eq!(ehpa.spec.scale_strategy, ScaleStrategy::Preview);
        assert_eq!(
            ehpa.spec.crons[0].timezone.as_deref(),
            Some("Asia/Shanghai")
        );
        assert_eq!(serde_json::to_value(&ehpa).unwrap(), crane);
    }

    #[test]
    fn an_ehpa_written_without_defaults_reads_with_cranes() {
        let ehpa: EffectiveHorizontalPodAutoscalerSpec = serde_json::from_value(json!({
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 4,
            "prediction": {}
        }))
        .unwrap();
        assert_eq!(ehpa.min_replicas, Some(1));
        assert_eq!(ehpa.scale_strategy, ScaleStrategy::Auto);
        assert_eq!(
            ehpa.prediction.unwrap().prediction_window_seconds,
            Some(3600)
        );
    }
}
