//! Decoding of Prometheus HTTP API response bodies.
//!
//! Kept free of I/O so every odd body Prometheus (or a proxy in front of it) can send is covered by
//! plain unit tests. Nothing here panics on input: every shape problem becomes a [`DecodeError`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// A label set. A `BTreeMap` so that series compare, hash and print in one canonical order,
/// which is what merging range chunks and deterministic test output rely on.
pub type Labels = BTreeMap<String, String>;

/// One sample. Timestamps are kept as integer milliseconds because Prometheus' own resolution is
/// milliseconds and integer keys make de-duplication at range-chunk borders exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
    /// The value; `NaN` and infinities are legal PromQL results and are preserved.
    pub value: f64,
}

/// An element of an instant vector.
#[derive(Debug, Clone, PartialEq)]
pub struct InstantSample {
    pub labels: Labels,
    pub sample: Sample,
}

/// One series of a range vector, samples in ascending time order.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSeries {
    pub labels: Labels,
    pub samples: Vec<Sample>,
}

impl RangeSeries {
    /// A series from its points keyed by timestamp (so in time order, each timestamp once).
    pub fn from_points(labels: Labels, points: BTreeMap<i64, f64>) -> Self {
        RangeSeries {
            labels,
            samples: points
                .into_iter()
                .map(|(timestamp_ms, value)| Sample {
                    timestamp_ms,
                    value,
                })
                .collect(),
        }
    }
}

/// The `data` of a `/api/v1/query` or `/api/v1/query_range` answer.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryResult {
    Vector(Vec<InstantSample>),
    Matrix(Vec<RangeSeries>),
    Scalar(Sample),
    String { timestamp_ms: i64, value: String },
}

impl QueryResult {
    /// The Prometheus `resultType` name, for error messages.
    pub fn result_type(&self) -> &'static str {
        match self {
            QueryResult::Vector(_) => "vector",
            QueryResult::Matrix(_) => "matrix",
            QueryResult::Scalar(_) => "scalar",
            QueryResult::String { .. } => "string",
        }
    }
}

/// Why a body could not be turned into a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape.
    #[error("invalid response body: {0}")]
    Json(String),
    /// Prometheus answered `"status":"error"`.
    #[error("{error_type}: {error}")]
    Api { error_type: String, error: String },
    /// A well-formed envelope without the `data` a success must carry.
    #[error("response has status \"success\" but no data")]
    MissingData,
    /// A `status` other than `success` / `error`.
    #[error("unexpected response status {0:?}")]
    UnknownStatus(String),
}

/// The envelope every `/api/v1` answer shares.
#[derive(Deserialize)]
struct Envelope<T> {
    status: String,
    #[serde(default = "Option::default")]
    data: Option<T>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

/// A decoded success plus the warnings Prometheus attached (e.g. partial responses), which callers
/// may want to log rather than silently drop.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<T> {
    pub data: T,
    pub warnings: Vec<String>,
}

/// Decodes an envelope whose `data` is `T`.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<Decoded<T>, DecodeError> {
    let env: Envelope<T> =
        serde_json::from_slice(body).map_err(|e| DecodeError::Json(e.to_string()))?;
    match env.status.as_str() {
        "success" => match env.data {
            Some(data) => Ok(Decoded {
                data,
                warnings: env.warnings,
            }),
            None => Err(DecodeError::MissingData),
        },
        "error" => Err(DecodeError::Api {
            error_type: env.error_type.unwrap_or_default(),
            error: env.error.unwrap_or_default(),
        }),
        other => Err(DecodeError::UnknownStatus(other.to_owned())),
    }
}

/// Extracts only `errorType`/`error` from a body, ignoring `data`. Used for non-2xx answers whose
/// data (if any) we would not trust anyway.
pub fn decode_error_body(body: &[u8]) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct ErrOnly {
        status: String,
        #[serde(default, rename = "errorType")]
        error_type: Option<String>,
        #[serde(default)]
        error: Option<String>,
    }
    let e: ErrOnly = serde_json::from_slice(body).ok()?;
    (e.status == "error").then(|| {
        (
            e.error_type.unwrap_or_default(),
            e.error.unwrap_or_default(),
        )
    })
}

/// Decodes the body of `/api/v1/query` or `/api/v1/query_range`.
pub fn decode_query(body: &[u8]) -> Result<Decoded<QueryResult>, DecodeError> {
    let d: Decoded<RawQueryData> = decode(body)?;
    Ok(Decoded {
        data: d.data.into(),
        warnings: d.warnings,
    })
}

