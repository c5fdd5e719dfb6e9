//! Wire types of custom.metrics.k8s.io, external.metrics.k8s.io and discovery, field for field
//! as `k8s.io/metrics` and apimachinery serialise them (including the `null`s Go writes for
//! nil pointers without `omitempty`).

use std::collections::BTreeMap;

use ferrocrane_core::promql::{Operator, Requirement};
use serde::Serialize;

use crate::status::EmptyMeta;

/// `v1.ObjectReference` as `describedObject` (every field `omitempty`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectReference {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
}

/// `metav1.LabelSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LabelSelector {
    #[serde(rename = "matchLabels", skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(rename = "matchExpressions", skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// `metav1.LabelSelectorRequirement`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `metav1.ParseToLabelSelector(selector.String())`: `=` becomes a match label, the rest
/// expressions (`!=` turns into `NotIn`). `None` for an empty selector, which upstream leaves nil.
pub fn label_selector(reqs: &[Requirement]) -> Option<LabelSelector> {
    if reqs.is_empty() {
        return None;
    }
    let mut sel = LabelSelector::default();
    for r in reqs {
        let (op, values) = match r.op {
            Operator::Equals => {
                sel.match_labels
                    .insert(r.key.clone(), r.values.first().cloned().unwrap_or_default());
                continue;
            }
            Operator::In => ("In", r.values.clone()),
            Operator::NotIn | Operator::NotEquals => ("NotIn", r.values.clone()),
            Operator::Exists => ("Exists", Vec::new()),
            Operator::DoesNotExist => ("DoesNotExist", Vec::new()),
        };
        sel.match_expressions.push(LabelSelectorRequirement {
            key: r.key.clone(),
            operator: op,
            values,
        });
    }
    Some(sel)
}

/// One value, independent of API version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricValue {
    pub described_object: ObjectReference,
    pub metric: String,
    /// RFC 3339, seconds.
    pub timestamp: String,
    pub value: String,
    pub selector: Option<LabelSelector>,
}

/// `custom.metrics.k8s.io/v1beta1` `MetricValueList`.
#[derive(Debug, Clone, Serialize)]
pub struct MetricValueListV1beta1 {
    pub kind: &'static str,
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub metadata: EmptyMeta,
    pub items: Vec<MetricValueV1beta1>,
}

/// `custom.metrics.k8s.io/v1beta1` `MetricValue` (`window` is never set by prometheus-adapter,
/// `selector` has no `omitempty`).
#[derive(Debug, Clone, Serialize)]
pub struct MetricValueV1beta1 {
    #[serde(rename = "describedObject")]
    pub described_object: ObjectReference,
    #[serde(rename = "metricName")]
    pub metric_name: String,
    pub timestamp: String,
    pub value: String,
    pub selector: Option<LabelSelector>,
}

/// `custom.metrics.k8s.io/v1beta2` `MetricValueList`.
#[derive(Debug, Clone, Serialize)]
pub struct MetricValueListV1beta2 {
    pub kind: &'static str,
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub metadata: EmptyMeta,
    pub items: Vec<MetricValueV1beta2>,
}

/// `custom.metrics.k8s.io/v1beta2` `MetricValue`.
#[derive(Debug, Clone, Serialize)]
pub struct MetricValueV1beta2 {
    #[serde(rename = "describedObject")]
    pub described_object: ObjectReference,
    pub metric: MetricIdentifier,
    pub timestamp: String,
    pub value: String,
}

/// `v1beta2.MetricIdentifier` (`selector` without `omitempty`).
#[derive(Debug, Clone, Serialize)]
pub struct MetricIdentifier {
    pub name: String,
    pub selector: Option<LabelSelector>,
}

/// The list in the requested version's shape.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum MetricValueList {
    V1beta1(MetricValueListV1beta1),
    V1beta2(MetricValueListV1beta2),
}

