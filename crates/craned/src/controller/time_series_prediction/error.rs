//! Why a TimeSeriesPrediction reconcile failed, with the reason its error counter carries.
//! What a metric cannot do (its query, its model) is not an error here: it is written in the
//! TSP's status, and the reconcile succeeds.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing the status of {name}: {source}")]
    WriteStatus {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("not the leader")]
    NotLeader,
}

/// Every [`Error::metric_label`], so each series exists before its first error.
pub const METRIC_LABELS: &[&str] = &["write_status", "not_leader"];

impl crate::controller::ReconcileError for Error {
    fn metric_label(&self) -> &'static str {
        match self {
            Error::WriteStatus { .. } => "write_status",
            Error::NotLeader => "not_leader",
        }
    }

    fn is_not_leader(&self) -> bool {
        matches!(self, Error::NotLeader)
    }
}
