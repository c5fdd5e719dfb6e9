//! What the controller watches and what its reconciles share, assembled from [`Wiring`].

use std::sync::Arc;

use ferrocrane_core::kube::SharedMapper;
use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Client, Resource, ResourceExt};
use tokio::sync::watch;

use super::RUN_ONCE_ANNOTATION;
use super::context::Context;
use super::execute::OomSource;
use super::naming::rec_key;
use crate::controller::events::Events;
use crate::controller::leader::LeaderState;
use crate::controller::status_writes::StatusWrites;
use crate::crd::{Recommendation, RecommendationRule, known};
use crate::datasource::History;
use crate::metrics::CraneMetrics;
use crate::metrics::reconcile::ReconcileMetrics;
use crate::recommender::RecommendationConfiguration;

/// Inputs of [`super::run`].
pub struct Wiring {
    pub client: Client,
    pub config: watch::Receiver<Arc<RecommendationConfiguration>>,
    pub history: History,
    pub metrics: Arc<CraneMetrics>,
    pub reconcile_metrics: ReconcileMetrics,
    pub mapper: SharedMapper,
    pub namespace: String,
    pub identity: String,
    pub auto_adoption: bool,
    pub leader: LeaderState,
    pub oom: OomSource,
    pub concurrency: usize,
    pub status_writes: StatusWrites,
    /// `--skip-unchanged-writes`.
    pub skip_unchanged_writes: bool,
}

impl Wiring {
    /// The reconciles' context, with the store of Recommendations they read.
    pub(super) fn into_context(self, recommendations: Store<Recommendation>) -> Context {
        Context {
            events: Events::new(
                self.client.clone(),
                self.identity,
                self.leader.clone(),
                "Recommend",
            ),
            client: self.client,
            config: self.config,
            history: self.history,
            metrics: self.metrics,
            reconcile_metrics: self.reconcile_metrics,
            mapper: self.mapper,
            namespace: self.namespace,
            auto_adoption: self.auto_adoption,
            leader: self.leader,
            oom: self.oom,
            recommendations,
            concurrency: self.concurrency,
            status_writes: self.status_writes,
            run_numbers: super::unchanged::RunNumbers::new(self.skip_unchanged_writes),
        }
    }
}

/// Every Recommendation of a rule, kept by a spawned watch; the `crane_*` series of a deleted
/// one go with it.
pub(super) fn recommendation_store(
    client: &Client,
    metrics: Arc<CraneMetrics>,
) -> Store<Recommendation> {
    let (reader, writer) = reflector::store();
    let recs: Api<Recommendation> = Api::all(client.clone());
    let watch = watcher(
        recs,
        watcher::Config::default().labels(known::RECOMMENDATION_RULE_UID_LABEL),
    )
    .default_backoff()
    // Two field managers (spec and status applies) make managedFields a good part of each
    // Recommendation; nothing here reads them, and the store holds every Recommendation.
    .modify(|r| r.managed_fields_mut().clear())
    .reflect(writer)
    .for_each(move |ev| {
        if let Ok(watcher::Event::Delete(r)) = &ev {
            metrics.forget(&rec_key(&r.namespace().unwrap_or_default(), &r.name_any()));
        }
        futures::future::ready(())
    });
    tokio::spawn(watch);
    reader
}

/// A deleted workload: every rule re-checks its targets.
pub(super) fn workload_deletions(client: &Client) -> impl Stream<Item = ()> + Send + 'static {
    fn deletions<K>(client: &Client) -> impl Stream<Item = ()> + Send + 'static
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
    stream::select(
        deletions::<Deployment>(client),
        stream::select(
            deletions::<StatefulSet>(client),
            deletions::<DaemonSet>(client),
        ),
    )
}

/// Rules, with the changes that call for a reconcile: spec changes (generation) and the
/// run-once annotation, not craned's own status writes.
pub(super) fn rule_changes(
    client: &Client,
) -> (
    Store<RecommendationRule>,
    impl Stream<Item = Result<RecommendationRule, watcher::Error>> + Send + 'static,
) {
    let (reader, writer) = reflector::store();
    let rules: Api<RecommendationRule> = Api::all(client.clone());
    let changes = watcher(rules, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
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
    (reader, changes)
}

/// A new configuration file re-runs nothing by itself (rounds keep their schedule), but
/// identities change when a recommender's acceptedResources do.
pub(super) fn config_changes(
    config: watch::Receiver<Arc<RecommendationConfiguration>>,
) -> impl Stream<Item = ()> + Send + 'static {
    stream::unfold(config, |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    })
}
