//! craned's CustomResourceDefinitions. Here `analysis.crane.io/v1alpha1`: `Recommendation`
//! (namespaced) and `RecommendationRule` (cluster-scoped), wire-compatible with gocrane/api
//! `analysis/v1alpha1/types.go`; the autoscaling half in [`autoscaling`] (EHPA, Substitute)
//! and [`prediction`] (TimeSeriesPrediction).
//!
//! Field names, omitempty behaviour, enums, defaults, short names and printer columns follow
//! Crane's CRDs. One deliberate difference: both kinds have the `status` subresource (Crane's
//! CRDs have `subresources: {}`), so a user's `kubectl apply` of a rule or recommendation cannot
//! wipe what craned computed, and craned writes status with server-side apply on `/status`.

// kube-derive's repeated `printcolumn(type_ = ...)` reads to clippy as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

pub use ferrocrane_autoscaling::crd::{autoscaling, prediction};

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::CustomResource;
use kube::core::CustomResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of both kinds.
pub const GROUP: &str = "analysis.crane.io";
/// API version of both kinds.
pub const VERSION: &str = "v1alpha1";

/// Label and annotation keys Crane puts on Recommendations and targets (gocrane/crane
/// `pkg/known`), so dashboards and scripts written for Crane keep working.
pub mod known {
    pub const RECOMMENDATION_RULE_NAME_LABEL: &str = "analysis.crane.io/recommendation-rule-name";
    pub const RECOMMENDATION_RULE_UID_LABEL: &str = "analysis.crane.io/recommendation-rule-uid";
    pub const RECOMMENDATION_RULE_RECOMMENDER_LABEL: &str =
        "analysis.crane.io/recommendation-rule-recommender";
    pub const RECOMMENDATION_TARGET_KIND_LABEL: &str =
        "analysis.crane.io/recommendation-target-kind";
    pub const RECOMMENDATION_TARGET_VERSION_LABEL: &str =
        "analysis.crane.io/recommendation-target-version";
    pub const RECOMMENDATION_TARGET_NAME_LABEL: &str =
        "analysis.crane.io/recommendation-target-name";
    pub const RECOMMENDATION_TARGET_NAMESPACE_LABEL: &str =
        "analysis.crane.io/recommendation-target-namespace";

    pub const ANALYTICS_NAME_LABEL: &str = "analysis.crane.io/analytics-name";
    pub const ANALYTICS_UID_LABEL: &str = "analysis.crane.io/analytics-uid";
    pub const ANALYTICS_TYPE_LABEL: &str = "analysis.crane.io/analytics-type";

    /// On the target with adoption `StatusAndAnnotation`: the recommendedValue of each kind.
    pub const HPA_RECOMMENDATION_ANNOTATION: &str = "analysis.crane.io/hpa-recommendation";
    pub const REPLICAS_RECOMMENDATION_ANNOTATION: &str =
        "analysis.crane.io/replicas-recommendation";
    pub const RESOURCE_RECOMMENDATION_ANNOTATION: &str =
        "analysis.crane.io/resource-recommendation";
    pub const RUN_NUMBER_ANNOTATION: &str = "analysis.crane.io/run-number";
    pub const ANALYTICS_CONVERSION_ANNOTATION: &str = "analysis.crane.io/analytics-conversion";
    pub const LAST_START_TIME_ANNOTATION: &str = "analysis.crane.io/last-start-time";
    pub const MESSAGE_ANNOTATION: &str = "analysis.crane.io/message";
}

