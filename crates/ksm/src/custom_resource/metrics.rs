//! One custom object + one resource configuration → metric families, as
//! kube-state-metrics v2.20 generates them.
//!
//! Every sample carries, in sorted label-name order (upstream sorts them all):
//! the `customresource_group`/`_version`/`_kind` labels of the resolved GVK, the
//! resource's and metric's `commonLabels` and `labelsFromPath` (no `namespace` or
//! name label unless configured there), and the labels the metric type produces.
//! Precedence, lowest first: resource `commonLabels`, the GVK labels, metric
//! `commonLabels`, resource/metric `labelsFromPath`, then the type's own labels.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use ferrocrane_core::exposition::{Format, Metric, MetricType, write_header, write_metric_line};
use serde_json::Value;

use super::config::{GroupVersionKind, MetricKind, PathSpec, Resource};
use super::path::{PathError, ValuePath};
use super::value::{go_format_value, to_float64};
use crate::families::{FamilySpec, ResourceFamilies, Stability};
use crate::store::MetricsStore;

/// The label name prefix of the GVK labels.
const GVK_LABEL_PREFIX: &str = "customresource";

/// A configuration that passed [`Validate`](ferrocrane_core::config::Validate) always
/// compiles; this is for configurations built in code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{gvk}: metric {metric:?}: {message}")]
pub struct CompileError {
    pub gvk: String,
    pub metric: String,
    pub message: String,
}

type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone)]
enum Each {
    Gauge {
        path: ValuePath,
        labels_from_path: Vec<(String, ValuePath)>,
        label_from_key: String,
        value_from: ValuePath,
        nil_is_zero: bool,
    },
    Info {
        path: ValuePath,
        labels_from_path: Vec<(String, ValuePath)>,
        label_from_key: String,
    },
    StateSet {
        path: ValuePath,
        labels_from_path: Vec<(String, ValuePath)>,
        list: Vec<String>,
        label_name: String,
        value_from: ValuePath,
    },
}

/// One metric family, ready to generate samples from objects.
#[derive(Debug, Clone)]
pub struct CompiledFamily {
    pub name: String,
    pub help: String,
    pub kind: MetricType,
    /// klog-style verbosity of this family's generation errors (0 = always).
    pub error_log_v: i32,
    labels: Labels,
    labels_from_path: Vec<(String, ValuePath)>,
    each: Each,
}

/// Every family of one configured resource at one concrete GVK.
#[derive(Debug, Clone)]
pub struct CompiledResource {
    pub gvk: GroupVersionKind,
    pub families: Vec<CompiledFamily>,
}

fn compile_paths(
    paths: &BTreeMap<String, PathSpec>,
) -> Result<Vec<(String, ValuePath)>, PathError> {
    paths
        .iter()
        .map(|(k, p)| Ok((k.clone(), ValuePath::compile(&p.0)?)))
        .collect()
}

