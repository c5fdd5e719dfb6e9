//! Crane's `crane_analysis_*` metrics (`pkg/metrics/analysis.go`), names, labels and values.
//!
//! * `crane_analysis_resource_recommendation{apiversion,owner_kind,namespace,owner_name,container,resource}`:
//!   recommended CPU (cores) / memory (bytes) request.
//! * `crane_analysis_replicas_recommendation{apiversion,owner_kind,namespace,owner_name}`.
//! * `crane_analysis_recommendation_execution_total{apiversion,owner_kind,namespace,owner_name,type}`.
//! * `crane_analysis_recommendations_status{type,apiversion,owner_kind,namespace,owner_name,update_status,result_status}`:
//!   seconds since the Recommendation was last updated; `update_status` is `Updated` or `OutDate`
//!   (older than 24 h, Crane's `--recommendation-outdate-interval`), `result_status` `Success`
//!   when it holds a value, else `Failed`.
//! * `crane_analysis_select_targets{type,apiversion,owner_kind,namespace,owner_name}` = 1.
//!
//! Difference, on purpose (Crane #695): every series of a Recommendation is removed when the
//! Recommendation is deleted (target or rule gone), so dashboards do not show ghosts. Each
//! Recommendation's label sets are remembered for that.
//!
//! Crane's autoscaling exports (`crane_autoscaling_*`, `crane_prediction_tsp`) are in
//! [`autoscaling`]; craned's own telemetry of its controllers is in [`reconcile`].

pub mod autoscaling;
pub mod reconcile;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use prometheus::{CounterVec, GaugeVec, Opts, Registry};

/// Crane's default `--recommendation-outdate-interval`.
pub const OUTDATE_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// The target labels every series carries.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TargetLabels {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The recommender (`type` label).
    pub recommender: String,
}

#[derive(Debug, Clone, Default)]
struct Tracked {
    target: Option<TargetLabels>,
    resource: Vec<(String, &'static str)>,
    replicas: bool,
    executed: bool,
    status: Option<(SystemTime, bool)>,
    last_status_labels: Option<(&'static str, &'static str)>,
}

/// The registry and the series of each Recommendation (keyed `namespace/name`).
pub struct CraneMetrics {
    pub registry: Registry,
    resource: GaugeVec,
    replicas: GaugeVec,
    executions: CounterVec,
    status: GaugeVec,
    select_targets: GaugeVec,
    tracked: Mutex<BTreeMap<String, Tracked>>,
}

impl std::fmt::Debug for CraneMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CraneMetrics").finish_non_exhaustive()
    }
}

fn resource_labels<'a>(t: &'a TargetLabels, container: &'a str, resource: &'a str) -> [&'a str; 6] {
    [
        &t.api_version,
        &t.kind,
        &t.namespace,
        &t.name,
        container,
        resource,
    ]
}

/// `apiversion, owner_kind, namespace, owner_name, type` (the execution counter's order).
fn execution_labels(t: &TargetLabels) -> [&str; 5] {
    [
        &t.api_version,
        &t.kind,
        &t.namespace,
        &t.name,
        &t.recommender,
    ]
}

/// `type, apiversion, owner_kind, namespace, owner_name` (select_targets; status adds two).
fn typed_labels(t: &TargetLabels) -> [&str; 5] {
    [
        &t.recommender,
        &t.api_version,
        &t.kind,
        &t.namespace,
        &t.name,
    ]
}

fn status_labels<'a>(t: &'a TargetLabels, update: &'a str, result: &'a str) -> [&'a str; 7] {
    let [a, b, c, d, e] = typed_labels(t);
    [a, b, c, d, e, update, result]
}

fn opts(name: &str, help: &str) -> Opts {
    Opts::new(name, help)
        .namespace("crane")
        .subsystem("analysis")
}

