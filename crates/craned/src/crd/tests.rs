use std::path::PathBuf;

use serde_json::json;

use super::*;
use ferrocrane_autoscaling::crd::inspect::{columns, schema};

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// The CI drift check: `deploy/crds/` must hold exactly what `craned crd` generates.
/// Regenerate with `UPDATE_CRDS=1 cargo test -p ferrocrane-craned crd::`.
#[test]
fn committed_crds_match_generated() {
    for (crd, rel) in all_crds() {
        let generated = crd_yaml(&crd).expect("serialize CRD");
        let path = repo_file(rel);
        if std::env::var_os("UPDATE_CRDS").is_some() {
            std::fs::write(&path, &generated).expect("write CRD");
        }
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            committed == generated,
            "{rel} is stale: run `cargo run -p ferrocrane-craned -- crd` or \
             `UPDATE_CRDS=1 cargo test -p ferrocrane-craned crd::` and commit the result"
        );
    }
}

#[test]
fn all_crds_yaml_is_every_document() {
    let all = all_crds_yaml().unwrap();
    assert_eq!(all.matches("\n---\n").count() + 1, 5);
    assert!(all.starts_with("---\napiVersion: apiextensions.k8s.io/v1\n"));
    assert!(all.contains("name: recommendations.analysis.crane.io"));
    assert!(all.contains("name: recommendationrules.analysis.crane.io"));
}

#[test]
fn crd_names_scope_and_columns_match_crane() {
    let [recs, rules] = crds();
    assert_eq!(recs.spec.group, GROUP);
    assert_eq!(recs.spec.scope, "Namespaced");
    assert_eq!(recs.spec.names.plural, "recommendations");
    assert_eq!(recs.spec.names.short_names, Some(vec!["recommend".into()]));
    assert_eq!(rules.spec.scope, "Cluster");
    assert_eq!(rules.spec.names.plural, "recommendationrules");
    assert_eq!(rules.spec.names.short_names, Some(vec!["rr".into()]));

    assert_eq!(
        columns(&recs),
        [
            ["Type", "string", ".spec.type"],
            ["TargetKind", "string", ".spec.targetRef.kind"],
            ["TargetNamespace", "string", ".spec.targetRef.namespace"],
            ["TargetName", "string", ".spec.targetRef.name"],
            [
                "Strategy",
                "string",
                ".spec.completionStrategy.completionStrategyType"
            ],
            [
                "PeriodSeconds",
                "string",
                ".spec.completionStrategy.periodSeconds"
            ],
            ["AdoptionType", "string", ".spec.adoptionType"],
            ["AGE", "date", ".metadata.creationTimestamp"],
        ]
    );
    assert_eq!(
        columns(&rules),
        [
            ["RunInterval", "string", ".spec.runInterval"],
            ["AGE", "date", ".metadata.creationTimestamp"],
        ]
    );
}

#[test]
fn schema_has_crane_enums_defaults_and_required_fields() {
    let [recs, rules] = crds();
    let r = schema(&recs);
    let spec = &r["properties"]["spec"];
    assert_eq!(spec["required"], json!(["targetRef", "type"]));
    let adoption = &spec["properties"]["adoptionType"];
    assert_eq!(adoption["default"], "StatusAndAnnotation");
    assert_eq!(
        adoption["enum"],
        json!(["Status", "StatusAndAnnotation", "Auto"])
    );
    let strategy =
        &spec["properties"]["completionStrategy"]["properties"]["completionStrategyType"];
    assert_eq!(strategy["default"], "Once");
    assert_eq!(strategy["enum"], json!(["Once", "Periodical"]));
    let status = &r["properties"]["status"]["properties"];
    for f in [
        "recommendedValue",
        "targetRef",
        "recommendedInfo",
        "currentInfo",
        "action",
        "description",
        "conditions",
        "lastUpdateTime",
    ] {
        assert!(status.get(f).is_some(), "status.{f} missing");
    }

    let rr = schema(&rules);
    let spec = &rr["properties"]["spec"];
    assert_eq!(
        spec["required"],
        json!(["namespaceSelector", "recommenders", "resourceSelectors"])
    );
    let sel = &spec["properties"]["resourceSelectors"]["items"];
    assert_eq!(sel["required"], json!(["kind"]));
    let status = &rr["properties"]["status"]["properties"];
    assert_eq!(
        status["recommendations"]["x-kubernetes-list-type"],
        "atomic"
    );
    assert_eq!(status["runNumber"]["format"], "int32");
}

