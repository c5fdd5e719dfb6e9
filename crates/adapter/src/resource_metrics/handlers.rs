//! The thin I/O edge: take the pods or nodes from the listers, run the CPU and memory queries
//! against Prometheus, hand both to the pure assembly in `model`.

use std::collections::HashMap;
use std::time::SystemTime;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use ferrocrane_core::prometheus::QueryResult;
use http::HeaderMap;
use http::header::ACCEPT;
use serde::Deserialize;

use super::fields::FieldSelector;
use super::model::{
    AssembleContext, NodeMetrics, ObjectInfo, PodMetrics, QueryResults, index_samples, list,
    node_metrics_list, object_not_found, pod_metrics_list,
};
use super::table::{Table, TableRequest, nodes_table, pods_table, table_request};
use super::{ResourceMetricsState, Served};
use crate::naming::{GroupResource, ResourceQueries, ResourceQuery};
use crate::object_selector::label_selector;
use crate::status::Status;

/// The list options the metrics API honours.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListOptions {
    #[serde(default)]
    label_selector: String,
    #[serde(default)]
    field_selector: String,
    /// For Table answers: `None`, `Metadata` (the default) or `Object`.
    include_object: Option<String>,
}

/// Without resourceRules upstream does not serve the group at all: its paths get the 404 with
/// the index of everything else.
fn not_served() -> Response {
    crate::served::path_index_response(false)
}

/// The Table the client asks for, if it asks for one.
fn wants_table(headers: &HeaderMap, opts: &ListOptions) -> Option<TableRequest> {
    let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok());
    table_request(accept, opts.include_object.as_deref())
}

/// `items` as JSON, or as the Table `table` builds when the client asks for one.
fn answer<T: serde::Serialize>(
    headers: &HeaderMap,
    opts: &ListOptions,
    items: T,
    table: impl FnOnce(TableRequest, &T) -> Table,
) -> Response {
    match wants_table(headers, opts) {
        Some(request) => Json(table(request, &items)).into_response(),
        None => Json(items).into_response(),
    }
}

type Shared = State<Served>;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn context<'a>(queries: &'a ResourceQueries, now_ms: i64) -> AssembleContext<'a> {
    AssembleContext {
        cpu_container_label: queries.cpu.container_label(),
        memory_container_label: queries.memory.container_label(),
        window: queries.window,
        now_ms,
    }
}

/// Which objects a query is for.
#[derive(Clone, Copy)]
enum Target<'a> {
    Pods { namespace: &'a str },
    Nodes,
}

impl ResourceMetricsState {
    /// One of the two queries for `names`, indexed by the object label.
    async fn run_query(
        &self,
        query: &ResourceQuery,
        target: Target<'_>,
        names: &[String],
        at: SystemTime,
    ) -> Result<HashMap<String, Vec<ferrocrane_core::prometheus::InstantSample>>, String> {
        let mapper = self.mapper.current();
        let (promql, resource) = match target {
            Target::Pods { namespace } => (
                query.container_query_for(&mapper, namespace, names),
                GroupResource::core("pods"),
            ),
            Target::Nodes => (
                query.node_query_for(&mapper, names),
                GroupResource::core("nodes"),
            ),
        };
        let promql = promql.map_err(|e| format!("unable to construct query: {e}"))?;
        let label = query
            .label_for(&resource, &mapper)
            .map_err(|e| format!("unable to find label for resource {resource}: {e}"))?;
        match self.prometheus.query(&promql, Some(at)).await {
            Ok(QueryResult::Vector(samples)) => Ok(index_samples(samples, &label)),
            Ok(other) => Err(format!(
                "invalid or empty value of non-vector type ({}) returned",
                other.result_type()
            )),
            Err(e) => Err(format!("unable to execute query: {e}")),
        }
    }

    /// CPU and memory for `names`, concurrently; either failing fails both, as upstream.
    async fn query_both(
        &self,
        queries: &ResourceQueries,
        target: Target<'_>,
        names: &[String],
        at: SystemTime,
    ) -> Result<QueryResults, String> {
        let (cpu, memory) = tokio::join!(
            self.run_query(&queries.cpu, target, names, at),
            self.run_query(&queries.memory, target, names, at)
        );
        let what = match target {
            Target::Pods { .. } => "pod",
            Target::Nodes => "node",
        };
        Ok(QueryResults {
            cpu: cpu.map_err(|e| format!("unable to fetch {what} CPU metrics: {e}"))?,
            memory: memory.map_err(|e| format!("unable to fetch {what} memory metrics: {e}"))?,
        })
    }

