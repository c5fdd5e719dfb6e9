use super::*;
use proptest::prelude::*;

fn s(b: &[u8]) -> &str {
    std::str::from_utf8(b).expect("utf-8 output")
}

#[test]
fn header_types_per_format() {
    let cases = [
        (MetricType::Gauge, "gauge", "gauge"),
        (MetricType::Counter, "counter", "counter"),
        (MetricType::Info, "gauge", "info"),
        (MetricType::StateSet, "gauge", "stateset"),
        (MetricType::Histogram, "histogram", "histogram"),
        (MetricType::Unknown, "untyped", "unknown"),
    ];
    for (kind, text, om) in cases {
        let mut b = Vec::new();
        write_header(&mut b, "m", "h", kind, Format::Text004);
        assert_eq!(s(&b), format!("# HELP m h\n# TYPE m {text}\n"));
        let mut b = Vec::new();
        write_header(&mut b, "m", "h", kind, Format::OpenMetrics);
        assert_eq!(s(&b), format!("# HELP m h\n# TYPE m {om}\n"));
    }
}

#[test]
fn header_escapes_help_and_keeps_empty_help() {
    let mut b = Vec::new();
    write_header(
        &mut b,
        "m",
        "a\\b\n\"c\"",
        MetricType::Gauge,
        Format::Text004,
    );
    assert_eq!(s(&b), "# HELP m a\\\\b\\n\"c\"\n# TYPE m gauge\n");
    let mut b = Vec::new();
    write_header(&mut b, "m", "", MetricType::Gauge, Format::Text004);
    assert_eq!(s(&b), "# HELP m \n# TYPE m gauge\n");
}

#[test]
fn metric_lines() {
    let mut b = Vec::new();
    write_metric_line::<&str, &str>(&mut b, "up", &[], &[], 1.0).unwrap();
    write_metric_line(
        &mut b,
        "kube_x",
        &["a", "b"],
        &["x\"y", "p\\q\nr"],
        1501569018.0,
    )
    .unwrap();
    assert_eq!(
        s(&b),
        "up 1\nkube_x{a=\"x\\\"y\",b=\"p\\\\q\\nr\"} 1.501569018e+09\n"
    );
    let err = write_metric_line(&mut b, "bad", &["a"], &["1", "2"], 0.0).unwrap_err();
    assert_eq!(
        err,
        ExpositionError::LabelArity {
            name: "bad".into(),
            keys: 1,
            values: 2
        }
    );
}

#[test]
fn family_rendering_and_terminator() {
    let fam = MetricFamily {
        name: "kube_pod_info".into(),
        help: "Info.".into(),
        kind: MetricType::Info,
        metrics: vec![Metric::new(vec!["pod".into()], vec!["p".into()], 1.0)],
    };
    let empty = MetricFamily {
        metrics: vec![],
        name: "kube_empty".into(),
        ..fam.clone()
    };
    let text = render_families(&[fam.clone(), empty.clone()], Format::Text004).unwrap();
    assert_eq!(
        s(&text),
        "# HELP kube_pod_info Info.\n# TYPE kube_pod_info gauge\nkube_pod_info{pod=\"p\"} 1\n"
    );
    let om = render_families(&[fam, empty], Format::OpenMetrics).unwrap();
    assert_eq!(
        s(&om),
        "# HELP kube_pod_info Info.\n# TYPE kube_pod_info info\nkube_pod_info{pod=\"p\"} 1\n# EOF\n"
    );
}

