//! Why an EHPA reconcile failed, with the reason its error counter carries. A step that
//! failed is also written in the EHPA's `Ready` condition, with Crane's reason.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A step failed (its reason and message are in the status).
    #[error("{0}")]
    Step(String),
    #[error("writing {what}: {source}")]
    Write {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("not the leader")]
    NotLeader,
}

/// Every [`Error::metric_label`], so each series exists before its first error.
pub const METRIC_LABELS: &[&str] = &["step", "write_status", "not_leader"];

impl crate::controller::ReconcileError for Error {
    fn metric_label(&self) -> &'static str {
        match self {
            Error::Step(_) => "step",
            Error::Write { .. } => "write_status",
            Error::NotLeader => "not_leader",
        }
    }

    fn is_not_leader(&self) -> bool {
        matches!(self, Error::NotLeader)
    }
}
