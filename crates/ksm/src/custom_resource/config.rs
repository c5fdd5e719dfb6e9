//! The `CustomResourceStateMetrics` configuration of kube-state-metrics v2.20.
//!
//! Field names and defaults follow upstream. Two deliberate differences:
//!
//! * Parsing is strict. Upstream's YAML decoder silently ignores unknown keys (its own
//!   example file carries a stale `gauge.value` key that does nothing); here an unknown
//!   key is an error naming file, line and key. The top-level `kind` and `apiVersion`
//!   that upstream's documentation shows are accepted.
//! * Problems upstream only logs (or never notices) are validation errors: an empty
//!   or `*` group, a metric without name, an invalid metric or label name, a
//!   `stateSet` without `labelName`.

use std::collections::BTreeMap;

use ferrocrane_core::config::{ConfigError, Validate, ValidationError, parse_and_validate_str};
use serde::{Deserialize, Deserializer};

use super::path::ValuePath;

/// The default metric name prefix.
pub const DEFAULT_PREFIX: &str = "kube_customresource";

/// The whole file.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CustomResourceStateConfig {
    /// `CustomResourceStateMetrics` by convention; not checked, as upstream.
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub spec: Spec,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    #[serde(default, deserialize_with = "nullable")]
    pub resources: Vec<Resource>,
}

/// One custom resource to generate metrics for. The same GVK may appear more than once.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Resource {
    #[serde(default, deserialize_with = "nullable")]
    pub group_version_kind: GroupVersionKind,
    /// `None` → `kube_customresource`; `Some("")` → no prefix.
    #[serde(default)]
    pub metric_name_prefix: Option<String>,
    /// Plural name; discovery supplies it when empty.
    #[serde(default, deserialize_with = "nullable")]
    pub resource_plural: String,
    #[serde(default, deserialize_with = "nullable")]
    pub common_labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "nullable")]
    pub labels_from_path: BTreeMap<String, PathSpec>,
    #[serde(default, deserialize_with = "nullable")]
    pub metrics: Vec<Generator>,
    /// klog verbosity for this resource's errors; kept for compatibility (errors are
    /// logged at debug level when it is non-zero).
    #[serde(default, rename = "errorLogV", deserialize_with = "nullable")]
    pub error_log_v: i32,
}

impl Resource {
    pub fn metric_name_prefix(&self) -> &str {
        self.metric_name_prefix.as_deref().unwrap_or(DEFAULT_PREFIX)
    }

    /// `<prefix>_<name>`, or just `<name>` with an empty prefix.
    pub fn full_name(&self, metric: &Generator) -> String {
        match self.metric_name_prefix() {
            "" => metric.name.clone(),
            p => format!("{p}_{}", metric.name),
        }
    }
}

/// Group, version and kind; version and kind may be empty or `*` to match every
/// served version / every kind of the group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupVersionKind {
    #[serde(default, deserialize_with = "nullable")]
    pub group: String,
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    pub fn version_is_wildcard(&self) -> bool {
        self.version.is_empty() || self.version == "*"
    }

    pub fn kind_is_wildcard(&self) -> bool {
        self.kind.is_empty() || self.kind == "*"
    }
}

impl std::fmt::Display for GroupVersionKind {
    /// Upstream's form: `group_version_kind`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_{}_{}", self.group, self.version, self.kind)
    }
}

/// A path as written: a list of segments; null is the empty path (the value itself).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathSpec(pub Vec<String>);

impl<'de> Deserialize<'de> for PathSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(PathSpec(
            Option::<Vec<String>>::deserialize(d)?.unwrap_or_default(),
        ))
    }
}

impl<const N: usize> From<[&str; N]> for PathSpec {
    fn from(segments: [&str; N]) -> Self {
        PathSpec(segments.iter().map(|s| s.to_string()).collect())
    }
}

/// One metric family of a resource.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Generator {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub help: String,
    pub each: Each,
    #[serde(default, deserialize_with = "nullable")]
    pub common_labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "nullable")]
    pub labels_from_path: BTreeMap<String, PathSpec>,
    /// Overrides the resource's when non-zero.
    #[serde(default, rename = "errorLogV", deserialize_with = "nullable")]
    pub error_log_v: i32,
}

/// The metric type; matched case-insensitively, as upstream lower-cases it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricKind {
    #[default]
    Gauge,
    StateSet,
    Info,
}

impl<'de> Deserialize<'de> for MetricKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.to_lowercase().as_str() {
            "gauge" => Ok(MetricKind::Gauge),
            "stateset" => Ok(MetricKind::StateSet),
            "info" => Ok(MetricKind::Info),
            _ => Err(serde::de::Error::custom(format!(
                "unknown metric type {s:?} (expected Gauge, StateSet or Info)"
            ))),
        }
    }
}

