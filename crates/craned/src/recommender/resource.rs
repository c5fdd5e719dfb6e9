//! The Resource recommender: per-container CPU and memory requests from a percentile of usage.
//!
//! Crane's algorithm (`recommender/resource/recommend.go`, defaults in `registry.go`):
//! * CPU = p99 of the usage-weighted, non-decaying histogram of all the workload's pods' samples
//!   for the container (linear buckets of 0.1 core up to 100) × 1.15 / 1.0, truncated to
//!   millicores. Memory likewise (buckets of 100 MiB up to 104857600000 B), truncated to bytes;
//!   a memory estimate of 0 is an error ("no enough metrics").
//! * OOM protection: if the container was OOM-killed within `oom-history-length` (7 days),
//!   memory is at least max(OOM memory + 100 MiB, OOM memory × `oom-bump-ratio` 1.2).
//! * `specification: true` rounds both up to the smallest instance-like spec of
//!   `specification-config` whose CPU and then memory fit.
//!
//! Differences, on purpose: the OOM window honours `oom-history-length` (Crane reads the key but
//! hard-codes 7 days); the most recent matching OOM within the window counts (Crane takes the
//! first record that prefix-matches the pod name, even if a newer one exists); the caller
//! matches OOM records to the workload by owner references. `histogram-decay: true` switches to
//! VPA's exponentially decaying histogram with the half-lives Crane declares (`cpu-histogram-
//! half-life` 24h, `mem-histogram-half-life` 48h) — Crane never decays.

use ferrocrane_core::quantity::QuantityFormat::{BinarySi, DecimalSi};
use ferrocrane_core::quantity::{format_milli, format_value};
use serde_json::{Value, json};

use super::config::{Config, ConfigValueError};
use super::{Proposal, RecommendError, to_yaml};
use crate::crd::actions;
use crate::prediction::Sample;
use crate::prediction::percentile::{
    DEFAULT_EPSILON, DEFAULT_MIN_SAMPLE_WEIGHT, HistogramOptions, PercentileConfig,
    PercentilePredictor,
};

/// Crane's `DefaultSpecs`.
pub const DEFAULT_SPECS: &str = "0.25c0.25g,0.25c0.5g,0.25c1g,0.5c0.5g,0.5c1g,1c1g,1c2g,1c4g,1c8g,2c2g,2c4g,2c8g,2c16g,4c4g,4c8g,4c16g,4c32g,8c8g,8c16g,8c32g,8c64g,16c32g,16c64g,16c128g,32c64g,32c128g,32c256g,64c128g,64c256g";

/// VPA's `OOMMinBumpUp`: 100 MiB.
pub const OOM_MIN_BUMP_UP_BYTES: i64 = 100 * 1024 * 1024;

/// The percentile settings of one resource.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceHistogram {
    pub sample_interval_secs: i64,
    pub percentile: f64,
    pub margin_fraction: f64,
    pub target_utilization: f64,
    pub history_length_secs: i64,
    pub bucket_size: f64,
    pub max_value: f64,
    pub half_life_secs: i64,
}

/// An instance-like size: cores and GiB.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Specification {
    pub cpu: f64,
    pub memory_gib: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResourceConfig {
    pub cpu: ResourceHistogram,
    pub memory: ResourceHistogram,
    pub oom_protection: bool,
    pub oom_history_length_secs: i64,
    pub oom_bump_ratio: f64,
    pub specification: bool,
    pub specifications: Vec<Specification>,
    pub history_completion_check: bool,
    /// VPA's decaying histogram instead of Crane's non-decaying one.
    pub histogram_decay: bool,
}

fn histogram(
    c: &Config,
    prefix: &str,
    req: &str,
    half_life: &str,
) -> Result<ResourceHistogram, ConfigValueError> {
    let (bucket_default, max_default) = if prefix == "cpu" {
        (0.1, 100.0)
    } else {
        (104_857_600.0, 104_857_600_000.0)
    };
    let k = |s: &str| format!("{prefix}-{s}");
    let history_key = if prefix == "cpu" {
        "cpu-model-history-length"
    } else {
        "mem-model-history-length"
    };
    let h = ResourceHistogram {
        sample_interval_secs: c.get_duration_secs(&k("sample-interval"), 60)?,
        percentile: c.get_f64(&format!("{prefix}-{req}-percentile"), 0.99)?,
        margin_fraction: c.get_f64(&format!("{prefix}-{req}-margin-fraction"), 0.15)?,
        target_utilization: c.get_f64(&k("target-utilization"), 1.0)?,
        history_length_secs: c.get_duration_secs(history_key, 168 * 3600)?,
        bucket_size: c.get_f64(&k("histogram-bucket-size"), bucket_default)?,
        max_value: c.get_f64(&k("histogram-max-value"), max_default)?,
        half_life_secs: c.get_duration_secs(&k("histogram-half-life"), parse_default(half_life))?,
    };
    if !(h.percentile > 0.0 && h.percentile <= 1.0) {
        return Err(ConfigValueError::new(
            &format!("{prefix}-{req}-percentile"),
            "must be in (0, 1]",
        ));
    }
    if h.margin_fraction < 0.0 {
        return Err(ConfigValueError::new(
            &format!("{prefix}-{req}-margin-fraction"),
            "must not be negative",
        ));
    }
    if h.target_utilization <= 0.0 {
        return Err(ConfigValueError::new(
            &k("target-utilization"),
            "must be positive",
        ));
    }
    if h.history_length_secs <= 0 {
        return Err(ConfigValueError::new(history_key, "must be positive"));
    }
    if HistogramOptions::linear(h.max_value, h.bucket_size, DEFAULT_EPSILON).is_err() {
        return Err(ConfigValueError::new(
            &k("histogram-bucket-size"),
            "bucket size and max value must be positive, at most 1000000 buckets",
        ));
    }
    Ok(h)
}

