//! The controller's loop: TSP changes, finished fits and leadership start a reconcile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use super::error::Error;
use super::models::{Fitting, Models};
use super::reconcile::{Context, reconcile};
use crate::controller::leader::LeaderState;
use crate::crd::prediction::TimeSeriesPrediction;
use crate::datasource::History;
use crate::metrics::reconcile::ReconcileMetrics;
use crate::prediction::accuracy::Scores;

/// How long a failed reconcile waits before it is retried.
const ERROR_RETRY: Duration = Duration::from_secs(30);

/// Inputs of [`run`].
pub struct Wiring {
    pub client: Client,
    pub history: History,
    pub leader: LeaderState,
    pub metrics: ReconcileMetrics,
    pub update_period: Duration,
    pub fitting: Fitting,
    /// Where each replaced prediction's score goes (exported by the autoscaling collector).
    pub scores: Arc<Scores>,
}

pub fn error_policy(tsp: Arc<TimeSeriesPrediction>, error: &Error, ctx: Arc<Context>) -> Action {
    use crate::controller::{object_key, retry_failed};
    retry_failed(&object_key(tsp.as_ref()), error, &ctx.metrics, ERROR_RETRY)
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    w: Wiring,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let api: Api<TimeSeriesPrediction> = Api::all(w.client.clone());
    let (models, finished) = Models::new(w.history.clone(), w.fitting);
    let fitted = futures::stream::unfold(finished, |mut rx| async move {
        let tsp = rx.recv().await?;
        Some((tsp, rx))
    });
    let controller = Controller::new(api, watcher::Config::default());
    let ctx = Arc::new(Context {
        client: w.client,
        models,
        leader: w.leader.clone(),
        metrics: w.metrics,
        update_period: w.update_period,
        store: controller.store(),
        written: Mutex::new(HashMap::new()),
        last_prune: Mutex::new(Instant::now()),
        history: w.history,
        predicted_from: Mutex::new(HashMap::new()),
        scores: w.scores,
    });
    crate::controller::drain(
        controller
            .reconcile_on(fitted)
            .reconcile_all_on(w.leader.changes())
            .graceful_shutdown_on(shutdown)
            .run(reconcile, error_policy, ctx),
    )
    .await;
}
