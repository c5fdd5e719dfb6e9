//! Applying a Recommendation to its target, per `spec.adoptionType`:
//! * `Status`: nothing beyond the Recommendation's status.
//! * `StatusAndAnnotation` (the default): `analysis.crane.io/{resource,replicas,hpa}-recommendation`
//!   on the target holds the proposal (YAML of the inner object, as Crane writes it).
//! * `Auto`: the annotation, and the target is patched — Resource: the pod template's requests
//!   (strategic merge of `recommendedInfo`, built-in workloads only); Replicas: the scale
//!   subresource (any scalable kind). Only with `--auto-adoption`; Crane's Auto creates EHPA/EVPA
//!   objects instead, which craned does not (no Crane autoscaling CRDs here).

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::targets::Target;
use crate::crd::{AdoptionType, RecommendationStatus, actions, known, recommenders};

/// What adoption did, for events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adopted {
    Nothing,
    Annotated,
    Patched,
    /// Auto requested but `--auto-adoption` is off; annotated only.
    AutoDisabled,
}

/// The annotation key and value for a recommendation type (pure). `None` when the type has no
/// annotation or the value has not the expected shape.
pub fn annotation(recommender: &str, recommended_value: &str) -> Option<(&'static str, String)> {
    let (key, field) = match recommender {
        recommenders::RESOURCE => (known::RESOURCE_RECOMMENDATION_ANNOTATION, "resourceRequest"),
        recommenders::REPLICAS => (
            known::REPLICAS_RECOMMENDATION_ANNOTATION,
            "replicasRecommendation",
        ),
        recommenders::HPA => (known::HPA_RECOMMENDATION_ANNOTATION, "effectiveHPA"),
        _ => return None,
    };
    let v: Value = serde_saphyr::from_str(recommended_value).ok()?;
    let inner = v.get(field)?;
    Some((key, crate::recommender::to_yaml(inner)))
}

fn is_builtin_workload(t: &Target) -> bool {
    t.resource.group == "apps"
        && matches!(t.kind.as_str(), "Deployment" | "StatefulSet" | "DaemonSet")
}

pub async fn adopt(
    client: &Client,
    target: &Target,
    recommender: &str,
    adoption: AdoptionType,
    status: &RecommendationStatus,
    auto_enabled: bool,
) -> Result<Adopted, kube::Error> {
    if adoption == AdoptionType::Status || status.recommended_value.is_empty() {
        return Ok(Adopted::Nothing);
    }
    let api: Api<DynamicObject> = if target.namespaced {
        Api::namespaced_with(client.clone(), &target.namespace, &target.resource)
    } else {
        Api::all_with(client.clone(), &target.resource)
    };
    let mut result = Adopted::Nothing;
    if let Some((key, value)) = annotation(recommender, &status.recommended_value) {
        let current = target
            .object
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key));
        if current != Some(&value) {
            let patch = json!({"metadata": {"annotations": {key: value}}});
            api.patch(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        result = Adopted::Annotated;
    }
    if adoption != AdoptionType::Auto {
        return Ok(result);
    }
    if !auto_enabled {
        return Ok(Adopted::AutoDisabled);
    }
    if status.action != actions::PATCH {
        return Ok(result);
    }
    match recommender {
        recommenders::RESOURCE if is_builtin_workload(target) => {
            let info: Value = serde_json::from_str(&status.recommended_info).unwrap_or(Value::Null);
            if info.is_object() {
                api.patch(
                    &target.name,
                    &PatchParams::default(),
                    &Patch::Strategic(&info),
                )
                .await?;
                result = Adopted::Patched;
            }
        }
        recommenders::REPLICAS if target.has_scale => {
            let info: Value = serde_json::from_str(&status.recommended_info).unwrap_or(Value::Null);
            if let Some(r) = info.pointer("/spec/replicas").and_then(Value::as_i64) {
                api.patch_scale(
                    &target.name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"spec": {"replicas": r}})),
                )
                .await?;
                result = Adopted::Patched;
            }
        }
        _ => {}
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_hold_the_inner_value() {
        let (k, v) = annotation(
            "Resource",
            "resourceRequest:\n  containers:\n  - containerName: app\n    target:\n      cpu: 100m\n      memory: 1Gi\n",
        )
        .unwrap();
        assert_eq!(k, "analysis.crane.io/resource-recommendation");
        assert!(v.starts_with("containers:"), "{v}");
        assert!(v.contains("cpu: 100m"), "{v}");
        let (k, v) = annotation("Replicas", "replicasRecommendation:\n  replicas: 3\n").unwrap();
        assert_eq!(k, "analysis.crane.io/replicas-recommendation");
        assert_eq!(v.trim(), "replicas: 3");
        assert!(annotation("Volume", "").is_none());
        assert!(annotation("Resource", "not: it\n").is_none());
    }
}
