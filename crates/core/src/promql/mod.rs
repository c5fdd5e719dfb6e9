//! prometheus-adapter's query language: `<<.Series>>`-style templates, the
//! matchers it builds from Kubernetes selectors, and query validation.
//!
//! Users migrate adapter configs verbatim, and the queries they see in logs
//! and debug output are the ones Prometheus gets, so rendering reproduces the
//! Go adapter character for character: matcher order (selector requirements
//! sorted by key, then namespace, then the resource label), Go `%q` quoting,
//! `|`-joined regex alternatives, and Go's printing of slices and maps.
//! Everything is pure; templates are parsed once at config load.

mod quote;
mod selector;
mod template;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use quote::{go_is_print, go_quote, write_go_quote};
pub use selector::{
    Operator, OrderingRequirement, Requirement, label_selector_to_matchers, parse_label_selector,
    parse_object_label_selector, requirements_to_matchers,
};
use template::{Kind, Template, Value};

/// Errors from parsing, rendering or validating adapter queries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromqlError {
    /// The template uses Go template syntax this implementation does not support.
    #[error("template {template:?}: unsupported template construct `{construct}`")]
    TemplateUnsupported {
        /// The template source.
        template: String,
        /// The action or word that is not supported.
        construct: String,
    },
    /// The template is malformed or names an unknown field.
    #[error("template {template:?}: {reason}")]
    TemplateSyntax {
        /// The template source.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// Rendering failed (e.g. a slice index out of range) or produced nothing.
    #[error("template {template:?}: {reason}")]
    TemplateRender {
        /// The template source.
        template: String,
        /// What went wrong.
        reason: String,
    },
    /// A resource label template cannot be turned into a label extractor.
    #[error("resource template {template:?}: {reason}")]
    ResourceTemplate {
        /// The template source.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// The Kubernetes label selector is malformed.
    #[error("label selector {selector:?}: {reason}")]
    Selector {
        /// The selector string.
        selector: String,
        /// What is wrong.
        reason: String,
    },
    /// `>` and `<` have no PromQL label-matcher equivalent.
    #[error("label selector operator `{op}` on {key:?} is not supported by prometheus")]
    UnsupportedOperator {
        /// The requirement's key.
        key: String,
        /// The operator.
        op: &'static str,
    },
    /// A requirement without a key (programmatically built selectors only).
    #[error("label not specified in selector requirement")]
    LabelNotSpecified,
    /// `=`, `!=`, `in` or `notin` without values.
    #[error("operator {op:?} on {key:?} requires values")]
    MissingValues {
        /// The requirement's key.
        key: String,
        /// The operator.
        op: Operator,
    },
    /// Exists / does-not-exist with values.
    #[error("operator {op:?} on {key:?} does not take values")]
    UnexpectedValues {
        /// The requirement's key.
        key: String,
        /// The operator.
        op: Operator,
    },
    /// The query is not valid PromQL.
    #[error("query {query:?} is not valid PromQL: {reason}")]
    InvalidQuery {
        /// The query text.
        query: String,
        /// The parser's message.
        reason: String,
    },
    /// A rule's template failed to parse, render or validate.
    #[error("rule {rule}: {source}")]
    Rule {
        /// The rule's name, as the config identifies it.
        rule: String,
        /// What is wrong with it.
        #[source]
        source: Box<PromqlError>,
    },
}

/// `label="value"` with Go `%q` quoting.
pub fn label_eq(label: &str, value: &str) -> String {
    matcher(label, "=", value)
}

/// `label!="value"`.
pub fn label_neq(label: &str, value: &str) -> String {
    matcher(label, "!=", value)
}

/// `label=~"regex"`.
pub fn label_matches(label: &str, regex: &str) -> String {
    matcher(label, "=~", regex)
}

/// `label!~"regex"`.
pub fn label_not_matches(label: &str, regex: &str) -> String {
    matcher(label, "!~", regex)
}

/// `__name__=~"regex"`.
pub fn name_matches(regex: &str) -> String {
    label_matches("__name__", regex)
}

/// `__name__!~"regex"`.
pub fn name_not_matches(regex: &str) -> String {
    label_not_matches("__name__", regex)
}

/// `name{expr,expr}`, or just `name` without expressions.
pub fn match_series(name: &str, label_exprs: &[String]) -> String {
    if label_exprs.is_empty() {
        name.to_owned()
    } else {
        format!("{name}{{{}}}", label_exprs.join(","))
    }
}

fn matcher(label: &str, op: &str, value: &str) -> String {
    let mut s = String::with_capacity(label.len() + op.len() + value.len() + 2);
    s.push_str(label);
    s.push_str(op);
    write_go_quote(&mut s, value);
    s
}

/// The values a metrics query template can refer to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryArgs {
    /// `<<.Series>>`: the series name.
    pub series: String,
    /// `<<.LabelMatchers>>`: matchers joined by `,`.
    pub label_matchers: String,
    /// `<<.LabelValuesByName>>`: label -> values joined by `|`.
    pub label_values_by_name: BTreeMap<String, String>,
    /// `<<.GroupBy>>`: group-by labels joined by `,`.
    pub group_by: String,
    /// `<<.GroupBySlice>>`: group-by labels (prints as `[a b]`).
    pub group_by_slice: Vec<String>,
}

