//! The subset of Go `text/template` (with `<<` `>>` delimiters) that
//! prometheus-adapter configurations use.
//!
//! Templates are parsed once, when a config is loaded, into a list of text and
//! lookup nodes; rendering is then a walk over that list with no allocation
//! beyond the output. Supported actions: `<<.Field>>`, `<<.Map.key>>`,
//! `<<index .Map "key">>`, `<<index .Slice N>>`, comments `<</* ... */>>` and
//! Go's `<<-`/`->>` whitespace trimming. Anything else (`if`, `range`, pipes,
//! functions) is rejected at parse time naming the construct, rather than
//! producing a query that silently differs from what Go would render. The
//! adapter's Go templates register no extra functions, so `join` and friends
//! are errors upstream too.

use std::collections::BTreeMap;

use super::PromqlError;

/// The shape of a template field, which decides how Go prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Printed as is.
    Str,
    /// Printed like Go's `[a b c]`.
    Slice,
    /// Printed like Go's `map[k1:v1 k2:v2]` (keys sorted).
    Map,
}

/// A field value handed to [`Template::render`].
pub(super) enum Value<'a> {
    Str(&'a str),
    Slice(&'a [String]),
    Map(&'a BTreeMap<String, String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Node {
    Text(String),
    /// `.Field`
    Field(usize),
    /// `.Map.key`: a missing key prints `<no value>`, as Go does.
    MapField(usize, String),
    /// `index .Map "key"`: a missing key prints the zero value, "".
    IndexKey(usize, String),
    /// `index .Slice N`
    IndexPos(usize, usize),
}

/// A parsed template over a fixed set of named fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Template {
    pub(super) nodes: Vec<Node>,
}

fn unsupported(template: &str, construct: impl Into<String>) -> PromqlError {
    PromqlError::TemplateUnsupported {
        template: template.to_owned(),
        construct: construct.into(),
    }
}

fn syntax(template: &str, reason: impl Into<String>) -> PromqlError {
    PromqlError::TemplateSyntax {
        template: template.to_owned(),
        reason: reason.into(),
    }
}

/// Finds the `>>` closing an action, skipping quoted strings.
fn find_close(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
                i += 1;
            }
            b'>' if b.get(i + 1) == Some(&b'>') => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn is_go_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Splits an action body into words, keeping quoted strings whole.
fn words(body: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = body.trim_matches(is_go_space);
    while !rest.is_empty() {
        let len = if rest.starts_with('"') {
            let b = rest.as_bytes();
            let mut i = 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            if i >= b.len() {
                return Err("unterminated quoted string".into());
            }
            i + 1
        } else if let Some(r) = rest.strip_prefix('`') {
            r.find('`').ok_or("unterminated raw string")? + 2
        } else {
            rest.find(is_go_space).unwrap_or(rest.len())
        };
        out.push(&rest[..len]);
        rest = rest[len..].trim_start_matches(is_go_space);
    }
    Ok(out)
}

/// Decodes a Go string literal (interpreted or raw).
fn go_unquote(lit: &str) -> Result<String, String> {
    if let Some(raw) = lit.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        return Ok(raw.to_owned());
    }
    let inner = lit
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .ok_or_else(|| format!("{lit} is not a string literal"))?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let esc = chars.next().ok_or("dangling backslash")?;
        let hex = |n: usize, chars: &mut std::str::Chars<'_>| -> Result<u32, String> {
            let s: String = chars.take(n).collect();
            if s.len() != n {
                return Err("short escape".into());
            }
            u32::from_str_radix(&s, 16).map_err(|e| e.to_string())
        };
        let decoded = match esc {
            'a' => '\x07',
            'b' => '\x08',
            'f' => '\x0c',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\x0b',
            '\\' => '\\',
            '"' => '"',
            'x' => char::from_u32(hex(2, &mut chars)?).ok_or("bad \\x escape")?,
            'u' => char::from_u32(hex(4, &mut chars)?).ok_or("bad \\u escape")?,
            'U' => char::from_u32(hex(8, &mut chars)?).ok_or("bad \\U escape")?,
            other => return Err(format!("unknown escape \\{other}")),
        };
        out.push(decoded);
    }
    Ok(out)
}

