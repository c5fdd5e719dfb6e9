//! The external-metrics half of the registry: metrics keyed by name only, from
//! `externalRules`.

use super::*;

/// External metrics discovered from `externalRules`.
#[derive(Debug)]
pub struct ExternalRegistry {
    namers: Vec<Namer>,
    index: RuleIndex<ExternalMetricInfo, ExternalSeriesRef>,
}

impl ExternalRegistry {
    /// An empty registry for these rules (from `CompiledConfig::external_rules`).
    pub fn new(namers: Vec<Namer>) -> Self {
        let n = namers.len();
        ExternalRegistry {
            namers,
            index: RuleIndex::new(n),
        }
    }

    /// The rules.
    pub fn namers(&self) -> &[Namer] {
        &self.namers
    }

    /// Like [`CustomRegistry::update`]; external metrics are keyed by name only.
    pub fn update<S, E>(
        &mut self,
        rule_results: impl IntoIterator<Item = Result<S, E>>,
    ) -> Result<UpdateReport<ExternalMetricInfo>, RegistryError>
    where
        S: AsRef<[Series]>,
        E: std::fmt::Display,
    {
        let results: Vec<Result<S, E>> = rule_results.into_iter().collect();
        check_count(results.len(), self.namers.len())?;
        let mut failed = Vec::new();
        for (i, result) in results.iter().enumerate() {
            let namer = &self.namers[i];
            let series = match result {
                Ok(s) => s.as_ref(),
                Err(e) => {
                    failed.push(failure(namer, i, e, self.index.per_rule[i].is_some()));
                    continue;
                }
            };
            let mut names = NameMemo {
                namer,
                memo: HashMap::new(),
            };
            let mut entries = HashMap::new();
            let mut dups = HashMap::new();
            let mut seen: HashSet<&str> = HashSet::new();
            for s in series {
                if !seen.insert(s.name.as_str()) {
                    continue;
                }
                let Some((series_name, metric)) = names.get(&s.name) else {
                    continue;
                };
                let info = ExternalMetricInfo {
                    metric: metric.to_string(),
                };
                let value = ExternalSeriesRef {
                    rule: i,
                    series: series_name,
                };
                insert_entry(&mut entries, &mut dups, info, value);
            }
            self.index.per_rule[i] = Some(entries);
            self.index.per_rule_dups[i] = dups
                .into_iter()
                .map(|(metric, sources)| Duplicate { metric, sources })
                .collect();
        }
        let duplicates = self.index.rebuild();
        Ok(UpdateReport {
            failed,
            duplicates,
            unresolved_overrides: Vec::new(),
            metrics: self.index.listing.len(),
        })
    }

    /// Every external metric, sorted by name.
    pub fn list_external_metrics(&self) -> &[ExternalMetricInfo] {
        &self.index.listing
    }

    /// Where a metric comes from.
    pub fn lookup(&self, metric: &str) -> Option<&ExternalSeriesRef> {
        self.index.merged.get(&ExternalMetricInfo {
            metric: metric.to_owned(),
        })
    }

    /// The PromQL query for an external metric requested in `namespace` (upstream's
    /// `QueryForMetric`): the namespace becomes a matcher only for namespaced rules.
    pub fn query_for(
        &self,
        namespace: Option<&str>,
        metric: &str,
        metric_selector: &[Requirement],
    ) -> Result<String, RegistryError> {
        let source = self.lookup(metric).ok_or_else(|| RegistryError::NotFound {
            metric: metric.to_owned(),
            resource: String::new(),
        })?;
        Ok(self.namers[source.rule].external_query_for(
            &source.series,
            namespace,
            metric_selector,
        )?)
    }

    /// Whether every rule has had at least one successful relist.
    pub fn is_ready(&self) -> bool {
        self.index.per_rule.iter().all(Option::is_some)
    }
}
