//! Why a reconcile failed, with the reason its error counter carries.

use super::targets::SelectError;

/// A reconcile's failure: returned ones are retried by the error policy; a Recommendation
/// status that could not be written is logged and counted, and the round goes on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("resource discovery: {0}")]
    Discovery(String),
    #[error(transparent)]
    Select(#[from] SelectError),
    #[error("deleting the orphan Recommendation {name}: {source}")]
    DeleteOrphan {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the Recommendation {name}: {source}")]
    WriteRecommendation {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the status of the Recommendation {name}: {source}")]
    WriteRecommendationStatus {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the status of the rule: {0}")]
    WriteRuleStatus(#[source] kube::Error),
    /// Removing [`super::RUN_ONCE_ANNOTATION`] after the round it asked for.
    #[error("removing the rule's run-once annotation: {0}")]
    ClearTrigger(#[source] kube::Error),
    #[error("lost leadership during the round")]
    NotLeader,
}

/// Every [`Error::metric_label`], so each series exists before its first error.
pub const METRIC_LABELS: &[&str] = &[
    "discovery",
    "select_targets",
    "delete_orphan",
    "write_recommendation",
    "write_recommendation_status",
    "write_rule_status",
    "clear_trigger",
    "not_leader",
];

impl crate::controller::ReconcileError for Error {
    fn is_not_leader(&self) -> bool {
        matches!(self, Error::NotLeader)
    }

    fn metric_label(&self) -> &'static str {
        match self {
            Error::Discovery(_) => "discovery",
            Error::Select(_) => "select_targets",
            Error::DeleteOrphan { .. } => "delete_orphan",
            Error::WriteRecommendation { .. } => "write_recommendation",
            Error::WriteRecommendationStatus { .. } => "write_recommendation_status",
            Error::WriteRuleStatus(_) => "write_rule_status",
            Error::ClearTrigger(_) => "clear_trigger",
            Error::NotLeader => "not_leader",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::controller::ReconcileError;

    /// A rejected write, as the API server answers a conflict.
    pub(crate) fn conflict() -> kube::Error {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 409, "reason": "Conflict",
            "message": "the object has been modified"
        }))
        .unwrap();
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn every_error_has_a_stable_listed_label() {
        let name = || "ns/r".to_string();
        let cases = [
            (Error::Discovery("down".into()), "discovery"),
            (Error::Select(SelectError::NoNamespaces), "select_targets"),
            (
                Error::DeleteOrphan {
                    name: name(),
                    source: conflict(),
                },
                "delete_orphan",
            ),
            (
                Error::WriteRecommendation {
                    name: name(),
                    source: conflict(),
                },
                "write_recommendation",
            ),
            (
                Error::WriteRecommendationStatus {
                    name: name(),
                    source: conflict(),
                },
                "write_recommendation_status",
            ),
            (Error::WriteRuleStatus(conflict()), "write_rule_status"),
            (Error::ClearTrigger(conflict()), "clear_trigger"),
            (Error::NotLeader, "not_leader"),
        ];
        assert_eq!(cases.len(), METRIC_LABELS.len());
        for (error, label) in &cases {
            assert_eq!(error.metric_label(), *label, "{error}");
            assert!(METRIC_LABELS.contains(label), "{label} is not listed");
        }
        let unique: std::collections::BTreeSet<&str> = METRIC_LABELS.iter().copied().collect();
        assert_eq!(unique.len(), METRIC_LABELS.len());
        // The message keeps the detail the label leaves out.
        let e = Error::WriteRecommendationStatus {
            name: name(),
            source: conflict(),
        };
        assert!(e.to_string().contains("ns/r"), "{e}");
        assert!(e.to_string().contains("modified"), "{e}");
    }
}
