//! One TimeSeriesPrediction: its status is left alone while it still serves the next window,
//! otherwise rebuilt from the metrics' models (asking for the fits it lacks) and written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

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
use crate::crd::prediction::{PredictionMetric, TimeSeriesPrediction, TimeSeriesPredictionStatus};
use crate::datasource::History;
use crate::metrics::reconcile::ReconcileMetrics;
use crate::prediction::accuracy::{Scores, score};

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
    /// For scoring a status when it is replaced: the history, and by (uid, id) the query and
    /// step each written prediction was made from (a changed query is not scored).
    pub history: History,
    pub predicted_from: Mutex<HashMap<(String, String), (String, i64)>>,
    pub scores: Arc<Scores>,
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
        self.predicted_from
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(uid, _), _| live.iter().any(|l| l == uid));
        self.scores.retain(|uid| live.iter().any(|l| l == uid));
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
    let questions: Vec<Result<(String, ModelConfig), String>> = tsp
        .spec
        .prediction_metrics
        .iter()
        .map(|m| question(m, &tsp, &namespace))
        .collect();
    if let Some(replaced) = tsp.status.as_ref() {
        score_replaced(&ctx, &tsp, &uid, replaced, &questions, now_secs);
    }
    let outcomes: Vec<(String, Outcome)> = tsp
        .spec
        .prediction_metrics
        .iter()
        .zip(&questions)
        .map(|(m, q)| {
            let outcome = match q {
                _ if window <= 0 => {
                    Outcome::Failed("predictionWindowSeconds must be positive".into())
                }
                Err(why) => Outcome::Failed(why.clone()),
                Ok((query, config)) => ctx.models.outcome(Ask {
                    tsp: tsp_ref.clone(),
                    uid: &uid,
                    id: &m.resource_identifier,
                    query: query.clone(),
                    config: config.clone(),
                }),
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
    {
        let mut from = ctx.predicted_from.lock().unwrap_or_else(|e| e.into_inner());
        for (m, q) in tsp.spec.prediction_metrics.iter().zip(&questions) {
            let key = (uid.clone(), m.resource_identifier.clone());
            match q {
                Ok((query, config)) => {
                    from.insert(key, (query.clone(), config.step_secs()));
                }
                Err(_) => {
                    from.remove(&key);
                }
            }
        }
    }
    ctx.written
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(uid, generation);
    Ok(Action::requeue(ctx.update_period))
}

/// Scores, in the background, each metric of a status about to be replaced whose query is
/// still the one it was predicted from: its predicted samples now past against the query's
/// values at the same instants.
fn score_replaced(
    ctx: &Arc<Context>,
    tsp: &TimeSeriesPrediction,
    uid: &str,
    replaced: &TimeSeriesPredictionStatus,
    questions: &[Result<(String, ModelConfig), String>],
    now: i64,
) {
    let namespace = tsp.namespace().unwrap_or_default();
    let name = tsp.name_any();
    for (m, q) in tsp.spec.prediction_metrics.iter().zip(questions) {
        let id = &m.resource_identifier;
        let Ok((query, _)) = q else { continue };
        let Some((from_query, step)) = ctx
            .predicted_from
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(uid.to_owned(), id.clone()))
            .cloned()
        else {
            continue;
        };
        if &from_query != query {
            continue;
        }
        let Some(predicted) = replaced
            .prediction_metrics
            .iter()
            .find(|p| &p.resource_identifier == id)
            .map(|p| p.prediction.clone())
        else {
            continue;
        };
        let Some(first) = predicted
            .iter()
            .flat_map(|s| &s.samples)
            .map(|s| s.timestamp)
            .filter(|t| *t <= now)
            .min()
        else {
            continue;
        };
        let ctx = Arc::clone(ctx);
        let (namespace, name, id, uid) =
            (namespace.clone(), name.clone(), id.clone(), uid.to_owned());
        tokio::spawn(async move {
            let at = |secs: i64| UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0));
            let step = Duration::from_secs(u64::try_from(step).unwrap_or(60).max(1));
            let actual = tokio::time::timeout(
                SCORE_DEADLINE,
                ctx.history.range(&from_query, at(first), at(now), step),
            )
            .await;
            match actual {
                Ok(Ok(actual)) => {
                    if let Some(score) = score(&predicted, &actual, now) {
                        ctx.scores.record(&namespace, &name, &id, &uid, score);
                    }
                }
                Ok(Err(error)) => {
                    tracing::debug!(%error, tsp = %format!("{namespace}/{name}"), %id, "scoring the prediction")
                }
                Err(_) => {
                    tracing::debug!(tsp = %format!("{namespace}/{name}"), %id, "scoring the prediction timed out")
                }
            }
        });
    }
}

/// How long scoring one replaced prediction may take.
const SCORE_DEADLINE: Duration = Duration::from_secs(60);

/// A metric's query and model configuration.
fn question(
    metric: &PredictionMetric,
    tsp: &TimeSeriesPrediction,
    namespace: &str,
) -> Result<(String, ModelConfig), String> {
    let target = &tsp.spec.target_ref;
    let target_namespace = target.namespace.as_deref().unwrap_or(namespace);
    let query = promql(
        metric,
        target_namespace,
        target.kind.as_deref().unwrap_or_default(),
        target.name.as_deref().unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    let config = ModelConfig::from_api(&metric.algorithm).map_err(|e| e.to_string())?;
    Ok((query, config))
}