/// Resolves `.Field` or `.Field.key` to the field index, its kind and the key.
fn lookup_field<'w>(
    src: &str,
    fields: &[(&str, Kind)],
    word: &'w str,
) -> Result<(usize, Kind, Option<&'w str>), PromqlError> {
    let path = word
        .strip_prefix('.')
        .ok_or_else(|| unsupported(src, word))?;
    let (head, tail) = match path.split_once('.') {
        Some((h, t)) => (h, Some(t)),
        None => (path, None),
    };
    if head.is_empty() {
        return Err(unsupported(src, word));
    }
    let idx = fields.iter().position(|(n, _)| *n == head).ok_or_else(|| {
        let available = fields
            .iter()
            .map(|(n, _)| format!(".{n}"))
            .collect::<Vec<_>>()
            .join(", ");
        syntax(
            src,
            format!("unknown field .{head} (available: {available})"),
        )
    })?;
    Ok((idx, fields[idx].1, tail))
}

impl Template {
    /// Parses `src` against the allowed `fields`.
    pub(super) fn parse(src: &str, fields: &[(&str, Kind)]) -> Result<Template, PromqlError> {
        let lookup = |word| lookup_field(src, fields, word);
        let mut nodes = Vec::new();
        let mut rest = src;
        let mut trim_next = false;
        while !rest.is_empty() {
            let (text, action) = match rest.find("<<") {
                Some(p) => (&rest[..p], Some(&rest[p + 2..])),
                None => (rest, None),
            };
            let mut text = if trim_next {
                text.trim_start_matches(is_go_space)
            } else {
                text
            };
            trim_next = false;
            let Some(after_open) = action else {
                if !text.is_empty() {
                    nodes.push(Node::Text(text.to_owned()));
                }
                break;
            };
            let close =
                find_close(after_open).ok_or_else(|| syntax(src, "unclosed action: missing >>"))?;
            let mut body = &after_open[..close];
            rest = &after_open[close + 2..];
            // Go's trim markers: "<<- " and " ->>" (the space is required).
            if let Some(b) = body.strip_prefix('-')
                && b.starts_with(is_go_space)
            {
                text = text.trim_end_matches(is_go_space);
                body = b;
            }
            if let Some(b) = body.strip_suffix('-')
                && b.ends_with(is_go_space)
            {
                trim_next = true;
                body = b;
            }
            if !text.is_empty() {
                nodes.push(Node::Text(text.to_owned()));
            }
            let trimmed = body.trim_matches(is_go_space);
            if trimmed.starts_with("/*") {
                if !trimmed.ends_with("*/") {
                    return Err(syntax(src, "unclosed comment"));
                }
                continue;
            }
            let ws = words(body).map_err(|e| syntax(src, e))?;
            let node = match ws.as_slice() {
                [] => return Err(syntax(src, "empty action <<>>")),
                [w] if w.starts_with('.') => match lookup(w)? {
                    (i, _, None) => Node::Field(i),
                    (i, Kind::Map, Some(key)) if !key.contains('.') => {
                        Node::MapField(i, key.to_owned())
                    }
                    _ => return Err(unsupported(src, *w)),
                },
                ["index", target, key] => {
                    let (i, kind, tail) = lookup(target)?;
                    if tail.is_some() {
                        return Err(unsupported(src, format!("index {target}")));
                    }
                    match kind {
                        Kind::Map => {
                            Node::IndexKey(i, go_unquote(key).map_err(|e| syntax(src, e))?)
                        }
                        Kind::Slice => Node::IndexPos(
                            i,
                            key.parse().map_err(|_| {
                                syntax(src, format!("slice index {key} is not a number"))
                            })?,
                        ),
                        Kind::Str => return Err(unsupported(src, format!("index {target}"))),
                    }
                }
                [first, ..] => {
                    let construct = if ws.contains(&"|") {
                        "| (pipeline)".to_owned()
                    } else {
                        (*first).to_owned()
                    };
                    return Err(unsupported(src, construct));
                }
            };
            nodes.push(node);
        }
        Ok(Template { nodes })
    }

