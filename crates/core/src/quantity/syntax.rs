//! The text of a quantity split the way apimachinery's `ParseQuantity` reads it: sign,
//! integer digits, fraction digits, suffix.
//!
//! Upstream's grammar is looser than its documentation, and values users see depend on it:
//! `"."`, `"+"`, `"5."` and a bare suffix such as `"k"` are all valid (the first, second
//! and last are zero), and leading zeros do not count towards the digits that decide
//! which internal representation a number gets.

/// The longest text read as a quantity. Upstream has no limit, but nothing longer is a
/// quantity anyone wrote, and the limit keeps the work per parse small.
pub(super) const MAX_LEN: usize = 1024;

/// What a suffix multiplies the number by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Suffix {
    /// A power of ten: a decimal SI suffix (`m`, `k` ...), an exponent (`e3`) or none.
    Decimal(i32),
    /// A power of two, a multiple of ten: the binary SI suffixes `Ki` to `Ei`.
    Binary(u32),
}

/// A quantity's text, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Parts<'a> {
    pub negative: bool,
    /// Integer digits without leading zeros, `"0"` when there are none.
    pub num: &'a str,
    /// Fraction digits as written, possibly empty.
    pub denom: &'a str,
    /// Whether the number before the suffix has any digit, a leading zero included
    /// (upstream's slow path re-reads that text and needs one).
    pub has_digits: bool,
    pub suffix: Suffix,
}

/// Splits `s` as `ParseQuantity` does (no trimming); the error is the reason it is not a
/// quantity.
pub(super) fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    if s.is_empty() {
        return Err("empty");
    }
    if s.len() > MAX_LEN {
        return Err("too long");
    }
    let b = s.as_bytes();
    let (negative, start) = match b.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let digits_start = skip_while(b, start, |c| c == b'0');
    if digits_start == b.len() {
        // Only a sign and zeros (or nothing) left: zero, whatever the sign said.
        return Ok(Parts {
            negative,
            num: "0",
            denom: "",
            has_digits: digits_start > start,
            suffix: Suffix::Decimal(0),
        });
    }
    let num_end = skip_while(b, digits_start, |c| c.is_ascii_digit());
    let num = if num_end == digits_start {
        "0"
    } else {
        &s[digits_start..num_end]
    };
    let mut pos = num_end;
    let mut denom = "";
    if b.get(pos) == Some(&b'.') {
        let denom_end = skip_while(b, pos + 1, |c| c.is_ascii_digit());
        denom = &s[pos + 1..denom_end];
        pos = denom_end;
    }
    let suffix = &s[pos..];
    // Suffix letters, then an optional signed number: the shape of every suffix, so
    // anything else is not a quantity at all rather than an unknown suffix.
    let mut end = skip_while(b, pos, |c| b"eEinumkKMGTP".contains(&c));
    if matches!(b.get(end), Some(b'+' | b'-')) {
        end += 1;
    }
    end = skip_while(b, end, |c| c.is_ascii_digit());
    if end != b.len() {
        return Err("not a number followed by a suffix");
    }
    Ok(Parts {
        negative,
        num,
        denom,
        has_digits: num_end > start || !denom.is_empty(),
        suffix: interpret(suffix)?,
    })
}

fn skip_while(b: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    b.iter()
        .skip(from)
        .position(|&c| !keep(c))
        .map_or(b.len(), |n| from + n)
}

fn interpret(suffix: &str) -> Result<Suffix, &'static str> {
    Ok(match suffix {
        "" => Suffix::Decimal(0),
        "n" => Suffix::Decimal(-9),
        "u" => Suffix::Decimal(-6),
        "m" => Suffix::Decimal(-3),
        "k" => Suffix::Decimal(3),
        "M" => Suffix::Decimal(6),
        "G" => Suffix::Decimal(9),
        "T" => Suffix::Decimal(12),
        "P" => Suffix::Decimal(15),
        "E" => Suffix::Decimal(18),
        "Ki" => Suffix::Binary(10),
        "Mi" => Suffix::Binary(20),
        "Gi" => Suffix::Binary(30),
        "Ti" => Suffix::Binary(40),
        "Pi" => Suffix::Binary(50),
        "Ei" => Suffix::Binary(60),
        s if s.len() > 1 && s.starts_with(['e', 'E']) => {
            let exponent: i64 = s[1..].parse().map_err(|_| "bad exponent")?;
            // Upstream silently keeps the low 32 bits of a larger exponent.
            Suffix::Decimal(i32::try_from(exponent).map_err(|_| "exponent out of range")?)
        }
        _ => return Err("unknown suffix"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(s: &str) -> (bool, &str, &str, Suffix) {
        let p = split(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        (p.negative, p.num, p.denom, p.suffix)
    }

    #[test]
    fn splits_like_parse_quantity_string() {
        use Suffix::*;
        assert_eq!(parts("1.5Gi"), (false, "1", "5", Binary(30)));
        assert_eq!(parts("-007.50m"), (true, "7", "50", Decimal(-3)));
        assert_eq!(parts("0.05"), (false, "0", "05", Decimal(0)));
        assert_eq!(parts("+.5e-3"), (false, "0", "5", Decimal(-3)));
        assert_eq!(parts("5."), (false, "5", "", Decimal(0)));
        assert_eq!(parts("."), (false, "0", "", Decimal(0)));
        assert_eq!(parts("-"), (true, "0", "", Decimal(0)));
        assert_eq!(parts("-000"), (true, "0", "", Decimal(0)));
        assert_eq!(parts("k"), (false, "0", "", Decimal(3)));
        assert_eq!(parts("1E+3"), (false, "1", "", Decimal(3)));
        assert_eq!(parts("1e2147483647"), (false, "1", "", Decimal(i32::MAX)));
    }

    #[test]
    fn refuses_what_upstream_refuses() {
        for bad in [
            "", "1.2.3", "1 k", "1K", "1e", "1ee2", "1ei", "1e3e", "e1x", "--1", "1Xi", "0x10",
        ] {
            assert!(split(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_absurd_input_instead_of_truncating_it() {
        assert_eq!(split("1e2147483648"), Err("exponent out of range"));
        assert_eq!(split("1e-99999999999"), Err("exponent out of range"));
        assert_eq!(split("1e99999999999999999999"), Err("bad exponent"));
        assert_eq!(split(&"1".repeat(MAX_LEN + 1)), Err("too long"));
    }
}
