//! A round's identities: each computed, written as a Recommendation (spec, then status),
//! adopted, and shown in the `crane_*` series. A failing identity never stops the others.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;

use futures::{StreamExt, stream};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use serde_json::json;
use tokio::sync::OnceCell;

use super::context::Context;
use super::error::Error;
use super::execute::{self, TargetRun};
use super::naming::{self, IdentityKey, mission_of, rec_key};
use super::status::{self, RunError, to_system};
use super::targets::Target;
use super::{adoption, unchanged};
use crate::controller::FIELD_MANAGER;
use crate::crd::{
    Recommendation, RecommendationMission, RecommendationRule, RecommendationStatus, known,
    recommenders,
};
use crate::metrics::TargetLabels;
use crate::metrics::reconcile::ReconcileMetrics;
use crate::recommender::RecommendationConfiguration;

/// What every identity of a round shares.
pub(super) struct Round<'a> {
    pub rule: &'a RecommendationRule,
    pub ctx: &'a Context,
    pub config: &'a RecommendationConfiguration,
    pub existing: &'a BTreeMap<IdentityKey, Arc<Recommendation>>,
    /// Identities written even when unchanged: their run-number was lowered to ask for it.
    pub rewrite: &'a BTreeSet<IdentityKey>,
    pub run_number: i32,
    pub now: Timestamp,
}

/// Runs the given identities, grouped per target so each target's history is read once,
/// at most `ctx.concurrency` targets at a time.
pub(super) async fn run_identities(
    round: &Round<'_>,
    targets: &[Target],
    todo: &[&(usize, IdentityKey)],
) -> Result<Vec<(IdentityKey, RecommendationMission)>, Error> {
    let (rule, ctx, config, now) = (round.rule, round.ctx, round.config, round.now);
    let mut per_target: BTreeMap<usize, Vec<IdentityKey>> = BTreeMap::new();
    for (i, k) in todo {
        per_target.entry(*i).or_default().push(k.clone());
    }
    let resource_cfg = config.merged(recommenders::RESOURCE, &rule.spec);
    let (history_length, step) = execute::history_window(resource_cfg.as_ref());
    let results: Vec<Result<Vec<(IdentityKey, RecommendationMission)>, Error>> =
        stream::iter(per_target)
            .map(|(i, keys)| {
                let target = &targets[i];
                async move {
                    let run = TargetRun {
                        client: &ctx.client,
                        history: &ctx.history,
                        target,
                        oom: &ctx.oom,
                        now: to_system(now),
                        cache: OnceCell::new(),
                        forecast: OnceCell::new(),
                        history_length,
                        step,
                    };
                    let mut out = Vec::new();
                    for key in keys {
                        let m = run_one(round, &run, &key).await?;
                        out.push((key, m));
                    }
                    Ok(out)
                }
            })
            .buffer_unordered(ctx.concurrency.max(1))
            .collect()
            .await;
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// Runs one recommender on one target, turning a panic into that target's failure: one bad
/// input must not end the round for every other target, nor the process.
async fn unwind_to_error<T>(
    run: impl std::future::Future<Output = Result<T, RunError>>,
) -> Result<T, RunError> {
    use futures::FutureExt as _;
    match std::panic::AssertUnwindSafe(run).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            tracing::error!(%message, "recommender panicked");
            Err(RunError::Panicked(message))
        }
    }
}

fn target_labels(id: &IdentityKey) -> TargetLabels {
    TargetLabels {
        api_version: id.api_version.clone(),
        kind: id.kind.clone(),
        namespace: id.namespace.clone(),
        name: id.name.clone(),
        recommender: id.recommender.clone(),
    }
}

