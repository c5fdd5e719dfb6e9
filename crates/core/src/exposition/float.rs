//! Sample values formatted byte-for-byte like kube-state-metrics.
//!
//! Dashboards and recording rules do not care, but diffing a ferrocrane scrape
//! against a kube-state-metrics scrape (the migration check we tell users to
//! run) only works if every value is spelled the same way. kube-state-metrics
//! special-cases 1, 0 and -1 and otherwise uses Go's
//! `strconv.FormatFloat(v, 'g', -1, 64)`, whose layout rules differ from Rust's
//! `Display` (Rust never switches to exponent form, Go does from 1e+06 on).

/// Appends `v` to `buf` exactly as kube-state-metrics writes a sample value.
pub fn write_float(buf: &mut Vec<u8>, v: f64) {
    if v == 1.0 {
        buf.push(b'1');
    } else if v == 0.0 {
        // Also -0.0: Go's `f == 0` is true for negative zero, so ksm writes "0".
        buf.push(b'0');
    } else if v == -1.0 {
        buf.extend_from_slice(b"-1");
    } else if v.is_nan() {
        buf.extend_from_slice(b"NaN");
    } else if v == f64::INFINITY {
        buf.extend_from_slice(b"+Inf");
    } else if v == f64::NEG_INFINITY {
        buf.extend_from_slice(b"-Inf");
    } else {
        write_go_g_shortest(buf, v);
    }
}

/// Returns `v` formatted as [`write_float`] would write it.
pub fn format_float(v: f64) -> String {
    let mut buf = Vec::with_capacity(24);
    write_float(&mut buf, v);
    // Only ASCII is ever written.
    String::from_utf8_lossy(&buf).into_owned()
}

/// Go's `'g'` verb with shortest precision, for finite non-zero values.
///
/// Go picks the shortest digit string that round-trips and, when two are
/// equally close, the even one. Ryu makes the same choice (Rust's own `{:e}`
/// rounds such ties up, e.g. for 718536540172060.25), so the digits come from
/// ryu and only the layout is rebuilt: Go uses exponent form when the decimal
/// exponent is < -4 or >= 6 (the fixed "precision 6" rule for shortest
/// formatting) and writes the exponent with a sign and at least two digits.
fn write_go_g_shortest(buf: &mut Vec<u8>, v: f64) {
    use std::io::Write as _;
    let mut ryu_buf = ryu::Buffer::new();
    let text = ryu_buf.format_finite(v.abs()).as_bytes();
    // ryu writes either `123.45` or `1.2345e-7` / `1e21`; normalise to a digit
    // string plus the decimal exponent of its first digit.
    let (mantissa, exp_part) = match text.iter().position(|&b| b == b'e' || b == b'E') {
        Some(p) => (&text[..p], &text[p + 1..]),
        None => (text, &b""[..]),
    };
    let sci_exp: i32 = std::str::from_utf8(exp_part)
        .ok()
        .filter(|s| !s.is_empty())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // A shortest f64 rendering has at most 17 significant digits and no leading zeros.
    let int_len = i32::try_from(
        mantissa
            .iter()
            .position(|&b| b == b'.')
            .unwrap_or(mantissa.len()),
    )
    .unwrap_or(i32::MAX);
    let mut digits = [0u8; 32];
    let mut nd = 0;
    // position of the decimal point relative to the first kept digit
    let mut dp = int_len + sci_exp;
    for &b in mantissa {
        if !b.is_ascii_digit() {
            continue;
        }
        if nd == 0 && b == b'0' {
            dp -= 1;
            continue;
        }
        if nd < digits.len() {
            digits[nd] = b;
            nd += 1;
        }
    }
    while nd > 1 && digits[nd - 1] == b'0' {
        nd -= 1;
    }
    if nd == 0 {
        buf.push(b'0');
        return;
    }
    let digits = &digits[..nd];
    let exp = dp - 1;

    if v.is_sign_negative() {
        buf.push(b'-');
    }
    if !(-4..6).contains(&exp) {
        buf.push(digits[0]);
        if nd > 1 {
            buf.push(b'.');
            buf.extend_from_slice(&digits[1..]);
        }
        buf.push(b'e');
        buf.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            buf.push(b'0');
        }
        let _ = write!(buf, "{a}");
    } else {
        // Decimal point position: digits[..dp] are the integer part.
        let dp = exp + 1;
        if dp <= 0 {
            buf.extend_from_slice(b"0.");
            buf.extend(std::iter::repeat_n(b'0', (-dp) as usize));
            buf.extend_from_slice(digits);
        } else {
            let dp = dp as usize;
            if nd <= dp {
                buf.extend_from_slice(digits);
                buf.extend(std::iter::repeat_n(b'0', dp - nd));
            } else {
                buf.extend_from_slice(&digits[..dp]);
                buf.push(b'.');
                buf.extend_from_slice(&digits[dp..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn literal_special_values() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(0.0), "0");
        assert_eq!(format_float(-0.0), "0");
        assert_eq!(format_float(-1.0), "-1");
        assert_eq!(format_float(f64::NAN), "NaN");
        assert_eq!(format_float(f64::INFINITY), "+Inf");
        assert_eq!(format_float(f64::NEG_INFINITY), "-Inf");
    }

    #[test]
    fn brief_vectors() {
        for (v, want) in [
            (1501569018.0, "1.501569018e+09"),
            (0.5, "0.5"),
            (100.0, "100"),
            (1e21, "1e+21"),
            (1e-05, "1e-05"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (999999.0, "999999"),
            (0.0001, "0.0001"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5, "-2.5"),
            (1e100, "1e+100"),
            // 718536540172060.25, an exact tie between two shortest candidates:
            // Go takes the even one.
            (
                f64::from_bits(0x4304_6c0a_99e1_78e2),
                "7.185365401720602e+14",
            ),
        ] {
            assert_eq!(format_float(v), want, "{v:?}");
        }
    }

    /// Vectors produced by Go 1.26 `strconv.FormatFloat(v, 'g', -1, 64)` over
    /// random bit patterns, integers scaled by powers of ten and normal values.
    #[test]
    fn matches_go_strconv_vectors() {
        let data = include_str!("testdata/go_format_float.txt");
        let mut n = 0;
        for line in data.lines() {
            let (bits, want) = line.split_once(' ').expect("vector line");
            let v = f64::from_bits(u64::from_str_radix(bits, 16).expect("hex bits"));
            if v == 1.0 || v == 0.0 || v == -1.0 {
                continue;
            }
            assert_eq!(format_float(v), want, "bits {bits}");
            n += 1;
        }
        assert!(n > 2500);
    }

    proptest! {
        #[test]
        fn round_trips(v in any::<f64>()) {
            let s = format_float(v);
            let back: f64 = match s.as_str() {
                "NaN" => f64::NAN,
                "+Inf" => f64::INFINITY,
                other => other.parse().expect("parsable"),
            };
            if v.is_nan() {
                prop_assert!(back.is_nan());
            } else {
                prop_assert_eq!(back, v);
            }
        }
    }
}
