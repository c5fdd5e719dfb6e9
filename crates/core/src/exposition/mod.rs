//! Metric families to Prometheus text 0.0.4 and OpenMetrics 1.0 bytes.
//!
//! The split between [`write_header`] and [`write_metric_line`] exists for
//! kube-state-metrics' design: each object's sample lines are rendered once,
//! when the object changes, and kept as bytes; a scrape then only writes each
//! family's `# HELP`/`# TYPE` header once and copies the stored bytes of every
//! object after it. Sample lines are identical in both formats, so stored bytes
//! never depend on what the scraper negotiated; only headers and the trailing
//! `# EOF` do.
//!
//! Nothing here does I/O or keeps global state: services own their registries.

mod float;
mod labels;
mod negotiate;
// A reader for checking output byte for byte; no service reads expositions, so it is built
// only for tests (and for other crates' tests through the `test-support` feature).
#[cfg(any(test, feature = "test-support"))]
pub mod parse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

pub use float::{format_float, write_float};
pub use labels::{
    escape_help_into, escape_label_value_into, kube_btree_labels_to_prometheus, kube_label_name,
    kube_labels_to_prometheus, sanitize_label_name,
};
pub use negotiate::{Negotiated, negotiate};

/// Errors from building exposition output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpositionError {
    /// A sample had a different number of label names and label values; the
    /// line would silently pair the wrong value with a name.
    #[error("metric {name}: {keys} label names but {values} label values")]
    LabelArity {
        /// Metric name of the offending line.
        name: String,
        /// Number of label names.
        keys: usize,
        /// Number of label values.
        values: usize,
    },
}

/// The wire format a scrape is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// Prometheus text format 0.0.4, what every scraper understands.
    #[default]
    Text004,
    /// OpenMetrics 1.0.0 text, only served when the scraper asks for it.
    OpenMetrics,
}

impl Format {
    /// The `Content-Type` header value for a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text004 => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// What must follow the last family: OpenMetrics requires `# EOF`, text
    /// has no terminator.
    pub fn terminator(self) -> &'static [u8] {
        match self {
            Format::Text004 => b"",
            Format::OpenMetrics => b"# EOF\n",
        }
    }
}

/// A family's type, as it appears on the `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// A value that can go up and down.
    Gauge,
    /// A monotonically increasing value.
    Counter,
    /// OpenMetrics info; text 0.0.4 has no such type, so it is written as gauge.
    Info,
    /// OpenMetrics stateset; written as gauge in text 0.0.4.
    StateSet,
    /// A histogram; its samples must carry `_bucket`/`_sum`/`_count` suffixes
    /// (see [`Metric::suffix`]).
    Histogram,
    /// Untyped (`untyped` in text, `unknown` in OpenMetrics).
    Unknown,
}

impl MetricType {
    /// The type word written on the `# TYPE` line in `format`.
    pub fn type_str(self, format: Format) -> &'static str {
        match (self, format) {
            (MetricType::Gauge, _) => "gauge",
            (MetricType::Counter, _) => "counter",
            (MetricType::Histogram, _) => "histogram",
            (MetricType::Info, Format::OpenMetrics) => "info",
            (MetricType::StateSet, Format::OpenMetrics) => "stateset",
            (MetricType::Info | MetricType::StateSet, Format::Text004) => "gauge",
            (MetricType::Unknown, Format::Text004) => "untyped",
            (MetricType::Unknown, Format::OpenMetrics) => "unknown",
        }
    }
}

/// One sample. Its name comes from the family, which saves repeating it per
/// object and keeps families from containing stray names.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metric {
    /// Appended to the family name for this sample (`_bucket`, `_sum`, ...);
    /// empty for everything kube-state-metrics emits.
    pub suffix: Cow<'static, str>,
    /// Label names, written in this order. Mostly static strings, hence `Cow`.
    pub label_keys: Vec<Cow<'static, str>>,
    /// Label values, parallel to `label_keys`.
    pub label_values: Vec<String>,
    /// The sample value.
    pub value: f64,
}

