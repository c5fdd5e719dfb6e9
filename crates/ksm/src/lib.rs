//! ksm: a kube-state-metrics-compatible exporter.
//!
//! The exporter itself lands with its own issue; today the binary only parses
//! its flags, so that `--help` and `--version` work and packaging can proceed.

pub use options::Args;

pub mod families;
pub mod filters;
pub mod options;
pub mod sharding;

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("ksm is not implemented yet: only --help and --version work in this build")
}
