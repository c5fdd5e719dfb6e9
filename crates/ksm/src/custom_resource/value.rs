//! Values of a custom object turned into sample values and label values, as
//! kube-state-metrics v2.20 does it.
//!
//! Strings are tried in upstream's order: `true`/`yes` → 1 and `false`/`no`/`unknown`
//! → 0 (any case), then an RFC 3339 time (→ Unix seconds), then a Kubernetes quantity
//! (→ apimachinery's `AsApproximateFloat64`, reproduced bit for bit: `"0.3"` is
//! 0.30000000000000004 upstream, and here), then an integer percentage (`"50%"` →
//! 0.5), then a plain float.

use ferrocrane_core::quantity::approximate_f64;

use crate::calendar::{days_from_civil, days_in_month};
use serde_json::Value;

/// Why a value is not a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("expected number but found nil value")]
    Nil,
    #[error("expected number but was {0}")]
    NotNumber(String),
    #[error("strconv.ParseFloat: parsing {0:?}: invalid syntax")]
    Syntax(String),
}

/// Upstream's `toFloat64`. `None` (and JSON null) is 0 with `nil_is_zero`, else an error.
pub fn to_float64(value: Option<&Value>, nil_is_zero: bool) -> Result<f64, ValueError> {
    match value {
        None | Some(Value::Null) => {
            if nil_is_zero {
                Ok(0.0)
            } else {
                Err(ValueError::Nil)
            }
        }
        Some(Value::Bool(b)) => Ok(if *b { 1.0 } else { 0.0 }),
        Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or(f64::NAN)),
        Some(Value::String(s)) => string_to_float64(s),
        Some(other) => Err(ValueError::NotNumber(go_format_value(other))),
    }
}

fn string_to_float64(s: &str) -> Result<f64, ValueError> {
    let lower = s.to_lowercase();
    match lower.as_str() {
        "true" | "yes" => return Ok(1.0),
        "false" | "no" | "unknown" => return Ok(0.0),
        _ => {}
    }
    if let Some(secs) = parse_rfc3339_unix(s) {
        return Ok(secs as f64);
    }
    if let Ok(v) = approximate_f64(s) {
        return Ok(v);
    }
    if let Some(digits) = s.strip_suffix('%')
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        return digits
            .parse::<f64>()
            .map(|v| v / 100.0)
            .map_err(|_| ValueError::Syntax(digits.to_string()));
    }
    go_parse_float(s).ok_or_else(|| ValueError::Syntax(s.to_string()))
}

