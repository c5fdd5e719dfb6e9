//! Sample values as the milli amounts prometheus-adapter builds quantities from:
//! `resource.NewMilliQuantity(int64(v*1000), format)`. The canonical text of those is
//! core's [`ferrocrane_core::quantity::format_milli`].

/// `value` as Go's `int64(value * 1000.0)`: truncation toward zero. NaN becomes 0 and
/// out-of-range values saturate (Go's result there is platform-defined).
#[allow(
    clippy::cast_possible_truncation,
    reason = "Go's int64(float64) truncation is the contract; Rust's cast saturates where Go's is undefined"
)]
pub fn milli_of(value: f64) -> i64 {
    (value * 1000.0) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milli_truncates_like_go() {
        assert_eq!(milli_of(0.2505), 250);
        assert_eq!(milli_of(1.9999), 1999);
        assert_eq!(milli_of(f64::NAN), 0);
        assert_eq!(milli_of(1e30), i64::MAX);
    }
}
