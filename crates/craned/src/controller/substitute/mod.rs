//! The Substitute controller: a Substitute stands in for a workload so that an EHPA in
//! Preview can have its HPA compute replicas without scaling the workload. Every 15 s, as
//! Crane does, it copies the workload's pod selector into its status (the HPA reads the pods
//! through it) and records the replicas the HPA set (`status.replicas`: what the HPA would do).
//!
//! Deliberately unlike Crane, it leaves `spec.replicas` where the HPA put it: the HPA runs as
//! if it owned a copy of the workload. Crane resets it to the workload's replicas on every
//! pass, which the HPA reads as someone else scaling its target: its rate limits then hold the
//! preview below what it would do (Crane #319, #352).

mod reconcile;

pub use self::reconcile::{Context, Error, METRIC_LABELS, error_policy, reconcile, run};

/// The controller's name in `craned_reconcile_*{controller}`.
pub const NAME: &str = "substitute";