const QUERY_FIELDS: &[(&str, Kind)] = &[
    ("Series", Kind::Str),
    ("LabelMatchers", Kind::Str),
    ("LabelValuesByName", Kind::Map),
    ("GroupBy", Kind::Str),
    ("GroupBySlice", Kind::Slice),
];

/// A parsed `metricsQuery` template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTemplate {
    source: String,
    template: Template,
}

impl QueryTemplate {
    /// Parses a metrics query template; unsupported Go template constructs
    /// are reported here, at config load, not on the first HPA request.
    pub fn parse(source: &str) -> Result<Self, PromqlError> {
        Ok(QueryTemplate {
            source: source.to_owned(),
            template: Template::parse(source, QUERY_FIELDS)?,
        })
    }

    /// The template text as configured.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders the template; an empty result is an error, as upstream.
    pub fn render(&self, args: &QueryArgs) -> Result<String, PromqlError> {
        let out = self.template.render(&self.source, |i| match i {
            0 => Value::Str(&args.series),
            1 => Value::Str(&args.label_matchers),
            2 => Value::Map(&args.label_values_by_name),
            3 => Value::Str(&args.group_by),
            _ => Value::Slice(&args.group_by_slice),
        })?;
        if out.is_empty() {
            return Err(PromqlError::TemplateRender {
                template: self.source.clone(),
                reason: "empty query produced by metrics query template".into(),
            });
        }
        Ok(out)
    }

    /// Builds the query for a custom (object) metric, like the adapter's
    /// `metricsQuery.Build`.
    ///
    /// Matchers: the selector's requirements (already sorted by key when they
    /// come from [`parse_label_selector`]), then `namespace_label="ns"` when a
    /// namespace is given and non-empty, then the resource label: `="name"`
    /// for one name, `=~"a|b"` for several (names are not regex-escaped, as
    /// upstream). GroupBy is the resource label followed by `extra_group_by`;
    /// the namespace is not part of it.
    pub fn build(
        &self,
        series: &str,
        resource_label: &str,
        namespace: Option<(&str, &str)>,
        extra_group_by: &[String],
        selector: &[Requirement],
        names: &[String],
    ) -> Result<String, PromqlError> {
        let (mut exprs, mut values_by_name) = process_requirements(selector, namespace)?;
        let target = names.join("|");
        exprs.push(if names.len() > 1 {
            label_matches(resource_label, &target)
        } else {
            label_eq(resource_label, &target)
        });
        values_by_name.insert(resource_label.to_owned(), target);
        let mut group_by_slice = Vec::with_capacity(extra_group_by.len() + 1);
        group_by_slice.push(resource_label.to_owned());
        group_by_slice.extend(extra_group_by.iter().cloned());
        self.render(&QueryArgs {
            series: series.to_owned(),
            label_matchers: exprs.join(","),
            label_values_by_name: values_by_name,
            group_by: group_by_slice.join(","),
            group_by_slice,
        })
    }

