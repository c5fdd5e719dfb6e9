//! craned: Crane's recommendation manager.
//!
//! The pure core lives in [`crd`] (the CustomResourceDefinitions), [`prediction`] (percentile
//! histogram) and [`recommender`] (each recommender as a function of its inputs). The controller
//! lands with its own issue.

use clap::{Parser, Subcommand};

pub mod crd;
pub mod prediction;
pub mod recommender;

/// Flags keep Crane's names so users can swap the image and keep their manifests.
#[derive(Debug, Parser)]
#[command(
    name = "craned",
    version,
    about = "Crane-compatible recommendation manager"
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
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

/// One-shot commands; without one, craned runs as the manager.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the Recommendation and RecommendationRule CustomResourceDefinitions as YAML
    /// (what deploy/crds/ holds).
    Crd,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Some(Command::Crd) => {
            print!("{}", crd::all_crds_yaml()?);
            Ok(())
        }
        None => anyhow::bail!(
            "craned is not implemented yet: only `craned crd`, --help and --version work in this build"
        ),
    }
}
