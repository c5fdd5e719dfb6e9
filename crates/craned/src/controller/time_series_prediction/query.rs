//! The PromQL of a TimeSeriesPrediction's metric: the expression as given, Crane's default
//! expressions for a workload's CPU and memory, or a metric selected by label conditions.
//! The EHPA controller writes the same default expressions into the TSPs it creates.

use ferrocrane_core::promql::{label_eq, label_matches, label_neq, label_not_matches};

use crate::crd::prediction::{PredictionMetric, QueryCondition, metric_types};
use crate::datasource::{CPU_METRIC, CPU_RATE_WINDOW, MEMORY_METRIC};
use crate::workload::{pod_name_regex, regex_escape};

/// Why a metric has no query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("type {0:?} is none of ResourceQuery, MetricQuery, ExpressionQuery")]
    UnknownType(String),
    #[error("type {0} needs its {1} field")]
    Missing(&'static str, &'static str),
    #[error("resourceQuery {0:?}: only cpu and memory are predicted")]
    Resource(String),
    #[error("resourceQuery needs a workload target (kind and name)")]
    NoTarget,
    #[error("label condition {key:?} {operator:?}: the operator is none of =, !=, =~, !~, in")]
    Operator { key: String, operator: String },
}

/// Crane's expression for a workload's total CPU cores (all its pods' containers).
pub fn workload_cpu(namespace: &str, kind: &str, name: &str) -> String {
    format!(
        "sum(irate({CPU_METRIC}{{{},{},{}}}[{CPU_RATE_WINDOW}]))",
        label_eq("namespace", namespace),
        label_matches("pod", &pod_name_regex(name, kind)),
        label_neq("container", "")
    )
}

/// Crane's expression for a workload's total working-set bytes.
pub fn workload_memory(namespace: &str, kind: &str, name: &str) -> String {
    format!(
        "sum({MEMORY_METRIC}{{{},{},{}}})",
        label_eq("namespace", namespace),
        label_matches("pod", &pod_name_regex(name, kind)),
        label_neq("container", "")
    )
}

/// The query of `metric`, whose TSP targets `kind`/`name` in `namespace`.
pub fn promql(
    metric: &PredictionMetric,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Result<String, QueryError> {
    match metric.type_.as_str() {
        metric_types::EXPRESSION_QUERY => metric
            .expression_query
            .as_ref()
            .map(|q| q.expression.clone())
            .filter(|e| !e.trim().is_empty())
            .ok_or(QueryError::Missing(
                metric_types::EXPRESSION_QUERY,
                "expressionQuery.expression",
            )),
        metric_types::RESOURCE_QUERY => {
            let resource = metric.resource_query.as_deref().ok_or(QueryError::Missing(
                metric_types::RESOURCE_QUERY,
                "resourceQuery",
            ))?;
            if kind.is_empty() || name.is_empty() {
                return Err(QueryError::NoTarget);
            }
            match resource {
                "cpu" => Ok(workload_cpu(namespace, kind, name)),
                "memory" => Ok(workload_memory(namespace, kind, name)),
                other => Err(QueryError::Resource(other.to_owned())),
            }
        }
        metric_types::METRIC_QUERY => {
            let query = metric.metric_query.as_ref().ok_or(QueryError::Missing(
                metric_types::METRIC_QUERY,
                "metricQuery",
            ))?;
            if query.metric_name.trim().is_empty() {
                return Err(QueryError::Missing(
                    metric_types::METRIC_QUERY,
                    "metricQuery.metricName",
                ));
            }
            let matchers = query
                .query_conditions
                .iter()
                .map(matcher)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(format!("{}{{{}}}", query.metric_name, matchers.join(",")))
        }
        other => Err(QueryError::UnknownType(other.to_owned())),
    }
}

fn matcher(c: &QueryCondition) -> Result<String, QueryError> {
    let first = c.value.first().map(String::as_str).unwrap_or("");
    Ok(match c.operator.as_str() {
        "=" => label_eq(&c.key, first),
        "!=" => label_neq(&c.key, first),
        "=~" => label_matches(&c.key, first),
        "!~" => label_not_matches(&c.key, first),
        "in" => {
            let any: Vec<String> = c.value.iter().map(|v| regex_escape(v)).collect();
            label_matches(&c.key, &format!("^({})$", any.join("|")))
        }
        _ => {
            return Err(QueryError::Operator {
                key: c.key.clone(),
                operator: c.operator.clone(),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::prediction::{ExpressionQuery, MetricQuery};

    fn metric(type_: &str) -> PredictionMetric {
        PredictionMetric {
            resource_identifier: "x".into(),
            type_: type_.into(),
            ..PredictionMetric::default()
        }
    }

    #[test]
    fn cranes_default_expressions_for_a_deployment() {
        assert_eq!(
            workload_cpu("shop", "Deployment", "web"),
            r#"sum(irate(container_cpu_usage_seconds_total{namespace="shop",pod=~"^web-[a-z0-9]+-[a-z0-9]{5}$",container!=""}[3m]))"#
        );
        assert_eq!(
            workload_memory("shop", "StatefulSet", "db"),
            r#"sum(container_memory_working_set_bytes{namespace="shop",pod=~"^db-[0-9]+$",container!=""})"#
        );
    }

    #[test]
    fn each_query_type() {
        let mut m = metric("ExpressionQuery");
        m.expression_query = Some(ExpressionQuery {
            expression: "sum(rate(http_requests_total[5m]))".into(),
        });
        assert_eq!(
            promql(&m, "shop", "Deployment", "web").unwrap(),
            "sum(rate(http_requests_total[5m]))"
        );
        let mut m = metric("ResourceQuery");
        m.resource_query = Some("memory".into());
        assert!(
            promql(&m, "shop", "Deployment", "web")
                .unwrap()
                .starts_with("sum(container_memory")
        );
        let mut m = metric("MetricQuery");
        m.metric_query = Some(MetricQuery {
            metric_name: "queue_depth".into(),
            query_conditions: vec![
                QueryCondition {
                    key: "queue".into(),
                    operator: "in".into(),
                    value: vec!["a.b".into(), "c".into()],
                },
                QueryCondition {
                    key: "env".into(),
                    operator: "!=".into(),
                    value: vec!["dev".into()],
                },
            ],
        });
        assert_eq!(
            promql(&m, "shop", "", "").unwrap(),
            r#"queue_depth{queue=~"^(a\\.b|c)$",env!="dev"}"#
        );
    }

    #[test]
    fn what_cannot_be_queried_says_why() {
        let err = |m: &PredictionMetric| {
            promql(m, "shop", "Deployment", "web")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&metric("ExpressionQuery")),
            "type ExpressionQuery needs its expressionQuery.expression field"
        );
        assert_eq!(
            err(&metric("Bogus")),
            "type \"Bogus\" is none of ResourceQuery, MetricQuery, ExpressionQuery"
        );
        let mut m = metric("ResourceQuery");
        m.resource_query = Some("gpu".into());
        assert_eq!(
            err(&m),
            "resourceQuery \"gpu\": only cpu and memory are predicted"
        );
        let mut m = metric("MetricQuery");
        m.metric_query = Some(MetricQuery {
            metric_name: "q".into(),
            query_conditions: vec![QueryCondition {
                key: "a".into(),
                operator: "~".into(),
                value: vec![],
            }],
        });
        assert!(err(&m).contains("the operator is none of"));
    }
}
