//! The discovery registry (pure part): relisted series → which metrics exist for which
//! resources, and how to query them.
//!
//! Upstream keeps every relisted label set (its issue #221: gigabytes on small clusters), throws
//! the whole update away when one seriesQuery fails, and lets colliding rules overwrite each
//! other silently. Here:
//! - the index holds one entry per (resource, namespaced, metric), i.e. memory grows with the
//!   distinct metrics × resources, never with the series count; series are only read during
//!   [`CustomRegistry::update`];
//! - each rule's entries are kept separately, so a rule whose query failed keeps its last good
//!   entries while the others are refreshed;
//! - a metric produced by two rules (or by two series of one rule) is reported as a
//!   [`Duplicate`]; the winner is upstream's (the later rule).

mod external;
#[cfg(test)]
mod tests;

pub use external::ExternalRegistry;

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;

use ferrocrane_core::kube::ResourceMapper;
use ferrocrane_core::promql::Requirement;

use crate::naming::{GroupResource, Namer, NamingError, Series, normalize};

/// A custom metric as discovery lists it (upstream's `provider.CustomMetricInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomMetricInfo {
    /// The normalised group-resource the metric describes.
    pub group_resource: GroupResource,
    /// Whether it is served under `namespaces/{ns}/...`.
    pub namespaced: bool,
    /// The API metric name.
    pub metric: String,
}

impl CustomMetricInfo {
    /// An info from a request's parts, normalising the resource (`pod` → `pods`) as upstream
    /// does before every lookup. `None` when the mapper does not know the resource.
    pub fn normalized(
        mapper: &ResourceMapper,
        group: &str,
        resource: &str,
        namespaced: bool,
        metric: &str,
    ) -> Option<Self> {
        Some(CustomMetricInfo {
            group_resource: normalize(mapper, group, resource)?,
            namespaced,
            metric: metric.to_owned(),
        })
    }
}

impl std::fmt::Display for CustomMetricInfo {
    /// Like upstream's `CustomMetricInfo.String()`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespaced {
            write!(f, "{}/{}(namespaced)", self.group_resource, self.metric)
        } else {
            write!(f, "{}/{}", self.group_resource, self.metric)
        }
    }
}

/// An external metric as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExternalMetricInfo {
    /// The API metric name.
    pub metric: String,
}

/// Where a custom metric comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesRef {
    /// Index of the rule in `rules`.
    pub rule: usize,
    /// The Prometheus series name.
    pub series: Arc<str>,
    /// The label naming the resource in that series.
    pub resource_label: Arc<str>,
}

/// Where an external metric comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalSeriesRef {
    /// Index of the rule in `externalRules`.
    pub rule: usize,
    /// The Prometheus series name.
    pub series: Arc<str>,
}

trait FromRule {
    fn rule(&self) -> usize;
    fn series(&self) -> &str;
}

impl FromRule for SeriesRef {
    fn rule(&self) -> usize {
        self.rule
    }
    fn series(&self) -> &str {
        &self.series
    }
}

impl FromRule for ExternalSeriesRef {
    fn rule(&self) -> usize {
        self.rule
    }
    fn series(&self) -> &str {
        &self.series
    }
}

/// The same metric produced by more than one (rule, series). The last source listed wins, as
/// upstream's last-writer-wins does (later rules override earlier ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate<K> {
    /// The metric.
    pub metric: K,
    /// (rule index, series name) of every source, the winner last.
    pub sources: Vec<(usize, String)>,
}

/// A rule whose series query failed in this update; its previous entries were kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFailure {
    /// Rule index.
    pub rule: usize,
    /// Its seriesQuery.
    pub series_query: String,
    /// The error text.
    pub error: String,
    /// Whether entries from an earlier successful relist are still served for it.
    pub kept_previous: bool,
}

/// An override whose resource the mapper does not know (its label is skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnresolvedOverride {
    /// Rule index.
    pub rule: usize,
    /// The overriding label.
    pub label: String,
    /// The configured resource, printed as `resource.group`.
    pub resource: String,
}

/// What an update did, for logs and self-metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateReport<K> {
    /// Rules whose query failed.
    pub failed: Vec<RuleFailure>,
    /// Metrics with more than one source.
    pub duplicates: Vec<Duplicate<K>>,
    /// Overrides naming unknown resources.
    pub unresolved_overrides: Vec<UnresolvedOverride>,
    /// Metrics served after the update.
    pub metrics: usize,
}

/// Errors of registry lookups.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// `update` got a number of results different from the number of rules.
    #[error("need one set of series per namer: got {got} results for {rules} rules")]
    RuleCount {
        /// Results given.
        got: usize,
        /// Rules configured.
        rules: usize,
    },
    /// The metric is not in the registry (the API answers 404).
    #[error("the server could not find the metric {metric} for {resource}")]
    NotFound {
        /// The metric name.
        metric: String,
        /// The group-resource (empty for external metrics).
        resource: String,
    },
    /// A custom query was requested for no objects.
    #[error("no resource names requested while producing a query for metric {0}")]
    NoNames(String),
    /// The query could not be built.
    #[error(transparent)]
    Naming(#[from] NamingError),
}

