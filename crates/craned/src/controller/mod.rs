//! craned's controllers, one folder each, and what they share.
//!
//! * [`recommendation_rule`]: RecommendationRule in, Recommendations and `crane_*` gauges out.
//! * [`time_series_prediction`]: TimeSeriesPrediction in, predicted series in its status.
//! * [`effective_hpa`]: EffectiveHorizontalPodAutoscaler in, its HPA, TimeSeriesPrediction and
//!   (Preview) Substitute out.
//! * [`substitute`]: the Substitute a Preview EHPA's HPA scales instead of the workload.
//!
//! Shared by all of them: leader election ([`leader`]: one Lease, nothing is written unless
//! this replica leads), status writes ([`status_writes`]: on `/status`, or with the object on
//! Crane's CRDs that declare no status subresource), Events ([`events`]), the field manager
//! of every write ([`FIELD_MANAGER`]), and the reconcile telemetry
//! (`craned_reconcile_*{controller}`, [`crate::metrics::reconcile`]).

pub mod effective_hpa;
pub mod events;
pub mod leader;
pub mod recommendation_rule;
pub mod status_writes;
pub mod substitute;
pub mod time_series_prediction;

use std::fmt::Display;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::controller::Action;

use crate::metrics::reconcile::ReconcileMetrics;

pub use self::status_writes::{STATUS_FIELD_MANAGER, StatusWrites};

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "craned";

/// How long a non-leader waits before looking again.
const FOLLOWER_RECHECK: Duration = Duration::from_secs(5);

/// What every controller's reconcile error tells its error policy.
pub trait ReconcileError: Display {
    /// A short reason that does not change with the message (`reason` of
    /// `craned_reconcile_errors_total`).
    fn metric_label(&self) -> &'static str;
    /// A follower's "not the leader": expected, not worth a warning.
    fn is_not_leader(&self) -> bool;
}

/// `namespace/name` of a namespaced object, the name of a cluster-scoped one: how the error
/// policies name what failed.
pub fn object_key(object: &impl kube::ResourceExt) -> String {
    match object.namespace() {
        Some(ns) => format!("{ns}/{}", object.name_any()),
        None => object.name_any(),
    }
}

/// What every controller's error policy does with a failed reconcile of `object`: warns
/// (except a follower's "not the leader", which is expected), counts it by its label, and
/// retries after `retry` (a follower looks again sooner).
pub fn retry_failed(
    object: &str,
    error: &impl ReconcileError,
    metrics: &ReconcileMetrics,
    retry: Duration,
) -> Action {
    let not_leader = error.is_not_leader();
    if !not_leader {
        tracing::warn!(%object, %error, "reconcile failed");
    }
    metrics.error(error.metric_label());
    Action::requeue(if not_leader { FOLLOWER_RECHECK } else { retry })
}

/// Runs a controller's results to their end; failures were logged by the error policy.
pub async fn drain<T, E: Display>(results: impl Stream<Item = Result<T, E>>) {
    results
        .for_each(|r| {
            if let Err(e) = r {
                tracing::debug!(error = %e, "reconcile");
            }
            futures::future::ready(())
        })
        .await;
}