/// Recommender names as Crane spells them (`pkg/recommendation/recommender/const.go`).
pub mod recommenders {
    pub const REPLICAS: &str = "Replicas";
    pub const RESOURCE: &str = "Resource";
    pub const HPA: &str = "HPA";
    pub const IDLE_NODE: &str = "IdleNode";
    pub const VOLUME: &str = "Volume";
    pub const SERVICE: &str = "Service";
    /// Every recommender craned knows, in Crane's order.
    pub const ALL: [&str; 6] = [REPLICAS, RESOURCE, HPA, IDLE_NODE, VOLUME, SERVICE];
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

// ---------------------------------------------------------------------------------------------
// Recommendation
// ---------------------------------------------------------------------------------------------

/// RecommendationSpec describes the recommendation type and what the recommendation is for.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "analysis.crane.io",
    version = "v1alpha1",
    kind = "Recommendation",
    namespaced,
    shortname = "recommend",
    status = "RecommendationStatus",
    doc = "Recommendation represents the configuration of a single recommendation.",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type"),
    printcolumn(
        name = "TargetKind",
        type_ = "string",
        json_path = ".spec.targetRef.kind"
    ),
    printcolumn(
        name = "TargetNamespace",
        type_ = "string",
        json_path = ".spec.targetRef.namespace"
    ),
    printcolumn(
        name = "TargetName",
        type_ = "string",
        json_path = ".spec.targetRef.name"
    ),
    printcolumn(
        name = "Strategy",
        type_ = "string",
        json_path = ".spec.completionStrategy.completionStrategyType"
    ),
    printcolumn(
        name = "PeriodSeconds",
        type_ = "string",
        json_path = ".spec.completionStrategy.periodSeconds"
    ),
    printcolumn(
        name = "AdoptionType",
        type_ = "string",
        json_path = ".spec.adoptionType"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RecommendationSpec {
    pub target_ref: ObjectReference,

    /// The recommender that produced it: Resource, Replicas, HPA, IdleNode, Volume or Service.
    #[serde(rename = "type")]
    pub type_: String,

    /// CompletionStrategy indicate how to complete a recommendation. the default
    /// CompletionStrategy is Once.
    #[serde(default)]
    pub completion_strategy: CompletionStrategy,

    /// AdoptionType indicate how to adopt recommendation value to target. the default
    /// AdoptionType is StatusAndAnnotation.
    #[serde(default)]
    pub adoption_type: AdoptionType,
}

/// How a recommendation is applied to its target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AdoptionType {
    /// Only written to the Recommendation's status.
    Status,
    /// Status, plus an `analysis.crane.io/*-recommendation` annotation on the target.
    #[default]
    StatusAndAnnotation,
    /// Status, annotation, and the target is patched.
    Auto,
}

/// CompletionStrategy presents how to complete a recommendation or a recommendation request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionStrategy {
    /// CompletionStrategy indicate the strategy to request an Analytics or Recommendation, value
    /// can be "Once" and "Periodical" the default CompletionStrategy is Once.
    #[serde(default)]
    pub completion_strategy_type: CompletionStrategyType,

    /// PeriodSeconds is the duration in seconds for an Analytics or Recommendation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_seconds: Option<i64>,
}

/// Whether a recommendation is computed once or every period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CompletionStrategyType {
    #[default]
    Once,
    Periodical,
}

/// RecommendationStatus represents the current state of a recommendation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecommendationStatus {
    /// The proposal as YAML (Crane's `ProposedRecommendation`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub recommended_value: String,

    /// The object the recommendation applies to when it differs from spec.targetRef (HPA:
    /// the EffectiveHorizontalPodAutoscaler). Always serialized, as in Go.
    #[serde(default)]
    pub target_ref: ObjectReference,

    /// JSON merge patch that would adopt the recommendation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub recommended_info: String,

    /// The same fields as recommendedInfo, with the target's current values.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_info: String,

    /// Patch, None, Create or Delete.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,

    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,

    /// Conditions is an array of current recommendation conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    /// LastUpdateTime is last time we got an update on this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// `status.action` values.
pub mod actions {
    pub const PATCH: &str = "Patch";
    pub const NONE: &str = "None";
    pub const CREATE: &str = "Create";
    pub const DELETE: &str = "Delete";
}

// ---------------------------------------------------------------------------------------------
// RecommendationRule
// ---------------------------------------------------------------------------------------------

