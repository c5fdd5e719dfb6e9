//! Go's `time.ParseDuration`, for the server timeout flags and keys.

use std::time::Duration;

/// Go's `time.ParseDuration` (`300ms`, `1.5h`, `1h2m3s`, `0`). A negative duration, which Go's
/// HTTP server treats as "no timeout", becomes `Duration::ZERO`.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {s:?}: expected e.g. 30s, 1m30s, 500ms");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, r) = rest.split_at(int_len);
        rest = r;
        let mut frac_part = "";
        if let Some(r) = rest.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            (frac_part, rest) = r.split_at(n);
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (unit, r) = rest.split_at(unit_len);
        rest = r;
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            "" => return Err(format!("invalid duration {s:?}: missing unit")),
            other => return Err(format!("invalid duration {s:?}: unknown unit {other:?}")),
        };
        let int: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        // Enough fraction digits for nanosecond precision of an hour; the rest truncates.
        let frac_digits = &frac_part[..frac_part.len().min(20)];
        let frac = if frac_digits.is_empty() {
            0
        } else {
            let num: u128 = frac_digits.parse().map_err(|_| invalid())?;
            let den = 10u128.pow(u32::try_from(frac_digits.len()).unwrap_or(20));
            num * scale / den
        };
        total = int
            .checked_mul(scale)
            .and_then(|v| v.checked_add(frac))
            .and_then(|v| v.checked_add(total))
            .filter(|v| *v <= i64::MAX as u128)
            .ok_or_else(|| format!("invalid duration {s:?}: out of range"))?;
    }
    if negative {
        return Ok(Duration::ZERO);
    }
    Ok(Duration::from_nanos(
        u64::try_from(total).map_err(|_| invalid())?,
    ))
}
