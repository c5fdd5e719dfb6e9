//! Kubernetes label selectors (`a=b,c in (x,y),!d`) and their PromQL matchers.
//!
//! The HPA passes a metric selector in Kubernetes syntax; prometheus-adapter
//! parses it with apimachinery's `labels.Parse` and turns each requirement into
//! one PromQL matcher. Reproducing apimachinery's normalisation matters for the
//! generated query text: requirements come out sorted by key and set values
//! sorted and de-duplicated, so `b in (y,x),a=1` yields `a="1",b=~"x|y"`.

use super::{PromqlError, label_eq, label_matches, label_neq, label_not_matches};

/// A selector operator, after `==` has been folded into `=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value` or `key==value`.
    Equals,
    /// `key!=value`.
    NotEquals,
    /// `key in (v1,v2)`.
    In,
    /// `key notin (v1,v2)`.
    NotIn,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
}

/// One parsed selector requirement. `values` is sorted and de-duplicated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub op: Operator,
    /// The values (one for `=`/`!=`, at least one for sets, none for existence).
    pub values: Vec<String>,
}

impl Requirement {
    /// The PromQL matcher prometheus-adapter writes for this requirement.
    ///
    /// `=`/`!=` with one value use equality; sets use a regex match of the
    /// values joined by `|` (values are not regex-escaped, as upstream: a
    /// single value thus doubles as a user-supplied regex); existence becomes
    /// `!=""` and absence `=""`.
    pub fn to_matcher(&self) -> String {
        let joined = self.values.join("|");
        match self.op {
            Operator::Exists => label_neq(&self.key, ""),
            Operator::DoesNotExist => label_eq(&self.key, ""),
            Operator::Equals if self.values.len() == 1 => label_eq(&self.key, &joined),
            Operator::NotEquals if self.values.len() == 1 => label_neq(&self.key, &joined),
            Operator::Equals | Operator::In => label_matches(&self.key, &joined),
            Operator::NotEquals | Operator::NotIn => label_not_matches(&self.key, &joined),
        }
    }

    /// Whether an object whose label `key` has `value` (`None`: no such label) satisfies it,
    /// as apimachinery's `labels.Requirement.Matches`: `!=` and `notin` also match objects
    /// without the label.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Operator::Equals | Operator::In => value.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(listed),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    Eq,
    DoubleEq,
    NotEq,
    Bang,
    In,
    NotIn,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
}

fn is_special(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '=' | '!' | '(' | ')' | '<' | '>')
}

fn lex(input: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut rest = input;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let (tok, len) = match c {
            ',' => (Tok::Comma, 1),
            '(' => (Tok::Open, 1),
            ')' => (Tok::Close, 1),
            '<' => (Tok::Lt, 1),
            '>' => (Tok::Gt, 1),
            '=' if rest.starts_with("==") => (Tok::DoubleEq, 2),
            '=' => (Tok::Eq, 1),
            '!' if rest.starts_with("!=") => (Tok::NotEq, 2),
            '!' => (Tok::Bang, 1),
            _ => {
                let len = rest.find(is_special).unwrap_or(rest.len());
                let word = &rest[..len];
                let tok = match word {
                    "in" => Tok::In,
                    "notin" => Tok::NotIn,
                    w => Tok::Ident(w),
                };
                (tok, len)
            }
        };
        out.push(tok);
        rest = &rest[len..];
    }
    out
}

/// Parses a Kubernetes label selector string.
///
/// Keys and values are validated like apimachinery does (qualified names,
/// label values of at most 63 characters), because an HPA selector that
/// Kubernetes would reject should not silently become a PromQL matcher.
/// `>` and `<` parse in Kubernetes but cannot be expressed as a PromQL label
/// matcher, so they are an error here rather than at query time.
pub fn parse_label_selector(selector: &str) -> Result<Vec<Requirement>, PromqlError> {
    parse_selector(selector, None)
}

