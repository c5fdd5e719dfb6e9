//! The pure half of the OOM recorder: records, their JSON codec, merging, trimming, finding
//! them in a pod's status, attributing them to a workload by owner references, and the
//! lookups the Resource recommender uses.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use ferrocrane_core::quantity::Quantity;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::OomError;
use crate::recommender::resource::OomRecord;

/// The reason a kubelet writes into `lastState.terminated.reason` after an OOM kill.
pub const OOM_KILLED: &str = "OOMKilled";

/// The workload a record belongs to: the pod's controller, or the controller of that
/// controller for the kinds that sit between a workload and its pods (ReplicaSet → Deployment,
/// Job → CronJob). Stored in the record under `Workload` (Crane has no such field; its decoder
/// ignores it, so the ConfigMap stays readable by Crane).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkloadRef {
    #[serde(rename = "APIVersion", default)]
    pub api_version: String,
    #[serde(rename = "Kind")]
    pub kind: String,
    #[serde(rename = "Name")]
    pub name: String,
}

impl WorkloadRef {
    fn from_owner(o: &OwnerReference) -> Self {
        WorkloadRef {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            name: o.name.clone(),
        }
    }
}

/// One OOM kill, as Crane's `oom.OOMRecord` (`Namespace`, `Pod`, `Container`, `Memory` — the
/// container's memory request as a quantity —, `OOMAt` — RFC 3339), plus the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    /// The quantity as written (`512Mi`), so a record read from Crane is written back verbatim.
    pub memory: String,
    /// `memory` in bytes (apimachinery's `Value()`, rounded up).
    pub memory_bytes: i64,
    /// Unix seconds.
    pub oom_at: i64,
    pub workload: Option<WorkloadRef>,
}

impl Record {
    fn same_container(&self, other: &Record) -> bool {
        self.namespace == other.namespace
            && self.pod == other.pod
            && self.container == other.container
    }
}

/// The wire form of one record.
#[derive(Serialize, Deserialize)]
struct Wire {
    #[serde(rename = "Namespace", default)]
    namespace: String,
    #[serde(rename = "Pod", default)]
    pod: String,
    #[serde(rename = "Container", default)]
    container: String,
    #[serde(rename = "Memory", default)]
    memory: Value,
    #[serde(rename = "OOMAt", default)]
    oom_at: Value,
    #[serde(rename = "Workload", default, skip_serializing_if = "Option::is_none")]
    workload: Option<WorkloadRef>,
}

/// Go's `time.Time` JSON form (RFC 3339, UTC, fraction only when not zero).
pub fn format_time(unix_secs: i64) -> String {
    match Timestamp::from_second(unix_secs) {
        Ok(t) => t.to_string(),
        // Out of jiff's range (about ±10,000 years); Go's zero time is inside it.
        Err(_) => "0001-01-01T00:00:00Z".to_string(),
    }
}

/// RFC 3339 (any offset, optional fraction) to Unix seconds, truncating the fraction.
pub fn parse_time(s: &str) -> Option<i64> {
    s.parse::<Timestamp>().ok().map(|t| t.as_second())
}

fn decode_one(index: usize, v: Value) -> Result<Record, OomError> {
    let err = |field: &str, message: String| OomError::Decode {
        index,
        field: field.to_string(),
        message,
    };
    let w: Wire = serde_json::from_value(v).map_err(|e| err("record", e.to_string()))?;
    // apimachinery's Quantity accepts a JSON string or a bare number.
    let memory = match &w.memory {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => return Err(err("Memory", format!("{other} is not a quantity"))),
    };
    let memory_bytes = Quantity::parse(&memory)
        .map_err(|e| err("Memory", e.to_string()))?
        .value();
    let oom_at = match &w.oom_at {
        Value::String(s) => {
            parse_time(s).ok_or_else(|| err("OOMAt", format!("{s:?} is not an RFC 3339 time")))?
        }
        other => return Err(err("OOMAt", format!("{other} is not an RFC 3339 time"))),
    };
    if w.pod.is_empty() {
        return Err(err("Pod", "must not be empty".into()));
    }
    if w.container.is_empty() {
        return Err(err("Container", "must not be empty".into()));
    }
    Ok(Record {
        namespace: w.namespace,
        pod: w.pod,
        container: w.container,
        memory,
        memory_bytes,
        oom_at,
        workload: w.workload,
    })
}

