//! The parsers and the formatter that `GoDuration` replaced, frozen as they were, so the
//! property tests can show the new owner agrees with each on the inputs its callers gave it.
//! Only tests use them; nothing here is maintained.

use std::time::Duration;

/// crates/ksm/src/options.rs `parse_go_duration` (server timeouts; a negative value became zero).
pub fn ksm_options(s: &str) -> Result<Duration, String> {
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

/// crates/ksm/src/families/cronjob/schedule.rs `parse_go_duration` (`@every`).
pub fn ksm_cronjob(s: &str) -> Result<i64, ()> {
    const LIMIT: u64 = 1 << 63;
    let mut s = s.as_bytes();
    let mut neg = false;
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(());
        }
        // Leading integer.
        let mut v: u64 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            if v > LIMIT / 10 {
                return Err(());
            }
            v = v * 10 + u64::from(s[i] - b'0');
            if v > LIMIT {
                return Err(());
            }
            i += 1;
        }
        let pre = i > 0;
        s = &s[i..];
        // Fraction.
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let mut i = 0;
            let mut overflow = false;
            while i < s.len() && s[i].is_ascii_digit() {
                if !overflow {
                    if f > (LIMIT - 1) / 10 {
                        overflow = true;
                    } else {
                        let y = f * 10 + u64::from(s[i] - b'0');
                        if y > LIMIT {
                            overflow = true;
                        } else {
                            f = y;
                            scale *= 10.0;
                        }
                    }
                }
                i += 1;
            }
            post = i > 0;
            s = &s[i..];
        }
        if !pre && !post {
            return Err(());
        }
        let i = s
            .iter()
            .position(|&c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if i == 0 {
            return Err(());
        }
        let unit: u64 = match &s[..i] {
            b"ns" => 1,
            b"us" | [0xc2, 0xb5, b's'] | [0xce, 0xbc, b's'] => 1_000, // us, µs (U+00B5), μs (U+03BC)
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => return Err(()),
        };
        s = &s[i..];
        if v > LIMIT / unit {
            return Err(());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(());
            }
        }
        d += v;
        if d > LIMIT {
            return Err(());
        }
    }
    if neg {
        return Ok((d as i64).wrapping_neg());
    }
    if d > LIMIT - 1 {
        return Err(());
    }
    Ok(d as i64)
}

/// crates/craned/src/recommender/config.rs `parse_go_duration` in seconds, as
/// `parse_duration_secs` truncated it.
pub fn craned_whole_seconds(s: &str) -> Option<i64> {
    craned_seconds(s).map(|f| f.trunc() as i64)
}

fn craned_seconds(s: &str) -> Option<f64> {
    let (neg, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(num_end);
        if num.is_empty() || num == "." {
            return None;
        }
        let value: f64 = num.parse().ok()?;
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = tail;
    }
    Some(if neg { -total } else { total })
}

/// crates/adapter/src/resource_metrics/model.rs `go_duration` (metrics.k8s.io `window`).
pub fn adapter_format(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    // Below one second Go picks the largest unit that keeps an integer part.
    let fraction = |value: u128, unit: u128| -> String {
        let int = value / unit;
        let frac = value % unit;
        if frac == 0 {
            return int.to_string();
        }
        let width = unit.ilog10() as usize;
        let digits = format!("{frac:0width$}");
        format!("{int}.{}", digits.trim_end_matches('0'))
    };
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", fraction(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", fraction(nanos, 1_000_000));
    }
    let total_secs = nanos / 1_000_000_000;
    let sub = nanos % 1_000_000_000;
    let hours = total_secs / 3600;
    let minutes = (total_secs % 3600) / 60;
    let seconds = fraction((total_secs % 60) * 1_000_000_000 + sub, 1_000_000_000);
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}
