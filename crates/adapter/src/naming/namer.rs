//! One discovery rule compiled: filters, resource association, naming and query building.

use ferrocrane_core::kube::ResourceMapper;
use ferrocrane_core::promql::{PromqlError, QueryTemplate, Requirement, validate_template};
use regex::Regex;

use super::{GroupResource, NamingError, ReMatcher, ResourceConverter, Series, regex_error};
use crate::config::{DiscoveryRule, RegexFilter};

/// A compiled rule (upstream's `MetricNamer`). Immutable and cheap to share.
#[derive(Debug, Clone)]
pub struct Namer {
    series_query: String,
    metrics_query: QueryTemplate,
    name_matches: Regex,
    name_as: String,
    /// `seriesFilters`, then `name.matches` as an implicit `is` filter.
    filters: Vec<ReMatcher>,
    resources: ResourceConverter,
    namespaced: bool,
}

/// Checks that a seriesQuery is a PromQL series selector (upstream sends whatever is configured
/// to `/api/v1/series` and fails on every relist).
pub fn validate_series_query(series_query: &str) -> Result<(), NamingError> {
    let err = |reason: String| NamingError::SeriesQuery {
        series_query: series_query.to_owned(),
        reason,
    };
    if series_query.trim().is_empty() {
        return Err(err("must not be empty".into()));
    }
    match promql_parser::parser::parse(series_query) {
        Ok(promql_parser::parser::Expr::VectorSelector(_)) => Ok(()),
        Ok(_) => Err(err(
            "must be a series selector such as `{__name__=~\"^container_.*\",namespace!=\"\"}`"
                .into(),
        )),
        Err(e) => Err(err(e.split_whitespace().collect::<Vec<_>>().join(" "))),
    }
}

/// The template error without core's `rule X:` wrapper.
fn unwrap_rule(e: PromqlError) -> PromqlError {
    match e {
        PromqlError::Rule { source, .. } => *source,
        other => other,
    }
}

impl Namer {
    /// Compiles a rule, checking everything upstream checks, in the same order so the first
    /// error reported is upstream's. [`Self::check_promql`] adds the checks upstream lacks.
    pub fn new(rule: &DiscoveryRule) -> Result<Self, NamingError> {
        let sq = &rule.series_query;
        let resources = ResourceConverter::new(&rule.resources)?;
        // Queries are namespaced unless the rule says otherwise (only external queries use it).
        let namespaced = rule.resources.namespaced.unwrap_or(true);
        let metrics_query =
            QueryTemplate::parse(&rule.metrics_query).map_err(|e| NamingError::MetricsQuery {
                series_query: sq.clone(),
                reason: e.to_string(),
            })?;

        let mut filters = Vec::with_capacity(rule.series_filters.len() + 1);
        for f in &rule.series_filters {
            filters.push(
                ReMatcher::new(f).map_err(|reason| NamingError::SeriesFilter {
                    series_query: sq.clone(),
                    reason,
                })?,
            );
        }
        let matches_err = |e: &regex::Error| NamingError::NameMatches {
            series_query: sq.clone(),
            matches: rule.name.matches.clone(),
            reason: regex_error(e),
        };
        let name_matches = if rule.name.matches.is_empty() {
            Regex::new(".*").map_err(|e| matches_err(&e))?
        } else {
            let re = Regex::new(&rule.name.matches).map_err(|e| matches_err(&e))?;
            filters.push(
                ReMatcher::new(&RegexFilter {
                    is: rule.name.matches.clone(),
                    is_not: String::new(),
                })
                .map_err(|reason| NamingError::SeriesFilter {
                    series_query: sq.clone(),
                    reason,
                })?,
            );
            re
        };
        let name_as = if rule.name.as_.is_empty() {
            // captures_len counts the whole match, like Go's SubexpNames.
            match name_matches.captures_len() {
                1 => "$0".to_owned(),
                2 => "$1".to_owned(),
                _ => {
                    return Err(NamingError::NameAsRequired {
                        series_query: sq.clone(),
                        matches: rule.name.matches.clone(),
                    });
                }
            }
        } else {
            rule.name.as_.clone()
        };
        Ok(Namer {
            series_query: sq.clone(),
            metrics_query,
            name_matches,
            name_as,
            filters,
            resources,
            namespaced,
        })
    }

