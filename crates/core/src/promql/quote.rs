//! Go `strconv.Quote` (what `fmt`'s `%q` does with a string), reproduced.
//!
//! prometheus-adapter writes every matcher value with `%q`, so the queries it
//! sends (and that users see in logs and copy into dashboards) use Go's
//! escapes. PromQL string literals accept exactly Go's escape syntax, so the
//! result is always a valid PromQL string. Which characters Go escapes depends
//! on its `IsPrint` table (Unicode letters, marks, numbers, punctuation,
//! symbols and ASCII space); that table is generated from Go 1.26 by running
//! `strconv.IsPrint` over every scalar value and storing the printable ranges.

#[path = "isprint_table.rs"]
mod isprint_table;

/// Whether Go's `strconv.IsPrint` holds for `c`.
pub fn go_is_print(c: char) -> bool {
    let c = c as u32;
    let table = isprint_table::GO_PRINTABLE;
    // Index of the first range starting after `c`; the one before may hold it.
    let idx = table.partition_point(|&(start, _)| start <= c);
    idx > 0 && c <= table[idx - 1].1
}

/// Appends `s` as a double-quoted Go string literal.
pub fn write_go_quote(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if go_is_print(c) => out.push(c),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => {
                out.push_str("\\x");
                out.push(HEX[(c as usize >> 4) & 0xf] as char);
                out.push(HEX[c as usize & 0xf] as char);
            }
            c if (c as u32) < 0x10000 => {
                out.push_str("\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[(c as usize >> shift) & 0xf] as char);
                }
            }
            c => {
                out.push_str("\\U");
                for shift in [28, 24, 20, 16, 12, 8, 4, 0] {
                    out.push(HEX[(c as usize >> shift) & 0xf] as char);
                }
            }
        }
    }
    out.push('"');
}

/// `s` as a double-quoted Go string literal, like Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::new();
    write_go_quote(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
            .collect()
    }

    #[test]
    fn handpicked() {
        assert_eq!(go_quote(""), r#""""#);
        assert_eq!(go_quote("abc"), r#""abc""#);
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("\x07\x08\x0c\n\r\t\x0b"), r#""\a\b\f\n\r\t\v""#);
        assert_eq!(go_quote("\0\x01\x1f\x7f"), r#""\x00\x01\x1f\x7f""#);
        assert_eq!(go_quote("é日本"), "\"é日本\"");
        assert_eq!(
            go_quote("\u{a0}\u{200b}\u{feff}"),
            r#""\u00a0\u200b\ufeff""#
        );
        assert_eq!(go_quote("\u{1F600}"), "\"\u{1F600}\"");
        assert_eq!(go_quote("\u{E0001}"), r#""\U000e0001""#);
        assert_eq!(go_quote("'`|.*"), "\"'`|.*\"");
    }

    /// Vectors from Go 1.26 `strconv.Quote` over random strings mixing ASCII,
    /// BMP and supplementary-plane characters (hex-encoded input and output).
    #[test]
    fn matches_go_vectors() {
        let data = include_str!("testdata/go_quote.txt");
        let mut n = 0;
        for line in data.lines() {
            let (input, want) = line.split_once(' ').unwrap_or((line, ""));
            let input = String::from_utf8(unhex(input)).expect("utf-8 input");
            let want = String::from_utf8(unhex(want)).expect("utf-8 output");
            assert_eq!(go_quote(&input), want, "input {input:?}");
            n += 1;
        }
        assert!(n >= 2000);
    }

    #[test]
    fn table_is_sorted_and_disjoint() {
        let t = isprint_table::GO_PRINTABLE;
        assert!(t.windows(2).all(|w| w[0].1 < w[1].0 && w[0].0 <= w[0].1));
    }
}
