//! custom.metrics.k8s.io: request paths, and query results → `MetricValueList` items, as
//! custom-metrics-apiserver and prometheus-adapter's custom provider do it.

use std::collections::HashMap;

use ferrocrane_core::prometheus::InstantSample;
use ferrocrane_core::promql::Requirement;

use super::types::{MetricValue, ObjectReference, decimal_quantity, label_selector};
use crate::status::Status;

/// A custom-metrics request, from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomRequest {
    /// Namespace of the described objects; empty for cluster-scoped ones.
    pub namespace: String,
    /// The group of the resource (`apps` in `deployments.apps`).
    pub group: String,
    /// The resource as requested (`pods`, `pod`, `deployments`).
    pub resource: String,
    /// The object, or `*` for every object matching the label selector.
    pub name: String,
    /// The metric.
    pub metric: String,
}

impl CustomRequest {
    /// Whether the metric is requested for namespaced objects (upstream: a namespace is set).
    pub fn namespaced(&self) -> bool {
        !self.namespace.is_empty()
    }

    /// `resource.group` as the request wrote it, for error messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// Parses the path below `/apis/custom.metrics.k8s.io/{version}/`:
/// `{resource}/{name}/{metric}`, `namespaces/{ns}/{resource}/{name}/{metric}` and
/// `namespaces/{ns}/metrics/{metric}` (metrics describing the namespace itself).
pub fn parse_path(segments: &[&str]) -> Result<CustomRequest, Status> {
    let (namespace, resource, name, metric) = match segments {
        ["namespaces", ns, "metrics", metric] => ("", "namespaces", *ns, *metric),
        ["namespaces", ns, resource, name, metric] => (*ns, *resource, *name, *metric),
        [resource, name, metric] if *resource != "namespaces" => ("", *resource, *name, *metric),
        _ => return Err(Status::route_not_found()),
    };
    if [namespace, resource, name, metric]
        .iter()
        .any(|s| s.contains('/'))
        || metric.is_empty()
    {
        return Err(Status::route_not_found());
    }
    // schema.ParseGroupResource: the part before the first dot is the resource.
    let (resource, group) = resource.split_once('.').unwrap_or((resource, ""));
    Ok(CustomRequest {
        namespace: namespace.to_owned(),
        group: group.to_owned(),
        resource: resource.to_owned(),
        name: name.to_owned(),
        metric: metric.to_owned(),
    })
}

/// How values are described: the object kind and `group/version` (`/v1` for the core group,
/// as upstream's `ReferenceFor` writes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub kind: String,
    pub api_version: String,
    /// The normalised group-resource, for messages (`pods`, `deployments.apps`).
    pub group_resource: String,
}

/// The value of each object in a query result (upstream's `MatchValuesToNames`): keyed by the
/// resource label; a later sample for the same name wins.
pub fn values_by_name<'a>(
    samples: &'a [InstantSample],
    resource_label: &str,
) -> HashMap<&'a str, f64> {
    let mut out = HashMap::with_capacity(samples.len());
    for s in samples {
        if let Some(name) = s.labels.get(resource_label) {
            out.insert(name.as_str(), s.sample.value);
        }
    }
    out
}

/// One item; NaN becomes `0` (upstream's custom provider), other values milli-quantities.
pub fn metric_value(
    described: &Described,
    namespace: &str,
    name: &str,
    metric: &str,
    value: f64,
    metric_selector: &[Requirement],
    timestamp: &str,
) -> MetricValue {
    MetricValue {
        described_object: ObjectReference {
            kind: described.kind.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            api_version: described.api_version.clone(),
        },
        metric: metric.to_owned(),
        timestamp: timestamp.to_owned(),
        value: decimal_quantity(value),
        selector: label_selector(metric_selector),
    }
}

/// The answer for one named object (`GetMetricByName`): 404 naming the object when the query
/// returned nothing for it.
#[allow(clippy::too_many_arguments)]
pub fn single_item(
    samples: &[InstantSample],
    resource_label: &str,
    described: &Described,
    req: &CustomRequest,
    object: &str,
    metric_selector: &[Requirement],
    timestamp: &str,
) -> Result<Vec<MetricValue>, Status> {
    let values = values_by_name(samples, resource_label);
    match values.get(object) {
        Some(v) => Ok(vec![metric_value(
            described,
            &req.namespace,
            object,
            &req.metric,
            *v,
            metric_selector,
            timestamp,
        )]),
        None => Err(Status::metric_not_found_for(
            &described.group_resource,
            &req.metric,
            object,
        )),
    }
}

