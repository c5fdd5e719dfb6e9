//! The OOM recorder: remembers which containers were OOM-killed, with what memory request, so
//! the Resource recommender's OOM protection can raise their memory.
//!
//! It watches every pod for containers whose `lastState.terminated.reason` is `OOMKilled` and
//! keeps one record per (namespace, pod, container) in memory and in the ConfigMap
//! `oom-record`, key `data`, of craned's namespace, as Crane's JSON array:
//!
//! ```json
//! [{"Namespace":"shop","Pod":"web-7d4b9c-x2x5q","Container":"app","Memory":"512Mi",
//!   "OOMAt":"2024-05-01T10:00:00Z","Workload":{"APIVersion":"apps/v1","Kind":"Deployment","Name":"web"}}]
//! ```
//!
//! `Memory` is the container's memory request, `OOMAt` the termination's `finishedAt`.
//! `Workload` is ours: Crane matches records to a workload by pod-name prefix, so `web` also
//! claims `web-canary`'s kills (Crane #823); here the pod's owner references are followed
//! (Pod → ReplicaSet → Deployment, Pod → Job → CronJob, Pod → StatefulSet ...) when the kill is
//! recorded. Crane ignores the extra field, and records Crane wrote (without it) are attributed
//! when their pod is seen again; a record whose pod is gone stays unattributed rather than
//! guessed from its name.
//!
//! Differences from Crane, on purpose: `--oom-record-max-number` (Crane's default 10000) keeps
//! the newest records and the trimmed list is really written back (Crane's cleaner keeps the
//! oldest and only trims its cache); writes are read-modify-write under the resourceVersion,
//! retried on 409, and batched (one write per second at most).
//!
//! # Wiring
//!
//! ```text
//! let handle = oom::spawn(client, oom::default_namespace(), args.oom_record_max_number, shutdown);
//! let store = handle.store();          // clone into the recommenders
//! // Resource recommender, per workload:
//! let ooms = store.records_for_workload(ns, "Deployment", name, now - cfg.oom_history_length_secs);
//! recommender.recommend(&containers, &ooms, now)?;
//! ```
//!
//! [`spawn`] returns at once; lookups see no records until [`OomRecorderHandle::loaded`]. The
//! task needs `get/list/watch` on pods, `get` on replicasets and jobs, and `get/create/update`
//! on configmaps in its namespace.

mod record;
mod recorder;

pub use record::{
    OOM_KILLED, OomStore, Record, WorkloadRef, controller_of, decode, encode, fill_workload,
    format_time, has_unattributed, is_news, merge, needs_parent, parse_time, records_from_pod,
    trim, workload_of,
};
pub use recorder::{OomRecorderHandle, spawn};

/// Crane's `ConfigMapOOMRecordName`.
pub const CONFIGMAP_NAME: &str = "oom-record";
/// Crane's `ConfigMapDataOOMRecord`.
pub const CONFIGMAP_KEY: &str = "data";
/// Crane's default `--oom-record-max-number` (craned's options).
pub const DEFAULT_MAX_RECORDS: usize = 10_000;
/// Crane's default namespace (`known.CraneSystemNamespace`).
pub const DEFAULT_NAMESPACE: &str = "crane-system";

/// craned's namespace as Crane finds it: `CRANE_SYSTEM_NAMESPACE`, else `crane-system`.
pub fn default_namespace() -> String {
    std::env::var("CRANE_SYSTEM_NAMESPACE")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string())
}

#[derive(Debug, thiserror::Error)]
pub enum OomError {
    #[error("ConfigMap {CONFIGMAP_NAME} key {CONFIGMAP_KEY}: {0}")]
    Document(String),
    #[error("OOM record {index}: {field}: {message}")]
    Decode {
        index: usize,
        field: String,
        message: String,
    },
    #[error("ConfigMap {CONFIGMAP_NAME}: still conflicting after {0} attempts")]
    Conflict(usize),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

#[cfg(test)]
mod tests;
