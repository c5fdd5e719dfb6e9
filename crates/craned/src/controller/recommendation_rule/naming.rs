//! What a Recommendation is called and how it is labelled (pure).
//!
//! Crane creates Recommendations with `generateName: <rule>-<recommender>-` and finds them again
//! by labels. Server-side apply needs the name up front, so craned derives the random-looking
//! suffix from the target (same five-character alphabet as `generateName`); an existing
//! Recommendation of the same rule, target and recommender (one Crane created, say) keeps its
//! name, because the controller looks it up by its target first.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{Resource, ResourceExt};

use crate::crd::{Recommendation, RecommendationMission, RecommenderRef, known};

/// A target and the recommender that looks at it: one Recommendation each.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdentityKey {
    pub kind: String,
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    pub recommender: String,
}

impl IdentityKey {
    pub fn target_ref(&self) -> ObjectReference {
        ObjectReference {
            kind: Some(self.kind.clone()),
            api_version: Some(self.api_version.clone()),
            namespace: (!self.namespace.is_empty()).then(|| self.namespace.clone()),
            name: Some(self.name.clone()),
            ..Default::default()
        }
    }

    /// The key of a Recommendation's `spec.targetRef` and `spec.type`.
    pub fn of_target(target: &ObjectReference, recommender: &str) -> Self {
        IdentityKey {
            kind: target.kind.clone().unwrap_or_default(),
            api_version: target.api_version.clone().unwrap_or_default(),
            namespace: target.namespace.clone().unwrap_or_default(),
            name: target.name.clone().unwrap_or_default(),
            recommender: recommender.to_string(),
        }
    }
}

/// Kubernetes' `generateName` alphabet (no vowels, no look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// FNV-1a: stable across Rust versions and platforms, unlike `DefaultHasher`.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// `<rule>-<recommender lowercased>-<5 chars from the target>`, at most 253 characters.
pub fn recommendation_name(rule: &str, id: &IdentityKey) -> String {
    let mut h = fnv1a(&[&id.kind, &id.api_version, &id.namespace, &id.name]);
    let mut suffix = String::with_capacity(5);
    for _ in 0..5 {
        // The remainder is below the alphabet's length.
        let i = usize::try_from(h % ALPHABET.len() as u64).unwrap_or(0);
        suffix.push(char::from(ALPHABET[i]));
        h /= ALPHABET.len() as u64;
    }
    let recommender = id.recommender.to_ascii_lowercase();
    let fixed = recommender.len() + suffix.len() + 2;
    let rule: String = rule.chars().take(253usize.saturating_sub(fixed)).collect();
    format!("{rule}-{recommender}-{suffix}")
}

/// Where the Recommendation of a target lives: the target's namespace, or craned's own for
/// cluster-scoped targets (Crane: `crane-system`).
pub fn recommendation_namespace<'a>(id: &'a IdentityKey, own: &'a str) -> &'a str {
    if id.namespace.is_empty() {
        own
    } else {
        &id.namespace
    }
}

