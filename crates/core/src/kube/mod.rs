//! Kubernetes client plumbing shared by the services: building a rate-limited client from
//! flags, a discovery-backed resource mapper that follows CRDs created after start, and
//! watched in-memory stores of a kind.

mod client;
mod mapper;
mod rate_limit;
mod reflected;

use std::path::PathBuf;

pub use client::{ClientArgs, build_client, client_from_config, load_config};
pub use mapper::{
    DiscoveredGroup, ResourceMapper, ResourceMapping, SharedMapper, spawn_refresh,
    spawn_refresh_with,
};
pub use rate_limit::{RateLimit, RateLimitLayer, TokenBucket};
pub use reflected::{reflected, served};

/// Errors of this module. Client-library errors are carried as text: callers only report them,
/// and it keeps kube's error types out of our public API.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: PathBuf, message: String },
    #[error("no usable Kubernetes configuration (kubeconfig or in-cluster): {0}")]
    Config(String),
    #[error("--apiserver {url:?}: {message}")]
    ApiserverUrl { url: String, message: String },
    #[error("building Kubernetes client: {0}")]
    Client(String),
    #[error("API discovery: {0}")]
    Discovery(String),
}