impl Metric {
    /// A sample with the given labels and value and no name suffix.
    pub fn new(label_keys: Vec<Cow<'static, str>>, label_values: Vec<String>, value: f64) -> Self {
        Metric {
            suffix: Cow::Borrowed(""),
            label_keys,
            label_values,
            value,
        }
    }
}

/// A named set of samples sharing HELP text and type.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFamily {
    /// Family name; each sample is written as this name plus its suffix.
    pub name: Cow<'static, str>,
    /// HELP text, unescaped.
    pub help: Cow<'static, str>,
    /// Family type.
    pub kind: MetricType,
    /// The samples.
    pub metrics: Vec<Metric>,
}

/// Appends the `# HELP` and `# TYPE` lines for a family.
///
/// The HELP line is written even for empty help (`# HELP name \n`), matching
/// kube-state-metrics byte for byte.
pub fn write_header(buf: &mut Vec<u8>, name: &str, help: &str, kind: MetricType, format: Format) {
    buf.extend_from_slice(b"# HELP ");
    buf.extend_from_slice(name.as_bytes());
    buf.push(b' ');
    escape_help_into(buf, help);
    buf.extend_from_slice(b"\n# TYPE ");
    buf.extend_from_slice(name.as_bytes());
    buf.push(b' ');
    buf.extend_from_slice(kind.type_str(format).as_bytes());
    buf.push(b'\n');
}

/// Appends one sample line: `name{k="v",...} value\n` (no braces without
/// labels). Label names are written verbatim; callers pass names that are
/// already valid (see [`sanitize_label_name`]).
pub fn write_metric_line<K, V>(
    buf: &mut Vec<u8>,
    name: &str,
    label_keys: &[K],
    label_values: &[V],
    value: f64,
) -> Result<(), ExpositionError>
where
    K: AsRef<str>,
    V: AsRef<str>,
{
    if label_keys.len() != label_values.len() {
        return Err(ExpositionError::LabelArity {
            name: name.to_owned(),
            keys: label_keys.len(),
            values: label_values.len(),
        });
    }
    buf.extend_from_slice(name.as_bytes());
    write_labels_and_value(buf, label_keys, label_values, value);
    Ok(())
}

fn write_labels_and_value<K: AsRef<str>, V: AsRef<str>>(
    buf: &mut Vec<u8>,
    keys: &[K],
    values: &[V],
    value: f64,
) {
    let mut sep = b'{';
    for (k, v) in keys.iter().zip(values) {
        buf.push(sep);
        buf.extend_from_slice(k.as_ref().as_bytes());
        buf.extend_from_slice(b"=\"");
        escape_label_value_into(buf, v.as_ref());
        buf.push(b'"');
        sep = b',';
    }
    if !keys.is_empty() {
        buf.push(b'}');
    }
    buf.push(b' ');
    write_float(buf, value);
    buf.push(b'\n');
}

/// Appends the sample lines of a family without its header: what ksm stores
/// per object and family.
pub fn write_metrics(buf: &mut Vec<u8>, family: &MetricFamily) -> Result<(), ExpositionError> {
    for m in &family.metrics {
        if m.label_keys.len() != m.label_values.len() {
            return Err(ExpositionError::LabelArity {
                name: format!("{}{}", family.name, m.suffix),
                keys: m.label_keys.len(),
                values: m.label_values.len(),
            });
        }
        buf.extend_from_slice(family.name.as_bytes());
        buf.extend_from_slice(m.suffix.as_bytes());
        write_labels_and_value(buf, &m.label_keys, &m.label_values, m.value);
    }
    Ok(())
}

