//! The I/O half of the OOM recorder: load the ConfigMap, watch pods, resolve owners, write
//! the ConfigMap back with conflict retry. Every decision is made by the pure functions of
//! [`super::record`].

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::record::{
    OomStore, Record, WorkloadRef, controller_of, decode, encode, fill_workload, has_unattributed,
    is_news, merge, needs_parent, records_from_pod, trim, workload_of,
};
use super::{CONFIGMAP_KEY, CONFIGMAP_NAME, OomError};

/// Changes are written at most this often: a re-list that finds many kills writes once.
const WRITE_BATCH: Duration = Duration::from_secs(1);
/// Attempts of one read-modify-write before giving up until the next batch.
const CONFLICT_RETRIES: usize = 5;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What [`spawn`] returns: the shared records and the task.
#[derive(Debug)]
pub struct OomRecorderHandle {
    store: OomStore,
    loaded: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl OomRecorderHandle {
    /// The records, for the recommenders' lookups.
    pub fn store(&self) -> OomStore {
        self.store.clone()
    }

    /// Waits until the ConfigMap has been read (until then lookups see no records). Returns
    /// false if the recorder stopped first.
    pub async fn loaded(&self) -> bool {
        let mut rx = self.loaded.clone();
        rx.wait_for(|&l| l).await.is_ok()
    }

    /// Waits for the task to end (after `shutdown`, having written pending changes).
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

/// Starts the recorder: it loads `oom-record` from `namespace` (retrying until it can), keeps at
/// most `max_records`, watches every pod, and writes each change back; it stops when
/// `shutdown` completes, after a last write of pending changes.
pub fn spawn<F>(
    client: Client,
    namespace: String,
    max_records: usize,
    shutdown: F,
) -> OomRecorderHandle
where
    F: Future<Output = ()> + Send + 'static,
{
    let store = OomStore::default();
    let (loaded_tx, loaded) = watch::channel(false);
    let recorder = Recorder {
        client,
        namespace,
        max_records,
        store: store.clone(),
        records: Vec::new(),
    };
    let task = tokio::spawn(recorder.run(loaded_tx, shutdown));
    OomRecorderHandle {
        store,
        loaded,
        task,
    }
}

struct Recorder {
    client: Client,
    namespace: String,
    max_records: usize,
    store: OomStore,
    /// The working copy; published to `store` after every change.
    records: Vec<Record>,
}

fn next_backoff(d: Duration) -> Duration {
    (d * 2).min(MAX_BACKOFF)
}

impl Recorder {
    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    async fn run<F>(mut self, loaded: watch::Sender<bool>, shutdown: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        tokio::pin!(shutdown);
        let mut backoff = Duration::from_secs(1);
        let dirty = loop {
            let attempt = self.load();
            tokio::select! {
                _ = &mut shutdown => return,
                r = attempt => match r {
                    Ok(records) => {
                        self.records = records;
                        // A lower --oom-record-max-number than last time: write the trim back.
                        let trimmed = trim(&mut self.records, self.max_records);
                        self.publish();
                        break trimmed;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, namespace = %self.namespace, "reading ConfigMap {CONFIGMAP_NAME}; retrying");
                        tokio::select! {
                            _ = &mut shutdown => return,
                            _ = tokio::time::sleep(backoff) => {}
                        }
                        backoff = next_backoff(backoff);
                    }
                }
            }
        };
        let _ = loaded.send(true);
        tracing::info!(records = self.records.len(), "OOM records loaded");

        let pods: Api<Pod> = Api::all(self.client.clone());
        let mut events = watcher(pods).boxed();
        let mut write_at: Option<tokio::time::Instant> = dirty.then(tokio::time::Instant::now);
        let mut write_backoff = WRITE_BATCH;
        loop {
            let due = write_at;
            tokio::select! {
                _ = &mut shutdown => break,
                _ = async { tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)).await }, if due.is_some() => {
                    match self.persist().await {
                        Ok(()) => {
                            write_at = None;
                            write_backoff = WRITE_BATCH;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "writing ConfigMap {CONFIGMAP_NAME}; retrying");
                            write_backoff = next_backoff(write_backoff);
                            write_at = Some(tokio::time::Instant::now() + write_backoff);
                        }
                    }
                }
                ev = events.next() => match ev {
                    None => break,
                    Some(Err(e)) => tracing::warn!(error = %e, "pod watch failed; retrying"),
                    Some(Ok(Event::Apply(pod) | Event::InitApply(pod))) => {
                        if self.observe(&pod).await && write_at.is_none() {
                            write_at = Some(tokio::time::Instant::now() + WRITE_BATCH);
                        }
                    }
                    Some(Ok(_)) => {}
                },
            }
        }
        if write_at.is_some()
            && let Err(e) = self.persist().await
        {
            tracing::warn!(error = %e, "writing ConfigMap {CONFIGMAP_NAME} at shutdown");
        }
    }

    fn publish(&self) {
        self.store.replace(self.records.clone());
    }

    /// The records in the ConfigMap (none when it does not exist).
    async fn load(&self) -> Result<Vec<Record>, OomError> {
        let Some(cm) = self.configmaps().get_opt(CONFIGMAP_NAME).await? else {
            return Ok(Vec::new());
        };
        Ok(stored_records(&cm))
    }

    /// Takes in what a pod's status says; returns whether the records changed.
    async fn observe(&mut self, pod: &Pod) -> bool {
        let candidates = records_from_pod(pod);
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let news = candidates.iter().any(|c| is_news(&self.records, c));
        if !news && !has_unattributed(&self.records, namespace, name) {
            return false;
        }
        let workload = self.resolve_workload(pod).await;
        let mut changed = false;
        for mut c in candidates {
            tracing::info!(namespace = %c.namespace, pod = %c.pod, container = %c.container, memory = %c.memory, "container was OOM-killed");
            c.workload = workload.clone();
            changed |= merge(&mut self.records, c);
        }
        if let Some(w) = &workload {
            changed |= fill_workload(&mut self.records, namespace, name, w);
        }
        if changed {
            trim(&mut self.records, self.max_records);
            self.publish();
        }
        changed
    }

    /// The pod's workload by owner references: the controller, or its controller for a
    /// ReplicaSet or Job. A failed lookup leaves the record unattributed, to be filled the
    /// next time the pod is seen.
    async fn resolve_workload(&self, pod: &Pod) -> Option<WorkloadRef> {
        let owner = controller_of(&pod.metadata);
        let parent = match owner {
            Some(o) if needs_parent(o) => {
                let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
                match self.parent_of(ns, o).await {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!(error = %e, kind = %o.kind, name = %o.name, "looking up the owner of an OOM-killed pod");
                        return None;
                    }
                }
            }
            _ => None,
        };
        workload_of(owner, parent.as_ref())
    }

    async fn parent_of(
        &self,
        namespace: &str,
        owner: &OwnerReference,
    ) -> Result<Option<OwnerReference>, kube::Error> {
        let meta = if owner.kind == "Job" {
            Api::<Job>::namespaced(self.client.clone(), namespace)
                .get_metadata_opt(&owner.name)
                .await?
                .map(|m| m.metadata)
        } else {
            Api::<ReplicaSet>::namespaced(self.client.clone(), namespace)
                .get_metadata_opt(&owner.name)
                .await?
                .map(|m| m.metadata)
        };
        Ok(meta.as_ref().and_then(controller_of).cloned())
    }

    /// Read-modify-write of the ConfigMap: what is stored is merged with ours (another writer,
    /// or a write of ours that failed, is not lost), trimmed, and replaced under the
    /// resourceVersion read; a 409 starts over.
    async fn persist(&mut self) -> Result<(), OomError> {
        let api = self.configmaps();
        for _ in 0..CONFLICT_RETRIES {
            let current = api.get_opt(CONFIGMAP_NAME).await?;
            let mut merged = self.records.clone();
            if let Some(cm) = &current {
                for r in stored_records(cm) {
                    merge(&mut merged, r);
                }
            }
            trim(&mut merged, self.max_records);
            let data = encode(&merged);
            let result = match current {
                Some(cm) => {
                    if cm.data.as_ref().and_then(|d| d.get(CONFIGMAP_KEY)) == Some(&data) {
                        Ok(())
                    } else {
                        let mut cm = cm;
                        cm.data
                            .get_or_insert_with(BTreeMap::new)
                            .insert(CONFIGMAP_KEY.to_string(), data);
                        // `replace` sends the resourceVersion read above: a concurrent write
                        // makes it fail with 409 instead of being overwritten.
                        api.replace(CONFIGMAP_NAME, &PostParams::default(), &cm)
                            .await
                            .map(drop)
                    }
                }
                None => {
                    let cm = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(CONFIGMAP_NAME.to_string()),
                            namespace: Some(self.namespace.clone()),
                            ..Default::default()
                        },
                        data: Some(BTreeMap::from([(CONFIGMAP_KEY.to_string(), data)])),
                        ..Default::default()
                    };
                    api.create(&PostParams::default(), &cm).await.map(drop)
                }
            };
            match result {
                Ok(()) => {
                    let written = merged.len();
                    if merged != self.records {
                        self.records = merged;
                        self.publish();
                    }
                    tracing::debug!(records = written, "OOM records written");
                    return Ok(());
                }
                // 409: Conflict on update, AlreadyExists on create.
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(OomError::Conflict(CONFLICT_RETRIES))
    }
}

fn stored_records(cm: &ConfigMap) -> Vec<Record> {
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(CONFIGMAP_KEY))
        .map(String::as_str)
        .unwrap_or_default();
    match decode(text) {
        Ok((records, bad)) => {
            for e in bad {
                tracing::warn!(error = %e, "skipping an unreadable OOM record in ConfigMap {CONFIGMAP_NAME}");
            }
            records
        }
        Err(e) => {
            // Unreadable as a whole: start over rather than stop recording; the next write
            // replaces it.
            tracing::warn!(error = %e, "ConfigMap {CONFIGMAP_NAME} is unreadable; its records are dropped");
            Vec::new()
        }
    }
}

fn watcher(pods: Api<Pod>) -> impl futures::Stream<Item = Result<Event<Pod>, watcher::Error>> {
    watcher::watcher(pods, watcher::Config::default()).default_backoff()
}
