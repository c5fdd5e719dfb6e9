//! One PromQL query for an API answer. Prometheus' own error goes to the log only, as
//! upstream does: the API client gets a 500 "unable to fetch metrics".

use ferrocrane_core::prometheus::{PrometheusClient, QueryResult};

use crate::status::Status;

pub async fn run(prometheus: &PrometheusClient, query: &str) -> Result<QueryResult, Status> {
    prometheus.query(query, None).await.map_err(|e| {
        tracing::error!(query, error = %e, "unable to fetch metrics from prometheus");
        Status::internal("unable to fetch metrics")
    })
}