/// Appends a whole family: header, then every sample. Families without
/// samples are written as nothing at all, as ksm does when no object exists.
pub fn render_family(
    buf: &mut Vec<u8>,
    family: &MetricFamily,
    format: Format,
) -> Result<(), ExpositionError> {
    if family.metrics.is_empty() {
        return Ok(());
    }
    write_header(buf, &family.name, &family.help, family.kind, format);
    write_metrics(buf, family)
}

/// Renders a complete document (families plus the format's terminator).
pub fn render_families(
    families: &[MetricFamily],
    format: Format,
) -> Result<Vec<u8>, ExpositionError> {
    let mut buf = Vec::with_capacity(families.len() * 256);
    for f in families {
        render_family(&mut buf, f, format)?;
    }
    buf.extend_from_slice(format.terminator());
    Ok(buf)
}

/// A small document exercising every type, escaping and special float values:
/// for checking the writer against external validators. `promtool check
/// metrics` only reads text 0.0.4 (it rejects the `info`/`stateset` types of
/// OpenMetrics), so feed it `sample_document(Format::Text004)`.
pub fn sample_families() -> Vec<MetricFamily> {
    let k = |s: &'static str| Cow::Borrowed(s);
    vec![
        MetricFamily {
            name: k("kube_pod_info"),
            help: k("[STABLE] Information about pod."),
            kind: MetricType::Info,
            metrics: vec![Metric::new(
                vec![k("namespace"), k("pod"), k("uid")],
                vec![
                    "default".into(),
                    "web-0".into(),
                    "3f1c0a7e-1d2b-4c5d-8e9f-0a1b2c3d4e5f".into(),
                ],
                1.0,
            )],
        },
        MetricFamily {
            name: k("kube_pod_status_phase"),
            help: k("The pods current phase."),
            kind: MetricType::StateSet,
            metrics: ["Pending", "Running", "Failed"]
                .iter()
                .map(|p| {
                    Metric::new(
                        vec![k("namespace"), k("pod"), k("phase")],
                        vec!["default".into(), "web-0".into(), (*p).into()],
                        if *p == "Running" { 1.0 } else { 0.0 },
                    )
                })
                .collect(),
        },
        MetricFamily {
            name: k("kube_pod_container_status_restarts_total"),
            help: k("The number of container restarts per container."),
            kind: MetricType::Counter,
            metrics: vec![Metric::new(
                vec![k("namespace"), k("pod"), k("container")],
                vec!["default".into(), "web-0".into(), "app".into()],
                3.0,
            )],
        },
        MetricFamily {
            name: k("kube_pod_labels"),
            help: k(
                "Kubernetes labels converted to Prometheus labels.\nSecond line with a \\ backslash.",
            ),
            kind: MetricType::Gauge,
            metrics: vec![Metric::new(
                vec![k("namespace"), k("pod"), k("label_app"), k("label_note")],
                vec![
                    "default".into(),
                    "web-0".into(),
                    "web".into(),
                    "quote \" backslash \\ newline \n unicode ✓".into(),
                ],
                1.0,
            )],
        },
        MetricFamily {
            name: k("ferrocrane_sample_values"),
            help: k("Values that need Go-compatible formatting."),
            kind: MetricType::Gauge,
            metrics: [
                1501569018.0,
                0.5,
                -1.0,
                1e21,
                1e-05,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ]
            .iter()
            .enumerate()
            .map(|(i, v)| Metric::new(vec![k("case")], vec![i.to_string()], *v))
            .collect(),
        },
        MetricFamily {
            name: k("ferrocrane_sample_answer"),
            help: k("An untyped sample without labels."),
            kind: MetricType::Unknown,
            metrics: vec![Metric::new(vec![], vec![], 42.0)],
        },
    ]
}

/// [`sample_families`] rendered in `format`, terminator included.
pub fn sample_document(format: Format) -> Vec<u8> {
    // The sample families are well-formed, so rendering cannot fail; an empty
    // document would make a validator complain loudly anyway.
    render_families(&sample_families(), format).unwrap_or_default()
}
