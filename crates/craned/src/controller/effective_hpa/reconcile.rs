//! One EHPA, in Crane's order: the workload's scale; in Preview its Substitute; with
//! prediction its TimeSeriesPrediction; its HPA; in Preview the specific replicas; then the
//! status from the HPA. A step that fails says so in `Ready` (Crane's reasons) and the
//! reconcile is retried.

use std::sync::Arc;
use std::time::Duration;

use ferrocrane_autoscaling::cron::DefaultZone;
use ferrocrane_autoscaling::external::{owned_name, predicted_max};
use ferrocrane_core::kube::SharedMapper;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use super::error::Error;
use super::objects::{self, Requests, milli};
use super::source::replicas_source;
use super::status::{Found, READY_REASON, Set, build};
use crate::controller::events::Events;
use crate::controller::leader::LeaderState;
use crate::controller::{FIELD_MANAGER, StatusWrites};
use crate::crd::autoscaling::{
    EffectiveHorizontalPodAutoscaler, ScaleStrategy, Substitute, conditions,
};
use crate::crd::prediction::TimeSeriesPrediction;
use crate::metrics::reconcile::ReconcileMetrics;

/// Everything reconciles share.
pub struct Context {
    pub client: Client,
    pub leader: LeaderState,
    pub metrics: ReconcileMetrics,
    pub mapper: SharedMapper,
    pub events: Events,
    /// The time zone of crons that name none.
    pub zone: DefaultZone,
}

/// An EHPA is looked at again this often even when nothing it owns changes (the HPA's status
/// changes wake it sooner).
const RESYNC: Duration = Duration::from_secs(60);

fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

pub async fn reconcile(
    ehpa: Arc<EffectiveHorizontalPodAutoscaler>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let _timer = ctx.metrics.start();
    if !ctx.leader.is_leader() {
        return Err(Error::NotLeader);
    }
    let ns = ehpa.namespace().unwrap_or_default();
    let name = ehpa.name_any();
    let now = Time(Timestamp::now());
    let mut set: Vec<Set<'static>> = Vec::new();
    let result = steps(&ehpa, &ctx, &ns, &mut set).await;
    let (hpa, current, last_scale, failure) = match result {
        Ok(done) => (done.hpa, done.current_replicas, done.last_scale, None),
        Err((reason, message, current)) => {
            set.push(Set {
                type_: conditions::READY,
                ok: false,
                reason,
                message: message.clone(),
            });
            ctx.events
                .publish(
                    &ehpa.object_ref(&()),
                    EventType::Warning,
                    reason,
                    message.clone(),
                )
                .await;
            (None, current, None, Some(message))
        }
    };
    if failure.is_none() {
        set.push(Set {
            type_: conditions::READY,
            ok: true,
            reason: READY_REASON,
            message: "Effective HPA is ready".into(),
        });
    }
    let source = hpa
        .as_ref()
        .and_then(|h| replicas_source(h, &ehpa.spec.crons, &ctx.zone, now.0));
    let status = build(
        ehpa.status.as_ref(),
        Found {
            hpa: hpa.as_ref().and_then(|h| h.status.as_ref()),
            current_replicas: current,
            last_scale,
            source,
        },
        &set,
        &now,
    );
    if ehpa.status.as_ref() != Some(&status) {
        if !ctx.leader.is_leader() {
            return Err(Error::NotLeader);
        }
        let api: Api<EffectiveHorizontalPodAutoscaler> = Api::namespaced(ctx.client.clone(), &ns);
        StatusWrites::Subresource
            .apply(&api, &name, &json!(status))
            .await
            .map_err(|source| Error::Write {
                what: format!("the status of {ns}/{name}"),
                source,
            })?;
    }
    match failure {
        Some(message) => Err(Error::Step(message)),
        None => Ok(Action::requeue(RESYNC)),
    }
}

/// What the steps found.
struct Done {
    hpa: Option<HorizontalPodAutoscaler>,
    current_replicas: Option<i32>,
    last_scale: Option<Time>,
}