impl CraneMetrics {
    pub fn new(registry: Registry) -> Result<Self, prometheus::Error> {
        let resource = GaugeVec::new(
            opts(
                "resource_recommendation",
                "The containers' CPU/Memory recommended value",
            ),
            &[
                "apiversion",
                "owner_kind",
                "namespace",
                "owner_name",
                "container",
                "resource",
            ],
        )?;
        let replicas = GaugeVec::new(
            opts(
                "replicas_recommendation",
                "The workload's replicas recommended value",
            ),
            &["apiversion", "owner_kind", "namespace", "owner_name"],
        )?;
        let executions = CounterVec::new(
            opts(
                "recommendation_execution_total",
                "The number of times Recommendation has been executed",
            ),
            &[
                "apiversion",
                "owner_kind",
                "namespace",
                "owner_name",
                "type",
            ],
        )?;
        let status = GaugeVec::new(
            opts("recommendations_status", "The status of recommendations"),
            &[
                "type",
                "apiversion",
                "owner_kind",
                "namespace",
                "owner_name",
                "update_status",
                "result_status",
            ],
        )?;
        let select_targets = GaugeVec::new(
            opts("select_targets", "The number of selected targets"),
            &[
                "type",
                "apiversion",
                "owner_kind",
                "namespace",
                "owner_name",
            ],
        )?;
        registry.register(Box::new(resource.clone()))?;
        registry.register(Box::new(replicas.clone()))?;
        registry.register(Box::new(executions.clone()))?;
        registry.register(Box::new(status.clone()))?;
        registry.register(Box::new(select_targets.clone()))?;
        Ok(CraneMetrics {
            registry,
            resource,
            replicas,
            executions,
            status,
            select_targets,
            tracked: Mutex::default(),
        })
    }

    fn with<R>(&self, key: &str, t: &TargetLabels, f: impl FnOnce(&mut Tracked) -> R) -> R {
        let mut map = self.tracked.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map.entry(key.to_string()).or_default();
        entry.target = Some(t.clone());
        f(entry)
    }

    /// A run of the recommendation happened; the target is selected.
    pub fn executed(&self, key: &str, t: &TargetLabels) {
        self.executions
            .with_label_values(&execution_labels(t))
            .inc();
        self.select_targets
            .with_label_values(&typed_labels(t))
            .set(1.0);
        self.with(key, t, |e| e.executed = true);
    }

