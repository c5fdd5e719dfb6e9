//! The answer Prometheus' `query_range` gives to craned's two usage queries, computed here from
//! raw samples read with remote read (pure):
//!
//! - CPU: `max by (container, pod) (irate(container_cpu_usage_seconds_total{…}[3m]))`
//! - memory: `max by (container, pod) (container_memory_working_set_bytes{…})`
//!
//! evaluated at every point `start + k·step ≤ end` exactly as the PromQL engine does it, so
//! recommendations do not depend on which path read the history (`tests/tests/craned/remote_read.rs`
//! compares both on one Prometheus): `irate` takes the last two samples in the window (staleness
//! markers dropped), a lower last value is a counter reset, the difference is divided by the
//! interval in seconds as Go computes it; an instant selector takes the newest sample within
//! the lookback (none when it is a staleness marker); `max` keeps the first value of a group
//! and replaces it with a larger one or when it is NaN. Prometheus 3 made both windows
//! left-open (`(t - range, t]`); Prometheus 2 includes the left edge ([`Window`]).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use ferrocrane_core::prometheus::remote_read::RawSeries;
use ferrocrane_core::prometheus::{Labels, RangeSeries, Sample};

/// Prometheus' default lookback for instant vector selectors (`--query.lookback-delta`).
pub const LOOKBACK_MS: i64 = 5 * 60 * 1000;

/// Whether a sample exactly `range` before the evaluation time is inside the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// `[t - range, t]`: Prometheus 2.
    Closed,
    /// `(t - range, t]`: Prometheus 3 and later.
    LeftOpen,
}

impl Window {
    /// From `/api/v1/status/buildinfo`'s version: Prometheus 3 and later are left-open.
    pub fn for_version(version: &str) -> Self {
        let major = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok());
        match major {
            Some(m) if m >= 3 => Window::LeftOpen,
            _ => Window::Closed,
        }
    }

    fn contains(self, ts: i64, from: i64) -> bool {
        match self {
            Window::Closed => ts >= from,
            Window::LeftOpen => ts > from,
        }
    }
}

/// The evaluation times of a range query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub start_ms: i64,
    pub end_ms: i64,
    pub step_ms: i64,
}

impl Grid {
    fn points(self) -> impl Iterator<Item = i64> {
        let step = usize::try_from(self.step_ms.max(1)).unwrap_or(usize::MAX);
        (self.start_ms..=self.end_ms).step_by(step)
    }
}

/// Prometheus' staleness marker: a NaN with this exact bit pattern.
const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

fn is_stale(v: f64) -> bool {
    v.to_bits() == STALE_NAN
}

/// `irate(series[range])` at every point of `grid`.
fn irate(samples: &[(i64, f64)], grid: Grid, range_ms: i64, window: Window) -> Vec<Sample> {
    let live: Vec<(i64, f64)> = samples.iter().copied().filter(|s| !is_stale(s.1)).collect();
    let mut out = Vec::new();
    let mut end = 0; // samples[..end] are at or before t
    for t in grid.points() {
        while end < live.len() && live[end].0 <= t {
            end += 1;
        }
        if end < 2 {
            continue;
        }
        let (last, previous) = (live[end - 1], live[end - 2]);
        if !window.contains(previous.0, t - range_ms) {
            continue;
        }
        let interval = last.0 - previous.0;
        if interval == 0 {
            continue;
        }
        let increase = if last.1 < previous.1 {
            last.1
        } else {
            last.1 - previous.1
        };
        out.push(Sample {
            timestamp_ms: t,
            value: increase / (interval as f64 / 1000.0),
        });
    }
    out
}

/// The instant selector at every point of `grid`.
fn instant(samples: &[(i64, f64)], grid: Grid, lookback_ms: i64, window: Window) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut end = 0;
    for t in grid.points() {
        while end < samples.len() && samples[end].0 <= t {
            end += 1;
        }
        let Some(&(ts, v)) = end.checked_sub(1).and_then(|i| samples.get(i)) else {
            continue;
        };
        if window.contains(ts, t - lookback_ms) && !is_stale(v) {
            out.push(Sample {
                timestamp_ms: t,
                value: v,
            });
        }
    }
    out
}