/// The answer for a selector (`GetMetricBySelector`): objects in listing order, those without a
/// value left out.
pub fn list_items(
    samples: &[InstantSample],
    resource_label: &str,
    described: &Described,
    req: &CustomRequest,
    names: &[String],
    metric_selector: &[Requirement],
    timestamp: &str,
) -> Vec<MetricValue> {
    let values = values_by_name(samples, resource_label);
    names
        .iter()
        .filter_map(|n| {
            values.get(n.as_str()).map(|v| {
                metric_value(
                    described,
                    &req.namespace,
                    n,
                    &req.metric,
                    *v,
                    metric_selector,
                    timestamp,
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::prometheus::Sample;
    use ferrocrane_core::promql::parse_label_selector;

    fn s(pod: &str, v: f64) -> InstantSample {
        InstantSample {
            labels: [("pod".to_owned(), pod.to_owned())].into_iter().collect(),
            sample: Sample {
                timestamp_ms: 0,
                value: v,
            },
        }
    }

    fn pods() -> Described {
        Described {
            kind: "Pod".into(),
            api_version: "/v1".into(),
            group_resource: "pods".into(),
        }
    }

    #[test]
    fn paths() {
        let r = parse_path(&["namespaces", "ns1", "pods", "*", "rps"]).unwrap();
        assert_eq!(
            r,
            CustomRequest {
                namespace: "ns1".into(),
                group: "".into(),
                resource: "pods".into(),
                name: "*".into(),
                metric: "rps".into()
            }
        );
        let r = parse_path(&["namespaces", "ns1", "deployments.apps", "web", "m"]).unwrap();
        assert_eq!(
            (r.group.as_str(), r.resource.as_str()),
            ("apps", "deployments")
        );
        assert_eq!(r.group_resource(), "deployments.apps");
        let r = parse_path(&["namespaces", "ns1", "metrics", "queue"]).unwrap();
        assert_eq!(
            (
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str(),
                r.metric.as_str()
            ),
            ("", "namespaces", "ns1", "queue")
        );
        assert!(!r.namespaced());
        let r = parse_path(&["nodes", "n1", "load"]).unwrap();
        assert_eq!((r.namespace.as_str(), r.name.as_str()), ("", "n1"));
        for bad in [
            &["namespaces", "ns1", "m"][..],
            &["pods", "p"][..],
            &["namespaces", "a", "pods", "p"][..],
            &[][..],
        ] {
            let e = parse_path(bad).unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str()),
                (404, "the server could not find the requested resource")
            );
        }
    }

    #[test]
    fn list_keeps_listing_order_and_skips_objects_without_values() {
        let req = parse_path(&["namespaces", "ns", "pods", "*", "rps"]).unwrap();
        let samples = vec![s("b", 2.0), s("a", 1.5), s("zzz", 9.0), s("a", f64::NAN)];
        let names = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let sel = parse_label_selector("verb=GET").unwrap();
        let items = list_items(&samples, "pod", &pods(), &req, &names, &sel, "T");
        let got: Vec<(&str, &str)> = items
            .iter()
            .map(|i| (i.described_object.name.as_str(), i.value.as_str()))
            .collect();
        // The later NaN sample for "a" wins and reads as 0, as upstream.
        assert_eq!(got, vec![("a", "0"), ("b", "2")]);
        assert_eq!(items[0].described_object.namespace, "ns");
        assert_eq!(
            items[0].selector.as_ref().unwrap().match_labels["verb"],
            "GET"
        );
    }

    #[test]
    fn single_object_not_in_result_is_not_found_for_it() {
        let req = parse_path(&["namespaces", "ns", "pods", "web-1", "rps"]).unwrap();
        let items =
            single_item(&[s("web-1", 0.25)], "pod", &pods(), &req, "web-1", &[], "T").unwrap();
        assert_eq!(items[0].value, "250m");
        assert_eq!(items[0].selector, None);
        let err =
            single_item(&[s("other", 1.0)], "pod", &pods(), &req, "web-1", &[], "T").unwrap_err();
        assert_eq!(
            err.message,
            "the server could not find the metric rps for pods web-1"
        );
        let err = single_item(&[], "pod", &pods(), &req, "web-1", &[], "T").unwrap_err();
        assert_eq!(err.code, 404);
    }
}
