//! The aggregated APIs: custom.metrics.k8s.io (v1beta1, v1beta2), external.metrics.k8s.io
//! (v1beta1), discovery for those and metrics.k8s.io, and `/openapi`.
//!
//! Each handler is a thin shell: parse the path and query (pure), look the metric up and build
//! its query under a short read lock on the registries (pure), list objects / run the query (I/O,
//! no lock held), convert the result (pure).

pub mod custom;
pub mod discovery;
pub mod external;
pub mod openapi;
pub mod types;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ferrocrane_core::kube::{ResourceMapper, SharedMapper};
use ferrocrane_core::prometheus::{PrometheusClient, QueryResult};
use ferrocrane_core::promql::{Requirement, parse_label_selector};
use ferrocrane_core::server::{UrlPart, percent_decode};
use http::StatusCode;
use kube::api::{Api, DynamicObject, ListParams};

use crate::registry::{CustomMetricInfo, RegistryError};
use crate::relist::{SharedRegistries, SharedResourceQueries};
use crate::status::{Status, json_response};
use custom::{CustomRequest, Described};
use types::{ApiResourceList, CustomVersion, ExternalMetricValueList, MetricValueList};

/// What the handlers share.
#[derive(Clone)]
pub struct ApiState {
    pub registries: SharedRegistries,
    pub resource_queries: SharedResourceQueries,
    pub prometheus: PrometheusClient,
    /// external.metrics.k8s.io's sources.
    pub external: std::sync::Arc<external::ExternalMetrics>,
    /// Lists the objects behind `*` requests (`--lister-kubeconfig`).
    pub lister: kube::Client,
    /// Answers `*` requests from watches instead, once they have synced (`--object-cache`).
    pub objects: std::sync::Arc<crate::objects::ObjectCaches>,
    pub mapper: SharedMapper,
    /// `--secure-port`, which `/apis` names.
    pub secure_port: u16,
}

impl ApiState {
    fn resource_metrics_enabled(&self) -> bool {
        self.resource_queries.get().is_some()
    }
}

/// Routes for discovery, custom and external metrics, and openapi. metrics.k8s.io data paths
/// are merged in by the caller (static routes win over the `/apis/{*rest}` catch-all).
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/apis", get(apis))
        .route("/apis/", get(apis))
        .route("/apis/{*rest}", get(apis))
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3", get(openapi_v3))
        .route("/openapi/v3/{*rest}", get(openapi_v3_gv))
        .fallback(path_index)
        .with_state(state)
}

/// A path nothing serves: 404 with the index of the paths served, as Go's API server answers.
async fn path_index(State(state): State<ApiState>) -> Response {
    discovery::path_index_response(state.resource_metrics_enabled())
}

async fn openapi_v2() -> Response {
    json_response(StatusCode::OK, &openapi::v2())
}

fn served_group_versions(state: &ApiState) -> Vec<String> {
    discovery::served_group_versions(state.resource_metrics_enabled())
}

async fn openapi_v3(State(state): State<ApiState>) -> Response {
    json_response(
        StatusCode::OK,
        &openapi::v3_discovery(&served_group_versions(&state)),
    )
}

async fn openapi_v3_gv(State(state): State<ApiState>, req: Request) -> Response {
    let gv = req
        .uri()
        .path()
        .trim_start_matches("/openapi/v3/apis/")
        .to_owned();
    if served_group_versions(&state).contains(&gv) {
        json_response(StatusCode::OK, &openapi::v3_group_version())
    } else {
        Status::route_not_found().into_response()
    }
}

/// Query parameters the metrics APIs read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Params {
    pub label_selector: Option<String>,
    pub metric_label_selector: Option<String>,
    pub field_selector: Option<String>,
}

/// Parses the query string (percent-decoded, `+` as space like Go's `url.ParseQuery`).
pub fn parse_params(query: Option<&str>) -> Params {
    let mut p = Params::default();
    for (k, v) in url_pairs(query.unwrap_or("")) {
        match k.as_str() {
            "labelSelector" => p.label_selector = Some(v),
            "metricLabelSelector" => p.metric_label_selector = Some(v),
            "fieldSelector" => p.field_selector = Some(v),
            _ => {}
        }
    }
    p
}

fn url_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (
                percent_decode(k, UrlPart::QueryComponent),
                percent_decode(v, UrlPart::QueryComponent),
            )
        })
        .collect()
}

fn selector(raw: Option<&str>) -> Result<Vec<Requirement>, Status> {
    match raw {
        None => Ok(Vec::new()),
        Some(s) => parse_label_selector(s).map_err(|e| Status::bad_request(e.to_string())),
    }
}