impl CompiledResource {
    /// Compiles `resource` for the concrete `gvk` it was resolved to (version and kind
    /// wildcards replaced), which is what the GVK labels show.
    pub fn compile(resource: &Resource, gvk: &GroupVersionKind) -> Result<Self, CompileError> {
        let mut families = Vec::with_capacity(resource.metrics.len());
        for m in &resource.metrics {
            let err = |message: String| CompileError {
                gvk: gvk.to_string(),
                metric: m.name.clone(),
                message,
            };
            let mut labels = resource.common_labels.clone();
            labels.insert(format!("{GVK_LABEL_PREFIX}_group"), gvk.group.clone());
            labels.insert(format!("{GVK_LABEL_PREFIX}_version"), gvk.version.clone());
            labels.insert(format!("{GVK_LABEL_PREFIX}_kind"), gvk.kind.clone());
            labels.extend(m.common_labels.clone());
            let mut paths = resource.labels_from_path.clone();
            paths.extend(m.labels_from_path.clone());
            let labels_from_path =
                compile_paths(&paths).map_err(|e| err(format!("labelsFromPath: {e}")))?;
            let each = &m.each;
            let (kind, compiled) = match each.kind {
                MetricKind::Gauge => {
                    let g = each
                        .gauge
                        .as_ref()
                        .ok_or_else(|| err("expected each.gauge to not be nil".into()))?;
                    let c = |p: &PathSpec, what: &str| {
                        ValuePath::compile(&p.0).map_err(|e| err(format!("each.gauge.{what}: {e}")))
                    };
                    (
                        MetricType::Gauge,
                        Each::Gauge {
                            path: c(&g.path, "path")?,
                            labels_from_path: compile_paths(&g.labels_from_path)
                                .map_err(|e| err(format!("each.gauge.labelsFromPath: {e}")))?,
                            label_from_key: g.label_from_key.clone(),
                            value_from: c(&g.value_from, "valueFrom")?,
                            nil_is_zero: g.nil_is_zero,
                        },
                    )
                }
                MetricKind::Info => {
                    let i = each
                        .info
                        .as_ref()
                        .ok_or_else(|| err("expected each.info to not be nil".into()))?;
                    (
                        MetricType::Info,
                        Each::Info {
                            path: ValuePath::compile(&i.path.0)
                                .map_err(|e| err(format!("each.info.path: {e}")))?,
                            labels_from_path: compile_paths(&i.labels_from_path)
                                .map_err(|e| err(format!("each.info.labelsFromPath: {e}")))?,
                            label_from_key: i.label_from_key.clone(),
                        },
                    )
                }
                MetricKind::StateSet => {
                    let s = each
                        .state_set
                        .as_ref()
                        .ok_or_else(|| err("expected each.stateSet to not be nil".into()))?;
                    let c = |p: &PathSpec, what: &str| {
                        ValuePath::compile(&p.0)
                            .map_err(|e| err(format!("each.stateSet.{what}: {e}")))
                    };
                    (
                        MetricType::StateSet,
                        Each::StateSet {
                            path: c(&s.path, "path")?,
                            labels_from_path: compile_paths(&s.labels_from_path)
                                .map_err(|e| err(format!("each.stateSet.labelsFromPath: {e}")))?,
                            list: s.list.clone(),
                            label_name: s.label_name.clone(),
                            value_from: c(&s.value_from, "valueFrom")?,
                        },
                    )
                }
            };
            families.push(CompiledFamily {
                name: resource.full_name(m),
                help: m.help.clone(),
                kind,
                error_log_v: if m.error_log_v != 0 {
                    m.error_log_v
                } else {
                    resource.error_log_v
                },
                labels,
                labels_from_path,
                each: compiled,
            });
        }
        Ok(CompiledResource {
            gvk: gvk.clone(),
            families,
        })
    }

    /// The sample lines of every family for one object (one entry per family, in
    /// family order): what a [`MetricsStore`] from [`Self::new_store`] takes.
    pub fn render(&self, obj: &Value) -> Vec<Vec<u8>> {
        self.families
            .iter()
            .map(|f| {
                let (metrics, errors) = f.generate(obj);
                report(f, obj, &errors);
                let mut buf = Vec::new();
                for m in &metrics {
                    // Keys and values are built together from one map.
                    let _ = write_metric_line(
                        &mut buf,
                        &f.name,
                        &m.label_keys,
                        &m.label_values,
                        m.value,
                    );
                }
                buf
            })
            .collect()
    }