fn parse_default(d: &str) -> i64 {
    super::config::parse_duration_secs(d).unwrap_or(86_400)
}

impl ResourceConfig {
    /// Reads Crane's keys with Crane's defaults.
    pub fn from_config(c: &Config) -> Result<Self, ConfigValueError> {
        let spec_text = c.get_str("specification-config", DEFAULT_SPECS);
        let specifications = parse_specifications(spec_text)
            .map_err(|m| ConfigValueError::new("specification-config", m))?;
        let oom_bump_ratio = c.get_f64("oom-bump-ratio", 1.2)?;
        if oom_bump_ratio <= 0.0 {
            return Err(ConfigValueError::new("oom-bump-ratio", "must be positive"));
        }
        Ok(ResourceConfig {
            cpu: histogram(c, "cpu", "request", "24h")?,
            memory: histogram(c, "mem", "request", "48h")?,
            oom_protection: c.get_bool("oom-protection", true)?,
            oom_history_length_secs: c.get_duration_secs("oom-history-length", 168 * 3600)?,
            oom_bump_ratio,
            specification: c.get_bool("specification", false)?,
            specifications,
            history_completion_check: c.get_bool("history-completion-check", false)?,
            histogram_decay: c.get_bool("histogram-decay", false)?,
        })
    }

    fn percentile_config(&self, h: &ResourceHistogram) -> PercentileConfig {
        PercentileConfig {
            options: HistogramOptions::linear(h.max_value, h.bucket_size, DEFAULT_EPSILON)
                .unwrap_or_else(|_| PercentileConfig::crane_default().options),
            percentile: h.percentile,
            margin_fraction: h.margin_fraction,
            target_utilization: h.target_utilization,
            min_sample_weight: DEFAULT_MIN_SAMPLE_WEIGHT,
            decay_half_life_secs: self.histogram_decay.then_some(h.half_life_secs),
        }
    }
}

/// Crane's `GetResourceSpecifications`: `<cpu>c<mem>g` items, sorted by CPU then memory.
pub fn parse_specifications(s: &str) -> Result<Vec<Specification>, String> {
    let mut out = Vec::new();
    for item in s.split(',') {
        let nums: Vec<&str> = item
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|t| !t.is_empty())
            .collect();
        let [cpu, mem] = nums[..] else {
            return Err(format!("specification {item:?} format error"));
        };
        let cpu: f64 = cpu
            .parse()
            .map_err(|_| format!("specification {item:?} cpu format error"))?;
        let memory_gib: f64 = mem
            .parse()
            .map_err(|_| format!("specification {item:?} memory format error"))?;
        out.push(Specification { cpu, memory_gib });
    }
    out.sort_by(|a, b| {
        a.cpu
            .total_cmp(&b.cpu)
            .then(a.memory_gib.total_cmp(&b.memory_gib))
    });
    Ok(out)
}

/// Crane's `GetNormalizedResource`: the first spec (by CPU) with enough CPU that has, among the
/// specs of that same CPU, one with enough memory. Returns (millicores, bytes), or `None` when
/// nothing fits (Crane then keeps the raw values).
pub fn normalize(
    cpu_millis: i64,
    memory_bytes: i64,
    specs: &[Specification],
) -> Option<(i64, i64)> {
    let cores = cpu_millis as f64 / 1000.0;
    let gib = memory_bytes as f64 / (1024.0 * 1024.0 * 1024.0);
    for (i, s) in specs.iter().enumerate() {
        if s.cpu >= cores {
            for t in specs[i..].iter().take_while(|t| t.cpu == s.cpu) {
                if t.memory_gib >= gib {
                    // Crane formats with %.2f and parses the text back as a quantity.
                    #[allow(
                        clippy::cast_possible_truncation,
                        reason = "a spec beyond i64 saturates, and is then refused below"
                    )]
                    let (cpu_hundredths, mem_hundredths) = (
                        (t.cpu * 100.0).round() as i64,
                        (t.memory_gib * 100.0).round() as i64,
                    );
                    let bytes =
                        i64::try_from((i128::from(mem_hundredths) * (1i128 << 30) + 99) / 100)
                            .ok()?;
                    let millis = cpu_hundredths.checked_mul(10)?;
                    if millis > 0 && bytes > 0 {
                        return Some((millis, bytes));
                    }
                    return None;
                }
            }
        }
    }
    None
}

