use super::*;

fn linear(max: f64, size: f64) -> HistogramOptions {
    HistogramOptions::linear(max, size, DEFAULT_EPSILON).unwrap()
}

#[test]
fn linear_buckets_like_vpa() {
    let o = linear(100.0, 0.1);
    assert_eq!(o.num_buckets(), 1001);
    assert_eq!(o.find_bucket(0.0), 0);
    assert_eq!(o.find_bucket(0.25), 2);
    assert_eq!(o.find_bucket(-3.0), 0);
    assert_eq!(o.find_bucket(1e9), 1000);
    assert_eq!(o.bucket_start(3), 3.0 * 0.1);
    let mem = linear(104_857_600_000.0, 104_857_600.0);
    assert_eq!(mem.num_buckets(), 1001);
    assert!(HistogramOptions::linear(0.0, 1.0, 1e-10).is_err());
    assert!(HistogramOptions::linear(1.0, 1e-9, 1e-10).is_err());
}

/// A bucket size so small the count saturates usize: refused, not wrapped to an empty
/// histogram that panics when indexed (issue 13).
#[test]
fn absurd_bucket_counts_are_refused() {
    for (max, size) in [(100.0, 1e-18), (f64::MAX, 1e-300), (f64::INFINITY, 1.0)] {
        let err = HistogramOptions::linear(max, size, DEFAULT_EPSILON).unwrap_err();
        assert!(
            err.to_string().contains("buckets (at most 1000000)"),
            "{err}"
        );
    }
    assert!(HistogramOptions::exponential(f64::MAX, 1e-300, 1.0000001, DEFAULT_EPSILON).is_err());
    assert_eq!(linear(1e6 - 1.0, 1.0).num_buckets(), 1_000_000);
}

#[test]
fn exponential_buckets_like_vpa() {
    // VPA's CPU histogram: first bucket 0.01 core, ratio 1.05, max 1000 cores.
    let o = HistogramOptions::exponential(1000.0, 0.01, 1.05, DEFAULT_EPSILON).unwrap();
    assert_eq!(o.num_buckets(), 176);
    assert_eq!(o.find_bucket(0.005), 0);
    assert_eq!(o.find_bucket(0.01), 1);
    assert_eq!(o.bucket_start(0), 0.0);
    assert!((o.bucket_start(1) - 0.01).abs() < 1e-12);
    assert!((o.bucket_start(2) - 0.0205).abs() < 1e-12);
    for b in 1..o.num_buckets() {
        let mid = (o.bucket_start(b) + o.bucket_start(b.min(o.num_buckets() - 2) + 1)) / 2.0;
        if b < o.num_buckets() - 1 {
            assert_eq!(o.find_bucket(mid), b, "bucket {b}");
        }
    }
    assert!(HistogramOptions::exponential(10.0, 1.0, 1.0, 1e-10).is_err());
}

#[test]
fn percentile_returns_bucket_end() {
    let mut h = Histogram::new(linear(100.0, 0.1));
    assert!(h.is_empty());
    assert_eq!(h.percentile(0.99), 0.0);
    // 99 samples of 1.0 and one of 5.0, all weight 1.
    for i in 0..99 {
        h.add_sample(1.0, 1.0, i);
    }
    h.add_sample(5.0, 1.0, 99);
    // Cumulative weight reaches 0.99*100 in bucket 10 ([1.0, 1.1)) → its end.
    assert_eq!(h.percentile(0.99), 11.0 * 0.1);
    assert_eq!(h.percentile(1.0), 51.0 * 0.1);
    assert_eq!(h.percentile(0.5), 11.0 * 0.1);
    // The last bucket has no end: its start is returned.
    h.add_sample(1e6, 1e6, 100);
    assert_eq!(h.percentile(1.0), 100.0);
}

#[test]
fn reset_empties_without_reallocating() {
    let mut h = Histogram::new(linear(100.0, 0.1));
    h.add_sample(3.0, 1.0, 0);
    let ptr = h.weights.as_ptr();
    h.reset();
    assert!(h.is_empty());
    assert_eq!(h.total_weight(), 0.0);
    h.add_sample(0.05, 1.0, 0);
    assert_eq!(h.percentile(0.5), 0.1);
    assert_eq!(h.weights.as_ptr(), ptr);
}

#[test]
fn non_finite_input_is_ignored() {
    let mut h = Histogram::new(linear(100.0, 0.1));
    h.add_sample(f64::NAN, 1.0, 0);
    h.add_sample(1.0, f64::NAN, 0);
    h.add_sample(1.0, -1.0, 0);
    assert!(h.is_empty());
}

