//! The EffectiveHorizontalPodAutoscaler controller: for each EHPA an HPA `ehpa-<name>`
//! (autoscaling/v2) with the user's metrics, the predictions of the ones the EHPA predicts
//! (`crane_autoscaling_prediction`) and its crons (`crane_autoscaling_cron`), served by
//! metrics-adapter; a TimeSeriesPrediction for the predicted metrics; in Preview a Substitute
//! the HPA scales instead of the workload. Its status is the HPA's.
//!
//! `objects.rs` builds what the EHPA owns, `status.rs` its status, `source.rs` names what sets
//! its replicas, `reconcile.rs` runs the
//! steps, `run.rs` wires the watches.

mod error;
mod objects;
mod reconcile;
mod run;
mod source;
mod status;

pub use self::error::{Error, METRIC_LABELS};
pub use self::run::{Wiring, error_policy, run};

/// The controller's name in `craned_reconcile_*{controller}`.
pub const NAME: &str = "effectivehorizontalpodautoscaler";
