//! A strict reader of what [`super`] writes (text 0.0.4 and OpenMetrics), for tests and
//! tools that must check an exposition byte for byte: every escape is validated, names
//! are checked against the Prometheus grammar, and nothing is silently skipped.
//!
//! The `prometheus-parse` crate cannot serve here: it splits label pairs on `,` and `=`,
//! never unescapes, and ends a label set at the first `}`.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub name: String,
    pub help: String,
    /// The TYPE word as written (`gauge`, `counter`, `info`, ...).
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    pub headers: Vec<Header>,
    pub samples: Vec<ParsedSample>,
    /// Whether the document ended with OpenMetrics' `# EOF`.
    pub eof: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    pub line: usize,
    pub reason: String,
}

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn unescape(input: &str, allow_quote: bool) -> Result<String, String> {
    let mut out = String::with_capacity(input.len());
    let mut it = input.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('"') if allow_quote => out.push('"'),
            other => return Err(format!("bad escape {other:?}")),
        }
    }
    Ok(out)
}

/// Parses a sample value as Prometheus writes it (`NaN`, `+Inf`, `-Inf`, or a float).
pub fn parse_value(v: &str) -> Result<f64, String> {
    match v {
        "NaN" => Ok(f64::NAN),
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => v.parse().map_err(|e| format!("value {v:?}: {e}")),
    }
}

fn parse_sample(line: &str) -> Result<ParsedSample, String> {
    let name_end = line.find(['{', ' ']).ok_or("sample without value")?;
    let name = &line[..name_end];
    if !is_metric_name(name) {
        return Err(format!("invalid metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            let eq = rest.find('=').ok_or("label without =")?;
            let key = &rest[..eq];
            if !is_label_name(key) {
                return Err(format!("invalid label name {key:?}"));
            }
            rest = rest[eq + 1..]
                .strip_prefix('"')
                .ok_or("label value not quoted")?;
            // The closing quote is the first one not escaped.
            let bytes = rest.as_bytes();
            let mut i = 0;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            if i >= bytes.len() {
                return Err("unterminated label value".into());
            }
            labels.push((key.to_string(), unescape(&rest[..i], true)?));
            rest = &rest[i + 1..];
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            } else {
                return Err("expected , or }".into());
            }
        }
    }
    let v = rest.strip_prefix(' ').ok_or("no space before value")?;
    Ok(ParsedSample {
        name: name.to_string(),
        labels,
        value: parse_value(v)?,
    })
}

/// Parses a whole document; the first violation is an error naming its line.
pub fn parse_document(doc: &str) -> Result<Document, ParseError> {
    let mut d = Document::default();
    let err = |line: usize, reason: String| ParseError { line, reason };
    if doc.is_empty() {
        return Ok(d);
    }
    let body = doc
        .strip_suffix('\n')
        .ok_or_else(|| err(0, "document must end in a newline".into()))?;
    for (i, line) in body.split('\n').enumerate() {
        let n = i + 1;
        if d.eof {
            return Err(err(n, "content after # EOF".into()));
        }
        if line == "# EOF" {
            d.eof = true;
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest
                .split_once(' ')
                .ok_or_else(|| err(n, "HELP without text".into()))?;
            let help = unescape(help, false).map_err(|e| err(n, e))?;
            d.headers.push(Header {
                name: name.into(),
                help,
                kind: String::new(),
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest
                .split_once(' ')
                .ok_or_else(|| err(n, "TYPE without type".into()))?;
            let last = d
                .headers
                .last_mut()
                .ok_or_else(|| err(n, "TYPE before HELP".into()))?;
            if last.name != name {
                return Err(err(n, format!("TYPE {name} after HELP {}", last.name)));
            }
            last.kind = kind.into();
        } else {
            d.samples.push(parse_sample(line).map_err(|e| err(n, e))?);
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_what_prometheus_rejects() {
        for bad in [
            "x{a=\"b} 1\n",
            "x{a=b} 1\n",
            "x{1a=\"b\"} 1\n",
            "x-y 1\n",
            "x{a=\"\\q\"} 1\n",
            "x 1",
            "x one\n",
            "# EOF\nx 1\n",
        ] {
            assert!(parse_document(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn reads_escapes_and_special_values() {
        let d = parse_document("# HELP x a\\\\b\n# TYPE x gauge\nx{v=\"q\\\"\\n\\\\\"} +Inf\n")
            .expect("valid");
        assert_eq!(d.headers[0].help, "a\\b");
        assert_eq!(d.samples[0].labels[0].1, "q\"\n\\");
        assert!(d.samples[0].value.is_infinite());
    }
}
