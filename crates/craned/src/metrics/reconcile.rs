//! craned's own telemetry of its controllers, next to the `crane_*` series on `/metrics` and
//! named like craned's other self-metrics (`craned_prometheus_*`, `craned_config_*`). Each
//! series carries the `controller` it is about (`recommendationrule`...):
//!
//! * `craned_reconcile_total{controller}`: reconciles started.
//! * `craned_reconcile_duration_seconds{controller}`: how long each took, failed ones included.
//! * `craned_reconcile_errors_total{controller,reason}`: failures by a short stable reason,
//!   counting both the errors that fail a reconcile and those a reconcile logs and goes on
//!   past (a Recommendation's status that could not be written).
//! * `craned_recommendations_unchanged_total`: Recommendations a round computed and left
//!   unwritten because nothing in them changed (`--skip-unchanged-writes`).

use prometheus::{
    Histogram, HistogramOpts, HistogramTimer, HistogramVec, IntCounter, IntCounterVec, Opts,
    Registry,
};

const NAMESPACE: &str = "craned";

/// The reconcile families, registered once; each controller counts through its own
/// [`ReconcileMetrics`].
pub struct ReconcileFamilies {
    total: IntCounterVec,
    duration: HistogramVec,
    errors: IntCounterVec,
    unchanged: IntCounter,
}

/// One controller's reconcile count, duration and errors by reason.
#[derive(Clone)]
pub struct ReconcileMetrics {
    controller: &'static str,
    total: IntCounter,
    duration: Histogram,
    errors: IntCounterVec,
    unchanged: IntCounter,
}

impl std::fmt::Debug for ReconcileMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReconcileMetrics")
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

/// From 10 ms (a rule with nothing due) to ~40 min (a round over thousands of workloads,
/// bounded by the Prometheus queries).
fn buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.01, 2.0, 18).unwrap_or_else(|_| vec![0.1, 1.0, 10.0, 100.0])
}

impl ReconcileFamilies {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let total = IntCounterVec::new(
            Opts::new("reconcile_total", "Reconciles started, by controller.").namespace(NAMESPACE),
            &["controller"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "reconcile_duration_seconds",
                "Duration of reconciles by controller, failed ones included.",
            )
            .namespace(NAMESPACE)
            .buckets(buckets()),
            &["controller"],
        )?;
        let errors = IntCounterVec::new(
            Opts::new(
                "reconcile_errors_total",
                "Errors of reconciles by controller and reason, including the ones a \
                 reconcile logs and continues past.",
            )
            .namespace(NAMESPACE),
            &["controller", "reason"],
        )?;
        let unchanged = IntCounter::with_opts(
            Opts::new(
                "recommendations_unchanged_total",
                "Recommendations a round computed and did not write because nothing in them \
                 changed but the run-number and timestamps.",
            )
            .namespace(NAMESPACE),
        )?;
        registry.register(Box::new(total.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(unchanged.clone()))?;
        Ok(ReconcileFamilies {
            total,
            duration,
            errors,
            unchanged,
        })
    }

    /// The series of `controller`; every reason in `reasons` is shown at 0 from the start, so
    /// `rate()` and alerts work before the first failure.
    pub fn controller(&self, controller: &'static str, reasons: &[&str]) -> ReconcileMetrics {
        for reason in reasons {
            self.errors.with_label_values(&[controller, reason]);
        }
        ReconcileMetrics {
            controller,
            total: self.total.with_label_values(&[controller]),
            duration: self.duration.with_label_values(&[controller]),
            errors: self.errors.clone(),
            unchanged: self.unchanged.clone(),
        }
    }
}

impl ReconcileMetrics {
    /// One controller's series in a registry of their own (tests).
    pub fn standalone(
        controller: &'static str,
        reasons: &[&str],
    ) -> Result<Self, prometheus::Error> {
        Ok(ReconcileFamilies::new(&Registry::new())?.controller(controller, reasons))
    }

    /// Counts a reconcile; its duration is observed when the returned timer drops.
    pub fn start(&self) -> HistogramTimer {
        self.total.inc();
        self.duration.start_timer()
    }

    /// Counts an error under its reason.
    pub fn error(&self, reason: &str) {
        self.errors
            .with_label_values(&[self.controller, reason])
            .inc();
    }

    /// Counts a Recommendation left as it was.
    pub fn unchanged(&self) {
        self.unchanged.inc();
    }

    /// Errors counted under `reason` so far.
    pub fn errors(&self, reason: &str) -> u64 {
        self.errors
            .with_label_values(&[self.controller, reason])
            .get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::text;

    #[test]
    fn counts_times_and_sorts_errors_by_controller_and_reason() {
        let registry = Registry::new();
        let families = ReconcileFamilies::new(&registry).unwrap();
        let rules = families.controller("recommendationrule", &["discovery", "not_leader"]);
        let other = families.controller("timeseriesprediction", &["not_leader"]);
        drop(rules.start());
        drop(rules.start());
        drop(other.start());
        rules.error("not_leader");
        rules.unchanged();
        let out = text(&registry);
        for line in [
            "craned_reconcile_total{controller=\"recommendationrule\"} 2\n",
            "craned_reconcile_total{controller=\"timeseriesprediction\"} 1\n",
            "craned_reconcile_duration_seconds_count{controller=\"recommendationrule\"} 2\n",
            "craned_reconcile_errors_total{controller=\"recommendationrule\",reason=\"discovery\"} 0\n",
            "craned_reconcile_errors_total{controller=\"recommendationrule\",reason=\"not_leader\"} 1\n",
            "craned_reconcile_errors_total{controller=\"timeseriesprediction\",reason=\"not_leader\"} 0\n",
            "craned_recommendations_unchanged_total 1\n",
        ] {
            assert!(out.contains(line), "{line} not in {out}");
        }
        assert_eq!(rules.errors("not_leader"), 1);
        assert_eq!(other.errors("not_leader"), 0);
    }
}
