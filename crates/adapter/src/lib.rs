//! metrics-adapter: a prometheus-adapter-compatible aggregated API server.
//!
//! The server lands with its own issue; today the binary only parses its flags.

use clap::Parser;

pub mod config;
pub mod naming;
pub mod registry;

/// Flags keep prometheus-adapter's names so users can swap the image and keep their manifests.
#[derive(Debug, Parser)]
#[command(
    name = "metrics-adapter",
    version,
    about = "prometheus-adapter-compatible aggregated API server"
)]
pub struct Args {
    /// URL used to connect to Prometheus.
    #[arg(long = "prometheus-url", default_value = "https://localhost")]
    pub prometheus_url: String,
    /// Configuration file containing details of how to transform between Prometheus metrics and custom metrics API resources.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// The port on which to serve HTTPS with authentication and authorization.
    #[arg(long = "secure-port", default_value_t = 443)]
    pub secure_port: u16,
    #[command(flatten)]
    pub log: ferrocrane_core::server::LogArgs,
}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!(
        "metrics-adapter is not implemented yet: only --help and --version work in this build"
    )
}
