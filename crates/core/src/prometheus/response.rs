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
    serde_json::from_slice(body)
        .map_err(|e| DecodeError::Json(e.to_string()))
        .and_then(open_envelope)
}

/// [`decode`] from a reader, for a body decoded while it arrives. A buffered reader keeps
/// serde_json on its fast byte-by-byte path.
pub fn decode_reader<T: DeserializeOwned, R: std::io::BufRead>(
    body: R,
) -> Result<Decoded<T>, DecodeError> {
    serde_json::from_reader(body)
        .map_err(|e| DecodeError::Json(e.to_string()))
        .and_then(open_envelope)
}

fn open_envelope<T>(env: Envelope<T>) -> Result<Decoded<T>, DecodeError> {
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
    fn sample_values() {
        assert!(parse_sample_value("NaN").expect("nan").is_nan());
        assert_eq!(parse_sample_value("+Inf"), Ok(f64::INFINITY));
        assert_eq!(parse_sample_value("-Inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_sample_value("-0.5"), Ok(-0.5));
        assert!(parse_sample_value("").is_err());
        assert!(parse_sample_value("1,5").is_err());
    }
}
