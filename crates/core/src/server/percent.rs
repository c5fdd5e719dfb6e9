//! Percent-decoding of URL parts and header keys, as Go's `net/url` unescapes them.

/// Which part of a URL a string is: only in a query component is `+` a space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlPart {
    /// A path segment (Go's `url.PathUnescape`, and `URL.Path`, which is what Kubernetes routes
    /// and authorizes on: kubectl sends `*` as `%2A`). Also what the front proxy's
    /// `X-Remote-Extra-` keys are.
    PathSegment,
    /// A query key or value (Go's `url.QueryUnescape`, as `url.ParseQuery` uses it).
    QueryComponent,
}

/// Percent-decodes `s` as Go does for `part`, except that it never fails: an invalid escape
/// (`%` not followed by two hex digits) is kept literally, so a malformed request still gets an
/// answer about what it asked, and bytes that do not form UTF-8 become U+FFFD.
pub fn percent_decode(s: &str, part: UrlPart) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if let (Some(high), Some(low)) =
                    (hex_digit(bytes.get(i + 1)), hex_digit(bytes.get(i + 2)))
                {
                    out.push(high << 4 | low);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            b'+' if part == UrlPart::QueryComponent => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of one hex digit; signs and anything else are not digits (Go's `ishex`).
fn hex_digit(b: Option<&u8>) -> Option<u8> {
    match *b? {
        b @ b'0'..=b'9' => Some(b - b'0'),
        b @ b'a'..=b'f' => Some(b - b'a' + 10),
        b @ b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use UrlPart::{PathSegment, QueryComponent};

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%2Fb", PathSegment), "a/b");
        assert_eq!(percent_decode("bad%zz%", PathSegment), "bad%zz%");
        assert_eq!(percent_decode("%e2%82%ac", PathSegment), "€");
        assert_eq!(percent_decode("a%zz%4", QueryComponent), "a%zz%4");
        assert_eq!(percent_decode("%2A+x", PathSegment), "*+x");
    }

    #[test]
    fn plus_is_a_space_only_in_queries() {
        assert_eq!(
            percent_decode("tier+in+(a%2Cb)", QueryComponent),
            "tier in (a,b)"
        );
        assert_eq!(percent_decode("a+b%2B", PathSegment), "a+b+");
        assert_eq!(percent_decode("a+b%2B", QueryComponent), "a b+");
    }

    #[test]
    fn signs_are_not_hex_digits() {
        // `u8::from_str_radix` takes "+1" for 1 (the adapter's copy decoded this); Go's
        // unescape does not.
        assert_eq!(old_adapter_decode("%+1", false), "\u{1}");
        assert_eq!(percent_decode("%+1", QueryComponent), "% 1");
        assert_eq!(percent_decode("%+1", PathSegment), "%+1");
        assert_eq!(percent_decode("%-1", PathSegment), "%-1");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_replaced() {
        assert_eq!(percent_decode("a%ffb", PathSegment), "a\u{fffd}b");
    }

    /// Escapes every byte outside Go's unreserved set (and, in queries, a space as `+`), in
    /// either letter case: the inverse the round trip is checked against.
    fn encode(s: &str, part: UrlPart, upper: bool) -> String {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    out.push(b as char)
                }
                b' ' if part == QueryComponent => out.push('+'),
                _ if upper => out.push_str(&format!("%{b:02X}")),
                _ => out.push_str(&format!("%{b:02x}")),
            }
        }
        out
    }

    /// The two copies this replaces, kept to show where the merged one agrees with them.
    fn old_adapter_decode(s: &str, plus_as_space: bool) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' if plus_as_space => out.push(b' '),
                b'%' if i + 2 < b.len() => {
                    let hex = std::str::from_utf8(&b[i + 1..i + 3])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok());
                    match hex {
                        Some(v) => {
                            out.push(v);
                            i += 3;
                            continue;
                        }
                        None => out.push(b'%'),
                    }
                }
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn old_front_proxy_decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && let (Some(h), Some(l)) = (
                    bytes.get(i + 1).and_then(|b| (*b as char).to_digit(16)),
                    bytes.get(i + 2).and_then(|b| (*b as char).to_digit(16)),
                )
            {
                // Two hex digits: at most 255.
                out.push(u8::try_from(h * 16 + l).unwrap_or(u8::MAX));
                i += 3;
                continue;
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Strings rich in escapes, valid and not.
    fn escapey() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("%".to_owned()),
                Just("+".to_owned()),
                Just("-".to_owned()),
                "[0-9a-fA-FzZ]",
                "%[0-9a-fA-F]{2}",
                ".",
            ],
            0..16,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn decode_of_encode_is_identity(s in ".{0,32}", upper: bool) {
            for part in [PathSegment, QueryComponent] {
                prop_assert_eq!(percent_decode(&encode(&s, part, upper), part), s.clone());
            }
        }

        #[test]
        fn never_panics(s in escapey()) {
            let _ = percent_decode(&s, PathSegment);
            let _ = percent_decode(&s, QueryComponent);
        }

        #[test]
        fn agrees_with_the_front_proxy_copy(s in escapey()) {
            prop_assert_eq!(percent_decode(&s, PathSegment), old_front_proxy_decode(&s));
        }

        #[test]
        fn agrees_with_the_adapter_copy_unless_a_sign_follows_percent(s in escapey()) {
            prop_assume!(!s.contains("%+") && !s.contains("%-"));
            prop_assert_eq!(percent_decode(&s, PathSegment), old_adapter_decode(&s, false));
            prop_assert_eq!(percent_decode(&s, QueryComponent), old_adapter_decode(&s, true));
        }
    }
}
