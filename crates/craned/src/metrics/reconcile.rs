//! craned's own telemetry of the RecommendationRule controller, next to the `crane_*` series
//! on `/metrics` and named like craned's other self-metrics (`craned_prometheus_*`,
//! `craned_config_*`):
//!
//! * `craned_reconcile_total`: reconciles started.
//! * `craned_reconcile_duration_seconds`: how long each took, failed ones included.
//! * `craned_reconcile_errors_total{reason}`: failures by a short stable reason, counting both
//!   the errors that fail a reconcile and those a reconcile logs and goes on past (a
//!   Recommendation's status that could not be written).
//! * `craned_recommendations_unchanged_total`: Recommendations a round computed and left
//!   unwritten because nothing in them changed (`--skip-unchanged-writes`).

use prometheus::{
    Histogram, HistogramOpts, HistogramTimer, IntCounter, IntCounterVec, Opts, Registry,
};

const NAMESPACE: &str = "craned";

/// Reconcile count, duration and errors by reason.
#[derive(Clone)]
pub struct ReconcileMetrics {
    total: IntCounter,
    duration: Histogram,
    errors: IntCounterVec,
    unchanged: IntCounter,
}

impl std::fmt::Debug for ReconcileMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReconcileMetrics").finish_non_exhaustive()
    }
}

/// From 10 ms (a rule with nothing due) to ~40 min (a round over thousands of workloads,
/// bounded by the Prometheus queries).
fn buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.01, 2.0, 18).unwrap_or_else(|_| vec![0.1, 1.0, 10.0, 100.0])
}

impl ReconcileMetrics {
    /// Registers the series; every reason in `reasons` is shown at 0 from the start, so
    /// `rate()` and alerts work before the first failure.
    pub fn new(registry: &Registry, reasons: &[&str]) -> Result<Self, prometheus::Error> {
        let total = IntCounter::with_opts(
            Opts::new("reconcile_total", "RecommendationRule reconciles started.")
                .namespace(NAMESPACE),
        )?;
        let duration = Histogram::with_opts(
            HistogramOpts::new(
                "reconcile_duration_seconds",
                "Duration of RecommendationRule reconciles, failed ones included.",
            )
            .namespace(NAMESPACE)
            .buckets(buckets()),
        )?;
        let errors = IntCounterVec::new(
            Opts::new(
                "reconcile_errors_total",
                "Errors of RecommendationRule reconciles by reason, including the ones a \
                 reconcile logs and continues past.",
            )
            .namespace(NAMESPACE),
            &["reason"],
        )?;
        let unchanged = IntCounter::with_opts(
            Opts::new(
                "recommendations_unchanged_total",
                "Recommendations a round computed and did not write because nothing in them \
                 changed but the run-number and timestamps.",
            )
            .namespace(NAMESPACE),
        )?;
        for reason in reasons {
            errors.with_label_values(&[reason]);
        }
        registry.register(Box::new(total.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(unchanged.clone()))?;
        Ok(ReconcileMetrics {
            total,
            duration,
            errors,
            unchanged,
        })
    }

    /// Counts a reconcile; its duration is observed when the returned timer drops.
    pub fn start(&self) -> HistogramTimer {
        self.total.inc();
        self.duration.start_timer()
    }

    /// Counts an error under its reason.
    pub fn error(&self, reason: &str) {
        self.errors.with_label_values(&[reason]).inc();
    }

    /// Counts a Recommendation left as it was.
    pub fn unchanged(&self) {
        self.unchanged.inc();
    }

    /// Errors counted under `reason` so far.
    pub fn errors(&self, reason: &str) -> u64 {
        self.errors.with_label_values(&[reason]).get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::text;

    #[test]
    fn counts_times_and_sorts_errors_by_reason() {
        let registry = Registry::new();
        let m = ReconcileMetrics::new(&registry, &["discovery", "not_leader"]).unwrap();
        drop(m.start());
        drop(m.start());
        m.error("not_leader");
        m.unchanged();
        let out = text(&registry);
        assert!(out.contains("craned_reconcile_total 2\n"), "{out}");
        assert!(
            out.contains("craned_reconcile_duration_seconds_count 2\n"),
            "{out}"
        );
        assert!(
            out.contains("craned_reconcile_errors_total{reason=\"discovery\"} 0\n"),
            "{out}"
        );
        assert!(
            out.contains("craned_reconcile_errors_total{reason=\"not_leader\"} 1\n"),
            "{out}"
        );
        assert_eq!(m.errors("not_leader"), 1);
        assert!(
            out.contains("craned_recommendations_unchanged_total 1\n"),
            "{out}"
        );
    }
}