/// A failed step: Crane's reason, the message, and the workload's replicas if known.
type Failed = (&'static str, String, Option<i32>);

async fn steps(
    ehpa: &EffectiveHorizontalPodAutoscaler,
    ctx: &Context,
    ns: &str,
    set: &mut Vec<Set<'static>>,
) -> Result<Done, Failed> {
    let target = &ehpa.spec.scale_target_ref;
    let workload = workload_api(
        &ctx.client,
        &ctx.mapper,
        ns,
        target.api_version.as_deref().unwrap_or_default(),
        &target.kind,
    )
    .map_err(|m| ("FailedGetScale", m, None))?;
    let scale: Scale = workload.get_scale(&target.name).await.map_err(|e| {
        (
            "FailedGetScale",
            format!("the scale of {} {}: {e}", target.kind, target.name),
            None,
        )
    })?;
    let spec_replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    let current = scale.status.as_ref().map(|s| s.replicas);
    let min = ehpa.spec.min_replicas.unwrap_or(1);
    if spec_replicas == 0 && min != 0 {
        return Err((
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero".into(),
            current,
        ));
    }
    let name = owned_name(&ehpa.name_any());
    let preview = ehpa.spec.scale_strategy == ScaleStrategy::Preview;
    substitute(ctx, ehpa, ns, &name, preview, spec_replicas)
        .await
        .map_err(|m| ("FailedReconcileSubstitute", m, current))?;
    let tsp = prediction(ctx, ehpa, ns, &name, set)
        .await
        .map_err(|m| ("FailedReconcilePrediction", m, current))?;
    let window = i64::from(tsp.as_ref().map_or(0, |t| t.spec.prediction_window_seconds));
    let ready = |id: &str| {
        tsp.as_ref()
            .and_then(|t| t.status.as_ref())
            .is_some_and(|s| predicted_max(s, id, window, Timestamp::now()).is_ok())
    };
    let selector = scale.status.as_ref().and_then(|s| s.selector.clone());
    let pods = match &selector {
        Some(sel) if objects::predicts(ehpa) => Api::<Pod>::namespaced(ctx.client.clone(), ns)
            .list(&ListParams::default().labels(sel))
            .await
            .map(|l| l.items)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let requests = |resource: &str| available_requests(&pods, resource);
    let desired = objects::horizontal_pod_autoscaler(ehpa, &ready, &requests);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(ctx.client.clone(), ns);
    let hpa = hpas
        .patch(&name, &apply_params(), &Patch::Apply(&desired))
        .await
        .map_err(|e| {
            (
                "FailedReconcileHPA",
                format!("HorizontalPodAutoscaler {name}: {e}"),
                current,
            )
        })?;
    let mut last_scale = None;
    if preview
        && let Some(specific) = ehpa.spec.specific_replicas
        && current != Some(specific)
    {
        workload
            .patch_scale(
                &target.name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": specific}})),
            )
            .await
            .map_err(|e| {
                (
                    "FailedScale",
                    format!("scaling {} {} to {specific}: {e}", target.kind, target.name),
                    current,
                )
            })?;
        last_scale = Some(Time(Timestamp::now()));
    }
    Ok(Done {
        hpa: Some(hpa),
        current_replicas: current,
        last_scale,
    })
}

/// The workload kind's API, through discovery.
fn workload_api(
    client: &Client,
    mapper: &SharedMapper,
    ns: &str,
    api_version: &str,
    kind: &str,
) -> Result<Api<DynamicObject>, String> {
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let mapper = mapper.current();
    let m = mapper
        .by_kind(group, kind)
        .ok_or_else(|| format!("the API server serves no kind {kind} in {api_version:?}"))?;
    if !m.has_scale {
        return Err(format!("{kind} has no scale subresource"));
    }
    Ok(Api::namespaced_with(client.clone(), ns, &m.api_resource()))
}

/// The summed `resource` requests of the available (Ready) pods, for a utilization target.
fn available_requests(pods: &[Pod], resource: &str) -> Option<Requests> {
    let ready: Vec<&Pod> = pods
        .iter()
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .collect();
    let total_milli = ready
        .iter()
        .flat_map(|p| p.spec.iter().flat_map(|s| &s.containers))
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get(resource))
        .filter_map(|q| milli(&q.0))
        .sum();
    Some(Requests {
        total_milli,
        pods: i64::try_from(ready.len()).ok()?,
    })
}

/// In Preview, the Substitute the HPA scales instead of the workload: created at the
/// workload's replicas, its target kept right. Out of Preview, a Substitute left from it goes
/// (Crane leaves it).
async fn substitute(
    ctx: &Context,
    ehpa: &EffectiveHorizontalPodAutoscaler,
    ns: &str,
    name: &str,
    preview: bool,
    replicas: i32,
) -> Result<(), String> {
    let api: Api<Substitute> = Api::namespaced(ctx.client.clone(), ns);
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| format!("Substitute {name}: {e}"))?;
    match (preview, existing) {
        (true, None) => {
            let s: Substitute = serde_json::from_value(objects::substitute(ehpa, replicas))
                .map_err(|e| format!("Substitute {name}: {e}"))?;
            api.create(&PostParams::default(), &s)
                .await
                .map_err(|e| format!("creating Substitute {name}: {e}"))?;
            ctx.events
                .publish(
                    &ehpa.object_ref(&()),
                    EventType::Normal,
                    "SubstituteCreated",
                    format!("Create Substitute {name} successfully"),
                )
                .await;
        }
        (true, Some(s)) if s.spec.substitute_target_ref != ehpa.spec.scale_target_ref => {
            api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"substituteTargetRef": ehpa.spec.scale_target_ref}})),
            )
            .await
            .map_err(|e| format!("updating Substitute {name}: {e}"))?;
        }
        (false, Some(s))
            if s.owner_references()
                .iter()
                .any(|o| Some(&o.uid) == ehpa.meta().uid.as_ref()) =>
        {
            api.delete(name, &Default::default())
                .await
                .map_err(|e| format!("deleting Substitute {name}: {e}"))?;
        }
        _ => {}
    }
    Ok(())
}

