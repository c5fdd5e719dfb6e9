//! One TimeSeriesPrediction: its status is left alone while it still serves the next window,
//! otherwise rebuilt from the metrics' models (asking for the fits it lacks) and written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::algorithm::ModelConfig;
use super::error::Error;
use super::models::{Ask, Models};
use super::query::promql;
use super::status::{Outcome, build, is_current};
use crate::controller::StatusWrites;
use crate::controller::leader::LeaderState;
use crate::crd::prediction::{PredictionMetric, TimeSeriesPrediction};
use crate::metrics::reconcile::ReconcileMetrics;

/// Everything reconciles share.
pub struct Context {
    pub client: Client,
    pub models: Arc<Models>,
    pub leader: LeaderState,
    pub metrics: ReconcileMetrics,
    /// How often a TSP is looked at (Crane's `--prediction-update-frequency-duration`).
    pub update_period: Duration,
    /// The TSPs the controller knows, to forget the models of deleted ones.
    pub store: Store<TimeSeriesPrediction>,
    /// The generation each TSP's status was last written for: a spec change rebuilds it.
    pub written: Mutex<HashMap<String, i64>>,
    pub last_prune: Mutex<Instant>,
}

/// Deleted TSPs' models are dropped at most this often.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

impl Context {
    fn prune(&self) {
        let mut last = self.last_prune.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() < PRUNE_EVERY {
            return;
        }
        *last = Instant::now();
        let live: Vec<String> = self
            .store
            .state()
            .iter()
            .filter_map(|t| t.metadata.uid.clone())
            .collect();
        self.models.retain(|uid| live.iter().any(|l| l == uid));
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|uid, _| live.iter().any(|l| l == uid));
    }
}

pub async fn reconcile(tsp: Arc<TimeSeriesPrediction>, ctx: Arc<Context>) -> Result<Action, Error> {
    let _timer = ctx.metrics.start();
    if !ctx.leader.is_leader() {
        return Err(Error::NotLeader);
    }
    ctx.prune();
    let name = tsp.name_any();
    let namespace = tsp.namespace().unwrap_or_default();
    let uid = tsp.metadata.uid.clone().unwrap_or_default();
    let generation = tsp.metadata.generation.unwrap_or_default();
    let now = Timestamp::now();
    let now_secs = now.as_second();
    let window = i64::from(tsp.spec.prediction_window_seconds);
    let ids: Vec<&str> = tsp
        .spec
        .prediction_metrics
        .iter()
        .map(|m| m.resource_identifier.as_str())
        .collect();
    let spec_changed = ctx
        .written
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&uid)
        .is_some_and(|g| *g != generation);
    let previous = tsp.status.as_ref().filter(|_| !spec_changed);
    if previous.is_some_and(|s| is_current(s, &ids, now_secs, window)) {
        return Ok(Action::requeue(ctx.update_period));
    }
    let tsp_ref = ObjectRef::from_obj(tsp.as_ref());
    let outcomes: Vec<(String, Outcome)> = tsp
        .spec
        .prediction_metrics
        .iter()
        .map(|m| {
            let outcome = if window <= 0 {
                Outcome::Failed("predictionWindowSeconds must be positive".into())
            } else {
                outcome_of(m, &tsp, &namespace, &uid, tsp_ref.clone(), &ctx.models)
            };
            (m.resource_identifier.clone(), outcome)
        })
        .collect();
    let status = build(&outcomes, now_secs, window, previous, Time(now));
    if tsp.status.as_ref() != Some(&status) {
        let api: Api<TimeSeriesPrediction> = Api::namespaced(ctx.client.clone(), &namespace);
        if !ctx.leader.is_leader() {
            return Err(Error::NotLeader);
        }
        StatusWrites::Subresource
            .apply(&api, &name, &json!(status))
            .await
            .map_err(|source| Error::WriteStatus {
                name: format!("{namespace}/{name}"),
                source,
            })?;
    }
    ctx.written
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(uid, generation);
    Ok(Action::requeue(ctx.update_period))
}

/// A metric's query and model, then what the models know of it.
fn outcome_of(
    metric: &PredictionMetric,
    tsp: &TimeSeriesPrediction,
    namespace: &str,
    uid: &str,
    tsp_ref: ObjectRef<TimeSeriesPrediction>,
    models: &Arc<Models>,
) -> Outcome {
    let target = &tsp.spec.target_ref;
    let target_namespace = target.namespace.as_deref().unwrap_or(namespace);
    let query = match promql(
        metric,
        target_namespace,
        target.kind.as_deref().unwrap_or_default(),
        target.name.as_deref().unwrap_or_default(),
    ) {
        Ok(q) => q,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let config = match ModelConfig::from_api(&metric.algorithm) {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    models.outcome(Ask {
        tsp: tsp_ref,
        uid,
        id: &metric.resource_identifier,
        query,
        config,
    })
}
