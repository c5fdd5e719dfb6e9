//! Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`): parsed exactly, because
//! kube-state-metrics and Crane round them the way apimachinery does (`Value()` and
//! `MilliValue()` round up), and a float parse would be off by one on such edges.

use std::fmt;

/// A quantity as `digits × 10^exp10 × 1024^pow1024`, kept exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exp10: i32,
    pow1024: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {input:?}: {reason}")]
pub struct QuantityError {
    pub input: String,
    pub reason: &'static str,
}

impl Quantity {
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let err = |reason| QuantityError {
            input: input.to_string(),
            reason,
        };
        let s = input.trim();
        if s.is_empty() {
            return Err(err("empty"));
        }
        let (negative, rest) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(err("no digits"));
        }
        if frac_part.contains('.') {
            return Err(err("more than one decimal point"));
        }
        // Trailing fractional zeros carry no value; dropping them keeps the mantissa small.
        let frac_part = frac_part.trim_end_matches('0');
        let digits = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 36 {
            return Err(err("too many digits"));
        }
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| err("bad digits"))?
        };
        if negative {
            mantissa = -mantissa;
        }
        let mut exp10 = -(frac_part.len() as i32);
        let mut pow1024 = 0;
        match suffix {
            "" => {}
            "n" => exp10 -= 9,
            "u" => exp10 -= 6,
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            "Ki" => pow1024 = 1,
            "Mi" => pow1024 = 2,
            "Gi" => pow1024 = 3,
            "Ti" => pow1024 = 4,
            "Pi" => pow1024 = 5,
            "Ei" => pow1024 = 6,
            s if s.starts_with(['e', 'E']) => {
                let e: i32 = s[1..].parse().map_err(|_| err("bad exponent"))?;
                if e.abs() > 400 {
                    return Err(err("exponent out of range"));
                }
                exp10 += e;
            }
            _ => return Err(err("unknown suffix")),
        }
        // One representation per value, so equality is numeric equality within a suffix kind.
        while mantissa != 0 && mantissa % 10 == 0 {
            mantissa /= 10;
            exp10 += 1;
        }
        Ok(Quantity {
            mantissa,
            exp10,
            pow1024,
        })
    }

    /// The value as a float, for gauges.
    pub fn as_f64(&self) -> f64 {
        let base: f64 = format!("{}e{}", self.mantissa, self.exp10)
            .parse()
            .unwrap_or(f64::NAN);
        base * 1024f64.powi(self.pow1024 as i32)
    }

    /// apimachinery's `Value()`: rounded up to an integer, saturating at i64 bounds.
    pub fn value(&self) -> i64 {
        self.scaled_ceil(0)
    }

    /// apimachinery's `MilliValue()`: thousandths, rounded up.
    pub fn milli_value(&self) -> i64 {
        self.scaled_ceil(3)
    }

    fn scaled_ceil(&self, extra_exp10: i32) -> i64 {
        let saturate = |negative: bool| if negative { i64::MIN } else { i64::MAX };
        let mut n = self.mantissa;
        for _ in 0..self.pow1024 {
            match n.checked_mul(1024) {
                Some(v) => n = v,
                None => return saturate(n < 0),
            }
        }
        let exp = self.exp10 + extra_exp10;
        if exp >= 0 {
            for _ in 0..exp {
                match n.checked_mul(10) {
                    Some(v) => n = v,
                    None => return saturate(n < 0),
                }
            }
        } else {
            let div = match 10i128.checked_pow(exp.unsigned_abs()) {
                Some(d) => d,
                None => return if n > 0 { 1 } else { 0 },
            };
            let q = n.div_euclid(div);
            n = if n.rem_euclid(div) != 0 { q + 1 } else { q };
        }
        i64::try_from(n).unwrap_or_else(|_| saturate(n < 0))
    }
}

/// A plain decimal form that parses back to the same value (not apimachinery's canonical form).
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][self.pow1024.min(6) as usize];
        let sign = if self.mantissa < 0 { "-" } else { "" };
        let digits = self.mantissa.unsigned_abs().to_string();
        if self.exp10 >= 0 {
            // Small positive exponents as zeros; large ones keep the exponent, which
            // parses only without a binary suffix (and only then can exp10 be large).
            if self.exp10 <= 18 || !suffix.is_empty() {
                return write!(
                    f,
                    "{sign}{digits}{}{suffix}",
                    "0".repeat(self.exp10 as usize)
                );
            }
            return write!(f, "{sign}{digits}e{}", self.exp10);
        }
        let frac = self.exp10.unsigned_abs() as usize;
        let padded = if digits.len() <= frac {
            format!("{}{digits}", "0".repeat(frac - digits.len() + 1))
        } else {
            digits
        };
        let (int, fraction) = padded.split_at(padded.len() - frac);
        write!(f, "{sign}{int}.{fraction}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parses_every_suffix_kind() {
        assert_eq!(q("100m").milli_value(), 100);
        assert_eq!(q("1").milli_value(), 1000);
        assert_eq!(q("1.5").milli_value(), 1500);
        assert_eq!(q("2k").value(), 2000);
        assert_eq!(q("1Ki").value(), 1024);
        assert_eq!(q("1.5Gi").value(), 1_610_612_736);
        assert_eq!(q("128Mi").value(), 134_217_728);
        assert_eq!(q("1e3").value(), 1000);
        assert_eq!(q("1E-3").milli_value(), 1);
        assert_eq!(q("500u").milli_value(), 1);
        assert_eq!(q("-1").value(), -1);
        assert_eq!(q("+2").value(), 2);
        assert_eq!(q(".5").milli_value(), 500);
        assert_eq!(q("0").value(), 0);
    }

    #[test]
    fn rounds_up_like_apimachinery() {
        // Value() and MilliValue() round towards +infinity.
        assert_eq!(q("100m").value(), 1);
        assert_eq!(q("1n").milli_value(), 1);
        assert_eq!(q("1001m").value(), 2);
        assert_eq!(q("-1500m").value(), -1);
        assert_eq!(q("0.1").value(), 1);
    }

    #[test]
    fn floats() {
        assert_eq!(q("250m").as_f64(), 0.25);
        assert_eq!(q("1Gi").as_f64(), 1073741824.0);
        assert_eq!(q("1.5e2").as_f64(), 150.0);
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        assert_eq!(q("9E").value(), 9_000_000_000_000_000_000);
        assert_eq!(q("100E").value(), i64::MAX);
        assert_eq!(q("100Ei").milli_value(), i64::MAX);
        assert_eq!(q("1e-300").value(), 1);
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        for bad in ["", "abc", "1.2.3", "1Xi", "--1", "1e", "1ee2", "."] {
            let e = Quantity::parse(bad).expect_err(bad);
            assert!(e.to_string().contains("invalid quantity"), "{e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "100m", "1.5Gi", "3", "2e3", "-7Ki", "0.001", "-0.5Mi", "1e30",
        ] {
            let parsed = q(s);
            assert_eq!(q(&parsed.to_string()), parsed, "{s}");
        }
    }
}
