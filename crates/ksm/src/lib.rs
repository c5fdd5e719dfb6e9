//! ksm: a kube-state-metrics-compatible exporter.
//!
//! Flags and metric output follow kube-state-metrics v2.20; what differs is how it is
//! built: families are pure functions of an object (`families`), rendered once per change
//! into a byte store (`store`) that scrapes copy (`http`).

pub use options::Args;

pub mod custom_resource;
pub mod families;
pub mod filters;
pub mod http;
pub mod options;
pub mod registry;
pub mod runtime;
pub mod sharding;
pub mod store;
pub mod telemetry;
pub mod watch;

use std::sync::Arc;

use anyhow::{Context, Result};
use ferrocrane_core::kube::{ClientArgs, build_client};

use crate::options::{
    Options, ShardingMode, namespace_denylist_field_selector, node_field_selector,
};
use crate::sharding::Sharding;
use crate::watch::ObjectOwnership;

impl ObjectOwnership for Sharding {
    fn owns(&self, uid: &str) -> bool {
        Sharding::owns(self, uid)
    }
}

pub fn run(args: Args) -> Result<()> {
    let options = options::load(&args)?;
    let _ = ferrocrane_core::server::init_tracing(&options.log)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run_async(options))
}

async fn run_async(options: Options) -> Result<()> {
    let client = build_client(&ClientArgs {
        kubeconfig: options.kubeconfig.clone(),
        apiserver: options.apiserver.clone(),
        ..ClientArgs::default()
    })
    .await?;
    let sharding = match &options.sharding {
        ShardingMode::Static(s) => *s,
        ShardingMode::Auto { pod, namespace } => auto_sharding(&client, pod, namespace).await?,
    };
    let filter = options.family_filter.clone();
    let contexts = Arc::new(options.clone());
    let settings = runtime::Settings {
        resources: options.resources.clone(),
        namespaces: options.namespaces.clone(),
        namespace_field_selector: (!options.namespaces_denylist.is_empty())
            .then(|| namespace_denylist_field_selector(&options.namespaces_denylist)),
        pod_field_selector: options.node.as_deref().map(node_field_selector),
        family_enabled: Arc::new(move |name, opt_in| filter.is_included(name, opt_in)),
        context_for: Arc::new(move |resource| contexts.family_context(resource)),
        ownership: Arc::new(sharding),
        shard: (sharding.shard, sharding.total),
        metrics_addr: resolve_addr(&options.metrics_address())?,
        telemetry_addr: resolve_addr(&options.telemetry_address())?,
        gzip: options.enable_gzip_encoding,
    };
    runtime::run(settings, client).await
}

/// `--pod`/`--pod-namespace`: this instance's shard is its StatefulSet ordinal.
async fn auto_sharding(client: &kube::Client, pod: &str, namespace: &str) -> Result<Sharding> {
    use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Pod};
    let pod_obj = kube::Api::<Pod>::namespaced(client.clone(), namespace)
        .get(pod)
        .await
        .with_context(|| format!("--pod={pod}: reading the pod for auto-sharding"))?;
    let owner = pod_obj
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "StatefulSet")
        .with_context(|| format!("--pod={pod}: not owned by a StatefulSet, cannot auto-shard"))?;
    let sts = kube::Api::<StatefulSet>::namespaced(client.clone(), namespace)
        .get(&owner.name)
        .await?;
    Ok(sharding::sharding_from_statefulset(
        &owner.name,
        sts.spec.replicas,
        pod,
    )?)
}

fn resolve_addr(addr: &str) -> Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()
        .with_context(|| format!("resolving listen address {addr}"))?
        .next()
        .with_context(|| format!("listen address {addr} resolves to nothing"))
}