    /// Beyond upstream: the seriesQuery must be a PromQL series selector and the metricsQuery,
    /// rendered with sample arguments, must be PromQL (an empty render is an error too). Config
    /// loading runs this for every rule.
    pub fn check_promql(&self) -> Result<(), NamingError> {
        validate_series_query(&self.series_query)?;
        validate_template(&self.series_query, self.metrics_query.source())
            .map(|_| ())
            .map_err(|e| NamingError::MetricsQuery {
                series_query: self.series_query.clone(),
                reason: unwrap_rule(e).to_string(),
            })
    }

    /// The seriesQuery sent to `/api/v1/series`.
    pub fn series_query(&self) -> &str {
        &self.series_query
    }

    /// The parsed metricsQuery.
    pub fn metrics_query(&self) -> &QueryTemplate {
        &self.metrics_query
    }

    /// `resources.namespaced` (default true): whether external queries get a namespace matcher.
    pub fn namespaced(&self) -> bool {
        self.namespaced
    }

    /// The rule's label ↔ resource relation.
    pub fn resources(&self) -> &ResourceConverter {
        &self.resources
    }

    /// The effective `name.as` (`$0` / `$1` when not configured).
    pub fn name_as(&self) -> &str {
        &self.name_as
    }

    /// Whether a series name passes every `seriesFilters` entry and `name.matches`.
    pub fn accepts(&self, series_name: &str) -> bool {
        self.filters.iter().all(|f| f.matches(series_name))
    }

    /// The series that pass the filters (upstream's `FilterSeries`).
    pub fn filter_series<'a>(&'a self, series: &'a [Series]) -> impl Iterator<Item = &'a Series> {
        series.iter().filter(|s| self.accepts(&s.name))
    }

    /// The API metric name for a series name: `name.matches` expanded with `name.as` (Go's
    /// `Regexp.ExpandString` rules: `$1`, `${1}`, `$name`, `$$`).
    pub fn metric_name_for_series(&self, series_name: &str) -> Result<String, NamingError> {
        let caps =
            self.name_matches
                .captures(series_name)
                .ok_or_else(|| NamingError::SeriesName {
                    name: series_name.to_owned(),
                    pattern: self.name_matches.as_str().to_owned(),
                })?;
        let mut out = String::new();
        caps.expand(&self.name_as, &mut out);
        Ok(out)
    }

    /// The query for a custom metric (upstream's `QueryForSeries`): `series` is the Prometheus
    /// series name, `resource_label` the label of the requested resource, `namespace` the
    /// request's namespace (`None` or empty for cluster-scoped), `names` the objects.
    ///
    /// Matchers: the metric selector's requirements (sorted by key), the namespace, then the
    /// resource (`="a"`, or `=~"a|b"` for several names). `.GroupBy` is the resource label.
    pub fn metrics_query_for(
        &self,
        series: &str,
        resource_label: &str,
        namespace: Option<&str>,
        names: &[String],
        metric_selector: &[Requirement],
    ) -> Result<String, NamingError> {
        let ns = match namespace {
            Some(ns) if !ns.is_empty() => Some((self.resources.namespace_label()?, ns)),
            _ => None,
        };
        Ok(self
            .metrics_query
            .build(series, resource_label, ns, &[], metric_selector, names)?)
    }

    /// [`Self::metrics_query_for`] with the resource label looked up for `resource`.
    pub fn metrics_query_for_resource(
        &self,
        series: &str,
        resource: &GroupResource,
        mapper: &ResourceMapper,
        namespace: Option<&str>,
        names: &[String],
        metric_selector: &[Requirement],
    ) -> Result<String, NamingError> {
        let label = self.resources.label_for_resource(resource, mapper)?;
        self.metrics_query_for(series, &label, namespace, names, metric_selector)
    }

    /// The query for an external metric (upstream's `QueryForExternalSeries`): the selector's
    /// matchers plus the namespace when the rule is namespaced; `.GroupBy` is empty.
    pub fn external_query_for(
        &self,
        series: &str,
        namespace: Option<&str>,
        metric_selector: &[Requirement],
    ) -> Result<String, NamingError> {
        let ns = match namespace {
            Some(ns) if self.namespaced && !ns.is_empty() => {
                Some((self.resources.namespace_label()?, ns))
            }
            _ => None,
        };
        Ok(self
            .metrics_query
            .build_external(series, ns, "", &[], metric_selector)?)
    }
}
