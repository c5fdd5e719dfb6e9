//! Kubernetes quantities as apimachinery writes them (`resource.Quantity`'s canonical form), for
//! values upstream builds with `resource.NewMilliQuantity(int64(v*1000), format)`: CPU and
//! custom-metric values in DecimalSI, memory in BinarySI.
//!
//! Canonical form, as apimachinery's `CanonicalizeBytes`: zero is `0`; DecimalSI strips trailing
//! zeros and writes the power of ten as the nearest SI suffix at or below it (a multiple of 3:
//! `1500m`, `2`, `12k`); BinarySI is used only for whole numbers of magnitude 1024 or more and
//! divides by 1024 while that is exact (`1234Ki`, `1000000`), everything else falls back to
//! DecimalSI (`512`, `1234500m`) so no precision is lost.

/// The suffix family a quantity is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityFormat {
    /// Powers of ten: `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`.
    DecimalSi,
    /// Powers of 1024: `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.
    BinarySi,
}

/// `value` as Go's `int64(value * 1000.0)`: truncation toward zero. NaN becomes 0 and
/// out-of-range values saturate (Go's result there is platform-defined).
pub fn milli_of(value: f64) -> i64 {
    (value * 1000.0) as i64
}

/// The canonical text of a quantity of `milli` thousandths in `format`.
pub fn format_milli(milli: i64, format: QuantityFormat) -> String {
    if milli == 0 {
        return "0".to_owned();
    }
    let milli = i128::from(milli);
    if format == QuantityFormat::BinarySi && milli.abs() >= 1024 * 1000 && milli % 1000 == 0 {
        let mut amount = milli / 1000;
        let mut exp = 0;
        while exp < 6 && amount % 1024 == 0 {
            amount /= 1024;
            exp += 1;
        }
        return format!("{amount}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp]);
    }
    // DecimalSI: strip factors of ten, then step back down to a multiple of three.
    let mut amount = milli;
    let mut exp: i32 = -3;
    while amount % 10 == 0 {
        amount /= 10;
        exp += 1;
    }
    match exp.rem_euclid(3) {
        1 => {
            amount *= 10;
            exp -= 1;
        }
        2 => {
            amount *= 100;
            exp -= 2;
        }
        _ => {}
    }
    // |milli| < 2^63 keeps exp within -3..=15, so the table always has the suffix.
    let suffix = match exp {
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        _ => "P",
    };
    format!("{amount}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use QuantityFormat::{BinarySi, DecimalSi};

    #[test]
    fn decimal_si_like_apimachinery() {
        for (milli, want) in [
            (0, "0"),
            (1, "1m"),
            (250, "250m"),
            (1000, "1"),
            (1500, "1500m"),
            (2000, "2"),
            (12_000, "12"),
            (120_000, "120"),
            (1_200_000, "1200"),
            (12_000_000, "12k"),
            (1_000_000_000, "1M"),
            (1_234_567, "1234567m"),
            (-500, "-500m"),
            (i64::MAX, "9223372036854775807m"),
            (9_000_000_000_000_000_000, "9P"),
        ] {
            assert_eq!(format_milli(milli, DecimalSi), want, "{milli}");
        }
    }

    #[test]
    fn binary_si_like_apimachinery() {
        for (milli, want) in [
            (0, "0"),
            (512_000, "512"),
            (1_023_000, "1023"),
            (1_024_000, "1Ki"),
            (1_263_616_000, "1234Ki"),
            (1_048_576_000, "1Mi"),
            (1_000_000_000, "1000000"),
            (1_536_000, "1536"),
            (1_234_500, "1234500m"),
            (512_500, "512500m"),
            (1_073_741_824_000, "1Gi"),
        ] {
            assert_eq!(format_milli(milli, BinarySi), want, "{milli}");
        }
    }

    #[test]
    fn milli_truncates_like_go() {
        assert_eq!(milli_of(0.2505), 250);
        assert_eq!(milli_of(1.9999), 1999);
        assert_eq!(milli_of(f64::NAN), 0);
        assert_eq!(milli_of(1e30), i64::MAX);
    }
}