/// RecommendationRuleSpec defines resources and runInterval to recommend
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "analysis.crane.io",
    version = "v1alpha1",
    kind = "RecommendationRule",
    shortname = "rr",
    status = "RecommendationRuleStatus",
    doc = "RecommendationRule represents the configuration of an RecommendationRule object.",
    printcolumn(
        name = "RunInterval",
        type_ = "string",
        json_path = ".spec.runInterval"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RecommendationRuleSpec {
    /// ResourceSelector indicates how to select resources(e.g. a set of Deployments) for a
    /// Recommendation.
    pub resource_selectors: Vec<ResourceSelector>,

    /// NamespaceSelector indicates resource namespaces to select from
    pub namespace_selector: NamespaceSelector,

    /// RunInterval between two recommendation (Go duration). Empty means run once.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_interval: String,

    /// List of recommender type to run
    pub recommenders: Vec<RecommenderRef>,
}

/// ResourceSelector describes how the resources will be selected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    /// Kind of the resource, e.g. Deployment
    pub kind: String,

    /// API version of the resource, e.g. "apps/v1"
    #[serde(default)]
    pub api_version: String,

    /// Name of the resource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// NamespaceSelector describes how to select namespaces for recommend
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Select all namespace if true
    #[serde(default, skip_serializing_if = "is_false")]
    pub any: bool,

    /// List of namespace names to select from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_names: Vec<String>,
}

/// Recommender referring to the Recommender in RecommendationConfiguration
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecommenderRef {
    /// Recommender's Name
    pub name: String,

    /// Override Recommendation configs
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
}

/// RecommendationRuleStatus represents the current state of an RecommendationRule item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecommendationRuleStatus {
    /// LastUpdateTime is the last time the status updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,

    /// Recommendations is a list of RecommendationMission that run parallel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub recommendations: Vec<RecommendationMission>,

    /// RunNumber is the numbers of runs
    #[serde(default, skip_serializing_if = "is_zero")]
    pub run_number: i32,
}

/// One Recommendation a rule produced: Go embeds an ObjectReference (to the Recommendation)
/// inline, so its fields sit at this level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecommendationMission {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,

    /// The workload, node, service or volume the recommendation is about.
    #[serde(default)]
    pub target_ref: ObjectReference,

    /// LastStartTime is last time we start a recommendation mission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_start_time: Option<Time>,

    /// Message presents the running message for this mission
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,

    /// RecommenderRef presents recommender info for recommendation mission.
    #[serde(default)]
    pub recommender_ref: RecommenderRef,
}

// ---------------------------------------------------------------------------------------------
// YAML
// ---------------------------------------------------------------------------------------------

/// Where `deploy/crds/` keeps each CRD, relative to the repository root.
pub const RECOMMENDATIONS_CRD_FILE: &str = "deploy/crds/analysis.crane.io_recommendations.yaml";
pub const RECOMMENDATION_RULES_CRD_FILE: &str =
    "deploy/crds/analysis.crane.io_recommendationrules.yaml";
pub const EHPA_CRD_FILE: &str =
    "deploy/crds/autoscaling.crane.io_effectivehorizontalpodautoscalers.yaml";
pub const SUBSTITUTES_CRD_FILE: &str = "deploy/crds/autoscaling.crane.io_substitutes.yaml";
pub const TSP_CRD_FILE: &str = "deploy/crds/prediction.crane.io_timeseriespredictions.yaml";

/// The two recommendation CRDs, Recommendation first.
pub fn crds() -> [CustomResourceDefinition; 2] {
    [Recommendation::crd(), RecommendationRule::crd()]
}

/// Every CRD craned serves, each with the file `deploy/crds/` keeps it in: the recommendation
/// half, then the autoscaling half (EHPA, Substitute, TimeSeriesPrediction).
pub fn all_crds() -> [(CustomResourceDefinition, &'static str); 5] {
    let [recommendations, rules] = crds();
    [
        (recommendations, RECOMMENDATIONS_CRD_FILE),
        (rules, RECOMMENDATION_RULES_CRD_FILE),
        (
            autoscaling::EffectiveHorizontalPodAutoscaler::crd(),
            EHPA_CRD_FILE,
        ),
        (autoscaling::Substitute::crd(), SUBSTITUTES_CRD_FILE),
        (prediction::TimeSeriesPrediction::crd(), TSP_CRD_FILE),
    ]
}

/// One CRD as a YAML document (starting with `---`), exactly as committed under `deploy/crds/`.
pub fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::SerializeError> {
    Ok(format!("---\n{}", serde_saphyr::to_string(crd)?))
}

/// What `craned crd` prints: every CRD as a multi-document YAML stream.
pub fn all_crds_yaml() -> Result<String, serde_saphyr::SerializeError> {
    let mut out = String::new();
    for (crd, _) in all_crds() {
        out.push_str(&crd_yaml(&crd)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