/// One identity: compute, write the Recommendation and its status, adopt, record metrics.
async fn run_one(
    round: &Round<'_>,
    run: &TargetRun<'_>,
    key: &IdentityKey,
) -> Result<RecommendationMission, Error> {
    let (rule, ctx, config, now) = (round.rule, round.ctx, round.config, round.now);
    let outcome = match config.merged(&key.recommender, &rule.spec) {
        Some(cfg) => unwind_to_error(run.run(&key.recommender, &cfg)).await,
        None => Err(RunError::NotConfigured(format!(
            "recommender {} is not in the recommendation configuration",
            key.recommender
        ))),
    };
    let message = match &outcome {
        Ok(_) => "Success".to_string(),
        Err(e) => format!(
            "Failed to run recommendation flow in recommender {}: {e}",
            key.recommender
        ),
    };

    let namespace = naming::recommendation_namespace(key, &ctx.namespace).to_string();
    // An existing Recommendation (possibly created by Crane, with a generated name) keeps its name.
    let existing = round.existing.get(key);
    let name = existing
        .as_ref()
        .map(|r| r.name_any())
        .unwrap_or_else(|| naming::recommendation_name(&rule.name_any(), key));
    let apply = recommendation_apply(round, run.target, key, &name, &namespace, message);
    let proposal = match &outcome {
        Ok(o) => Ok(o.proposal.clone()),
        Err(e) => Err(clone_err(e)),
    };
    let new_status = status::next_status(
        existing.as_ref().and_then(|r| r.status.as_ref()),
        &key.recommender,
        &proposal,
        now,
    );
    if !ctx.leader.is_leader() {
        return Err(Error::NotLeader);
    }
    let rk = rec_key(&namespace, &name);
    let unchanged = existing.filter(|live| {
        ctx.run_numbers.skips_unchanged()
            && !round.rewrite.contains(key)
            && is_unchanged(&apply, &new_status, live, now)
    });
    let written = match unchanged {
        Some(live) => {
            ctx.reconcile_metrics.unchanged();
            ctx.run_numbers.record(&rk, unchanged::run_number_of(live));
            Recommendation::clone(live)
        }
        None => {
            let api: Api<Recommendation> = Api::namespaced(ctx.client.clone(), &namespace);
            let pp = PatchParams::apply(FIELD_MANAGER).force();
            let written = api
                .patch(&name, &pp, &Patch::Apply(&apply))
                .await
                .map_err(|source| Error::WriteRecommendation {
                    name: rk.clone(),
                    source,
                })?;
            ctx.run_numbers.record(&rk, round.run_number);
            let status_value = json!(new_status);
            write_status(
                || ctx.status_writes.apply(&api, &name, &status_value),
                written,
                &rk,
                &ctx.reconcile_metrics,
            )
            .await
        }
    };
    // What an unchanged Recommendation would say again (a failure, adoption turned off) was
    // said when it changed.
    let news = unchanged.is_none();

    let labels = target_labels(key);
    ctx.metrics.executed(&rk, &labels);
    ctx.metrics
        .set_status(&rk, &labels, to_system(now), status::is_ready(&new_status));
    match &outcome {
        Ok(out) if status::is_ready(&new_status) => {
            if key.recommender == recommenders::RESOURCE {
                ctx.metrics.set_resources(&rk, &labels, &out.resources);
            }
            if let Some(r) = out.replicas {
                ctx.metrics.set_replicas(&rk, &labels, f64::from(r));
            }
            adopt(ctx, run.target, key, &written, &new_status, news).await;
        }
        Ok(_) => {}
        Err(e) if news => {
            ctx.events
                .publish(
                    &written.object_ref(&()),
                    EventType::Warning,
                    status::failure_reason(e),
                    e.to_string(),
                )
                .await;
        }
        Err(_) => {}
    }
    Ok(mission_of(&written, key, None))
}

/// Whether writing this round's Recommendation would change nothing but its run-number and
/// timestamps. One whose status asks for a retry is always written: the retry's backoff is
/// timed from `status.lastUpdateTime`.
fn is_unchanged(
    apply: &serde_json::Value,
    next: &RecommendationStatus,
    live: &Recommendation,
    now: Timestamp,
) -> bool {
    status::prometheus_retry_in(next, now).is_none()
        && unchanged::status_unchanged(next, live.status.as_ref())
        && serde_json::to_value(live)
            .is_ok_and(|live| unchanged::apply_changes_nothing(apply, &live))
}

/// The server-side apply of a Recommendation's metadata and spec.
fn recommendation_apply(
    round: &Round<'_>,
    target: &Target,
    key: &IdentityKey,
    name: &str,
    namespace: &str,
    message: String,
) -> serde_json::Value {
    let rule = round.rule;
    let labels = naming::recommendation_labels(
        &rule.name_any(),
        &rule.uid().unwrap_or_default(),
        key,
        &target.labels(),
    );
    let owner = rule.controller_owner_ref(&()).map(|mut o| {
        o.controller = Some(false);
        o.block_owner_deletion = Some(false);
        o
    });
    json!({
        "apiVersion": Recommendation::api_version(&()),
        "kind": Recommendation::kind(&()),
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                known::RUN_NUMBER_ANNOTATION: round.run_number.to_string(),
                known::MESSAGE_ANNOTATION: message,
                known::LAST_START_TIME_ANNOTATION: naming::format_start_time(round.now),
            },
            "ownerReferences": owner.into_iter().collect::<Vec<_>>(),
        },
        "spec": {
            "targetRef": key.target_ref(),
            "type": key.recommender,
        },
    })
}

