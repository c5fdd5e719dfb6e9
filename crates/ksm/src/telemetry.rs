//! Self-metrics on the telemetry port, named as kube-state-metrics names them so existing
//! dashboards and alerts keep working.

use std::time::{SystemTime, UNIX_EPOCH};

use prometheus::{CounterVec, Gauge, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry};

#[derive(Clone)]
pub struct Telemetry {
    pub registry: Registry,
    list_total: CounterVec,
    watch_total: CounterVec,
    list_objects: GaugeVec,
    dropped_objects: CounterVec,
    shard_objects: CounterVec,
    shard_ordinal: GaugeVec,
    total_shards: Gauge,
    pub scrape_duration: HistogramVec,
    config_hash: GaugeVec,
    config_reload_successful: GaugeVec,
    config_reload_success_time: GaugeVec,
}

/// Which watched file a config reload metric is about (upstream's `type` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    /// `--config`.
    Options,
    /// `--custom-resource-state-config-file`.
    CustomResourceState,
}

impl ConfigKind {
    pub fn label(self) -> &'static str {
        match self {
            ConfigKind::Options => "config",
            ConfigKind::CustomResourceState => "customresourceconfig",
        }
    }
}

/// `kube_state_metrics_build_info`: upstream's labels, so dashboards that read `version`
/// keep working; what a Rust build cannot know (Go and client-go versions, VCS fields) is
/// `unknown`, as upstream writes it when a build does not stamp it.
fn build_info() -> Result<Gauge, prometheus::Error> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let gauge = Gauge::with_opts(
        Opts::new(
            "kube_state_metrics_build_info",
            "A metric with a constant '1' value labeled by version, revision, branch, goversion from which kube_state_metrics was built, and the goos and goarch for the build.",
        )
        .const_label("branch", "unknown")
        .const_label("client_go_version", "unknown")
        .const_label("goarch", arch)
        .const_label("goos", std::env::consts::OS)
        .const_label("goversion", "unknown")
        .const_label("revision", "unknown")
        .const_label("tags", "unknown")
        .const_label("version", env!("CARGO_PKG_VERSION")),
    )?;
    gauge.set(1.0);
    Ok(gauge)
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
        // Not in upstream, which can decode every object it is sent (see watch::Decoded).
        let dropped_objects = CounterVec::new(
            Opts::new(
                "kube_state_metrics_dropped_objects_total",
                "Number of objects received but not exported because they could not be decoded or rendered; each is also logged.",
            ),
            &["resource"],
        )?;
        // Not in upstream: what sharding costs. Client-side, every shard receives every
        // object (owned="false" is the waste); server-side, owned="false" stays 0.
        let shard_objects = CounterVec::new(
            Opts::new(
                "kube_state_metrics_shard_objects_received_total",
                "Objects received from the API server (lists and watch events), by whether this shard exports them.",
            ),
            &["resource", "owned"],
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
        let config_labels = &["type", "filename"];
        let config_hash = GaugeVec::new(
            Opts::new(
                "kube_state_metrics_config_hash",
                "Hash of the currently loaded configuration.",
            ),
            config_labels,
        )?;
        let config_reload_successful = GaugeVec::new(
            Opts::new(
                "kube_state_metrics_last_config_reload_successful",
                "Whether the last configuration reload attempt was successful.",
            ),
            config_labels,
        )?;
        let config_reload_success_time = GaugeVec::new(
            Opts::new(
                "kube_state_metrics_last_config_reload_success_timestamp_seconds",
                "Timestamp of the last successful configuration reload.",
            ),
            config_labels,
        )?;
        registry.register(Box::new(build_info()?))?;
        registry.register(Box::new(ferrocrane_core::process::ProcessMetrics::new()?))?;
        registry.register(Box::new(config_hash.clone()))?;
        registry.register(Box::new(config_reload_successful.clone()))?;
        registry.register(Box::new(config_reload_success_time.clone()))?;
        registry.register(Box::new(list_total.clone()))?;
        registry.register(Box::new(watch_total.clone()))?;
        registry.register(Box::new(list_objects.clone()))?;
        registry.register(Box::new(dropped_objects.clone()))?;
        registry.register(Box::new(shard_objects.clone()))?;
        registry.register(Box::new(shard_ordinal.clone()))?;
        registry.register(Box::new(total_shards.clone()))?;
        registry.register(Box::new(scrape_duration.clone()))?;
        Ok(Self {
            registry,
            list_total,
            watch_total,
            list_objects,
            dropped_objects,
            shard_objects,
            shard_ordinal,
            total_shards,
            scrape_duration,
            config_hash,
            config_reload_successful,
            config_reload_success_time,
        })
    }

    /// A config file was (re)loaded and is in force. `hash` identifies the content; only
    /// its low 48 bits are exported so the value is exact in a float64, as upstream does
    /// with its md5 (the values differ from upstream's, the meaning does not).
    pub fn config_loaded(&self, kind: ConfigKind, file: &str, at: SystemTime, hash: u64) {
        let labels = [kind.label(), file];
        self.config_reload_successful
            .with_label_values(&labels)
            .set(1.0);
        self.config_reload_success_time
            .with_label_values(&labels)
            .set(
                at.duration_since(UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64()),
            );
        self.config_hash
            .with_label_values(&labels)
            .set((hash & ((1 << 48) - 1)) as f64);
    }

    /// A (re)load of a config file failed; the last good configuration stays in force.
    pub fn config_failed(&self, kind: ConfigKind, file: &str) {
        self.config_reload_successful
            .with_label_values(&[kind.label(), file])
            .set(0.0);
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

    /// A failed list counts as `kube_state_metrics_list_total{result="error"}`, anything
    /// else (starting or keeping the watch) as the watch error, as upstream's instrumented
    /// ListerWatcher counts its List and Watch calls.
    pub fn watch_failed(&self, resource: &str, error: &kube::runtime::watcher::Error) {
        let counter = match error {
            kube::runtime::watcher::Error::InitialListFailed(_) => &self.list_total,
            _ => &self.watch_total,
        };
        counter.with_label_values(&["error", resource]).inc();
    }

    /// The counters of objects arriving for `resource`, (owned, another shard's): looked up
    /// once per watcher, not per event.
    pub fn received_counters(&self, resource: &str) -> (prometheus::Counter, prometheus::Counter) {
        (
            self.shard_objects.with_label_values(&[resource, "true"]),
            self.shard_objects.with_label_values(&[resource, "false"]),
        )
    }

    /// An object was received but is not exported (logged where it happens).
    pub fn object_dropped(&self, resource: &str) {
        self.dropped_objects.with_label_values(&[resource]).inc();
    }

    /// Drops the object gauge of resources no longer watched (after a reload), so a
    /// removed resource does not keep reporting its last count.
    pub fn forget_resources<'a>(&self, resources: impl IntoIterator<Item = &'a str>) {
        for r in resources {
            let _ = self.list_objects.remove_label_values(&[r]);
        }
    }

    pub fn set_objects(&self, resource: &str, count: usize) {
        self.list_objects
            .with_label_values(&[resource])
            .set(count as f64);
    }
}

