//! The RecommendationRule controller (kube-runtime).
//!
//! Each reconcile of a rule:
//! 1. lists its targets (selectors × namespaces, through discovery) and the recommenders the
//!    configuration file lists for their kinds: one identity per (target, recommender);
//! 2. deletes Recommendations whose identity is gone (target deleted, selector or recommender
//!    changed) — every reconcile, so a deleted Deployment loses its Recommendation at once
//!    (deletions of Deployments, StatefulSets and DaemonSets trigger a reconcile of every rule);
//! 3. runs a round when one is due (`runInterval` elapsed since `status.lastUpdateTime`; never
//!    run; or triggered with the [`RUN_ONCE_ANNOTATION`]), otherwise only computes identities
//!    that have no Recommendation yet (a new Deployment does not wait for the next round);
//! 4. writes each Recommendation with server-side apply (metadata + spec), then its status on
//!    `/status`, adopts it per `adoptionType`, updates the `crane_*` series, and finally the
//!    rule's status (runNumber, lastUpdateTime, the list of Recommendations).
//!
//! Failures are explained in the Recommendation's Ready condition, its `analysis.crane.io/message`
//! annotation and Events; a failing target never stops the others. Nothing is written unless this
//! replica leads ([`leader`]).

pub mod adoption;
pub mod execute;
pub mod leader;
pub mod naming;
pub mod status;
pub mod targets;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ferrocrane_core::kube::SharedMapper;
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::{OnceCell, watch};

use self::execute::{OomSource, TargetRun};
use self::leader::LeaderState;
use self::naming::IdentityKey;
use self::status::{Plan, RunError};
use self::targets::{SelectError, Target};
use crate::crd::{
    Recommendation, RecommendationMission, RecommendationRule, RecommenderRef, known, recommenders,
};
use crate::datasource::History;
use crate::metrics::{CraneMetrics, TargetLabels};
use crate::recommender::RecommendationConfiguration;

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "craned";

/// Put on a rule (any value) to run a round now; craned removes it when the round is done.
/// Crane has no such annotation (its only trigger is lowering a Recommendation's
/// `analysis.crane.io/run-number`, which also re-runs here at the next reconcile).
pub const RUN_ONCE_ANNOTATION: &str = "analysis.crane.io/run-once";

/// At most this many entries in a rule's `status.recommendations` (list the Recommendations by
/// the `analysis.crane.io/recommendation-rule-name` label for all of them).
pub const MAX_MISSIONS: usize = 1000;

/// How long a non-leader waits before looking again.
const FOLLOWER_RECHECK: Duration = Duration::from_secs(5);

/// Why a reconcile failed (it is retried by [`error_policy`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes: {0}")]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Select(#[from] SelectError),
    #[error("resource discovery: {0}")]
    Discovery(String),
    #[error("lost leadership during the round")]
    NotLeader,
}

/// Everything reconciles share.
pub struct Context {
    pub client: Client,
    pub config: watch::Receiver<Arc<RecommendationConfiguration>>,
    pub history: History,
    pub metrics: Arc<CraneMetrics>,
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
}

