//! ksm: a kube-state-metrics-compatible exporter.
//!
//! Flags and metric output follow kube-state-metrics v2.20; what differs is how it is
//! built: families are pure functions of an object (`families`), rendered once per change
//! into a byte store (`store`) that scrapes copy (`http`).

// Tests may cast freely; service code proves each narrowing (Cargo.toml [workspace.lints]).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

pub use options::Args;

pub mod auth_filter;
pub mod basic_auth;
pub mod calendar;
pub mod custom_resource;
pub mod families;
pub mod field_selector;
pub mod filters;
pub mod http;
pub mod options;
pub mod pieces;
pub mod registry;
pub mod runtime;
pub mod server_sharding;
pub mod sharding;
pub mod sources;
pub mod store;
pub mod telemetry;
pub mod watch;
pub mod web_config;

use anyhow::{Context, Result};
use ferrocrane_core::kube::{ClientArgs, build_client};

use crate::options::Options;
use crate::sharding::Sharding;
use crate::telemetry::Telemetry;
use crate::watch::ObjectOwnership;

impl ObjectOwnership for Sharding {
    fn owns(&self, uid: &str) -> bool {
        Sharding::owns(self, uid)
    }
}

pub fn run(args: Args) -> Result<()> {
    let options = options::load(&args)?;
    ferrocrane_core::process::start(&options.log)?.block_on(run_async(args, options))
}

async fn run_async(args: Args, options: Options) -> Result<()> {
    let (tls, basic_auth) = match &options.tls_config {
        Some(path) => {
            let web = web_config::load_web_config(path)?;
            let tls = web
                .tls
                .map(|c| c.load())
                .transpose()
                .with_context(|| format!("--tls-config={}", path.display()))?;
            (tls, web.basic_auth.map(std::sync::Arc::new))
        }
        None => (None, None),
    };
    if options.auth_filter && basic_auth.is_some() {
        // Both read the one Authorization header (a bearer token, a user and password): no
        // request could pass both.
        anyhow::bail!(
            "--auth-filter=true and basic_auth_users in --tls-config cannot be combined: both \
             authenticate with the Authorization header; keep one"
        );
    }
    let client = build_client(&ClientArgs {
        kubeconfig: options.kubeconfig.clone(),
        apiserver: options.apiserver.clone(),
        ..ClientArgs::default()
    })
    .await?;
    let telemetry = Telemetry::new().context("registering self-metrics")?;
    let server = runtime::ServerSettings {
        metrics_addr: resolve_addr(&options.metrics_address())?,
        telemetry_addr: resolve_addr(&options.telemetry_address())?,
        tls,
        basic_auth,
        auth_filter: options
            .auth_filter
            .then(|| std::sync::Arc::new(auth_filter::AuthFilter::new(client.clone()))),
        serve: options.timeouts.serve_options(),
    };
    let (specs, _sources) = sources::start_sources(&args, options, &client, &telemetry).await?;
    runtime::run(server, client, telemetry, specs).await
}

fn resolve_addr(addr: &str) -> Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()
        .with_context(|| format!("resolving listen address {addr}"))?
        .next()
        .with_context(|| format!("listen address {addr} resolves to nothing"))
}