#[derive(serde::Deserialize)]
struct BuildInfo {
    version: String,
}

/// Decodes the body of `/api/v1/status/buildinfo` to the server's version.
pub fn decode_build_version(body: &[u8]) -> Result<Decoded<String>, DecodeError> {
    let d: Decoded<BuildInfo> = decode(body)?;
    Ok(Decoded {
        data: d.data.version,
        warnings: d.warnings,
    })
}

/// Decodes the body of `/api/v1/series`.
pub fn decode_series(body: &[u8]) -> Result<Decoded<Vec<Labels>>, DecodeError> {
    decode(body)
}

/// What discovery needs of a series: its `__name__` and the names of its other labels, sorted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesShape {
    pub name: String,
    pub label_names: Vec<String>,
}

/// The distinct shapes of a `/api/v1/series` answer, and how many series it listed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesShapes {
    pub shapes: Vec<SeriesShape>,
    pub series: usize,
}

/// Decodes the body of `/api/v1/series` into distinct [`SeriesShape`]s without ever holding
/// every label set: 100,000 series of 500 metrics are a few hundred shapes, where the full
/// label sets cost ~100 MB at once (what prometheus-adapter keeps, its issue #221).
pub fn decode_series_shapes(body: &[u8]) -> Result<Decoded<SeriesShapes>, DecodeError> {
    decode(body)
}

/// A string borrowed from the body when it has no escapes, so label values that are only
/// checked and dropped cost no allocation.
struct Text<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// One label set, reduced to its shape as it is read.
struct ShapeOf(SeriesShape);

impl<'de> Deserialize<'de> for ShapeOf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ShapeOf;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a label set (an object of strings)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ShapeOf, A::Error> {
                let mut shape = SeriesShape {
                    name: String::new(),
                    label_names: Vec::new(),
                };
                while let Some(Text(key)) = map.next_key::<Text>()? {
                    let Text(value) = map.next_value::<Text>()?;
                    if key == "__name__" {
                        shape.name = value.into_owned();
                    } else {
                        shape.label_names.push(key.into_owned());
                    }
                }
                shape.label_names.sort_unstable();
                Ok(ShapeOf(shape))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for SeriesShapes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = SeriesShapes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of label sets")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<SeriesShapes, A::Error> {
                let mut distinct = std::collections::BTreeSet::new();
                let mut series = 0;
                while let Some(ShapeOf(shape)) = seq.next_element()? {
                    series += 1;
                    distinct.insert(shape);
                }
                Ok(SeriesShapes {
                    shapes: distinct.into_iter().collect(),
                    series,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

/// Converts Prometheus' float seconds to integer milliseconds. Non-finite or absurd values are
/// rejected instead of being saturated into plausible-looking timestamps.
fn seconds_to_ms(t: f64) -> Result<i64, String> {
    let ms = (t * 1000.0).round();
    // ±2^53 ms is far beyond any real timestamp and keeps the conversion exact.
    if ms.is_finite() && ms.abs() < 9_007_199_254_740_992.0 {
        #[allow(
            clippy::cast_possible_truncation,
            reason = "checked just above: finite, below 2^53"
        )]
        let ms = ms as i64;
        Ok(ms)
    } else {
        Err(format!("invalid sample timestamp {t}"))
    }
}

/// Parses a sample value as Prometheus formats it (Go `strconv.FormatFloat`), which spells the
/// specials `NaN`, `+Inf` and `-Inf`.
pub fn parse_sample_value(s: &str) -> Result<f64, String> {
    match s {
        "NaN" => Ok(f64::NAN),
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => s
            .parse::<f64>()
            .map_err(|_| format!("invalid sample value {s:?}")),
    }
}

impl TryFrom<(f64, String)> for Sample {
    type Error = String;
    fn try_from((t, v): (f64, String)) -> Result<Self, String> {
        Ok(Sample {
            timestamp_ms: seconds_to_ms(t)?,
            value: parse_sample_value(&v)?,
        })
    }
}

impl<'de> Deserialize<'de> for Sample {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <(f64, String)>::deserialize(d)?;
        Sample::try_from(raw).map_err(serde::de::Error::custom)
    }
}

/// `[<unix seconds>, "<string>"]`.
#[derive(Deserialize)]
struct RawString(f64, String);

