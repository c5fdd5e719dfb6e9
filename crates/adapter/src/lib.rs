//! metrics-adapter: a prometheus-adapter-compatible aggregated API server.
//!
//! It serves custom.metrics.k8s.io (v1beta1, v1beta2) and external.metrics.k8s.io (v1beta1)
//! from Prometheus, as prometheus-adapter v0.12 does, plus metrics.k8s.io (`kubectl top`) from
//! `resourceRules`; the config file format and flags are upstream's.

// Tests may cast freely; service code proves each narrowing (Cargo.toml [workspace.lints]).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

pub mod api;
pub mod auth;
pub mod check;
pub mod config;
pub mod loader;
pub mod naming;
pub mod object_selector;
pub mod objects;
pub mod options;
pub mod query;
pub mod registry;
pub mod relist;
pub mod resource_metrics;
pub mod served;
pub mod server;
pub mod status;

pub use options::Args;

/// Runs the binary: `check-config`, or the server until SIGTERM.
pub fn run(args: Args) -> anyhow::Result<()> {
    let runtime = ferrocrane_core::process::start(&args.log)?;
    runtime.block_on(async move {
        match args.command.clone() {
            Some(options::Command::CheckConfig(c)) => check::run(c).await,
            None => server::serve_adapter(args).await,
        }
    })
}
