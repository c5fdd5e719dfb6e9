//! Discovery documents: `/apis`, `/apis/{group}`, `/apis/{group}/{version}`.
//!
//! The custom and external groups are always served (with an empty resource list until a relist
//! finds metrics), so their APIServices stay Available while a hot-reloaded config adds rules;
//! upstream drops a group whose rule list is empty. metrics.k8s.io is served only when
//! `resourceRules` are configured: claiming it otherwise would break `kubectl top`.

pub use crate::served::{
    CUSTOM_GROUP, EXTERNAL_GROUP, RESOURCE_GROUP, path_index, path_index_response,
    served_group_versions, versions,
};

use super::types::{ApiGroup, ApiGroupList, ApiResource, GroupVersion, ServerAddressByClientCidr};
use crate::registry::CustomRegistry;

fn gv(group: &str, version: &str) -> GroupVersion {
    GroupVersion {
        group_version: format!("{group}/{version}"),
        version: version.to_owned(),
    }
}

/// `APIGroup` for a served group (`kind`/`apiVersion` only on the standalone document).
pub fn group(name: &str, resource_metrics: bool, standalone: bool) -> Option<ApiGroup> {
    let vs = versions(name, resource_metrics)?;
    Some(ApiGroup {
        kind: if standalone { "APIGroup" } else { "" },
        api_version: if standalone { "v1" } else { "" },
        name: name.to_owned(),
        versions: vs.iter().map(|v| gv(name, v)).collect(),
        preferred_version: gv(name, vs[0]),
        server_address_by_client_cidrs: Vec::new(),
    })
}

/// `/apis`.
///
/// Each group names where it is served from as Go's generic API server does: every client
/// CIDR, the secure port with no host (`:443`).
pub fn group_list(resource_metrics: bool, secure_port: u16) -> ApiGroupList {
    ApiGroupList {
        kind: "APIGroupList",
        groups: [CUSTOM_GROUP, EXTERNAL_GROUP, RESOURCE_GROUP]
            .iter()
            .filter_map(|g| group(g, resource_metrics, false))
            .map(|mut g| {
                g.server_address_by_client_cidrs = vec![ServerAddressByClientCidr {
                    client_cidr: "0.0.0.0/0",
                    server_address: format!(":{secure_port}"),
                }];
                g
            })
            .collect(),
    }
}

/// `{resource}/{metric}` entries, as custom-metrics-apiserver's resource lister writes them.
pub fn custom_resources(registry: &CustomRegistry) -> Vec<ApiResource> {
    registry
        .list_custom_metrics()
        .iter()
        .map(|m| ApiResource {
            name: format!("{}/{}", m.group_resource, m.metric),
            singular_name: String::new(),
            namespaced: m.namespaced,
            kind: "MetricValueList",
            verbs: vec!["get"],
        })
        .collect()
}

/// One namespaced entry per external metric.
pub fn external_resources(metrics: &[String]) -> Vec<ApiResource> {
    metrics
        .iter()
        .map(|m| ApiResource {
            name: m.clone(),
            singular_name: String::new(),
            namespaced: true,
            kind: "ExternalMetricValueList",
            verbs: vec!["get"],
        })
        .collect()
}

/// metrics.k8s.io/v1 and v1beta1, as metrics-server lists them.
pub fn resource_metrics_resources() -> Vec<ApiResource> {
    vec![
        ApiResource {
            name: "nodes".into(),
            singular_name: String::new(),
            namespaced: false,
            kind: "NodeMetrics",
            verbs: vec!["get", "list"],
        },
        ApiResource {
            name: "pods".into(),
            singular_name: String::new(),
            namespaced: true,
            kind: "PodMetrics",
            verbs: vec!["get", "list"],
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::ApiResourceList;

    #[test]
    fn path_index_lists_groups_and_versions_once() {
        let v = path_index(&["a.io/v1".into(), "a.io/v2".into()]);
        let paths: Vec<&str> = v["paths"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_str())
            .collect();
        assert_eq!(
            paths,
            [
                "/apis",
                "/apis/a.io",
                "/apis/a.io/v1",
                "/apis/a.io/v2",
                "/healthz",
                "/livez",
                "/metrics",
                "/openapi/v2",
                "/openapi/v3",
                "/readyz"
            ]
        );
    }

    #[test]
    fn group_list_shape() {
        let v = serde_json::to_value(group_list(true, 443)).unwrap();
        assert_eq!(v["kind"], "APIGroupList");
        assert_eq!(v["groups"].as_array().unwrap().len(), 3);
        assert_eq!(
            v["groups"][0],
            serde_json::json!({
                "name": "custom.metrics.k8s.io",
                "versions": [
                    {"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"},
                    {"groupVersion": "custom.metrics.k8s.io/v1beta1", "version": "v1beta1"}
                ],
                "preferredVersion": {"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"},
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ":443"}]
            })
        );
        assert_eq!(group_list(false, 443).groups.len(), 2);
        let g = serde_json::to_value(group(EXTERNAL_GROUP, false, true).unwrap()).unwrap();
        assert_eq!(g["kind"], "APIGroup");
        assert_eq!(g["apiVersion"], "v1");
        assert!(group(RESOURCE_GROUP, false, true).is_none());
        // kubectl 1.37 takes the first version it knows: v1 first, v1beta1 for the HPA.
        let rm = serde_json::to_value(group(RESOURCE_GROUP, true, true).unwrap()).unwrap();
        assert_eq!(
            rm["versions"],
            serde_json::json!([
                {"groupVersion": "metrics.k8s.io/v1", "version": "v1"},
                {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}
            ])
        );
        assert_eq!(rm["preferredVersion"]["version"], "v1");
        assert!(group("apps", true, true).is_none());
    }

    #[test]
    fn resource_metrics_list_is_metrics_servers() {
        let v = serde_json::to_value(ApiResourceList::new(
            "metrics.k8s.io/v1beta1".into(),
            resource_metrics_resources(),
        ))
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1",
                "resources": [
                    {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
                    {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}
                ]
            })
        );
    }

    #[test]
    fn resource_metrics_serves_the_versions_listed() {
        let listed: Vec<String> = versions(RESOURCE_GROUP, true)
            .unwrap_or(&[])
            .iter()
            .map(|v| format!("{RESOURCE_GROUP}/{v}"))
            .collect();
        assert_eq!(listed, crate::resource_metrics::API_VERSIONS);
    }
}