impl MetricValueList {
    /// Renders `items` for `version` (`v1beta1` or `v1beta2`).
    pub fn new(version: CustomVersion, items: Vec<MetricValue>) -> Self {
        match version {
            CustomVersion::V1beta1 => MetricValueList::V1beta1(MetricValueListV1beta1 {
                kind: "MetricValueList",
                api_version: "custom.metrics.k8s.io/v1beta1",
                metadata: EmptyMeta {},
                items: items
                    .into_iter()
                    .map(|m| MetricValueV1beta1 {
                        described_object: m.described_object,
                        metric_name: m.metric,
                        timestamp: m.timestamp,
                        value: m.value,
                        selector: m.selector,
                    })
                    .collect(),
            }),
            CustomVersion::V1beta2 => MetricValueList::V1beta2(MetricValueListV1beta2 {
                kind: "MetricValueList",
                api_version: "custom.metrics.k8s.io/v1beta2",
                metadata: EmptyMeta {},
                items: items
                    .into_iter()
                    .map(|m| MetricValueV1beta2 {
                        described_object: m.described_object,
                        metric: MetricIdentifier {
                            name: m.metric,
                            selector: m.selector,
                        },
                        timestamp: m.timestamp,
                        value: m.value,
                    })
                    .collect(),
            }),
        }
    }
}

/// The served versions of custom.metrics.k8s.io.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomVersion {
    V1beta1,
    V1beta2,
}

impl CustomVersion {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "v1beta1" => Some(CustomVersion::V1beta1),
            "v1beta2" => Some(CustomVersion::V1beta2),
            _ => None,
        }
    }
}

/// `external.metrics.k8s.io/v1beta1` `ExternalMetricValueList`.
#[derive(Debug, Clone, Serialize)]
pub struct ExternalMetricValueList {
    pub kind: &'static str,
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub metadata: EmptyMeta,
    pub items: Vec<ExternalMetricValue>,
}

impl ExternalMetricValueList {
    pub fn new(items: Vec<ExternalMetricValue>) -> Self {
        ExternalMetricValueList {
            kind: "ExternalMetricValueList",
            api_version: "external.metrics.k8s.io/v1beta1",
            metadata: EmptyMeta {},
            items,
        }
    }
}

/// `ExternalMetricValue` (`metricLabels` without `omitempty`: `null` for scalar results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExternalMetricValue {
    #[serde(rename = "metricName")]
    pub metric_name: String,
    #[serde(rename = "metricLabels")]
    pub metric_labels: Option<BTreeMap<String, String>>,
    pub timestamp: String,
    pub value: String,
}

/// `metav1.APIResource` (`singularName` has no `omitempty`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiResource {
    pub name: String,
    #[serde(rename = "singularName")]
    pub singular_name: String,
    pub namespaced: bool,
    pub kind: &'static str,
    pub verbs: Vec<&'static str>,
}

/// `metav1.APIResourceList`.
#[derive(Debug, Clone, Serialize)]
pub struct ApiResourceList {
    pub kind: &'static str,
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    #[serde(rename = "groupVersion")]
    pub group_version: String,
    pub resources: Vec<ApiResource>,
}

impl ApiResourceList {
    pub fn new(group_version: String, resources: Vec<ApiResource>) -> Self {
        ApiResourceList {
            kind: "APIResourceList",
            api_version: "v1",
            group_version,
            resources,
        }
    }
}

/// `metav1.GroupVersionForDiscovery`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupVersion {
    #[serde(rename = "groupVersion")]
    pub group_version: String,
    pub version: String,
}

/// `metav1.APIGroup`.
#[derive(Debug, Clone, Serialize)]
pub struct ApiGroup {
    #[serde(skip_serializing_if = "str::is_empty")]
    pub kind: &'static str,
    #[serde(rename = "apiVersion", skip_serializing_if = "str::is_empty")]
    pub api_version: &'static str,
    pub name: String,
    pub versions: Vec<GroupVersion>,
    #[serde(rename = "preferredVersion")]
    pub preferred_version: GroupVersion,
    /// Set in `/apis` only, as Go's generic API server does.
    #[serde(
        rename = "serverAddressByClientCIDRs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCidr>,
}

/// `metav1.ServerAddressByClientCIDR`.
#[derive(Debug, Clone, Serialize)]
pub struct ServerAddressByClientCidr {
    #[serde(rename = "clientCIDR")]
    pub client_cidr: &'static str,
    #[serde(rename = "serverAddress")]
    pub server_address: String,
}