    /// Recommended requests per container: (container, cpu cores, memory bytes). Containers
    /// no longer recommended lose their series.
    pub fn set_resources(&self, key: &str, t: &TargetLabels, containers: &[(String, f64, f64)]) {
        let new: Vec<(String, &'static str)> = containers
            .iter()
            .flat_map(|(c, _, _)| [(c.clone(), "cpu"), (c.clone(), "memory")])
            .collect();
        let old = self.with(key, t, |e| std::mem::replace(&mut e.resource, new.clone()));
        for (c, r) in old.iter().filter(|o| !new.contains(o)) {
            let _ = self.resource.remove_label_values(&resource_labels(t, c, r));
        }
        for (c, cpu, mem) in containers {
            self.resource
                .with_label_values(&resource_labels(t, c, "cpu"))
                .set(*cpu);
            self.resource
                .with_label_values(&resource_labels(t, c, "memory"))
                .set(*mem);
        }
    }

    pub fn set_replicas(&self, key: &str, t: &TargetLabels, replicas: f64) {
        self.replicas
            .with_label_values(&[&t.api_version, &t.kind, &t.namespace, &t.name])
            .set(replicas);
        self.with(key, t, |e| e.replicas = true);
    }

    /// The Recommendation was written at `updated`; `success`: it holds a value.
    pub fn set_status(&self, key: &str, t: &TargetLabels, updated: SystemTime, success: bool) {
        self.with(key, t, |e| e.status = Some((updated, success)));
        self.refresh_status_of(key);
    }

    fn refresh_status_of(&self, key: &str) {
        let mut map = self.tracked.lock().unwrap_or_else(|e| e.into_inner());
        let Some(e) = map.get_mut(key) else { return };
        let (Some(t), Some((updated, success))) = (e.target.clone(), e.status) else {
            return;
        };
        let age = SystemTime::now()
            .duration_since(updated)
            .unwrap_or_default();
        let update_status = if age > OUTDATE_INTERVAL {
            "OutDate"
        } else {
            "Updated"
        };
        let result_status = if success { "Success" } else { "Failed" };
        if let Some((u, r)) = e.last_status_labels
            && (u, r) != (update_status, result_status)
        {
            let _ = self.status.remove_label_values(&status_labels(&t, u, r));
        }
        e.last_status_labels = Some((update_status, result_status));
        self.status
            .with_label_values(&status_labels(&t, update_status, result_status))
            .set(age.as_secs_f64());
    }

    /// Recomputes every status gauge's age (Crane's checker does it hourly; craned before
    /// each scrape-relevant tick).
    pub fn refresh_status(&self) {
        let keys: Vec<String> = {
            let map = self.tracked.lock().unwrap_or_else(|e| e.into_inner());
            map.keys().cloned().collect()
        };
        for k in keys {
            self.refresh_status_of(&k);
        }
    }

    /// The Recommendation `key` is gone: all its series go too.
    pub fn forget(&self, key: &str) {
        let Some(e) = self
            .tracked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
        else {
            return;
        };
        let Some(t) = e.target else { return };
        for (c, r) in &e.resource {
            let _ = self
                .resource
                .remove_label_values(&resource_labels(&t, c, r));
        }
        if e.replicas {
            let _ = self.replicas.remove_label_values(&[
                &t.api_version,
                &t.kind,
                &t.namespace,
                &t.name,
            ]);
        }
        if e.executed {
            let _ = self.executions.remove_label_values(&execution_labels(&t));
            let _ = self.select_targets.remove_label_values(&typed_labels(&t));
        }
        if let Some((u, r)) = e.last_status_labels {
            let _ = self.status.remove_label_values(&status_labels(&t, u, r));
        }
    }

    /// Keys (`namespace/name`) of every Recommendation with series.
    pub fn tracked_keys(&self) -> Vec<String> {
        self.tracked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry as `/metrics` serves it.
    pub(super) fn text(r: &Registry) -> String {
        let mut buf = String::new();
        prometheus::TextEncoder::new()
            .encode_utf8(&r.gather(), &mut buf)
            .unwrap();
        buf
    }

    fn target() -> TargetLabels {
        TargetLabels {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "ns".into(),
            name: "web".into(),
            recommender: "Resource".into(),
        }
    }

    #[test]
    fn series_follow_their_recommendation() {
        let m = CraneMetrics::new(Registry::new()).unwrap();
        let t = target();
        m.executed("ns/r1", &t);
        m.set_resources(
            "ns/r1",
            &t,
            &[("app".into(), 0.25, 1e9), ("side".into(), 0.1, 1e6)],
        );
        m.set_status("ns/r1", &t, SystemTime::now(), true);
        let out = text(&m.registry);
        assert!(out.contains(r#"crane_analysis_resource_recommendation{apiversion="apps/v1",container="app",namespace="ns",owner_kind="Deployment",owner_name="web",resource="cpu"} 0.25"#), "{out}");
        assert!(out.contains(r#"crane_analysis_recommendation_execution_total{apiversion="apps/v1",namespace="ns",owner_kind="Deployment",owner_name="web",type="Resource"} 1"#), "{out}");
        assert!(
            out.contains(r#"result_status="Success",type="Resource",update_status="Updated"}"#),
            "{out}"
        );

        // A container disappears from the recommendation: its series go.
        m.set_resources("ns/r1", &t, &[("app".into(), 0.5, 1e9)]);
        let out = text(&m.registry);
        assert!(!out.contains(r#"container="side""#), "{out}");
        assert!(out.contains(r#"resource="cpu"} 0.5"#), "{out}");

        m.forget("ns/r1");
        let out = text(&m.registry);
        assert!(!out.contains("owner_name=\"web\""), "{out}");
        assert!(m.tracked_keys().is_empty());
    }

    #[test]
    fn status_labels_switch_without_leaving_the_old_series() {
        let m = CraneMetrics::new(Registry::new()).unwrap();
        let t = target();
        m.set_status("ns/r1", &t, SystemTime::now(), false);
        m.set_status(
            "ns/r1",
            &t,
            SystemTime::now() - Duration::from_secs(25 * 3600),
            true,
        );
        let out = text(&m.registry);
        assert!(!out.contains("Failed"), "{out}");
        assert!(
            out.contains(r#"result_status="Success",type="Resource",update_status="OutDate""#),
            "{out}"
        );
    }
}