#[test]
fn decaying_histogram_halves_old_weight() {
    let day = 86_400;
    let mut h = Histogram::decaying(linear(100.0, 0.1), day);
    // 1.0 core for a day's worth of samples at t=0, then equally many at 2.0 cores one day
    // later: the later ones weigh twice as much, so the median is in the 2.0 bucket.
    for i in 0..10 {
        h.add_sample(1.0, 1.0, i);
    }
    for i in 0..10 {
        h.add_sample(2.0, 1.0, day + i);
    }
    assert!(
        (h.total_weight() - 30.0).abs() < 1e-2,
        "{}",
        h.total_weight()
    );
    assert_eq!(h.percentile(0.3), 11.0 * 0.1);
    assert_eq!(h.percentile(0.5), 21.0 * 0.1);
    // Non-decaying, the same samples put the median in the 1.0 bucket.
    let mut flat = Histogram::new(linear(100.0, 0.1));
    for i in 0..10 {
        flat.add_sample(1.0, 1.0, i);
        flat.add_sample(2.0, 1.0, day + i);
    }
    assert_eq!(flat.percentile(0.5), 11.0 * 0.1);
}

#[test]
fn decaying_histogram_renormalizes_far_future_samples() {
    let hl = 3600;
    let mut h = Histogram::decaying(linear(100.0, 0.1), hl);
    h.add_sample(1.0, 1.0, 0);
    // 200 half-lives later: the exponent would overflow without the shift.
    let t = 200 * hl;
    h.add_sample(2.0, 1.0, t);
    assert!(h.total_weight().is_finite());
    assert_eq!(h.percentile(0.5), 21.0 * 0.1);
    // The old sample decayed below epsilon: the min bucket moved up.
    assert_eq!(h.percentile(0.0), 21.0 * 0.1);
}

fn series(values: &[f64]) -> Vec<Sample> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| Sample::new(60 * i as i64, v))
        .collect()
}

#[test]
fn predictor_is_usage_weighted_with_margin() {
    let mut p = PercentilePredictor::new(PercentileConfig {
        margin_fraction: 0.15,
        ..PercentileConfig::crane_default()
    })
    .unwrap();
    // 90 samples at 0.1 core (weight 0.1 each = 9) and 10 at 1.0 core (weight 1 each = 10):
    // by weight more than half the usage is at 1.0 core, so p50 lands there.
    let mut v = vec![0.1; 90];
    v.extend([1.0; 10]);
    let s = series(&v);
    let mut p50 = PercentilePredictor::new(PercentileConfig {
        percentile: 0.5,
        ..PercentileConfig::crane_default()
    })
    .unwrap();
    assert_eq!(p50.estimate(&[&s]).unwrap(), 11.0 * 0.1);
    assert_eq!(p.estimate(&[&s]).unwrap(), 11.0 * 0.1 * 1.15);
    assert_eq!(p.estimate(&[]), Err(PredictionError::NoSamples));
}

#[test]
fn predictor_aggregates_all_series_and_predicts_a_flat_line() {
    let mut p = PercentilePredictor::new(PercentileConfig::crane_default()).unwrap();
    let a = series(&[0.5; 10]);
    let b = series(&[0.5; 10]);
    assert_eq!(p.estimate(&[&a, &b]).unwrap(), 6.0 * 0.1);
    assert_eq!(p.histogram().total_weight(), 20.0 * 0.5);
    let line = p.predict(&[&a], 90, 300, 60).unwrap();
    assert_eq!(
        line.iter().map(|s| s.timestamp).collect::<Vec<_>>(),
        [60, 120, 180, 240]
    );
    assert!(line.iter().all(|s| s.value == 6.0 * 0.1));
}

#[test]
fn predictor_rejects_bad_config() {
    for c in [
        PercentileConfig {
            percentile: 0.0,
            ..PercentileConfig::crane_default()
        },
        PercentileConfig {
            target_utilization: 0.0,
            ..PercentileConfig::crane_default()
        },
        PercentileConfig {
            margin_fraction: -1.0,
            ..PercentileConfig::crane_default()
        },
    ] {
        assert!(PercentilePredictor::new(c).is_err());
    }
}

/// The budget: one container's week at 1-minute resolution well under 1 ms.
#[test]
fn a_week_of_samples_is_fast() {
    let week: Vec<Sample> = (0..10_080)
        .map(|i| Sample::new(i * 60, 0.5 + ((i % 1440) as f64 / 1440.0)))
        .collect();
    let mut p = PercentilePredictor::new(PercentileConfig::crane_default()).unwrap();
    p.estimate(&[&week]).unwrap();
    let runs = 50;
    let start = std::time::Instant::now();
    for _ in 0..runs {
        std::hint::black_box(p.estimate(&[&week]).unwrap());
    }
    let per_run = start.elapsed() / runs;
    // Generous even for an unoptimized test build on a busy machine.
    assert!(per_run < std::time::Duration::from_millis(5), "{per_run:?}");
    eprintln!("percentile estimate over 10080 samples: {per_run:?}");
}
