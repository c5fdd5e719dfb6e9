//! `metrics.k8s.io/v1` and `v1beta1`, the API `kubectl top` and the HPA's Resource metrics read, served
//! from Prometheus through the config's `resourceRules` with prometheus-adapter v0.12's semantics
//! (its `resourceprovider` behind metrics-server's API storage).
//!
//! # Interface for the server
//!
//! ```text
//! let state = Arc::new(ResourceMetricsState {
//!     prometheus,                       // ferrocrane_core::prometheus::PrometheusClient
//!     client,                           // kube::Client (the lister's credentials)
//!     mapper,                           // ferrocrane_core::kube::SharedMapper
//!     queries: SharedQueries::new(compiled.resource_rules.clone()),
//! });
//! let app = Router::new().merge(resource_metrics::router(state.clone()));
//! // on a config reload:
//! state.queries.set(new_compiled.resource_rules.clone());
//! ```
//!
//! [`router`] serves only the data paths, GET, no authentication or authorization of its own
//! (the server wraps it):
//!
//! | path under `/apis/metrics.k8s.io/{v1,v1beta1}` | answer |
//! |---|---|
//! | `/nodes` | `NodeMetricsList` |
//! | `/nodes/{name}` | `NodeMetrics` |
//! | `/pods` | `PodMetricsList` of all namespaces |
//! | `/namespaces/{ns}/pods` | `PodMetricsList` |
//! | `/namespaces/{ns}/pods/{name}` | `PodMetrics` |
//!
//! Lists take `labelSelector` and `fieldSelector`
//! (`metadata.name`, `metadata.namespace`, as upstream). The group and version discovery
//! documents are the server's. With no `resourceRules` ([`SharedQueries`] empty) every path
//! answers 404, as upstream does not install the group then.
//!
//! # Semantics (upstream's)
//!
//! - Pods: only Running pods are considered (upstream lists pods with
//!   `status.phase=Running`); one CPU and one memory query per namespace, grouped by the pod
//!   label and `containerLabel`; a namespace whose queries fail is logged and left out.
//! - A pod with no CPU sample or no memory sample is left out; a container with only one of
//!   them reports 0 for the other. Nodes need both.
//! - NaN and negative samples count as 0. Values are `int64(v*1000)` milli-quantities: CPU in
//!   DecimalSI (`250m`), memory in BinarySI (`64Mi`).
//! - `timestamp` is the earliest sample time, `window` the configured window (`5m0s`),
//!   `creationTimestamp` the time of the answer. Items are sorted by namespace and name,
//!   containers by name (upstream: Go map order).
//! - A failed node query gives an empty list (upstream logs and answers nothing).
//! - NotFound: `node "x" not found` / `pods "x" not found` when the object does not exist (or
//!   the pod is not Running), `nodemetrics.metrics.k8s.io "x" not found` /
//!   `podmetrics.metrics.k8s.io "ns/x" not found` when it has no metrics.
//!
//! Pods and nodes come from watches (metadata only) kept by the router, as upstream's informers:
//! a request lists nothing from the API server. The client needs list/watch on pods and nodes.

mod fields;
mod handlers;
mod listers;
mod model;
mod quantity;
mod table;
#[cfg(test)]
mod tests;

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use axum::Router;
use axum::routing::get;
use ferrocrane_core::kube::SharedMapper;
use ferrocrane_core::prometheus::PrometheusClient;

use crate::naming::ResourceQueries;

pub use ferrocrane_core::quantity::{QuantityFormat, format_milli};
pub use fields::FieldSelector;
pub use model::object_not_found;
pub use model::{
    API_VERSIONS, AssembleContext, ContainerMetrics, ItemMeta, MetricsList, NodeMetrics,
    ObjectInfo, PodMetrics, QueryResults, SamplesByObject, Usage, index_samples, node_metrics,
    node_metrics_list, pod_metrics, pod_metrics_list,
};
pub use quantity::milli_of;

/// The compiled `resourceRules`, swapped on config reload; `None` when the config has none.
#[derive(Debug, Clone, Default)]
pub struct SharedQueries(Arc<RwLock<Option<Arc<ResourceQueries>>>>);

impl SharedQueries {
    /// Starts with `queries`.
    pub fn new(queries: Option<ResourceQueries>) -> Self {
        SharedQueries(Arc::new(RwLock::new(queries.map(Arc::new))))
    }

    /// Replaces the queries; requests already running keep the ones they started with.
    pub fn set(&self, queries: Option<ResourceQueries>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = queries.map(Arc::new);
    }

    /// The current queries.
    pub fn get(&self) -> Option<Arc<ResourceQueries>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What the handlers need.
#[derive(Clone)]
pub struct ResourceMetricsState {
    /// Where the CPU and memory queries run (instant queries at request time).
    pub prometheus: PrometheusClient,
    /// Lists pods and nodes.
    pub client: kube::Client,
    /// Resource names for the label templates of `resources:`.
    pub mapper: SharedMapper,
    /// `resourceRules`, hot-swappable.
    pub queries: SharedQueries,
}

/// The state plus the pod and node stores, started once per router.
struct App {
    state: Arc<ResourceMetricsState>,
    listers: OnceLock<listers::Listers>,
}

impl App {
    /// The stores; started on first use when the router was built outside a runtime (they
    /// spawn their watch tasks).
    fn listers(&self) -> &listers::Listers {
        self.listers
            .get_or_init(|| listers::Listers::start(&self.state.client))
    }
}

/// One served version's view of the app: handlers write this `apiVersion`.
#[derive(Clone)]
struct Served {
    app: Arc<App>,
    api_version: &'static str,
}

impl std::ops::Deref for Served {
    type Target = App;
    fn deref(&self) -> &App {
        &self.app
    }
}

/// The `metrics.k8s.io` data paths of every served version (see the module docs), over one
/// pair of pod and node stores. Built inside a tokio runtime it starts watching pods and nodes
/// at once, so the first request finds them listed.
pub fn router(state: Arc<ResourceMetricsState>) -> Router {
    let app = Arc::new(App {
        state,
        listers: OnceLock::new(),
    });
    if tokio::runtime::Handle::try_current().is_ok() {
        app.listers();
    }
    model::API_VERSIONS
        .iter()
        .fold(Router::new(), |router, api_version| {
            router.merge(version_router(Served {
                app: app.clone(),
                api_version,
            }))
        })
}

fn version_router(served: Served) -> Router {
    let base = format!("/apis/{}", served.api_version);
    Router::new()
        .route(&format!("{base}/nodes"), get(handlers::list_nodes))
        .route(&format!("{base}/nodes/{{name}}"), get(handlers::get_node))
        .route(&format!("{base}/pods"), get(handlers::list_all_pods))
        .route(
            &format!("{base}/namespaces/{{namespace}}/pods"),
            get(handlers::list_pods),
        )
        .route(
            &format!("{base}/namespaces/{{namespace}}/pods/{{name}}"),
            get(handlers::get_pod),
        )
        .with_state(served)
}
