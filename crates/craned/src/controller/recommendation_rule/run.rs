//! The controller's loop: which changes start a reconcile, and when a failed one is retried.

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::controller::{Action, Config, Controller};

use super::context::Context;
use super::error::Error;
use super::reconcile::reconcile;
use super::wiring::{self, Wiring};
use crate::crd::RecommendationRule;
use crate::metrics::reconcile::ReconcileMetrics;

/// How long a failed reconcile waits before it is retried: transient API or Prometheus
/// trouble clears by itself.
const ERROR_RETRY: Duration = Duration::from_secs(30);

/// Logs and counts a failed reconcile, and schedules its retry.
pub fn error_policy(rule: Arc<RecommendationRule>, error: &Error, ctx: Arc<Context>) -> Action {
    retry_after(&rule.name_any(), error, &ctx.reconcile_metrics)
}

fn retry_after(rule: &str, error: &Error, metrics: &ReconcileMetrics) -> Action {
    crate::controller::retry_failed(rule, error, metrics, ERROR_RETRY)
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    w: Wiring,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let recommendations = wiring::recommendation_store(&w.client, w.metrics.clone());
    let deleted = wiring::workload_deletions(&w.client);
    let (rules, rule_changes) = wiring::rule_changes(&w.client);
    let config_changes = wiring::config_changes(w.config.clone());
    // Becoming leader: every rule is picked up at once.
    let leadership_changes = w.leader.clone().changes();
    let ctx = Arc::new(w.into_context(recommendations.clone()));
    // Reconciles compare with the Recommendations that exist; before the store has listed
    // them, every identity would look new.
    let _ = recommendations.wait_until_ready().await;
    crate::controller::drain(
        Controller::for_stream(rule_changes, rules)
            // A burst of deletions (a namespace going away) becomes one reconcile per rule.
            .with_config(Config::default().debounce(Duration::from_secs(1)))
            .reconcile_all_on(deleted)
            .reconcile_all_on(config_changes)
            .reconcile_all_on(leadership_changes)
            .graceful_shutdown_on(shutdown)
            .run(reconcile, error_policy, ctx),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::FOLLOWER_RECHECK;
    use crate::controller::recommendation_rule::error::tests::conflict;

    #[test]
    fn a_failed_rule_status_write_is_counted_and_retried() {
        let m = ReconcileMetrics::standalone(crate::controller::recommendation_rule::NAME, &[])
            .unwrap();
        let action = retry_after("r", &Error::WriteRuleStatus(conflict()), &m);
        assert_eq!(action, Action::requeue(ERROR_RETRY));
        assert_eq!(m.errors("write_rule_status"), 1);
        assert_eq!(
            retry_after("r", &Error::NotLeader, &m),
            Action::requeue(FOLLOWER_RECHECK)
        );
        assert_eq!(m.errors("not_leader"), 1);
    }
}