/// `key>N` or `key<N`: Kubernetes accepts these for object labels (the label's value read as
/// an integer), though no PromQL matcher can express them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderingRequirement {
    pub key: String,
    /// `>` when true, `<` when false.
    pub greater: bool,
    pub bound: i64,
}

impl OrderingRequirement {
    /// Whether labels with `value` under the key satisfy it (a missing or non-integer value
    /// never does, as in apimachinery).
    pub fn matches(&self, value: Option<&str>) -> bool {
        match value.and_then(|v| v.parse::<i64>().ok()) {
            Some(v) if self.greater => v > self.bound,
            Some(v) => v < self.bound,
            None => false,
        }
    }
}

/// A label selector over Kubernetes objects: [`parse_label_selector`]'s requirements plus
/// the `>`/`<` ones only objects support.
pub fn parse_object_label_selector(
    selector: &str,
) -> Result<(Vec<Requirement>, Vec<OrderingRequirement>), PromqlError> {
    let mut orderings = Vec::new();
    let reqs = parse_selector(selector, Some(&mut orderings))?;
    Ok((reqs, orderings))
}

fn parse_selector(
    selector: &str,
    mut orderings: Option<&mut Vec<OrderingRequirement>>,
) -> Result<Vec<Requirement>, PromqlError> {
    let err = |reason: String| PromqlError::Selector {
        selector: selector.to_owned(),
        reason,
    };
    let toks = lex(selector);
    let mut reqs = Vec::new();
    let mut i = 0;
    if toks.is_empty() {
        return Ok(reqs);
    }
    loop {
        let (key, op) = match toks.get(i) {
            Some(Tok::Bang) => match toks.get(i + 1) {
                Some(Tok::Ident(k)) => {
                    i += 2;
                    (*k, Some(Operator::DoesNotExist))
                }
                _ => return Err(err("expected a key after '!'".into())),
            },
            Some(Tok::Ident(k)) => {
                i += 1;
                (*k, None)
            }
            other => return Err(err(format!("expected a key, found {}", describe(other)))),
        };
        validate_key(key).map_err(|r| err(format!("invalid key {key:?}: {r}")))?;
        // `None` for a `>`/`<` requirement, which goes to `orderings` instead.
        let req = match op {
            Some(op) => Some(Requirement {
                key: key.to_owned(),
                op,
                values: vec![],
            }),
            None => match toks.get(i) {
                None | Some(Tok::Comma) => Some(Requirement {
                    key: key.to_owned(),
                    op: Operator::Exists,
                    values: vec![],
                }),
                Some(t @ (Tok::Eq | Tok::DoubleEq | Tok::NotEq)) => {
                    let op = if *t == Tok::NotEq {
                        Operator::NotEquals
                    } else {
                        Operator::Equals
                    };
                    i += 1;
                    let value = match toks.get(i) {
                        Some(t) if value_word(t).is_some() => {
                            i += 1;
                            value_word(t).unwrap_or_default()
                        }
                        None | Some(Tok::Comma) => "",
                        other => {
                            return Err(err(format!(
                                "expected a value after {key:?}, found {}",
                                describe(other)
                            )));
                        }
                    };
                    Some(Requirement {
                        key: key.to_owned(),
                        op,
                        values: vec![value.to_owned()],
                    })
                }
                Some(t @ (Tok::In | Tok::NotIn)) => {
                    let op = if *t == Tok::In {
                        Operator::In
                    } else {
                        Operator::NotIn
                    };
                    i += 1;
                    if toks.get(i) != Some(&Tok::Open) {
                        return Err(err(format!("expected '(' after {key:?} in/notin")));
                    }
                    i += 1;
                    let mut values = Vec::new();
                    let mut expect_value = true;
                    loop {
                        match toks.get(i) {
                            Some(t) if expect_value && value_word(t).is_some() => {
                                values.push(value_word(t).unwrap_or_default().to_owned());
                                expect_value = false;
                            }
                            Some(Tok::Comma) => {
                                if expect_value {
                                    values.push(String::new());
                                }
                                expect_value = true;
                            }
                            Some(Tok::Close) => {
                                if expect_value && !values.is_empty() {
                                    values.push(String::new());
                                }
                                i += 1;
                                break;
                            }
                            other => {
                                return Err(err(format!(
                                    "unexpected {} in the value set of {key:?}",
                                    describe(other)
                                )));
                            }
                        }
                        i += 1;
                    }
                    if values.is_empty() {
                        return Err(err(format!("the value set of {key:?} is empty")));
                    }
                    Some(Requirement {
                        key: key.to_owned(),
                        op,
                        values,
                    })
                }
                Some(t @ (Tok::Gt | Tok::Lt)) if orderings.is_some() => {
                    let greater = *t == Tok::Gt;
                    let value = match toks.get(i + 1) {
                        Some(t) if value_word(t).is_some() => value_word(t).unwrap_or_default(),
                        other => {
                            return Err(err(format!(
                                "expected an integer after {key:?}, found {}",
                                describe(other)
                            )));
                        }
                    };
                    i += 2;
                    let bound = value.parse::<i64>().map_err(|_| {
                        err(format!(
                            "the value of {key:?} must be an integer for '>' and '<', not {value:?}"
                        ))
                    })?;
                    if let Some(o) = orderings.as_deref_mut() {
                        o.push(OrderingRequirement {
                            key: key.to_owned(),
                            greater,
                            bound,
                        });
                    }
                    None
                }
                Some(t @ (Tok::Gt | Tok::Lt)) => {
                    return Err(PromqlError::UnsupportedOperator {
                        key: key.to_owned(),
                        op: if *t == Tok::Gt { ">" } else { "<" },
                    });
                }
                other => {
                    return Err(err(format!(
                        "expected an operator after {key:?}, found {}",
                        describe(other)
                    )));
                }
            },
        };
        if let Some(mut req) = req {
            for v in &req.values {
                validate_value(v)
                    .map_err(|r| err(format!("invalid value {v:?} for {key:?}: {r}")))?;
            }
            req.values.sort();
            req.values.dedup();
            reqs.push(req);
        }
        match toks.get(i) {
            None => break,
            Some(Tok::Comma) => i += 1,
            other => {
                return Err(err(format!(
                    "expected ',' or the end, found {}",
                    describe(other)
                )));
            }
        }
    }
    reqs.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(reqs)
}