/// `/apis/...` dispatcher.
async fn apis(State(state): State<ApiState>, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    let params = parse_params(req.uri().query());
    let decoded: Vec<String> = path
        .trim_start_matches("/apis")
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode(s, UrlPart::PathSegment))
        .collect();
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let rm = state.resource_metrics_enabled();
    match segments.as_slice() {
        [] => json_response(
            StatusCode::OK,
            &discovery::group_list(rm, state.secure_port),
        ),
        [group] => match discovery::group(group, rm, true) {
            Some(g) => json_response(StatusCode::OK, &g),
            None => discovery::path_index_response(rm),
        },
        [group, version, rest @ ..] => {
            let Some(versions) = discovery::versions(group, rm) else {
                return discovery::path_index_response(rm);
            };
            if !versions.contains(version) {
                return Status::route_not_found().into_response();
            }
            let gv = format!("{group}/{version}");
            match (*group, rest) {
                (_, []) => resource_list(&state, group, gv),
                (discovery::CUSTOM_GROUP, rest) => {
                    let Some(v) = CustomVersion::parse(version) else {
                        return Status::route_not_found().into_response();
                    };
                    custom_metrics(&state, v, rest, &params)
                        .await
                        .unwrap_or_else(IntoResponse::into_response)
                }
                (discovery::EXTERNAL_GROUP, rest) => external_metrics(&state, rest, &params)
                    .await
                    .unwrap_or_else(IntoResponse::into_response),
                _ => Status::route_not_found().into_response(),
            }
        }
    }
}

fn resource_list(state: &ApiState, group: &str, gv: String) -> Response {
    let resources = match group {
        discovery::CUSTOM_GROUP => {
            let r = state.registries.read().unwrap_or_else(|e| e.into_inner());
            discovery::custom_resources(&r.custom)
        }
        discovery::EXTERNAL_GROUP => discovery::external_resources(&state.external.metric_names()),
        _ => discovery::resource_metrics_resources(),
    };
    json_response(StatusCode::OK, &ApiResourceList::new(gv, resources))
}

/// Kind and `group/version` of a normalised resource, as `ReferenceFor` derives them.
fn described(mapper: &ResourceMapper, info: &CustomMetricInfo) -> Option<Described> {
    let gr = &info.group_resource;
    let (kind, version) = match mapper.by_resource(&gr.group, &gr.resource) {
        Some(m) => (m.kind.clone(), m.version.clone()),
        None if gr.group.is_empty() => (builtin_kind(&gr.resource)?.to_owned(), "v1".to_owned()),
        None => return None,
    };
    Some(Described {
        kind,
        api_version: format!("{}/{}", gr.group, version),
        group_resource: gr.to_string(),
    })
}

/// Kinds of the core resources `naming::normalize` knows without discovery.
fn builtin_kind(resource: &str) -> Option<&'static str> {
    Some(match resource {
        "namespaces" => "Namespace",
        "nodes" => "Node",
        "pods" => "Pod",
        "persistentvolumes" => "PersistentVolume",
        "persistentvolumeclaims" => "PersistentVolumeClaim",
        "services" => "Service",
        _ => return None,
    })
}

async fn custom_metrics(
    state: &ApiState,
    version: CustomVersion,
    segments: &[&str],
    params: &Params,
) -> Result<Response, Status> {
    let req: CustomRequest = custom::parse_path(segments)?;
    // Go's API server checks the fieldSelector before the provider sees the request.
    check_field_selector(params.field_selector.as_deref(), &req.name)?;
    let metric_selector = selector(params.metric_label_selector.as_deref())?;
    let mapper = state.mapper.current();
    let not_found = || Status::metric_not_found(&req.group_resource(), &req.metric);
    let info = CustomMetricInfo::normalized(
        &mapper,
        &req.group,
        &req.resource,
        req.namespaced(),
        &req.metric,
    )
    .ok_or_else(not_found)?;
    if state
        .registries
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .custom
        .lookup(&info)
        .is_none()
    {
        // Upstream names the resource as requested (`pod`, `deployments`) here.
        return Err(not_found());
    }
    let not_found = || Status::metric_not_found(&info.group_resource.to_string(), &req.metric);
    let described = described(&mapper, &info).ok_or_else(not_found)?;

    let name = req.name.clone();
    let names = if name == "*" {
        list_names(state, &mapper, &info, &req.namespace, params).await?
    } else {
        vec![name.clone()]
    };

    let query = {
        let r = state.registries.read().unwrap_or_else(|e| e.into_inner());
        r.custom
            .query_for(&info, Some(&req.namespace), &names, &metric_selector)
    };
    let query = match query {
        Ok(q) => q,
        Err(RegistryError::NotFound { .. } | RegistryError::NoNames(_)) => return Err(not_found()),
        Err(e) => {
            tracing::error!(metric = %info, error = %e, "unable to construct query");
            return Err(not_found());
        }
    };
    let samples = instant_vector(state, &query.query).await?;
    let timestamp = types::now_rfc3339();
    let items = if name == "*" {
        custom::list_items(
            &samples,
            &query.source.resource_label,
            &described,
            &req,
            &names,
            &metric_selector,
            &timestamp,
        )
    } else {
        custom::single_item(
            &samples,
            &query.source.resource_label,
            &described,
            &req,
            &name,
            &metric_selector,
            &timestamp,
        )?
    };
    Ok(json_response(
        StatusCode::OK,
        &MetricValueList::new(version, items),
    ))
}