    /// Builds the query for an external metric, like `BuildExternal`: the
    /// selector's matchers plus the namespace matcher (pass `None` for rules
    /// that are not namespaced), with GroupBy supplied by the caller.
    pub fn build_external(
        &self,
        series: &str,
        namespace: Option<(&str, &str)>,
        group_by: &str,
        group_by_slice: &[String],
        selector: &[Requirement],
    ) -> Result<String, PromqlError> {
        let (exprs, values_by_name) = process_requirements(selector, namespace)?;
        self.render(&QueryArgs {
            series: series.to_owned(),
            label_matchers: exprs.join(","),
            label_values_by_name: values_by_name,
            group_by: group_by.to_owned(),
            group_by_slice: group_by_slice.to_vec(),
        })
    }
}

/// Matchers and the values-by-name map for selector requirements plus the
/// optional namespace, checking operator/value combinations as upstream.
fn process_requirements(
    selector: &[Requirement],
    namespace: Option<(&str, &str)>,
) -> Result<(Vec<String>, BTreeMap<String, String>), PromqlError> {
    let mut exprs = Vec::with_capacity(selector.len() + 2);
    let mut by_name = BTreeMap::new();
    for r in selector {
        if r.key.is_empty() {
            return Err(PromqlError::LabelNotSpecified);
        }
        let existence = matches!(r.op, Operator::Exists | Operator::DoesNotExist);
        if existence && !r.values.is_empty() {
            return Err(PromqlError::UnexpectedValues {
                key: r.key.clone(),
                op: r.op,
            });
        }
        if !existence && r.values.is_empty() {
            return Err(PromqlError::MissingValues {
                key: r.key.clone(),
                op: r.op,
            });
        }
        exprs.push(r.to_matcher());
        by_name.insert(r.key.clone(), r.values.join("|"));
    }
    if let Some((label, ns)) = namespace
        && !ns.is_empty()
    {
        exprs.push(label_eq(label, ns));
        by_name.insert(label.to_owned(), ns.to_owned());
    }
    Ok((exprs, by_name))
}

/// A `resources.template` such as `kube_<<.Group>>_<<.Resource>>`: renders a
/// group-resource into a label name and, in reverse, recognises label names of
/// that form in discovered series.
#[derive(Debug, Clone)]
pub struct ResourceLabelTemplate {
    source: String,
    template: Template,
    extractor: regex::Regex,
    has_group: bool,
}

const RESOURCE_FIELDS: &[(&str, Kind)] = &[("Group", Kind::Str), ("Resource", Kind::Str)];

/// A group and resource read back from a label name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupResource {
    /// API group as it appears in the label (sanitised, possibly empty).
    pub group: String,
    /// Resource as it appears in the label (usually singular).
    pub resource: String,
}