/// With prediction, the TimeSeriesPrediction (applied) and `PredictionReady` copied from its
/// `Ready`; without, one left from before goes.
async fn prediction(
    ctx: &Context,
    ehpa: &EffectiveHorizontalPodAutoscaler,
    ns: &str,
    name: &str,
    set: &mut Vec<Set<'static>>,
) -> Result<Option<TimeSeriesPrediction>, String> {
    let api: Api<TimeSeriesPrediction> = Api::namespaced(ctx.client.clone(), ns);
    let Some(desired) = objects::time_series_prediction(ehpa) else {
        if let Some(t) = api
            .get_opt(name)
            .await
            .map_err(|e| format!("TimeSeriesPrediction {name}: {e}"))?
            && t.owner_references()
                .iter()
                .any(|o| Some(&o.uid) == ehpa.meta().uid.as_ref())
        {
            api.delete(name, &Default::default())
                .await
                .map_err(|e| format!("deleting TimeSeriesPrediction {name}: {e}"))?;
        }
        return Ok(None);
    };
    let tsp = api
        .patch(name, &apply_params(), &Patch::Apply(&desired))
        .await
        .map_err(|e| format!("TimeSeriesPrediction {name}: {e}"))?;
    if let Some(ready) = tsp
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .filter(|c| !c.reason.is_empty())
    {
        set.push(Set {
            type_: conditions::PREDICTION_READY,
            ok: ready.status == "True",
            reason: leak(&ready.reason),
            message: ready.message.clone(),
        });
    }
    Ok(Some(tsp))
}

/// A TSP's condition reason as the `'static` the condition list takes: only Crane's two
/// reasons are kept as they are, anything else reads as partial.
fn leak(reason: &str) -> &'static str {
    use crate::crd::prediction::reasons::{PREDICT_PARTIAL, PREDICT_SUCCEED};
    if reason == PREDICT_SUCCEED {
        PREDICT_SUCCEED
    } else {
        PREDICT_PARTIAL
    }
}