/// The version part of an apiVersion (`apps/v1` → `v1`), as `GroupVersionKind().Version`.
pub fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// Crane's labels: the target's own labels, then the rule/target labels (which win, so the
/// controller can always find its Recommendations).
pub fn recommendation_labels(
    rule_name: &str,
    rule_uid: &str,
    id: &IdentityKey,
    target_labels: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = target_labels
        .iter()
        .filter(|(k, v)| is_label_key(k) && is_label_value(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut put = |k: &str, v: &str| {
        // A value that is not a valid label value (a long name) is left out rather than
        // making the whole apply fail.
        if is_label_value(v) {
            labels.insert(k.to_string(), v.to_string());
        }
    };
    put(known::RECOMMENDATION_RULE_NAME_LABEL, rule_name);
    put(known::RECOMMENDATION_RULE_UID_LABEL, rule_uid);
    put(
        known::RECOMMENDATION_RULE_RECOMMENDER_LABEL,
        &id.recommender,
    );
    put(known::RECOMMENDATION_TARGET_KIND_LABEL, &id.kind);
    put(
        known::RECOMMENDATION_TARGET_VERSION_LABEL,
        version_of(&id.api_version),
    );
    put(known::RECOMMENDATION_TARGET_NAME_LABEL, &id.name);
    put(known::RECOMMENDATION_TARGET_NAMESPACE_LABEL, &id.namespace);
    labels
}

fn is_label_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && v.chars().next().is_none_or(|c| c.is_ascii_alphanumeric())
        && v.chars().last().is_none_or(|c| c.is_ascii_alphanumeric())
}

fn is_label_key(k: &str) -> bool {
    let name = k.rsplit('/').next().unwrap_or(k);
    !name.is_empty() && is_label_value(name)
}

/// Crane's `last-start-time` annotation format: `2006-01-02 15:04:05` in UTC.
pub fn format_start_time(t: k8s_openapi::jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

/// How the `crane_*` series key a Recommendation.
pub fn rec_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// A rule's `status.recommendations` entry for a Recommendation.
pub fn mission_of(
    rec: &Recommendation,
    key: &IdentityKey,
    message: Option<String>,
) -> RecommendationMission {
    RecommendationMission {
        api_version: Recommendation::api_version(&()).into_owned(),
        kind: Recommendation::kind(&()).into_owned(),
        name: rec.name_any(),
        namespace: rec.namespace().unwrap_or_default(),
        uid: rec.uid().unwrap_or_default(),
        target_ref: key.target_ref(),
        last_start_time: rec.status.as_ref().and_then(|s| s.last_update_time.clone()),
        message: message.unwrap_or_else(|| {
            rec.annotations()
                .get(known::MESSAGE_ANNOTATION)
                .cloned()
                .unwrap_or_default()
        }),
        recommender_ref: RecommenderRef {
            name: key.recommender.clone(),
            config: BTreeMap::new(),
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> IdentityKey {
        IdentityKey {
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            namespace: "prod".into(),
            name: "web".into(),
            recommender: "Resource".into(),
        }
    }

    #[test]
    fn names_are_stable_and_distinct() {
        let a = recommendation_name("rule", &id());
        assert!(a.starts_with("rule-resource-"), "{a}");
        assert_eq!(a.len(), "rule-resource-".len() + 5);
        assert_eq!(a, recommendation_name("rule", &id()));
        let mut other = id();
        other.name = "api".into();
        assert_ne!(a, recommendation_name("rule", &other));
        let long = "r".repeat(300);
        assert_eq!(recommendation_name(&long, &id()).len(), 253);
    }

    #[test]
    fn labels_are_cranes() {
        let target: BTreeMap<String, String> = [
            ("app".to_string(), "web".to_string()),
            (
                known::RECOMMENDATION_RULE_NAME_LABEL.to_string(),
                "spoof".to_string(),
            ),
        ]
        .into();
        let l = recommendation_labels("rule", "uid-1", &id(), &target);
        assert_eq!(l["app"], "web");
        assert_eq!(l[known::RECOMMENDATION_RULE_NAME_LABEL], "rule");
        assert_eq!(l[known::RECOMMENDATION_RULE_UID_LABEL], "uid-1");
        assert_eq!(l[known::RECOMMENDATION_RULE_RECOMMENDER_LABEL], "Resource");
        assert_eq!(l[known::RECOMMENDATION_TARGET_KIND_LABEL], "Deployment");
        assert_eq!(l[known::RECOMMENDATION_TARGET_VERSION_LABEL], "v1");
        assert_eq!(l[known::RECOMMENDATION_TARGET_NAME_LABEL], "web");
        assert_eq!(l[known::RECOMMENDATION_TARGET_NAMESPACE_LABEL], "prod");
        assert_eq!(version_of("v1"), "v1");
    }

    #[test]
    fn cluster_scoped_targets_live_in_our_namespace() {
        let mut node = id();
        node.namespace.clear();
        assert_eq!(
            recommendation_namespace(&node, "crane-system"),
            "crane-system"
        );
        assert_eq!(recommendation_namespace(&id(), "crane-system"), "prod");
        assert_eq!(node.target_ref().namespace, None);
    }

    #[test]
    fn start_time_format() {
        let t: k8s_openapi::jiff::Timestamp = "2024-03-01T10:20:30Z".parse().unwrap();
        assert_eq!(format_start_time(t), "2024-03-01 10:20:30");
    }
}