#[test]
fn histogram_suffixes() {
    let fam = MetricFamily {
        name: "req_seconds".into(),
        help: "h".into(),
        kind: MetricType::Histogram,
        metrics: vec![
            Metric {
                suffix: "_bucket".into(),
                ..Metric::new(vec!["le".into()], vec!["+Inf".into()], 2.0)
            },
            Metric {
                suffix: "_sum".into(),
                ..Metric::new(vec![], vec![], 0.5)
            },
            Metric {
                suffix: "_count".into(),
                ..Metric::new(vec![], vec![], 2.0)
            },
        ],
    };
    let mut b = Vec::new();
    render_family(&mut b, &fam, Format::Text004).unwrap();
    assert_eq!(
        s(&b),
        "# HELP req_seconds h\n# TYPE req_seconds histogram\nreq_seconds_bucket{le=\"+Inf\"} 2\nreq_seconds_sum 0.5\nreq_seconds_count 2\n"
    );
}

#[test]
fn content_types() {
    assert_eq!(
        Format::Text004.content_type(),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert_eq!(
        Format::OpenMetrics.content_type(),
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
}

#[test]
fn sample_document_parses() {
    for format in [Format::Text004, Format::OpenMetrics] {
        let doc = sample_document(format);
        let parsed = strict_parse(s(&doc)).expect("sample document parses");
        assert_eq!(parsed.samples.len(), 15);
        assert_eq!(parsed.eof, format == Format::OpenMetrics);
    }
    let text = String::from_utf8(sample_document(Format::Text004)).unwrap();
    assert!(text.contains("ferrocrane_sample_values{case=\"0\"} 1.501569018e+09\n"));
    assert!(text.contains("label_note=\"quote \\\" backslash \\\\ newline \\n unicode ✓\""));
}

fn strict_parse(doc: &str) -> Result<super::parse::Document, String> {
    super::parse::parse_document(doc).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------

fn name_strategy() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,15}"
}

fn label_value_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => any::<char>(),
            1 => Just('\\'),
            1 => Just('"'),
            1 => Just('\n'),
            1 => prop::sample::select(vec![',', '=', '}', '{', ' ', 'a']),
        ],
        0..12,
    )
    .prop_map(String::from_iter)
}

fn value_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<f64>(),
        1 => prop::sample::select(vec![0.0, 1.0, -1.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e21, 1e-5]),
    ]
}

fn metric_strategy() -> impl Strategy<Value = Metric> {
    (
        prop::collection::vec((name_strategy(), label_value_strategy()), 0..5),
        value_strategy(),
    )
        .prop_map(|(labels, value)| {
            let mut keys: Vec<Cow<'static, str>> = Vec::new();
            let mut values = Vec::new();
            for (i, (k, v)) in labels.into_iter().enumerate() {
                // Unique label names within a sample, as any valid family has.
                keys.push(format!("{k}_{i}").into());
                values.push(v);
            }
            Metric::new(keys, values, value)
        })
}

fn family_strategy() -> impl Strategy<Value = MetricFamily> {
    (
        name_strategy(),
        "[ -~]{0,20}(\\\\|\n)?[ -~]{0,5}",
        prop::sample::select(vec![
            MetricType::Gauge,
            MetricType::Counter,
            MetricType::Info,
            MetricType::StateSet,
            MetricType::Unknown,
        ]),
        prop::collection::vec(metric_strategy(), 1..4),
    )
        .prop_map(|(name, help, kind, metrics)| MetricFamily {
            name: name.into(),
            help: help.into(),
            kind,
            metrics,
        })
}

fn families_strategy() -> impl Strategy<Value = Vec<MetricFamily>> {
    prop::collection::vec(family_strategy(), 1..4).prop_map(|mut fams| {
        for (i, f) in fams.iter_mut().enumerate() {
            f.name = format!("{}_{i}", f.name).into();
        }
        fams
    })
}

fn same_value(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a == 0.0 && b == 0.0)
}

fn parse_prom_crate(doc: &str) -> prometheus_parse::Scrape {
    let lines = doc.split('\n').map(|l| Ok(l.to_string()));
    prometheus_parse::Scrape::parse(lines).expect("prometheus-parse reads the document")
}

fn prom_crate_value(v: &prometheus_parse::Value) -> f64 {
    match v {
        prometheus_parse::Value::Counter(x)
        | prometheus_parse::Value::Gauge(x)
        | prometheus_parse::Value::Untyped(x) => *x,
        other => panic!("unexpected value kind {other:?}"),
    }
}