impl ResourceLabelTemplate {
    /// Parses the template and derives the label-matching regex, as upstream
    /// does by rendering the template with `(?P<group>.+?)` and
    /// `(?P<resource>.+?)` and anchoring it. Literal text is regex-escaped
    /// (upstream inserts it raw; for valid label names the two agree).
    pub fn parse(source: &str) -> Result<Self, PromqlError> {
        let template = Template::parse(source, RESOURCE_FIELDS)?;
        let err = |reason: &str| PromqlError::ResourceTemplate {
            template: source.to_owned(),
            reason: reason.into(),
        };
        let mut re = String::from("^");
        let (mut has_group, mut has_resource) = (false, false);
        for node in &template.nodes {
            match node {
                template::Node::Text(t) => re.push_str(&regex::escape(t)),
                template::Node::Field(0) if !has_group => {
                    has_group = true;
                    re.push_str("(?P<group>.+?)");
                }
                template::Node::Field(1) if !has_resource => {
                    has_resource = true;
                    re.push_str("(?P<resource>.+?)");
                }
                template::Node::Field(_) => return Err(err("a field may appear only once")),
                _ => return Err(err("only <<.Group>> and <<.Resource>> may be used")),
            }
        }
        if re.len() == 1 {
            return Err(err("empty template"));
        }
        if !has_resource {
            return Err(err(
                "must include at least <<.Resource>> in the label template",
            ));
        }
        re.push('$');
        let extractor = regex::Regex::new(&re).map_err(|e| err(&e.to_string()))?;
        Ok(ResourceLabelTemplate {
            source: source.to_owned(),
            template,
            extractor,
            has_group,
        })
    }

    /// The template text as configured.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The label for a resource. `group` is sanitised (`.` and `-` become
    /// `_`) as upstream does; `resource` should already be singular.
    pub fn render(&self, group: &str, resource: &str) -> Result<String, PromqlError> {
        let group = sanitize_group(group);
        let out = self.template.render(&self.source, |i| {
            if i == 0 {
                Value::Str(&group)
            } else {
                Value::Str(resource)
            }
        })?;
        if out.is_empty() {
            return Err(PromqlError::TemplateRender {
                template: self.source.clone(),
                reason: "empty label produced by label template".into(),
            });
        }
        Ok(out)
    }

    /// The group and resource encoded in `label`, if it has the template's form.
    pub fn extract(&self, label: &str) -> Option<GroupResource> {
        let caps = self.extractor.captures(label)?;
        Some(GroupResource {
            group: if self.has_group {
                caps.name("group")?.as_str().to_owned()
            } else {
                String::new()
            },
            resource: caps.name("resource")?.as_str().to_owned(),
        })
    }
}

/// An API group as label text: `.` and `-` become `_`.
pub fn sanitize_group(group: &str) -> String {
    group.replace(['.', '-'], "_")
}

/// Checks that `query` parses as PromQL, so a broken rule is reported when the
/// config is loaded instead of as a failed HPA request.
pub fn validate_query(query: &str) -> Result<(), PromqlError> {
    promql_parser::parser::parse(query)
        .map(|_| ())
        .map_err(|reason| PromqlError::InvalidQuery {
            query: query.to_owned(),
            reason,
        })
}

/// Sample arguments shaped like a real request: a namespaced pod query for
/// two pods plus a selector requirement.
pub fn sample_query_args() -> QueryArgs {
    let mut by_name = BTreeMap::new();
    by_name.insert("app".to_owned(), "web".to_owned());
    by_name.insert("namespace".to_owned(), "default".to_owned());
    by_name.insert("pod".to_owned(), "web-0|web-1".to_owned());
    QueryArgs {
        series: "http_requests_total".to_owned(),
        label_matchers: r#"app="web",namespace="default",pod=~"web-0|web-1""#.to_owned(),
        label_values_by_name: by_name,
        group_by: "pod".to_owned(),
        group_by_slice: vec!["pod".to_owned()],
    }
}

/// Parses a rule's `metricsQuery`, renders it with [`sample_query_args`] and
/// checks the result is PromQL. Errors name the rule.
pub fn validate_template(rule: &str, template: &str) -> Result<QueryTemplate, PromqlError> {
    let in_rule = |e: PromqlError| PromqlError::Rule {
        rule: rule.to_owned(),
        source: Box::new(e),
    };
    let parsed = QueryTemplate::parse(template).map_err(in_rule)?;
    let rendered = parsed.render(&sample_query_args()).map_err(in_rule)?;
    validate_query(&rendered).map_err(in_rule)?;
    Ok(parsed)
}
