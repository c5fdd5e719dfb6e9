//! Crane's autoscaling API and what craned and metrics-adapter must compute alike from it.
//!
//! [`crd`] holds the `autoscaling.crane.io` (EHPA, Substitute) and `prediction.crane.io`
//! (TimeSeriesPrediction) types; [`cron`] evaluates an EHPA's cron windows (craned exports the
//! result as `crane_autoscaling_cron`, metrics-adapter serves it to the HPA). Pure: no I/O.

// Tests may cast freely; service code proves each narrowing (Cargo.toml [workspace.lints]).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

pub mod crd;
pub mod cron;
