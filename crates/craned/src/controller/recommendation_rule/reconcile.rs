//! One reconcile of a rule: its targets and identities, orphans deleted, a round when one is
//! due (see [`super::round`] for the identities), and the rule's status.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::context::Context;
use super::error::Error;
use super::naming::{IdentityKey, mission_of, rec_key};
use super::round::{Round, run_identities};
use super::status::{self, Plan};
use super::targets::{self, Target};
use super::unchanged::run_number_of;
use super::{MAX_MISSIONS, RUN_ONCE_ANNOTATION};
use crate::controller::FOLLOWER_RECHECK;
use crate::crd::{
    Recommendation, RecommendationMission, RecommendationRule, RecommendationRuleStatus, known,
};
use crate::recommender::RecommendationConfiguration;

/// An empty runInterval means run once; anything else must be a duration.
pub fn parse_run_interval(s: &str) -> Result<Option<Duration>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    match crate::recommender::config::parse_duration_secs(s) {
        Some(secs) if secs > 0 => Ok(Some(Duration::from_secs(secs as u64))),
        _ => Err(format!(
            "runInterval {s:?} is not a positive duration such as 1h or 24h"
        )),
    }
}

/// The identities of a rule: each target × each recommender the rule lists that the
/// configuration accepts for the target's kind. Also returns the rule's recommenders the
/// configuration does not list.
fn identities(
    rule: &RecommendationRule,
    config: &RecommendationConfiguration,
    targets: &[Target],
) -> (Vec<(usize, IdentityKey)>, Vec<String>) {
    let mut names: Vec<&str> = Vec::new();
    for r in &rule.spec.recommenders {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        let Some(rc) = config.recommender(name) else {
            missing.push(name.to_string());
            continue;
        };
        for (i, t) in targets.iter().enumerate() {
            if targets::accepted(&rc.accepted_resources, &t.kind, &t.api_version) {
                out.push((i, t.key(name)));
            }
        }
    }
    (out, missing)
}

/// Reconciles one rule (counted and timed in `craned_reconcile_*`).
pub async fn reconcile(rule: Arc<RecommendationRule>, ctx: Arc<Context>) -> Result<Action, Error> {
    let _timer = ctx.reconcile_metrics.start();
    if rule.metadata.deletion_timestamp.is_some() {
        // Owner references let the garbage collector delete its Recommendations.
        return Ok(Action::await_change());
    }
    if !ctx.leader.is_leader() {
        return Ok(Action::requeue(FOLLOWER_RECHECK));
    }
    let rule_ref = rule.object_ref(&());
    let interval = match parse_run_interval(&rule.spec.run_interval) {
        Ok(i) => i,
        Err(msg) => {
            ctx.events
                .publish(&rule_ref, EventType::Warning, "FailedParseRunInterval", msg)
                .await;
            return Ok(Action::await_change());
        }
    };
    let triggered = rule.annotations().contains_key(RUN_ONCE_ANNOTATION);
    let mapper = if ctx.mapper.current().is_empty() {
        ctx.mapper
            .ready()
            .await
            .map_err(|e| Error::Discovery(e.to_string()))?
    } else {
        ctx.mapper.current()
    };
    let targets = match targets::select(&ctx.client, &mapper, &rule.spec).await {
        Ok(t) => t,
        Err(e) => {
            ctx.events
                .publish(
                    &rule_ref,
                    EventType::Warning,
                    "FailedSelectResource",
                    e.to_string(),
                )
                .await;
            return Err(e.into());
        }
    };
    let config = ctx.config.borrow().clone();
    let (ids, missing) = identities(&rule, &config, &targets);
    for name in &missing {
        ctx.events.publish(
            &rule_ref,
            EventType::Warning,
            "RecommenderNotConfigured",
            format!(
                "recommender {name:?} is not in the recommendation configuration file; it is skipped"
            ),
        )
        .await;
    }

    // Existing Recommendations of this rule, by identity.
    let uid = rule.uid().unwrap_or_default();
    let existing: BTreeMap<IdentityKey, Arc<Recommendation>> = ctx
        .recommendations
        .state()
        .into_iter()
        .filter(|r| r.labels().get(known::RECOMMENDATION_RULE_UID_LABEL) == Some(&uid))
        .map(|r| (IdentityKey::of_target(&r.spec.target_ref, &r.spec.type_), r))
        .collect();
    let wanted: BTreeSet<&IdentityKey> = ids.iter().map(|(_, k)| k).collect();
    delete_orphans(&ctx, &rule, &existing, &wanted).await?;

    let now = Timestamp::now();
    let last_update = rule
        .status
        .as_ref()
        .and_then(|s| s.last_update_time.as_ref())
        .map(|t| t.0);
    let plan = status::plan(interval, last_update, triggered, now);
    let previous_run = rule.status.as_ref().map(|s| s.run_number).unwrap_or(0);
    // Crane's trigger: a lowered run-number re-runs the Recommendation between rounds, and
    // has it written in any case.
    let lowered: BTreeSet<IdentityKey> = existing
        .iter()
        .filter(|(k, _)| wanted.contains(k))
        .filter(|(_, r)| {
            let key = rec_key(&r.namespace().unwrap_or_default(), &r.name_any());
            ctx.run_numbers
                .lowered(&key, run_number_of(r), previous_run.max(1))
        })
        .map(|(k, _)| k.clone())
        .collect();
    let (run_number, todo): (i32, Vec<&(usize, IdentityKey)>) = match plan {
        Plan::Run => (previous_run.saturating_add(1), ids.iter().collect()),
        Plan::Wait(_) | Plan::Done => (
            previous_run.max(1),
            ids.iter()
                .filter(|(_, k)| {
                    existing.get(k).is_none_or(|r| {
                        lowered.contains(k) || retry_in(r, now) == Some(Duration::ZERO)
                    })
                })
                .collect(),
        ),
    };
    // A Recommendation that found Prometheus unavailable is retried before the next round
    // (status::prometheus_retry_in): look again when the soonest such retry is due, and after
    // a round that ran anything (its failures are not in the informer's view yet).
    let retry_check = if todo.is_empty() {
        existing
            .iter()
            .filter(|(k, _)| wanted.contains(k))
            .filter_map(|(_, r)| retry_in(r, now))
            .min()
            .map(|d| d.max(Duration::from_secs(1)))
    } else {
        Some(status::RETRY_MIN)
    };

    let mut missions: BTreeMap<IdentityKey, RecommendationMission> = BTreeMap::new();
    for (key, rec) in &existing {
        if wanted.contains(key) {
            missions.insert(key.clone(), mission_of(rec, key, None));
        }
    }
    if !todo.is_empty() {
        let round = Round {
            rule: &rule,
            ctx: &ctx,
            config: &config,
            existing: &existing,
            rewrite: &lowered,
            run_number,
            now,
        };
        let done = run_identities(&round, &targets, &todo).await?;
        for (key, m) in done {
            missions.insert(key, m);
        }
    }

    let mut new_status = rule.status.clone().unwrap_or_default();
    if plan == Plan::Run {
        new_status.run_number = run_number;
        new_status.last_update_time = Some(Time(now));
    }
    // The list is informational; at thousands of targets it would push the rule past etcd's
    // object size limit, and a rule whose status cannot be written would never finish a round.
    new_status.recommendations = missions.into_values().take(MAX_MISSIONS).collect();
    if Some(&new_status) != rule.status.as_ref() {
        write_rule_status(&ctx, &rule, &new_status).await?;
    }
    if triggered && ctx.leader.is_leader() {
        clear_trigger(&ctx, &rule).await?;
    }
    let next = match plan {
        Plan::Run => interval,
        Plan::Wait(d) => Some(d),
        Plan::Done => None,
    };
    Ok(match (next, retry_check) {
        (Some(a), Some(b)) => Action::requeue(a.min(b)),
        (Some(d), None) | (None, Some(d)) => Action::requeue(d),
        (None, None) => Action::await_change(),
    })
}