/// Writes a Recommendation's status with `write`. A failure does not stop the round (the
/// spec is written; the next round writes the status again) but is logged and counted under
/// `write_recommendation_status`; the object as the spec apply returned it stands in.
async fn write_status<W, F>(
    write: W,
    spec_written: Recommendation,
    key: &str,
    metrics: &ReconcileMetrics,
) -> Recommendation
where
    W: FnOnce() -> F,
    F: Future<Output = Result<Recommendation, kube::Error>>,
{
    match write().await {
        Ok(written) => written,
        Err(source) => {
            let error = Error::WriteRecommendationStatus {
                name: key.to_string(),
                source,
            };
            tracing::warn!(%error, "the next round writes it again");
            metrics.error(crate::controller::ReconcileError::metric_label(&error));
            spec_written
        }
    }
}

/// Applies a ready Recommendation to its target and says what happened in an Event.
async fn adopt(
    ctx: &Context,
    target: &Target,
    key: &IdentityKey,
    written: &Recommendation,
    status: &RecommendationStatus,
    news: bool,
) {
    let adopted = adoption::adopt(
        &ctx.client,
        target,
        &key.recommender,
        written.spec.adoption_type,
        status,
        ctx.auto_adoption,
    )
    .await;
    let event = match adopted {
        Ok(adoption::Adopted::AutoDisabled) if news => Some((
            EventType::Warning,
            "AutoAdoptionDisabled",
            "adoptionType is Auto but craned runs without --auto-adoption; the target was only annotated".to_string(),
        )),
        Ok(adoption::Adopted::Patched) => Some((
            EventType::Normal,
            "UpdateValue",
            format!("patched {} {} with the recommendation", key.kind, key.name),
        )),
        Ok(_) => None,
        Err(e) => Some((
            EventType::Warning,
            "FailedAdoptRecommendation",
            format!("adopting on {} {}: {e}", key.kind, key.name),
        )),
    };
    if let Some((type_, reason, note)) = event {
        ctx.events
            .publish(&written.object_ref(&()), type_, reason, note)
            .await;
    }
}

fn clone_err(e: &RunError) -> RunError {
    match e {
        RunError::Recommend(r) => RunError::Recommend(r.clone()),
        RunError::DataSource(s) => RunError::DataSource(s.clone()),
        RunError::Target(s) => RunError::Target(s.clone()),
        RunError::NotConfigured(s) => RunError::NotConfigured(s.clone()),
        RunError::Panicked(s) => RunError::Panicked(s.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::recommendation_rule::error::tests::conflict;
    use crate::crd::RecommendationSpec;

    fn recommendation(value: &str) -> Recommendation {
        let mut r = Recommendation::new("r", RecommendationSpec::default());
        r.status = Some(RecommendationStatus {
            recommended_value: value.into(),
            ..Default::default()
        });
        r
    }

    /// The status write fails with a conflict (injected), then succeeds.
    #[tokio::test]
    async fn a_failed_status_write_is_counted_and_the_spec_write_stands_in() {
        let m = ReconcileMetrics::standalone(crate::controller::recommendation_rule::NAME, &[])
            .unwrap();
        let results = [Err(conflict()), Ok(recommendation("status"))];
        let mut kept = Vec::new();
        for result in results {
            let written = write_status(|| async { result }, recommendation("spec"), "ns/r", &m);
            kept.push(written.await.status);
        }
        assert_eq!(
            kept,
            vec![
                recommendation("spec").status,
                recommendation("status").status
            ]
        );
        assert_eq!(m.errors("write_recommendation_status"), 1);
    }

    /// Issue 13: a panic inside one target's run is that target's failure.
    #[tokio::test]
    async fn a_panicking_recommender_fails_only_its_target() {
        let ok = unwind_to_error(async { Ok::<_, RunError>(7) }).await;
        assert_eq!(ok.unwrap(), 7);
        let boom = unwind_to_error(async {
            if ok_input() {
                panic!("index 3 out of range");
            }
            Ok::<i32, RunError>(0)
        })
        .await;
        match boom {
            Err(e @ RunError::Panicked(_)) => {
                assert!(e.to_string().contains("index 3 out of range"), "{e}");
                assert_eq!(status::failure_reason(&e), "InternalError");
            }
            other => panic!("{other:?}"),
        }
    }

    fn ok_input() -> bool {
        true
    }
}
