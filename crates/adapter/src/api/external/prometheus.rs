//! External metrics from Prometheus through `externalRules`, as prometheus-adapter serves
//! them: the relisted registry names them, each request renders its rule's query.

use ferrocrane_core::prometheus::{PrometheusClient, QueryResult};
use ferrocrane_core::promql::Requirement;

use super::not_found;
use crate::api::types::{ExternalMetricValue, decimal_quantity, rfc3339_from_millis};
use crate::registry::RegistryError;
use crate::relist::SharedRegistries;
use crate::status::Status;

pub struct PrometheusRules {
    pub registries: SharedRegistries,
    pub prometheus: PrometheusClient,
}

impl PrometheusRules {
    pub fn metric_names(&self) -> Vec<String> {
        let r = self.registries.read().unwrap_or_else(|e| e.into_inner());
        r.external
            .list_external_metrics()
            .iter()
            .map(|m| m.metric.clone())
            .collect()
    }

    pub fn serves(&self, metric: &str) -> bool {
        let r = self.registries.read().unwrap_or_else(|e| e.into_inner());
        r.external.lookup(metric).is_some()
    }

    pub async fn values(
        &self,
        namespace: &str,
        metric: &str,
        selector: &[Requirement],
    ) -> Result<Vec<ExternalMetricValue>, Status> {
        let query = {
            let r = self.registries.read().unwrap_or_else(|e| e.into_inner());
            r.external.query_for(Some(namespace), metric, selector)
        };
        let query = match query {
            Ok(q) => q,
            // Relisted away between `serves` and here.
            Err(RegistryError::NotFound { .. }) => return Err(not_found(namespace, metric)),
            Err(e) => {
                tracing::error!(metric, error = %e, "unable to generate a query for the metric");
                return Err(Status::internal("unable to fetch metrics"));
            }
        };
        let result = crate::query::run(&self.prometheus, &query).await?;
        items(metric, result)
    }
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