/// `max by (container, pod)` over per-series results, in the order Prometheus sees the series
/// (sorted by labels).
fn max_by_container_pod(series: Vec<(&Labels, Vec<Sample>)>) -> Vec<RangeSeries> {
    let mut groups: BTreeMap<Labels, Vec<Sample>> = BTreeMap::new();
    let mut ordered = series;
    ordered.sort_by(|a, b| a.0.cmp(b.0));
    for (labels, samples) in ordered {
        let key: Labels = ["container", "pod"]
            .into_iter()
            .filter_map(|k| {
                labels
                    .get(k)
                    .filter(|v| !v.is_empty())
                    .map(|v| (k.to_owned(), v.clone()))
            })
            .collect();
        match groups.get_mut(&key) {
            // Usually one series per container: its points as they are.
            None => {
                groups.insert(key, samples);
            }
            Some(group) => *group = merge_max(std::mem::take(group), samples),
        }
    }
    groups
        .into_iter()
        .filter(|(_, samples)| !samples.is_empty())
        .map(|(labels, samples)| RangeSeries { labels, samples })
        .collect()
}

/// Two time-ordered point lists as one, a timestamp in both holding `max`'s choice: the
/// later series' value when it is greater or the earlier one is NaN (PromQL's `max` rule).
fn merge_max(earlier: Vec<Sample>, later: Vec<Sample>) -> Vec<Sample> {
    let mut out = Vec::with_capacity(earlier.len().max(later.len()));
    let (mut a, mut b) = (earlier.into_iter().peekable(), later.into_iter().peekable());
    while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
        let order = x.timestamp_ms.cmp(&y.timestamp_ms);
        let later_wins = x.value < y.value || x.value.is_nan();
        let pick = match order {
            Ordering::Less => a.next(),
            Ordering::Greater => b.next(),
            Ordering::Equal => {
                let (x, y) = (a.next(), b.next());
                if later_wins { y } else { x }
            }
        };
        out.extend(pick);
    }
    out.extend(a);
    out.extend(b);
    out
}

pub fn max_irate(
    series: &[RawSeries],
    grid: Grid,
    range_ms: i64,
    window: Window,
) -> Vec<RangeSeries> {
    max_by_container_pod(
        series
            .iter()
            .map(|s| (&s.labels, irate(&s.samples, grid, range_ms, window)))
            .collect(),
    )
}

