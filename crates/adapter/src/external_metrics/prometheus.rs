//! External metrics from Prometheus through `externalRules`, as prometheus-adapter serves
//! them: the relisted registry names them, each request renders its rule's query.

use ferrocrane_core::prometheus::PrometheusClient;
use ferrocrane_core::promql::Requirement;

use crate::api::external::{items, not_found};
use crate::api::types::ExternalMetricValue;
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