fn retry_in(r: &Recommendation, now: Timestamp) -> Option<Duration> {
    status::prometheus_retry_in(r.status.as_ref()?, now)
}

/// Deletes the Recommendations whose identity no longer exists (target deleted, selector or
/// recommender changed).
async fn delete_orphans(
    ctx: &Context,
    rule: &RecommendationRule,
    existing: &BTreeMap<IdentityKey, Arc<Recommendation>>,
    wanted: &BTreeSet<&IdentityKey>,
) -> Result<(), Error> {
    for (key, rec) in existing {
        if wanted.contains(key) {
            continue;
        }
        if !ctx.leader.is_leader() {
            return Err(Error::NotLeader);
        }
        let ns = rec.namespace().unwrap_or_default();
        let key = rec_key(&ns, &rec.name_any());
        let api: Api<Recommendation> = Api::namespaced(ctx.client.clone(), &ns);
        match api.delete(&rec.name_any(), &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(recommendation = %key, rule = %rule.name_any(), "deleted orphan recommendation");
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => return Err(Error::DeleteOrphan { name: key, source }),
        }
        ctx.metrics.forget(&key);
        ctx.run_numbers.forget(&key);
    }
    Ok(())
}

async fn write_rule_status(
    ctx: &Context,
    rule: &RecommendationRule,
    status: &RecommendationRuleStatus,
) -> Result<(), Error> {
    if !ctx.leader.is_leader() {
        return Err(Error::NotLeader);
    }
    let api: Api<RecommendationRule> = Api::all(ctx.client.clone());
    ctx.status_writes
        .apply(&api, &rule.name_any(), &json!(status))
        .await
        .map_err(Error::WriteRuleStatus)?;
    Ok(())
}

/// The round the run-once annotation asked for is done.
async fn clear_trigger(ctx: &Context, rule: &RecommendationRule) -> Result<(), Error> {
    let api: Api<RecommendationRule> = Api::all(ctx.client.clone());
    let patch = json!({"metadata": {"annotations": {RUN_ONCE_ANNOTATION: null}}});
    api.patch(
        &rule.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map_err(Error::ClearTrigger)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_intervals() {
        assert_eq!(parse_run_interval(""), Ok(None));
        assert_eq!(
            parse_run_interval(" 24h "),
            Ok(Some(Duration::from_secs(86_400)))
        );
        assert!(parse_run_interval("daily").is_err());
        assert!(parse_run_interval("0s").is_err());
    }
}