/// Decodes the ConfigMap's `data` value. A document that is not a JSON array (or `null`, or
/// empty) is an error; a bad entry is skipped and reported in the second list, so one broken
/// record does not lose the others.
pub fn decode(text: &str) -> Result<(Vec<Record>, Vec<OomError>), OomError> {
    if text.trim().is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let doc: Value = serde_json::from_str(text).map_err(|e| OomError::Document(e.to_string()))?;
    let items = match doc {
        Value::Null => Vec::new(),
        Value::Array(items) => items,
        other => {
            return Err(OomError::Document(format!(
                "expected a JSON array of records, found {}",
                kind_of(&other)
            )));
        }
    };
    let mut records = Vec::with_capacity(items.len());
    let mut bad = Vec::new();
    for (i, v) in items.into_iter().enumerate() {
        match decode_one(i, v) {
            Ok(r) => records.push(r),
            Err(e) => bad.push(e),
        }
    }
    Ok((records, bad))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Encodes records in Crane's shape (a compact JSON array, as Go's `json.Marshal`).
pub fn encode(records: &[Record]) -> String {
    let wire: Vec<Wire> = records
        .iter()
        .map(|r| Wire {
            namespace: r.namespace.clone(),
            pod: r.pod.clone(),
            container: r.container.clone(),
            memory: Value::String(r.memory.clone()),
            oom_at: Value::String(format_time(r.oom_at)),
            workload: r.workload.clone(),
        })
        .collect();
    // Strings and maps of strings always serialize.
    serde_json::to_string(&wire).unwrap_or_else(|_| "[]".into())
}

/// Adds `new` to `records`. One record is kept per (namespace, pod, container): a repeat keeps
/// the latest time and the largest memory, and fills in a workload the older one lacked.
/// Returns whether anything changed (so an unchanged re-list writes nothing).
pub fn merge(records: &mut Vec<Record>, new: Record) -> bool {
    let Some(old) = records.iter_mut().find(|r| r.same_container(&new)) else {
        records.push(new);
        return true;
    };
    let mut changed = false;
    if new.oom_at > old.oom_at {
        old.oom_at = new.oom_at;
        changed = true;
    }
    if new.memory_bytes > old.memory_bytes {
        old.memory_bytes = new.memory_bytes;
        old.memory = new.memory;
        changed = true;
    }
    if old.workload.is_none() && new.workload.is_some() {
        old.workload = new.workload;
        changed = true;
    }
    changed
}

/// Keeps at most `max` records, dropping the oldest OOMs (Crane sorts oldest first and keeps
/// the head, i.e. drops the newest, and never writes the result back). Sorts by time, newest
/// last, so the ConfigMap reads chronologically. Returns whether records were dropped.
pub fn trim(records: &mut Vec<Record>, max: usize) -> bool {
    records.sort_by(|a, b| {
        a.oom_at
            .cmp(&b.oom_at)
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.pod.cmp(&b.pod))
            .then_with(|| a.container.cmp(&b.container))
    });
    if records.len() <= max {
        return false;
    }
    let excess = records.len() - max;
    records.drain(..excess);
    true
}

/// The OOM kills a pod's status shows: containers whose `lastState.terminated.reason` is
/// `OOMKilled` and that request memory (Crane records the request and skips containers without
/// one). The time is `finishedAt`, or the restart's `startedAt` when a status lacks it; without
/// either the kill cannot be placed in a window and is skipped. `workload` is left empty.
pub fn records_from_pod(pod: &Pod) -> Vec<Record> {
    let (Some(spec), Some(status)) = (&pod.spec, &pod.status) else {
        return Vec::new();
    };
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let Some(name) = pod.metadata.name.clone() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for cs in status.container_statuses.iter().flatten() {
        let Some(term) = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref()) else {
            continue;
        };
        if term.reason.as_deref() != Some(OOM_KILLED) {
            continue;
        }
        let Some(memory) = spec
            .containers
            .iter()
            .find(|c| c.name == cs.name)
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("memory"))
        else {
            continue;
        };
        let Ok(q) = Quantity::parse(&memory.0) else {
            continue;
        };
        let at = term.finished_at.as_ref().or_else(|| {
            cs.state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .and_then(|r| r.started_at.as_ref())
        });
        let Some(at) = at else { continue };
        out.push(Record {
            namespace: namespace.clone(),
            pod: name.clone(),
            container: cs.name.clone(),
            memory: memory.0.clone(),
            memory_bytes: q.value(),
            oom_at: at.0.as_second(),
            workload: None,
        });
    }
    out
}

/// The controller owner reference of an object (the one with `controller: true`).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

fn api_group(api_version: &str) -> &str {
    api_version
        .split_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default()
}

/// Whether a pod's controller is an intermediate object whose own controller is the workload:
/// a ReplicaSet (a Deployment's, or an Argo Rollout's) or a Job (a CronJob's).
pub fn needs_parent(owner: &OwnerReference) -> bool {
    matches!(
        (api_group(&owner.api_version), owner.kind.as_str()),
        ("apps", "ReplicaSet") | ("batch", "Job")
    )
}

