//! The RecommendationRule controller (kube-runtime).
//!
//! Each reconcile of a rule:
//! 1. lists its targets (selectors × namespaces, through discovery) and the recommenders the
//!    configuration file lists for their kinds: one identity per (target, recommender);
//! 2. deletes Recommendations whose identity is gone (target deleted, selector or recommender
//!    changed) — every reconcile, so a deleted Deployment loses its Recommendation at once
//!    (deletions of Deployments, StatefulSets and DaemonSets trigger a reconcile of every rule);
//! 3. runs a round when one is due (`runInterval` elapsed since `status.lastUpdateTime`; never
//!    run; or triggered with the [`RUN_ONCE_ANNOTATION`]), otherwise only computes identities
//!    that have no Recommendation yet (a new Deployment does not wait for the next round);
//! 4. writes each Recommendation with server-side apply (metadata + spec), then its status on
//!    `/status` — unless nothing but its run-number and timestamps would change
//!    (`unchanged.rs`) —, adopts it per `adoptionType`, updates the `crane_*` series, and
//!    finally the rule's status (runNumber, lastUpdateTime, the list of Recommendations).
//!
//! Failures are explained in the Recommendation's Ready condition, its
//! `analysis.crane.io/message` annotation and Events; a failing target never stops the others.
//! Nothing is written unless this replica leads ([`crate::controller::leader`]). Reconciles are
//! counted and timed, and their errors counted by [`Error::metric_label`], in
//! `craned_reconcile_*{controller="recommendationrule"}` ([`crate::metrics::reconcile`]).
//!
//! Steps 1–3 and the rule's status are in `reconcile.rs`, step 4 in `round.rs`; `wiring.rs`
//! sets up what is watched, `run.rs` the loop and its retries.

mod context;
mod error;
mod reconcile;
mod round;
mod run;
mod unchanged;
mod wiring;

pub mod adoption;
pub mod execute;
pub mod naming;
pub mod status;
pub mod targets;

pub use self::context::Context;
pub use self::error::{Error, METRIC_LABELS};
pub use self::reconcile::{parse_run_interval, reconcile};
pub use self::run::{error_policy, run};
pub use self::wiring::Wiring;

/// The controller's name in `craned_reconcile_*{controller}`.
pub const NAME: &str = "recommendationrule";

/// Put on a rule (any value) to run a round now; craned removes it when the round is done.
/// Crane has no such annotation (its only trigger is lowering a Recommendation's
/// `analysis.crane.io/run-number`, which also re-runs here at the next reconcile).
pub const RUN_ONCE_ANNOTATION: &str = "analysis.crane.io/run-once";

/// At most this many entries in a rule's `status.recommendations` (list the Recommendations by
/// the `analysis.crane.io/recommendation-rule-name` label for all of them).
pub const MAX_MISSIONS: usize = 1000;