/// Go's `strconv.ParseFloat(s, 64)` for what can still reach it after the quantity
/// parser (which takes every plain decimal): infinities and NaN, digits separated by
/// underscores (`1_000`), and hexadecimal floats (`0x1p-2`, whose `p` exponent Go requires).
/// Out-of-range values are reported as errors, as Go reports them with `ErrRange`.
fn go_parse_float(s: &str) -> Option<f64> {
    let (negative, unsigned) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = unsigned.to_ascii_lowercase();
    let magnitude = match lower.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => return Some(f64::NAN),
        _ => {
            if lower.contains('_') && !go_underscores_ok(&lower) {
                return None;
            }
            let digits = lower.replace('_', "");
            let v = match digits.strip_prefix("0x") {
                Some(hex) => parse_hex_float(hex)?,
                None => digits.parse::<f64>().ok()?,
            };
            if !v.is_finite() {
                return None;
            }
            v
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Go's `underscoreOK` (sign already removed): an underscore only between digits, or
/// between a base prefix and a digit.
fn go_underscores_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let (mut i, mut saw, hex) =
        if b.len() >= 2 && b[0] == b'0' && matches!(b[1], b'b' | b'o' | b'x') {
            (2, b'0', b[1] == b'x')
        } else {
            (0, b'^', false)
        };
    while i < b.len() {
        let c = b[i];
        i += 1;
        if c.is_ascii_digit() || (hex && (b'a'..=b'f').contains(&c)) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else if saw == b'_' {
            return false;
        } else {
            saw = b'!';
        }
    }
    saw != b'_'
}

/// The part of a Go hexadecimal float after `0x` (lower case, no underscores):
/// hex digits with an optional point, then a mandatory `p` and a decimal exponent.
fn parse_hex_float(s: &str) -> Option<f64> {
    let (mantissa, exponent) = s.split_once('p')?;
    let exponent: i32 = exponent.parse().ok()?;
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    // 30 hex digits fill 120 bits, more than an f64 keeps; later ones only scale.
    let mut value: u128 = 0;
    let mut scale: i64 = i64::from(exponent);
    let mut kept = 0;
    for (c, fractional) in int_part
        .chars()
        .map(|c| (c, false))
        .chain(frac_part.chars().map(|c| (c, true)))
    {
        let digit = u128::from(c.to_digit(16)?);
        if kept < 30 {
            value = value * 16 + digit;
            kept += 1;
            if fractional {
                scale -= 4;
            }
        } else if !fractional {
            scale += 4;
        }
    }
    let scale = i32::try_from(scale.clamp(-2000, 2000)).ok()?;
    // One rounding (u128 to f64), then exact scaling by a power of two unless it
    // leaves the normal range.
    Some(value as f64 * 2f64.powi(scale))
}

/// Go's `time.Parse(time.RFC3339, s).Unix()`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±hh:mm)`,
/// with Go's checks (hour may be one digit, day within its month, second < 60).
pub(crate) fn parse_rfc3339_unix(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = num(0, 4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || b.get(10) != Some(&b'T') {
        return None;
    }
    let month = num(5, 2)?;
    let day = num(8, 2)?;
    let mut i = 11;
    let hour_len = if b.get(12).is_some_and(u8::is_ascii_digit) {
        2
    } else {
        1
    };
    let hour = num(i, hour_len)?;
    i += hour_len;
    if b.get(i) != Some(&b':') {
        return None;
    }
    let minute = num(i + 1, 2)?;
    if b.get(i + 3) != Some(&b':') {
        return None;
    }
    let second = num(i + 4, 2)?;
    i += 6;
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    let offset = match b.get(i)? {
        b'Z' => {
            i += 1;
            0
        }
        sign @ (b'+' | b'-') => {
            let hh = num(i + 1, 2)?;
            if b.get(i + 3) != Some(&b':') {
                return None;
            }
            let mm = num(i + 4, 2)?;
            if hh > 24 || mm > 60 {
                return None;
            }
            i += 6;
            let off = hh * 3600 + mm * 60;
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    if i != b.len()
        || !(1..=12).contains(&month)
        || hour >= 24
        || minute >= 60
        || second >= 60
        || day < 1
        || day > days_in_month(year, month)
    {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// A value as Go's `fmt.Sprintf("%v", v)` prints the decoded object (label values):
/// integers in decimal, floats in `%g` shortest form, objects as `map[k:v ...]` with
/// sorted keys, lists as `[a b]`, null as `<nil>`.
pub fn go_format_value(v: &Value) -> String {
    let mut out = String::new();
    write_go_value(&mut out, v);
    out
}

fn write_go_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => out.push_str(s),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else {
                // u64 beyond int64 and every float decode to float64 upstream.
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f == 0.0 && f.is_sign_negative() {
                    out.push_str("-0");
                } else {
                    out.push_str(&ferrocrane_core::exposition::format_float(f));
                }
            }
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go_value(out, &map[k]);
            }
            out.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(s: &str) -> Result<f64, ValueError> {
        to_float64(Some(&Value::String(s.to_string())), false)
    }

    #[test]
    fn upstream_conversions() {
        assert_eq!(f("2022-06-28T00:00:00Z"), Ok(1656374400.0));
        assert_eq!(f("250m"), Ok(0.25));
        assert_eq!(f("5Gi"), Ok(5.36870912e+09));
        assert_eq!(f("28%"), Ok(0.28));
        assert_eq!(f("39%"), Ok(0.39));
        assert_eq!(to_float64(Some(&json!(43.21)), false), Ok(43.21));
        assert_eq!(to_float64(Some(&json!(true)), false), Ok(1.0));
        assert_eq!(to_float64(Some(&json!(false)), false), Ok(0.0));
        assert_eq!(to_float64(None, true), Ok(0.0));
        assert_eq!(to_float64(None, false), Err(ValueError::Nil));
        assert_eq!(to_float64(Some(&Value::Null), true), Ok(0.0));
    }

    #[test]
    fn condition_like_strings() {
        for (s, want) in [
            ("True", 1.0),
            ("yes", 1.0),
            ("YES", 1.0),
            ("False", 0.0),
            ("no", 0.0),
            ("Unknown", 0.0),
        ] {
            assert_eq!(f(s), Ok(want), "{s}");
        }
    }

    #[test]
    fn non_numbers_are_errors() {
        assert!(f("Pending").is_err());
        assert!(f("").is_err());
        assert!(f(" 1").is_err(), "Go does not trim");
        assert!(f("1.5%").is_err(), "only integer percentages");
        assert!(f("-5%").is_err());
        assert!(to_float64(Some(&json!({"a": 1})), false).is_err());
        assert_eq!(
            to_float64(Some(&json!([1, "a"])), false),
            Err(ValueError::NotNumber("[1 a]".into()))
        );
    }

    #[test]
    fn infinities_and_nan_reach_parse_float() {
        assert_eq!(f("+Inf"), Ok(f64::INFINITY));
        assert_eq!(f("-inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(f("Infinity"), Ok(f64::INFINITY));
        assert!(f("NaN").unwrap().is_nan());
        assert!(f("0x10").is_err(), "Go requires the p exponent");
    }

    #[test]
    fn go_float_syntax_underscores_and_hex() {
        assert_eq!(f("1_000"), Ok(1000.0));
        assert_eq!(f("-1_000.000_5"), Ok(-1000.0005));
        assert_eq!(f("0x1p-2"), Ok(0.25));
        assert_eq!(f("0X1.8P+1"), Ok(3.0));
        assert_eq!(f("-0x_1p4"), Ok(-16.0));
        assert_eq!(f("0x.8p0"), Ok(0.5));
        for bad in [
            "1__000",
            "_1",
            "1_",
            "1_.5",
            "0x1p",
            "0xp1",
            "0x1g1p0",
            "0x1p99999",
        ] {
            assert!(f(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rfc3339_like_go() {
        assert_eq!(parse_rfc3339_unix("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_unix("2022-06-28T00:00:00Z"), Some(1656374400));
        assert_eq!(
            parse_rfc3339_unix("2022-06-28T02:00:00+02:00"),
            Some(1656374400)
        );
        assert_eq!(
            parse_rfc3339_unix("2022-06-27T19:30:00.999-04:30"),
            Some(1656374400)
        );
        assert_eq!(parse_rfc3339_unix("2022-06-28T0:00:00Z"), Some(1656374400));
        assert_eq!(parse_rfc3339_unix("1969-12-31T23:59:59.5Z"), Some(-1));
        assert_eq!(parse_rfc3339_unix("2024-02-29T00:00:00Z"), Some(1709164800));
        assert_eq!(
            parse_rfc3339_unix("2022-06-28T00:00:00,5Z"),
            Some(1656374400)
        );
        assert_eq!(
            parse_rfc3339_unix("2022-06-28T00:00:00+24:00"),
            Some(1656288000)
        );
        for bad in [
            "2023-02-29T00:00:00Z",
            "2022-06-28t00:00:00Z",
            "2022-06-28T00:00:00z",
            "2022-06-28T24:00:00Z",
            "2022-06-28T00:00:60Z",
            "2022-13-01T00:00:00Z",
            "2022-06-28T00:00:00",
            "2022-06-28 00:00:00Z",
            "2022-06-28T00:00:00Zx",
            "2022-6-28T00:00:00Z",
            "+022-06-28T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339_unix(bad), None, "{bad}");
        }
    }

    #[test]
    fn go_v_formatting() {
        assert_eq!(go_format_value(&json!("s")), "s");
        assert_eq!(go_format_value(&json!(1)), "1");
        assert_eq!(go_format_value(&json!(1000000)), "1000000");
        assert_eq!(go_format_value(&json!(1000000.0)), "1e+06");
        assert_eq!(go_format_value(&json!(43.21)), "43.21");
        assert_eq!(go_format_value(&json!(false)), "false");
        assert_eq!(
            go_format_value(&json!({"b": [1, null], "a": {"c": "d"}})),
            "map[a:map[c:d] b:[1 <nil>]]"
        );
    }
}
