//! Rounds that change nothing write nothing (ferrocrane; `--skip-unchanged-writes`, on by
//! default). Crane rewrites every Recommendation every round, if only to bump its run-number
//! and timestamps: at thousands of targets the round is then bound by API-server writes even
//! when no value moved. Here a Recommendation whose metadata, spec and status would stay the
//! same (timestamps and run-number aside) is left alone; its `analysis.crane.io/run-number`,
//! `last-start-time` and `status.lastUpdateTime` then say when it last changed, and the rule's
//! status says when it last ran.
//!
//! Crane's per-Recommendation trigger (lower its run-number below the rule's) cannot tell a
//! lowered annotation from one a skipped round left behind, so craned remembers the run-number
//! it last wrote or confirmed for each Recommendation ([`RunNumbers`]) and re-runs one whose
//! annotation went below that — and writes it, unchanged or not, since someone asked.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use kube::ResourceExt;

use crate::crd::{Recommendation, RecommendationStatus, known};

/// The annotations a round rewrites even when nothing else changes.
const ROUND_ANNOTATIONS: [&str; 2] = [
    known::RUN_NUMBER_ANNOTATION,
    known::LAST_START_TIME_ANNOTATION,
];

/// The run-number each Recommendation (by `namespace/name`) was last written or confirmed
/// with, to tell Crane's trigger from a skipped write.
#[derive(Debug)]
pub struct RunNumbers {
    skip_unchanged: bool,
    seen: Mutex<HashMap<String, i32>>,
}

impl RunNumbers {
    pub fn new(skip_unchanged: bool) -> Self {
        RunNumbers {
            skip_unchanged,
            seen: Mutex::new(HashMap::new()),
        }
    }