/// Go's API server lets a named request carry a fieldSelector only if it selects exactly that
/// name (`metadata.name=<name>`); custom metrics paths always carry a name, `*` included.
fn check_field_selector(field_selector: Option<&str>, name: &str) -> Result<(), Status> {
    let Some(selector) = field_selector.filter(|s| !s.is_empty()) else {
        return Ok(());
    };
    let selected = selector.split(',').find_map(|term| {
        let (field, value) = term.split_once("==").or_else(|| {
            term.split_once('=')
                .filter(|(field, _)| !field.ends_with('!'))
        })?;
        (field.trim() == "metadata.name").then(|| value.trim())
    });
    if selected == Some(name) {
        Ok(())
    } else {
        Err(Status::bad_request(
            "fieldSelector metadata.name doesn't match requested name",
        ))
    }
}

/// Names of the objects a `*` request covers: from the object cache, or listed from the API
/// server (metadata only) when the cache cannot answer.
async fn list_names(
    state: &ApiState,
    mapper: &ResourceMapper,
    info: &CustomMetricInfo,
    namespace: &str,
    params: &Params,
) -> Result<Vec<String>, Status> {
    let gr = &info.group_resource;
    let Some(mapping) = mapper.by_resource(&gr.group, &gr.resource) else {
        tracing::error!(resource = %gr, "unable to list matching resource names: resource not known to discovery");
        return Err(Status::internal("unable to list matching resources"));
    };
    let ar = mapping.api_resource();
    let label_selector = params.label_selector.as_deref().filter(|s| !s.is_empty());
    let scope = info.namespaced.then_some(namespace);
    if let Some(names) = state.objects.names(&ar, scope, label_selector) {
        return Ok(names);
    }
    let api: Api<DynamicObject> = if info.namespaced {
        Api::namespaced_with(state.lister.clone(), namespace, &ar)
    } else {
        Api::all_with(state.lister.clone(), &ar)
    };
    let mut lp = ListParams::default();
    if let Some(sel) = label_selector {
        lp = lp.labels(sel);
    }
    match api.list_metadata(&lp).await {
        Ok(list) => Ok(list
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect()),
        // An unparsable labelSelector: the API server's parse error is the one upstream
        // answers with (it parses with the same code).
        Err(kube::Error::Api(status)) if status.code == 400 => {
            Err(Status::bad_request(status.message))
        }
        Err(e) => {
            tracing::error!(resource = %gr, error = %e, "unable to list matching resource names");
            Err(Status::internal("unable to list matching resources"))
        }
    }
}

async fn run_query(state: &ApiState, query: &str) -> Result<QueryResult, Status> {
    crate::query::run(&state.prometheus, query).await
}

async fn instant_vector(
    state: &ApiState,
    query: &str,
) -> Result<Vec<ferrocrane_core::prometheus::InstantSample>, Status> {
    match run_query(state, query).await? {
        QueryResult::Vector(v) => Ok(v),
        other => {
            tracing::error!(
                query,
                result_type = other.result_type(),
                "unexpected results from prometheus: expected vector"
            );
            Err(Status::internal("unable to fetch metrics"))
        }
    }
}

async fn external_metrics(
    state: &ApiState,
    segments: &[&str],
    params: &Params,
) -> Result<Response, Status> {
    let (namespace, metric) = external::parse_path(segments)?;
    let metric_selector = selector(params.label_selector.as_deref())?;
    let items = state
        .external
        .values(namespace, metric, &metric_selector)
        .await?;
    Ok(json_response(
        StatusCode::OK,
        &ExternalMetricValueList::new(items),
    ))
}

#[cfg(test)]
mod router_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_selector_must_name_the_requested_object() {
        assert!(check_field_selector(None, "web").is_ok());
        assert!(check_field_selector(Some(""), "*").is_ok());
        assert!(check_field_selector(Some("metadata.name=web"), "web").is_ok());
        assert!(check_field_selector(Some("a=b,metadata.name==web"), "web").is_ok());
        for (selector, name) in [
            ("metadata.name=web", "*"),
            ("metadata.name=db", "web"),
            ("metadata.name!=db", "web"),
            ("spec.nodeName=n1", "web"),
        ] {
            let e = check_field_selector(Some(selector), name).unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str()),
                (
                    400,
                    "fieldSelector metadata.name doesn't match requested name"
                ),
                "{selector} for {name}"
            );
        }
    }

    #[test]
    fn query_params_decode_like_go() {
        let p = parse_params(Some(
            "labelSelector=app%3Dweb%2Ctier+in+(a%2Cb)&metricLabelSelector=verb%3DGET&x=1",
        ));
        assert_eq!(p.label_selector.as_deref(), Some("app=web,tier in (a,b)"));
        assert_eq!(p.metric_label_selector.as_deref(), Some("verb=GET"));
        assert_eq!(p.field_selector, None);
        assert_eq!(parse_params(None), Params::default());
    }
}
