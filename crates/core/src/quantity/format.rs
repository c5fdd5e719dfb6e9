//! apimachinery's canonical text (`Quantity.String()`) of the quantities services build
//! from integers: `resource.NewQuantity(value, format)` and
//! `resource.NewMilliQuantity(milli, format)`.
//!
//! Zero is `0`. DecimalSI drops trailing zeros and writes the power of ten as the SI
//! suffix at or below it, so the exponent is a multiple of three (`1500m`, `2`, `12k`).
//! BinarySI is only used for whole numbers of magnitude 1024 or more, divided by 1024
//! while that is exact (`1234Ki`, `1000000`); everything else is written as DecimalSI so
//! no precision is lost (`512`, `1k`, `1234500m`).

/// The suffix family a quantity is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityFormat {
    /// Powers of ten: `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`.
    DecimalSi,
    /// Powers of 1024: `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.
    BinarySi,
}

/// The canonical text of `NewMilliQuantity(milli, format)`: `milli` thousandths.
pub fn format_milli(milli: i64, format: QuantityFormat) -> String {
    canonical(milli, Unit::Milli, format)
}

/// The canonical text of `NewQuantity(value, format)`: `value` whole units.
pub fn format_value(value: i64, format: QuantityFormat) -> String {
    canonical(value, Unit::Whole, format)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Whole,
    Milli,
}

fn canonical(amount: i64, unit: Unit, format: QuantityFormat) -> String {
    if amount == 0 {
        return "0".to_owned();
    }
    if format == QuantityFormat::BinarySi
        && let Some(whole) = binary_candidate(amount, unit)
    {
        let (amount, powers) = strip_factor(whole, 1024);
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .get(powers as usize)
            .copied()
            .unwrap_or_default();
        return format!("{amount}{suffix}");
    }
    // Stripping factors of 1000 (rather than upstream's factors of ten, then multiplying
    // back up to a multiple of three) gives the same digits without a multiplication.
    let (amount, thousands) = strip_factor(amount, 1000);
    let exponent = thousands as i32 * 3 - if unit == Unit::Milli { 3 } else { 0 };
    // An i64 has at most six factors of 1000, so the exponent is within -3..=18.
    let suffix = match exponent {
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    };
    format!("{amount}{suffix}")
}

/// The whole number a BinarySI amount is written from, or None when upstream falls back
/// to DecimalSI: a magnitude below 1024, or a fraction.
fn binary_candidate(amount: i64, unit: Unit) -> Option<i64> {
    let whole = match unit {
        Unit::Whole => amount,
        Unit::Milli if amount % 1000 == 0 => amount / 1000,
        Unit::Milli => return None,
    };
    (whole.unsigned_abs() >= 1024).then_some(whole)
}

/// `amount` without its factors of `factor`, and how many there were. Upstream negates
/// a negative amount first, which leaves `MinInt64` negative and so unreduced; that is
/// kept, so `NewQuantity(math.MinInt64, BinarySI)` is written in full as upstream does.
fn strip_factor(amount: i64, factor: i64) -> (i64, u32) {
    let Some(mut magnitude) = amount.checked_abs() else {
        return (amount, 0);
    };
    let mut times = 0;
    while magnitude >= factor && magnitude % factor == 0 {
        magnitude /= factor;
        times += 1;
    }
    (if amount < 0 { -magnitude } else { magnitude }, times)
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

    /// Crane's recommendations: CPU as `NewMilliQuantity(millis, DecimalSI)`, memory as
    /// `NewQuantity(bytes, BinarySI)`.
    #[test]
    fn quantities_print_like_apimachinery() {
        let format_millicores = |m| format_milli(m, DecimalSi);
        let format_bytes = |b| format_value(b, BinarySi);
        assert_eq!(format_millicores(0), "0");
        assert_eq!(format_millicores(345), "345m");
        assert_eq!(format_millicores(2000), "2");
        assert_eq!(format_millicores(1500), "1500m");
        assert_eq!(format_millicores(2_000_000), "2k");
        assert_eq!(format_bytes(0), "0");
        // Below 1024 upstream writes DecimalSI, and 1000 is 1k there (craned's copy
        // printed "1000").
        assert_eq!(format_bytes(1000), "1k");
        assert_eq!(format_bytes(1023), "1023");
        assert_eq!(format_bytes(120_586_240), "115Mi");
        assert_eq!(format_bytes(120_586_240 + 1024), "117761Ki");
        assert_eq!(format_bytes(1 << 30), "1Gi");
        assert_eq!(format_bytes(536_870_912), "512Mi");
        assert_eq!(format_bytes(1_288_490_189), "1288490189");
    }

    #[test]
    fn extremes_like_apimachinery() {
        assert_eq!(format_value(i64::MAX, DecimalSi), "9223372036854775807");
        assert_eq!(format_value(9_000_000_000_000_000_000, DecimalSi), "9E");
        assert_eq!(format_value(-(1 << 62), BinarySi), "-4Ei");
        assert_eq!(format_value(i64::MIN, BinarySi), "-9223372036854775808");
        assert_eq!(format_milli(i64::MIN, BinarySi), "-9223372036854775808m");
        assert_eq!(format_value(-1024, BinarySi), "-1Ki");
        assert_eq!(format_value(-1000, BinarySi), "-1k");
    }
}