    /// Headers and samples of every family for one object, as a scrape of a store
    /// holding only this object shows them (text format): what golden tests compare.
    pub fn render_document(&self, obj: &Value) -> String {
        let mut out = Vec::new();
        for (f, lines) in self.families.iter().zip(self.render(obj)) {
            write_header(&mut out, &f.name, &f.help, f.kind, Format::Text004);
            out.extend_from_slice(&lines);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A store for this resource's families, named `resource` (the plural, as in
    /// `?resources=`). See the module docs of `custom_resource` for why names are interned.
    pub fn new_store(&self, resource: &str) -> MetricsStore {
        let families = ResourceFamilies::<()> {
            resource: intern(resource),
            identity_keys: &[],
            identity: |_| Vec::new(),
            families: self
                .families
                .iter()
                .map(|f| FamilySpec::<()> {
                    name: intern(&f.name),
                    help: intern(&f.help),
                    kind: f.kind,
                    stability: Stability::Alpha,
                    deprecated_since: None,
                    opt_in: false,
                    generate: |_, _| Vec::new(),
                })
                .collect(),
        };
        let enabled: Vec<usize> = (0..families.families.len()).collect();
        MetricsStore::new(&families, &enabled)
    }
}

/// `MetricsStore` takes `&'static str` names; custom-resource names come from a
/// configuration, so each distinct string is leaked once and reused afterwards
/// (bounded by the distinct names ever configured, reloads included).
fn intern(s: &str) -> &'static str {
    static INTERNED: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut guard = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    let set = guard.get_or_insert_with(HashSet::new);
    if let Some(&existing) = set.get(s) {
        return existing;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    set.insert(leaked);
    leaked
}

fn report(f: &CompiledFamily, obj: &Value, errors: &[String]) {
    if errors.is_empty() {
        return;
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    for e in errors {
        // errorLogV > 0 asks for the error to be hidden unless verbose logging is on.
        if f.error_log_v > 0 {
            tracing::debug!(family = %f.name, namespace, name, error = %e, "custom resource metric");
        } else {
            tracing::warn!(family = %f.name, namespace, name, error = %e, "custom resource metric");
        }
    }
}

/// One generated sample before the base labels are added.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EachValue {
    pub labels: Labels,
    pub value: f64,
}

impl EachValue {
    fn new(value: f64) -> Self {
        EachValue {
            labels: Labels::new(),
            value,
        }
    }
}

/// Upstream's `compareLabels`: keys and values pairwise in key order, then count.
fn compare_labels(a: &Labels, b: &Labels) -> Ordering {
    for ((ak, av), (bk, bv)) in a.iter().zip(b.iter()) {
        match ak.cmp(bk).then_with(|| av.cmp(bv)) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// Upstream's `addPathLabels`: `*`-keys copy a whole object (the text before or after
/// the `*` is a prefix for a trailing `*`), in sorted order, then the plain keys override.
/// Names are sanitized to `[a-zA-Z0-9_]`; values are Go's `%v` of the value.
pub(crate) fn add_path_labels(
    obj: Option<&Value>,
    labels: &[(String, ValuePath)],
    out: &mut Labels,
) {
    let is_star = |k: &str| k.starts_with('*') || k.ends_with('*');
    let mut stars: Vec<&(String, ValuePath)> = labels.iter().filter(|(k, _)| is_star(k)).collect();
    stars.sort_by(|a, b| a.0.cmp(&b.0));
    for (star, path) in stars {
        if let Some(Value::Object(map)) = path.get(obj) {
            for (k, v) in map {
                let key = match star.strip_suffix('*') {
                    Some(prefix) => format!("{prefix}{k}"),
                    None => k.clone(),
                };
                out.insert(
                    ferrocrane_core::exposition::sanitize_label_name(&key),
                    go_format_value(v),
                );
            }
        }
    }
    for (k, path) in labels {
        if is_star(k) {
            continue;
        }
        if let Some(v) = path.get(obj) {
            out.insert(
                ferrocrane_core::exposition::sanitize_label_name(k),
                go_format_value(v),
            );
        }
    }
}

impl CompiledFamily {
    /// Samples for one object (labels sorted by name) and the errors met on the way.
    pub fn generate(&self, obj: &Value) -> (Vec<Metric>, Vec<String>) {
        let mut base = self.labels.clone();
        add_path_labels(Some(obj), &self.labels_from_path, &mut base);
        let (values, errors) = self.values(obj);
        let metrics = values
            .into_iter()
            .map(|mut ev| {
                for (k, v) in &base {
                    ev.labels.entry(k.clone()).or_insert_with(|| v.clone());
                }
                let (keys, vals): (Vec<Cow<'static, str>>, Vec<String>) = ev
                    .labels
                    .into_iter()
                    .map(|(k, v)| (Cow::Owned(k), v))
                    .unzip();
                Metric::new(keys, vals, ev.value)
            })
            .collect();
        (metrics, errors)
    }

    /// Upstream's `scrapeValuesFor`: the type's values at `path`, sorted by labels.
    pub(crate) fn values(&self, obj: &Value) -> (Vec<EachValue>, Vec<String>) {
        let (mut result, errors) = match &self.each {
            Each::Gauge {
                path,
                labels_from_path,
                label_from_key,
                value_from,
                nil_is_zero,
            } => gauge_values(
                path,
                path.get(Some(obj)),
                labels_from_path,
                label_from_key,
                value_from,
                *nil_is_zero,
            ),
            Each::Info {
                path,
                labels_from_path,
                label_from_key,
            } => info_values(path, path.get(Some(obj)), labels_from_path, label_from_key),
            Each::StateSet {
                path,
                labels_from_path,
                list,
                label_name,
                value_from,
            } => {
                let v = path.get(Some(obj));
                let mut result = Vec::new();
                let mut errors = Vec::new();
                let items: Vec<Option<&Value>> = match v {
                    Some(Value::Array(items)) => items.iter().map(Some).collect(),
                    other => vec![other],
                };
                for item in items {
                    match state_set_values(
                        path,
                        item,
                        labels_from_path,
                        list,
                        label_name,
                        value_from,
                    ) {
                        Ok(vs) => result.extend(vs),
                        Err(e) => errors.push(e),
                    }
                }
                (result, errors)
            }
        };
        result.sort_by(|a, b| compare_labels(&a.labels, &b.labels));
        (result, errors)
    }
}

mod samples;

use samples::{gauge_values, info_values, state_set_values};

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
