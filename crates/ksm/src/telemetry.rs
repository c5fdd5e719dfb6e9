//! Self-metrics on the telemetry port, named as kube-state-metrics names them so existing
//! dashboards and alerts keep working.

use prometheus::{CounterVec, Gauge, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry};

#[derive(Clone)]
pub struct Telemetry {
    pub registry: Registry,
    list_total: CounterVec,
    watch_total: CounterVec,
    list_objects: GaugeVec,
    shard_ordinal: GaugeVec,
    total_shards: Gauge,
    pub scrape_duration: HistogramVec,
}

impl Telemetry {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let list_total = CounterVec::new(
            Opts::new(
                "kube_state_metrics_list_total",
                "Number of total resource list calls in kube-state-metrics",
            ),
            &["result", "resource"],
        )?;
        let watch_total = CounterVec::new(
            Opts::new(
                "kube_state_metrics_watch_total",
                "Number of total resource watch calls in kube-state-metrics",
            ),
            &["result", "resource"],
        )?;
        let list_objects = GaugeVec::new(
            Opts::new(
                "kube_state_metrics_list_objects",
                "Number of resources listed in kube-state-metrics",
            ),
            &["resource"],
        )?;
        let shard_ordinal = GaugeVec::new(
            Opts::new(
                "kube_state_metrics_shard_ordinal",
                "Current sharding ordinal/index of this instance",
            ),
            &["shard_ordinal"],
        )?;
        let total_shards = Gauge::with_opts(Opts::new(
            "kube_state_metrics_total_shards",
            "Number of total shards this instance is aware of",
        ))?;
        let scrape_duration = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "A histogram of requests for kube-state-metrics metrics handler.",
            )
            .const_label("handler", "metrics"),
            &["method"],
        )?;
        registry.register(Box::new(list_total.clone()))?;
        registry.register(Box::new(watch_total.clone()))?;
        registry.register(Box::new(list_objects.clone()))?;
        registry.register(Box::new(shard_ordinal.clone()))?;
        registry.register(Box::new(total_shards.clone()))?;
        registry.register(Box::new(scrape_duration.clone()))?;
        Ok(Self {
            registry,
            list_total,
            watch_total,
            list_objects,
            shard_ordinal,
            total_shards,
            scrape_duration,
        })
    }

    pub fn set_sharding(&self, ordinal: i32, total: i32) {
        self.shard_ordinal.reset();
        self.shard_ordinal
            .with_label_values(&[ordinal.to_string()])
            .set(f64::from(ordinal));
        self.total_shards.set(f64::from(total));
    }

    pub fn list_succeeded(&self, resource: &str) {
        self.list_total
            .with_label_values(&["success", resource])
            .inc();
    }

    pub fn watch_succeeded(&self, resource: &str) {
        self.watch_total
            .with_label_values(&["success", resource])
            .inc();
    }

    /// The watcher does not say whether a list or a watch failed; both are counted as the
    /// watch error upstream reports, since every failure restarts the watch.
    pub fn watch_failed(&self, resource: &str, _error: &kube::runtime::watcher::Error) {
        self.watch_total
            .with_label_values(&["error", resource])
            .inc();
    }

    pub fn set_objects(&self, resource: &str, count: usize) {
        self.list_objects
            .with_label_values(&[resource])
            .set(count as f64);
    }
}
