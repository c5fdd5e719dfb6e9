//! The controller's loop: EHPA changes, and changes of the HPA, TimeSeriesPrediction and
//! Substitute it owns, start a reconcile.

use std::sync::Arc;
use std::time::Duration;

use ferrocrane_core::kube::SharedMapper;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::Client;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use super::error::Error;
use super::reconcile::{Context, reconcile};
use crate::controller::events::Events;
use crate::controller::leader::LeaderState;
use crate::crd::autoscaling::{EffectiveHorizontalPodAutoscaler, Substitute};
use crate::crd::prediction::TimeSeriesPrediction;
use crate::metrics::reconcile::ReconcileMetrics;
use ferrocrane_autoscaling::cron::DefaultZone;

/// A failed step is tried again this soon (Crane: controller-runtime's backoff).
const ERROR_RETRY: Duration = Duration::from_secs(15);

/// Inputs of [`run`].
pub struct Wiring {
    pub client: Client,
    pub leader: LeaderState,
    pub metrics: ReconcileMetrics,
    pub mapper: SharedMapper,
    pub identity: String,
    pub zone: DefaultZone,
}

pub fn error_policy(
    ehpa: Arc<EffectiveHorizontalPodAutoscaler>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    use crate::controller::{object_key, retry_failed};
    retry_failed(&object_key(ehpa.as_ref()), error, &ctx.metrics, ERROR_RETRY)
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    w: Wiring,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let config = watcher::Config::default();
    let ctx = Arc::new(Context {
        events: Events::new(w.client.clone(), w.identity, w.leader.clone(), "Scale"),
        client: w.client.clone(),
        leader: w.leader.clone(),
        metrics: w.metrics,
        mapper: w.mapper,
        zone: w.zone,
    });
    crate::controller::drain(
        Controller::new(
            Api::<EffectiveHorizontalPodAutoscaler>::all(w.client.clone()),
            config.clone(),
        )
        .owns(
            Api::<HorizontalPodAutoscaler>::all(w.client.clone()),
            config.clone(),
        )
        .owns(
            Api::<TimeSeriesPrediction>::all(w.client.clone()),
            config.clone(),
        )
        .owns(Api::<Substitute>::all(w.client.clone()), config)
        .reconcile_all_on(w.leader.changes())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx),
    )
    .await;
}
