//! Crane's autoscaling API and what craned and metrics-adapter must compute alike from it.
//!
//! [`crd`] holds the `autoscaling.crane.io` (EHPA, Substitute) and `prediction.crane.io`
//! (TimeSeriesPrediction) types; [`cron`] evaluates an EHPA's cron windows and [`external`]
//! holds the metrics an EHPA's HPA reads (`crane_autoscaling_cron`,
//! `crane_autoscaling_prediction`): their selector labels and values. craned exports them,
//! metrics-adapter serves them. Pure: no I/O.

// Tests may cast freely; service code proves each narrowing (Cargo.toml [workspace.lints]).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

pub mod crd;
pub mod cron;
pub mod external;