#[cfg(test)]
impl Telemetry {
    /// The self-metrics as the telemetry port serves them.
    pub(crate) fn exposition(&self) -> String {
        use prometheus::Encoder;
        let mut out = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("encode");
        String::from_utf8(out).expect("utf8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgotten_resources_leave_the_object_gauge() {
        let t = Telemetry::new().expect("telemetry");
        t.set_objects("pods", 3);
        t.set_objects("secrets", 1);
        t.forget_resources(["secrets", "never-seen"]);
        let text = t.exposition();
        assert!(text.contains("kube_state_metrics_list_objects{resource=\"pods\"} 3"));
        assert!(!text.contains("resource=\"secrets\""), "{text}");
    }

    #[test]
    fn a_failed_list_is_a_list_error_and_anything_else_a_watch_error() {
        use kube::runtime::watcher::Error;
        let t = Telemetry::new().expect("telemetry");
        let list_error = Error::InitialListFailed(kube::Error::LinesCodecMaxLineLengthExceeded);
        t.watch_failed("pods", &list_error);
        t.watch_failed("pods", &Error::NoResourceVersion);
        t.watch_failed("pods", &Error::NoResourceVersion);
        let text = t.exposition();
        assert!(
            text.contains("kube_state_metrics_list_total{resource=\"pods\",result=\"error\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("kube_state_metrics_watch_total{resource=\"pods\",result=\"error\"} 2"),
            "{text}"
        );
    }

    #[test]
    fn config_reload_metrics_use_upstream_names_and_labels() {
        let t = Telemetry::new().expect("telemetry");
        let at = UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        t.config_loaded(ConfigKind::Options, "/etc/ksm/config.yaml", at, u64::MAX);
        t.config_loaded(ConfigKind::CustomResourceState, "crs.yaml", at, 7);
        t.config_failed(ConfigKind::CustomResourceState, "crs.yaml");
        let text = t.exposition();
        for line in [
            "kube_state_metrics_last_config_reload_successful{filename=\"/etc/ksm/config.yaml\",type=\"config\"} 1",
            "kube_state_metrics_last_config_reload_successful{filename=\"crs.yaml\",type=\"customresourceconfig\"} 0",
            "kube_state_metrics_last_config_reload_success_timestamp_seconds{filename=\"crs.yaml\",type=\"customresourceconfig\"} 1700000000",
            "kube_state_metrics_config_hash{filename=\"/etc/ksm/config.yaml\",type=\"config\"} 281474976710655",
            "kube_state_metrics_config_hash{filename=\"crs.yaml\",type=\"customresourceconfig\"} 7",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
