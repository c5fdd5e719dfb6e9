//! The TimeSeriesPrediction controller: for each metric of a TSP, a model fitted on its
//! query's history (DSP or percentile, as the TSP asks), and the predicted series over the
//! next two windows in the TSP's status, in Crane's format, refreshed when they no longer
//! reach the next window.
//!
//! `query.rs` turns a metric into PromQL, `algorithm.rs` its algorithm into a predictor
//! configuration, `model.rs` fits and extends a model, `models.rs` keeps them and fits in the
//! background (a slow model never holds up another TSP), `status.rs` writes the status,
//! `reconcile.rs` decides when, `run.rs` wires the watches.

mod algorithm;
mod error;
mod model;
mod models;
mod reconcile;
mod run;
mod status;

pub mod query;

pub use self::error::{Error, METRIC_LABELS};
pub use self::models::Fitting;
pub use self::run::{Wiring, error_policy, run};

/// The controller's name in `craned_reconcile_*{controller}`.
pub const NAME: &str = "timeseriesprediction";