/// Per-rule entries, the merged index and the sorted listing.
#[derive(Debug)]
struct RuleIndex<K, V> {
    per_rule: Vec<Option<HashMap<K, V>>>,
    /// Conflicts inside each rule's last good entries.
    per_rule_dups: Vec<Vec<Duplicate<K>>>,
    merged: HashMap<K, V>,
    listing: Vec<K>,
}

impl<K: Clone + Eq + Hash + Ord, V: Clone + FromRule> RuleIndex<K, V> {
    fn new(rules: usize) -> Self {
        RuleIndex {
            per_rule: vec![None; rules],
            per_rule_dups: vec![Vec::new(); rules],
            merged: HashMap::new(),
            listing: Vec::new(),
        }
    }

    /// Later rules win; every key with more than one source is reported.
    fn rebuild(&mut self) -> Vec<Duplicate<K>> {
        let mut merged: HashMap<K, V> = HashMap::new();
        let mut dups: HashMap<K, Vec<(usize, String)>> = HashMap::new();
        for entries in self.per_rule.iter().flatten() {
            for (k, v) in entries {
                if let Some(prev) = merged.insert(k.clone(), v.clone()) {
                    dups.entry(k.clone())
                        .or_insert_with(|| vec![(prev.rule(), prev.series().to_owned())])
                        .push((v.rule(), v.series().to_owned()));
                }
            }
        }
        let mut duplicates: Vec<Duplicate<K>> = self
            .per_rule_dups
            .iter()
            .flatten()
            .cloned()
            .chain(
                dups.into_iter()
                    .map(|(metric, sources)| Duplicate { metric, sources }),
            )
            .collect();
        duplicates.sort_by(|a, b| a.metric.cmp(&b.metric).then(a.sources.cmp(&b.sources)));
        let mut listing: Vec<K> = merged.keys().cloned().collect();
        listing.sort();
        self.merged = merged;
        self.listing = listing;
        duplicates
    }
}

/// Inserts, recording a conflict when another series of the same rule already produced `k`.
fn insert_entry<K: Clone + Eq + Hash, V: FromRule>(
    map: &mut HashMap<K, V>,
    dups: &mut HashMap<K, Vec<(usize, String)>>,
    k: K,
    v: V,
) {
    let (rule, series) = (v.rule(), v.series().to_owned());
    if let Some(prev) = map.insert(k.clone(), v)
        && prev.series() != series
    {
        dups.entry(k)
            .or_insert_with(|| vec![(prev.rule(), prev.series().to_owned())])
            .push((rule, series));
    }
}

/// The distinct seriesQueries of `namers`, in first-use order, and for each namer the index of
/// its query: relist each query once and hand every rule its query's result.
pub fn relist_plan(namers: &[Namer]) -> (Vec<String>, Vec<usize>) {
    let mut queries: Vec<String> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let plan = namers
        .iter()
        .map(|n| {
            *index.entry(n.series_query()).or_insert_with(|| {
                queries.push(n.series_query().to_owned());
                queries.len() - 1
            })
        })
        .collect();
    (queries, plan)
}

fn check_count(got: usize, rules: usize) -> Result<(), RegistryError> {
    if got == rules {
        Ok(())
    } else {
        Err(RegistryError::RuleCount { got, rules })
    }
}

fn failure<E: std::fmt::Display>(namer: &Namer, rule: usize, e: &E, kept: bool) -> RuleFailure {
    RuleFailure {
        rule,
        series_query: namer.series_query().to_owned(),
        error: e.to_string(),
        kept_previous: kept,
    }
}

/// (series name, metric name) of an accepted series.
type Named = Option<(Arc<str>, Arc<str>)>;

/// Metric names per series name, computed once per distinct series name.
struct NameMemo<'a> {
    namer: &'a Namer,
    memo: HashMap<&'a str, Named>,
}

impl<'a> NameMemo<'a> {
    fn get(&mut self, series_name: &'a str) -> Named {
        let namer = self.namer;
        self.memo
            .entry(series_name)
            .or_insert_with(|| {
                if !namer.accepts(series_name) {
                    return None;
                }
                let metric = namer.metric_name_for_series(series_name).ok()?;
                (!metric.is_empty()).then(|| (Arc::from(series_name), Arc::from(metric)))
            })
            .clone()
    }
}

/// Custom metrics discovered from `rules`.
#[derive(Debug)]
pub struct CustomRegistry {
    namers: Vec<Namer>,
    index: RuleIndex<CustomMetricInfo, SeriesRef>,
}

impl CustomRegistry {
    /// An empty registry for these rules (from `CompiledConfig::rules`).
    pub fn new(namers: Vec<Namer>) -> Self {
        let n = namers.len();
        CustomRegistry {
            namers,
            index: RuleIndex::new(n),
        }
    }

    /// The rules.
    pub fn namers(&self) -> &[Namer] {
        &self.namers
    }