/// `each`: the type and that type's settings.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Each {
    #[serde(rename = "type")]
    pub kind: MetricKind,
    #[serde(default)]
    pub gauge: Option<Gauge>,
    #[serde(default)]
    pub state_set: Option<StateSet>,
    #[serde(default)]
    pub info: Option<Info>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Gauge {
    #[serde(default)]
    pub path: PathSpec,
    #[serde(default, deserialize_with = "nullable")]
    pub labels_from_path: BTreeMap<String, PathSpec>,
    #[serde(default, deserialize_with = "nullable")]
    pub label_from_key: String,
    #[serde(default)]
    pub value_from: PathSpec,
    #[serde(default, deserialize_with = "nullable")]
    pub nil_is_zero: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StateSet {
    #[serde(default)]
    pub path: PathSpec,
    #[serde(default, deserialize_with = "nullable")]
    pub labels_from_path: BTreeMap<String, PathSpec>,
    #[serde(default, deserialize_with = "nullable")]
    pub list: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub label_name: String,
    #[serde(default)]
    pub value_from: PathSpec,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Info {
    #[serde(default)]
    pub path: PathSpec,
    #[serde(default, deserialize_with = "nullable")]
    pub labels_from_path: BTreeMap<String, PathSpec>,
    #[serde(default, deserialize_with = "nullable")]
    pub label_from_key: String,
}

/// YAML `key:` with nothing after it is null; upstream's decoder turns that into the
/// zero value, so a key whose entries are all commented out keeps working.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl CustomResourceStateConfig {
    /// Parses (strictly) and validates `text`; `name` is what errors call the source.
    pub fn parse(name: &str, text: &str) -> Result<Self, ConfigError> {
        parse_and_validate_str(name, text)
    }
}

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_paths(paths: &BTreeMap<String, PathSpec>, field: &str) -> Result<(), ValidationError> {
    for (label, path) in paths {
        ValuePath::compile(&path.0)
            .map_err(|e| ValidationError::new(format!("{field}.{label}"), e.to_string()))?;
    }
    Ok(())
}

fn check_path(path: &PathSpec, field: &str) -> Result<(), ValidationError> {
    ValuePath::compile(&path.0)
        .map(|_| ())
        .map_err(|e| ValidationError::new(field, e.to_string()))
}

fn check_common_labels(labels: &BTreeMap<String, String>) -> Result<(), ValidationError> {
    for key in labels.keys() {
        if !is_label_name(key) {
            return Err(ValidationError::new(
                format!("commonLabels.{key}"),
                "not a valid Prometheus label name",
            ));
        }
    }
    Ok(())
}

fn check_label_name(name: &str, field: &str) -> Result<(), ValidationError> {
    if !name.is_empty() && !is_label_name(name) {
        return Err(ValidationError::new(
            field,
            format!("{name:?} is not a valid Prometheus label name"),
        ));
    }
    Ok(())
}

impl Generator {
    fn validate_in(&self, resource: &Resource) -> Result<(), ValidationError> {
        if self.name.is_empty() {
            return Err(ValidationError::new("name", "is required"));
        }
        let full = resource.full_name(self);
        if !is_metric_name(&full) {
            return Err(ValidationError::new(
                "name",
                format!("{full:?} is not a valid Prometheus metric name"),
            ));
        }
        check_common_labels(&self.common_labels)?;
        check_paths(&self.labels_from_path, "labelsFromPath")?;
        let each = &self.each;
        let missing =
            |t: &str| ValidationError::new(format!("each.{t}"), "is required for this type");
        match each.kind {
            MetricKind::Gauge => {
                let g = each.gauge.as_ref().ok_or_else(|| missing("gauge"))?;
                check_path(&g.path, "each.gauge.path")?;
                check_path(&g.value_from, "each.gauge.valueFrom")?;
                check_paths(&g.labels_from_path, "each.gauge.labelsFromPath")?;
                check_label_name(&g.label_from_key, "each.gauge.labelFromKey")?;
            }
            MetricKind::Info => {
                let i = each.info.as_ref().ok_or_else(|| missing("info"))?;
                check_path(&i.path, "each.info.path")?;
                check_paths(&i.labels_from_path, "each.info.labelsFromPath")?;
                check_label_name(&i.label_from_key, "each.info.labelFromKey")?;
            }
            MetricKind::StateSet => {
                let s = each.state_set.as_ref().ok_or_else(|| missing("stateSet"))?;
                check_path(&s.path, "each.stateSet.path")?;
                check_path(&s.value_from, "each.stateSet.valueFrom")?;
                check_paths(&s.labels_from_path, "each.stateSet.labelsFromPath")?;
                if s.label_name.is_empty() {
                    return Err(ValidationError::new(
                        "each.stateSet.labelName",
                        "is required",
                    ));
                }
                check_label_name(&s.label_name, "each.stateSet.labelName")?;
            }
        }
        Ok(())
    }
}

impl Validate for CustomResourceStateConfig {
    fn validate(&self) -> Result<(), ValidationError> {
        for (i, r) in self.spec.resources.iter().enumerate() {
            let at = format!("spec.resources[{i}] ({})", r.group_version_kind);
            let gvk = &r.group_version_kind;
            if gvk.group.is_empty() || gvk.group == "*" {
                return Err(ValidationError::new(
                    "groupVersionKind.group",
                    "is required (only version and kind may be \"*\")",
                )
                .at(&at));
            }
            check_common_labels(&r.common_labels).map_err(|e| e.at(&at))?;
            check_paths(&r.labels_from_path, "labelsFromPath").map_err(|e| e.at(&at))?;
            for (j, m) in r.metrics.iter().enumerate() {
                let mat = if m.name.is_empty() {
                    format!("metrics[{j}]")
                } else {
                    format!("metrics[{j}] ({})", m.name)
                };
                m.validate_in(r).map_err(|e| e.at(&mat).at(&at))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
