//! Splitting long range queries and merging the pieces back.
//!
//! Prometheus refuses range queries above 11,000 points per series, and large answers are slow to
//! produce in one piece, so (like Crane) long windows are split into chunks that stay on the same
//! evaluation grid `start + k*step`. Pure functions so the arithmetic is testable without a server.

use std::collections::BTreeMap;

use super::response::{Labels, RangeSeries};

/// Prometheus' own per-query cap on points per series, and Crane's default split size.
pub const DEFAULT_MAX_POINTS: u64 = 11_000;

/// One sub-query of a range query, timestamps in milliseconds, both ends inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub start_ms: i64,
    pub end_ms: i64,
}

/// Plans the chunks of a `[start, end]` range with `step`, each with at most `max_points` points.
///
/// Every chunk starts one step after the previous one ended, so each grid point is evaluated exactly
/// once and chunk borders never produce duplicate timestamps. The last chunk ends at `end` exactly,
/// as an unsplit query would, even if `end` is off the grid. Returns an error for an empty or
/// inverted range or a non-positive step, which Prometheus would reject anyway.
pub fn plan_chunks(
    start_ms: i64,
    end_ms: i64,
    step_ms: i64,
    max_points: u64,
) -> Result<Vec<Chunk>, String> {
    if step_ms <= 0 {
        return Err(format!("step must be positive, got {step_ms}ms"));
    }
    if end_ms < start_ms {
        return Err(format!("end ({end_ms}ms) is before start ({start_ms}ms)"));
    }
    let max_points = i64::try_from(max_points.max(1)).unwrap_or(i64::MAX);
    // Span of one full chunk: max_points points cover (max_points - 1) steps.
    let span = (max_points - 1).saturating_mul(step_ms);
    let mut chunks = Vec::new();
    let mut s = start_ms;
    loop {
        let e = s.saturating_add(span);
        if e >= end_ms {
            chunks.push(Chunk {
                start_ms: s,
                end_ms,
            });
            return Ok(chunks);
        }
        chunks.push(Chunk {
            start_ms: s,
            end_ms: e,
        });
        s = e.saturating_add(step_ms);
        if s > end_ms {
            // `end` sits between the last grid point and the next: nothing left to evaluate.
            return Ok(chunks);
        }
    }
}

/// Number of points an unsplit query would return per series.
pub fn point_count(start_ms: i64, end_ms: i64, step_ms: i64) -> u64 {
    if step_ms <= 0 || end_ms < start_ms {
        return 0;
    }
    let n = (i128::from(end_ms) - i128::from(start_ms)) / i128::from(step_ms) + 1;
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Merges the matrices of several chunks into one, per series, in ascending time order.
///
/// A series can be absent from some chunks (it started or stopped in between); it is kept with the
/// samples it has. Should two chunks overlap anyway (a server rounding timestamps differently), the
/// sample from the later chunk wins so each timestamp appears once. Output is sorted by label set
/// so results are deterministic regardless of which chunk finished first.
pub fn merge_chunks(chunks: Vec<Vec<RangeSeries>>) -> Vec<RangeSeries> {
    let mut by_labels: BTreeMap<Labels, BTreeMap<i64, f64>> = BTreeMap::new();
    for chunk in chunks {
        for series in chunk {
            let points = by_labels.entry(series.labels).or_default();
            for s in series.samples {
                points.insert(s.timestamp_ms, s.value);
            }
        }
    }
    by_labels
        .into_iter()
        .map(|(labels, points)| RangeSeries::from_points(labels, points))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::response::Sample;

    fn c(start_ms: i64, end_ms: i64) -> Chunk {
        Chunk { start_ms, end_ms }
    }

    #[test]
    fn small_range_is_one_chunk() {
        assert_eq!(plan_chunks(0, 100, 10, 11), Ok(vec![c(0, 100)]));
        assert_eq!(plan_chunks(5, 5, 10, 11000), Ok(vec![c(5, 5)]));
        assert_eq!(point_count(0, 100, 10), 11);
        assert_eq!(point_count(0, 109, 10), 11);
    }

    #[test]
    fn splits_on_grid_without_overlap() {
        // 21 points, 10 per chunk: 0..90, 100..190, 200..200
        let chunks = plan_chunks(0, 200, 10, 10).expect("plan");
        assert_eq!(chunks, vec![c(0, 90), c(100, 190), c(200, 200)]);
        let total: u64 = chunks
            .iter()
            .map(|ch| point_count(ch.start_ms, ch.end_ms, 10))
            .sum();
        assert_eq!(total, point_count(0, 200, 10));
    }

    #[test]
    fn off_grid_end_is_kept() {
        assert_eq!(
            plan_chunks(0, 205, 10, 10),
            Ok(vec![c(0, 90), c(100, 190), c(200, 205)])
        );
        // The next grid point after 190 is 200 > 195: nothing more to ask for.
        assert_eq!(plan_chunks(0, 195, 10, 10), Ok(vec![c(0, 90), c(100, 190)]));
    }

    #[test]
    fn every_chunk_respects_max_points() {
        for (start, end, step, max) in [
            (0i64, 86_400_000i64 * 30, 60_000i64, 11_000u64),
            (17, 1_000_017, 7, 1000),
            (0, 999, 1, 1),
            (0, 10, 1, 2),
        ] {
            let chunks = plan_chunks(start, end, step, max).expect("plan");
            assert_eq!(chunks.first().map(|c| c.start_ms), Some(start));
            assert_eq!(chunks.last().map(|c| c.end_ms), Some(end));
            for w in chunks.windows(2) {
                assert_eq!(w[1].start_ms, w[0].end_ms + step);
            }
            for ch in &chunks {
                assert!(point_count(ch.start_ms, ch.end_ms, step) <= max);
            }
        }
    }

    #[test]
    fn rejects_bad_ranges() {
        assert!(plan_chunks(0, 10, 0, 10).is_err());
        assert!(plan_chunks(0, 10, -1, 10).is_err());
        assert!(plan_chunks(10, 0, 1, 10).is_err());
        // max_points 0 is treated as 1 instead of looping forever.
        assert_eq!(plan_chunks(0, 2, 1, 0), Ok(vec![c(0, 0), c(1, 1), c(2, 2)]));
        // Extreme values saturate instead of overflowing.
        assert!(plan_chunks(i64::MAX - 5, i64::MAX, 1, u64::MAX).is_ok());
    }

    fn series(l: &str, pts: &[(i64, f64)]) -> RangeSeries {
        RangeSeries {
            labels: [("pod".to_string(), l.to_string())].into_iter().collect(),
            samples: pts
                .iter()
                .map(|&(timestamp_ms, value)| Sample {
                    timestamp_ms,
                    value,
                })
                .collect(),
        }
    }

    #[test]
    fn merge_orders_and_dedups() {
        let merged = merge_chunks(vec![
            vec![series("b", &[(20, 2.0), (30, 3.0)])],
            vec![
                series("a", &[(0, 0.0), (10, 1.0)]),
                series("b", &[(0, 0.0), (10, 1.0), (20, 9.0)]),
            ],
            vec![series("a", &[(40, 4.0)])],
        ]);
        assert_eq!(
            merged,
            vec![
                series("a", &[(0, 0.0), (10, 1.0), (40, 4.0)]),
                series("b", &[(0, 0.0), (10, 1.0), (20, 9.0), (30, 3.0)]),
            ]
        );
        assert!(merge_chunks(vec![]).is_empty());
    }
}