/// Characters `prometheus-parse` can read back unchanged in a label value (see above).
fn prom_crate_safe(c: char) -> bool {
    !matches!(c, ',' | '=' | '}' | '"' | '\\' | '\n')
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_both_formats(fams in families_strategy()) {
        for format in [Format::Text004, Format::OpenMetrics] {
            let doc = render_families(&fams, format).unwrap();
            let doc = std::str::from_utf8(&doc).unwrap();
            let parsed = strict_parse(doc).map_err(|e| TestCaseError::fail(format!("{e}\n{doc}")))?;
            prop_assert_eq!(parsed.eof, format == Format::OpenMetrics);
            prop_assert_eq!(parsed.headers.len(), fams.len());
            let mut samples = parsed.samples.iter();
            for (f, h) in fams.iter().zip(&parsed.headers) {
                prop_assert_eq!(&h.name, &*f.name);
                prop_assert_eq!(&h.help, &*f.help);
                prop_assert_eq!(h.kind.as_str(), f.kind.type_str(format));
                for m in &f.metrics {
                    let sample = samples.next().unwrap();
                    let (name, labels, value) = (&sample.name, &sample.labels, &sample.value);
                    prop_assert_eq!(name, &*f.name);
                    let want: Vec<(String, String)> = m.label_keys.iter().map(|k| k.to_string())
                        .zip(m.label_values.iter().cloned()).collect();
                    prop_assert_eq!(labels, &want);
                    prop_assert!(same_value(*value, m.value), "{} vs {}", value, m.value);
                }
            }
            prop_assert!(samples.next().is_none());

            // prometheus-parse, on a copy whose label values it can read.
            let safe: Vec<MetricFamily> = fams.iter().cloned().map(|mut f| {
                for m in &mut f.metrics {
                    for v in &mut m.label_values {
                        *v = v.chars().map(|c| if prom_crate_safe(c) { c } else { '_' }).collect();
                    }
                }
                f
            }).collect();
            let safe_doc = render_families(&safe, format).unwrap();
            let scrape = parse_prom_crate(std::str::from_utf8(&safe_doc).unwrap());
            let all: Vec<(&str, &Metric)> =
                safe.iter().flat_map(|f| f.metrics.iter().map(move |m| (&*f.name, m))).collect();
            prop_assert_eq!(scrape.samples.len(), all.len());
            for (sample, (name, m)) in scrape.samples.iter().zip(&all) {
                prop_assert_eq!(&sample.metric, name);
                prop_assert!(same_value(prom_crate_value(&sample.value), m.value));
                prop_assert_eq!(sample.labels.len(), m.label_keys.len());
                for (k, v) in m.label_keys.iter().zip(&m.label_values) {
                    prop_assert_eq!(sample.labels.get(k), Some(v.as_str()));
                }
            }
            for f in &fams {
                if !f.help.is_empty() && f.help.trim() == f.help && !f.help.contains(['\\', '\n']) {
                    prop_assert_eq!(scrape.docs.get(&*f.name), Some(&f.help.to_string()));
                }
            }
        }
    }

    #[test]
    fn pre_rendered_bytes_equal_whole_family(fam in family_strategy()) {
        // ksm's path: header written at scrape time + stored per-object bytes.
        let mut stored = Vec::new();
        for m in &fam.metrics {
            write_metric_line(&mut stored, &fam.name, &m.label_keys, &m.label_values, m.value).unwrap();
        }
        for format in [Format::Text004, Format::OpenMetrics] {
            let mut pieced = Vec::new();
            write_header(&mut pieced, &fam.name, &fam.help, fam.kind, format);
            pieced.extend_from_slice(&stored);
            let mut whole = Vec::new();
            render_family(&mut whole, &fam, format).unwrap();
            prop_assert_eq!(pieced, whole);
        }
    }
}