/// The workload of a pod whose controller is `pod_owner`; `parent` is the controller of that
/// owner when [`needs_parent`] asked for it (`None` when it has none: a bare ReplicaSet or Job
/// is its own workload). A pod without a controller belongs to no workload.
pub fn workload_of(
    pod_owner: Option<&OwnerReference>,
    parent: Option<&OwnerReference>,
) -> Option<WorkloadRef> {
    let owner = pod_owner?;
    match parent {
        Some(p) if needs_parent(owner) => Some(WorkloadRef::from_owner(p)),
        _ => Some(WorkloadRef::from_owner(owner)),
    }
}

/// Whether a record from a pod's status would change `records` (a new kill, a later one, or a
/// known one still without its workload). Resolving the workload costs an API call, so the
/// recorder asks this first.
pub fn is_news(records: &[Record], candidate: &Record) -> bool {
    match records.iter().find(|r| r.same_container(candidate)) {
        None => true,
        Some(r) => {
            candidate.oom_at > r.oom_at
                || candidate.memory_bytes > r.memory_bytes
                || r.workload.is_none()
        }
    }
}

/// Fills the workload of the records of pod `namespace/pod` that lack one (records read from a
/// Crane ConfigMap, attributed when their pod is seen). Returns whether any changed.
pub fn fill_workload(
    records: &mut [Record],
    namespace: &str,
    pod: &str,
    workload: &WorkloadRef,
) -> bool {
    let mut changed = false;
    for r in records
        .iter_mut()
        .filter(|r| r.namespace == namespace && r.pod == pod && r.workload.is_none())
    {
        r.workload = Some(workload.clone());
        changed = true;
    }
    changed
}

/// Whether any record of pod `namespace/pod` still lacks its workload.
pub fn has_unattributed(records: &[Record], namespace: &str, pod: &str) -> bool {
    records
        .iter()
        .any(|r| r.namespace == namespace && r.pod == pod && r.workload.is_none())
}

type WorkloadKey = (String, String, String);

#[derive(Debug, Default)]
struct Snapshot {
    records: Vec<Record>,
    /// (namespace, kind, name) → indices into `records`.
    by_workload: HashMap<WorkloadKey, Vec<usize>>,
}

impl Snapshot {
    fn new(records: Vec<Record>) -> Self {
        let mut by_workload: HashMap<WorkloadKey, Vec<usize>> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if let Some(w) = &r.workload {
                by_workload
                    .entry((r.namespace.clone(), w.kind.clone(), w.name.clone()))
                    .or_default()
                    .push(i);
            }
        }
        Snapshot {
            records,
            by_workload,
        }
    }

    fn of_workload<'a>(
        &'a self,
        namespace: &str,
        kind: &str,
        name: &str,
    ) -> impl Iterator<Item = &'a Record> + 'a {
        let key = (namespace.to_string(), kind.to_string(), name.to_string());
        self.by_workload
            .get(&key)
            .into_iter()
            .flatten()
            .map(|&i| &self.records[i])
    }
}

/// The recorder's records, shared with the recommenders. Cheap to clone; lookups read an
/// immutable snapshot indexed by workload, replaced whenever the records change.
#[derive(Debug, Clone, Default)]
pub struct OomStore {
    inner: Arc<RwLock<Arc<Snapshot>>>,
}

impl OomStore {
    pub fn new(records: Vec<Record>) -> Self {
        let store = OomStore::default();
        store.replace(records);
        store
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        // A poisoned lock still holds a complete snapshot (it is only ever swapped whole).
        match self.inner.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    pub fn replace(&self, records: Vec<Record>) {
        let snap = Arc::new(Snapshot::new(records));
        match self.inner.write() {
            Ok(mut g) => *g = snap,
            Err(p) => *p.into_inner() = snap,
        }
    }

    /// Every record, oldest first.
    pub fn records(&self) -> Vec<Record> {
        self.snapshot().records.clone()
    }

    pub fn len(&self) -> usize {
        self.snapshot().records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest memory request (bytes) `container` of workload `kind/name` in `namespace`
    /// was OOM-killed with at or after `since` (Unix seconds), and when (the latest such kill).
    pub fn max_oom_memory(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
        container: &str,
        since: i64,
    ) -> Option<(i64, i64)> {
        let snap = self.snapshot();
        snap.of_workload(namespace, kind, name)
            .filter(|r| r.container == container && r.oom_at >= since)
            .map(|r| (r.memory_bytes, r.oom_at))
            .max()
    }

    /// The workload's kills at or after `since`, in the form the Resource recommender's OOM
    /// protection takes.
    pub fn records_for_workload(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
        since: i64,
    ) -> Vec<OomRecord> {
        let snap = self.snapshot();
        snap.of_workload(namespace, kind, name)
            .filter(|r| r.oom_at >= since)
            .map(|r| OomRecord {
                container: r.container.clone(),
                memory_bytes: r.memory_bytes,
                oom_at: r.oom_at,
            })
            .collect()
    }
}
