//! The bearer token of a request.

use http::HeaderMap;

/// The token of an `Authorization` header value `Bearer <token>` (scheme case-insensitive,
/// surrounding blanks ignored); `None` for any other scheme or an empty token.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The bearer token of a request's `Authorization` header; `None` when there is none or the
/// header is not text.
pub fn request_bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    bearer_token(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bearer_tokens_are_read_from_the_header() {
        assert_eq!(bearer_token("Bearer abc.def"), Some("abc.def"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("abc"), None);
    }

    #[test]
    fn missing_or_binary_header_has_no_token() {
        let mut headers = HeaderMap::new();
        assert_eq!(request_bearer_token(&headers), None);
        headers.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_bytes(b"Bearer \xff").unwrap(),
        );
        assert_eq!(request_bearer_token(&headers), None);
        headers.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer t0k"),
        );
        assert_eq!(request_bearer_token(&headers), Some("t0k"));
    }

    proptest! {
        #[test]
        fn a_bearer_header_yields_its_token(token in "[A-Za-z0-9._~+/=-]{1,64}") {
            let header = format!("Bearer {token}");
            prop_assert_eq!(bearer_token(&header), Some(token.as_str()));
        }

        #[test]
        fn never_panics(value in ".{0,64}") {
            let _ = bearer_token(&value);
        }
    }
}
