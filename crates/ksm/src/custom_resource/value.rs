//! Values of a custom object turned into sample values and label values, as
//! kube-state-metrics v2.20 does it.
//!
//! Strings are tried in upstream's order: `true`/`yes` → 1 and `false`/`no`/`unknown`
//! → 0 (any case), then an RFC 3339 time (→ Unix seconds), then a Kubernetes quantity
//! (→ apimachinery's `AsApproximateFloat64`, reproduced bit for bit: `"0.3"` is
//! 0.30000000000000004 upstream, and here), then an integer percentage (`"50%"` →
//! 0.5), then a plain float.

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
    if let Some(v) = go_quantity_approx_f64(s) {
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
/// parser (which takes every plain decimal): infinities and NaN. Hex floats and
/// out-of-range values are reported as errors.
fn go_parse_float(s: &str) -> Option<f64> {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s).to_ascii_lowercase();
    if !matches!(unsigned.as_str(), "inf" | "infinity" | "nan") {
        let v: f64 = s.parse().ok()?;
        return v.is_finite().then_some(v);
    }
    if unsigned == "nan" {
        return Some(f64::NAN);
    }
    Some(if s.starts_with('-') {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    })
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

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `resource.ParseQuantity(s)` then `AsApproximateFloat64()`, following apimachinery's
/// two internal representations: an int64 mantissa with a decimal scale when it fits
/// (the float is `mantissa * 10^scale`), otherwise an arbitrary-precision decimal
/// rounded up to nano precision (the float is `unscaled * 10^-9`).
pub(crate) fn go_quantity_approx_f64(s: &str) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    if s == "0" {
        return Some(0.0);
    }
    let q = parse_quantity_string(s)?;
    let (base, exponent, binary) = interpret_suffix(q.suffix)?;

    // Fast path: an int64 amount.
    let mut mantissa: i64 = 1;
    let precision: i32 = if binary {
        if q.denom.is_empty() {
            mantissa = 1i64 << exponent;
            15 - q.num.len() as i32 - ((exponent as f32) * 3.0 / 10.0) as i32 - 1
        } else {
            -1
        }
    } else {
        18 - (q.num.len() + q.denom.len()) as i32
    };
    let mut scale: i32 = if binary { 0 } else { exponent };
    if precision >= 0 {
        scale -= q.denom.len() as i32;
        if scale >= -9 {
            let shifted = format!("{}{}", q.num, q.denom);
            let value: i64 = go_parse_int64(&shifted)?;
            if let Some(result) = value.checked_mul(mantissa) {
                let result = if q.positive { result } else { -result };
                let base = result as f64;
                return Some(if scale == 0 {
                    base
                } else {
                    base * go_pow10(scale)
                });
            }
        }
    }

    // inf.Dec path: digits of `value` (sign and point removed) at scale len(frac).
    let unsigned = q.value.strip_prefix(['+', '-']).unwrap_or(q.value);
    let (int_part, frac_part) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if !(int_part.bytes().all(|c| c.is_ascii_digit())
        && frac_part.bytes().all(|c| c.is_ascii_digit()))
        || (int_part.is_empty() && frac_part.is_empty())
    {
        return None;
    }
    let mut digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .map(|c| c - b'0')
        .collect();
    let mut dec_scale: i64 = frac_part.len() as i64;
    if base == 10 {
        dec_scale -= exponent as i64;
    } else {
        for _ in 0..exponent {
            mul_small(&mut digits, 2);
        }
    }
    strip_leading_zeros(&mut digits);
    let negative = q.value.starts_with('-');
    if digits.is_empty() {
        return Some(0.0);
    }
    // Round away from zero to scale 9.
    if dec_scale > 9 {
        let drop = (dec_scale - 9) as usize;
        let round_up = if drop >= digits.len() {
            let any = digits.iter().any(|&d| d != 0);
            digits.clear();
            any
        } else {
            let tail = digits.split_off(digits.len() - drop);
            tail.iter().any(|&d| d != 0)
        };
        if round_up {
            add_one(&mut digits);
        }
    } else {
        digits.extend(std::iter::repeat_n(0, (9 - dec_scale) as usize));
    }
    dec_scale = 9;
    strip_leading_zeros(&mut digits);
    // BinarySI is capped at MaxInt64 (as a scale-0 decimal).
    if binary {
        let max = i64::MAX.to_string();
        let int_digits = digits.len().saturating_sub(9);
        let int_str: String = digits[..int_digits]
            .iter()
            .map(|d| (d + b'0') as char)
            .collect();
        let above = int_str.len() > max.len()
            || (int_str.len() == max.len()
                && (int_str.as_str() > max.as_str()
                    || (int_str == max && digits[int_digits..].iter().any(|&d| d != 0))));
        if above {
            let v = i64::MAX as f64;
            return Some(if negative { -v } else { v });
        }
    }
    let text: String = if digits.is_empty() {
        "0".to_string()
    } else {
        digits.iter().map(|d| (d + b'0') as char).collect()
    };
    let mut base_f: f64 = text.parse().ok()?;
    if negative {
        base_f = -base_f;
    }
    Some(base_f * go_pow10(-(dec_scale as i32)))
}

struct QuantityParts<'a> {
    positive: bool,
    value: &'a str,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// apimachinery's `parseQuantityString`, including its quirks (`"."`, `"+"` and a
/// bare suffix such as `"k"` all parse, as zero).
fn parse_quantity_string(s: &str) -> Option<QuantityParts<'_>> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Some(QuantityParts {
            positive,
            value: "0",
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        return Some(QuantityParts {
            positive,
            value: s,
            num: &s[num_start..],
            denom: "",
            suffix: "",
        });
    }
    let num = if pos == num_start {
        "0"
    } else {
        &s[num_start..pos]
    };
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[denom_start..pos];
        if pos >= end {
            return Some(QuantityParts {
                positive,
                value: s,
                num,
                denom,
                suffix: "",
            });
        }
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return None;
    }
    Some(QuantityParts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// (base, exponent, binary) of a quantity suffix.
fn interpret_suffix(suffix: &str) -> Option<(u32, i32, bool)> {
    let dec = |e| Some((10, e, false));
    let bin = |e| Some((2, e, true));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        s if s.len() > 1 && s.starts_with(['e', 'E']) => {
            let e: i64 = go_parse_int64(&s[1..])?;
            // Go truncates the int64 to int32.
            dec(e as i32)
        }
        _ => None,
    }
}

/// `strconv.ParseInt(s, 10, 64)`.
fn go_parse_int64(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `math.Pow10`: exact table products, so results match Go's bit for bit.
pub(crate) fn go_pow10(n: i32) -> f64 {
    const TAB: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    if (0..=308).contains(&n) {
        return TAB[(n % 32) as usize] * POS32[(n / 32) as usize];
    }
    if (-323..=0).contains(&n) {
        let m = -n;
        return 1.0 / (TAB[(m % 32) as usize] * POS32[(m / 32) as usize]);
    }
    if n > 0 { f64::INFINITY } else { 0.0 }
}

fn mul_small(digits: &mut Vec<u8>, factor: u32) {
    let mut carry = 0u32;
    for d in digits.iter_mut().rev() {
        let v = u32::from(*d) * factor + carry;
        *d = (v % 10) as u8;
        carry = v / 10;
    }
    while carry > 0 {
        digits.insert(0, (carry % 10) as u8);
        carry /= 10;
    }
}

fn add_one(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

fn strip_leading_zeros(digits: &mut Vec<u8>) {
    let nz = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    digits.drain(..nz);
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
        assert!(f("0x10").is_err());
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
