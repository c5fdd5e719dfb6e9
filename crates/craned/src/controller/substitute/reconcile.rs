//! One Substitute, and the loop over them.

use std::sync::Arc;
use std::time::Duration;

use ferrocrane_core::kube::SharedMapper;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::controller::StatusWrites;
use crate::controller::leader::LeaderState;
use crate::crd::autoscaling::{Substitute, SubstituteStatus};
use crate::metrics::reconcile::ReconcileMetrics;

/// Crane's `RsyncPeriod`.
const RESYNC: Duration = Duration::from_secs(15);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the scale of {target}: {reason}")]
    Target { target: String, reason: String },
    #[error("writing {what}: {source}")]
    Write {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("not the leader")]
    NotLeader,
}

pub const METRIC_LABELS: &[&str] = &["target", "write", "not_leader"];

impl crate::controller::ReconcileError for Error {
    fn metric_label(&self) -> &'static str {
        match self {
            Error::Target { .. } => "target",
            Error::Write { .. } => "write",
            Error::NotLeader => "not_leader",
        }
    }

    fn is_not_leader(&self) -> bool {
        matches!(self, Error::NotLeader)
    }
}

pub struct Context {
    pub client: Client,
    pub leader: LeaderState,
    pub metrics: ReconcileMetrics,
    pub mapper: SharedMapper,
}

pub async fn reconcile(sub: Arc<Substitute>, ctx: Arc<Context>) -> Result<Action, Error> {
    let _timer = ctx.metrics.start();
    if !ctx.leader.is_leader() {
        return Err(Error::NotLeader);
    }
    let ns = sub.namespace().unwrap_or_default();
    let name = sub.name_any();
    let target = &sub.spec.substitute_target_ref;
    let described = format!("{} {}", target.kind, target.name);
    let group = target
        .api_version
        .as_deref()
        .and_then(|v| v.split_once('/'))
        .map_or("", |(g, _)| g);
    let mapping = ctx
        .mapper
        .current()
        .by_kind(group, &target.kind)
        .cloned()
        .ok_or_else(|| Error::Target {
            target: described.clone(),
            reason: "no such kind is served".into(),
        })?;
    let workload: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), &ns, &mapping.api_resource());
    let scale = workload
        .get_scale(&target.name)
        .await
        .map_err(|e| Error::Target {
            target: described.clone(),
            reason: e.to_string(),
        })?;
    let status = SubstituteStatus {
        label_selector: scale.status.and_then(|s| s.selector).unwrap_or_default(),
        replicas: sub.spec.replicas,
    };
    let api: Api<Substitute> = Api::namespaced(ctx.client.clone(), &ns);
    if sub.status.as_ref() != Some(&status) {
        StatusWrites::Subresource
            .apply(&api, &name, &json!(status))
            .await
            .map_err(|source| Error::Write {
                what: format!("the status of Substitute {ns}/{name}"),
                source,
            })?;
    }
    Ok(Action::requeue(RESYNC))
}

pub fn error_policy(sub: Arc<Substitute>, error: &Error, ctx: Arc<Context>) -> Action {
    use crate::controller::{object_key, retry_failed};
    retry_failed(&object_key(sub.as_ref()), error, &ctx.metrics, RESYNC)
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    ctx: Context,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let leadership = ctx.leader.clone().changes();
    crate::controller::drain(
        Controller::new(
            Api::<Substitute>::all(ctx.client.clone()),
            watcher::Config::default(),
        )
        .reconcile_all_on(leadership)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Arc::new(ctx)),
    )
    .await;
}
