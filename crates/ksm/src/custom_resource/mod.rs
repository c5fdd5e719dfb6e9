//! kube-state-metrics' Custom Resource State metrics (`--custom-resource-state-config`).
//!
//! * [`config`]: the `CustomResourceStateMetrics` file (strict YAML, validated).
//! * [`path`] and [`value`]: upstream's path language over a JSON object and its
//!   conversions of field values to sample values and label values.
//! * [`metrics`]: a resource configuration compiled for one concrete GVK, rendering an
//!   object into per-family sample bytes for a [`MetricsStore`](crate::store::MetricsStore).
//! * [`watch`]: the runtime — resolve each configured GVK through discovery, wait for
//!   CRDs that do not exist yet, and keep one store per resolved GVK up to date.

pub mod config;
pub mod metrics;
pub mod path;
pub mod value;
pub mod watch;

#[cfg(test)]
pub(crate) mod testdata;

pub use crate::store::CustomResourceStores;
pub use config::CustomResourceStateConfig;
pub use metrics::CompiledResource;
pub use watch::{CustomResourceOptions, CustomResourceRuntime, run_custom_resources};
