//! What every reconcile shares, and the Events it publishes.

use std::sync::Arc;

use ferrocrane_core::kube::SharedMapper;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::Store;
use tokio::sync::watch;

use super::execute::OomSource;
use super::leader::LeaderState;
use super::status_writes::StatusWrites;
use super::unchanged::RunNumbers;
use crate::crd::Recommendation;
use crate::datasource::History;
use crate::metrics::CraneMetrics;
use crate::metrics::reconcile::ReconcileMetrics;
use crate::recommender::RecommendationConfiguration;

/// Everything reconciles share.
pub struct Context {
    pub client: Client,
    pub config: watch::Receiver<Arc<RecommendationConfiguration>>,
    pub history: History,
    pub metrics: Arc<CraneMetrics>,
    /// craned's telemetry of the reconciles themselves.
    pub reconcile_metrics: ReconcileMetrics,
    pub recorder: Recorder,
    pub mapper: SharedMapper,
    /// craned's namespace: Recommendations of cluster-scoped targets.
    pub namespace: String,
    pub auto_adoption: bool,
    pub leader: LeaderState,
    pub oom: OomSource,
    /// Every Recommendation a rule owns (label `recommendation-rule-uid`).
    pub recommendations: Store<Recommendation>,
    /// Identities computed at once.
    pub concurrency: usize,
    /// On `/status`, or with the object on Crane's CRDs.
    pub status_writes: StatusWrites,
    /// Whether unchanged Recommendations are skipped, and the run-numbers that tells apart.
    pub run_numbers: RunNumbers,
}

impl Context {
    /// Publishes an Event while leading. Events explain; losing one is logged, not fatal.
    pub(super) async fn event(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        if !self.leader.is_leader() {
            return;
        }
        let ev = Event {
            type_,
            reason: reason.into(),
            note: Some(truncate(&note, 1000)),
            action: "Recommend".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, regarding).await {
            tracing::debug!(error = %e, "publishing an event failed");
        }
    }
}

/// The API server refuses Event notes over 1 kB.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_on_a_char_boundary() {
        let s = "é".repeat(600);
        let t = truncate(&s, 1000);
        assert!(t.len() <= 1003);
        assert!(t.ends_with('…'));
    }
}
