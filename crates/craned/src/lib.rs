//! craned: Crane's recommendation manager.
//!
//! The controller lands with its own issue; today the binary only parses its flags.

use clap::Parser;

/// Flags keep Crane's names so users can swap the image and keep their manifests.
#[derive(Debug, Parser)]
#[command(
    name = "craned",
    version,
    about = "Crane-compatible recommendation manager"
)]
pub struct Args {
    /// Prometheus address.
    #[arg(long = "prometheus-address", default_value = "")]
    pub prometheus_address: String,
    /// The address the metric endpoint binds to.
    #[arg(long = "metrics-bind-address", default_value = ":8080")]
    pub metrics_bind_address: String,
    /// The address the probe endpoint binds to.
    #[arg(long = "health-probe-bind-address", default_value = ":8081")]
    pub health_probe_bind_address: String,
    #[command(flatten)]
    pub log: ferrocrane_core::server::LogArgs,
}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("craned is not implemented yet: only --help and --version work in this build")
}
