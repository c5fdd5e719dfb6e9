//! ksm: a kube-state-metrics-compatible exporter.
//!
//! The exporter itself lands with its own issue; today the binary only parses
//! its flags, so that `--help` and `--version` work and packaging can proceed.

use clap::Parser;

/// Flags keep kube-state-metrics' names so users can swap the image and keep their manifests.
#[derive(Debug, Parser)]
#[command(
    name = "ksm",
    version,
    about = "kube-state-metrics-compatible exporter"
)]
pub struct Args {
    /// Host to expose metrics on.
    #[arg(long, default_value = "::")]
    pub host: String,
    /// Port to expose metrics on.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Host to expose kube-state-metrics self metrics on.
    #[arg(long = "telemetry-host", default_value = "::")]
    pub telemetry_host: String,
    /// Port to expose kube-state-metrics self metrics on.
    #[arg(long = "telemetry-port", default_value_t = 8081)]
    pub telemetry_port: u16,
    /// Absolute path to the kubeconfig file.
    #[arg(long)]
    pub kubeconfig: Option<std::path::PathBuf>,
}

pub mod custom_resource;
pub mod families;
pub mod http;
pub mod registry;
pub mod runtime;
pub mod store;
pub mod telemetry;
pub mod watch;

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("ksm is not implemented yet: only --help and --version work in this build")
}
