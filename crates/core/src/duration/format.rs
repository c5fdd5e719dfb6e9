//! `Duration.String()`: `72h3m0.5s`, `1.5ms`, `-7ns`, `0s`.

use std::fmt::{self, Write as _};

const MICROSECOND: u64 = 1_000;
const MILLISECOND: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
const MINUTE: u64 = 60 * SECOND;

/// Writes `nanos` as Go does.
pub(super) fn write_go(f: &mut fmt::Formatter<'_>, nanos: i64) -> fmt::Result {
    let magnitude = nanos.unsigned_abs();
    if magnitude == 0 {
        return f.write_str("0s");
    }
    if nanos < 0 {
        f.write_char('-')?;
    }
    // Under a second: the largest unit that leaves a non-zero integer part, with a fraction.
    if magnitude < SECOND {
        let (fraction_digits, suffix) = if magnitude < MICROSECOND {
            (0, "ns")
        } else if magnitude < MILLISECOND {
            (3, "\u{b5}s")
        } else {
            (6, "ms")
        };
        write_decimal(f, magnitude, fraction_digits)?;
        return f.write_str(suffix);
    }
    // Hours, minutes, seconds; Go stops at hours because days differ in length. Minutes are
    // written whenever hours are, even when zero (`1h0m0s`).
    let minutes = magnitude / MINUTE;
    if minutes >= 60 {
        write!(f, "{}h", minutes / 60)?;
    }
    if minutes > 0 {
        write!(f, "{}m", minutes % 60)?;
    }
    write_decimal(f, magnitude % MINUTE, 9)?;
    f.write_char('s')
}

/// `value / 10^fraction_digits` in decimal: the fraction without trailing zeros, and no point
/// at all when it is zero.
fn write_decimal(f: &mut fmt::Formatter<'_>, value: u64, fraction_digits: u32) -> fmt::Result {
    let scale = 10u64.pow(fraction_digits);
    write!(f, "{}", value / scale)?;
    let mut fraction = value % scale;
    if fraction == 0 {
        return Ok(());
    }
    let mut width = fraction_digits as usize;
    while fraction.is_multiple_of(10) {
        fraction /= 10;
        width -= 1;
    }
    write!(f, ".{fraction:0width$}")
}