/// A token in value position: `in` and `notin` are plain words there, as in
/// apimachinery's value context.
fn value_word<'a>(t: &Tok<'a>) -> Option<&'a str> {
    match t {
        Tok::Ident(v) => Some(v),
        Tok::In => Some("in"),
        Tok::NotIn => Some("notin"),
        _ => None,
    }
}

fn describe(t: Option<&Tok<'_>>) -> String {
    match t {
        None => "the end of the selector".into(),
        Some(Tok::Ident(s)) => format!("{s:?}"),
        Some(Tok::Eq) => "'='".into(),
        Some(Tok::DoubleEq) => "'=='".into(),
        Some(Tok::NotEq) => "'!='".into(),
        Some(Tok::Bang) => "'!'".into(),
        Some(Tok::In) => "'in'".into(),
        Some(Tok::NotIn) => "'notin'".into(),
        Some(Tok::Gt) => "'>'".into(),
        Some(Tok::Lt) => "'<'".into(),
        Some(Tok::Comma) => "','".into(),
        Some(Tok::Open) => "'('".into(),
        Some(Tok::Close) => "')'".into(),
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn validate_name_part(s: &str) -> Result<(), String> {
    if s.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    let b = s.as_bytes();
    let ok_inner = b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    let ok_ends = b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric);
    if ok_inner && ok_ends {
        Ok(())
    } else {
        Err("must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric".into())
    }
}

/// A qualified name: `[prefix/]name`, prefix a DNS subdomain of at most 253.
fn validate_key(key: &str) -> Result<(), String> {
    let name = match key.rsplit_once('/') {
        Some((prefix, name)) => {
            let dns_ok = !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|l| {
                    let b = l.as_bytes();
                    !b.is_empty()
                        && b.iter()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                        && b[0] != b'-'
                        && b[b.len() - 1] != b'-'
                });
            if !dns_ok {
                return Err("prefix must be a lowercase DNS subdomain".into());
            }
            name
        }
        None => key,
    };
    if name.is_empty() {
        return Err("name part must not be empty".into());
    }
    validate_name_part(name)
}

