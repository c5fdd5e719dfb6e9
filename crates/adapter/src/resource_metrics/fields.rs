//! `fieldSelector` on list requests, as the metrics API serves it: apimachinery's selector
//! syntax (`a=b,c!=d`, `==` for `=`, `\` escaping `\`, `,` and `=`), restricted to the two
//! fields every object's metadata has, and matched against the listed objects.

use crate::status::Status;

/// One `field=value` or `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    field: String,
    value: String,
    equal: bool,
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<Term>,
}

/// Splits on commas not preceded by an escaping backslash.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}

/// The first unescaped operator: `!=`, `==` or `=`, tried in that order at each position.
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    let mut escaped = false;
    for (i, c) in term.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        for op in ["!=", "==", "="] {
            if term[i..].starts_with(op) {
                return Some((&term[..i], op, &term[i + op.len()..]));
            }
        }
    }
    None
}

fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            if c == ',' || c == '=' {
                return Err(format!(
                    "invalid field selector value {value:?}: {c:?} must be escaped"
                ));
            }
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(e @ ('\\' | ',' | '=')) => out.push(e),
            _ => {
                return Err(format!(
                    "invalid escape sequence in field selector value {value:?}"
                ));
            }
        }
    }
    Ok(out)
}

impl FieldSelector {
    /// Parses `selector`; unknown fields and syntax errors are BadRequest with apimachinery's
    /// wording.
    pub fn parse(selector: &str) -> Result<Self, Status> {
        let mut terms = Vec::new();
        for part in split_terms(selector) {
            if part.is_empty() {
                continue;
            }
            let Some((field, op, value)) = split_term(part) else {
                return Err(Status::bad_request(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                )));
            };
            let value = unescape(value).map_err(Status::bad_request)?;
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(Status::bad_request(format!(
                    "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                    ferrocrane_core::promql::go_quote(field)
                )));
            }
            terms.push(Term {
                field: field.to_owned(),
                value,
                equal: op != "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    /// Whether an object matches. `namespace` is `None` for cluster-scoped objects, whose field
    /// set has no `metadata.namespace` (a term on it compares against "").
    pub fn matches(&self, name: &str, namespace: Option<&str>) -> bool {
        self.terms.iter().all(|t| {
            let actual = match t.field.as_str() {
                "metadata.name" => name,
                _ => namespace.unwrap_or(""),
            };
            (actual == t.value) == t.equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches() {
        let s = FieldSelector::parse("metadata.name=web-0").unwrap();
        assert!(s.matches("web-0", Some("ns")));
        assert!(!s.matches("web-1", Some("ns")));
        let s = FieldSelector::parse("metadata.name!=web-0,metadata.namespace==ns").unwrap();
        assert!(s.matches("web-1", Some("ns")));
        assert!(!s.matches("web-0", Some("ns")));
        assert!(!s.matches("web-1", Some("other")));
        assert!(FieldSelector::parse("").unwrap().matches("x", None));
        // Nodes have no namespace field: it reads as "".
        let s = FieldSelector::parse("metadata.namespace=").unwrap();
        assert!(s.matches("n1", None));
        let s = FieldSelector::parse("metadata.name=a\\,b").unwrap();
        assert!(s.matches("a,b", None));
    }

    #[test]
    fn rejects_like_apimachinery() {
        let e = FieldSelector::parse("spec.nodeName=n1").unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            r#""spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        let e = FieldSelector::parse("metadata.name").unwrap_err();
        assert_eq!(
            e.message,
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        assert!(FieldSelector::parse("metadata.name=a\\x").is_err());
    }
}