/// Series that only carry native histograms have no `value`/`values`; they are skipped rather
/// than failing the whole answer, since no ferrocrane consumer reads native histograms.
#[derive(Deserialize)]
struct RawInstant {
    #[serde(default)]
    metric: Labels,
    #[serde(default)]
    value: Option<Sample>,
}

#[derive(Deserialize)]
struct RawRange {
    #[serde(default)]
    metric: Labels,
    #[serde(default)]
    values: Vec<Sample>,
}

#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum RawQueryData {
    Vector(Vec<RawInstant>),
    Matrix(Vec<RawRange>),
    Scalar(Sample),
    String(RawStringCompat),
}

/// Wrapper so a bad string-result timestamp is reported like any other decode error.
#[derive(Deserialize)]
#[serde(try_from = "RawString")]
struct RawStringCompat {
    timestamp_ms: i64,
    value: String,
}

impl TryFrom<RawString> for RawStringCompat {
    type Error = String;
    fn try_from(r: RawString) -> Result<Self, String> {
        Ok(RawStringCompat {
            timestamp_ms: seconds_to_ms(r.0)?,
            value: r.1,
        })
    }
}

impl From<RawQueryData> for QueryResult {
    fn from(raw: RawQueryData) -> Self {
        match raw {
            RawQueryData::Vector(v) => QueryResult::Vector(
                v.into_iter()
                    .filter_map(|s| {
                        s.value.map(|sample| InstantSample {
                            labels: s.metric,
                            sample,
                        })
                    })
                    .collect(),
            ),
            RawQueryData::Matrix(m) => QueryResult::Matrix(
                m.into_iter()
                    .filter(|s| !s.values.is_empty())
                    .map(|s| RangeSeries {
                        labels: s.metric,
                        samples: s.values,
                    })
                    .collect(),
            ),
            RawQueryData::Scalar(s) => QueryResult::Scalar(s),
            RawQueryData::String(s) => QueryResult::String {
                timestamp_ms: s.timestamp_ms,
                value: s.value,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn vector_with_special_values() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"up","job":"a"},"value":[1435781451.781,"1"]},
            {"metric":{"job":"b"},"value":[1435781451.781,"NaN"]},
            {"metric":{"job":"c"},"value":[1435781451,"+Inf"]},
            {"metric":{"job":"d"},"value":[1435781451,"-Inf"]},
            {"metric":{"job":"e"},"value":[1435781451,"1e-3"]}
        ]}}"#;
        let d = decode_query(body).expect("decodes");
        let QueryResult::Vector(v) = d.data else {
            panic!("expected vector, got {:?}", d.data)
        };
        assert_eq!(v.len(), 5);
        assert_eq!(v[0].labels, labels(&[("__name__", "up"), ("job", "a")]));
        assert_eq!(v[0].sample.timestamp_ms, 1_435_781_451_781);
        assert_eq!(v[0].sample.value, 1.0);
        assert!(v[1].sample.value.is_nan());
        assert_eq!(v[2].sample.value, f64::INFINITY);
        assert_eq!(v[2].sample.timestamp_ms, 1_435_781_451_000);
        assert_eq!(v[3].sample.value, f64::NEG_INFINITY);
        assert_eq!(v[4].sample.value, 0.001);
    }

    #[test]
    fn matrix_scalar_string_and_warnings() {
        let body = br#"{"status":"success","warnings":["partial"],"data":{"result":[
            {"metric":{"a":"1"},"values":[[1,"1"],[2,"2.5"]]}],"resultType":"matrix"}}"#;
        let d = decode_query(body).expect("tag after content still decodes");
        assert_eq!(d.warnings, vec!["partial".to_string()]);
        assert_eq!(
            d.data,
            QueryResult::Matrix(vec![RangeSeries {
                labels: labels(&[("a", "1")]),
                samples: vec![
                    Sample {
                        timestamp_ms: 1000,
                        value: 1.0
                    },
                    Sample {
                        timestamp_ms: 2000,
                        value: 2.5
                    }
                ],
            }])
        );

        let body = br#"{"status":"success","data":{"resultType":"scalar","result":[10.5,"3"]}}"#;
        assert_eq!(
            decode_query(body).expect("scalar").data,
            QueryResult::Scalar(Sample {
                timestamp_ms: 10_500,
                value: 3.0
            })
        );

        let body = br#"{"status":"success","data":{"resultType":"string","result":[1,"hi"]}}"#;
        assert_eq!(
            decode_query(body).expect("string").data,
            QueryResult::String {
                timestamp_ms: 1000,
                value: "hi".into()
            }
        );
    }

    #[test]
    fn native_histogram_only_series_are_skipped() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"a":"1"},"histogram":[1,{"count":"1","sum":"1"}]},
            {"metric":{"a":"2"},"value":[1,"2"]}]}}"#;
        let QueryResult::Vector(v) = decode_query(body).expect("decodes").data else {
            panic!("expected vector")
        };
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].labels, labels(&[("a", "2")]));
    }

    #[test]
    fn api_error_body() {
        let body = br#"{"status":"error","errorType":"bad_data","error":"parse error at char 4"}"#;
        assert_eq!(
            decode_query(body).unwrap_err(),
            DecodeError::Api {
                error_type: "bad_data".into(),
                error: "parse error at char 4".into()
            }
        );
        assert_eq!(
            decode_error_body(body),
            Some(("bad_data".into(), "parse error at char 4".into()))
        );
        assert_eq!(decode_error_body(b"<html>"), None);
        assert_eq!(decode_error_body(br#"{"status":"success"}"#), None);
    }

    #[test]
    fn bad_input_never_panics() {
        let cases: &[&[u8]] = &[
            b"",
            b"null",
            b"<html>502 Bad Gateway</html>",
            br#"{"status":"success"}"#,
            br#"{"status":"weird","data":{}}"#,
            br#"{"status":"success","data":{"resultType":"tensor","result":[]}}"#,
            br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"abc"]}]}}"#,
            br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}"#,
            br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["1","2"]}]}}"#,
            br#"{"status":"success","data":{"resultType":"scalar","result":[1e300,"1"]}}"#,
            br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[]}]}}"#,
            br#"{"status":"success","data":{"resultType":"vector","result":{}}}"#,
        ];
        for body in cases {
            let r = decode_query(body);
            assert!(
                r.is_err(),
                "expected error for {:?}, got {r:?}",
                String::from_utf8_lossy(body)
            );
        }
        assert_eq!(
            decode_query(br#"{"status":"weird"}"#).unwrap_err(),
            DecodeError::UnknownStatus("weird".into())
        );
        assert_eq!(
            decode_query(br#"{"status":"success"}"#).unwrap_err(),
            DecodeError::MissingData
        );
    }

    #[test]
    fn series_body() {
        let body = br#"{"status":"success","data":[{"__name__":"up","job":"x"},{"__name__":"up","job":"y"}]}"#;
        let d = decode_series(body).expect("decodes");
        assert_eq!(d.data.len(), 2);
        assert_eq!(d.data[1]["job"], "y");
        assert!(decode_series(br#"{"status":"success","data":[{"a":1}]}"#).is_err());
    }

    #[test]
    fn series_shapes_keep_names_and_label_names_once() {
        let body = br#"{"status":"success","data":[
            {"__name__":"up","job":"x","instance":"a"},
            {"instance":"b","__name__":"up","job":"y"},
            {"__name__":"up","job":"z"},
            {"__name__":"http_requests_total","pod":"p\u00e9","namespace":"n"}]}"#;
        let d = decode_series_shapes(body).expect("decodes");
        assert_eq!(d.data.series, 4);
        let shapes: Vec<(&str, Vec<&str>)> = d
            .data
            .shapes
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.label_names.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shapes,
            vec![
                ("http_requests_total", vec!["namespace", "pod"]),
                ("up", vec!["instance", "job"]),
                ("up", vec!["job"]),
            ]
        );
        // Values must still be strings, as in decode_series.
        assert!(decode_series_shapes(br#"{"status":"success","data":[{"a":1}]}"#).is_err());
        assert!(decode_series_shapes(br#"{"status":"success","data":{"a":"b"}}"#).is_err());
        assert_eq!(
            decode_series_shapes(br#"{"status":"success","data":[]}"#)
                .expect("empty")
                .data,
            SeriesShapes::default()
        );
    }

    #[test]
    fn sample_values() {
        assert!(parse_sample_value("NaN").expect("nan").is_nan());
        assert_eq!(parse_sample_value("+Inf"), Ok(f64::INFINITY));
        assert_eq!(parse_sample_value("-Inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_sample_value("-0.5"), Ok(-0.5));
        assert!(parse_sample_value("").is_err());
        assert!(parse_sample_value("1,5").is_err());
    }
}
