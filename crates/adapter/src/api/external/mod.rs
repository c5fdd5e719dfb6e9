//! external.metrics.k8s.io: request paths, and where the answers come from: sources, each
//! serving some metric names: Crane's objects ([`crane::CraneObjects`], the cron and predicted
//! metrics of EHPAs) and Prometheus through `externalRules` ([`prometheus::PrometheusRules`]).
//! Discovery lists every source's metrics; a request goes to the first source serving its
//! metric, so a source listed earlier wins a name two of them serve (Crane's objects come
//! first: they are what an EHPA's HPA means by its metrics).

pub mod crane;
pub mod prometheus;

use ferrocrane_core::promql::Requirement;

use super::types::ExternalMetricValue;
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

/// One source of external metrics.
pub enum Source {
    /// Crane's EHPAs and TimeSeriesPredictions.
    Crane(crane::CraneObjects),
    PrometheusRules(prometheus::PrometheusRules),
}

impl Source {
    fn metric_names(&self) -> Vec<String> {
        match self {
            Source::Crane(c) => c.metric_names(),
            Source::PrometheusRules(p) => p.metric_names(),
        }
    }

    fn serves(&self, metric: &str) -> bool {
        match self {
            Source::Crane(c) => c.serves(metric),
            Source::PrometheusRules(p) => p.serves(metric),
        }
    }

    async fn values(
        &self,
        namespace: &str,
        metric: &str,
        selector: &[Requirement],
    ) -> Result<Vec<ExternalMetricValue>, Status> {
        match self {
            Source::Crane(c) => c.values(namespace, metric, selector),
            Source::PrometheusRules(p) => p.values(namespace, metric, selector).await,
        }
    }
}

/// Every source, in the order they are asked.
pub struct ExternalMetrics {
    sources: Vec<Source>,
}

impl ExternalMetrics {
    pub fn new(sources: Vec<Source>) -> ExternalMetrics {
        ExternalMetrics { sources }
    }

    /// Every metric some source serves, sorted, each once (discovery).
    pub fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.sources.iter().flat_map(Source::metric_names).collect();
        names.sort();
        names.dedup();
        names
    }

    /// `metric`'s values in `namespace` under `selector`, from the first source serving it.
    pub async fn values(
        &self,
        namespace: &str,
        metric: &str,
        selector: &[Requirement],
    ) -> Result<Vec<ExternalMetricValue>, Status> {
        match self.sources.iter().find(|s| s.serves(metric)) {
            Some(source) => source.values(namespace, metric, selector).await,
            None => Err(not_found(namespace, metric)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
