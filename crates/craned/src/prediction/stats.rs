//! The two order statistics Crane's Replicas, HPA, IdleNode and Service recommenders use, from
//! `github.com/montanaflynn/stats` v0.6.6, reproduced exactly (they are not the textbook ones).

/// `stats.Percentile(values, percent)` with `percent` in (0, 100]: sort; `index = percent/100 ×
/// n`; a whole index picks `sorted[index-1]`; otherwise, if `index > 1`, the mean of
/// `sorted[trunc(index)-1]` and `sorted[trunc(index)]`. One value is returned as is. `None` where
/// the Go function errors (empty input, percent out of range, index ≤ 1). Sorts `values` in place
/// (the caller's scratch buffer: no allocation here).
#[allow(
    clippy::cast_possible_truncation,
    reason = "the index is at most n (percent <= 100), a usize"
)]
pub fn percentile(values: &mut [f64], percent: f64) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    if n == 1 {
        return Some(values[0]);
    }
    if !(percent > 0.0 && percent <= 100.0) {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    let index = (percent / 100.0) * n as f64;
    if index == index.trunc() {
        let i = index as usize;
        Some(values[i - 1])
    } else if index > 1.0 {
        let i = index as usize;
        Some((values[i - 1] + values[i]) / 2.0)
    } else {
        None
    }
}

/// `stats.Median`: the middle value, or the mean of the two middle values. Sorts in place.
pub fn median(values: &mut [f64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    if n.is_multiple_of(2) {
        Some((values[n / 2 - 1] + values[n / 2]) / 2.0)
    } else {
        Some(values[n / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_follows_montanaflynn() {
        // index 0.95*20 = 19 (whole) → sorted[18].
        let mut v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut v, 95.0), Some(19.0));
        // index 0.95*10 = 9.5 → mean(sorted[8], sorted[9]).
        let mut v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&mut v, 95.0), Some(9.5));
        // index 0.5*3 = 1.5 → mean(sorted[0], sorted[1]).
        assert_eq!(percentile(&mut [3.0, 1.0, 2.0], 50.0), Some(1.5));
        assert_eq!(percentile(&mut [7.0], 95.0), Some(7.0));
        assert_eq!(percentile(&mut [], 95.0), None);
        assert_eq!(percentile(&mut [1.0, 2.0], 0.0), None);
        // index 0.3*3 = 0.9 ≤ 1 → error in Go.
        assert_eq!(percentile(&mut [1.0, 2.0, 3.0], 30.0), None);
        assert_eq!(percentile(&mut [1.0, 2.0], 100.0), Some(2.0));
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