    pub fn skips_unchanged(&self) -> bool {
        self.skip_unchanged
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, HashMap<String, i32>> {
        // A panic elsewhere leaves the map as consistent as any single insert leaves it.
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the Recommendation `key`, annotated with `annotated`, was triggered by lowering
    /// its run-number. Crane's rule when every round writes: below the rule's `rule_run`.
    /// Otherwise: below what craned last wrote or confirmed; one craned has not seen since it
    /// started (or took the lease) is taken as it is.
    pub fn lowered(&self, key: &str, annotated: i32, rule_run: i32) -> bool {
        if !self.skip_unchanged {
            return annotated < rule_run;
        }
        let mut seen = self.seen();
        match seen.get(key) {
            Some(&last) => annotated < last,
            None => {
                seen.insert(key.to_string(), annotated);
                false
            }
        }
    }

    /// The Recommendation `key` now carries run-number `run`.
    pub fn record(&self, key: &str, run: i32) {
        let mut seen = self.seen();
        seen.insert(key.to_string(), run);
    }

    /// The Recommendation `key` is gone.
    pub fn forget(&self, key: &str) {
        let mut seen = self.seen();
        seen.remove(key);
    }
}

/// The run-number a Recommendation carries (0 when it has none or it is not a number).
pub(super) fn run_number_of(r: &Recommendation) -> i32 {
    r.annotations()
        .get(known::RUN_NUMBER_ANNOTATION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Whether server-side applying `apply` (craned's whole intent for a Recommendation's metadata
/// and spec) to `live` (the object as served) would change anything but the round's own
/// annotations. The labels must match exactly: a label craned no longer applies is removed
/// by the apply. Elsewhere `live` may hold more than craned applies (other managers' fields,
/// defaults); everything craned applies must be there with the same value.
pub fn apply_changes_nothing(apply: &Value, live: &Value) -> bool {
    let labels = |v: &Value| {
        v.pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(serde_json::Map::is_empty);
    let (want, have) = (labels(apply), labels(live));
    if want != have && !(empty(&want) && empty(&have)) {
        return false;
    }
    let mut apply = apply.clone();
    if let Some(metadata) = apply.get_mut("metadata").and_then(Value::as_object_mut) {
        // Compared above, exactly.
        metadata.remove("labels");
        if let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            for key in ROUND_ANNOTATIONS {
                annotations.remove(key);
            }
        }
    }
    contained_in(&apply, live)
}

/// Every field of `part` is in `whole` with the same value; lists match element by element.
fn contained_in(part: &Value, whole: &Value) -> bool {
    match (part, whole) {
        (Value::Object(p), Value::Object(w)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|wv| contained_in(v, wv))),
        (Value::Array(p), Value::Array(w)) => {
            p.len() == w.len() && p.iter().zip(w).all(|(a, b)| contained_in(a, b))
        }
        _ => part == whole,
    }
}

/// Whether a status is the live one but for its `lastUpdateTime`.
pub fn status_unchanged(next: &RecommendationStatus, live: Option<&RecommendationStatus>) -> bool {
    live.is_some_and(|live| {
        let mut next = next.clone();
        next.last_update_time.clone_from(&live.last_update_time);
        &next == live
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(run: &str, labels: Value) -> Value {
        json!({
            "apiVersion": "analysis.crane.io/v1alpha1",
            "kind": "Recommendation",
            "metadata": {
                "name": "r", "namespace": "ns", "labels": labels,
                "annotations": {
                    known::RUN_NUMBER_ANNOTATION: run,
                    known::MESSAGE_ANNOTATION: "Success",
                    known::LAST_START_TIME_ANNOTATION: format!("2026-12-0{run} 10:00:00"),
                },
                "ownerReferences": [{"apiVersion": "analysis.crane.io/v1alpha1",
                    "kind": "RecommendationRule", "name": "rule", "uid": "u",
                    "controller": false, "blockOwnerDeletion": false}],
            },
            "spec": {"targetRef": {"kind": "Deployment", "apiVersion": "apps/v1",
                "namespace": "ns", "name": "web"}, "type": "Resource"},
        })
    }

    /// The object as the API server returns it after round 1: what was applied, plus
    /// server-set and other managers' fields.
    fn live() -> Value {
        let mut v = apply("1", json!({"app": "web"}));
        v["metadata"]["uid"] = json!("x");
        v["metadata"]["resourceVersion"] = json!("42");
        v["metadata"]["annotations"]["someone/else"] = json!("note");
        v["spec"]["adoptionType"] = json!("StatusAndAnnotation");
        v["status"] = json!({"recommendedValue": "v"});
        v
    }

    #[test]
    fn only_the_round_annotations_changing_is_no_change() {
        assert!(apply_changes_nothing(
            &apply("2", json!({"app": "web"})),
            &live()
        ));
    }

    #[test]
    fn any_applied_field_changing_is_a_change() {
        let same = || apply("2", json!({"app": "web"}));
        let mut message = same();
        message["metadata"]["annotations"][known::MESSAGE_ANNOTATION] = json!("Failed: no data");
        let mut owner = same();
        owner["metadata"]["ownerReferences"][0]["uid"] = json!("other");
        let mut two_owners = same();
        two_owners["metadata"]["ownerReferences"] = json!([
            two_owners["metadata"]["ownerReferences"][0].clone(),
            two_owners["metadata"]["ownerReferences"][0].clone()
        ]);
        let mut target = same();
        target["spec"]["targetRef"]["name"] = json!("db");
        for (what, changed) in [
            ("message", message),
            ("owner", owner),
            ("owners", two_owners),
            ("target", target),
            ("label value", apply("2", json!({"app": "api"}))),
            (
                "label added",
                apply("2", json!({"app": "web", "tier": "1"})),
            ),
            // The target lost its label: the apply removes it from the Recommendation.
            ("label removed", apply("2", json!({}))),
        ] {
            assert!(!apply_changes_nothing(&changed, &live()), "{what}");
        }
    }

    #[test]
    fn no_labels_either_way_is_no_change() {
        let mut live = live();
        live["metadata"].as_object_mut().unwrap().remove("labels");
        assert!(apply_changes_nothing(&apply("3", json!({})), &live));
    }

    #[test]
    fn the_status_is_compared_without_its_timestamp() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let at = |s: i64| Some(Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap()));
        let live = RecommendationStatus {
            recommended_value: "v".into(),
            last_update_time: at(1),
            ..Default::default()
        };
        let next = RecommendationStatus {
            last_update_time: at(2),
            ..live.clone()
        };
        assert!(status_unchanged(&next, Some(&live)));
        let moved = RecommendationStatus {
            recommended_value: "w".into(),
            ..next.clone()
        };
        assert!(!status_unchanged(&moved, Some(&live)));
        assert!(!status_unchanged(&next, None));
    }

    #[test]
    fn a_lowered_run_number_is_told_from_a_skipped_write() {
        let crane = RunNumbers::new(false);
        assert!(crane.lowered("ns/r", 1, 2));
        assert!(!crane.lowered("ns/r", 2, 2));

        let runs = RunNumbers::new(true);
        // First sight (after a start or a takeover): taken as it is.
        assert!(!runs.lowered("ns/r", 1, 5));
        // Skipped in rounds 2 to 5: still 1, not lowered.
        assert!(!runs.lowered("ns/r", 1, 5));
        // Lowered by someone.
        assert!(runs.lowered("ns/r", 0, 5));
        // Written in round 6, then lowered to 3.
        runs.record("ns/r", 6);
        assert!(!runs.lowered("ns/r", 6, 6));
        assert!(runs.lowered("ns/r", 3, 6));
        runs.forget("ns/r");
        assert!(!runs.lowered("ns/r", 3, 6));
    }
}
