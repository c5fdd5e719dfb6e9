//! Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`) with apimachinery's semantics.
//!
//! [`Quantity`] is the exact value `resource.ParseQuantity` keeps (rounded away from zero
//! to nanos, binary SI capped at `MaxInt64`), with `Value()` and `MilliValue()`, because
//! kube-state-metrics and Crane round those up and a float parse would be off by one on
//! such edges. [`approximate_f64`] is `AsApproximateFloat64`, whose result depends on the
//! text and not only on the value. [`format_milli`] and [`format_value`] write the
//! canonical text of quantities built from integers.
//!
//! Nothing here panics or allocates in proportion to an exponent: `1e2147483647` is a
//! scale, not two billion zeros. Text longer than 1 KiB or an exponent beyond 32 bits is
//! refused.

mod amount;
mod approx;
mod format;
mod syntax;
#[cfg(test)]
mod tests;

use std::fmt;

pub use approx::approximate_f64;
pub use format::{QuantityFormat, format_milli, format_value};

use amount::{Amount, DecAmount};

/// An exact quantity, `mantissa × 10^exp10`: no trailing zeros in the mantissa (zero is
/// `0 × 10^0`), so equality is numeric equality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exp10: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {input:?}: {reason}")]
pub struct QuantityError {
    /// The text, cut short when it is longer than any quantity.
    pub input: String,
    pub reason: &'static str,
}

impl QuantityError {
    fn new(input: &str, reason: &'static str) -> Self {
        const SHOWN: usize = 64;
        let input = match input.char_indices().nth(SHOWN) {
            Some((cut, _)) => format!("{}...", &input[..cut]),
            None => input.to_owned(),
        };
        QuantityError { input, reason }
    }
}

impl Quantity {
    /// A quantity as Kubernetes decodes one from JSON (`UnmarshalJSON`): surrounding
    /// whitespace trimmed, then `ParseQuantity`.
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let err = |reason| QuantityError::new(input, reason);
        let stored = syntax::split(input.trim())
            .and_then(|parts| amount::amount(&parts))
            .map_err(err)?;
        let (mantissa, exp10) = match stored {
            Amount::Int64 { value, scale } => without_trailing_zeros(i128::from(value), scale),
            Amount::Dec { negative, amount } => {
                let sign = if negative { -1 } else { 1 };
                match amount {
                    DecAmount::Zero { .. } => (0, 0),
                    DecAmount::CappedAtMaxInt64 => (sign * i128::from(i64::MAX), 0),
                    DecAmount::Rounded(d) => {
                        let (mantissa, exp10) = d
                            .to_mantissa()
                            .ok_or_else(|| err("more significant digits than an i128 holds"))?;
                        (sign * mantissa, exp10)
                    }
                }
            }
        };
        // Keeps the exponent writable as a suffix, so every quantity prints as one.
        if exp10 > i64::from(i32::MAX) {
            return Err(err("exponent out of range"));
        }
        Ok(Quantity { mantissa, exp10 })
    }

    /// The f64 nearest to the exact value (not upstream's `AsApproximateFloat64`, which
    /// is [`approximate_f64`]).
    pub fn as_f64(&self) -> f64 {
        format!("{}e{}", self.mantissa, self.exp10)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// apimachinery's `Value()`: rounded up to an integer, saturating at i64 bounds.
    pub fn value(&self) -> i64 {
        self.scaled_ceil(0)
    }

    /// apimachinery's `MilliValue()`: thousandths, rounded up, saturating at i64 bounds.
    pub fn milli_value(&self) -> i64 {
        self.scaled_ceil(3)
    }

    /// `ceil(value × 10^extra_exp10)` as an i64.
    ///
    /// Upstream is not consistent for negative values: its int64 path rounds them away from
    /// zero, its arbitrary-precision path towards +infinity. Towards +infinity is kept for
    /// both, the documented meaning of "rounded up". Where upstream overflows (and returns
    /// a wrapped or zero value) this saturates.
    fn scaled_ceil(&self, extra_exp10: i64) -> i64 {
        let saturated = if self.mantissa < 0 {
            i64::MIN
        } else {
            i64::MAX
        };
        let exp = self.exp10 + extra_exp10;
        let exact = if exp >= 0 {
            u32::try_from(exp)
                .ok()
                .and_then(|e| 10i128.checked_pow(e))
                .and_then(|p| self.mantissa.checked_mul(p))
        } else {
            // exp10 is at least -9, so the divisor is at most 10^9.
            let Some(divisor) = u32::try_from(-exp).ok().and_then(|e| 10i128.checked_pow(e)) else {
                return if self.mantissa > 0 { 1 } else { 0 };
            };
            let quotient = self.mantissa.div_euclid(divisor);
            Some(if self.mantissa.rem_euclid(divisor) == 0 {
                quotient
            } else {
                quotient + 1
            })
        };
        exact
            .and_then(|v| i64::try_from(v).ok())
            .unwrap_or(saturated)
    }
}

/// One representation per value: `mantissa × 10^exp10` without trailing zeros.
fn without_trailing_zeros(mut mantissa: i128, mut exp10: i64) -> (i128, i64) {
    if mantissa == 0 {
        return (0, 0);
    }
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exp10 += 1;
    }
    (mantissa, exp10)
}

/// A plain decimal form that parses back to the same value (not apimachinery's canonical
/// form, which only [`format_milli`] and [`format_value`] write).
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.mantissa < 0 { "-" } else { "" };
        let digits = self.mantissa.unsigned_abs().to_string();
        if self.exp10 > 18 {
            return write!(f, "{sign}{digits}e{}", self.exp10);
        }
        if self.exp10 >= 0 {
            return write!(
                f,
                "{sign}{digits}{:0<width$}",
                "",
                width = usize::try_from(self.exp10).unwrap_or(usize::MAX)
            );
        }
        // At most nine fractional digits.
        let frac = usize::try_from(self.exp10.unsigned_abs()).unwrap_or(usize::MAX);
        let padded = format!("{digits:0>width$}", width = frac + 1);
        let (int, fraction) = padded.split_at(padded.len() - frac);
        write!(f, "{sign}{int}.{fraction}")
    }
}
