//! craned: Crane's recommendation manager.
//!
//! The pure core lives in [`crd`] (the CustomResourceDefinitions), [`prediction`] (percentile
//! histogram), [`recommender`] (each recommender as a function of its inputs) and [`workload`]
//! (a workload's pods and requests); the edges in [`datasource`] (Prometheus history),
//! [`controller`] (one folder per controller, and what they share) and [`runtime`] (wiring),
//! configured by [`options`].

// Tests may cast freely; service code proves each narrowing (Cargo.toml [workspace.lints]).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

use clap::{Parser, Subcommand};

pub mod controller;
pub mod crd;
pub mod datasource;
pub mod metrics;
pub mod oom;
pub mod options;
pub mod prediction;
pub mod recommender;
pub mod report;
pub mod runtime;
pub mod workload;

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
    #[command(flatten)]
    pub manager: options::ManagerArgs,
    #[command(flatten)]
    pub log: ferrocrane_core::process::LogArgs,
}

/// One-shot commands; without one, craned runs as the manager.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print craned's CustomResourceDefinitions as YAML: Recommendation, RecommendationRule,
    /// EffectiveHorizontalPodAutoscaler, Substitute, TimeSeriesPrediction (what deploy/crds/
    /// holds).
    Crd,
    /// Print current vs recommended requests (and replicas) of the workloads running now,
    /// from Prometheus' usage history, without installing anything.
    Recommend(report::RecommendArgs),
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Some(Command::Crd) => {
            print!("{}", crd::all_crds_yaml()?);
            Ok(())
        }
        Some(Command::Recommend(a)) => {
            ferrocrane_core::process::start(&args.log)?.block_on(report::run(a))
        }
        None => {
            let settings = args.manager.resolve(&runtime::hostname())?;
            ferrocrane_core::process::start(&args.log)?.block_on(runtime::run(settings))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cranes_klog_flags_are_accepted_and_the_rest_refused() {
        // Crane's manifests pass `--v=2`.
        let a = Args::try_parse_from(["craned", "--v=2", "--logtostderr"]).unwrap();
        assert_eq!(a.log.klog_v.as_deref(), Some("2"));
        let e = Args::try_parse_from(["craned", "--vmodule=x=2"]).unwrap_err();
        assert!(e.to_string().contains("--vmodule"), "{e}");
    }
}