/// `max by (container, pod) (<series>)` over `grid`, with Prometheus' default lookback.
pub fn max_instant(series: &[RawSeries], grid: Grid, window: Window) -> Vec<RangeSeries> {
    max_by_container_pod(
        series
            .iter()
            .map(|s| (&s.labels, instant(&s.samples, grid, LOOKBACK_MS, window)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(pod: &str, container: &str, extra: &str, samples: &[(i64, f64)]) -> RawSeries {
        RawSeries {
            labels: [
                ("__name__", "m"),
                ("pod", pod),
                ("container", container),
                ("id", extra),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            samples: samples.to_vec(),
        }
    }

    fn values(r: &RangeSeries) -> Vec<(i64, f64)> {
        r.samples
            .iter()
            .map(|s| (s.timestamp_ms, s.value))
            .collect()
    }

    const GRID: Grid = Grid {
        start_ms: 60_000,
        end_ms: 300_000,
        step_ms: 60_000,
    };

    #[test]
    fn irate_uses_the_last_two_samples_in_the_window() {
        // Scrapes every 30 s; a counter reset at 150 s; a gap after 200 s.
        let s = series(
            "p",
            "c",
            "",
            &[
                (0, 0.0),
                (30_000, 3.0),
                (60_000, 9.0),
                (90_000, 12.0),
                (120_000, 15.0),
                (150_000, 1.5),
                (180_000, 4.5),
                (200_000, 6.5),
            ],
        );
        let out = max_irate(&[s], GRID, 180_000, Window::Closed);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].labels,
            Labels::from([("container".into(), "c".into()), ("pod".into(), "p".into())])
        );
        assert_eq!(
            values(&out[0]),
            [
                (60_000, 6.0 / 30.0),
                (120_000, 3.0 / 30.0),
                (180_000, 3.0 / 30.0),
                (240_000, 2.0 / 20.0),
                (300_000, 2.0 / 20.0),
            ]
        );
        // 30 s later the previous sample (180 s) is exactly 3 minutes old at 360 s: inside for
        // Prometheus 2, outside for Prometheus 3.
        let edge = Grid {
            start_ms: 380_000,
            end_ms: 380_000,
            step_ms: 60_000,
        };
        let s = series("p", "c", "", &[(200_000, 1.0), (230_000, 4.0)]);
        assert_eq!(
            max_irate(std::slice::from_ref(&s), edge, 180_000, Window::Closed).len(),
            1
        );
        assert!(max_irate(&[s], edge, 180_000, Window::LeftOpen).is_empty());
    }

    #[test]
    fn a_reset_counts_the_new_value_and_stale_markers_are_skipped() {
        let stale = f64::from_bits(STALE_NAN);
        let s = series(
            "p",
            "c",
            "",
            &[(10_000, 100.0), (40_000, 4.0), (50_000, stale)],
        );
        let grid = Grid {
            start_ms: 60_000,
            end_ms: 60_000,
            step_ms: 1,
        };
        let out = max_irate(std::slice::from_ref(&s), grid, 180_000, Window::Closed);
        assert_eq!(values(&out[0]), [(60_000, 4.0 / 30.0)]);
        // The instant selector sees the marker as the newest sample: no value.
        assert!(max_instant(&[s], grid, Window::Closed).is_empty());
    }

    #[test]
    fn instant_selectors_look_back_five_minutes() {
        let s = series("p", "c", "", &[(0, 7.0), (100_000, 8.0)]);
        let grid = Grid {
            start_ms: 0,
            end_ms: 420_000,
            step_ms: 100_000,
        };
        let out = max_instant(&[s], grid, Window::Closed);
        assert_eq!(
            values(&out[0]),
            [
                (0, 7.0),
                (100_000, 8.0),
                (200_000, 8.0),
                (300_000, 8.0),
                (400_000, 8.0)
            ]
        );
    }

    #[test]
    fn max_groups_copies_of_a_container_and_drops_other_labels() {
        let a = series("p", "c", "kubelet", &[(60_000, 1.0), (120_000, 5.0)]);
        let b = series("p", "c", "cadvisor", &[(60_000, 3.0), (120_000, 2.0)]);
        let other = series("q", "c", "kubelet", &[(60_000, 9.0)]);
        let grid = Grid {
            start_ms: 60_000,
            end_ms: 120_000,
            step_ms: 60_000,
        };
        let out = max_instant(&[a, other, b], grid, Window::Closed);
        assert_eq!(out.len(), 2);
        assert_eq!(values(&out[0]), [(60_000, 3.0), (120_000, 5.0)]);
        assert_eq!(out[1].labels["pod"], "q");
    }

    #[test]
    fn merging_keeps_every_timestamp_once_with_max_s_nan_rule() {
        let pts = |v: &[(i64, f64)]| {
            v.iter()
                .map(|&(timestamp_ms, value)| Sample {
                    timestamp_ms,
                    value,
                })
                .collect::<Vec<_>>()
        };
        let merged = merge_max(
            pts(&[(1, f64::NAN), (2, 1.0), (4, 7.0), (5, 1.0)]),
            pts(&[(1, 0.5), (3, 2.0), (4, 6.0), (5, f64::NAN), (6, 0.0)]),
        );
        let got: Vec<(i64, f64)> = merged.iter().map(|s| (s.timestamp_ms, s.value)).collect();
        assert_eq!(
            got,
            [(1, 0.5), (2, 1.0), (3, 2.0), (4, 7.0), (5, 1.0), (6, 0.0)]
        );
        assert!(merge_max(Vec::new(), Vec::new()).is_empty());
    }

    #[test]
    fn versions_choose_the_window() {
        assert_eq!(Window::for_version("2.42.0+ds"), Window::Closed);
        assert_eq!(Window::for_version("v3.1.0"), Window::LeftOpen);
        assert_eq!(Window::for_version("garbage"), Window::Closed);
    }
}
