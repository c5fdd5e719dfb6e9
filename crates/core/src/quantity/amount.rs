//! What apimachinery's `ParseQuantity` stores for a quantity: an int64 `value × 10^scale`
//! when the digits fit (its fast path), else an arbitrary-precision decimal rounded away
//! from zero to nanos, binary SI capped at `MaxInt64`.
//!
//! Both the exact value and `AsApproximateFloat64` are read from this, and the float
//! depends on which of the two it is. Decimal digits are kept as a vector so any number of
//! them works, but a power of ten is only ever kept as a scale: an exponent such as
//! `e2147483647` costs nothing.

use super::syntax::{Parts, Suffix};

/// The finest precision upstream keeps: nine fractional digits (`Nano`).
const NANO_SCALE: i64 = 9;

/// Decimal digits an int64 always holds (upstream's `maxInt64Factors`).
const MAX_INT64_FACTORS: i64 = 18;

/// A parsed quantity as upstream represents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Amount {
    /// `value × 10^scale`, with a scale of at least -9.
    Int64 { value: i64, scale: i64 },
    /// The arbitrary-precision amount; `negative` is the sign it was written with.
    Dec { negative: bool, amount: DecAmount },
}

/// What the arbitrary-precision path stores, sign aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DecAmount {
    /// Zero, left at the scale it was written with (upstream only rounds non-zero values).
    Zero { scale: i64 },
    /// A binary SI amount above `MaxInt64`, which upstream caps there.
    CappedAtMaxInt64,
    /// Rounded away from zero to at most nine fractional digits.
    Rounded(Decimal),
}

/// `digits × 10^-scale`, never negative: most significant digit first, no leading zeros
/// (so no digits at all is zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Decimal {
    digits: Vec<u8>,
    scale: i64,
}

/// The amount upstream stores for a split quantity, or why it refuses it.
pub(super) fn amount(parts: &Parts<'_>) -> Result<Amount, &'static str> {
    if let Some((value, scale)) = int64_amount(parts) {
        return Ok(Amount::Int64 { value, scale });
    }
    // The arbitrary-precision path re-reads the number's text, where no digit at all is
    // an error: `Pi` and `+Ei` are refused although `Mi`, which fits the fast path, is zero.
    if !parts.has_digits {
        return Err("no digits");
    }
    Ok(Amount::Dec {
        negative: parts.negative,
        amount: dec_amount(parts),
    })
}

/// The fast path: the number as an int64 `value × 10^scale`, when its digits fit (with a
/// binary suffix: when there is no fraction and the product fits).
fn int64_amount(parts: &Parts<'_>) -> Option<(i64, i64)> {
    let digits = (parts.num.len() + parts.denom.len()) as i64;
    let (precision, scale, factor) = match parts.suffix {
        Suffix::Decimal(exponent) => (MAX_INT64_FACTORS - digits, i64::from(exponent), 1),
        Suffix::Binary(exponent) if parts.denom.is_empty() => {
            // Upstream's estimate of the decimal digits the binary factor takes, in float32.
            #[allow(
                clippy::cast_possible_truncation,
                reason = "a binary SI exponent is at most 60: 18.0 at most, upstream's float32 truncation"
            )]
            let factor_digits = (exponent as f32 * 3.0 / 10.0) as i64;
            let precision = 15 - parts.num.len() as i64 - factor_digits - 1;
            (precision, 0, 1i64.checked_shl(exponent)?)
        }
        Suffix::Binary(_) => return None,
    };
    let scale = scale - parts.denom.len() as i64;
    if precision < 0 || scale < -NANO_SCALE {
        return None;
    }
    // At most 18 digits: they fit.
    let value = parts
        .num
        .bytes()
        .chain(parts.denom.bytes())
        .try_fold(0i64, |acc, c| {
            acc.checked_mul(10)?.checked_add(i64::from(c - b'0'))
        })?;
    let value = value.checked_mul(factor)?;
    Some((if parts.negative { -value } else { value }, scale))
}