    /// Applies one relist: `rule_results[i]` is the series of rule `i`'s seriesQuery (unfiltered)
    /// or the error of that query. Failed rules keep their previous entries.
    pub fn update<S, E>(
        &mut self,
        mapper: &ResourceMapper,
        rule_results: impl IntoIterator<Item = Result<S, E>>,
    ) -> Result<UpdateReport<CustomMetricInfo>, RegistryError>
    where
        S: AsRef<[Series]>,
        E: std::fmt::Display,
    {
        let results: Vec<Result<S, E>> = rule_results.into_iter().collect();
        check_count(results.len(), self.namers.len())?;
        let mut failed = Vec::new();
        let mut unresolved_overrides = Vec::new();
        for (i, result) in results.iter().enumerate() {
            let namer = &self.namers[i];
            let series = match result {
                Ok(s) => s.as_ref(),
                Err(e) => {
                    failed.push(failure(namer, i, e, self.index.per_rule[i].is_some()));
                    continue;
                }
            };
            unresolved_overrides.extend(namer.resources().unresolved_overrides(mapper).map(
                |(label, gr)| UnresolvedOverride {
                    rule: i,
                    label: label.to_owned(),
                    resource: if gr.group.is_empty() {
                        gr.resource.clone()
                    } else {
                        format!("{}.{}", gr.resource, gr.group)
                    },
                },
            ));
            let (entries, dups) = Self::index_rule(i, namer, mapper, series);
            self.index.per_rule[i] = Some(entries);
            self.index.per_rule_dups[i] = dups;
        }
        let duplicates = self.index.rebuild();
        Ok(UpdateReport {
            failed,
            duplicates,
            unresolved_overrides,
            metrics: self.index.listing.len(),
        })
    }

    #[allow(clippy::type_complexity)]
    fn index_rule(
        rule: usize,
        namer: &Namer,
        mapper: &ResourceMapper,
        series: &[Series],
    ) -> (
        HashMap<CustomMetricInfo, SeriesRef>,
        Vec<Duplicate<CustomMetricInfo>>,
    ) {
        let mut names = NameMemo {
            namer,
            memo: HashMap::new(),
        };
        let mut labels: HashMap<&str, Option<(GroupResource, Arc<str>)>> = HashMap::new();
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        let mut entries = HashMap::new();
        let mut dups = HashMap::new();
        for s in series {
            let Some((series_name, metric)) = names.get(&s.name) else {
                continue;
            };
            for label in &s.label_names {
                if !seen.insert((s.name.as_str(), label.as_str())) {
                    continue;
                }
                let resource = labels.entry(label.as_str()).or_insert_with(|| {
                    let gr = namer.resources().resource_for_label(label, mapper)?;
                    Some((gr, Arc::from(label.as_str())))
                });
                let Some((gr, label)) = resource else {
                    continue;
                };
                let info = CustomMetricInfo {
                    namespaced: !gr.is_root_scoped_builtin(),
                    group_resource: gr.clone(),
                    metric: metric.to_string(),
                };
                let value = SeriesRef {
                    rule,
                    series: series_name.clone(),
                    resource_label: label.clone(),
                };
                insert_entry(&mut entries, &mut dups, info, value);
            }
        }
        let dups = dups
            .into_iter()
            .map(|(metric, sources)| Duplicate { metric, sources })
            .collect();
        (entries, dups)
    }

    /// Every metric, sorted by resource, scope and name (upstream's `ListAllMetrics`; sorted so
    /// discovery answers are stable between relists).
    pub fn list_custom_metrics(&self) -> &[CustomMetricInfo] {
        &self.index.listing
    }

    /// Where a metric comes from; `info` must be normalised ([`CustomMetricInfo::normalized`]).
    pub fn lookup(&self, info: &CustomMetricInfo) -> Option<&SeriesRef> {
        self.index.merged.get(info)
    }

    /// The PromQL query for a metric on some objects (upstream's `QueryForMetric`), plus where
    /// its values' object names are (the resource label).
    pub fn query_for(
        &self,
        info: &CustomMetricInfo,
        namespace: Option<&str>,
        names: &[String],
        metric_selector: &[Requirement],
    ) -> Result<CustomQuery, RegistryError> {
        if names.is_empty() {
            return Err(RegistryError::NoNames(info.to_string()));
        }
        let source = self.lookup(info).ok_or_else(|| RegistryError::NotFound {
            metric: info.metric.clone(),
            resource: info.group_resource.to_string(),
        })?;
        let query = self.namers[source.rule].metrics_query_for(
            &source.series,
            &source.resource_label,
            namespace,
            names,
            metric_selector,
        )?;
        Ok(CustomQuery {
            query,
            source: source.clone(),
        })
    }

    /// Whether every rule has had at least one successful relist (rules that never succeeded are
    /// listed by [`Self::rules_without_data`]).
    pub fn is_ready(&self) -> bool {
        self.index.per_rule.iter().all(Option::is_some)
    }

    /// Indexes of rules that have never had a successful relist.
    pub fn rules_without_data(&self) -> Vec<usize> {
        (0..self.namers.len())
            .filter(|&i| self.index.per_rule[i].is_none())
            .collect()
    }
}

/// A built custom-metric query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomQuery {
    /// The PromQL text.
    pub query: String,
    /// The metric's source; `source.resource_label` holds object names in the result.
    pub source: SeriesRef,
}