impl Context {
    async fn event(
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

fn now_ts() -> Timestamp {
    Timestamp::now()
}

fn to_system(t: Timestamp) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(t.as_second().max(0) as u64)
}

fn rec_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
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

/// Reconciles one rule.
pub async fn reconcile(rule: Arc<RecommendationRule>, ctx: Arc<Context>) -> Result<Action, Error> {
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
            ctx.event(&rule_ref, EventType::Warning, "FailedParseRunInterval", msg)
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
            ctx.event(
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
        ctx.event(
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

    // Orphans: identities that no longer exist.
    let wanted: BTreeSet<&IdentityKey> = ids.iter().map(|(_, k)| k).collect();
    for (key, rec) in &existing {
        if wanted.contains(key) {
            continue;
        }
        if !ctx.leader.is_leader() {
            return Err(Error::NotLeader);
        }
        let ns = rec.namespace().unwrap_or_default();
        let api: Api<Recommendation> = Api::namespaced(ctx.client.clone(), &ns);
        match api.delete(&rec.name_any(), &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(recommendation = %rec_key(&ns, &rec.name_any()), rule = %rule.name_any(), "deleted orphan recommendation");
                ctx.metrics.forget(&rec_key(&ns, &rec.name_any()));
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                ctx.metrics.forget(&rec_key(&ns, &rec.name_any()));
            }
            Err(e) => return Err(e.into()),
        }
    }

    let now = now_ts();
    let last_update = rule
        .status
        .as_ref()
        .and_then(|s| s.last_update_time.as_ref())
        .map(|t| t.0);
    let plan = status::plan(interval, last_update, triggered, now);
    let previous_run = rule.status.as_ref().map(|s| s.run_number).unwrap_or(0);
    let (run_number, todo): (i32, Vec<&(usize, IdentityKey)>) = match plan {
        Plan::Run => (previous_run.saturating_add(1), ids.iter().collect()),
        Plan::Wait(_) | Plan::Done => (
            previous_run.max(1),
            ids.iter()
                .filter(|(_, k)| {
                    existing.get(k).is_none_or(|r| {
                        // Crane's trigger: a lowered run-number re-runs the Recommendation.
                        run_number_of(r) < previous_run.max(1)
                    })
                })
                .collect(),
        ),
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
            run_number,
            now,
        };
        let done = run_identities(&round, &targets, &todo).await?;
        for (key, m) in done {
            missions.insert(key, m);
        }
    }

    let round_ran = plan == Plan::Run;
    let mut new_status = rule.status.clone().unwrap_or_default();
    if round_ran {
        new_status.run_number = run_number;
        new_status.last_update_time = Some(Time(now));
    }
    // The list is informational; at thousands of targets it would push the rule past etcd's
    // object size limit, and a rule whose status cannot be written would never finish a round.
    new_status.recommendations = missions.into_values().take(MAX_MISSIONS).collect();
    if Some(&new_status) != rule.status.as_ref() {
        if !ctx.leader.is_leader() {
            return Err(Error::NotLeader);
        }
        let api: Api<RecommendationRule> = Api::all(ctx.client.clone());
        let patch = json!({
            "apiVersion": RecommendationRule::api_version(&()),
            "kind": RecommendationRule::kind(&()),
            "status": new_status,
        });
        api.patch_status(
            &rule.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    }
    if triggered && ctx.leader.is_leader() {
        let api: Api<RecommendationRule> = Api::all(ctx.client.clone());
        let patch = json!({"metadata": {"annotations": {RUN_ONCE_ANNOTATION: null}}});
        api.patch(
            &rule.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    }
    Ok(match plan {
        Plan::Run => match interval {
            Some(i) => Action::requeue(i),
            None => Action::await_change(),
        },
        Plan::Wait(d) => Action::requeue(d),
        Plan::Done => Action::await_change(),
    })
}

fn run_number_of(r: &Recommendation) -> i32 {
    r.annotations()
        .get(known::RUN_NUMBER_ANNOTATION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn mission_of(
    rec: &Recommendation,
    key: &IdentityKey,
    message: Option<String>,
) -> RecommendationMission {
    RecommendationMission {
        api_version: Recommendation::api_version(&()).into_owned(),
        kind: Recommendation::kind(&()).into_owned(),
        name: rec.name_any(),
        namespace: rec.namespace().unwrap_or_default(),
        uid: rec.uid().unwrap_or_default(),
        target_ref: key.target_ref(),
        last_start_time: rec.status.as_ref().and_then(|s| s.last_update_time.clone()),
        message: message.unwrap_or_else(|| {
            rec.annotations()
                .get(known::MESSAGE_ANNOTATION)
                .cloned()
                .unwrap_or_default()
        }),
        recommender_ref: RecommenderRef {
            name: key.recommender.clone(),
            config: BTreeMap::new(),
        },
        ..Default::default()
    }
}

/// What every identity of a round shares.
struct Round<'a> {
    rule: &'a RecommendationRule,
    ctx: &'a Context,
    config: &'a RecommendationConfiguration,
    existing: &'a BTreeMap<IdentityKey, Arc<Recommendation>>,
    run_number: i32,
    now: Timestamp,
}

/// Runs the given identities, grouped per target so each target's history is read once,
/// at most `ctx.concurrency` targets at a time.
async fn run_identities(
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

/// One identity: compute, write the Recommendation and its status, adopt, record metrics.
async fn run_one(
    round: &Round<'_>,
    run: &TargetRun<'_>,
    key: &IdentityKey,
) -> Result<RecommendationMission, Error> {
    let (rule, ctx, config, run_number, now) = (
        round.rule,
        round.ctx,
        round.config,
        round.run_number,
        round.now,
    );
    let target = run.target;
    let outcome = match config.merged(&key.recommender, &rule.spec) {
        Some(cfg) => run.run(&key.recommender, &cfg).await,
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

    let rule_name = rule.name_any();
    let namespace = naming::recommendation_namespace(key, &ctx.namespace).to_string();
    // An existing Recommendation (possibly created by Crane, with a generated name) keeps its name.
    let existing = round.existing.get(key);
    let name = existing
        .as_ref()
        .map(|r| r.name_any())
        .unwrap_or_else(|| naming::recommendation_name(&rule_name, key));
    let labels = naming::recommendation_labels(
        &rule_name,
        &rule.uid().unwrap_or_default(),
        key,
        &target.labels(),
    );
    let owner = rule.controller_owner_ref(&()).map(|mut o| {
        o.controller = Some(false);
        o.block_owner_deletion = Some(false);
        o
    });
    let apply = json!({
        "apiVersion": Recommendation::api_version(&()),
        "kind": Recommendation::kind(&()),
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                known::RUN_NUMBER_ANNOTATION: run_number.to_string(),
                known::MESSAGE_ANNOTATION: message,
                known::LAST_START_TIME_ANNOTATION: naming::format_start_time(now),
            },
            "ownerReferences": owner.into_iter().collect::<Vec<_>>(),
        },
        "spec": {
            "targetRef": key.target_ref(),
            "type": key.recommender,
        },
    });
    if !ctx.leader.is_leader() {
        return Err(Error::NotLeader);
    }
    let api: Api<Recommendation> = Api::namespaced(ctx.client.clone(), &namespace);
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    let written = api.patch(&name, &pp, &Patch::Apply(&apply)).await?;
    let proposal = outcome.as_ref().map(|o| o.proposal.clone());
    let proposal = match proposal {
        Ok(p) => Ok(p),
        Err(e) => Err(clone_err(e)),
    };
    let new_status = status::next_status(
        existing.as_ref().and_then(|r| r.status.as_ref()),
        &key.recommender,
        &proposal,
        now,
    );
    let status_patch = json!({
        "apiVersion": Recommendation::api_version(&()),
        "kind": Recommendation::kind(&()),
        "status": new_status,
    });
    let written = api
        .patch_status(&name, &pp, &Patch::Apply(&status_patch))
        .await
        .unwrap_or(written);
    let rec_ref = written.object_ref(&());

    let rk = rec_key(&namespace, &name);
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
            let adoption_type = written.spec.adoption_type;
            let adopted = adoption::adopt(
                &ctx.client,
                target,
                &key.recommender,
                adoption_type,
                &new_status,
                ctx.auto_adoption,
            )
            .await;
            let event = match adopted {
                Ok(adoption::Adopted::AutoDisabled) => Some((
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
                ctx.event(&rec_ref, type_, reason, note).await;
            }
        }
        Ok(_) => {}
        Err(e) => {
            ctx.event(
                &rec_ref,
                EventType::Warning,
                status::failure_reason(e),
                e.to_string(),
            )
            .await;
        }
    }
    Ok(mission_of(&written, key, None))
}

fn clone_err(e: &RunError) -> RunError {
    match e {
        RunError::Recommend(r) => RunError::Recommend(r.clone()),
        RunError::DataSource(s) => RunError::DataSource(s.clone()),
        RunError::Target(s) => RunError::Target(s.clone()),
        RunError::NotConfigured(s) => RunError::NotConfigured(s.clone()),
    }
}

/// Retries failed reconciles: transient API or Prometheus trouble clears by itself.
pub fn error_policy(rule: Arc<RecommendationRule>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(rule = %rule.name_any(), %error, "reconcile failed");
    match error {
        Error::NotLeader => Action::requeue(FOLLOWER_RECHECK),
        _ => Action::requeue(Duration::from_secs(30)),
    }
}

/// Inputs of [`run`] besides the context.
pub struct Wiring {
    pub client: Client,
    pub config: watch::Receiver<Arc<RecommendationConfiguration>>,
    pub history: History,
    pub metrics: Arc<CraneMetrics>,
    pub mapper: SharedMapper,
    pub namespace: String,
    pub identity: String,
    pub auto_adoption: bool,
    pub leader: LeaderState,
    pub oom: OomSource,
    pub concurrency: usize,
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    w: Wiring,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let client = w.client.clone();
    let rules: Api<RecommendationRule> = Api::all(client.clone());
    let recs: Api<Recommendation> = Api::all(client.clone());

    // Recommendations of rules: the index of what exists, and gauges removed on deletion.
    let (rec_reader, rec_writer) = reflector::store();
    let metrics = w.metrics.clone();
    let rec_stream = watcher(
        recs,
        watcher::Config::default().labels(known::RECOMMENDATION_RULE_UID_LABEL),
    )
    .default_backoff()
    // Two field managers (spec and status applies) make managedFields a good part of each
    // Recommendation; nothing here reads them, and the store holds every Recommendation.
    .modify(|r| r.managed_fields_mut().clear())
    .reflect(rec_writer)
    .for_each(move |ev| {
        if let Ok(watcher::Event::Delete(r)) = &ev {
            metrics.forget(&rec_key(&r.namespace().unwrap_or_default(), &r.name_any()));
        }
        futures::future::ready(())
    });
    tokio::spawn(rec_stream);

    // A deleted workload: every rule re-checks its targets.
    fn deletions<K>(client: &Client) -> impl futures::Stream<Item = ()> + Send + 'static
    where
        K: Resource<DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        watcher(
            Api::<PartialObjectMeta<K>>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .filter_map(|ev| {
            futures::future::ready(match ev {
                Ok(watcher::Event::Delete(_)) => Some(()),
                _ => None,
            })
        })
    }
    let deleted = stream::select(
        deletions::<Deployment>(&client),
        stream::select(
            deletions::<StatefulSet>(&client),
            deletions::<DaemonSet>(&client),
        ),
    );

    // Rules: react to spec changes (generation) and the run-once annotation, not to our own
    // status writes.
    let (rule_reader, rule_writer) = reflector::store();
    let rule_stream = watcher(rules, watcher::Config::default())
        .default_backoff()
        .reflect(rule_writer)
        .touched_objects()
        .predicate_filter(
            |r: &RecommendationRule| {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                predicates::generation(r).hash(&mut h);
                r.annotations().get(RUN_ONCE_ANNOTATION).hash(&mut h);
                Some(h.finish())
            },
            Default::default(),
        );

    // A new configuration file re-runs nothing by itself (rounds keep their schedule), but
    // identities change when a recommender's acceptedResources do.
    let config_stream = stream::unfold(w.config.clone(), |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    });
    // Becoming leader: pick up every rule at once.
    let leader_stream = stream::unfold(w.leader.clone(), |mut l| async move {
        l.changed().await?;
        Some(((), l))
    });

    let ctx = Arc::new(Context {
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.into(),
                instance: Some(w.identity.clone()),
            },
        ),
        client,
        config: w.config,
        history: w.history,
        metrics: w.metrics,
        mapper: w.mapper,
        namespace: w.namespace,
        auto_adoption: w.auto_adoption,
        leader: w.leader,
        oom: w.oom,
        recommendations: rec_reader.clone(),
        concurrency: w.concurrency,
    });
    let _ = rec_reader.wait_until_ready().await;
    Controller::for_stream(rule_stream, rule_reader)
        // A burst of deletions (a namespace going away) becomes one reconcile per rule.
        .with_config(kube::runtime::controller::Config::default().debounce(Duration::from_secs(1)))
        .reconcile_all_on(deleted)
        .reconcile_all_on(config_stream)
        .reconcile_all_on(leader_stream)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|r| {
            if let Err(e) = r {
                tracing::debug!(error = %e, "reconcile");
            }
            futures::future::ready(())
        })
        .await;
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

    #[test]
    fn long_notes_are_cut_on_a_char_boundary() {
        let s = "é".repeat(600);
        let t = truncate(&s, 1000);
        assert!(t.len() <= 1003);
        assert!(t.ends_with('…'));
    }
}
