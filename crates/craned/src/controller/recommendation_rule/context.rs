//! What every reconcile of a rule shares.

use std::sync::Arc;

use ferrocrane_core::kube::SharedMapper;
use kube::Client;
use kube::runtime::reflector::Store;
use tokio::sync::watch;

use super::execute::OomSource;
use super::unchanged::RunNumbers;
use crate::controller::events::Events;
use crate::controller::leader::LeaderState;
use crate::controller::status_writes::StatusWrites;
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
    pub events: Events,
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
