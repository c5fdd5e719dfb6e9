//! `resourceRules`: the queries behind `metrics.k8s.io` (`kubectl top`), as upstream's
//! `resourceprovider` builds them.

use std::time::Duration;

use ferrocrane_core::kube::ResourceMapper;
use ferrocrane_core::promql::{PromqlError, QueryTemplate, validate_template};

use super::{GroupResource, NamingError, ResourceConverter};
use crate::config::{ResourceRule, ResourceRules};

/// One compiled resource rule (CPU or memory).
#[derive(Debug, Clone)]
pub struct ResourceQuery {
    converter: ResourceConverter,
    container_query: QueryTemplate,
    node_query: QueryTemplate,
    container_label: String,
}

fn template(what: &str, source: &str) -> Result<QueryTemplate, String> {
    validate_template(what, source).map_err(|e| {
        let e = match e {
            PromqlError::Rule { source, .. } => *source,
            other => other,
        };
        format!("unable to construct {what} metrics query: {e}")
    })
}

impl ResourceQuery {
    /// Compiles a rule; `which` is `CPU` or `memory` (upstream's wording in errors).
    pub fn new(which: &'static str, cfg: &ResourceRule) -> Result<Self, NamingError> {
        let err = |reason: String| NamingError::ResourceRule { which, reason };
        let converter = ResourceConverter::new(&cfg.resources)
            .map_err(|e| err(format!("unable to construct label-resource converter: {e}")))?;
        let container_query = template("container", &cfg.container_query).map_err(err)?;
        let node_query = template("node", &cfg.node_query).map_err(err)?;
        Ok(ResourceQuery {
            converter,
            container_query,
            node_query,
            container_label: cfg.container_label.clone(),
        })
    }

    /// The label holding the container name in container query results.
    pub fn container_label(&self) -> &str {
        &self.container_label
    }

    /// The label holding the object (pod or node) name in results.
    pub fn label_for(
        &self,
        resource: &GroupResource,
        mapper: &ResourceMapper,
    ) -> Result<String, NamingError> {
        self.converter.label_for_resource(resource, mapper)
    }

    /// The per-container query for `pods` in `namespace`: grouped by the pod label and the
    /// container label, `.Series` empty, no metric selector.
    pub fn container_query_for(
        &self,
        mapper: &ResourceMapper,
        namespace: &str,
        pods: &[String],
    ) -> Result<String, NamingError> {
        let pod_label = self.label_for(&GroupResource::core("pods"), mapper)?;
        let ns = if namespace.is_empty() {
            None
        } else {
            Some((self.converter.namespace_label()?, namespace))
        };
        Ok(self.container_query.build(
            "",
            &pod_label,
            ns,
            std::slice::from_ref(&self.container_label),
            &[],
            pods,
        )?)
    }

    /// The per-node query for `nodes`, grouped by the node label.
    pub fn node_query_for(
        &self,
        mapper: &ResourceMapper,
        nodes: &[String],
    ) -> Result<String, NamingError> {
        let node_label = self.label_for(&GroupResource::core("nodes"), mapper)?;
        Ok(self
            .node_query
            .build("", &node_label, None, &[], &[], nodes)?)
    }
}

/// Both resource rules plus the reported window.
#[derive(Debug, Clone)]
pub struct ResourceQueries {
    /// CPU usage (cores).
    pub cpu: ResourceQuery,
    /// Memory usage (bytes).
    pub memory: ResourceQuery,
    /// `window`, reported in NodeMetrics/PodMetrics.
    pub window: Duration,
}

impl ResourceQueries {
    /// Compiles `resourceRules`.
    pub fn new(cfg: &ResourceRules) -> Result<Self, NamingError> {
        Ok(ResourceQueries {
            cpu: ResourceQuery::new("CPU", &cfg.cpu)?,
            memory: ResourceQuery::new("memory", &cfg.memory)?,
            window: cfg.window.0,
        })
    }
}