/// A RecommendationRule as Crane's docs write it parses, and serializes back to the same JSON.
#[test]
fn rule_round_trips_crane_json() {
    let crane = json!({
        "apiVersion": "analysis.crane.io/v1alpha1",
        "kind": "RecommendationRule",
        "metadata": {"name": "workloads-rule"},
        "spec": {
            "runInterval": "24h",
            "resourceSelectors": [
                {"kind": "Deployment", "apiVersion": "apps/v1"},
                {"kind": "StatefulSet", "apiVersion": "apps/v1", "name": "db",
                 "labelSelector": {"matchLabels": {"app": "db"}}}
            ],
            "namespaceSelector": {"any": true},
            "recommenders": [
                {"name": "Replicas"},
                {"name": "Resource", "config": {"cpu-request-percentile": "0.95"}}
            ]
        },
        "status": {
            "lastUpdateTime": "2024-01-02T03:04:05Z",
            "runNumber": 3,
            "recommendations": [{
                "kind": "Recommendation",
                "apiVersion": "analysis.crane.io/v1alpha1",
                "namespace": "default",
                "name": "workloads-rule-resource-8xvwm",
                "uid": "5b1c",
                "targetRef": {"kind": "Deployment", "apiVersion": "apps/v1",
                              "namespace": "default", "name": "nginx"},
                "lastStartTime": "2024-01-02T03:04:05Z",
                "recommenderRef": {"name": "Resource"}
            }]
        }
    });
    let rule: RecommendationRule = serde_json::from_value(crane.clone()).unwrap();
    assert_eq!(rule.spec.run_interval, "24h");
    assert!(rule.spec.namespace_selector.any);
    assert_eq!(rule.spec.resource_selectors[1].name, "db");
    assert_eq!(
        rule.spec.recommenders[1].config["cpu-request-percentile"],
        "0.95"
    );
    let status = rule.status.as_ref().unwrap();
    assert_eq!(status.run_number, 3);
    assert_eq!(status.recommendations[0].recommender_ref.name, "Resource");
    assert_eq!(serde_json::to_value(&rule).unwrap(), crane);
}

#[test]
fn recommendation_round_trips_crane_json() {
    let crane = json!({
        "apiVersion": "analysis.crane.io/v1alpha1",
        "kind": "Recommendation",
        "metadata": {"name": "r", "namespace": "default",
                     "labels": {known::RECOMMENDATION_RULE_NAME_LABEL: "workloads-rule"}},
        "spec": {
            "targetRef": {"kind": "Deployment", "apiVersion": "apps/v1",
                          "namespace": "default", "name": "nginx"},
            "type": "Resource",
            "completionStrategy": {"completionStrategyType": "Periodical", "periodSeconds": 86400},
            "adoptionType": "StatusAndAnnotation"
        },
        "status": {
            "recommendedValue": "resourceRequest:\n  containers:\n  - containerName: nginx\n    target:\n      cpu: 100m\n      memory: 100Mi\n",
            "targetRef": {},
            "recommendedInfo": "{\"spec\":{\"template\":{\"spec\":{\"containers\":[]}}}}",
            "currentInfo": "{}",
            "action": "Patch",
            "conditions": [{"type": "Ready", "status": "True", "reason": "RecommendationReady",
                            "message": "Recommendation is ready",
                            "lastTransitionTime": "2024-01-02T03:04:05Z"}],
            "lastUpdateTime": "2024-01-02T03:04:05Z"
        }
    });
    let rec: Recommendation = serde_json::from_value(crane.clone()).unwrap();
    assert_eq!(rec.spec.adoption_type, AdoptionType::StatusAndAnnotation);
    assert_eq!(
        rec.spec.completion_strategy.completion_strategy_type,
        CompletionStrategyType::Periodical
    );
    assert_eq!(rec.status.as_ref().unwrap().action, actions::PATCH);
    assert_eq!(serde_json::to_value(&rec).unwrap(), crane);
}

#[test]
fn recommendation_defaults_match_crane() {
    let rec: Recommendation = serde_json::from_value(json!({
        "apiVersion": "analysis.crane.io/v1alpha1", "kind": "Recommendation",
        "metadata": {"name": "r"},
        "spec": {"targetRef": {"kind": "Node", "name": "n1"}, "type": "IdleNode"}
    }))
    .unwrap();
    assert_eq!(rec.spec.adoption_type, AdoptionType::StatusAndAnnotation);
    assert_eq!(
        rec.spec.completion_strategy.completion_strategy_type,
        CompletionStrategyType::Once
    );
    assert!(rec.status.is_none());
}

#[test]
fn unknown_adoption_type_is_rejected() {
    let r: Result<RecommendationSpec, _> = serde_json::from_value(json!({
        "targetRef": {}, "type": "Resource", "adoptionType": "Sometimes"
    }));
    assert!(r.is_err());
}

#[test]
fn known_keys_are_crane_spelling() {
    assert_eq!(
        known::RESOURCE_RECOMMENDATION_ANNOTATION,
        "analysis.crane.io/resource-recommendation"
    );
    assert_eq!(
        known::RECOMMENDATION_TARGET_NAMESPACE_LABEL,
        "analysis.crane.io/recommendation-target-namespace"
    );
    assert_eq!(recommenders::ALL.len(), 6);
}
