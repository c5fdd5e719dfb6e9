//! The metrics discovery configuration: prometheus-adapter's file format, unchanged.
//!
//! ```yaml
//! rules:            # custom.metrics.k8s.io
//! - seriesQuery: '{__name__=~"^container_.*",namespace!="",pod!=""}'
//!   seriesFilters: [{isNot: "^container_.*_seconds_total$"}]
//!   resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
//!   name: {matches: "^container_(.*)_total$", as: ""}
//!   metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
//! externalRules: [] # external.metrics.k8s.io, same shape
//! resourceRules:    # metrics.k8s.io
//!   cpu: {containerQuery: ..., nodeQuery: ..., resources: ..., containerLabel: container}
//!   memory: {...}
//!   window: 5m
//! ```
//!
//! This module is the format only; [`crate::loader`] reads a file strictly and compiles its
//! rules with [`crate::naming`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Treats an explicit YAML `null` (`rules:` with nothing after it) like an absent key, as Go's
/// YAML decoder does for slices and maps.
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The whole file (upstream's `MetricsDiscoveryConfig`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MetricsDiscoveryConfig {
    /// Rules for custom (object) metrics.
    #[serde(default, deserialize_with = "null_default")]
    pub rules: Vec<DiscoveryRule>,
    /// Rules for `kubectl top`.
    #[serde(default)]
    pub resource_rules: Option<ResourceRules>,
    /// Rules for external metrics.
    #[serde(default, deserialize_with = "null_default")]
    pub external_rules: Vec<DiscoveryRule>,
}

/// One discovery rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DiscoveryRule {
    /// Series selector sent to `/api/v1/series`.
    #[serde(default)]
    pub series_query: String,
    /// Extra name filters applied to the listed series.
    #[serde(default, deserialize_with = "null_default")]
    pub series_filters: Vec<RegexFilter>,
    /// How labels map to Kubernetes resources.
    #[serde(default)]
    pub resources: ResourceMapping,
    /// How series names become API metric names.
    #[serde(default)]
    pub name: NameMapping,
    /// `<<` `>>` template of the PromQL query.
    #[serde(default)]
    pub metrics_query: String,
}

/// `is` or `isNot` (exactly one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegexFilter {
    /// The series name must match.
    #[serde(default)]
    pub is: String,
    /// The series name must not match.
    #[serde(default)]
    pub is_not: String,
}

/// `resources`: a label template and/or per-label overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceMapping {
    /// e.g. `kube_<<.Group>>_<<.Resource>>`.
    #[serde(default)]
    pub template: String,
    /// label → group-resource.
    #[serde(default, deserialize_with = "null_default")]
    pub overrides: BTreeMap<String, GroupResource>,
    /// For external rules: whether the request namespace becomes a matcher (default true).
    #[serde(default)]
    pub namespaced: Option<bool>,
}

/// A group-resource as written in overrides (`resource: pod`, `group: apps`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupResource {
    /// API group, empty for core.
    #[serde(default)]
    pub group: String,
    /// Resource (any form the API server knows: `pod`, `pods`, `po`).
    #[serde(default)]
    pub resource: String,
}

/// `name`: `matches` regex and `as` replacement.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameMapping {
    /// Regex over the series name; empty means `.*`.
    #[serde(default)]
    pub matches: String,
    /// Replacement; empty means `$0` (no group) or `$1` (one group).
    #[serde(default, rename = "as")]
    pub as_: String,
}

/// `resourceRules`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceRules {
    /// CPU usage rule.
    #[serde(default)]
    pub cpu: ResourceRule,
    /// Memory usage rule.
    #[serde(default)]
    pub memory: ResourceRule,
    /// Window reported by the resource metrics API (Prometheus duration, e.g. `5m`).
    #[serde(default)]
    pub window: PromDuration,
}

/// `resourceRules.cpu` / `resourceRules.memory`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceRule {
    /// Per-container query template.
    #[serde(default)]
    pub container_query: String,
    /// Per-node query template.
    #[serde(default)]
    pub node_query: String,
    /// Label ↔ resource mapping for pods, nodes, namespaces.
    #[serde(default)]
    pub resources: ResourceMapping,
    /// Label holding the container name.
    #[serde(default)]
    pub container_label: String,
}

/// A Prometheus duration (`5m`, `1h30m`, `2d`, `0`), as `model.Duration` parses and prints it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PromDuration(pub Duration);

impl PromDuration {
    /// Parses like `model.ParseDuration` (units y w d h m s ms, largest first, each at most once).
    pub fn parse(s: &str) -> Result<Self, String> {
        if s == "0" {
            return Ok(PromDuration(Duration::ZERO));
        }
        if s.is_empty() {
            return Err("empty duration string".into());
        }
        let bad = || {
            format!(
                "not a valid duration string: {}",
                ferrocrane_core::promql::go_quote(s)
            )
        };
        const UNITS: &[(&str, u64)] = &[
            ("y", 365 * 24 * 3_600_000),
            ("w", 7 * 24 * 3_600_000),
            ("d", 24 * 3_600_000),
            ("h", 3_600_000),
            ("m", 60_000),
            ("s", 1_000),
            ("ms", 1),
        ];
        let mut rest = s;
        let mut next_unit = 0;
        let mut ms: u64 = 0;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(bad());
            }
            let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
            rest = &rest[digits..];
            let unit_len = rest.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
            let unit = &rest[..unit_len];
            rest = &rest[unit_len..];
            let pos = UNITS[next_unit..]
                .iter()
                .position(|(u, _)| *u == unit)
                .ok_or_else(bad)?;
            let mult = UNITS[next_unit + pos].1;
            next_unit += pos + 1;
            ms = n
                .checked_mul(mult)
                .and_then(|v| ms.checked_add(v))
                .filter(|v| *v <= i64::MAX as u64 / 1_000_000)
                .ok_or_else(|| "duration out of range".to_owned())?;
        }
        Ok(PromDuration(Duration::from_millis(ms)))
    }
}

impl std::fmt::Display for PromDuration {
    /// Like `model.Duration.String()`: `0s`, `5m`, `1h30m`, `90d`, `1w`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ms = u64::try_from(self.0.as_millis()).unwrap_or(u64::MAX);
        if ms == 0 {
            return f.write_str("0s");
        }
        const DAY: u64 = 24 * 3_600_000;
        for (unit, mult, exact) in [
            ("y", 365 * DAY, true),
            ("w", 7 * DAY, true),
            ("d", DAY, false),
            ("h", 3_600_000, false),
            ("m", 60_000, false),
            ("s", 1_000, false),
            ("ms", 1, false),
        ] {
            if exact && !ms.is_multiple_of(mult) {
                continue;
            }
            let v = ms / mult;
            if v > 0 {
                write!(f, "{v}{unit}")?;
                ms -= v * mult;
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for PromDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        PromDuration::parse(&s).map_err(serde::de::Error::custom)
    }
}