fn dec_amount(parts: &Parts<'_>) -> DecAmount {
    let mut d = Decimal::new(parts.num, parts.denom);
    match parts.suffix {
        Suffix::Decimal(exponent) => d.scale -= i64::from(exponent),
        Suffix::Binary(exponent) => d.mul_pow2(exponent),
    }
    if d.digits.is_empty() {
        return DecAmount::Zero { scale: d.scale };
    }
    d.round_up_to_nanos();
    if matches!(parts.suffix, Suffix::Binary(_)) && d.exceeds_max_int64() {
        return DecAmount::CappedAtMaxInt64;
    }
    DecAmount::Rounded(d)
}

impl Decimal {
    fn new(num: &str, denom: &str) -> Self {
        let mut digits: Vec<u8> = num.bytes().chain(denom.bytes()).map(|c| c - b'0').collect();
        strip_leading_zeros(&mut digits);
        Decimal {
            digits,
            // The length of text is far below i64::MAX.
            scale: denom.len() as i64,
        }
    }

    /// Multiplies by `2^exponent` (a binary suffix: at most 2^60, so a digit times the
    /// factor plus the carry fits a u128).
    fn mul_pow2(&mut self, exponent: u32) {
        let Some(factor) = 1u128.checked_shl(exponent) else {
            return;
        };
        let mut carry = 0u128;
        let mut reversed: Vec<u8> = Vec::with_capacity(self.digits.len() + 20);
        for &d in self.digits.iter().rev() {
            let v = u128::from(d) * factor + carry;
            reversed.push((v % 10) as u8);
            carry = v / 10;
        }
        while carry > 0 {
            reversed.push((carry % 10) as u8);
            carry /= 10;
        }
        reversed.reverse();
        self.digits = reversed;
        strip_leading_zeros(&mut self.digits);
    }

    /// `inf.Dec.Round(x, 9, inf.RoundUp)`: drops the digits below a nano, adding one nano
    /// when any of them was non-zero.
    fn round_up_to_nanos(&mut self) {
        if self.scale <= NANO_SCALE {
            return;
        }
        let drop = self.scale - NANO_SCALE;
        let keep = i64::try_from(self.digits.len()).map_or(0, |len| len - drop);
        let inexact = if keep <= 0 {
            // Every digit is below a nano; there is at least one and it is non-zero.
            self.digits.clear();
            true
        } else {
            // 0 < keep <= digits.len(), computed from that length.
            let tail = self
                .digits
                .split_off(usize::try_from(keep).unwrap_or(self.digits.len()));
            tail.iter().any(|&d| d != 0)
        };
        self.scale = NANO_SCALE;
        if inexact {
            add_one(&mut self.digits);
        }
    }

    /// Whether the value is above `MaxInt64` (9223372036854775807).
    fn exceeds_max_int64(&self) -> bool {
        const MAX: &[u8; 19] = b"9223372036854775807";
        let len = self.digits.len() as i64;
        let int_len = len - self.scale;
        if int_len != MAX.len() as i64 {
            return int_len > MAX.len() as i64;
        }
        // The integer part has 19 digits: the digits kept, then zeros for a negative scale.
        let int_digits = self
            .digits
            .iter()
            .map(|d| d + b'0')
            .chain(std::iter::repeat(b'0'))
            .take(MAX.len());
        match int_digits.cmp(MAX.iter().copied()) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.digits.iter().skip(MAX.len()).any(|&d| d != 0),
        }
    }

    /// The unscaled integer at nano scale (`value × 10^9`), rounded to the nearest f64 as
    /// `big.Float.Float64` does. Call after rounding, when the scale is at most 9.
    pub(super) fn nanos_as_f64(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        let zeros = NANO_SCALE - self.scale;
        // At least 10^330: no f64 is that large, and the text would be needlessly long.
        if self.digits.len() as i64 + zeros > 330 {
            return f64::INFINITY;
        }
        let mut text: String = self.digits.iter().map(|d| char::from(d + b'0')).collect();
        text.push('e');
        text.push_str(&zeros.to_string());
        // Decimal digits with an exponent always parse; Rust rounds to nearest, ties to even.
        text.parse().unwrap_or(f64::NAN)
    }

    /// `(mantissa, exp10)` with no trailing zeros in the mantissa, or None beyond what an
    /// i128 holds.
    pub(super) fn to_mantissa(&self) -> Option<(i128, i64)> {
        let zeros = self.digits.iter().rev().take_while(|&&d| d == 0).count();
        let significant = &self.digits[..self.digits.len() - zeros];
        let mut mantissa: i128 = 0;
        for &d in significant {
            mantissa = mantissa.checked_mul(10)?.checked_add(i128::from(d))?;
        }
        if mantissa == 0 {
            return Some((0, 0));
        }
        Some((mantissa, zeros as i64 - self.scale))
    }
}

