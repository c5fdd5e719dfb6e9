//! Series labels ↔ Kubernetes resources: `resources.template` and `resources.overrides`.

use ferrocrane_core::kube::ResourceMapper;
use ferrocrane_core::promql::ResourceLabelTemplate;

use super::{GroupResource, NamingError, Series, normalize, singular};
use crate::config::{self, ResourceMapping};

/// A resource found in a series' labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesResource {
    /// The normalised group-resource.
    pub group_resource: GroupResource,
    /// The label that names it.
    pub label: String,
    /// Whether metrics for it are namespaced: upstream reports every resource as namespaced
    /// except `namespaces`, `nodes` and `persistentvolumes`.
    pub namespaced: bool,
}

/// The label ↔ resource relation of one rule.
#[derive(Debug, Clone)]
pub struct ResourceConverter {
    template: Option<ResourceLabelTemplate>,
    /// label → group-resource as configured (not normalised), sorted by label.
    overrides: Vec<(String, config::GroupResource)>,
    /// The label that carries the namespace, when the rule can name one.
    namespace_label: Option<String>,
}

fn namespace_override(gr: &config::GroupResource) -> bool {
    gr.group.is_empty()
        && matches!(
            gr.resource.to_lowercase().as_str(),
            "namespaces" | "namespace" | "ns"
        )
}

impl ResourceConverter {
    /// Parses the template and takes the overrides. Both may be empty (then no series maps to a
    /// resource; config validation rejects that for custom-metric rules).
    pub fn new(cfg: &ResourceMapping) -> Result<Self, NamingError> {
        let template = if cfg.template.is_empty() {
            None
        } else {
            Some(ResourceLabelTemplate::parse(&cfg.template).map_err(|e| {
                NamingError::ResourceTemplate {
                    template: cfg.template.clone(),
                    reason: match e {
                        ferrocrane_core::promql::PromqlError::ResourceTemplate {
                            reason, ..
                        } => reason,
                        other => other.to_string(),
                    },
                }
            })?)
        };
        let mut overrides = Vec::with_capacity(cfg.overrides.len());
        for (label, gr) in &cfg.overrides {
            if gr.resource.is_empty() {
                return Err(NamingError::EmptyOverride {
                    label: label.clone(),
                });
            }
            overrides.push((label.clone(), gr.clone()));
        }
        let namespace_label =
            match overrides.iter().find(|(_, gr)| namespace_override(gr)) {
                Some((label, _)) => Some(label.clone()),
                None => match &template {
                    Some(t) => Some(t.render("", "namespace").map_err(|e| {
                        NamingError::ResourceTemplate {
                            template: cfg.template.clone(),
                            reason: e.to_string(),
                        }
                    })?),
                    None => None,
                },
            };
        Ok(ResourceConverter {
            template,
            overrides,
            namespace_label,
        })
    }

    /// Whether neither a template nor an override is configured.
    pub fn is_empty(&self) -> bool {
        self.template.is_none() && self.overrides.is_empty()
    }

    /// The label holding the namespace (override for `namespace`, else the template rendered for
    /// it), as upstream's `LabelForResource(namespaces)`.
    pub fn namespace_label(&self) -> Result<&str, NamingError> {
        self.namespace_label
            .as_deref()
            .ok_or_else(|| NamingError::NoLabelForResource {
                resource: "namespaces".into(),
                reason: "no generic resource label form specified for this metric".into(),
            })
    }

    /// The resource a label names, if any: an override for exactly this label, else the template's
    /// form. `None` also when the resource is unknown to the mapper (upstream skips such labels).
    pub fn resource_for_label(
        &self,
        label: &str,
        mapper: &ResourceMapper,
    ) -> Option<GroupResource> {
        if let Some((_, gr)) = self.overrides.iter().find(|(l, _)| l == label) {
            return normalize(mapper, &gr.group, &gr.resource);
        }
        let extracted = self.template.as_ref()?.extract(label)?;
        normalize(mapper, &extracted.group, &extracted.resource)
    }

    /// Overrides the mapper cannot resolve (upstream refuses to start on them; here their labels
    /// are skipped and reported, so a CRD installed later starts working on a later relist).
    pub fn unresolved_overrides<'a>(
        &'a self,
        mapper: &'a ResourceMapper,
    ) -> impl Iterator<Item = (&'a str, &'a config::GroupResource)> + 'a {
        self.overrides
            .iter()
            .filter(|(_, gr)| normalize(mapper, &gr.group, &gr.resource).is_none())
            .map(|(l, gr)| (l.as_str(), gr))
    }

    /// Every resource a series' labels name, as upstream's `ResourcesForSeries`, in label order.
    pub fn resources_for_series(
        &self,
        series: &Series,
        mapper: &ResourceMapper,
    ) -> Vec<SeriesResource> {
        series
            .label_names
            .iter()
            .filter_map(|label| {
                let gr = self.resource_for_label(label, mapper)?;
                Some(SeriesResource {
                    namespaced: !gr.is_root_scoped_builtin(),
                    group_resource: gr,
                    label: label.clone(),
                })
            })
            .collect()
    }

    /// The label for a normalised resource: the override whose resource normalises to it, else
    /// the template with `.Group` sanitised and `.Resource` singular.
    pub fn label_for_resource(
        &self,
        gr: &GroupResource,
        mapper: &ResourceMapper,
    ) -> Result<String, NamingError> {
        if let Some((label, _)) = self
            .overrides
            .iter()
            .find(|(_, o)| normalize(mapper, &o.group, &o.resource).as_ref() == Some(gr))
        {
            return Ok(label.clone());
        }
        let err = |reason: String| NamingError::NoLabelForResource {
            resource: gr.to_string(),
            reason,
        };
        let Some(template) = &self.template else {
            return Err(err(
                "no generic resource label form specified for this metric".into(),
            ));
        };
        let singular = singular(mapper, gr).ok_or_else(|| {
            err(format!(
                "unable to singularize resource {gr}: no resource matches {gr}"
            ))
        })?;
        template
            .render(&gr.group, &singular)
            .map_err(|e| err(e.to_string()))
    }
}
