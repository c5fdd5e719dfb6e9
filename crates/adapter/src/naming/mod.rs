//! Rule → namer: how one discovery rule turns Prometheus series into API metrics and API
//! requests back into PromQL, as prometheus-adapter's `pkg/naming` does.
//!
//! A [`Namer`] is built from a rule alone (no API server, no Prometheus), so a config can be
//! checked completely at load. Everything that needs the cluster's resource list (normalising
//! `pod` to `pods`, singularising for a label template) takes a [`ResourceMapper`] snapshot as an
//! argument: the mapper is refreshed in the background and a CRD created after start is found on
//! the next relist, which upstream (mapper filled once at startup) never does.

mod filter;
mod namer;
mod resource_rules;
mod resources;
#[cfg(test)]
pub(crate) mod tests;

use ferrocrane_core::kube::ResourceMapper;
use ferrocrane_core::promql::PromqlError;

pub use filter::ReMatcher;
pub use namer::Namer;
pub use resource_rules::{ResourceQueries, ResourceQuery};
pub use resources::{ResourceConverter, SeriesResource};

/// Why a rule cannot be turned into a namer, or a query cannot be built. Messages reproduce
/// prometheus-adapter's where it has one, since users search for them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamingError {
    /// `seriesFilters` entry with both or neither of `is` / `isNot`, or a bad regex.
    #[error("unable to generate series name filter associated with series query {query}: {reason}", query = quote(series_query))]
    SeriesFilter {
        /// The rule's seriesQuery.
        series_query: String,
        /// What is wrong with the filter.
        reason: String,
    },
    /// `name.matches` is not a valid regex. Upstream compiles it first as the implicit series
    /// filter, so that is the message users see.
    #[error("unable to generate series name filter from name rules associated with series query {query}: unable to compile series filter {matches}: {reason}", matches = quote(matches), query = quote(series_query))]
    NameMatches {
        /// The rule's seriesQuery.
        series_query: String,
        /// The regex as configured.
        matches: String,
        /// The regex engine's message.
        reason: String,
    },
    /// `name.matches` has more than one capture group and `name.as` is empty.
    #[error("must specify an 'as' value for name matcher {matches} associated with series query {query}", matches = quote(matches), query = quote(series_query))]
    NameAsRequired {
        /// The rule's seriesQuery.
        series_query: String,
        /// The regex as configured.
        matches: String,
    },
    /// `resources.template` cannot be parsed or turned into a label matcher.
    #[error("unable to generate label format from template {template}: {reason}", template = quote(template))]
    ResourceTemplate {
        /// The template as configured.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// An override with an empty `resource`.
    #[error("resource override for label {label} has no resource", label = quote(label))]
    EmptyOverride {
        /// The overriding label.
        label: String,
    },
    /// `metricsQuery` (or a resource rule query) cannot be parsed or does not render to PromQL.
    #[error("unable to construct metrics query associated with series query {query}: {reason}", query = quote(series_query))]
    MetricsQuery {
        /// The rule's seriesQuery (for resource rules: which query).
        series_query: String,
        /// What is wrong.
        reason: String,
    },
    /// A `resourceRules` entry (`cpu` or `memory`) cannot be compiled.
    #[error("unable to construct querier for {which} metrics: {reason}")]
    ResourceRule {
        /// `CPU` or `memory`, as upstream names them.
        which: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// `seriesQuery` is empty or not a PromQL series selector.
    #[error("invalid series query {query}: {reason}", query = quote(series_query))]
    SeriesQuery {
        /// The seriesQuery as configured.
        series_query: String,
        /// What is wrong.
        reason: String,
    },
    /// A series name that `name.matches` does not match (such series are filtered out before
    /// naming, so this only shows up when naming is called directly).
    #[error("series name {name} did not match expected pattern {pattern}", name = quote(name), pattern = quote(pattern))]
    SeriesName {
        /// The series name.
        name: String,
        /// The `name.matches` regex.
        pattern: String,
    },
    /// No override and no template gives a label for this resource.
    #[error("unable to convert resource {resource} into label: {reason}")]
    NoLabelForResource {
        /// The resource, printed like Go's `GroupResource.String()`.
        resource: String,
        /// Why.
        reason: String,
    },
    /// Rendering a query for a request failed (bad metric selector, template error).
    #[error(transparent)]
    Query(#[from] PromqlError),
}

fn quote(s: &str) -> String {
    ferrocrane_core::promql::go_quote(s)
}

/// One-line text of a regex compile error (the regex crate's `Display` is a multi-line diagram;
/// config errors must stay one line).
pub(crate) fn regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => s
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error:").map(|m| m.trim().to_owned()))
            .unwrap_or_else(|| s.split_whitespace().collect::<Vec<_>>().join(" ")),
        other => other
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// A Kubernetes group-resource. In the registry and in every namer answer it is normalised: the
/// API group as served and the lower-case plural (`pods`, `deployments` in `apps`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupResource {
    /// API group, empty for the core group.
    pub group: String,
    /// Resource (normalised: plural).
    pub resource: String,
}

impl GroupResource {
    /// A group-resource from its parts.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        GroupResource {
            group: group.into(),
            resource: resource.into(),
        }
    }

    /// `pods` in the core group.
    pub fn core(resource: impl Into<String>) -> Self {
        GroupResource::new("", resource)
    }

    /// Whether this is one of the cluster-scoped resources upstream never reports as namespaced
    /// (`namespaces`, `nodes`, `persistentvolumes`).
    pub fn is_root_scoped_builtin(&self) -> bool {
        self.group.is_empty()
            && matches!(
                self.resource.as_str(),
                "namespaces" | "nodes" | "persistentvolumes"
            )
    }
}

