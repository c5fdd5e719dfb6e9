//! The `process_*` families every Go exporter serves (client_golang's process collector),
//! with the same names, HELP and meaning, read from `/proc/self` at each scrape. Dashboards
//! that chart an exporter's memory and CPU keep working when the Go binary is swapped.
//! Elsewhere than Linux the collector reports nothing.

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Counter, Gauge, Opts};

/// Go's procfs reads times in USER_HZ, which Linux fixes at 100 for user space.
const USER_HZ: f64 = 100.0;
/// Pages are 4 KiB on the platforms the images are built for, as Go's `os.Getpagesize`.
const PAGE_SIZE: f64 = 4096.0;

/// Registers into any `prometheus::Registry`: `registry.register(Box::new(ProcessMetrics::new()?))`.
pub struct ProcessMetrics {
    cpu: Counter,
    open_fds: Gauge,
    max_fds: Gauge,
    virtual_memory: Gauge,
    virtual_memory_max: Gauge,
    resident_memory: Gauge,
    start_time: Gauge,
    network_receive: Counter,
    network_transmit: Counter,
    descs: Vec<Desc>,
}

impl ProcessMetrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let counter = |name: &str, help: &str| Counter::with_opts(Opts::new(name, help));
        let gauge = |name: &str, help: &str| Gauge::with_opts(Opts::new(name, help));
        let m = ProcessMetrics {
            cpu: counter(
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds.",
            )?,
            open_fds: gauge("process_open_fds", "Number of open file descriptors.")?,
            max_fds: gauge(
                "process_max_fds",
                "Maximum number of open file descriptors.",
            )?,
            virtual_memory: gauge(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
            )?,
            virtual_memory_max: gauge(
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
            )?,
            resident_memory: gauge(
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
            )?,
            start_time: gauge(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
            )?,
            network_receive: counter(
                "process_network_receive_bytes_total",
                "Number of bytes received by the process over the network.",
            )?,
            network_transmit: counter(
                "process_network_transmit_bytes_total",
                "Number of bytes sent by the process over the network.",
            )?,
            descs: Vec::new(),
        };
        let descs = m.metrics().iter().flat_map(|c| c.desc()).cloned().collect();
        Ok(ProcessMetrics { descs, ..m })
    }

    fn metrics(&self) -> [&dyn Collector; 9] {
        [
            &self.cpu,
            &self.open_fds,
            &self.max_fds,
            &self.virtual_memory,
            &self.virtual_memory_max,
            &self.resident_memory,
            &self.start_time,
            &self.network_receive,
            &self.network_transmit,
        ]
    }

    /// Reads `/proc/self`; a file that cannot be read leaves its families at their last value.
    fn refresh(&self) {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        if let Some(stat) = read("/proc/self/stat").and_then(|s| Stat::parse(&s)) {
            set_counter(&self.cpu, (stat.utime + stat.stime) / USER_HZ);
            self.virtual_memory.set(stat.vsize);
            self.resident_memory.set(stat.rss_pages * PAGE_SIZE);
            if let Some(boot) = read("/proc/stat").and_then(|s| boot_time(&s)) {
                self.start_time.set(boot + stat.start_ticks / USER_HZ);
            }
        }
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            self.open_fds.set(fds.count() as f64);
        }
        if let Some(limits) = read("/proc/self/limits") {
            if let Some(v) = soft_limit(&limits, "Max open files") {
                self.max_fds.set(v);
            }
            if let Some(v) = soft_limit(&limits, "Max address space") {
                self.virtual_memory_max.set(v);
            }
        }
        if let Some((received, sent)) = read("/proc/self/net/dev").and_then(|s| net_totals(&s)) {
            set_counter(&self.network_receive, received);
            set_counter(&self.network_transmit, sent);
        }
    }
}

impl Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.refresh();
        self.metrics().iter().flat_map(|c| c.collect()).collect()
    }
}

/// A counter follows a total read elsewhere: it only ever moves up to it.
fn set_counter(counter: &Counter, total: f64) {
    let delta = total - counter.get();
    if delta > 0.0 {
        counter.inc_by(delta);
    }
}

/// The fields of `/proc/self/stat` the families read.
#[derive(Debug, PartialEq)]
struct Stat {
    utime: f64,
    stime: f64,
    start_ticks: f64,
    vsize: f64,
    rss_pages: f64,
}

impl Stat {
    /// The command name (field 2) may hold spaces and parentheses: fields are counted
    /// from the last `)`.
    fn parse(text: &str) -> Option<Stat> {
        let after = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // `after` starts at field 3 (state); field n is fields[n - 3].
        let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
        Some(Stat {
            utime: field(14)?,
            stime: field(15)?,
            start_ticks: field(22)?,
            vsize: field(23)?,
            rss_pages: field(24)?,
        })
    }
}

/// `btime` of `/proc/stat`: when the machine booted, in seconds since the epoch.
fn boot_time(proc_stat: &str) -> Option<f64> {
    proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The soft limit of one `/proc/self/limits` row; `unlimited` is the largest u64, as Go's
/// procfs reports it.
fn soft_limit(limits: &str, name: &str) -> Option<f64> {
    let row = limits.lines().find(|l| l.starts_with(name))?;
    let soft = row[name.len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(u64::MAX as f64);
    }
    soft.parse().ok()
}

/// Bytes received and sent over every interface of the process' network namespace.
fn net_totals(net_dev: &str) -> Option<(f64, f64)> {
    let mut totals = (0.0, 0.0);
    for line in net_dev.lines().skip(2) {
        let (_, counters) = line.split_once(':')?;
        let c: Vec<f64> = counters
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        totals.0 += c.first()?;
        totals.1 += c.get(8)?;
    }
    Some(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 12345 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(
            Stat::parse(line),
            Some(Stat {
                utime: 250.0,
                stime: 50.0,
                start_ticks: 12345.0,
                vsize: 104_857_600.0,
                rss_pages: 2560.0,
            })
        );
        assert_eq!(Stat::parse("garbage"), None);
    }

    #[test]
    fn limits_boot_time_and_network_totals() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 1048576              files\nMax address space         unlimited            unlimited            bytes\n";
        assert_eq!(soft_limit(limits, "Max open files"), Some(1024.0));
        assert_eq!(
            soft_limit(limits, "Max address space"),
            Some(u64::MAX as f64)
        );
        assert_eq!(boot_time("cpu 1 2\nbtime 1700000000\n"), Some(1.7e9));
        let net = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n  eth0: 1000 10 0 0 0 0 0 0 3000 20 0 0 0 0 0 0\n";
        assert_eq!(net_totals(net), Some((1100.0, 3200.0)));
    }

    #[test]
    fn collects_the_nine_go_families_on_linux() {
        let registry = prometheus::Registry::new();
        registry
            .register(Box::new(ProcessMetrics::new().unwrap()))
            .unwrap();
        let text = prometheus::TextEncoder::new()
            .encode_to_string(&registry.gather())
            .unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(text.matches("# TYPE process_").count(), 9, "{text}");
            let rss: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
                .and_then(|v| v.parse().ok())
                .unwrap();
            assert!(rss > 0.0, "{text}");
        }
    }
}
