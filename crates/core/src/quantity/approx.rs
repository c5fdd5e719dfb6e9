//! apimachinery's `ParseQuantity(s).AsApproximateFloat64()`, bit for bit.
//!
//! The float depends on how upstream stores the parsed number, not only on its value:
//! `"0.3"` is the int64 `3` at scale -1, so the float is `3 * math.Pow10(-1)` =
//! 0.30000000000000004, while `"300m"` is `300 * math.Pow10(-3)` = 0.3. kube-state-metrics
//! publishes these floats, so both representations and Go's `math.Pow10` are reproduced.

use super::QuantityError;
use super::amount::{Amount, DecAmount, amount};
use super::syntax::split;

/// `resource.ParseQuantity(input)` then `AsApproximateFloat64()`. Like `ParseQuantity`,
/// surrounding whitespace is an error.
pub fn approximate_f64(input: &str) -> Result<f64, QuantityError> {
    let err = |reason| QuantityError::new(input, reason);
    let stored = split(input).and_then(|parts| amount(&parts)).map_err(err)?;
    Ok(match stored {
        Amount::Int64 { value, scale } => times_pow10(value as f64, scale),
        Amount::Dec { negative, amount } => {
            let sign = if negative { -1.0 } else { 1.0 };
            match amount {
                // A zero big.Int has no sign; with a large scale this is 0 × +Inf, NaN,
                // upstream too.
                DecAmount::Zero { scale } => times_pow10(0.0, -scale),
                DecAmount::CappedAtMaxInt64 => sign * i64::MAX as f64,
                DecAmount::Rounded(d) => times_pow10(sign * d.nanos_as_f64(), -9),
            }
        }
    })
}

/// `base * math.Pow10(exponent)`, skipping the product for exponent 0 as upstream does.
fn times_pow10(base: f64, exponent: i64) -> f64 {
    if exponent == 0 {
        base
    } else {
        base * go_pow10(exponent)
    }
}

/// Go's `math.Pow10`: a product (or quotient) of two table entries, which is not always
/// the f64 nearest to 10^n, and upstream's floats carry exactly that rounding.
fn go_pow10(n: i64) -> f64 {
    const SMALL: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POSITIVE_32S: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEGATIVE_32S: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    // The ranges keep both indexes inside their tables.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "each index is below 32 by the match arm's range"
    )]
    match n {
        0..=308 => POSITIVE_32S[(n / 32) as usize] * SMALL[(n % 32) as usize],
        -323..=-1 => NEGATIVE_32S[(-n / 32) as usize] / SMALL[(-n % 32) as usize],
        n if n > 0 => f64::INFINITY,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The assertions below came with the two copies this replaced, which returned an
    /// Option: kube-state-metrics' HPA families and its custom-resource values.
    fn go_quantity_approx_f64(s: &str) -> Option<f64> {
        approximate_f64(s).ok()
    }

    #[test]
    fn matches_apimachinery_representation() {
        let approximate_f64 = go_quantity_approx_f64;
        assert_eq!(approximate_f64("0.1"), Some(0.1));
        assert_eq!(approximate_f64("0.3"), Some(0.30000000000000004));
        assert_eq!(approximate_f64("300m"), Some(0.3));
        assert_eq!(approximate_f64("0.05"), Some(0.05));
        assert_eq!(approximate_f64("2"), Some(2.0));
        assert_eq!(approximate_f64("1Ki"), Some(1024.0));
        assert_eq!(approximate_f64("1e-10"), Some(1e-9));
        assert_eq!(
            approximate_f64("1.5Ki"),
            Some(1536000000000.0 * (1.0 / 1e9))
        );
        assert_eq!(approximate_f64("-0.1"), Some(-0.1));
        assert_eq!(approximate_f64("abc"), None);
        assert_eq!(approximate_f64("1x"), None);
    }

    /// Values computed by apimachinery v0.37 `ParseQuantity(s).AsApproximateFloat64()`,
    /// including the float artefacts users see from kube-state-metrics.
    #[test]
    fn quantities_match_apimachinery() {
        // (input, f64 bits) printed by a Go program over apimachinery v0.37.2.
        let cases: &[(&str, u64)] = &[
            ("1", 0x3ff0000000000000),
            ("0.3", 0x3fd3333333333334),
            ("0.1", 0x3fb999999999999a),
            ("1.5", 0x3ff8000000000000),
            ("100m", 0x3fb999999999999a),
            ("1k", 0x408f400000000000),
            ("1e3", 0x408f400000000000),
            ("1E3", 0x408f400000000000),
            ("1.5Gi", 0x41d8000000000000),
            ("12345Gi", 0x42a81c8000000000),
            ("0.5Ki", 0x4080000000000000),
            ("-2Mi", 0xc140000000000000),
            ("1n", 0x3e112e0be826d695),
            ("0.1n", 0x3e112e0be826d695),
            (".5", 0x3fe0000000000000),
            ("5.", 0x4014000000000000),
            (".", 0x0),
            ("+", 0x0),
            ("-", 0x0),
            ("k", 0x0),
            ("000", 0x0),
            ("-0", 0x0),
            ("123456789012345678901234", 0x44ba249b1f10a06d),
            ("8Ei", 0x43e0000000000000),
            ("262144k", 0x41af400000000000),
            ("0.7", 0x3fe6666666666667),
            ("3.3333333333333333333", 0x400aaaaaaac192bb),
            ("1.1Mi", 0x413199999999999a),
            ("99999999999999999999Ki", 0x43e0000000000000),
            ("1e-3", 0x3f50624dd2f1a9fc),
            ("2.5e-10", 0x3e112e0be826d695),
        ];
        for &(s, want) in cases {
            let got = go_quantity_approx_f64(s);
            assert_eq!(got.map(f64::to_bits), Some(want), "{s}: {got:?}");
        }
        for bad in ["", "1.2.3", "5Gb", "1e", "Pending", "1 k", "e1x"] {
            assert_eq!(go_quantity_approx_f64(bad), None, "{bad}");
        }
    }

    #[test]
    fn extreme_exponents_cost_nothing_and_follow_upstream() {
        // Upstream's arbitrary-precision path: the digits times 10^2147483656 overflow a
        // float, without the digits ever being written out.
        assert_eq!(
            approximate_f64("1234567890123456789e2147483647"),
            Ok(f64::INFINITY)
        );
        // The int64 path: 1 × math.Pow10(400).
        assert_eq!(approximate_f64("1e400"), Ok(f64::INFINITY));
        // Rounded up to one nano.
        assert_eq!(approximate_f64("1e-2147483648"), Ok(1e-9));
        // 0 × math.Pow10(400) is NaN upstream.
        assert!(approximate_f64("0e400").is_ok_and(f64::is_nan));
        assert!(approximate_f64("1e2147483648").is_err());
    }

    #[test]
    fn pow10_is_gos() {
        assert_eq!(go_pow10(0), 1.0);
        assert_eq!(go_pow10(-9), 1.0 / 1e9);
        assert_eq!(go_pow10(-40), 1e-32 / 1e8);
        assert_eq!(go_pow10(308), 1e288 * 1e20);
        assert_eq!(go_pow10(309), f64::INFINITY);
        assert_eq!(go_pow10(-324), 0.0);
    }
}
