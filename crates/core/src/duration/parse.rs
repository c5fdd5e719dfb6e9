//! `time.ParseDuration`: an optional sign, then `<digits>[.<digits>]<unit>` repeated.
//!
//! Go sums the components as an unsigned magnitude of at most 2^63 (the magnitude of the most
//! negative duration) and converts the fraction with a float64 product; both are kept, so every
//! input gives Go's nanosecond count. The one departure: Go lets two components of exactly 2^63
//! nanoseconds wrap around to zero, here that is out of range.

use std::fmt::{self, Write as _};

/// The largest magnitude a duration may reach: `i64::MIN` nanoseconds, 2^63.
const MAGNITUDE_LIMIT: u64 = 1 << 63;

/// Why a text is not a Go duration; the messages are Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseDurationError {
    /// Not of the shape `[-+]?([0-9]*(\.[0-9]*)?unit)+`.
    #[error("time: invalid duration {}", GoQuoted(.input))]
    Syntax { input: String },
    /// A number without its unit (`60`).
    #[error("time: missing unit in duration {}", GoQuoted(.input))]
    MissingUnit { input: String },
    /// A unit Go does not have (`1d`).
    #[error("time: unknown unit {} in duration {}", GoQuoted(.unit), GoQuoted(.input))]
    UnknownUnit { unit: String, input: String },
    /// Longer than about 292 years; Go words it like a syntax error.
    #[error("time: invalid duration {}", GoQuoted(.input))]
    OutOfRange { input: String },
}

impl ParseDurationError {
    /// The text that did not parse.
    pub fn input(&self) -> &str {
        match self {
            ParseDurationError::Syntax { input }
            | ParseDurationError::MissingUnit { input }
            | ParseDurationError::UnknownUnit { input, .. }
            | ParseDurationError::OutOfRange { input } => input,
        }
    }
}

/// What went wrong inside one component, before the whole input is attached.
enum Fault<'a> {
    Syntax,
    MissingUnit,
    UnknownUnit(&'a str),
    OutOfRange,
}

impl Fault<'_> {
    fn for_input(self, input: &str) -> ParseDurationError {
        let input = input.to_owned();
        match self {
            Fault::Syntax => ParseDurationError::Syntax { input },
            Fault::MissingUnit => ParseDurationError::MissingUnit { input },
            Fault::UnknownUnit(unit) => ParseDurationError::UnknownUnit {
                unit: unit.to_owned(),
                input,
            },
            Fault::OutOfRange => ParseDurationError::OutOfRange { input },
        }
    }
}

/// `input` in nanoseconds.
pub(super) fn parse(input: &str) -> Result<i64, ParseDurationError> {
    let (negative, body) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    // The one number Go accepts without a unit.
    if body == "0" {
        return Ok(0);
    }
    if body.is_empty() {
        return Err(Fault::Syntax.for_input(input));
    }
    let mut magnitude: u64 = 0;
    let mut rest = body;
    while !rest.is_empty() {
        let (nanos, tail) = component(rest).map_err(|fault| fault.for_input(input))?;
        magnitude = magnitude
            .checked_add(nanos)
            .filter(|m| *m <= MAGNITUDE_LIMIT)
            .ok_or_else(|| Fault::OutOfRange.for_input(input))?;
        rest = tail;
    }
    let signed = if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    };
    signed.ok_or_else(|| Fault::OutOfRange.for_input(input))
}

/// One `<integer>[.<fraction>]<unit>` in nanoseconds, and the text after it.
fn component(text: &str) -> Result<(u64, &str), Fault<'_>> {
    let (integer, after_integer) = split_digits(text);
    let (fraction, after_number) = match after_integer.strip_prefix('.') {
        Some(after_point) => split_digits(after_point),
        None => ("", after_integer),
    };
    if integer.is_empty() && fraction.is_empty() {
        return Err(Fault::Syntax);
    }
    // Go reads the integer before it looks for the unit, so an overlong number without a unit
    // is out of range rather than missing its unit.
    let whole = leading_integer(integer).ok_or(Fault::OutOfRange)?;
    let unit_len = after_number
        .find(|c: char| c == '.' || c.is_ascii_digit())
        .unwrap_or(after_number.len());
    let (unit, rest) = after_number.split_at(unit_len);
    if unit.is_empty() {
        return Err(Fault::MissingUnit);
    }
    let unit_nanos = unit_nanos(unit).ok_or(Fault::UnknownUnit(unit))?;
    let whole_nanos = whole
        .checked_mul(unit_nanos)
        .filter(|n| *n <= MAGNITUDE_LIMIT)
        .ok_or(Fault::OutOfRange)?;
    // At most an hour's worth of nanoseconds, so the sum cannot leave u64.
    let nanos = whole_nanos + fraction_nanos(fraction, unit_nanos);
    if nanos > MAGNITUDE_LIMIT {
        return Err(Fault::OutOfRange);
    }
    Ok((nanos, rest))
}

fn split_digits(text: &str) -> (&str, &str) {
    let len = text.bytes().take_while(u8::is_ascii_digit).count();
    text.split_at(len)
}

/// The value of a run of digits; `None` above 2^63.
fn leading_integer(digits: &str) -> Option<u64> {
    digits.bytes().try_fold(0u64, |value, digit| {
        value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit - b'0')))
            .filter(|v| *v <= MAGNITUDE_LIMIT)
    })
}

/// The fraction's nanoseconds in this unit, truncated. Digits beyond what a u64 holds only
/// add precision, so Go stops reading them; the product is float64 because Go's is, which is
/// what makes `1.0000000001h` and friends come out to Go's nanosecond.
fn fraction_nanos(digits: &str, unit_nanos: u64) -> u64 {
    let mut numerator: u64 = 0;
    let mut scale: f64 = 1.0;
    for digit in digits.bytes() {
        if numerator > (MAGNITUDE_LIMIT - 1) / 10 {
            break;
        }
        let next = numerator * 10 + u64::from(digit - b'0');
        if next > MAGNITUDE_LIMIT {
            break;
        }
        numerator = next;
        scale *= 10.0;
    }
    if numerator == 0 {
        return 0;
    }
    // Truncates toward zero like Go's uint64(float64); the value is below 3.6e12.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "below 3.6e12 (the magnitude limit times an hour), far inside u64"
    )]
    let nanos = (numerator as f64 * (unit_nanos as f64 / scale)) as u64;
    nanos
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        // ASCII, U+00B5 MICRO SIGN, U+03BC GREEK SMALL LETTER MU.
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// A string in double quotes the way Go's `time` package quotes one in its errors: `"` and
/// `\` get a backslash, and every byte of a control or non-ASCII character becomes `\xNN`.
struct GoQuoted<'a>(&'a str);

impl fmt::Display for GoQuoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        for c in self.0.chars() {
            if c < ' ' || !c.is_ascii() {
                let mut utf8 = [0u8; 4];
                for byte in c.encode_utf8(&mut utf8).bytes() {
                    write!(f, "\\x{byte:02x}")?;
                }
            } else {
                if c == '"' || c == '\\' {
                    f.write_char('\\')?;
                }
                f.write_char(c)?;
            }
        }
        f.write_char('"')
    }
}