    /// Renders with `value(i)` giving the value of field `i`.
    pub(super) fn render<'a>(
        &self,
        src_for_errors: &str,
        value: impl Fn(usize) -> Value<'a>,
    ) -> Result<String, PromqlError> {
        let mut out = String::with_capacity(128);
        for node in &self.nodes {
            match node {
                Node::Text(t) => out.push_str(t),
                Node::Field(i) => match value(*i) {
                    Value::Str(s) => out.push_str(s),
                    Value::Slice(items) => {
                        out.push('[');
                        out.push_str(&items.join(" "));
                        out.push(']');
                    }
                    Value::Map(m) => {
                        out.push_str("map[");
                        for (n, (k, v)) in m.iter().enumerate() {
                            if n > 0 {
                                out.push(' ');
                            }
                            out.push_str(k);
                            out.push(':');
                            out.push_str(v);
                        }
                        out.push(']');
                    }
                },
                Node::MapField(i, key) => {
                    if let Value::Map(m) = value(*i) {
                        out.push_str(m.get(key).map_or("<no value>", String::as_str));
                    }
                }
                Node::IndexKey(i, key) => {
                    if let Value::Map(m) = value(*i) {
                        out.push_str(m.get(key).map_or("", String::as_str));
                    }
                }
                Node::IndexPos(i, pos) => {
                    if let Value::Slice(items) = value(*i) {
                        let item = items.get(*pos).ok_or_else(|| PromqlError::TemplateRender {
                            template: src_for_errors.to_owned(),
                            reason: format!("index out of range: {pos}"),
                        })?;
                        out.push_str(item);
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: &[(&str, Kind)] = &[("S", Kind::Str), ("L", Kind::Slice), ("M", Kind::Map)];

    fn render(src: &str) -> Result<String, PromqlError> {
        let t = Template::parse(src, F)?;
        let l = vec!["a".to_owned(), "b".to_owned()];
        let m: BTreeMap<String, String> = [("z", "1"), ("k", "v|w")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        t.render(src, |i| match i {
            0 => Value::Str("str"),
            1 => Value::Slice(&l),
            _ => Value::Map(&m),
        })
    }

    #[test]
    fn printing_like_go() {
        assert_eq!(
            render("x <<.S>> <<.L>> <<.M>>").unwrap(),
            "x str [a b] map[k:v|w z:1]"
        );
        assert_eq!(
            render(r#"<<index .M "k">>|<<index .M "nope">>|<<.M.z>>|<<.M.nope>>"#).unwrap(),
            "v|w||1|<no value>"
        );
        assert_eq!(render("<<index .L 1>>").unwrap(), "b");
        assert_eq!(render("no actions > < >").unwrap(), "no actions > < >");
        assert_eq!(render("a  <<- .S ->>  b").unwrap(), "astrb");
        assert_eq!(render("a <</* note */>>b").unwrap(), "a b");
        assert_eq!(
            render(r#"<<index .M `k`>><<index .M "\x6b">>"#).unwrap(),
            "v|wv|w"
        );
        assert_eq!(render("").unwrap(), "");
    }

    #[test]
    fn errors_name_the_construct() {
        let e = render("<<if .S>>x<<end>>").unwrap_err().to_string();
        assert!(e.contains("`if`"), "{e}");
        let e = render("<<.S | printf>>").unwrap_err().to_string();
        assert!(e.contains("pipeline"), "{e}");
        let e = render("<<join .L \",\">>").unwrap_err().to_string();
        assert!(e.contains("`join`"), "{e}");
        let e = render("<<.Nope>>").unwrap_err().to_string();
        assert!(e.contains(".Nope") && e.contains(".S"), "{e}");
        assert!(render("<<.S").is_err());
        assert!(render("<<index .L 5>>").is_err());
        assert!(render("<<index .S 0>>").is_err());
        assert!(render("<<.>>").is_err());
    }
}
