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

use ferrocrane_core::config::{
    ConfigError, Validate, ValidationError, parse_and_validate_str, parse_yaml_str,
};
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

    /// Parses without validating (for tests of the validation itself).
    pub fn parse_unvalidated(name: &str, text: &str) -> Result<Self, ConfigError> {
        parse_yaml_str(name, text)
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
mod tests {
    use super::*;

    /// Upstream's example_config.yaml, minus its stale `value: [count]` key.
    pub(crate) const EXAMPLE: &str = r#"
kind: CustomResourceStateMetrics
spec:
  resources:
    -
      groupVersionKind:
        group: myteam.io
        kind: "Foo"
        version: "v1"
      labelsFromPath:
        name: [ metadata, name ]
      metrics:
        - name: "active_count"
          help: "Number Foo Bars active"
          each:
            type: Gauge
            gauge:
              path: [status, active]
              labelFromKey: type
              labelsFromPath:
                bar: [bar]
          commonLabels:
            custom_metric: "yes"

          labelsFromPath:
            "*": [metadata, labels]  # copy all labels from CR labels
            foo: [metadata, labels, foo]  # copy a single label (overrides *)

        - name: "other_count"
          each:
            type: Gauge
            gauge:
              path: [status, other]
          errorLogV: 5

        - name: "info"
          each:
            type: Info
            info:
              path: [spec, version]
          errorLogV: 5

        - name: "phase"
          each:
            type: StateSet
            stateSet:
              path: [status, phase]
              labelName: phase
              list: [Active, Running, Terminating]
          errorLogV: 5
"#;

    #[test]
    fn upstream_example_deserializes() {
        let c = CustomResourceStateConfig::parse("example.yaml", EXAMPLE).expect("parses");
        let r = &c.spec.resources[0];
        assert_eq!(c.kind.as_deref(), Some("CustomResourceStateMetrics"));
        assert_eq!(
            r.group_version_kind,
            GroupVersionKind::new("myteam.io", "v1", "Foo")
        );
        assert_eq!(r.metrics[0].name, "active_count");
        assert_eq!(r.metrics[1].error_log_v, 5);
        assert_eq!(r.metrics[2].each.kind, MetricKind::Info);
        assert_eq!(r.metrics[3].each.kind, MetricKind::StateSet);
        assert_eq!(
            r.metrics[0].labels_from_path.get("*"),
            Some(&PathSpec::from(["metadata", "labels"]))
        );
        assert_eq!(r.metric_name_prefix(), DEFAULT_PREFIX);
        assert_eq!(
            r.full_name(&r.metrics[0]),
            "kube_customresource_active_count"
        );
    }

    #[test]
    fn stale_key_in_upstream_example_is_rejected_with_its_line() {
        let text = EXAMPLE.replace(
            "              labelsFromPath:\n                bar: [bar]\n",
            "              labelsFromPath:\n                bar: [bar]\n              value: [count]\n",
        );
        let err = CustomResourceStateConfig::parse("crs.yaml", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("crs.yaml:22:15: unknown field `value`"),
            "{err}"
        );
        assert!(err.contains("value"), "{err}");
    }

    #[test]
    fn type_is_case_insensitive_and_unknown_types_fail() {
        for t in ["gauge", "GAUGE", "Gauge"] {
            let y = format!(
                "spec:\n  resources:\n  - groupVersionKind: {{group: a.io, version: v1, kind: A}}\n    metrics:\n    - name: x\n      each:\n        type: {t}\n        gauge:\n          path: [a]\n"
            );
            CustomResourceStateConfig::parse("c", &y).expect(t);
        }
        let y = "spec:\n  resources:\n  - groupVersionKind: {group: a.io}\n    metrics:\n    - name: x\n      each:\n        type: Counter\n";
        let err = CustomResourceStateConfig::parse("c", y)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown metric type \"Counter\""), "{err}");
        assert!(err.starts_with("c:7:"), "{err}");
    }

    #[test]
    fn scalars_are_strings_and_nulls_are_empty() {
        let y = r#"
spec:
  resources:
  - groupVersionKind: {group: a.io, version: 1, kind: A}
    metricNamePrefix: ""
    commonLabels:
    labelsFromPath:
      whole:
    metrics:
    - name: x
      each:
        type: gauge
        gauge:
          path: [spec, order, 0, value]
          nilIsZero: true
"#;
        let c = CustomResourceStateConfig::parse("c", y).expect("parses");
        let r = &c.spec.resources[0];
        assert_eq!(r.group_version_kind.version, "1");
        assert_eq!(r.metric_name_prefix(), "");
        assert_eq!(r.full_name(&r.metrics[0]), "x");
        assert!(r.common_labels.is_empty());
        assert_eq!(r.labels_from_path.get("whole"), Some(&PathSpec::default()));
        let g = r.metrics[0].each.gauge.as_ref().unwrap();
        assert_eq!(g.path, PathSpec::from(["spec", "order", "0", "value"]));
        assert!(g.nil_is_zero);
    }

    fn invalid(y: &str) -> String {
        CustomResourceStateConfig::parse("crs.yaml", y)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn validation_names_resource_and_metric() {
        let base = "spec:\n  resources:\n  - groupVersionKind: {group: G, version: v1, kind: Foo}\n    metrics:\n    - name: NAME\n      each:\n        type: TYPE\n";
        let mk = |g: &str, name: &str, t: &str, rest: &str| {
            base.replace("G,", &format!("{g},"))
                .replace("NAME", name)
                .replace("TYPE", t)
                + rest
        };
        let e = invalid(&mk("\"*\"", "x", "Gauge", "        gauge: {path: [a]}\n"));
        assert!(
            e.contains("spec.resources[0] (*_v1_Foo).groupVersionKind.group: is required"),
            "{e}"
        );
        let e = invalid(&mk("a.io", "x", "Gauge", ""));
        assert_eq!(
            e,
            "crs.yaml: invalid configuration: spec.resources[0] (a.io_v1_Foo).metrics[0] (x).each.gauge: is required for this type"
        );
        let e = invalid(&mk(
            "a.io",
            "x",
            "StateSet",
            "        stateSet: {path: [a], list: [A]}\n",
        ));
        assert!(
            e.ends_with("metrics[0] (x).each.stateSet.labelName: is required"),
            "{e}"
        );
        let e = invalid(&mk(
            "a.io",
            "x",
            "Gauge",
            "        gauge: {path: [status, conditions, \"[Ready]\"]}\n",
        ));
        assert!(
            e.ends_with("metrics[0] (x).each.gauge.path: invalid list lookup: [Ready]"),
            "{e}"
        );
        let e = invalid(&mk(
            "a.io",
            "x",
            "Info",
            "        info: {labelsFromPath: {cond: [status, \"[Ready]\"]}}\n",
        ));
        assert!(
            e.ends_with("each.info.labelsFromPath.cond: invalid list lookup: [Ready]"),
            "{e}"
        );
        let e = invalid(&mk(
            "a.io",
            "bad-name",
            "Gauge",
            "        gauge: {path: [a]}\n",
        ));
        assert!(
            e.contains(
                "metrics[0] (bad-name).name: \"kube_customresource_bad-name\" is not a valid"
            ),
            "{e}"
        );
        let e = invalid(&mk("a.io", "\"\"", "Gauge", "        gauge: {path: [a]}\n"));
        assert!(e.ends_with("metrics[0].name: is required"), "{e}");
        let e = invalid(&mk(
            "a.io",
            "x",
            "Gauge",
            "        gauge: {path: [a], labelFromKey: \"a-b\"}\n",
        ));
        assert!(
            e.contains("each.gauge.labelFromKey: \"a-b\" is not a valid"),
            "{e}"
        );
    }

    #[test]
    fn wildcards() {
        let g = GroupVersionKind::new("a.io", "*", "");
        assert!(g.version_is_wildcard() && g.kind_is_wildcard());
        assert_eq!(g.to_string(), "a.io_*_");
    }
}