fn strip_leading_zeros(digits: &mut Vec<u8>) {
    let zeros = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..zeros);
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

#[cfg(test)]
mod tests {
    use super::super::syntax::split;
    use super::*;

    fn dec(s: &str) -> DecAmount {
        dec_amount(&split(s).unwrap_or_else(|e| panic!("{s}: {e}")))
    }

    fn stored(s: &str) -> Result<Amount, &'static str> {
        super::amount(&split(s).unwrap_or_else(|e| panic!("{s}: {e}")))
    }

    #[test]
    fn int64_when_the_digits_fit() {
        assert_eq!(
            stored("0.3"),
            Ok(Amount::Int64 {
                value: 3,
                scale: -1
            })
        );
        assert_eq!(
            stored("300m"),
            Ok(Amount::Int64 {
                value: 300,
                scale: -3
            })
        );
        assert_eq!(
            stored("-2Mi"),
            Ok(Amount::Int64 {
                value: -2_097_152,
                scale: 0
            })
        );
        assert_eq!(stored("k"), Ok(Amount::Int64 { value: 0, scale: 3 }));
        assert!(matches!(stored("1.5Ki"), Ok(Amount::Dec { .. })));
        assert!(matches!(stored("1e-10"), Ok(Amount::Dec { .. })));
        assert!(matches!(
            stored("1234567890123456789"),
            Ok(Amount::Dec { .. })
        ));
    }

    #[test]
    fn the_arbitrary_precision_path_needs_a_digit() {
        assert_eq!(stored("Pi"), Err("no digits"));
        assert_eq!(stored("+.Ei"), Err("no digits"));
        assert!(stored("0Pi").is_ok());
    }

    fn rounded(s: &str) -> (i128, i64) {
        match dec(s) {
            DecAmount::Rounded(d) => d.to_mantissa().expect("fits"),
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn rounds_away_from_zero_to_nanos() {
        assert_eq!(rounded("1.0000000001"), (1_000_000_001, -9));
        assert_eq!(rounded("-0.9999999999"), (1, 0));
        assert_eq!(rounded("1e-300"), (1, -9));
        assert_eq!(rounded("0.1n"), (1, -9));
        assert_eq!(rounded("1.5Ki"), (1536, 0));
        assert_eq!(rounded("12.34"), (1234, -2));
        assert_eq!(rounded("1200"), (12, 2));
    }

    #[test]
    fn zero_keeps_its_scale() {
        assert_eq!(dec("0.000"), DecAmount::Zero { scale: 3 });
        assert_eq!(dec("0e400"), DecAmount::Zero { scale: -400 });
    }

    #[test]
    fn binary_si_is_capped_at_max_int64() {
        assert_eq!(dec("8Ei"), DecAmount::CappedAtMaxInt64);
        assert_eq!(dec("99999999999999999999Ki"), DecAmount::CappedAtMaxInt64);
        assert_eq!(
            rounded("7.9999999Ei"),
            (92_233_719_215_626_253_473_153_024, -7)
        );
        // Decimal amounts are not capped.
        assert_eq!(rounded("8E"), (8, 18));
    }

    #[test]
    fn huge_exponents_stay_a_scale() {
        assert_eq!(
            rounded("1234567890123456789e2147483647"),
            (1_234_567_890_123_456_789, 2_147_483_647)
        );
        match dec("1234567890123456789e2147483647") {
            DecAmount::Rounded(d) => assert_eq!(d.nanos_as_f64(), f64::INFINITY),
            other => panic!("{other:?}"),
        }
    }
}