impl std::fmt::Display for GroupResource {
    /// Like Go's `schema.GroupResource.String()`: `pods`, `deployments.apps`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// Core resources every cluster has, used when the mapper does not (yet) know them — e.g. the
/// first discovery failed — so that the pod/namespace/node metrics HPAs need keep working.
/// (plural, singular)
const BUILTIN: &[(&str, &str)] = &[
    ("namespaces", "namespace"),
    ("nodes", "node"),
    ("pods", "pod"),
    ("persistentvolumes", "persistentvolume"),
    ("persistentvolumeclaims", "persistentvolumeclaim"),
    ("services", "service"),
];

/// Normalises a group-resource the way upstream's `CustomMetricInfo.Normalized` does with a
/// RESTMapper: a plural or singular name (case-insensitive) becomes the served group and the
/// plural. Short names (`po`) are kubectl's shortcut expansion, not the RESTMapper's, so
/// upstream does not know them and neither do we. `None` when the resource is unknown.
pub fn normalize(mapper: &ResourceMapper, group: &str, resource: &str) -> Option<GroupResource> {
    let name = resource.to_lowercase();
    if let Some(m) = mapper.by_resource(group, resource) {
        let named = m.plural.eq_ignore_ascii_case(&name) || m.singular.eq_ignore_ascii_case(&name);
        return named.then(|| GroupResource::new(m.group.clone(), m.plural.to_lowercase()));
    }
    if !group.is_empty() {
        return None;
    }
    BUILTIN
        .iter()
        .find(|(plural, singular)| *plural == name || *singular == name)
        .map(|(plural, _)| GroupResource::core(*plural))
}

/// The singular of a normalised resource, as a RESTMapper's `ResourceSingularizer` gives it
/// (discovery's singularName, else the lower-cased kind).
pub fn singular(mapper: &ResourceMapper, gr: &GroupResource) -> Option<String> {
    if let Some(m) = mapper.by_resource(&gr.group, &gr.resource) {
        if !m.singular.is_empty() {
            return Some(m.singular.to_lowercase());
        }
        if !m.kind.is_empty() {
            return Some(m.kind.to_lowercase());
        }
    }
    if !gr.group.is_empty() {
        return None;
    }
    BUILTIN
        .iter()
        .find(|(plural, _)| *plural == gr.resource)
        .map(|(_, s)| (*s).to_owned())
}

/// A series as discovery sees it: its name and the names of its other labels, sorted (values
/// never matter to discovery, so the relist drops them as it decodes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Series {
    /// The metric name (`__name__`).
    pub name: String,
    /// Names of the labels other than `__name__`, sorted and distinct.
    pub label_names: Vec<String>,
}

impl Series {
    /// A series from its name and `(label, value)` pairs (the values are dropped).
    pub fn new<'a>(name: &str, labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut label_names: Vec<String> = labels.into_iter().map(|(k, _)| k.to_owned()).collect();
        label_names.sort_unstable();
        label_names.dedup();
        Series {
            name: name.to_owned(),
            label_names,
        }
    }
}

impl From<ferrocrane_core::prometheus::SeriesShape> for Series {
    fn from(shape: ferrocrane_core::prometheus::SeriesShape) -> Self {
        Series {
            name: shape.name,
            label_names: shape.label_names,
        }
    }
}
