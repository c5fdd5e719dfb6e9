//! Which group-versions the adapter serves, and the index of paths Go's API server answers a
//! 404 outside them with. A leaf: the API and metrics.k8s.io routers both answer from it.

use axum::response::Response;
use http::StatusCode;

use crate::status::json_response;

pub const CUSTOM_GROUP: &str = "custom.metrics.k8s.io";
pub const EXTERNAL_GROUP: &str = "external.metrics.k8s.io";
pub const RESOURCE_GROUP: &str = "metrics.k8s.io";

/// Served versions of a group, preferred first.
pub fn versions(group: &str, resource_metrics: bool) -> Option<&'static [&'static str]> {
    match group {
        CUSTOM_GROUP => Some(&["v1beta2", "v1beta1"]),
        EXTERNAL_GROUP => Some(&["v1beta1"]),
        RESOURCE_GROUP if resource_metrics => Some(&["v1", "v1beta1"]),
        _ => None,
    }
}

/// Every served `group/version`.
pub fn served_group_versions(resource_metrics: bool) -> Vec<String> {
    [CUSTOM_GROUP, EXTERNAL_GROUP, RESOURCE_GROUP]
        .iter()
        .flat_map(|g| {
            versions(g, resource_metrics)
                .unwrap_or(&[])
                .iter()
                .map(move |v| format!("{g}/{v}"))
        })
        .collect()
}

/// The 404 for a path outside every served group: the path index, as Go's API server.
pub fn path_index_response(resource_metrics: bool) -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &path_index(&served_group_versions(resource_metrics)),
    )
}

/// `{"paths": [...]}`: every path served, sorted, for a 404 outside the APIs.
pub fn path_index(group_versions: &[String]) -> serde_json::Value {
    let mut paths: Vec<String> = [
        "/apis",
        "/healthz",
        "/livez",
        "/metrics",
        "/openapi/v2",
        "/openapi/v3",
        "/readyz",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    for gv in group_versions {
        if let Some((group, _)) = gv.split_once('/') {
            paths.push(format!("/apis/{group}"));
        }
        paths.push(format!("/apis/{gv}"));
    }
    paths.sort();
    paths.dedup();
    serde_json::json!({ "paths": paths })
}
