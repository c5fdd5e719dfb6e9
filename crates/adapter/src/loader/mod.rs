//! The discovery config loaded: parsed strictly and every rule compiled, or refused.
//!
//! A file that loads is a file that serves.
//!
//! Parsing is strict (unknown or duplicate keys are errors naming file, line and key, as
//! upstream's `yaml.UnmarshalStrict`), and loading compiles every rule: regexes, templates, the
//! seriesQuery and the rendered metricsQuery are checked by the PromQL parser, so a broken rule
//! stops the load with `rules[i]...: <upstream's message naming the series query>` instead of
//! surfacing as an empty metric list or a failed HPA request.

use std::path::Path;

use ferrocrane_core::config::{
    ConfigError, Validate, ValidationError, load_and_validate, parse_and_validate_str,
    parse_yaml_str, utf8_text,
};

use crate::config::{DiscoveryRule, MetricsDiscoveryConfig};
use crate::naming::{Namer, NamingError, ResourceQueries};

/// The config compiled: what the registry and the API handlers use.
#[derive(Debug, Clone)]
pub struct CompiledConfig {
    /// One namer per `rules` entry, in order.
    pub rules: Vec<Namer>,
    /// One namer per `externalRules` entry, in order.
    pub external_rules: Vec<Namer>,
    /// `resourceRules`, when configured.
    pub resource_rules: Option<ResourceQueries>,
}

/// The field a namer error belongs to, relative to its rule.
fn field_of(e: &NamingError) -> &'static str {
    match e {
        NamingError::SeriesQuery { .. } => "seriesQuery",
        NamingError::SeriesFilter { .. } => "seriesFilters",
        NamingError::NameMatches { .. } | NamingError::NameAsRequired { .. } => "name",
        NamingError::ResourceTemplate { .. } | NamingError::EmptyOverride { .. } => "resources",
        _ => "metricsQuery",
    }
}

/// The message for a rule's error: always naming its series query.
fn rule_message(e: &NamingError, series_query: &str) -> String {
    match e {
        NamingError::ResourceTemplate { .. } | NamingError::EmptyOverride { .. } => format!(
            "{e} (series query {})",
            ferrocrane_core::promql::go_quote(series_query)
        ),
        _ => e.to_string(),
    }
}

fn compile_rules(
    rules: &[DiscoveryRule],
    section: &str,
    need_resources: bool,
) -> Result<Vec<Namer>, ValidationError> {
    rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let at = format!("{section}[{i}]");
            let namer = Namer::new(rule)
                .and_then(|n| n.check_promql().map(|()| n))
                .map_err(|e| {
                    ValidationError::new(field_of(&e), rule_message(&e, &rule.series_query))
                        .at(&at)
                })?;
            if need_resources && namer.resources().is_empty() {
                return Err(ValidationError::new(
                    "resources",
                    format!(
                        "neither a template nor overrides: no series of series query {} can be associated with a Kubernetes resource",
                        ferrocrane_core::promql::go_quote(&rule.series_query)
                    ),
                )
                .at(&at));
            }
            Ok(namer)
        })
        .collect()
}

// Defined here rather than beside the type so that `config` stays the file format and depends on
// nothing else in the crate; compiling is what needs `naming`.
impl MetricsDiscoveryConfig {
    /// Compiles every rule; the error names the offending field (`rules[3].name`) and carries
    /// upstream's message, which names the rule's series query.
    pub fn compile(&self) -> Result<CompiledConfig, ValidationError> {
        let rules = compile_rules(&self.rules, "rules", true)?;
        let external_rules = compile_rules(&self.external_rules, "externalRules", false)?;
        let resource_rules = match &self.resource_rules {
            None => None,
            Some(rr) => Some(ResourceQueries::new(rr).map_err(|e| {
                let which = match &e {
                    NamingError::ResourceRule { which: "CPU", .. } => "cpu",
                    _ => "memory",
                };
                ValidationError::new(which, e.to_string()).at("resourceRules")
            })?),
        };
        Ok(CompiledConfig {
            rules,
            external_rules,
            resource_rules,
        })
    }
}

impl Validate for MetricsDiscoveryConfig {
    fn validate(&self) -> Result<(), ValidationError> {
        self.compile().map(|_| ())
    }
}

/// Reads, strictly parses and validates a config file.
pub fn load(path: impl AsRef<Path>) -> Result<MetricsDiscoveryConfig, ConfigError> {
    load_and_validate(path)
}

/// Parses and validates config text; `name` is what errors call the source.
pub fn parse_str(name: &str, text: &str) -> Result<MetricsDiscoveryConfig, ConfigError> {
    parse_and_validate_str(name, text)
}

/// Parses, validates and compiles config bytes: the loader to hand to
/// `ConfigWatcher::start_with` so reloads swap in a ready-to-use [`CompiledConfig`].
pub fn load_compiled(
    name: &str,
    bytes: Vec<u8>,
) -> Result<(MetricsDiscoveryConfig, CompiledConfig), ConfigError> {
    let text = utf8_text(name, bytes)?;
    let cfg: MetricsDiscoveryConfig = parse_yaml_str(name, &text)?;
    let compiled = cfg.compile().map_err(|error| ConfigError::Invalid {
        file: name.to_owned(),
        error,
    })?;
    Ok((cfg, compiled))
}

#[cfg(test)]
mod tests;
