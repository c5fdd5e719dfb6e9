//! external.metrics.k8s.io: request paths and query results → `ExternalMetricValueList`, as
//! prometheus-adapter's external provider converts them.

use ferrocrane_core::prometheus::QueryResult;

use super::types::{ExternalMetricValue, decimal_quantity, rfc3339_from_millis};
use crate::status::Status;

/// `namespaces/{ns}/{metric}` → (namespace, metric).
pub fn parse_path<'a>(segments: &[&'a str]) -> Result<(&'a str, &'a str), Status> {
    match segments {
        ["namespaces", ns, metric] if !ns.is_empty() && !metric.is_empty() => Ok((ns, metric)),
        _ => Err(Status::route_not_found()),
    }
}

/// The NotFound answer: upstream names `namespaces` only for the `default` namespace and
/// nothing otherwise (its `selectGroupResource`), so the message ends in `for ` there.
pub fn not_found(namespace: &str, metric: &str) -> Status {
    let gr = if namespace == "default" {
        "namespaces"
    } else {
        ""
    };
    Status::metric_not_found(gr, metric)
}

/// Converts a query result: one item per vector element (its labels as `metricLabels`, its own
/// timestamp), or a single item for a scalar. NaN reads as 0 (upstream would print the
/// minimum int64).
pub fn items(metric: &str, result: QueryResult) -> Result<Vec<ExternalMetricValue>, Status> {
    match result {
        QueryResult::Vector(samples) => Ok(samples
            .into_iter()
            .map(|s| ExternalMetricValue {
                metric_name: metric.to_owned(),
                metric_labels: Some(s.labels),
                timestamp: rfc3339_from_millis(s.sample.timestamp_ms),
                value: decimal_quantity(s.sample.value),
            })
            .collect()),
        QueryResult::Scalar(s) => Ok(vec![ExternalMetricValue {
            metric_name: metric.to_owned(),
            metric_labels: None,
            timestamp: rfc3339_from_millis(s.timestamp_ms),
            value: decimal_quantity(s.value),
        }]),
        other => {
            tracing::error!(
                result_type = other.result_type(),
                "unexpected query result type for external metric {metric}"
            );
            Err(Status::internal("unable to fetch metrics"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocrane_core::prometheus::{InstantSample, Sample};

    #[test]
    fn paths_and_not_found() {
        assert_eq!(
            parse_path(&["namespaces", "ns1", "queue"]).unwrap(),
            ("ns1", "queue")
        );
        assert!(parse_path(&["queue"]).is_err());
        assert!(parse_path(&["namespaces", "ns1"]).is_err());
        assert_eq!(
            not_found("default", "q").message,
            "the server could not find the metric q for namespaces"
        );
        assert_eq!(
            not_found("team-a", "q").message,
            "the server could not find the metric q for "
        );
    }

    #[test]
    fn vector_and_scalar_results() {
        let v = QueryResult::Vector(vec![InstantSample {
            labels: [("queue".to_owned(), "jobs".to_owned())]
                .into_iter()
                .collect(),
            sample: Sample {
                timestamp_ms: 1_700_000_000_500,
                value: 12.0,
            },
        }]);
        let out = serde_json::to_value(items("depth", v).unwrap()).unwrap();
        assert_eq!(
            out,
            serde_json::json!([{
                "metricName": "depth", "metricLabels": {"queue": "jobs"},
                "timestamp": "2023-11-14T22:13:20Z", "value": "12"
            }])
        );
        let sc = QueryResult::Scalar(Sample {
            timestamp_ms: 0,
            value: 0.5,
        });
        let out = serde_json::to_value(items("depth", sc).unwrap()).unwrap();
        assert_eq!(out[0]["metricLabels"], serde_json::Value::Null);
        assert_eq!(out[0]["value"], "500m");
        assert_eq!(
            items("d", QueryResult::Matrix(vec![])).unwrap_err().code,
            500
        );
    }
}
