//! Pure compute of craned for one container's week of history: 10,080 samples (7 days at
//! 1 minute), what the Resource recommender reads per container per run.
//!
//! - `resource/percentile`: CPU and memory requests through the Resource recommender (Crane's
//!   percentile: histogram fill + p99 + margin, OOM check), recommender reused as a worker
//!   reuses it.
//! - `resource/decaying`: the same with VPA's decaying histogram (`histogram-decay: true`).
//! - `dsp/forecast`: the DSP predictor on the same CPU series (preprocessing, period search with
//!   100 permutation FFTs, estimator selection, FFT estimate).
//!
//! Run: `cargo bench -p ferrocrane-craned --bench recommend -- --warm-up-time 1 --measurement-time 5`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark whose setup fails is itself broken"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ferrocrane_craned::prediction::Sample;
use ferrocrane_craned::prediction::dsp::{DspConfig, DspPredictor};
use ferrocrane_craned::recommender::config::Config;
use ferrocrane_craned::recommender::resource::{
    ContainerInput, ResourceConfig, ResourceRecommender,
};

const NOW: i64 = 1_714_521_600;
const SAMPLES: i64 = 7 * 24 * 60;

/// A daily wave with deterministic jitter: realistic enough that the histogram spreads over
/// many buckets and the DSP finds its period.
fn week(base: f64, swing: f64) -> Vec<Sample> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..SAMPLES)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let jitter = (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let phase = 2.0 * std::f64::consts::PI * (i % 1440) as f64 / 1440.0;
            let v = base + swing * phase.sin() + swing * 0.2 * jitter;
            Sample::new(NOW - (SAMPLES - i) * 60, v.max(0.0))
        })
        .collect()
}

fn resource(c: &mut Criterion, name: &str, config: Config) {
    let cpu = week(1.0, 0.5);
    let mem = week(512.0 * 1048576.0, 128.0 * 1048576.0);
    let cpu_series: [&[Sample]; 1] = [&cpu];
    let mem_series: [&[Sample]; 1] = [&mem];
    let input = ContainerInput {
        name: "app",
        current_cpu_millis: Some(1000),
        current_memory_bytes: Some(1 << 30),
        cpu_usage: &cpu_series,
        memory_usage: &mem_series,
    };
    let mut rec = ResourceRecommender::new(ResourceConfig::from_config(&config).expect("config"))
        .expect("recommender");
    c.bench_function(name, |b| {
        b.iter(|| black_box(rec.recommend_container(black_box(&input), &[], NOW)))
    });
}

fn benches(c: &mut Criterion) {
    resource(c, "resource/percentile", Config::default());
    resource(
        c,
        "resource/decaying",
        Config::from_pairs([("histogram-decay", "true")]),
    );
    let cpu = week(1.0, 0.5);
    let mut dsp = DspPredictor::new(DspConfig::default()).expect("dsp");
    assert!(
        dsp.forecast(&[&cpu]).is_ok(),
        "the bench series is periodic"
    );
    c.bench_function("dsp/forecast", |b| {
        b.iter(|| black_box(dsp.forecast(black_box(&[&cpu]))))
    });
}

criterion_group!(craned, benches);
criterion_main!(craned);