/// One OOM kill of a container of the target workload (the recorder's record, already matched
/// to the workload).
#[derive(Debug, Clone, PartialEq)]
pub struct OomRecord {
    pub container: String,
    /// What Crane records: the container's memory request when it was killed, in bytes.
    pub memory_bytes: i64,
    /// Unix seconds.
    pub oom_at: i64,
}

/// Crane's OOM bump of `oom_memory`: max(+100 MiB, × ratio).
pub fn oom_bumped_memory(oom_memory: i64, ratio: f64) -> i64 {
    let scaled = oom_memory as f64 * ratio;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "Rust's cast saturates: below i64::MIN (a negative ratio is refused) or NaN gives a value the max() below discards"
    )]
    let scaled = if scaled >= i64::MAX as f64 {
        i64::MAX
    } else {
        scaled as i64
    };
    oom_memory.saturating_add(OOM_MIN_BUMP_UP_BYTES).max(scaled)
}

/// One container of the target: its name, current requests, and usage series (one per pod).
#[derive(Debug, Clone, Copy)]
pub struct ContainerInput<'a> {
    pub name: &'a str,
    pub current_cpu_millis: Option<i64>,
    pub current_memory_bytes: Option<i64>,
    pub cpu_usage: &'a [&'a [Sample]],
    pub memory_usage: &'a [&'a [Sample]],
}

/// The recommendation for one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerResources {
    pub name: String,
    pub cpu_millis: i64,
    pub memory_bytes: i64,
    /// Memory was raised by OOM protection.
    pub oom_protected: bool,
    /// Both were rounded to a specification.
    pub normalized: bool,
}

/// Computes Resource recommendations; keep one per worker, its histograms are reused.
#[derive(Debug, Clone)]
pub struct ResourceRecommender {
    config: ResourceConfig,
    cpu: PercentilePredictor,
    memory: PercentilePredictor,
}

impl ResourceRecommender {
    pub fn new(config: ResourceConfig) -> Result<Self, RecommendError> {
        let invalid =
            |e| RecommendError::Config(ConfigValueError::new("histogram", format!("{e}")));
        let cpu =
            PercentilePredictor::new(config.percentile_config(&config.cpu)).map_err(invalid)?;
        let memory =
            PercentilePredictor::new(config.percentile_config(&config.memory)).map_err(invalid)?;
        Ok(ResourceRecommender {
            config,
            cpu,
            memory,
        })
    }

    pub fn config(&self) -> &ResourceConfig {
        &self.config
    }