fn validate_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        Ok(())
    } else {
        validate_name_part(v)
    }
}

/// Converts a parsed selector into PromQL matchers, in selector order.
pub fn requirements_to_matchers(reqs: &[Requirement]) -> Vec<String> {
    reqs.iter().map(Requirement::to_matcher).collect()
}

/// Parses a Kubernetes selector and returns its PromQL matchers joined by `,`.
pub fn label_selector_to_matchers(selector: &str) -> Result<String, PromqlError> {
    Ok(requirements_to_matchers(&parse_label_selector(selector)?).join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> String {
        label_selector_to_matchers(s).unwrap()
    }

    #[test]
    fn operators() {
        assert_eq!(m(""), "");
        assert_eq!(m("a=b"), r#"a="b""#);
        assert_eq!(m("a==b"), r#"a="b""#);
        assert_eq!(m("a!=b"), r#"a!="b""#);
        assert_eq!(m("a in (y,x)"), r#"a=~"x|y""#);
        assert_eq!(m("a in (x)"), r#"a=~"x""#);
        assert_eq!(m("a notin (x,y)"), r#"a!~"x|y""#);
        assert_eq!(m("a notin (x)"), r#"a!~"x""#);
        assert_eq!(m("a"), r#"a!="""#);
        assert_eq!(m("!a"), r#"a="""#);
        assert_eq!(m("a="), r#"a="""#);
        assert_eq!(m(" a = b , c "), r#"a="b",c!="""#);
    }

    #[test]
    fn sorted_by_key_and_values_deduplicated() {
        assert_eq!(
            m("zone in (b,a,b),app=web,!legacy"),
            r#"app="web",legacy="",zone=~"a|b""#
        );
        assert_eq!(
            m("app.kubernetes.io/name=x"),
            r#"app.kubernetes.io/name="x""#
        );
    }

    #[test]
    fn rejects() {
        assert!(matches!(
            parse_label_selector("a>1"),
            Err(PromqlError::UnsupportedOperator { op: ">", .. })
        ));
        assert!(matches!(
            parse_label_selector("a<1"),
            Err(PromqlError::UnsupportedOperator { op: "<", .. })
        ));
        assert_eq!(m("a=in,b in (notin)"), r#"a="in",b=~"notin""#);
        for bad in [
            "a in ()", "a in x", "=b", "a b", "a=b=c", "-a=b", "a=b c", "a in (x", "a,", "a=-x",
            "A/b=c", "in=x",
        ] {
            assert!(parse_label_selector(bad).is_err(), "{bad}");
        }
        let e = parse_label_selector("a>1").unwrap_err().to_string();
        assert!(e.contains('>') && e.contains('a'), "{e}");
    }

    #[test]
    fn requirements_match_objects_like_apimachinery() {
        let reqs = parse_label_selector("a=x,b!=y,c in (p,q),d notin (r),e,!f").unwrap();
        let verdicts: Vec<[bool; 2]> = reqs
            .iter()
            .map(|r| [r.matches(None), r.matches(Some("x"))])
            .collect();
        assert_eq!(
            verdicts,
            [
                [false, true], // a=x
                [true, true],  // b!=y: an absent label is not y
                [false, false],
                [true, true], // d notin (r)
                [false, true],
                [true, false],
            ]
        );
    }
}