/// `metav1.APIGroupList` as Go's `/apis` handler writes it: `kind` without `apiVersion`.
#[derive(Debug, Clone, Serialize)]
pub struct ApiGroupList {
    pub kind: &'static str,
    pub groups: Vec<ApiGroup>,
}

/// A sample value as upstream writes custom and external metric values:
/// `NewMilliQuantity(int64(v*1000), DecimalSI)` (`1500m`, `2`, `12k`; NaN reads `0`).
pub fn decimal_quantity(value: f64) -> String {
    use crate::resource_metrics::{QuantityFormat, format_milli, milli_of};
    format_milli(milli_of(value), QuantityFormat::DecimalSi)
}

/// RFC 3339 at second precision, as `metav1.Time` marshals.
pub fn rfc3339_seconds(unix_seconds: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_second(unix_seconds)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// [`rfc3339_seconds`] of a Prometheus millisecond timestamp (truncated like Go's
/// `time.Unix(ms/1000, ...)` then second-precision formatting).
pub fn rfc3339_from_millis(ms: i64) -> String {
    rfc3339_seconds(ms.div_euclid(1000))
}

/// Now, for custom metric values (upstream stamps them with the current time).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    rfc3339_seconds(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::promql::parse_label_selector;

    #[test]
    fn selectors_convert_like_parse_to_label_selector() {
        let reqs = parse_label_selector("a=1,b!=2,c in (x,y),d notin (z),e,!f").unwrap();
        let sel = label_selector(&reqs).unwrap();
        assert_eq!(
            serde_json::to_value(&sel).unwrap(),
            serde_json::json!({
                "matchLabels": {"a": "1"},
                "matchExpressions": [
                    {"key": "b", "operator": "NotIn", "values": ["2"]},
                    {"key": "c", "operator": "In", "values": ["x", "y"]},
                    {"key": "d", "operator": "NotIn", "values": ["z"]},
                    {"key": "e", "operator": "Exists"},
                    {"key": "f", "operator": "DoesNotExist"}
                ]
            })
        );
        assert_eq!(label_selector(&[]), None);
    }

    #[test]
    fn values_are_decimal_milli_quantities() {
        for (v, want) in [
            (0.0, "0"),
            (0.4333, "433m"),
            (1.5, "1500m"),
            (2.0, "2"),
            (12_000.0, "12k"),
            (-0.0019, "-1m"),
            (f64::NAN, "0"),
        ] {
            assert_eq!(decimal_quantity(v), want, "{v}");
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_from_millis(1_700_000_000_999),
            "2023-11-14T22:13:20Z"
        );
    }

    fn sample() -> MetricValue {
        MetricValue {
            described_object: ObjectReference {
                kind: "Pod".into(),
                namespace: "ns".into(),
                name: "p".into(),
                api_version: "/v1".into(),
            },
            metric: "rps".into(),
            timestamp: "2024-01-01T00:00:00Z".into(),
            value: "1500m".into(),
            selector: None,
        }
    }

    #[test]
    fn version_shapes() {
        let v1 = serde_json::to_value(MetricValueList::new(CustomVersion::V1beta1, vec![sample()]))
            .unwrap();
        assert_eq!(
            v1,
            serde_json::json!({
                "kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta1",
                "metadata": {},
                "items": [{
                    "describedObject": {"kind": "Pod", "namespace": "ns", "name": "p", "apiVersion": "/v1"},
                    "metricName": "rps", "timestamp": "2024-01-01T00:00:00Z", "value": "1500m",
                    "selector": null
                }]
            })
        );
        let v2 = serde_json::to_value(MetricValueList::new(CustomVersion::V1beta2, vec![sample()]))
            .unwrap();
        assert_eq!(
            v2["items"][0],
            serde_json::json!({
                "describedObject": {"kind": "Pod", "namespace": "ns", "name": "p", "apiVersion": "/v1"},
                "metric": {"name": "rps", "selector": null},
                "timestamp": "2024-01-01T00:00:00Z", "value": "1500m"
            })
        );
        assert_eq!(v2["apiVersion"], "custom.metrics.k8s.io/v1beta2");
    }
}