    /// One container at time `now` (Unix seconds); samples older than the history length
    /// are ignored.
    pub fn recommend_container(
        &mut self,
        c: &ContainerInput<'_>,
        ooms: &[OomRecord],
        now: i64,
    ) -> Result<ContainerResources, RecommendError> {
        let cfg = &self.config;
        let cpu_used = self
            .cpu
            .fill(c.cpu_usage, now - cfg.cpu.history_length_secs);
        if cpu_used == 0 {
            return Err(RecommendError::InsufficientData(format!(
                "container {}: no cpu usage samples",
                c.name
            )));
        }
        if cfg.history_completion_check
            && !history_complete(c.cpu_usage, cfg.cpu.history_length_secs, now)
        {
            return Err(RecommendError::InsufficientData(format!(
                "container {}: cpu history does not cover {} days",
                c.name,
                cfg.cpu.history_length_secs / 86_400
            )));
        }
        #[allow(
            clippy::cast_possible_truncation,
            reason = "Crane's int64(v * 1000); the histogram caps estimates at its max value"
        )]
        let cpu_millis = (self.cpu.current_estimate() * 1000.0) as i64;

        let mem_used = self
            .memory
            .fill(c.memory_usage, now - cfg.memory.history_length_secs);
        if cfg.history_completion_check
            && !history_complete(c.memory_usage, cfg.memory.history_length_secs, now)
        {
            return Err(RecommendError::InsufficientData(format!(
                "container {}: memory history does not cover {} days",
                c.name,
                cfg.memory.history_length_secs / 86_400
            )));
        }
        #[allow(
            clippy::cast_possible_truncation,
            reason = "Crane's int64(v); the histogram caps estimates at its max value"
        )]
        let mut memory_bytes = self.memory.current_estimate() as i64;
        if mem_used == 0 || memory_bytes <= 0 {
            return Err(RecommendError::InsufficientData(format!(
                "container {}: no memory usage samples",
                c.name
            )));
        }

        let mut oom_protected = false;
        if cfg.oom_protection {
            let latest = ooms
                .iter()
                .filter(|o| o.container == c.name && now - o.oom_at <= cfg.oom_history_length_secs)
                .max_by_key(|o| o.oom_at);
            if let Some(o) = latest {
                let bumped = oom_bumped_memory(o.memory_bytes, cfg.oom_bump_ratio);
                if o.memory_bytes > 0 && bumped > memory_bytes {
                    memory_bytes = bumped;
                    oom_protected = true;
                }
            }
        }

        let mut out = ContainerResources {
            name: c.name.to_string(),
            cpu_millis,
            memory_bytes,
            oom_protected,
            normalized: false,
        };
        if cfg.specification
            && let Some((cpu, mem)) = normalize(cpu_millis, memory_bytes, &cfg.specifications)
        {
            out.cpu_millis = cpu;
            out.memory_bytes = mem;
            out.normalized = true;
        }
        Ok(out)
    }

    /// Every container, then the status proposal.
    pub fn recommend(
        &mut self,
        containers: &[ContainerInput<'_>],
        ooms: &[OomRecord],
        now: i64,
    ) -> Result<(Vec<ContainerResources>, Proposal), RecommendError> {
        let mut out = Vec::with_capacity(containers.len());
        for c in containers {
            out.push(self.recommend_container(c, ooms, now)?);
        }
        let proposal = proposal(containers, &out);
        Ok((out, proposal))
    }
}

/// Crane's `DetectTimestampCompletion`: samples on at least `days - 1` distinct days back from
/// `now` (truncated to the minute).
pub fn history_complete(series: &[&[Sample]], history_secs: i64, now: i64) -> bool {
    let end = now - now.rem_euclid(60);
    let days = (history_secs / 86_400).max(1);
    let mut seen = [false; 64];
    let mut seen_far = std::collections::BTreeSet::new();
    for s in series.iter().flat_map(|s| s.iter()) {
        let d = (end - s.timestamp) / 86_400;
        if (0..=days).contains(&d) {
            if let Some(day) = usize::try_from(d).ok().and_then(|d| seen.get_mut(d)) {
                *day = true;
            } else {
                seen_far.insert(d);
            }
        }
    }
    let count = seen.iter().filter(|&&b| b).count() as i64 + seen_far.len() as i64;
    count >= days - 1
}

fn container_patch(name: &str, cpu: String, memory: String) -> Value {
    json!({"name": name, "resources": {"requests": {"cpu": cpu, "memory": memory}}})
}

/// Crane's status for Resource: recommendedValue lists each container's target; the infos are
/// `{"spec":{"template":{"spec":{"containers":[...]}}}}` patches; action `None` when they agree.
pub fn proposal(inputs: &[ContainerInput<'_>], recs: &[ContainerResources]) -> Proposal {
    let value = json!({"resourceRequest": {"containers": recs.iter().map(|r| json!({
        "containerName": r.name,
        "target": {
            "cpu": format_milli(r.cpu_millis, DecimalSi),
            "memory": format_value(r.memory_bytes, BinarySi),
        },
    })).collect::<Vec<_>>()}});
    let new: Vec<Value> = recs
        .iter()
        .map(|r| {
            container_patch(
                &r.name,
                format_milli(r.cpu_millis, DecimalSi),
                format_value(r.memory_bytes, BinarySi),
            )
        })
        .collect();
    let old: Vec<Value> = recs
        .iter()
        .map(|r| {
            let current = inputs.iter().find(|c| c.name == r.name);
            container_patch(
                &r.name,
                format_milli(
                    current.and_then(|c| c.current_cpu_millis).unwrap_or(0),
                    DecimalSi,
                ),
                format_value(
                    current.and_then(|c| c.current_memory_bytes).unwrap_or(0),
                    BinarySi,
                ),
            )
        })
        .collect();
    let wrap = |cs: Vec<Value>| json!({"spec": {"template": {"spec": {"containers": cs}}}});
    let action = if new == old {
        actions::NONE
    } else {
        actions::PATCH
    };
    Proposal {
        recommended_value: to_yaml(&value),
        recommended_info: wrap(new).to_string(),
        current_info: wrap(old).to_string(),
        action,
        description: String::new(),
    }
}

#[cfg(test)]
mod tests;