    /// Pod metrics: one pair of queries per namespace, all namespaces concurrently; a failed
    /// namespace is logged and its pods left out.
    async fn pod_metrics(&self, queries: &ResourceQueries, pods: &[ObjectInfo]) -> Vec<PodMetrics> {
        if pods.is_empty() {
            return Vec::new();
        }
        let mut by_ns: HashMap<&str, Vec<String>> = HashMap::new();
        for p in pods {
            by_ns.entry(&p.namespace).or_default().push(p.name.clone());
        }
        let at = SystemTime::now();
        let results = futures::future::join_all(by_ns.iter().map(|(ns, names)| async move {
            let r = self
                .query_both(queries, Target::Pods { namespace: ns }, names, at)
                .await;
            (*ns, r)
        }))
        .await;
        let mut ok = HashMap::with_capacity(results.len());
        for (ns, r) in results {
            match r {
                Ok(r) => {
                    ok.insert(ns.to_owned(), r);
                }
                Err(e) => tracing::error!(
                    namespace = ns,
                    error = %e,
                    "unable to fetch metrics for pods in namespace, skipping"
                ),
            }
        }
        pod_metrics_list(pods, &ok, &context(queries, now_ms()))
    }

    async fn node_metrics(
        &self,
        queries: &ResourceQueries,
        nodes: &[ObjectInfo],
    ) -> Vec<NodeMetrics> {
        if nodes.is_empty() {
            return Vec::new();
        }
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        let results = match self
            .query_both(queries, Target::Nodes, &names, SystemTime::now())
            .await
        {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::error!(error = %e, "failed querying node metrics");
                None
            }
        };
        node_metrics_list(nodes, results.as_ref(), &context(queries, now_ms()))
    }
}

pub(super) async fn list_nodes(
    State(app): Shared,
    headers: HeaderMap,
    Query(opts): Query<ListOptions>,
) -> Result<Response, Status> {
    let Some(queries) = app.state.queries.get() else {
        return Ok(not_served());
    };
    let labels = label_selector(&opts.label_selector)?;
    let fields = FieldSelector::parse(&opts.field_selector)?;
    let nodes = app.listers().nodes(&labels, &fields).await?;
    let items = app.state.node_metrics(&queries, &nodes).await;
    let list = list("NodeMetricsList", app.api_version, items);
    Ok(answer(&headers, &opts, list, |t, l| {
        nodes_table(t, &l.items)
    }))
}

pub(super) async fn get_node(
    State(app): Shared,
    Path(name): Path<String>,
    headers: HeaderMap,
    Query(opts): Query<ListOptions>,
) -> Result<Response, Status> {
    let Some(queries) = app.state.queries.get() else {
        return Ok(not_served());
    };
    let node = app
        .listers()
        .node(&name)
        .await?
        // Upstream's typed node lister names the resource in the singular.
        .ok_or_else(|| object_not_found("", "node", &name))?;
    app.state
        .node_metrics(&queries, std::slice::from_ref(&node))
        .await
        .into_iter()
        .next()
        .map(|m| {
            let m = m.with_type_meta(app.api_version);
            answer(&headers, &opts, m, |t, m| {
                nodes_table(t, std::slice::from_ref(m))
            })
        })
        .ok_or_else(|| object_not_found("metrics.k8s.io", "nodemetrics", &name))
}

pub(super) async fn list_all_pods(
    state: Shared,
    headers: HeaderMap,
    opts: Query<ListOptions>,
) -> Result<Response, Status> {
    list_pods_in(state, None, headers, opts).await
}

pub(super) async fn list_pods(
    state: Shared,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    opts: Query<ListOptions>,
) -> Result<Response, Status> {
    list_pods_in(state, Some(namespace), headers, opts).await
}

async fn list_pods_in(
    State(app): Shared,
    namespace: Option<String>,
    headers: HeaderMap,
    Query(opts): Query<ListOptions>,
) -> Result<Response, Status> {
    let Some(queries) = app.state.queries.get() else {
        return Ok(not_served());
    };
    let labels = label_selector(&opts.label_selector)?;
    let fields = FieldSelector::parse(&opts.field_selector)?;
    let pods = app
        .listers()
        .pods(namespace.as_deref(), &labels, &fields)
        .await?;
    let items = app.state.pod_metrics(&queries, &pods).await;
    let list = list("PodMetricsList", app.api_version, items);
    Ok(answer(&headers, &opts, list, |t, l| {
        pods_table(t, &l.items)
    }))
}

pub(super) async fn get_pod(
    State(app): Shared,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
    Query(opts): Query<ListOptions>,
) -> Result<Response, Status> {
    let Some(queries) = app.state.queries.get() else {
        return Ok(not_served());
    };
    let pod = app
        .listers()
        .pod(&namespace, &name)
        .await?
        // Not Running counts as absent: upstream's informer only holds Running pods.
        .ok_or_else(|| object_not_found("", "pods", &name))?;
    app.state
        .pod_metrics(&queries, std::slice::from_ref(&pod))
        .await
        .into_iter()
        .next()
        .map(|m| {
            let m = m.with_type_meta(app.api_version);
            answer(&headers, &opts, m, |t, m| {
                pods_table(t, std::slice::from_ref(m))
            })
        })
        .ok_or_else(|| {
            object_not_found(
                "metrics.k8s.io",
                "podmetrics",
                &format!("{namespace}/{name}"),
            )
        })
}
